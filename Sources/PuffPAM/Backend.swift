import Glibc
import PuffCore
import PuffPlatform

/// The module's choice of `CredentialBackend`: the files store in this process when the module
/// runs as root; fleet mode and tpm mode as root through the helper's service calls (the module
/// links no directory client and no TPM client: libtss2 reads TSS2_LOGFILE from the
/// environment, the user's in su); without root, the setuid helper, which then checks only the
/// account of its caller's real uid. One enum that forwards, so `authenticate` is compiled once, not once
/// per backend.
enum Backend: CredentialBackend {
    case local(LocalBackend)
    case helper(HelperBackend)
    /// Fleet mode as root: the helper's service calls; a discreet refusal's dummy verification
    /// runs here (`dummy`, the files store's hasher and host key).
    case service(HelperBackend, dummy: Authenticator)

    /// The backend for `userName`, with the state before the prompt read; `session` holds
    /// what this call has open of the store, `arguments` are the module's (for a service call).
    static func prepare(_ options: PuffOptions, userName: String, arguments: [String], unprivileged: Bool,
                        session: StoreSession) throws(StoreError) -> Backend {
        if unprivileged { return .helper(try HelperBackend(HelperClient(path: options.helperPath))) }
        let authenticator = Authenticator(options: options, session: session)
        // A name that is no user name is refused here as in the files store, without a helper.
        // Tpm mode costs one openat in file mode (the sealed key's file, absent).
        var keyInTPM = false
        if !options.directory.isEnabled {
            keyInTPM = try RecordStore(directory: options.recordDirectory, session: session).hostKeyIsSealed()
        }
        guard options.directory.isEnabled || keyInTPM, UserName(userName) != nil else {
            return .local(try LocalBackend(authenticator, userName: userName))
        }
        let client = HelperClient(path: options.helperPath, service: .init(user: userName, arguments: arguments))
        return .service(try HelperBackend(client), dummy: authenticator)
    }

    /// Whether the store work runs in the helper's service calls (a counted failure is then
    /// taken back through the helper too).
    var isService: Bool {
        if case .service = self { return true }
        return false
    }

    var state: CredentialState {
        switch self {
        case .local(let backend): backend.state
        case .helper(let backend), .service(let backend, _): backend.state
        }
    }

    var auditUID: UInt32? {
        switch self {
        case .local(let backend): backend.auditUID
        case .helper(let backend), .service(let backend, _): backend.auditUID
        }
    }

    func attempt(_ secret: borrowing SecureBytes,
                 counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        switch self {
        case .local(let backend): try backend.attempt(secret, counted: &counted)
        case .helper(let backend), .service(let backend, _): try backend.attempt(secret, counted: &counted)
        }
    }

    func runDummyVerification(_ secret: borrowing SecureBytes) {
        switch self {
        case .local(let backend): backend.runDummyVerification(secret)
        case .helper(let backend): backend.runDummyVerification(secret)
        case .service(_, let dummy): try? dummy.runDummyVerification(secret)
        }
    }
}
