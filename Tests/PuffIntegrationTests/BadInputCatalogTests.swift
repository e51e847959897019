import Foundation
import Testing

// The bad-input catalog (docs/dev/bad-input-catalog.md): every hostile or broken input the module can
// meet, each driven through real libpam with the harness. Each case checks the PAM result (never
// success or ignore for an error), the log line (captured on /dev/log), that no secret or file
// content leaks, and that nothing is lost: the store is unchanged, the counter is what it should
// be, and the right passcode still works once the damage is undone.
//
// The suite is nested in LoggingTests so that it shares its `.serialized` trait: only one test
// at a time may bind /dev/log.

/// One catalog case's world: a Fixture whose PAM service has a unique name, so its log lines
/// can be told from those of tests running in parallel, and the syslog capture.
final class CatalogBench {
    let fixture: Fixture
    let service: String
    let capture: SyslogCapture
    var arguments: String

    static let alicePasscode = "604917"
    static let bobPasscode = "271828"

    init(arguments: String = "deny=100", config: String = "kdf_ops = 1\nkdf_mem_kib = 8\n") throws {
        capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        fixture = try Fixture(config: config, moduleArguments: arguments)
        service = "puff-cat-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        self.arguments = arguments
        try fixture.service(arguments, name: service)
    }

    /// Rewrites the service with other module arguments.
    func setArguments(_ arguments: String) throws {
        self.arguments = arguments
        try fixture.service(arguments, name: service)
    }

    /// What one `pam_authenticate` showed: the harness output and this service's log lines.
    struct Attempt: CustomStringConvertible {
        var run: Run
        var log: [String]
        var status: Int32 { run.status }
        var prompts: Int { run.lines.filter { $0.hasPrefix("PROMPT echo-off") }.count }
        var description: String { "status \(run.status)\n\(run.output)\(run.errors)\nlog:\n" + log.joined(separator: "\n") }
        func logs(_ fragment: String) -> Bool { log.contains { $0.contains(fragment) } }
    }

    /// Runs the harness (bounded to 30 s: a case that hangs fails instead of stalling CI).
    func attempt(_ user: String, replies: [String] = [], extra: [String] = []) throws -> Attempt {
        try attempt(userArguments: ["--user", user], replies: replies, extra: extra)
    }

    func attempt(userArguments: [String], replies: [String] = [], extra: [String] = []) throws -> Attempt {
        var arguments = ["30", Artefacts.harness, "--confdir", fixture.pamDirectory, "--service", service] + userArguments
        for reply in replies { arguments += ["--reply", reply] }
        let result = try run("/usr/bin/timeout", arguments + extra)
        let tag = "(\(service):auth)"
        return Attempt(run: result, log: capture.drain().filter { $0.contains(tag) })
    }

    /// Alice (and Bob) enrolled with a passcode.
    @discardableResult
    func enrollAlice(andBob: Bool = false) throws -> String {
        let alice = try TestUsers.ensure("puff-it-alice")
        #expect(try fixture.enroll(alice, Self.alicePasscode).status == 0)
        if andBob {
            #expect(try fixture.enroll(try TestUsers.ensure("puff-it-bob"), Self.bobPasscode).status == 0)
        }
        return alice
    }

    var recordDirectory: String { fixture.etc + "/users" }
    func record(_ user: String) -> String { recordDirectory + "/" + user }

    /// Every file and directory under the record directory: type, owner, mode, links, content.
    /// (Counters are compared by value, with `failures`: a success rewrites an empty one.)
    func snapshot() -> [String: String] {
        var result: [String: String] = [:]
        for base in [fixture.etc] {
            var info = stat()
            guard lstat(base, &info) == 0 else { continue }
            result[base] = "\(info.st_mode) \(info.st_uid)"
            for relative in (FileManager.default.subpaths(atPath: base) ?? []) {
                let path = base + "/" + relative
                guard lstat(path, &info) == 0 else { continue }
                var entry = "\(info.st_mode) \(info.st_uid) \(info.st_nlink)"
                if info.st_mode & S_IFMT == S_IFREG, let data = FileManager.default.contents(atPath: path) {
                    entry += " " + data.base64EncodedString()
                } else if info.st_mode & S_IFMT == S_IFLNK,
                          let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
                    entry += " -> " + target
                }
                result[path] = entry
            }
        }
        return result
    }

    /// Strings that must never appear in what the user sees or in the log: the passcodes, the
    /// stored hashes, the host key in raw, hex and base64 forms, and the lines of /etc/shadow.
    func secrets() -> [String] {
        var secrets = [Self.alicePasscode, Self.bobPasscode]
        for user in ["puff-it-alice", "puff-it-bob"] {
            if let text = try? String(contentsOfFile: record(user), encoding: .utf8) {
                secrets += text.split(separator: "\n").filter { $0.hasPrefix("passcode-hash ") || $0.hasPrefix("gesture-template ") }
                    .map { String($0.split(separator: " ")[1]) }
            }
        }
        if let key = FileManager.default.contents(atPath: fixture.etc + "/host.key") {
            secrets.append(key.map { String(format: "%02x", $0) }.joined())
            secrets.append(key.base64EncodedString())
            secrets.append(String(decoding: key.prefix(8), as: UTF8.self))
        }
        secrets += Self.shadowSecrets
        return secrets.filter { $0.count >= 6 }
    }

    /// What /etc/shadow would show if it leaked: its first lines whole, and every password
    /// field that holds a hash.
    static let shadowSecrets: [String] = {
        guard let text = try? String(contentsOfFile: "/etc/shadow", encoding: .utf8) else { return [] }
        let lines = text.split(separator: "\n")
        return lines.prefix(3).map(String.init) + lines.compactMap { line in
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count > 1, fields[1].count >= 6 else { return nil }
            return String(fields[1])
        }
    }()

    /// Nothing secret in the attempt's output or log.
    func expectNoLeak(_ attempt: Attempt, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let everything = attempt.run.output + attempt.run.errors + attempt.log.joined(separator: "\n")
        for secret in secrets {
            #expect(!everything.contains(secret), "leaked \(secret.prefix(12))…", sourceLocation: sourceLocation)
        }
    }
}

/// Hex for the harness's `--user-hex` and `--reply-hex`.
func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

extension LoggingTests {
    /// Conversation replies and user names.
    @Suite struct BadInputCatalog {
        let alicePasscode = CatalogBench.alicePasscode

        // MARK: conversation replies

        /// A refused reply that tests no secret: PAM_AUTH_ERR, not counted, the record unchanged,
        /// and the right passcode works next.
        func expectUncounted(_ bench: CatalogBench, _ user: String, _ attempt: CatalogBench.Attempt,
                             code: Int32 = PAMCode.authError, log: String, before: [String: String],
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(attempt.status == code, "\(attempt)", sourceLocation: sourceLocation)
            #expect(attempt.logs(log), "\(attempt)", sourceLocation: sourceLocation)
            bench.expectNoLeak(attempt, bench.secrets(), sourceLocation: sourceLocation)
            #expect(try bench.fixture.failures(user) == 0, sourceLocation: sourceLocation)
            #expect(bench.snapshot() == before, "the store changed", sourceLocation: sourceLocation)
            #expect(try bench.attempt(user, replies: [alicePasscode]).status == PAMCode.success, sourceLocation: sourceLocation)
        }

        /// A wrong secret: PAM_AUTH_ERR, counted once, the record itself unchanged.
        func expectCounted(_ bench: CatalogBench, _ user: String, _ attempt: CatalogBench.Attempt,
                           log: String, record before: String?, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(attempt.status == PAMCode.authError, "\(attempt)", sourceLocation: sourceLocation)
            #expect(attempt.prompts == 1, sourceLocation: sourceLocation)
            #expect(attempt.logs(log), "\(attempt)", sourceLocation: sourceLocation)
            bench.expectNoLeak(attempt, bench.secrets(), sourceLocation: sourceLocation)
            #expect(try bench.fixture.failures(user) == 1, sourceLocation: sourceLocation)
            #expect((try? String(contentsOfFile: bench.record(user), encoding: .utf8)) == before, sourceLocation: sourceLocation)
        }

        @Test func emptyReply() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, replies: [""])
            try expectUncounted(bench, user, attempt, log: "user \(user): empty reply; not counted", before: before)
        }

        @Test func nullReply() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--null-reply"])
            try expectUncounted(bench, user, attempt, log: "user \(user): empty reply; not counted", before: before)
        }

        @Test func nullResponseText() throws {
            // A response array whose `resp` is NULL (the application answered nothing).
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--null-resp"])
            try expectUncounted(bench, user, attempt, log: "user \(user): empty reply; not counted", before: before)
        }

        @Test func conversationAgain() throws {
            // A non-blocking application's PAM_CONV_AGAIN ends the attempt as a conversation error.
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--conv-again"])
            try expectUncounted(bench, user, attempt, code: PAMCode.conversationError,
                                log: "user \(user): conversation failed (PAM code 30); not counted", before: before)
        }

        @Test func conversationError() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--conv-error"])
            try expectUncounted(bench, user, attempt, code: PAMCode.conversationError,
                                log: "user \(user): conversation failed (PAM code 19); not counted", before: before)
        }

        @Test func oneMebibyteReply() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            // The right passcode followed by 1 MiB of digits: never truncated into a match.
            let file = bench.fixture.root + "/huge-reply"
            try Data((alicePasscode + String(repeating: "7", count: 1 << 20)).utf8).write(to: URL(fileURLWithPath: file))
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--reply-file", file])
            try expectUncounted(bench, user, attempt, log: "user \(user): reply longer than 65536 bytes; not counted", before: before)
        }

        @Test func replyAtTheLengthLimit() throws {
            // 65,536 bytes is still read: a (wrong) passcode, counted, and nothing breaks.
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            let file = bench.fixture.root + "/limit-reply"
            try Data((alicePasscode + String(repeating: "7", count: 65_536 - alicePasscode.count)).utf8)
                .write(to: URL(fileURLWithPath: file))
            let attempt = try bench.attempt(user, extra: ["--reply-file", file])
            try expectCounted(bench, user, attempt, log: "user \(user): authentication failure (1 in a row)", record: record)
            #expect(try bench.attempt(user, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func gestureCutShortByANUL() throws {
            // The genuine gesture with a NUL in the middle: the module sees the first half only.
            let bench = try CatalogBench()
            let user = try TestUsers.ensure("puff-it-alice")
            try GestureLoginTests().enrolled(bench.fixture, user)
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            var bytes = Array(GestureLoginTests.wire(GestureLoginTests.genuine).utf8)
            bytes.insert(0, at: bytes.count / 2)
            let attempt = try bench.attempt(user, extra: ["--reply-hex", hex(bytes)])
            try expectCounted(bench, user, attempt, log: "authentication failure (1 in a row); gesture", record: record)
            #expect(try bench.attempt(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)]).status == PAMCode.success)
        }

        @Test func embeddedNULEndsTheReply() throws {
            // A C string ends at its first NUL, for every PAM module: what follows is never seen.
            // A NUL first is an empty reply; the right passcode cut short by a NUL is a wrong one.
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let before = bench.snapshot()
            let leading = try bench.attempt(user, extra: ["--reply-hex", hex([0] + Array(alicePasscode.utf8))])
            try expectUncounted(bench, user, leading, log: "user \(user): empty reply; not counted", before: before)
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            let cut = try bench.attempt(user, extra: ["--reply-hex", hex(Array("6049".utf8) + [0] + Array("17".utf8))])
            try expectCounted(bench, user, cut, log: "user \(user): authentication failure (1 in a row)", record: record)
        }

        @Test func invalidUTF8Reply() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            // Lone continuation bytes, an overlong NUL and a truncated sequence around the digits.
            let bytes: [UInt8] = [0x80, 0xc0, 0x80] + Array(alicePasscode.utf8) + [0xff, 0xfe, 0xe2, 0x82]
            let attempt = try bench.attempt(user, extra: ["--reply-hex", hex(bytes)])
            try expectCounted(bench, user, attempt, log: "user \(user): authentication failure (1 in a row)", record: record)
            #expect(try bench.attempt(user, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func passcodeOfTheWrongType() throws {
            // Enrolled as 6 digits; letters and a 4-digit prefix of the right one are plain wrong passcodes.
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            let letters = try bench.attempt(user, replies: ["abcdefgh"])
            try expectCounted(bench, user, letters, log: "user \(user): authentication failure (1 in a row)", record: record)
            let short = try bench.attempt(user, replies: ["6049"])
            #expect(short.status == PAMCode.authError)
            #expect(short.logs("user \(user): authentication failure (2 in a row)"), "\(short)")
            #expect(try bench.fixture.failures(user) == 2)
            #expect(try bench.attempt(user, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func gestureForAUserWithoutOne() throws {
            let bench = try CatalogBench()
            let user = try bench.enrollAlice()
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            let attempt = try bench.attempt(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
            try expectCounted(bench, user, attempt,
                              log: "authentication failure (1 in a row); a gesture was sent but none is enrolled", record: record)
            #expect(try bench.attempt(user, replies: [alicePasscode]).status == PAMCode.success)
        }

        /// One way a serialized gesture breaks docs/dev/gesture-format.md, and the reason logged.
        struct Violation: Sendable, CustomTestStringConvertible {
            var name: String
            var wire: String
            var reason: String
            var testDescription: String { name }
        }

        static let size = "puff-gesture:1:400x300:"
        static let violations: [Violation] = [
            Violation(name: "non-printable byte (tab)", wire: size + "t 300,80\tt", reason: "nonPrintableByte"),
            Violation(name: "trailing newline", wire: size + "t 300,80\n", reason: "nonPrintableByte"),
            Violation(name: "unsupported version", wire: "puff-gesture:3:400x300:t 300,80", reason: "unsupportedVersion"),
            Violation(name: "version 2 without its cell", wire: "puff-gesture:2:400x300:t 300,80", reason: "malformedNumber"),
            Violation(name: "version 2 with an empty cell", wire: "puff-gesture:2:400x300:0x5:t 300,80", reason: "badResolution"),
            Violation(name: "missing size", wire: "puff-gesture:1::t 300,80", reason: "badSize"),
            Violation(name: "zero size", wire: "puff-gesture:1:0x0:t 0,0", reason: "badSize"),
            Violation(name: "no parts", wire: size, reason: "noParts"),
            Violation(name: "17 parts", wire: size + Array(repeating: "t 300,80", count: 17).joined(separator: ";"),
                      reason: "tooManyParts"),
            Violation(name: "4097 points in a part",
                      wire: size + "p " + (0..<4097).map { "\($0 % 400),\($0 % 300)" }.joined(separator: " "),
                      reason: "tooManyPoints"),
            Violation(name: "empty part", wire: size + "t 300,80;;t 300,80", reason: "emptyPart"),
            Violation(name: "trailing semicolon", wire: size + "t 300,80;", reason: "emptyPart"),
            Violation(name: "unknown kind", wire: size + "c 300,80", reason: "unknownKind"),
            Violation(name: "double space", wire: size + "p 40,260  220,90", reason: "misplacedSpace"),
            Violation(name: "negative number", wire: size + "t -1,80", reason: "malformedNumber"),
            Violation(name: "exponent", wire: size + "t 3e2,80", reason: "malformedNumber"),
            Violation(name: "hex number", wire: size + "t 0x12c,80", reason: "malformedNumber"),
            Violation(name: "number longer than 12 characters", wire: size + "t 300.000000000,80", reason: "numberTooLong"),
            Violation(name: "point without comma", wire: size + "t 30080", reason: "malformedPoint"),
            Violation(name: "trailing garbage in a point", wire: size + "t 300,80,1", reason: "trailingGarbage"),
            Violation(name: "tap with two points", wire: size + "t 300,80 301,81", reason: "wrongTapPointCount"),
            Violation(name: "path with one point", wire: size + "p 40,260", reason: "pathTooShort"),
            Violation(name: "coordinate outside the picture", wire: size + "t 401,80", reason: "coordinateOutsidePicture"),
            Violation(name: "another picture size", wire: "puff-gesture:1:800x600:t 600,160", reason: "pictureSizeMismatch"),
        ]

        @Test(arguments: violations)
        func gestureFormatViolation(_ violation: Violation) throws {
            let bench = try CatalogBench()
            let user = try TestUsers.ensure("puff-it-alice")
            try GestureLoginTests().enrolled(bench.fixture, user)
            let record = try String(contentsOfFile: bench.record(user), encoding: .utf8)
            let file = bench.fixture.root + "/gesture"
            try Data(violation.wire.utf8).write(to: URL(fileURLWithPath: file))
            let attempt = try bench.attempt(user, extra: ["--reply-file", file])
            try expectCounted(bench, user, attempt,
                              log: "authentication failure (1 in a row); gesture rejected: \(violation.reason)", record: record)
            let genuine = GestureLoginTests.wire(GestureLoginTests.genuine)
            #expect(try bench.attempt(user, replies: [genuine]).status == PAMCode.success)
        }

        @Test func gestureLongerThanTheWireLimit() throws {
            // 65,537 bytes: the module refuses the reply before parsing (docs/dev/gesture-format.md
            // says such a gesture counts; it is refused without counting, like any oversize reply).
            let bench = try CatalogBench()
            let user = try TestUsers.ensure("puff-it-alice")
            try GestureLoginTests().enrolled(bench.fixture, user)
            var wire = Self.size + "p"
            while wire.utf8.count < 65_537 - 8 { wire += " 300,80" }
            wire += String(repeating: "0", count: 65_537 - wire.utf8.count)
            #expect(wire.utf8.count == 65_537)
            let file = bench.fixture.root + "/gesture"
            try Data(wire.utf8).write(to: URL(fileURLWithPath: file))
            let before = bench.snapshot()
            let attempt = try bench.attempt(user, extra: ["--reply-file", file])
            #expect(attempt.status == PAMCode.authError, "\(attempt)")
            #expect(attempt.logs("user \(user): reply longer than 65536 bytes; not counted"), "\(attempt)")
            #expect(try bench.fixture.failures(user) == 0)
            #expect(bench.snapshot() == before)
            let genuine = GestureLoginTests.wire(GestureLoginTests.genuine)
            #expect(try bench.attempt(user, replies: [genuine]).status == PAMCode.success)
        }

        // MARK: user names

        /// A user name that names no record: the same single prompt as an enrolled user's wrong
        /// passcode, PAM_AUTH_ERR, a log line with the name escaped, and nothing created anywhere.
        func expectUnknownUser(userArguments: [String], logged: String,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            let reference = try bench.attempt(alice, replies: ["111333"])
            _ = try bench.attempt(alice, replies: [alicePasscode])
            let before = bench.snapshot()
            let attempt = try bench.attempt(userArguments: userArguments, replies: [alicePasscode])
            #expect(attempt.status == PAMCode.authError, "\(attempt)", sourceLocation: sourceLocation)
            #expect(attempt.run.lines == reference.run.lines, "\(attempt)", sourceLocation: sourceLocation)
            #expect(attempt.logs("user \(logged): authentication failure"), "\(attempt)", sourceLocation: sourceLocation)
            bench.expectNoLeak(attempt, bench.secrets(), sourceLocation: sourceLocation)
            #expect(bench.snapshot() == before, "the store changed", sourceLocation: sourceLocation)
            #expect(try bench.fixture.failures(alice) == 0, sourceLocation: sourceLocation)
        }

        @Test func emptyUserName() throws {
            try expectUnknownUser(userArguments: ["--user", ""], logged: "")
        }

        @Test func dotDotUserName() throws {
            try expectUnknownUser(userArguments: ["--user", "../x"], logged: "../x")
        }

        @Test func slashInUserName() throws {
            // "puff-it-alice/.." would reach the users directory itself if it were used as a path.
            try expectUnknownUser(userArguments: ["--user", "a/b"], logged: "a/b")
            try expectUnknownUser(userArguments: ["--user", "puff-it-alice/.."], logged: "puff-it-alice/..")
        }

        @Test func newlineInUserName() throws {
            try expectUnknownUser(userArguments: ["--user", "puff-it-alice\nx"], logged: "puff-it-alice\\x0ax")
        }

        @Test func sixtyFourKiBUserName() throws {
            // Longer than the module reads (4 KiB): refused as an invalid name, not echoed in full.
            try expectUnknownUser(userArguments: ["--user", String(repeating: "a", count: 64 * 1024)], logged: "(invalid)")
        }

        @Test func invalidUTF8UserName() throws {
            // "puff-it-alice" followed by a lone continuation byte must not become Alice.
            try expectUnknownUser(userArguments: ["--user-hex", hex(Array("puff-it-alice".utf8) + [0x80])], logged: "(invalid)")
        }

        @Test func nonexistentUserName() throws {
            try expectUnknownUser(userArguments: ["--user", "puff-no-such-user"], logged: "puff-no-such-user")
        }
    }
}
