import PuffCore
import PuffPlatform
import Testing

/// An attempt's answer held in memory, read as the client reads it from the helper's socket.
func answerOutcome(status: Int32, output: [UInt8], helper: String, countedExpected: Bool,
                   counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
    var reader = HelperFrameReader(HelperBytesSource(output))
    var released: SecureBytes?
    return try HelperLoginAnswer.outcome(status: status, from: &reader, helper: helper, countedExpected: countedExpected,
                                         counted: &counted, released: &released)
}

/// The helper codec (PuffPlatform/HelperProtocol.swift): every message back through its own
/// reader, and every malformed input refused with its reason, never read as other fields.
@Suite("HelperProtocol")
struct HelperProtocolTests {
    init() throws { try Sodium.initialize() }

    static func reader(_ bytes: [UInt8]) -> HelperFrameReader<HelperBytesSource> {
        HelperFrameReader(HelperBytesSource(bytes))
    }

    static func reader(_ text: String) -> HelperFrameReader<HelperBytesSource> { reader(Array(text.utf8)) }

    static func secret(_ text: String) throws -> SecureBytes {
        let bytes = Array(text.utf8)
        var secret = try SecureBytes(count: bytes.count)
        secret.withMutableBytes { $0.copyBytes(from: bytes) }
        return secret
    }

    static func bytes(_ secret: borrowing SecureBytes) -> [UInt8] { secret.withBytes { Array($0) } }

    /// The bytes the client sends for `frames` (HelperClient's `run`: each its length line).
    static func framed(_ frames: [[UInt8]]) -> [UInt8] { HelperFrames.encode(frames) }

    /// The error reading `body` from `bytes` throws; `nil` when it reads.
    static func refusal<T>(_ bytes: [UInt8],
                           _ body: (inout HelperFrameReader<HelperBytesSource>) throws(HelperProtocolError) -> T) -> HelperProtocolError? {
        var reader = reader(bytes)
        do throws(HelperProtocolError) {
            _ = try body(&reader)
            return nil
        } catch {
            return error
        }
    }

    static let failure = CountedFailure(
        user: UserName("puff-it-alice")!, before: Tally(failures: 2, lastFailure: 1_700_000_000),
        after: Tally(failures: 3, lastFailure: 1_700_000_100, lockedUntil: 1_700_000_160), countedInDirectory: true)

    // MARK: round trips

    @Test func aServiceRequestRoundTripsAndLeavesEmptyArgumentsOut() throws {
        let request = HelperServiceRequest(user: "bob", arguments: ["deny=3", "", "conf=/etc/puff/puff.conf"])
        var reader = Self.reader(request.encoded())
        let read = try HelperServiceRequest.read(from: &reader)
        #expect(read == HelperServiceRequest(user: "bob", arguments: ["deny=3", "conf=/etc/puff/puff.conf"]))
        try reader.end()
        #expect(HelperServiceRequest(user: "bob", arguments: []).encoded() == Array("3\nbob1\n0".utf8))
    }

    @Test func theOriginRoundTripsAsFourFrames() throws {
        var reader = Self.reader(HelperOrigin.encoded(["sshd", "", "192.0.2.7"]))
        #expect(try HelperOrigin.read(from: &reader) == ["sshd", "", "192.0.2.7", ""])
        try reader.end()
    }

    @Test func aCountedFailureRoundTripsInATakeBack() throws {
        let service = HelperServiceRequest(user: "Alice", arguments: ["deny=3"])
        var reader = Self.reader(HelperTakeBackRequest.encoded(service, Self.failure))
        #expect(try HelperServiceRequest.read(from: &reader) == service)
        #expect(try HelperTakeBackRequest.readFailure(from: &reader) == Self.failure)
        var local = Self.failure
        local.countedInDirectory = false
        var again = Self.reader(local.encoded())
        #expect(try CountedFailure.read(from: &again) == local)
    }

    @Test func aLoginSecretRoundTripsAndTheEndOfInputIsNoAttempt() throws {
        let secret = try Self.secret("604917")
        var reader = Self.reader(HelperLoginSecret.lengthLine(secret) + Self.bytes(secret))
        guard let read = try HelperLoginSecret.read(from: &reader) else {
            Issue.record("no secret read")
            return
        }
        #expect(Self.bytes(read) == Array("604917".utf8))
        var empty = Self.reader([UInt8]())
        let none = try HelperLoginSecret.read(from: &empty)
        let noAttempt = none == nil
        #expect(noAttempt)
    }

    @Test func enrollmentsRemovalsAndPrechecksRoundTrip() throws {
        let proof = Array("271828".utf8), type = Array("digits6".utf8), passcode = Array("604917".utf8)
        let passcodeRequest = try proof.withUnsafeBytes { p in
            try type.withUnsafeBytes { t in
                try passcode.withUnsafeBytes { n in
                    Self.framed(HelperChangeRequest.passcodeFrames(proof: p, type: t, passcode: n).map { Array($0) })
                }
            }
        }
        var reader = Self.reader(passcodeRequest)
        let enrollment = try HelperChangeRequest.readEnrollment(gesture: false, from: &reader)
        #expect(Self.bytes(enrollment.proof) == proof && Self.bytes(enrollment.secret) == passcode)
        #expect(enrollment.type == .digits6 && enrollment.picture.isEmpty)

        let define = Array("puff-gesture 1\n".utf8), confirm = Array("puff-gesture 1\n ".utf8), picture: [UInt8] = [0x89, 0x50, 0x4e, 0x47]
        let gestureRequest = try proof.withUnsafeBytes { p in
            try define.withUnsafeBytes { d in
                try confirm.withUnsafeBytes { c in
                    try picture.withUnsafeBytes { i in
                        Self.framed(HelperChangeRequest.gestureFrames(proof: p, define: d, confirm: c, picture: i).map { Array($0) })
                    }
                }
            }
        }
        var gestureReader = Self.reader(gestureRequest)
        let gesture = try HelperChangeRequest.readEnrollment(gesture: true, from: &gestureReader)
        #expect(Self.bytes(gesture.secret) == define && Self.bytes(gesture.confirm) == confirm)
        #expect(gesture.type == nil && gesture.picture == picture)

        var removal = Self.reader(Self.framed([proof]))
        #expect(Self.bytes(try HelperChangeRequest.readRemoval(from: &removal)) == proof)

        var check = Self.reader(Self.framed([Array("check".utf8), type]))
        let checked = try HelperChangeRequest.readPrecheck(from: &check)
        #expect(checked.type == .digits6)
        let noProof = checked.takeProof() == nil
        #expect(noProof)
        var prove = Self.reader(Self.framed([Array("prove".utf8), Array("-".utf8), proof]))
        let proved = try HelperChangeRequest.readPrecheck(from: &prove)
        #expect(proved.type == nil)
        guard let provedProof = proved.takeProof() else {
            Issue.record("no proof read")
            return
        }
        #expect(Self.bytes(provedProof) == proof)
    }

    @Test func aLoginsAnswersRoundTrip() throws {
        let path = "/usr/sbin/puff-check"
        let state = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .passcodeOrGesture(.digits6), failures: 2)
        var reader = Self.reader(HelperLoginAnswer.stateFrame(state))
        #expect(try HelperLoginAnswer.readState(from: &reader, helper: path) == state)
        let report = HelperReport(.failure(failures: 3, lock: .open), before: state)
        var counted: CountedFailure?
        // A service login's answer carries the failure it counted.
        let outcome = try answerOutcome(status: HelperExit.refused,
                                                    output: HelperLoginAnswer.attemptAnswer(report, counted: Self.failure),
                                                    helper: path, countedExpected: true, counted: &counted)
        #expect(outcome == .failure(failures: 3, lock: .open, detail: HelperReport.failureDetail))
        #expect(counted == Self.failure)
        // The own account's does not; one that did is malformed.
        let own = try answerOutcome(status: HelperExit.refused, output: HelperLoginAnswer.attemptAnswer(report, counted: nil),
                                                helper: path, countedExpected: false, counted: &counted)
        #expect(own == outcome && counted == nil)
        #expect(throws: StoreError.self) {
            try answerOutcome(status: HelperExit.refused, output: HelperLoginAnswer.attemptAnswer(report, counted: Self.failure),
                                          helper: path, countedExpected: false, counted: &counted)
        }
        // A failure counted beside a success is refused.
        let success = HelperReport(.success(rehashed: false), before: state)
        #expect(throws: StoreError.self) {
            try answerOutcome(status: HelperExit.success, output: HelperLoginAnswer.attemptAnswer(success, counted: Self.failure),
                                          helper: path, countedExpected: true, counted: &counted)
        }
    }

    /// Issue 33: a passcode success through the helper carries the system password the
    /// passcode released; nothing else ever does.
    @Test func onlyASuccessCarriesTheReleasedPassword() throws {
        let state = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .passcodeOrGesture(.digits6), failures: 0)
        let password = Array("Sys-Pass-4217".utf8)
        let success = HelperReport(.success(rehashed: false), before: state)
        let answer = HelperLoginAnswer.attemptAnswer(success, counted: nil, releasedCount: password.count) + password
        for countedExpected in [false, true] {
            var reader = Self.reader(answer)
            var counted: CountedFailure?
            var released: SecureBytes?
            let outcome = try HelperLoginAnswer.outcome(status: HelperExit.success, from: &reader, helper: "h",
                                                        countedExpected: countedExpected, counted: &counted, released: &released)
            #expect(outcome == .success(rehashed: false) && counted == nil)
            guard let released else {
                Issue.record("no password released")
                continue
            }
            #expect(Self.bytes(released) == password)
        }
        var counted: CountedFailure?
        // After a refusal, cut short, empty, or with bytes after it: the whole answer is refused.
        let failure = HelperReport(.failure(failures: 1, lock: .open), before: state)
        let afterFailure = HelperLoginAnswer.attemptAnswer(failure, counted: nil, releasedCount: password.count) + password
        for countedExpected in [false, true] {
            #expect(throws: StoreError.self) {
                try answerOutcome(status: HelperExit.refused, output: afterFailure, helper: "h", countedExpected: countedExpected,
                                  counted: &counted)
            }
        }
        for bad in [Array(answer.dropLast()), HelperLoginAnswer.attemptAnswer(success, counted: nil, releasedCount: 0), answer + [0x31]] {
            #expect(throws: StoreError.self) {
                try answerOutcome(status: HelperExit.success, output: bad, helper: "h", countedExpected: false, counted: &counted)
            }
        }
    }

    // MARK: refusals

    @Test("a length line that is not 1 to 10 digits and a newline is refused", arguments: [
        "x\nab", "\nab", "2ab", "-1\na", " 2\nab", "+2\nab", "12345678901\na", "2\r\nab",
    ])
    func badLengthLines(text: String) {
        #expect(Self.refusal(Array(text.utf8)) { r throws(HelperProtocolError) in try r.field("f", limit: Int.max) }
                == .badLengthLine("f"))
    }

    @Test func leadingZerosAreAcceptedAsTheyAlwaysWere() throws {
        var reader = Self.reader("0003\nabc")
        #expect(try reader.field("f", limit: 3) == Array("abc".utf8))
        try reader.end()
        // Ten digits are the most, zeros included.
        var ten = Self.reader("0000000002\nab")
        #expect(try ten.field("f", limit: 2) == Array("ab".utf8))
        #expect(Self.refusal(Array("00000000002\nab".utf8)) { r throws(HelperProtocolError) in try r.field("f", limit: 2) }
                == .badLengthLine("f"))
    }

    @Test func anEmptyFieldIsRefused() {
        #expect(Self.refusal(Array("0\n".utf8)) { r throws(HelperProtocolError) in try r.field("f", limit: 9) } == .empty("f"))
        #expect(Self.refusal(Array("00\n".utf8)) { r throws(HelperProtocolError) in try r.secret("s", limit: 9) } == .empty("s"))
    }

    @Test func aFieldOverItsBoundIsRefusedBeforeItIsRead() {
        #expect(Self.refusal(Array("7\n6049171".utf8)) { r throws(HelperProtocolError) in try r.secret("s", limit: 6) }
                == .overBound("s", limit: 6))
        // The bound is checked as the digits come, so a huge length is never allocated.
        #expect(Self.refusal(Array("9999999999\n".utf8)) { r throws(HelperProtocolError) in try r.field("f", limit: 65536) }
                == .overBound("f", limit: 65536))
        let origin = HelperFrames.encode([Array(("=" + String(repeating: "a", count: 257)).utf8)])
        #expect(Self.refusal(origin) { r throws(HelperProtocolError) in try HelperOrigin.read(from: &r) }
                == .overBound("origin item", limit: 257))
        let tooMany = HelperFrames.encode([Array("bob".utf8), Array("65".utf8)])
        #expect(Self.refusal(tooMany) { r throws(HelperProtocolError) in try HelperServiceRequest.read(from: &r) }
                == .badValue("argument count"))
        let threeDigits = HelperFrames.encode([Array("bob".utf8), Array("100".utf8)])
        #expect(Self.refusal(threeDigits) { r throws(HelperProtocolError) in try HelperServiceRequest.read(from: &r) }
                == .overBound("argument count", limit: 2))
    }

    @Test func trailingBytesAreRefused() throws {
        let secret = Array("6\n604917".utf8)
        for extra in ["x", "\n", "1\nx", "0"] {
            #expect(Self.refusal(secret + Array(extra.utf8)) { r throws(HelperProtocolError) in try HelperLoginSecret.read(from: &r) }
                    == .trailingBytes, "\(extra)")
        }
        let removal = HelperFrames.encode([Array("271828".utf8), Array("extra".utf8)])
        #expect(Self.refusal(removal) { r throws(HelperProtocolError) in try HelperChangeRequest.readRemoval(from: &r) } == .trailingBytes)
    }

    /// Every cut of every message is refused (or, at a cut between a login's state and its
    /// secret, reads as no attempt), never read as a shorter message.
    @Test func everyTruncationIsRefused() throws {
        let service = HelperServiceRequest(user: "bob", arguments: ["deny=3"])
        let takeBack = HelperTakeBackRequest.encoded(service, Self.failure)
        for cut in 0..<takeBack.count {
            let refused = Self.refusal(Array(takeBack.prefix(cut))) { r throws(HelperProtocolError) in
                _ = try HelperServiceRequest.read(from: &r)
                return try HelperTakeBackRequest.readFailure(from: &r)
            }
            guard case .truncated = refused else { Issue.record("cut \(cut): \(String(describing: refused))"); continue }
        }
        let secret = Array("6\n604917".utf8)
        for cut in 1..<secret.count {
            let refused = Self.refusal(Array(secret.prefix(cut))) { r throws(HelperProtocolError) in try HelperLoginSecret.read(from: &r) }
            #expect(refused == .truncated("secret"), "cut \(cut)")
        }
        let state = CredentialState.notEnrolled("x")
        let frame = HelperLoginAnswer.stateFrame(state)
        for cut in 0..<frame.count {
            var reader = Self.reader(Array(frame.prefix(cut)))
            #expect(throws: StoreError.self) { try HelperLoginAnswer.readState(from: &reader, helper: "h") }
        }
        let answer = HelperLoginAnswer.attemptAnswer(HelperReport(.failure(failures: 1, lock: .open), before: state), counted: Self.failure)
        var counted: CountedFailure?
        var decoded = 0
        for cut in 0..<answer.count {
            // Only the cut right after the report reads (as an answer without a counted failure).
            if (try? answerOutcome(status: HelperExit.refused, output: Array(answer.prefix(cut)), helper: "h",
                                               countedExpected: true, counted: &counted)) != nil {
                decoded += 1
                #expect(counted == nil)
            }
        }
        #expect(decoded == 1)
    }

    @Test func badValuesAreRefusedInWords() {
        let notUTF8 = HelperFrames.encode([[0xff, 0xfe], Array("0".utf8)])
        #expect(Self.refusal(notUTF8) { r throws(HelperProtocolError) in try HelperServiceRequest.read(from: &r) } == .badValue("user name"))
        for count in ["+1", "01", "-0", "x"] {
            let request = HelperFrames.encode([Array("bob".utf8), Array(count.utf8), Array("deny=0".utf8)])
            #expect(Self.refusal(request) { r throws(HelperProtocolError) in try HelperServiceRequest.read(from: &r) }
                    == .badValue("argument count"), "\(count)")
        }
        let unmarked = HelperFrames.encode([Array("sshd".utf8)] + Array(repeating: Array("=".utf8), count: 3))
        #expect(Self.refusal(unmarked) { r throws(HelperProtocolError) in try HelperOrigin.read(from: &r) } == .badValue("origin item"))
        let place = HelperFrames.encode([Array("bob".utf8), Self.failure.before.encoded(), Self.failure.after.encoded(), Array("remote".utf8)])
        #expect(Self.refusal(place) { r throws(HelperProtocolError) in try HelperTakeBackRequest.readFailure(from: &r) } == .badValue("place"))
        let mode = HelperFrames.encode([Array("maybe".utf8), Array("-".utf8)])
        #expect(Self.refusal(mode) { r throws(HelperProtocolError) in try HelperChangeRequest.readPrecheck(from: &r) } == .badValue("mode"))
        let type = HelperFrames.encode([Array("1".utf8), Array("digits5".utf8), Array("1".utf8)])
        #expect(Self.refusal(type) { r throws(HelperProtocolError) in try HelperChangeRequest.readEnrollment(gesture: false, from: &r) }
                == .badValue("passcode type"))
        #expect(HelperProtocolError.overBound("secret", limit: 65536).description == "the secret is longer than 65536 bytes")
    }
}
