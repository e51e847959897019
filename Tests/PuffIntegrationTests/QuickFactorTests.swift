import Foundation
import Testing

/// The quick factor and its fallback through real libpam: when the gesture is offered, when
/// only the passcode is, what the user is told, and what clears the requirement.
@Suite(.serialized)
struct QuickFactorTests {
    let user: String
    let passcode = "604917"
    let gesture = GestureLoginTests.wire(GestureLoginTests.genuine)
    let wrongGesture = GestureLoginTests.wire(GestureLoginTests.genuine) { x, y in (x + 40, y) }

    init() throws {
        user = try TestUsers.ensure("puff-it-alice")
    }

    /// A fixture with both factors enrolled (passcode first, as a user would).
    private func enrolledBoth(_ arguments: String = "deny=100") throws -> Fixture {
        let fixture = try Fixture(moduleArguments: arguments)
        #expect(try fixture.enroll(user, passcode).status == 0)
        try GestureLoginTests().enrolled(fixture, user)
        return fixture
    }

    private func prompt(_ run: Run) -> String? {
        run.lines.first { $0.hasPrefix("PROMPT ") }
    }

    /// Rewrites `key`'s value in the user's counter (as a restart or the passing of time would
    /// leave it): the counter's fields written back as a version-3 file, which the store reads
    /// and replaces with its own layout at the next write.
    private func editTally(_ fixture: Fixture, _ key: String, _ value: String) throws {
        let path = fixture.state + "/" + user
        var fields = try #require(RawCounter.fields(atPath: path), "the counter does not decode")
        #expect(fields[key] != nil, "no \(key) in \(fields)")
        fields[key] = value
        let keys = ["failures", "last-failure", "locked-until", "gesture-failures", "passcode-at", "passcode-boot",
                    "admin-lock", "serial", "cleared-serial"]
        let text = "puff-tally 3\n" + keys.map { "\($0) \(fields[$0] ?? "")\n" }.joined()
        try fixture.write(path, text, mode: 0o600)
    }

    @Test func promptsTellTheHelperWhatIsAccepted() throws {
        let fixture = try Fixture(moduleArguments: "deny=100")
        try GestureLoginTests().enrolled(fixture, user)
        #expect(prompt(try fixture.authenticate(user, replies: [gesture], bySelf: true)) == "PROMPT echo-off Puff gesture: ")
        try fixture.enroll(user, "1590", type: "digits4")
        let both = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(both.status == PAMCode.success)
        #expect(prompt(both) == "PROMPT echo-off Puff passcode or gesture [4 digits]: ")
        try fixture.enroll(user, "95173", type: "numeric")
        #expect(prompt(try fixture.authenticate(user, replies: ["95173"], bySelf: true)) == "PROMPT echo-off Puff passcode or gesture [digits]: ")
        try fixture.enroll(user, "correct horse", type: "alphanumeric")
        #expect(prompt(try fixture.authenticate(user, replies: ["x"], bySelf: true)) == "PROMPT echo-off Puff passcode or gesture [text]: ")
        let other = try Fixture()
        try other.enroll(user, passcode)
        #expect(prompt(try other.authenticate(user, replies: [passcode], bySelf: true)) == "PROMPT echo-off Puff passcode [6 digits]: ")
    }

    @Test func repeatedGestureFailuresRequireThePasscode() throws {
        let fixture = try enrolledBoth("deny=100 gesture_tries=3")
        for _ in 1...3 {
            let wrong = try fixture.authenticate(user, replies: [wrongGesture], bySelf: true)
            #expect(wrong.status == PAMCode.authError)
            #expect(wrong.lines.contains("ERROR Puff: wrong gesture."))
        }
        #expect(try fixture.status(user)["gesture_failures"] as? Int == 3)
        // Now only the passcode: the genuine gesture is refused unread and not counted.
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.lines == [
            "INFO Puff: passcode required: the gesture failed 3 times in a row.",
            "PROMPT echo-off Puff passcode [6 digits]: ",
            "ERROR Puff: passcode required: the gesture failed 3 times in a row.",
            "RESULT 7 Authentication failure",
        ])
        #expect(try fixture.failures(user) == 3)
        // A wrong passcode does not lift it; the right one does, and the gesture works again.
        #expect(try fixture.authenticate(user, replies: ["111333"], bySelf: true).status == PAMCode.authError)
        #expect(try fixture.authenticate(user, replies: [passcode], bySelf: true).status == PAMCode.success)
        let again = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(again.status == PAMCode.success)
        #expect(prompt(again) == "PROMPT echo-off Puff passcode or gesture [6 digits]: ")
        #expect(try fixture.status(user)["gesture_failures"] as? Int == 0)
    }

    @Test func aGestureSuccessEndsTheRunOfGestureFailures() throws {
        let fixture = try enrolledBoth("deny=100 gesture_tries=3")
        for _ in 1...2 { try fixture.authenticate(user, replies: [wrongGesture], bySelf: true) }
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
        for _ in 1...2 { try fixture.authenticate(user, replies: [wrongGesture], bySelf: true) }
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
    }

    @Test func aRestartRequiresThePasscode() throws {
        let fixture = try enrolledBoth()
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
        // As if the passcode had last been used in another boot.
        try editTally(fixture, "passcode-boot", "0123456789abcdef0123456789abcdef")
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.status == PAMCode.authError)
        #expect(refused.lines.first == "INFO Puff: passcode required: the computer restarted since the passcode was last used.")
        #expect(try fixture.failures(user) == 0)
        #expect(try fixture.authenticate(user, replies: [passcode], bySelf: true).status == PAMCode.success)
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
        // The success stored this boot's id.
        let boot = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .replacingOccurrences(of: "-", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(RawCounter.fields(atPath: fixture.state + "/" + user)?["passcode-boot"] == boot)
        // With gesture_after_reboot the rule is off.
        try editTally(fixture, "passcode-boot", "0123456789abcdef0123456789abcdef")
        try fixture.service("deny=100 gesture_after_reboot")
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
    }

    @Test func aLongTimeWithoutThePasscodeRequiresIt() throws {
        let fixture = try enrolledBoth("deny=100 passcode_interval=1h")
        try editTally(fixture, "passcode-at", String(Int(Date().timeIntervalSince1970) - 3500))
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
        try editTally(fixture, "passcode-at", String(Int(Date().timeIntervalSince1970) - 3700))
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.status == PAMCode.authError)
        #expect(refused.lines.first == "INFO Puff: passcode required: the passcode was last used more than 60 minutes ago.")
        // passcode_interval=0 turns the rule off.
        try fixture.service("deny=100 passcode_interval=0")
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
    }

    @Test func anAdministratorCanRequireThePasscode() throws {
        let fixture = try enrolledBoth()
        let locked = try run(Artefacts.enroll, ["lock", "--user", user] + fixture.storeArguments)
        #expect(locked.status == 0, "\(locked.errors)")
        #expect(try fixture.status(user)["admin_lock"] as? Bool == true)
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.lines.first == "INFO Puff: passcode required: an administrator asked for the passcode.")
        #expect(refused.status == PAMCode.authError)
        #expect(try fixture.authenticate(user, replies: [passcode], bySelf: true).status == PAMCode.success)
        #expect(try fixture.status(user)["admin_lock"] as? Bool == false)
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
    }

    @Test func aGestureOnlyUserKeepsTheGestureButNotAgainstAnAdministrator() throws {
        let fixture = try Fixture(moduleArguments: "deny=100 gesture_tries=2")
        try GestureLoginTests().enrolled(fixture, user)
        // Nothing to fall back to: gesture_tries, restarts and the interval do not apply.
        for _ in 1...3 { try fixture.authenticate(user, replies: [wrongGesture], bySelf: true) }
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
        // An administrator's lock refuses every login, without a prompt, until a reset.
        #expect(try run(Artefacts.enroll, ["lock", "--user", user] + fixture.storeArguments).status == 0)
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.lines == [
            "ERROR Puff: too many failed attempts; locked until an administrator resets it.",
            "RESULT 7 Authentication failure",
        ])
        #expect(try run(Artefacts.enroll, ["reset", "--user", user] + fixture.storeArguments).status == 0)
        #expect(try fixture.authenticate(user, replies: [gesture], bySelf: true).status == PAMCode.success)
    }

    @Test func silentSaysNothingAboutTheReason() throws {
        let fixture = try enrolledBoth("deny=100 silent")
        try editTally(fixture, "passcode-boot", "0123456789abcdef0123456789abcdef")
        let refused = try fixture.authenticate(user, replies: [gesture], bySelf: true)
        #expect(refused.lines == ["PROMPT echo-off Puff passcode [6 digits]: ", "RESULT 7 Authentication failure"])
    }
}
