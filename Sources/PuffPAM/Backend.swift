import Glibc
import PuffCore
import PuffPlatform

/// The module's choice of `CredentialBackend`: in this process when the module runs as root,
/// otherwise the setuid helper, which only ever checks the account of its caller's real uid.
/// One enum that forwards, so `authenticate` is compiled once, not once per backend.
enum Backend: CredentialBackend {
    case local(LocalBackend)
    case helper(HelperBackend)

    /// The backend for `userName`, with the state before the prompt read; `session` holds
    /// what this call has open of the store.
    static func prepare(_ options: PuffOptions, userName: String, unprivileged: Bool,
                        session: StoreSession) throws(StoreError) -> Backend {
        guard unprivileged else {
            return .local(try LocalBackend(Authenticator(options: options, session: session), userName: userName))
        }
        return .helper(try HelperBackend(HelperClient(path: options.helperPath)))
    }

    var state: CredentialState {
        switch self {
        case .local(let backend): backend.state
        case .helper(let backend): backend.state
        }
    }

    var auditUID: UInt32? {
        switch self {
        case .local(let backend): backend.auditUID
        case .helper(let backend): backend.auditUID
        }
    }

    func attempt(_ secret: borrowing SecureBytes,
                 counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        switch self {
        case .local(let backend): try backend.attempt(secret, counted: &counted)
        case .helper(let backend): try backend.attempt(secret, counted: &counted)
        }
    }

    func runDummyVerification(_ secret: borrowing SecureBytes) {
        switch self {
        case .local(let backend): backend.runDummyVerification(secret)
        case .helper(let backend): backend.runDummyVerification(secret)
        }
    }
}
