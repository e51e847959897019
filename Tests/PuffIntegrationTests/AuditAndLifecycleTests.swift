import Foundation
import Testing

/// Failure lines fail2ban can read, libaudit records for locks, and the lifecycle of an
/// enrollment through `puff-enroll` (unknown accounts, removal).
@Suite(.serialized)
struct AuditAndLifecycleTests {
    static let right = "604917"

    /// The failure lines of one wrong attempt from `rhost` through the service `puff-f2b` (its
    /// own name: other suites log to the same capture at the same time).
    static func failureLines(_ capture: SyslogCapture, _ fixture: Fixture, _ user: String, rhost: String) throws -> [String] {
        _ = capture.drain()
        try fixture.authenticate(user, replies: ["111333"], extra: ["--rhost", rhost, "--tty", "ssh", "--ruser", ""],
                                 service: "puff-f2b")
        return capture.drain().filter { $0.contains("pam_puff(puff-f2b:auth): authentication failure; logname=") }
    }

    @Test func failureLinesHavePamUnixShapeAndFail2banMatchesThem() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=0")
        try fixture.service("deny=0", name: "puff-f2b")
        try fixture.enroll(user, Self.right)
        let lines = try Self.failureLines(capture, fixture, user, rhost: "203.0.113.7")
        #expect(lines.count == 1, "\(lines)")
        let line = try #require(lines.first)
        #expect(line.contains("pam_puff(puff-f2b:auth): authentication failure; logname="), "\(line)")
        #expect(line.hasSuffix(" tty=ssh ruser= rhost=203.0.113.7 user=\(user)"), "\(line)")
        // A user without an account gets the same line (fail2ban bans guessers of names too).
        _ = capture.drain()
        try fixture.authenticate("puff-no-such-user", replies: ["111333"], extra: ["--rhost", "203.0.113.8"], service: "puff-f2b")
        #expect(capture.drain().contains { $0.hasSuffix("rhost=203.0.113.8 user=puff-no-such-user") })

        // A remote side that puts spaces in its host name cannot add a field.
        let forged = try Self.failureLines(capture, fixture, user, rhost: "198.51.100.1 user=root")
        #expect(forged.first?.hasSuffix("rhost=198.51.100.1\\x20user\\x3droot user=\(user)") == true, "\(forged)")

        // fail2ban-regex, when fail2ban is installed (make install-packages PACKAGES=fail2ban).
        let regex = "/usr/bin/fail2ban-regex"
        guard FileManager.default.isExecutableFile(atPath: regex) else { return }
        // The datagram is "<pri>Mmm dd hh:mm:ss tag[pid]: text"; a log file has the host name after the time.
        let datagram = line.drop { $0 != ">" }.dropFirst()
        let logLine = String(datagram.prefix(15)) + " testhost " + String(datagram.dropFirst(16))
        let log = fixture.root + "/auth.log"
        try fixture.write(log, logLine + "\n", mode: 0o600)
        func matches(_ filter: String) throws -> Int? {
            let result = try run(regex, [log, filter])
            guard let found = result.lines.first(where: { $0.hasPrefix("Failregex:") }) else { return nil }
            return Int(found.split(separator: " ")[1])
        }
        #expect(try matches("pam-generic[__pam_auth=\"pam_[a-z]+\"]") == 1)
        // The shipped filter, installed beside fail2ban's own as it would be in /etc/fail2ban/filter.d.
        let filters = fixture.root + "/filter.d"
        try FileManager.default.createDirectory(atPath: filters, withIntermediateDirectories: true)
        for stock in ["pam-generic.conf", "common.conf"] {
            try FileManager.default.copyItem(atPath: "/etc/fail2ban/filter.d/" + stock, toPath: filters + "/" + stock)
        }
        try FileManager.default.copyItem(atPath: Artefacts.repository.appendingPathComponent("docs/fail2ban/filter.d/puff.conf").path,
                                         toPath: filters + "/puff.conf")
        #expect(try matches(filters + "/puff.conf") == 1)
        // The stock filter unwidened reads pam_unix only.
        #expect(try matches("pam-generic") == 0)
    }

    /// The payloads of the audit records a process sent (netlink sendto, seen by strace).
    static func auditRecords(_ traceFile: String) throws -> [(type: Int, text: String)] {
        let trace = try String(contentsOfFile: traceFile, encoding: .utf8)
        var records: [(Int, String)] = []
        for line in trace.split(separator: "\n") where line.contains("AF_NETLINK") && line.contains("nlmsg_type=0x") {
            guard let typeStart = line.range(of: "nlmsg_type=0x"),
                  let type = Int(line[typeStart.upperBound...].prefix { $0.isHexDigit }, radix: 16),
                  let open = line.range(of: ", \""), let close = line.range(of: "\"]", range: open.upperBound..<line.endIndex) else { continue }
            let hex = line[open.upperBound..<close.lowerBound].split(separator: "\\").compactMap { UInt8($0.dropFirst(), radix: 16) }
            records.append((type, String(decoding: hex.filter { $0 != 0 }, as: UTF8.self)))
        }
        return records
    }

    @Test func lockAndRefusalWhileLockedAreAudited() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let uid = try #require(getpwnam(user)).pointee.pw_uid
        let fixture = try Fixture(moduleArguments: "deny=1 unlock_time=0")
        try fixture.enroll(user, Self.right)
        let trace = fixture.root + "/trace"
        let strace = "/usr/bin/strace"
        func traced(_ arguments: [String]) throws -> [(type: Int, text: String)] {
            _ = try run(strace, ["-f", "-qq", "-e", "trace=sendto", "-s", "600", "-o", trace] + arguments)
            return try Self.auditRecords(trace)
        }
        let harness = [Artefacts.harness, "--confdir", fixture.pamDirectory, "--service", "puff-test", "--user", user,
                       "--rhost", "203.0.113.9"]
        let locking = try traced(harness + ["--reply", "111333"])
        #expect(locking.contains { $0.type == 2100 && $0.text.contains("op=pam_puff suid=\(uid) ") && $0.text.contains("hostname=203.0.113.9") },
                "\(locking)")
        #expect(locking.contains { $0.type == 2207 && $0.text.contains("op=pam_puff suid=\(uid) ") }, "\(locking)")
        let refused = try traced(harness + ["--reply", Self.right])
        #expect(refused.contains { $0.type == 2100 && $0.text.contains("res=failed") }, "\(refused)")
        let reset = try traced([Artefacts.enroll, "reset", "--user", user] + fixture.storeArguments)
        #expect(reset.contains { $0.type == 1102 && $0.text.contains("op=puff-reset") && $0.text.contains("id=\(uid)") }, "\(reset)")
        let lock = try traced([Artefacts.enroll, "lock", "--user", user] + fixture.storeArguments)
        #expect(lock.contains { $0.type == 1102 && $0.text.contains("op=puff-lock") }, "\(lock)")
    }

    @Test func unknownAccountsExit4AndCreateNothing() throws {
        let fixture = try Fixture()
        for command in ["lock", "reset", "status"] {
            let result = try run(Artefacts.enroll, [command, "--user", "puff-no-such-user"] + fixture.storeArguments)
            #expect(result.status == 4, "\(command): \(result.status) \(result.errors)")
            #expect(result.errors.contains("no such user"), "\(command): \(result.errors)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.state) == [])
    }

    @Test func removeTakesRecordPictureAndCounter() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture()
        try fixture.enroll(user, Self.right)
        try GestureLoginTests().enrolled(fixture, user)
        try fixture.authenticate(user, replies: ["111333"])
        for path in ["/etc/users/", "/etc/pictures/", "/state/"] {
            #expect(FileManager.default.fileExists(atPath: fixture.root + path + user), "\(path)")
        }
        let removed = try run(Artefacts.enroll, ["remove", "--user", user] + fixture.storeArguments)
        #expect(removed.status == 0, "\(removed.errors)")
        for path in ["/etc/users/", "/etc/pictures/", "/state/"] {
            #expect(!FileManager.default.fileExists(atPath: fixture.root + path + user), "\(path) left")
        }
        // Nothing left to remove: exit 4.
        #expect(try run(Artefacts.enroll, ["remove", "--user", user] + fixture.storeArguments).status == 4)
    }

    @Test func anOrdinaryUserRemovesTheirOwnEnrollmentAfterTheProof() throws {
        let stage = try UnprivilegedTests.Stage()
        let alice = try TestUsers.ensure("puff-it-alice")
        #expect(try stage.fixture.enroll(alice, Self.right).status == 0)
        let remove = [stage.enroll, "remove", "--stdin", "--helper", stage.helper]
        let record = stage.fixture.etc + "/users/" + alice, counter = stage.fixture.state + "/" + alice
        // A wrong proof removes nothing and counts.
        let wrong = try stage.runAs(alice, remove, input: "111333\n")
        #expect(wrong.status == 3, "\(wrong.errors)")
        #expect(FileManager.default.fileExists(atPath: record))
        #expect(try stage.fixture.failures(alice) == 1)
        let removed = try stage.runAs(alice, remove, input: Self.right + "\n")
        #expect(removed.status == 0, "\(removed.output) \(removed.errors)")
        #expect(!FileManager.default.fileExists(atPath: record))
        #expect(!FileManager.default.fileExists(atPath: counter))
        let again = try stage.runAs(alice, remove, input: Self.right + "\n")
        #expect(again.status == 4, "\(again.errors)")
    }

    @Test func statusShowsTheLatestFailuresLikeFaillock() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=0")
        try fixture.enroll(user, Self.right)
        try fixture.authenticate(user, replies: ["111333"], extra: ["--rhost", "203.0.113.7", "--tty", "ssh", "--ruser", "mallory"])
        try fixture.authenticate(user, replies: ["111334"], extra: ["--tty", "/dev/pts/3"])
        // A remote host with a quote and a backslash stays one field and valid JSON.
        try fixture.authenticate(user, replies: ["111335"], extra: ["--rhost", "evil\"host\\ x"])
        let status = try fixture.status(user)
        let recent = try #require(status["recent_failures"] as? [[String: Any]], "\(status)")
        #expect(recent.count == 3)
        #expect(recent.first?["service"] as? String == "puff-test")
        #expect(recent.first?["rhost"] as? String == "203.0.113.7")
        #expect(recent.first?["tty"] as? String == "ssh")
        #expect(recent.first?["ruser"] as? String == "mallory")
        #expect(recent[1]["tty"] as? String == "/dev/pts/3" && recent[1]["rhost"] as? String == "")
        #expect(recent[2]["rhost"] as? String == "evil\"host\\x5c\\x20x", "\(recent[2])")
        let text = try run(Artefacts.enroll, ["status", "--user", user] + fixture.storeArguments)
        #expect(text.output.contains("Latest failures"), "\(text.output)")
        #expect(text.lines.contains { $0.contains("puff-test") && $0.contains("203.0.113.7") && $0.contains("mallory") }, "\(text.output)")
        // The passcode clears the counter; the history stays (as faillock's does) until removal.
        try fixture.authenticate(user, replies: [Self.right])
        #expect(try fixture.failures(user) == 0)
        #expect(try run(Artefacts.enroll, ["remove", "--user", user] + fixture.storeArguments).status == 0)
        #expect(!FileManager.default.fileExists(atPath: fixture.state + "/.history/" + user))
    }

    @Test func statusColumnsStayAlignedWithALock() throws {
        let alice = try TestUsers.ensure("puff-it-alice"), bob = try TestUsers.ensure("puff-it-bob")
        let fixture = try Fixture(moduleArguments: "deny=1")
        try fixture.enroll(alice, Self.right)
        try fixture.enroll(bob, Self.right)
        try fixture.authenticate(alice, replies: ["111333"])
        let status = try run(Artefacts.enroll, ["status"] + fixture.storeArguments)
        // The table, then the line naming the key's mode (tpm or file).
        #expect(status.lines.last == "Key protection: file (\(fixture.etc)/host.key).", "\(status.output)")
        let lines = Array(status.lines.dropLast())
        #expect(lines.count == 3, "\(status.output)")
        // Every column starts at the same offset on every line.
        let header = try #require(lines.first)
        for column in ["UID", "PASSCODE", "GESTURE", "FAILURES", "LOCK", "ACCEPTS"] {
            let offset = try #require(header.range(of: column)).lowerBound.utf16Offset(in: header)
            for line in lines.dropFirst() {
                let chars = Array(line)
                #expect(offset < chars.count && chars[offset] != " " && chars[offset - 1] == " ", "\(column) in \(line)")
            }
        }
    }
}
