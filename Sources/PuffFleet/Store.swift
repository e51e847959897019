import PuffCore
import PuffPlatform

/// The store of a program that does its store work itself (the helper, `puff-enroll` as
/// root): the files store, or the directory in fleet mode, as `StoreRoute.choose` decides once
/// when it is made. Every operation that differs between the two goes through here, so no
/// caller asks `directory.isEnabled` again.
public struct Store {
    /// The files store's authenticator (the local counter, records, options, clock, session).
    public let authenticator: Authenticator
    /// Set in fleet mode: the directory, with this call's one connection.
    public let fleet: FleetStore?

    /// The store under `options`, for `caller` (the helper or a tool run as root).
    public init(_ authenticator: Authenticator, for caller: StoreRoute.Caller = .helper) {
        self.authenticator = authenticator
        let route = StoreRoute.choose(directory: authenticator.options.directory.isEnabled, for: caller)
        self.fleet = route == .directory ? FleetStore(authenticator) : nil
    }

    /// The store under `options`, with `session` (which may already hold the configuration's directory).
    public init(options: PuffOptions, session: StoreSession = StoreSession(), for caller: StoreRoute.Caller = .helper) {
        self.init(Authenticator(options: options, session: session), for: caller)
    }

    /// Resolves `userName` (raw, as the application gave it) to a subject.
    public func subject(for userName: String) throws(StoreError) -> Authenticator.Subject {
        let resolved = try Authenticator.resolving(userName) { account throws(StoreError) in try self.subject(of: account) }
        authenticator.readDecoyState(for: resolved)
        return resolved
    }

    /// The subject of an account already looked up (the helper has its caller's, by uid).
    public func subject(of account: Account) throws(StoreError) -> Authenticator.Subject {
        guard let fleet else { return try authenticator.subject(of: account) }
        return try fleet.subject(of: account)
    }

    /// One attempt (the engine, `Authenticator.run`, counting where this store counts).
    public func attempt(_ secret: borrowing SecureBytes, for subject: Authenticator.Subject, asProofForChange: Bool = false,
                        counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        guard let fleet, case .enrolled(let enrolled) = subject else {
            return try authenticator.attempt(secret, for: subject, asProofForChange: asProofForChange, counted: &counted)
        }
        return try fleet.attempt(secret, enrolled.account, asProofForChange: asProofForChange, counted: &counted)
    }

    /// `attempt(_:for:asProofForChange:counted:)` without the counted failure.
    public func attempt(_ secret: borrowing SecureBytes, for subject: Authenticator.Subject,
                        asProofForChange: Bool = false) throws(StoreError) -> Authenticator.Outcome {
        var counted: Authenticator.CountedFailure?
        return try attempt(secret, for: subject, asProofForChange: asProofForChange, counted: &counted)
    }

    /// Undoes a failure `attempt` counted (`Authenticator.filesTakeBack` for the local counter;
    /// in fleet mode one failure off the directory's count, or off the offline failures to push).
    public func takeBack(_ failure: Authenticator.CountedFailure) throws(StoreError) -> Bool {
        guard let fleet else { return try authenticator.takeBack(failure) }
        let inDirectory = failure.countedInDirectory ? try fleet.takeBack(failure.user) : false
        if !failure.countedInDirectory { try fleet.offlineTakeBack(failure.user) }
        return try authenticator.takeBack(failure) || inDirectory
    }

    /// Stores a new passcode for `account` (hashed with the host key, or the fleet key).
    public func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError) {
        guard let fleet else { return try authenticator.storePasscode(passcode, type: type, for: account) }
        try fleet.storePasscode(passcode, type: type, for: account)
    }

    /// Stores a new gesture and its picture for `account`.
    public func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
        guard let fleet else { return try authenticator.storeGesture(template, picture: picture, for: account) }
        try fleet.storeGesture(template, picture: picture, for: account)
    }

    /// Makes the passcode mandatory for `name` until its next passcode success.
    public func requirePasscode(of name: UserName) throws(StoreError) {
        guard let fleet else { return try authenticator.requirePasscode(of: name) }
        try fleet.requirePasscode(of: name)
    }

    /// Removes `name`'s enrollment; `false` when there was none.
    public func removeEnrollment(of name: UserName) throws(StoreError) -> Bool {
        guard let fleet else { return try authenticator.removeEnrollment(of: name) }
        return try fleet.removeEnrollment(of: name)
    }

    /// The record of `account` as the store holds it (the directory's in fleet mode).
    public func record(of account: Account) throws(StoreError) -> UserRecord? {
        guard let fleet else { return try authenticator.records.load(account) }
        return try fleet.status(of: account)?.record
    }
}
