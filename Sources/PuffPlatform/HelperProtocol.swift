import PuffCore

// The protocol between `puff-check` and its one client, `HelperClient`: every message's
// encoding and decoding, side by side, on one framing. A frame is its length in ASCII decimal
// (1 to 10 digits), a newline, then that many bytes; no frame is empty, every one has its own
// bound, and nothing may follow a message's last frame. The helper reads its standard input
// and the client the helper's answer with the same reader, one byte at a time up to each
// newline, so a secret goes straight from the descriptor into wiped memory.
//
//   query              request: nothing      answer: a report (HelperReport's text)
//   login              request: nothing, then the secret or the end of input
//                      answer: the state as one frame, then the attempt's answer
//   service-login      request: the service request, the origin; then as `login`
//   service-take-back  request: the service request, the counted failure; answer: the status
//   enroll-passcode    request: proof, type, new passcode         answer: a report
//   enroll-gesture     request: proof, define, confirm, picture   answer: a report
//   remove             request: proof                             answer: a report
//   precheck           request: mode, type[, proof]               answer: a report

// MARK: - Framing

/// Why a helper message does not parse, in words (the helper logs it; the client's error says it).
public enum HelperProtocolError: Error, Equatable, CustomStringConvertible {
    /// The input ended inside the named field or before it.
    case truncated(String)
    /// The field's length line is not 1 to 10 ASCII digits and a newline.
    case badLengthLine(String)
    /// The field is longer than its bound.
    case overBound(String, limit: Int)
    /// The field is empty; no field ever is.
    case empty(String)
    /// The field holds no value it may hold.
    case badValue(String)
    /// Bytes follow the message's last field.
    case trailingBytes
    /// The input could not be read, or no locked memory was left for a secret field.
    case unreadable(String)

    public var description: String {
        // Concatenation, not interpolation: smaller in the Embedded build.
        switch self {
        case .truncated(let field): "the input ends before the " + field + " is whole"
        case .badLengthLine(let field): "the length line of the " + field + " is not 1 to 10 digits and a newline"
        case .overBound(let field, let limit): "the " + field + " is longer than " + String(limit) + " bytes"
        case .empty(let field): "the " + field + " is empty"
        case .badValue(let field): "the " + field + " is not valid"
        case .trailingBytes: "bytes follow the last field"
        case .unreadable(let field): "the " + field + " could not be read"
        }
    }
}

/// Where a `HelperFrameReader` takes its bytes from.
public protocol HelperByteSource {
    /// Fills `buffer`; the number of bytes read, fewer only at the end of the input; `nil`
    /// when the source cannot be read.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Int?
}

/// A descriptor: the helper's standard input, the client's end of the helper's output.
public struct HelperDescriptorSource: HelperByteSource {
    public let descriptor: Int32
    public init(_ descriptor: Int32) { self.descriptor = descriptor }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Int? {
        try? FileDescriptor.read(descriptor, into: buffer)
    }
}

/// Bytes already in memory: an answer read to its end, a fuzzer's input.
public struct HelperBytesSource: HelperByteSource {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let count = min(buffer.count, bytes.count - offset)
        guard count > 0, let target = buffer.baseAddress else { return 0 }
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { target.copyMemory(from: base + offset, byteCount: count) }
        }
        offset += count
        return count
    }
}

/// Reads frames from a source: the one length-line parser of the protocol.
public struct HelperFrameReader<Source: HelperByteSource> {
    private var source: Source

    /// The most digits of a length line.
    public static var maximumDigits: Int { 10 }

    public init(_ source: Source) { self.source = source }

    /// The next field's length, 1 to `limit`, read a byte at a time so that nothing after the
    /// newline is taken. `nil` when `endAllowed` and the input ends before the length line.
    /// Leading zeros are accepted, as they always were.
    private mutating func length(of field: String, limit: Int, endAllowed: Bool = false) throws(HelperProtocolError) -> Int? {
        var value = 0, digits = 0
        while true {
            var byte: UInt8 = 0
            guard let got = withUnsafeMutableBytes(of: &byte, { source.fill($0) }) else { throw .unreadable(field) }
            guard got == 1 else {
                if digits == 0, endAllowed { return nil }
                throw .truncated(field)
            }
            if byte == UInt8(ascii: "\n"), digits > 0 {
                guard value > 0 else { throw .empty(field) }
                return value
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < Self.maximumDigits else {
                throw .badLengthLine(field)
            }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            guard value <= limit else { throw .overBound(field, limit: limit) }
        }
    }

    /// Exactly `buffer.count` bytes of `field`.
    private mutating func fill(_ buffer: UnsafeMutableRawBufferPointer, _ field: String) throws(HelperProtocolError) {
        guard let got = source.fill(buffer) else { throw .unreadable(field) }
        guard got == buffer.count else { throw .truncated(field) }
    }

    /// A public field of 1 to `limit` bytes.
    public mutating func field(_ name: String, limit: Int) throws(HelperProtocolError) -> [UInt8] {
        guard let field = try fieldOrEnd(name, limit: limit) else { throw .truncated(name) }
        return field
    }

    /// `field(_:limit:)`, or `nil` when the input ends before it.
    public mutating func fieldOrEnd(_ name: String, limit: Int) throws(HelperProtocolError) -> [UInt8]? {
        guard let count = try length(of: name, limit: limit, endAllowed: true) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        // Array's closure methods rethrow untyped errors, so the typed read is caught inside.
        let read = bytes.withUnsafeMutableBytes { buffer -> HelperProtocolError? in
            do throws(HelperProtocolError) { try fill(buffer, name) } catch { return error }
            return nil
        }
        if let read { throw read }
        return bytes
    }

    /// A public field that is UTF-8 text.
    public mutating func text(_ name: String, limit: Int) throws(HelperProtocolError) -> String {
        guard let text = String(validating: try field(name, limit: limit), as: UTF8.self) else { throw .badValue(name) }
        return text
    }

    /// A secret field of 1 to `limit` bytes, straight into wiped memory.
    public mutating func secret(_ name: String, limit: Int) throws(HelperProtocolError) -> SecureBytes {
        guard let secret = try secretOrEnd(name, limit: limit) else { throw .truncated(name) }
        return secret
    }

    /// `secret(_:limit:)`, or `nil` when the input ends before it (a login without an attempt).
    public mutating func secretOrEnd(_ name: String, limit: Int) throws(HelperProtocolError) -> SecureBytes? {
        guard let count = try length(of: name, limit: limit, endAllowed: true) else { return nil }
        guard var secret = try? SecureBytes(count: count) else { throw .unreadable(name) }
        try secret.withMutableBytes { buffer throws(HelperProtocolError) in try fill(buffer, name) }
        return secret
    }

    /// The end of the message: nothing may follow its last field.
    public mutating func end() throws(HelperProtocolError) {
        var byte: UInt8 = 0
        guard let got = withUnsafeMutableBytes(of: &byte, { source.fill($0) }) else { throw .unreadable("end") }
        guard got == 0 else { throw .trailingBytes }
    }
}

/// Writing frames: the other half of `HelperFrameReader`.
public enum HelperFrames {
    /// The line that precedes a field of `count` bytes.
    public static func lengthLine(_ count: Int) -> [UInt8] {
        Array("\(count)\n".utf8)
    }

    /// `fields`, each preceded by its length line.
    public static func encode(_ fields: [[UInt8]]) -> [UInt8] {
        var text: [UInt8] = []
        for field in fields {
            text += lengthLine(field.count)
            text += field
        }
        return text
    }
}

/// The bounds of the fields, one place for both sides.
public enum HelperBounds {
    /// A secret typed at a prompt (the module's reply limit).
    public static let secret = ModuleLimits.replyLength
    /// A new passcode.
    public static let passcode = PasscodeRules.alphanumericLength.upperBound
    /// A passcode type's name, or `-`.
    public static let typeName = 32
    /// `check` or `prove`.
    public static let mode = 8
    /// A picture for a gesture.
    public static let picture = RecordStore.maximumPictureSize
    /// A user name, an argument, how many arguments.
    public static let userName = ModuleLimits.userNameLength
    public static let argument = ModuleLimits.argumentLength
    public static let arguments = ModuleLimits.arguments
    /// A counter, as a counted failure carries it.
    public static let counter = LockoutStore.fileSize
    /// Where a failure was counted: `local` or `directory`.
    public static let place = 16
    /// A report.
    public static let report = HelperReport.maximumSize
}

// MARK: - Requests

/// The public head of a service call (`service-login`, `service-take-back`): the user, raw as
/// the application gave it, and the module's arguments (root chose them).
public struct HelperServiceRequest: Equatable, Sendable {
    public var user: String
    public var arguments: [String]

    public init(user: String, arguments: [String]) {
        self.user = user
        self.arguments = arguments
    }

    /// The user, the number of arguments, the arguments; an empty argument sets nothing and
    /// a frame is never empty, so it is left out.
    public func encoded() -> [UInt8] {
        let given = arguments.filter { !$0.isEmpty }
        return HelperFrames.encode([Array(user.utf8), Array(String(given.count).utf8)] + given.map { Array($0.utf8) })
    }

    public static func read<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> HelperServiceRequest {
        let user = try reader.text("user name", limit: HelperBounds.userName)
        let countText = try reader.text("argument count", limit: String(HelperBounds.arguments).utf8.count)
        guard let count = Int(canonicalDecimal: countText), count <= HelperBounds.arguments else {
            throw .badValue("argument count")
        }
        var arguments: [String] = []
        for _ in 0..<count { arguments.append(try reader.text("module argument", limit: HelperBounds.argument)) }
        return HelperServiceRequest(user: user, arguments: arguments)
    }
}

/// Where a service login comes from (the PAM service, tty, remote host and remote user), for
/// the failure history the helper writes: always four frames, each `=` and the item, so that
/// an empty item is no empty frame.
public enum HelperOrigin {
    /// How many items.
    public static let count = 4
    /// The most bytes of one item (its frame is one more).
    public static let itemLimit = 256

    /// The frames of `items` (missing ones empty).
    public static func encoded(_ items: [String]) -> [UInt8] {
        HelperFrames.encode((0..<count).map { index in frame(index < items.count ? items[index] : "") })
    }

    /// One frame: `=`, then `item` cut after its last whole character within `itemLimit`. The
    /// module cuts its items at 256 bytes before invalid UTF-8 becomes U+FFFD (three bytes
    /// each), so one may be longer here; uncut, the helper would refuse the whole login.
    public static func frame(_ item: String) -> [UInt8] {
        var frame: [UInt8] = [UInt8(ascii: "=")]
        for scalar in item.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard frame.count - 1 + encoded.count <= itemLimit else { break }
            frame += encoded
        }
        return frame
    }

    public static func read<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> [String] {
        var items: [String] = []
        for _ in 0..<count {
            let frame = try reader.field("origin item", limit: itemLimit + 1)
            guard frame.first == UInt8(ascii: "="), let item = String(validating: frame.dropFirst(), as: UTF8.self) else {
                throw .badValue("origin item")
            }
            items.append(item)
        }
        return items
    }
}

extension CountedFailure {
    /// The failure as a service login's answer carries it and `service-take-back` sends it
    /// back: the account's own name (the counters are filed under it, whatever spelling the
    /// application gave), the counter before and after, and where it was counted.
    public func encoded() -> [UInt8] {
        HelperFrames.encode([Array(user.value.utf8), before.encoded(), after.encoded(),
                             Array((countedInDirectory ? "directory" : "local").utf8)])
    }

    /// The failure, or `nil` when the input ends before it.
    public static func read<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> CountedFailure? {
        guard let nameBytes = try reader.fieldOrEnd("counted user", limit: HelperBounds.userName) else { return nil }
        guard let name = String(validating: nameBytes, as: UTF8.self).flatMap(UserName.init) else {
            throw .badValue("counted user")
        }
        let beforeBytes = try reader.field("counter before", limit: HelperBounds.counter)
        guard let before = try? Tally.decode(beforeBytes) else { throw .badValue("counter before") }
        let afterBytes = try reader.field("counter after", limit: HelperBounds.counter)
        guard let after = try? Tally.decode(afterBytes) else { throw .badValue("counter after") }
        let place = try reader.field("place", limit: HelperBounds.place)
        guard place.elementsEqual("directory".utf8) || place.elementsEqual("local".utf8) else { throw .badValue("place") }
        return CountedFailure(user: name, before: before, after: after,
                                            countedInDirectory: place.elementsEqual("directory".utf8))
    }
}

/// `service-take-back`: the service request, then the failure to take back.
public enum HelperTakeBackRequest {
    public static func encoded(_ service: HelperServiceRequest, _ failure: CountedFailure) -> [UInt8] {
        service.encoded() + failure.encoded()
    }

    /// The failure after the service request was read; nothing may follow it.
    public static func readFailure<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError)
        -> CountedFailure {
        guard let failure = try CountedFailure.read(from: &reader) else { throw .truncated("counted user") }
        try reader.end()
        return failure
    }
}

/// The attempt of a login (`login`, `service-login`), after its state: the secret as one
/// frame, or the end of the input (no attempt, nothing counted).
public enum HelperLoginSecret {
    /// The length line to send before the secret's bytes (which stay in the caller's buffer).
    public static func lengthLine(_ secret: borrowing SecureBytes) -> [UInt8] {
        HelperFrames.lengthLine(secret.count)
    }

    public static func read<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> SecureBytes? {
        guard let secret = try reader.secretOrEnd("secret", limit: HelperBounds.secret) else { return nil }
        try reader.end()
        return secret
    }
}

/// A change the caller makes to its own enrollment (`enroll-passcode`, `enroll-gesture`,
/// `remove`) and `precheck`: the client sends the frames of its own buffers (`frames`, no
/// copy of a secret); the helper reads them here.
public enum HelperChangeRequest {
    /// `enroll-passcode`: proof, type, new passcode.
    public static func passcodeFrames(proof: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer,
                                      passcode: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        [proof, type, passcode]
    }

    /// `enroll-gesture`: proof, define gesture, confirm gesture, picture (PNG or JPEG bytes).
    public static func gestureFrames(proof: UnsafeRawBufferPointer, define: UnsafeRawBufferPointer,
                                     confirm: UnsafeRawBufferPointer, picture: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        [proof, define, confirm, picture]
    }

    /// `remove`: the proof.
    public static func removalFrames(proof: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] { [proof] }

    /// `precheck`: `check` or `prove`, the passcode type or `-`, and with `prove` the proof.
    public static func precheckFrames(mode: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer,
                                      proof: UnsafeRawBufferPointer?) -> [UnsafeRawBufferPointer] {
        [mode, type] + (proof.map { [$0] } ?? [])
    }

    /// An enrollment as the helper reads it.
    public struct Enrollment: ~Copyable {
        public let proof: SecureBytes
        /// The new passcode, or the define gesture.
        public let secret: SecureBytes
        /// The confirm gesture; one zero byte for a passcode.
        public let confirm: SecureBytes
        /// The new passcode's type; `nil` for a gesture.
        public let type: PasscodeType?
        /// The gesture's picture; empty for a passcode.
        public let picture: [UInt8]
    }

    /// `enroll-passcode` (`gesture` false) or `enroll-gesture`.
    public static func readEnrollment<S>(gesture: Bool, from reader: inout HelperFrameReader<S>) throws(HelperProtocolError)
        -> Enrollment {
        let proof = try reader.secret("proof", limit: HelperBounds.secret)
        guard gesture else {
            let typeText = try reader.field("passcode type", limit: HelperBounds.typeName)
            let passcode = try reader.secret("new passcode", limit: HelperBounds.passcode)
            try reader.end()
            guard let type = PasscodeType(rawValue: String(decoding: typeText, as: UTF8.self)) else {
                throw .badValue("passcode type")
            }
            guard let none = try? SecureBytes(count: 1) else { throw .unreadable("new passcode") }
            return Enrollment(proof: proof, secret: passcode, confirm: none, type: type, picture: [])
        }
        let define = try reader.secret("define gesture", limit: HelperBounds.secret)
        let confirm = try reader.secret("confirm gesture", limit: HelperBounds.secret)
        let picture = try reader.field("picture", limit: HelperBounds.picture)
        try reader.end()
        return Enrollment(proof: proof, secret: define, confirm: confirm, type: nil, picture: picture)
    }

    /// `remove`'s proof.
    public static func readRemoval<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> SecureBytes {
        let proof = try reader.secret("proof", limit: HelperBounds.secret)
        try reader.end()
        return proof
    }

    /// A precheck as the helper reads it: the type (`nil` for `-`, a gesture) and the proof
    /// (`nil` for `check`).
    public struct Precheck: ~Copyable {
        public let type: PasscodeType?
        public let proof: SecureBytes?

        /// The proof, taken out of the request.
        public consuming func takeProof() -> SecureBytes? { proof }
    }

    public static func readPrecheck<S>(from reader: inout HelperFrameReader<S>) throws(HelperProtocolError) -> Precheck {
        let mode = try reader.field("mode", limit: HelperBounds.mode)
        let typeText = try reader.field("passcode type", limit: HelperBounds.typeName)
        var proof: SecureBytes?
        if mode.elementsEqual("prove".utf8) {
            proof = try reader.secret("proof", limit: HelperBounds.secret)
        } else if !mode.elementsEqual("check".utf8) {
            throw .badValue("mode")
        }
        try reader.end()
        guard !typeText.elementsEqual("-".utf8) else { return Precheck(type: nil, proof: proof) }
        guard let type = PasscodeType(rawValue: String(decoding: typeText, as: UTF8.self)) else {
            throw .badValue("passcode type")
        }
        return Precheck(type: type, proof: proof)
    }
}

// MARK: - Answers

/// A login's answers (`login`, `service-login`): the state before the prompt as one frame,
/// then, after the attempt, the report and either (service calls only) the failure it counted
/// or, after a passcode success with `keyring = yes`, the system password the passcode
/// released (docs/admin/protection-at-rest.md, "The login keyring").
public enum HelperLoginAnswer {
    /// The state, framed.
    public static func stateFrame(_ state: CredentialState) -> [UInt8] {
        HelperFrames.encode([HelperReport(state).encoded()])
    }

    /// The state frame as the client reads it from the running helper.
    public static func readState<S>(from reader: inout HelperFrameReader<S>, helper path: String) throws(StoreError)
        -> CredentialState {
        let frame: [UInt8]
        do throws(HelperProtocolError) {
            frame = try reader.field("state", limit: HelperBounds.report)
        } catch {
            // The helper is root's own: an answer that does not parse is its fault, said in short.
            throw .unsafe(path: path, reason: "the helper's answer is malformed")
        }
        return try HelperReport.state(status: HelperExit.success, output: frame, helper: path)
    }

    /// The attempt's answer: the report, then the failure it counted, if any; or, with
    /// `releasedCount`, the length line of the released password, whose bytes the helper then
    /// writes straight from wiped memory.
    public static func attemptAnswer(_ report: HelperReport, counted: CountedFailure?,
                                     releasedCount: Int? = nil) -> [UInt8] {
        HelperFrames.encode([report.encoded()]) + (counted?.encoded() ?? []) + (releasedCount.map(HelperFrames.lengthLine) ?? [])
    }

    /// The outcome of an attempt's answer, read from `reader`, from a helper that exited with
    /// `status`; `counted` is the failure it counted (refused unless `countedExpected`: a
    /// service call), `released` the system password a passcode success released, in wiped
    /// memory (only ever after a success).
    public static func outcome<S>(status: Int32, from reader: inout HelperFrameReader<S>, helper path: String, countedExpected: Bool,
                                  counted: inout CountedFailure?,
                                  released: inout SecureBytes?) throws(StoreError) -> AttemptOutcome {
        counted = nil
        released = nil
        // A failed helper says so by its status alone.
        guard status == HelperExit.success || status == HelperExit.refused else { throw HelperReport.failed(status, path) }
        let report: [UInt8]
        do throws(HelperProtocolError) {
            report = try reader.field("report", limit: HelperBounds.report)
        } catch {
            throw .unsafe(path: path, reason: "the helper's answer is malformed")
        }
        let outcome = try HelperReport.outcome(status: status, output: report, helper: path)
        do throws(HelperProtocolError) {
            switch outcome {
            case .success:
                released = try reader.secretOrEnd("released password", limit: HelperBounds.secret)
            case .failure where countedExpected:
                counted = try CountedFailure.read(from: &reader)
            // Nothing else follows a report: the own account's helper keeps its counted failure.
            case .failure, .locked, .passcodeRequired, .notEnrolled:
                break
            }
            try reader.end()
        } catch {
            counted = nil
            released = nil
            throw .unsafe(path: path, reason: "the helper's answer is malformed")
        }
        return outcome
    }
}

/// `HelperReport` as the encoding of `FilesStore`'s own state and outcome, both ways: the
/// helper encodes, `HelperClient` decodes. What the text does not carry (a not-enrolled
/// reason, a damaged counter, a rehash, a failure's detail) stays in the helper's log.
extension HelperReport {
    /// The reason a helper's `not-enrolled` report reads back as.
    public static let notEnrolledReason = "no Puff record"
    /// The detail a helper's `failure` reads back as (the helper logged the real one).
    public static let failureDetail = "see puff-check's log"

    /// The report of the state before the prompt.
    public init(_ state: CredentialState) {
        self.init(outcome: state.isEnrolled ? .state : .notEnrolled, lock: state.lock, acceptance: state.acceptance,
                  failures: state.failures)
    }

    /// The report of an attempt that came to `outcome`, for a user whose state before it was
    /// `state`. `clearsFailures` is `false` for a success that takes back only its own attempt
    /// (the system password proving a change): the failures before it stand.
    public init(_ outcome: AttemptOutcome, before state: CredentialState, clearsFailures: Bool = true) {
        self.init(state)
        switch outcome {
        case .success:
            self.outcome = .success
            lock = .open
            if clearsFailures { failures = 0 }
        case .failure(let failures, let lock, _):
            self.outcome = .failure
            self.failures = failures
            self.lock = lock
        case .locked(let lock):
            self.outcome = .locked
            self.lock = lock
        case .passcodeRequired(let reason):
            // The reason travels in `accepts`; the type is the enrolled one as read before
            // the attempt (nothing reads it after an attempt).
            self.outcome = .passcodeRequired
            acceptance = .passcodeOnly(Self.passcodeType(of: state.acceptance), because: reason)
        case .notEnrolled:
            self.outcome = .notEnrolled
        }
    }

    /// A gesture sent as the proof for a change: only the passcode (`type`) proves who may
    /// change a credential. Not an attempt: nothing was counted.
    public static func passcodeRequiredForChange(_ state: CredentialState, type: PasscodeType) -> HelperReport {
        var report = HelperReport(state)
        report.outcome = .passcodeRequired
        report.acceptance = .passcodeOnly(type, because: nil)
        return report
    }

    /// The exit status that goes with the report of an attempt or a change.
    public var exitStatus: Int32 { outcome == .success ? HelperExit.success : HelperExit.refused }

    /// The state in a report (`query`'s output, a login's state frame) from a helper that
    /// exited with `status`; a failed helper, a malformed report, or one that answers with an
    /// attempt's outcome throws.
    public static func state(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> CredentialState {
        guard status == HelperExit.success else { throw failed(status, path) }
        let report = try decode(output, helper: path)
        switch report.outcome {
        case .state:
            return CredentialState(notEnrolledReason: nil, lock: report.lock, acceptance: report.acceptance,
                                   failures: report.failures)
        case .notEnrolled:
            return .notEnrolled(notEnrolledReason)
        case .success, .failure, .locked, .passcodeRequired:
            throw .unsafe(path: path, reason: "the helper answered a query with an attempt's outcome")
        }
    }

    /// The outcome in an attempt's report from a helper that exited with `status`: a failed
    /// helper, a malformed report, a query's state, or a status that disagrees with the report
    /// (a success report with a refusal status, or the reverse) throws.
    public static func outcome(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> AttemptOutcome {
        let report = try attemptReport(status: status, output: output, helper: path)
        switch report.outcome {
        case .success: return .success(rehashed: false)
        case .failure: return .failure(failures: report.failures, lock: report.lock, detail: failureDetail)
        case .locked: return .locked(report.lock)
        case .notEnrolled: return .notEnrolled
        case .passcodeRequired:
            guard case .passcodeOnly(_, let reason?) = report.acceptance else {
                throw .unsafe(path: path, reason: "the helper gave no reason for requiring the passcode")
            }
            return .passcodeRequired(reason)
        case .state:
            throw .unsafe(path: path, reason: "the helper answered an attempt with a query's state")
        }
    }

    /// The report of an attempt or a change (exit 0 or 1) after the same checks as
    /// `outcome(status:output:helper:)`, but a `passcode-required` needs no reason (a gesture
    /// sent as the proof for a change).
    public static func attemptReport(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> HelperReport {
        guard status == HelperExit.success || status == HelperExit.refused else { throw failed(status, path) }
        let report = try decode(output, helper: path)
        guard report.outcome != .state else {
            throw .unsafe(path: path, reason: "the helper answered an attempt with a query's state")
        }
        guard report.exitStatus == status else {
            throw .unsafe(path: path, reason: "the helper's status and report disagree")
        }
        return report
    }

    private static func decode(_ output: [UInt8]?, helper path: String) throws(StoreError) -> HelperReport {
        guard let output, let report = try? decode(output) else {
            throw .unsafe(path: path, reason: "the helper's report is malformed")
        }
        return report
    }

    /// A helper that exited with `status` (not 0 or 1): it failed closed and logged why.
    static func failed(_ status: Int32, _ path: String) -> StoreError {
        .unsafe(path: path, reason: "the helper failed (status \(status)); see its log")
    }

    private static func passcodeType(of acceptance: Acceptance) -> PasscodeType {
        switch acceptance {
        case .passcodeOrGesture(let type), .passcodeOnly(let type, _): type
        // A passcode enrolled between the state and the attempt: the common prompt's type.
        case .gestureOnly, .refused: PasscodeType.digits6
        }
    }
}
