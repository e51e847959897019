import Glibc
import PuffCore
import PuffPlatform

/// The module's `CredentialBackend`, one case per route `StoreRoute.choose` gives the module:
/// the files store in this process (real and effective uid root: sshd, login), the setuid
/// helper for the caller's own account (no root: a screen locker), the root-started helper's
/// service calls (fleet mode, and su or sudo run by a user, who could stop this process while
/// it held another account's counter lock). One enum that forwards, so `authenticate` is
/// compiled once, not once per backend.
enum Backend: CredentialBackend {
    case local(LocalBackend)
    case helper(HelperBackend)
    /// The helper's service calls (whose refusals the helper evens out itself).
    case service(HelperBackend)

    /// The backend of `route` for `userName`, with the state before the prompt read; `session`
    /// holds what this call has open of the store, `arguments` are the module's (for a service call).
    /// `discreet`: the caller is not the user, so every refusal costs the same work
    /// (`Authenticator.evenRefusals`; the helper's service calls always do so).
    static func prepare(_ route: StoreRoute, _ options: PuffOptions, userName: String, arguments: [String],
                        origin: @autoclosure () -> [String], discreet: Bool, session: StoreSession) throws(StoreError) -> Backend {
        var authenticator = Authenticator(options: options, session: session)
        authenticator.evenRefusals = discreet
        switch route {
        case .ownHelper:
            return .helper(try HelperBackend(HelperClient(path: options.helperPath)))
        case .rootService:
            // A name that is no user name is refused here as in the files store, without a helper.
            guard UserName(userName) != nil else { return .local(try LocalBackend(authenticator, userName: userName)) }
            let client = HelperClient(path: options.helperPath, service: .init(user: userName, arguments: arguments,
                                                                               origin: origin()))
            return .service(try HelperBackend(client))
        case .files:
            return .local(try LocalBackend(authenticator, userName: userName))
        case .directory:
            // Not a route of the module (it cannot link the directory client).
            throw .configuration("backend = ldap is served by the helper")
        }
    }

    var state: CredentialState {
        switch self {
        case .local(let backend): backend.state
        case .helper(let backend), .service(let backend): backend.state
        }
    }

    var auditUID: UInt32? {
        switch self {
        case .local(let backend): backend.auditUID
        case .helper(let backend), .service(let backend): backend.auditUID
        }
    }

    func attempt(_ secret: borrowing SecureBytes,
                 counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        switch self {
        case .local(let backend): try backend.attempt(secret, counted: &counted)
        case .helper(let backend), .service(let backend): try backend.attempt(secret, counted: &counted)
        }
    }
}
