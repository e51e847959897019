import PuffCore

/// The one client of the setuid helper `puff-check`: for the module when it is not root (a
/// screen locker authenticating its own user), for the module as root in fleet mode and tpm
/// mode (`service-*`, for a named user under the module's arguments), and for `puff-enroll`
/// run by an ordinary user. It moves the secret or the request and believes only a
/// well-formed answer that agrees with the exit status (HelperProtocol.swift).
public struct HelperClient: Sendable {
    /// The helper executable (module option `helper=`, `puff-enroll --helper`).
    public let path: String
    /// Set for a root caller that asks on behalf of a named user (the module in fleet mode).
    public let service: Service?

    /// A root caller's request: whom for, under which module arguments, from where.
    public struct Service: Sendable {
        /// The user name, raw, as the application gave it.
        public var user: String
        /// The module's arguments (the helper reads them as the module does: root chose them).
        public var arguments: [String]
        /// The transaction's PAM service, terminal, remote host and remote user, for the failure
        /// history the helper writes beside a counted failure (`HelperOrigin`).
        public var origin: [String]

        /// A request for `user` under `arguments`, from `origin` (service, tty, rhost, ruser).
        public init(user: String, arguments: [String], origin: [String] = []) {
            self.user = user
            self.arguments = arguments
            self.origin = origin
        }

        var request: HelperServiceRequest { HelperServiceRequest(user: user, arguments: arguments) }
    }

    /// A client of the helper at `path`, for the caller's own account or (`service`) for a
    /// root caller's named user. The helper refuses `service` unless the real uid is root;
    /// `HelperProcess` makes it root when the caller's effective uid is.
    public init(path: String, service: Service? = nil) {
        self.path = path
        self.service = service
    }

    /// The state of the caller's own account, for a tool (`puff-enroll status`); a login reads
    /// it as the first answer of `login()`.
    public func query() throws(StoreError) -> CredentialState {
        guard service == nil else { throw .unsafe(path: path, reason: "a service caller's state is part of its login") }
        let (status, output) = try run(.query, frames: [])
        return try HelperReport.state(status: status, output: output, helper: path)
    }

    /// A whole login in one helper run (`login` for the caller's own account, `service-login`
    /// for a service caller): the state before the prompt now, the attempt (if any) later,
    /// through the same process, so the helper loads its configuration once, opens at most one
    /// directory connection and waits at most once for a directory out of reach.
    public func login() throws(StoreError) -> Login {
        let running = try HelperProcess(path: path).start(service == nil ? .login : .serviceLogin)
        if let service {
            let request = service.request.encoded() + HelperOrigin.encoded(service.origin)
            try Self.withBytes(of: request) { bytes throws(StoreError) in try running.send([bytes]) }
        }
        let state: CredentialState
        do throws(StoreError) {
            var reader = running.answerReader()
            state = try HelperLoginAnswer.readState(from: &reader, helper: path)
        } catch {
            // A helper that failed before answering says so by its status.
            let (status, _) = try running.finish()
            throw status == HelperExit.success ? error : HelperReport.failed(status, path)
        }
        return Login(running: running, path: path, state: state, isService: service != nil)
    }

    /// A login in progress: the state the helper read before the prompt, and the one attempt.
    /// Dropped without an attempt, the helper sees its input end and counts nothing.
    public final class Login {
        private let running: HelperProcess.Running
        private let path: String
        private let isService: Bool
        /// The state before the prompt.
        public let state: CredentialState

        init(running: HelperProcess.Running, path: String, state: CredentialState, isService: Bool) {
            (self.running, self.path, self.state, self.isService) = (running, path, state, isService)
        }

        /// The attempt with `secret`; `counted` is the failure it counted, for a service caller
        /// (the own account's helper keeps it: there is no `authsucc` line to take it back);
        /// `released` the system password a passcode success released (`keyring = yes`).
        public func verify(_ secret: borrowing SecureBytes, counted: inout CountedFailure?,
                           released: inout SecureBytes?) throws(StoreError) -> AttemptOutcome {
            let line = HelperLoginSecret.lengthLine(secret)
            try HelperClient.withBytes(of: line) { bytes throws(StoreError) in try running.send([bytes]) }
            try secret.withBytes { bytes throws(StoreError) in try running.send([bytes]) }
            // The answer is small enough to wait in the socket while the helper ends.
            let status = try running.wait()
            var reader = running.answerReader()
            return try HelperLoginAnswer.outcome(status: status, from: &reader, helper: path, countedExpected: isService,
                                                 counted: &counted, released: &released)
        }
    }

    /// Takes back a failure a service login counted for the service's user; `false` when there
    /// was nothing left to take back.
    public func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool {
        guard let service else { throw .unsafe(path: path, reason: "a take-back is for a service caller") }
        let request = HelperTakeBackRequest.encoded(service.request, failure)
        let (status, _) = try Self.withBytes(of: request) { bytes throws(StoreError) in
            try HelperProcess(path: path).run(.serviceTakeBack, input: [bytes])
        }
        switch status {
        case HelperExit.success: return true
        case HelperExit.refused: return false
        default: throw HelperReport.failed(status, path)
        }
    }

    /// Runs `operation` with the caller's buffers `frames` (a secret, a picture) on standard
    /// input, each preceded by its length line. The length lines are one buffer, cut into
    /// slices, so no frame is copied.
    private func run(_ operation: HelperOperation, frames: [UnsafeRawBufferPointer])
        throws(StoreError) -> (status: Int32, output: [UInt8]?) {
        var text: [UInt8] = []
        var ends: [Int] = []
        for frame in frames {
            text += HelperFrames.lengthLine(frame.count)
            ends.append(text.count)
        }
        return try Self.withBytes(of: text) { buffer throws(StoreError) in
            var input: [UnsafeRawBufferPointer] = []
            var start = 0
            for (frame, end) in zip(frames, ends) {
                input.append(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                input.append(frame)
                start = end
            }
            return try HelperProcess(path: path).run(operation, input: input)
        }
    }

    /// `body` with `array`'s bytes. Array's closure methods rethrow untyped errors, so the
    /// typed call is caught inside.
    static func withBytes<Result>(of array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(StoreError) -> Result)
        throws(StoreError) -> Result {
        let ran = array.withUnsafeBytes { bytes -> Swift.Result<Result, StoreError> in
            do throws(StoreError) {
                return .success(try body(bytes))
            } catch {
                return .failure(error)
            }
        }
        return try ran.get()
    }

    /// What a change request came to.
    public enum ChangeResult: Equatable, Sendable {
        /// Proved and stored (or removed).
        case done
        /// The proof was refused (`failure`, `locked`, `passcode-required`, `not-enrolled`);
        /// nothing changed.
        case refused(HelperReport.Outcome)
        /// Refused before any proof was checked: the new credential breaks the rules, or
        /// nothing is enrolled to remove.
        case rulesBroken
    }

    /// What a change would check, before the rest of it is asked for (`precheck`): the
    /// passcode `type` (nil for a gesture), then, when given, the proof. `.done` when both
    /// pass; `.rulesBroken` when the type is refused (nothing was counted).
    public func precheck(type: PasscodeType?, proof: UnsafeRawBufferPointer?) throws(StoreError) -> ChangeResult {
        let mode = Array((proof == nil ? "check" : "prove").utf8), typeName = Array((type?.rawValue ?? "-").utf8)
        let (status, output) = try Self.withBytes(of: mode) { modeBytes throws(StoreError) in
            try Self.withBytes(of: typeName) { typeBytes throws(StoreError) in
                try run(.precheck, frames: HelperChangeRequest.precheckFrames(mode: modeBytes, type: typeBytes, proof: proof))
            }
        }
        if status == HelperExit.rules { return .rulesBroken }
        guard proof != nil else {
            guard status == HelperExit.success else { throw HelperReport.failed(status, path) }
            return .done
        }
        let report = try HelperReport.attemptReport(status: status, output: output, helper: path)
        return report.outcome == .success ? .done : .refused(report.outcome)
    }

    /// Sends a change request (`frames`, from `HelperChangeRequest`) and says what the helper
    /// did; a failed helper or a report that disagrees with its status throws.
    public func change(_ operation: HelperOperation, frames: [UnsafeRawBufferPointer]) throws(StoreError) -> ChangeResult {
        guard operation.isChange else {
            throw .unsafe(path: path, reason: "\(operation.rawValue) is not a change request")
        }
        let (status, output) = try run(operation, frames: frames)
        if status == HelperExit.rules { return .rulesBroken }
        let report = try HelperReport.attemptReport(status: status, output: output, helper: path)
        return report.outcome == .success ? .done : .refused(report.outcome)
    }
}
