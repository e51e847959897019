/// Bounds on what libpam hands the module, beyond which its input is treated as hostile. The
/// helper reads no more than these from a module's service call (and no longer a secret from
/// any caller), so the two sides cannot disagree.
public enum ModuleLimits {
    /// Module arguments.
    public static let arguments = 64
    /// Bytes of one module argument.
    public static let argumentLength = 4096
    /// Bytes of the user name.
    public static let userNameLength = 4096
    /// Bytes of a conversation reply (the gesture wire format's limit).
    public static let replyLength = 64 * 1024
}
