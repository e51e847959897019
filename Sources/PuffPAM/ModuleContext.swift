import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// One call into the module: the handle, the flags, and the helpers that talk to libpam
/// (items, conversation, syslog). It holds no state beyond the call.
struct ModuleContext {
    let handle: OpaquePointer
    let flags: Int32

    /// Bounds on what libpam hands us (ModuleLimits, which the helper's service calls share);
    /// beyond them the input is treated as hostile.
    static let maximumArguments = ModuleLimits.arguments
    static let maximumArgumentLength = ModuleLimits.argumentLength
    static let maximumUserNameLength = ModuleLimits.userNameLength
    /// Longest conversation reply accepted (the gesture wire format's limit).
    static let maximumReplyLength = ModuleLimits.replyLength

    /// Module arguments as strings; `nil` when one is not valid UTF-8 or out of bounds.
    static func arguments(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String]? {
        guard argc >= 0, Int(argc) <= maximumArguments else { return nil }
        guard argc > 0 else { return [] }
        guard let argv else { return nil }
        var result: [String] = []
        for index in 0..<Int(argc) {
            guard let pointer = argv[index], strnlen(pointer, maximumArgumentLength + 1) <= maximumArgumentLength,
                  let argument = String(validatingCString: pointer) else { return nil }
            result.append(argument)
        }
        return result
    }

    // MARK: syslog

    /// `pam_syslog` (LOG_AUTHPRIV); the text is passed as a `%s` argument so nothing in it is
    /// read as a format.
    func log(_ priority: Int32, _ message: String) {
        message.withCString { text in puff_pam_syslog_text(handle, priority, text) }
    }

    // MARK: items

    /// A string item (`PAM_TTY`, `PAM_RUSER`, `PAM_RHOST`...) escaped for one log field: the
    /// application or the remote side chose it, so no byte of it may end or add a field.
    func logField(_ item: Int32) -> String {
        var pointer: UnsafeRawPointer?
        guard pam_get_item(handle, item, &pointer) == PAM_SUCCESS, let pointer else { return "" }
        return Self.logField(pointer.assumingMemoryBound(to: CChar.self))
    }

    private static func logField(_ text: UnsafePointer<CChar>) -> String {
        let length = strnlen(text, 256)
        return LogText.escapeField(UnsafeRawBufferPointer(start: text, count: length), limit: 128)
    }

    /// A string item as it is (at most 256 bytes), for a store that escapes it itself.
    func rawItem(_ item: Int32) -> String {
        var pointer: UnsafeRawPointer?
        guard pam_get_item(handle, item, &pointer) == PAM_SUCCESS, let pointer else { return "" }
        let text = pointer.assumingMemoryBound(to: CChar.self)
        return String(decoding: UnsafeRawBufferPointer(start: text, count: strnlen(text, 256)), as: UTF8.self)
    }

    /// `tty=… ruser=… rhost=…` of this transaction, for the log lines of an attempt.
    func attemptContext() -> String {
        "tty=\(logField(PAM_TTY)) ruser=\(logField(PAM_RUSER)) rhost=\(logField(PAM_RHOST))"
    }

    /// The failure line in pam_unix's shape, which fail2ban's `pam-generic` filter reads
    /// (with `__pam_auth="pam_[a-z]+"`): it must end with `user=NAME`.
    func logAuthenticationFailure(user: String) {
        log(LOG_NOTICE, authenticationFailureLine(user: user))
    }

    /// `logAuthenticationFailure`'s text.
    func authenticationFailureLine(user: String) -> String {
        let login = pam_modutil_getlogin(handle).map { Self.logField($0) } ?? ""
        return "authentication failure; logname=\(login) uid=\(getuid()) euid=\(geteuid()) "
            + "\(attemptContext()) user=\(LogText.escapeField(user.utf8, limit: 128))"
    }

    /// The user name from `pam_get_user` (which may prompt), raw. `nil` on a conversation
    /// failure; `.some(nil)` when the bytes are not a usable string.
    func userName() -> (code: Int32, name: String?) {
        var pointer: UnsafePointer<CChar>?
        let status = pam_get_user(handle, &pointer, nil)
        guard status == PAM_SUCCESS else { return (status, nil) }
        guard let pointer, strnlen(pointer, Self.maximumUserNameLength + 1) <= Self.maximumUserNameLength else {
            return (PAM_SUCCESS, nil)
        }
        return (PAM_SUCCESS, String(validatingCString: pointer))
    }

    /// The token an earlier module stored (`PAM_AUTHTOK`), copied into wiped memory.
    func storedToken() throws(StoreError) -> SecureBytes? {
        var item: UnsafeRawPointer?
        guard pam_get_item(handle, PAM_AUTHTOK, &item) == PAM_SUCCESS, let item else { return nil }
        let text = item.assumingMemoryBound(to: CChar.self)
        let length = strnlen(text, Self.maximumReplyLength + 1)
        guard length <= Self.maximumReplyLength else { return nil }
        return try SecureBytes(copying: UnsafeRawBufferPointer(start: item, count: length))
    }

    // MARK: conversation

    /// What the user answered to a secret prompt.
    enum Reply: ~Copyable {
        /// Non-empty text, in wiped memory.
        case secret(SecureBytes)
        /// Nothing typed, or a NULL reply.
        case empty
        /// Longer than any passcode or gesture.
        case tooLong
        /// The application reported an error (Ctrl-C, Esc, closed terminal).
        case failed(Int32)
    }

    private func conversation() -> pam_conv? {
        var item: UnsafeRawPointer?
        guard pam_get_item(handle, PAM_CONV, &item) == PAM_SUCCESS, let item else { return nil }
        return item.load(as: pam_conv.self)
    }

    /// Sends one message and returns the raw reply text pointer ownership to the caller.
    private func converse(style: Int32, text: String,
                          _ body: (UnsafeMutablePointer<CChar>?) -> Void) -> Int32 {
        guard let conv = conversation(), let function = conv.conv else { return PAM_CONV_ERR }
        return text.withCString { cText -> Int32 in
            var message = pam_message(msg_style: style, msg: cText)
            return withUnsafePointer(to: &message) { messagePointer -> Int32 in
                var messages: UnsafePointer<pam_message>? = messagePointer
                var responses: UnsafeMutablePointer<pam_response>?
                let status = withUnsafeMutablePointer(to: &messages) { list in
                    function(1, list, &responses, conv.appdata_ptr)
                }
                let reply = status == PAM_SUCCESS ? responses?.pointee.resp : nil
                body(reply)
                if let reply {
                    // The reply may be a secret: wipe it before handing it back to malloc.
                    explicit_bzero(reply, strlen(reply))
                    free(reply)
                }
                if let responses { free(responses) }
                return status
            }
        }
    }

    /// Shows an information line unless silent.
    func inform(_ text: String, silent: Bool) {
        guard !silent, UInt32(bitPattern: flags) & PAM_SILENT == 0 else { return }
        _ = converse(style: PAM_TEXT_INFO, text: text) { _ in }
    }

    /// Shows an error line unless silent.
    func complain(_ text: String, silent: Bool) {
        guard !silent, UInt32(bitPattern: flags) & PAM_SILENT == 0 else { return }
        _ = converse(style: PAM_ERROR_MSG, text: text) { _ in }
    }

    /// Prompts with echo off. A non-empty reply is also stored as `PAM_AUTHTOK` so later
    /// modules in the stack can use it (`try_first_pass`).
    func promptSecret(_ prompt: String) -> Reply {
        var reply: Reply = .empty
        var copyFailed = false
        let status = converse(style: PAM_PROMPT_ECHO_OFF, text: prompt) { pointer in
            guard let pointer else { return }
            let length = strnlen(pointer, Self.maximumReplyLength + 1)
            if length == 0 { return }
            if length > Self.maximumReplyLength {
                reply = .tooLong
                return
            }
            do throws(StoreError) {
                reply = .secret(try SecureBytes(copying: UnsafeRawBufferPointer(start: pointer, count: length)))
            } catch {
                copyFailed = true
                return
            }
            _ = pam_set_item(handle, PAM_AUTHTOK, UnsafeRawPointer(pointer))
        }
        if copyFailed { return .failed(PAM_BUF_ERR) }
        guard status == PAM_SUCCESS else { return .failed(status) }
        return reply
    }

    /// Asks libpam to delay a failure (pam_unix's 2 s) unless `nodelay`.
    func requestFailureDelay() {
        _ = pam_fail_delay(handle, 2_000_000)
    }
}
