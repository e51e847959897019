import PuffCore

/// The one client of the setuid helper `puff-check`: for the module when it is not root (a
/// screen locker authenticating its own user), for the module as root in fleet mode (the
/// `service-*` calls, for a named user under the module's arguments), and for `puff-enroll`
/// run by an ordinary user. It moves the secret or the framed request and believes only a
/// well-formed report that agrees with the exit status (HelperReportMapping.swift).
public struct HelperClient: Sendable {
    /// The helper executable (module option `helper=`, `puff-enroll --helper`).
    public let path: String
    /// Set for a root caller that asks on behalf of a named user (the module in fleet mode).
    public let service: Service?

    /// A root caller's request: whom for, under which module arguments.
    public struct Service: Sendable {
        /// The user name, raw, as the application gave it.
        public var user: String
        /// The module's arguments (the helper reads them as the module does: root chose them).
        public var arguments: [String]
        /// The transaction's PAM service, terminal, remote host and remote user, for the failure
        /// history the helper writes beside a counted failure (sent with `serviceVerify` only).
        public var origin: [String]

        /// A request for `user` under `arguments`, from `origin` (service, tty, rhost, ruser).
        public init(user: String, arguments: [String], origin: [String] = []) {
            self.user = user
            self.arguments = arguments
            self.origin = origin
        }

        /// The origin as frames: always four, each marked with a leading `=` (a frame is never
        /// empty, and an item may be).
        var originFields: [[UInt8]] {
            (0..<Self.originCount).map { index in Self.originFrame(index < origin.count ? origin[index] : "") }
        }

        /// The most bytes of one origin item the helper reads (its frame is one more).
        public static let originItemLimit = 256

        /// One origin frame: `=`, then `item` cut to `originItemLimit` bytes after its last whole
        /// character that fits. The module's items are cut at 256 bytes before invalid UTF-8
        /// becomes U+FFFD (three bytes each), so one may be longer here; uncut, the helper
        /// refused the whole request and the attempt failed closed.
        public static func originFrame(_ item: String) -> [UInt8] {
            var frame: [UInt8] = [UInt8(ascii: "=")]
            for scalar in item.unicodeScalars {
                let encoded = Array(String(scalar).utf8)
                guard frame.count - 1 + encoded.count <= originItemLimit else { break }
                frame += encoded
            }
            return frame
        }

        /// How many origin frames `serviceVerify` carries.
        public static let originCount = 4

        /// The request's fields: the user, the number of arguments, the arguments (an empty
        /// argument sets nothing and a frame is never empty, so it is left out).
        var fields: [[UInt8]] {
            let given = arguments.filter { !$0.isEmpty }
            return [Array(user.utf8), Array(String(given.count).utf8)] + given.map { Array($0.utf8) }
        }
    }

    /// A client of the helper at `path`, for the caller's own account or (`service`) for a
    /// root caller's named user. The helper refuses `service` unless the real uid is root;
    /// `HelperProcess` makes it root when the caller's effective uid is.
    public init(path: String, service: Service? = nil) {
        self.path = path
        self.service = service
    }

    /// The state before the prompt, for the caller's own account (a service caller's is the
    /// first answer of its `login()`).
    public func query() throws(StoreError) -> CredentialState {
        guard service == nil else { throw .unsafe(path: path, reason: "a service caller's state is part of its login") }
        let (status, output) = try run(.query, fields: [])
        return try HelperReport.state(status: status, output: output, helper: path)
    }

    /// One attempt with `secret`, for the caller's own account (a service caller's attempt
    /// goes through its `login()`).
    public func verify(_ secret: borrowing SecureBytes) throws(StoreError) -> AttemptOutcome {
        guard service == nil else { throw .unsafe(path: path, reason: "a service caller's attempt is part of its login") }
        let (status, output) = try secret.withBytes { bytes throws(StoreError) in
            try HelperProcess(path: path).run(.verify, input: [bytes])
        }
        return try HelperReport.outcome(status: status, output: output, helper: path)
    }

    /// A service call's answer to an attempt: the report, then the failure it counted, if any.
    static func serviceOutcome(status: Int32, output: [UInt8]?, helper path: String,
                               counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
        counted = nil
        // A failed helper says so by its status alone.
        guard status == HelperExit.success || status == HelperExit.refused else { throw HelperReport.failed(status, path) }
        // The answer: the report, then the failure it counted, if any.
        guard let output, let fields = FrameText.decode(output, maximumFields: 5), fields.count == 1 || fields.count == 5 else {
            throw .unsafe(path: path, reason: "the helper's answer is malformed")
        }
        let outcome = try HelperReport.outcome(status: status, output: fields[0], helper: path)
        if fields.count == 5 {
            guard case .failure = outcome, let failure = CountedFailure(serviceFields: fields.dropFirst()) else {
                throw .unsafe(path: path, reason: "the helper's counted failure is malformed")
            }
            counted = failure
        }
        return outcome
    }

    /// A service caller's whole login in one helper run (`service-login`): the state before the
    /// prompt now, the attempt (if any) later, through the same process, so the helper opens at
    /// most one directory connection and waits at most once for a directory out of reach.
    public func login() throws(StoreError) -> ServiceLogin {
        guard let service else { throw .unsafe(path: path, reason: "a service login is for a service caller") }
        let running = try HelperProcess(path: path).start(.serviceLogin)
        let request = FrameText.encode(service.fields + service.originFields)
        try Self.withBytes(of: request) { bytes throws(StoreError) in try running.send([bytes]) }
        let frame: [UInt8]
        do throws(StoreError) {
            frame = try running.readFrame(limit: HelperReport.maximumSize)
        } catch {
            // A helper that failed before answering says so by its status.
            let (status, _) = try running.finish()
            throw status == HelperExit.success ? error : HelperReport.failed(status, path)
        }
        return ServiceLogin(running: running, path: path,
                            state: try HelperReport.state(status: HelperExit.success, output: frame, helper: path))
    }

    /// A service login in progress: the state the helper read before the prompt, and the one
    /// attempt. Dropped without an attempt, the helper sees its input end and counts nothing.
    public final class ServiceLogin {
        private let running: HelperProcess.Running
        private let path: String
        /// The state before the prompt.
        public let state: CredentialState

        init(running: HelperProcess.Running, path: String, state: CredentialState) {
            (self.running, self.path, self.state) = (running, path, state)
        }

        /// The attempt with `secret`; `counted` is the failure it counted, if any.
        public func verify(_ secret: borrowing SecureBytes,
                           counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
            let line = FrameText.lengthLine(secret.count)
            try HelperClient.withBytes(of: line) { bytes throws(StoreError) in try running.send([bytes]) }
            try secret.withBytes { bytes throws(StoreError) in try running.send([bytes]) }
            let (status, output) = try running.finish()
            return try HelperClient.serviceOutcome(status: status, output: output, helper: path, counted: &counted)
        }
    }

    /// Takes back a failure `verify` counted for the service's user; `false` when there was
    /// nothing left to take back.
    public func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool {
        guard let service else { throw .unsafe(path: path, reason: "a take-back is for a service caller") }
        let (status, _) = try run(.serviceTakeBack, fields: service.fields + failure.serviceFields)
        switch status {
        case HelperExit.success: return true
        case HelperExit.refused: return false
        default: throw HelperReport.failed(status, path)
        }
    }

    /// Runs `operation` with its request on standard input: the public `fields`, then the
    /// caller's buffers `frames` (a secret, a picture), each preceded by its length line
    /// (`FrameText`). The length lines are one buffer with the fields, cut into slices, so no
    /// frame is copied.
    private func run(_ operation: HelperOperation, fields: [[UInt8]], frames: [UnsafeRawBufferPointer] = [])
        throws(StoreError) -> (status: Int32, output: [UInt8]?) {
        var text = FrameText.encode(fields)
        let head = text.count
        var ends: [Int] = []
        for frame in frames {
            text += FrameText.lengthLine(frame.count)
            ends.append(text.count)
        }
        return try Self.withBytes(of: text) { buffer throws(StoreError) in
            var input = [UnsafeRawBufferPointer(rebasing: buffer[..<head])]
            var start = head
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
                try run(.precheck, fields: [], frames: [modeBytes, typeBytes] + (proof.map { [$0] } ?? []))
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

    /// Sends a change request (`frames`: each buffer preceded by its length line) and says
    /// what the helper did; a failed helper or a report that disagrees with its status throws.
    public func change(_ operation: HelperOperation, frames: [UnsafeRawBufferPointer]) throws(StoreError) -> ChangeResult {
        guard operation.isChange else {
            throw .unsafe(path: path, reason: "\(operation.rawValue) is not a change request")
        }
        let (status, output) = try run(operation, fields: [], frames: frames)
        if status == HelperExit.rules { return .rulesBroken }
        let report = try HelperReport.attemptReport(status: status, output: output, helper: path)
        return report.outcome == .success ? .done : .refused(report.outcome)
    }
}
