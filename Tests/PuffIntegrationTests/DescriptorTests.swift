import Foundation
import Testing

/// The module's file descriptors: after `pam_authenticate` returns (and after `pam_end`) the
/// host process has no descriptor the module opened, and none that an exec would inherit.
/// The harness compares /proc/self/fd before `pam_start` with the list after the operation
/// (`--fd-check`). The only descriptor the process may gain is glibc's syslog socket when a
/// log daemon listens on /dev/log: it belongs to libc, is opened close-on-exec, and stays
/// open by design until `closelog`.
@Suite(.serialized)
struct DescriptorTests {
    struct Report {
        var lines: [String]
        var result: Int32
    }

    /// Runs one attempt with `--fd-check` and checks both snapshots.
    func check(_ fixture: Fixture, _ user: String, replies: [String], extra: [String] = [],
               expect code: Int32, _ scenario: String) throws {
        let run = try fixture.authenticate(user, replies: replies, extra: ["--fd-check"] + extra)
        #expect(run.status == code, "\(scenario): \(run.output) \(run.errors)")
        for stage in ["after-op", "after-end"] {
            let summary = run.lines.filter { $0.hasPrefix("FDS \(stage) ") }
            #expect(summary.count == 1, "\(scenario): no \(stage) summary in \(run.output)")
            #expect(summary.first?.hasSuffix("inheritable=0") == true, "\(scenario): \(run.output)")
            let fresh = run.lines.filter { $0.hasPrefix("FD \(stage) ") }
            let notSyslog = fresh.filter { !($0.contains(" cloexec socket:[")) }
            #expect(notSyslog.isEmpty, "\(scenario): descriptors left open \(stage): \(notSyslog)")
            #expect(fresh.count <= 1, "\(scenario): more than the syslog socket \(stage): \(fresh)")
        }
    }

    @Test("passcode right, wrong, locked; no record; no account; empty reply; conversation error")
    func passcodePaths() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let unenrolled = try TestUsers.ensure("puff-it-bob")
        let fixture = try Fixture(moduleArguments: "deny=2 unlock_time=10m")
        try fixture.enroll(user, "604917")
        try check(fixture, user, replies: ["604917"], expect: PAMCode.success, "right passcode")
        try check(fixture, user, replies: ["111111"], expect: PAMCode.authError, "wrong passcode")
        try check(fixture, user, replies: ["111111"], expect: PAMCode.authError, "wrong passcode, now locked")
        #expect(try fixture.failures(user) == 2)
        try check(fixture, user, replies: ["604917"], expect: PAMCode.authError, "locked")
        try check(fixture, unenrolled, replies: ["604917"], expect: PAMCode.authError, "no record")
        try check(fixture, "puff-no-such-user", replies: ["604917"], expect: PAMCode.authError, "no account")
        try check(fixture, unenrolled, replies: [""], expect: PAMCode.authError, "empty reply")
        // A discreet service prompts a locked account like any other, so the conversation error shows.
        try check(fixture, user, replies: [], extra: ["--conv-error"], expect: PAMCode.conversationError, "conversation error while locked")
        let other = try Fixture()
        try other.enroll(user, "604917")
        try check(other, user, replies: [], extra: ["--conv-error"], expect: PAMCode.conversationError, "conversation error")
    }

    @Test("gesture right and wrong, gesture for a user with only a passcode")
    func gesturePaths() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let passcodeOnly = try TestUsers.ensure("puff-it-bob")
        let fixture = try Fixture(moduleArguments: "deny=100")
        let genuine = GestureLoginTests.wire(GestureLoginTests.genuine)
        let enrolled = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", GestureLoginTests.picture, "--stdin"]
                               + fixture.storeArguments, input: genuine + "\n" + genuine + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        try fixture.enroll(passcodeOnly, "604917")
        try check(fixture, user, replies: [genuine], expect: PAMCode.success, "right gesture")
        let backwards = GestureLoginTests.wire(GestureLoginTests.genuine.map { ($0.kind, Array($0.points.reversed())) })
        try check(fixture, user, replies: [backwards], expect: PAMCode.authError, "gesture drawn backwards")
        try check(fixture, user, replies: ["puff-gesture:1:400x300:t 1,1"], expect: PAMCode.authError, "wrong gesture")
        try check(fixture, user, replies: ["puff-gesture:1:400x300:"], expect: PAMCode.authError, "malformed gesture")
        try check(fixture, passcodeOnly, replies: [genuine], expect: PAMCode.authError, "gesture without an enrolled one")
        #expect(try fixture.failures(user) == 3)
    }
}
