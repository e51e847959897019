/// Where one call's store work runs, decided once per call, before any prompt, by the module,
/// the helper and `puff-enroll` alike (`StoreRoute.choose`).
///
/// The rule: no process an ordinary user can stop, trace or starve (their su or sudo, whose
/// real uid is theirs; the setuid helper; their screen locker) may hold anything another
/// account's login waits on. Such a process does its store work through a helper started with
/// real uid root (the user cannot signal it), or, without root, through the setuid helper,
/// which serves only the caller's own account.
public enum StoreRoute: Equatable, Sendable {
    /// The files store in this process.
    case files
    /// The directory (fleet mode) in this process: only a program that links the directory
    /// client (PuffFleet: the helper, `puff-enroll`).
    case directory
    /// The setuid helper, for the caller's own account only.
    case ownHelper
    /// The helper started with real uid root (`puff-check service-*`), for a named user.
    case rootService

    /// Who is asking.
    public enum Caller: Equatable, Sendable {
        /// The PAM module, in a host with these uids; `sealedKey`: the host key is sealed in
        /// the TPM (tpm mode), which only the helper unseals.
        case module(effectiveUID: UInt32, realUID: UInt32, sealedKey: Bool)
        /// The helper itself: it does the store work of its operation in its own process.
        case helper
        /// An administrator's or a user's tool (`puff-enroll`) with this effective uid.
        case tool(effectiveUID: UInt32)
    }

    /// The route of `caller`'s store work under `options` (`backend = ldap` or not).
    ///
    /// - The module without root: the setuid helper (it can read nothing of the store).
    /// - The module as root in fleet mode or tpm mode: the root-started helper (the module
    ///   links neither the directory client nor the TPM's).
    /// - The module as root whose real uid is not root (su or sudo run by a user, who can stop
    ///   it): the root-started helper, so the stopped su holds nothing.
    /// - The module with real and effective uid root (sshd, login): the files store here.
    /// - The helper, and a tool run as root: the store here, files or directory.
    /// - A tool without root: the setuid helper.
    public static func choose(_ options: PuffOptions, for caller: Caller) -> StoreRoute {
        let directory = options.directory.isEnabled
        switch caller {
        case .module(let effective, let real, let sealedKey):
            if effective != 0 { return .ownHelper }
            return directory || sealedKey || real != 0 ? .rootService : .files
        case .helper:
            return directory ? .directory : .files
        case .tool(let effective):
            if effective != 0 { return .ownHelper }
            return directory ? .directory : .files
        }
    }

    /// Whether the work runs in a helper process.
    public var isHelper: Bool { self == .ownHelper || self == .rootService }
}
