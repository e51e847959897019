import Foundation
import Testing

/// Authentication through real libpam (`pam_start_confdir`) with the built module.
@Suite(.serialized)
struct AuthenticationTests {
    let user: String

    init() throws {
        user = try TestUsers.ensure("puff-it-alice")
    }

    @Test func rightPasscodeIsAccepted() throws {
        let fixture = try Fixture()
        #expect(try fixture.enroll(user, "604917").status == 0)
        let result = try fixture.authenticate(user, replies: ["604917"])
        #expect(result.status == PAMCode.success)
        #expect(result.lines == [Discreet.prompt, "RESULT 0 Success"])
        // The user's own su or sudo names the keypad.
        let bySelf = try fixture.authenticate(user, replies: ["604917"], bySelf: true)
        #expect(bySelf.lines == ["PROMPT echo-off Puff passcode [6 digits]: ", "RESULT 0 Success"])
        #expect(try fixture.failures(user) == 0)
    }

    @Test func wrongPasscodeIsRefusedAndCounted() throws {
        let fixture = try Fixture()
        try fixture.enroll(user, "604917")
        let result = try fixture.authenticate(user, replies: ["604918"])
        #expect(result.status == PAMCode.authError)
        #expect(result.lines == [Discreet.prompt, Discreet.passcodeRefused, "RESULT 7 Authentication failure"])
        #expect(try fixture.failures(user) == 1)
        let bySelf = try fixture.authenticate(user, replies: ["604918"], bySelf: true)
        #expect(bySelf.lines.contains("ERROR Puff: wrong passcode."), "\(bySelf.lines)")
        #expect(try fixture.failures(user) == 2)
    }

    @Test func unknownUserLooksLikeAWrongPasscode() throws {
        let fixture = try Fixture()
        try fixture.enroll(user, "604917")
        let enrolled = try fixture.authenticate(user, replies: ["111333"])
        let unenrolled = try fixture.authenticate(try TestUsers.ensure("puff-it-bob"), replies: ["111333"])
        let missing = try fixture.authenticate("puff-no-such-user", replies: ["111333"])
        #expect(enrolled.status == PAMCode.authError)
        #expect(unenrolled.status == PAMCode.authError)
        #expect(missing.status == PAMCode.authError)
        // Same prompt, same number of rounds, same message.
        #expect(unenrolled.lines == enrolled.lines)
        #expect(missing.lines == enrolled.lines)
    }

    @Test func nullokIgnoresOnlyUsersWithoutARecord() throws {
        let fixture = try Fixture()
        // libpam folds a lone PAM_IGNORE into a failure, so the stack makes the module's own
        // result visible: ignore falls through to pam_permit (overall success); success
        // jumps to pam_deny; anything else ends the stack with the module's code.
        try fixture.write(fixture.pamDirectory + "/puff-nullok", """
            auth [ignore=ignore success=1 default=die] \(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay nullok
            auth [success=done default=die] pam_permit.so
            auth requisite pam_deny.so

            """, mode: 0o644)
        try fixture.enroll(user, "604917")
        let bob = try TestUsers.ensure("puff-it-bob")
        let ignored = try fixture.authenticate(bob, replies: ["111333"], service: "puff-nullok")
        #expect(ignored.status == PAMCode.success)
        #expect(!ignored.output.contains("PROMPT"))
        #expect(try fixture.authenticate("puff-no-such-user", service: "puff-nullok").status == PAMCode.success)
        // An enrolled user is still checked: a wrong passcode ends the stack with PAM_AUTH_ERR,
        // the right one reaches pam_deny (proving it was a success, not an ignore).
        let wrong = try fixture.authenticate(user, replies: ["111333"], service: "puff-nullok")
        #expect(wrong.status == PAMCode.authError)
        #expect(wrong.lines.contains(Discreet.passcodeRefused), "\(wrong.lines)")
        let right = try fixture.authenticate(user, replies: ["604917"], service: "puff-nullok")
        #expect(right.status == PAMCode.authError)
        #expect(!right.output.contains("ERROR"))
    }

    @Test func emptyNullAndCancelledRepliesFailWithoutCounting() throws {
        let fixture = try Fixture()
        try fixture.enroll(user, "604917")
        #expect(try fixture.authenticate(user, replies: [""]).status == PAMCode.authError)
        #expect(try fixture.authenticate(user, extra: ["--null-reply"]).status == PAMCode.authError)
        #expect(try fixture.authenticate(user, extra: ["--conv-error"]).status == PAMCode.conversationError)
        #expect(try fixture.failures(user) == 0)
    }

    @Test func lockoutAfterDenyFailuresRefusesEvenTheRightPasscode() throws {
        let fixture = try Fixture(moduleArguments: "deny=3 delays=10m")
        try fixture.enroll(user, "604917")
        for _ in 0..<2 {
            #expect(try fixture.authenticate(user, replies: ["111333"], bySelf: true).lines.contains("ERROR Puff: wrong passcode."))
        }
        let third = try fixture.authenticate(user, replies: ["111333"], bySelf: true)
        #expect(third.lines.contains("ERROR Puff: wrong passcode. Too many failed attempts; try again in 10 minutes."))
        let locked = try fixture.authenticate(user, replies: ["604917"], bySelf: true)
        #expect(locked.status == PAMCode.authError)
        #expect(locked.lines.first == "ERROR Puff: too many failed attempts; try again in 10 minutes.")
        // A discreet service prompts the locked account like any other and says what it says
        // to every account; the right passcode is still refused, and nothing more is counted.
        let discreet = try fixture.authenticate(user, replies: ["604917"])
        #expect(discreet.status == PAMCode.authError)
        #expect(discreet.lines == [Discreet.prompt, Discreet.passcodeRefused, "RESULT 7 Authentication failure"])
        let status = try fixture.status(user)
        #expect(status["locked"] as? Bool == true)
        #expect(status["failures"] as? Int == 3)
    }

    @Test func timedUnlock() throws {
        let fixture = try Fixture(moduleArguments: "deny=2 unlock_time=2")
        try fixture.enroll(user, "604917")
        for _ in 0..<2 { try fixture.authenticate(user, replies: ["111333"]) }
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.authError)
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.success)
        #expect(try fixture.failures(user) == 0)
    }

    @Test func adminResetThroughTheCLIUnlocks() throws {
        let fixture = try Fixture(moduleArguments: "deny=2 unlock_time=0")
        try fixture.enroll(user, "604917")
        for _ in 0..<2 { try fixture.authenticate(user, replies: ["111333"]) }
        let locked = try fixture.authenticate(user, replies: ["604917"], bySelf: true)
        #expect(locked.lines.first == "ERROR Puff: too many failed attempts; locked until an administrator resets it.")
        let reset = try run(Artefacts.enroll, ["reset", "--user", user] + fixture.storeArguments)
        #expect(reset.status == 0)
        #expect(reset.output.contains("2 failures cleared"))
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.success)
    }

    @Test func successRehashesWhenTheCostChanged() throws {
        let fixture = try Fixture()
        try fixture.enroll(user, "604917")
        let record = fixture.etc + "/users/" + user
        #expect(try String(contentsOfFile: record, encoding: .utf8).contains("$m=8,t=1,p=1$"))
        try fixture.service("kdf_mem_kib=16 kdf_ops=2")
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.success)
        #expect(try String(contentsOfFile: record, encoding: .utf8).contains("$m=16,t=2,p=1$"))
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.success)
    }

    @Test func firstPassOptions() throws {
        let fixture = try Fixture()
        try fixture.enroll(user, "604917")
        // The first instance (an empty store) prompts and stores PAM_AUTHTOK; the second
        // reuses it, so the user is asked once.
        let empty = fixture.root + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        func stack(_ option: String) throws {
            try fixture.write(fixture.pamDirectory + "/puff-first", """
                auth optional \(Artefacts.module) dir=\(empty) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay silent
                auth required \(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay \(option)

                """, mode: 0o644)
        }
        try stack("use_first_pass")
        let used = try fixture.authenticate(user, replies: ["604917"], service: "puff-first")
        #expect(used.status == PAMCode.success)
        #expect(used.lines.filter { $0.hasPrefix("PROMPT") }.count == 1)
        try stack("try_first_pass")
        let tried = try fixture.authenticate(user, replies: ["604917"], service: "puff-first")
        #expect(tried.status == PAMCode.success)
        #expect(tried.lines.filter { $0.hasPrefix("PROMPT") }.count == 1)
        // use_first_pass with no token: no prompt, refused, not counted; try_first_pass prompts.
        try fixture.service("use_first_pass")
        let none = try fixture.authenticate(user, replies: ["604917"])
        #expect(none.status == PAMCode.authError)
        #expect(!none.output.contains("PROMPT"))
        try fixture.service("try_first_pass")
        let prompted = try fixture.authenticate(user, replies: ["604917"])
        #expect(prompted.status == PAMCode.success)
        #expect(prompted.lines.contains(Discreet.prompt))
        #expect(try fixture.failures(user) == 0)
    }

    @Test func silentShowsOnlyThePrompt() throws {
        let fixture = try Fixture(moduleArguments: "silent")
        try fixture.enroll(user, "604917", type: "alphanumeric")
        let result = try fixture.authenticate(user, replies: ["111333"])
        #expect(result.lines == [Discreet.prompt, "RESULT 7 Authentication failure"])
        let bySelf = try fixture.authenticate(user, replies: ["111333"], bySelf: true)
        #expect(bySelf.lines == ["PROMPT echo-off Puff passcode [text]: ", "RESULT 7 Authentication failure"])
    }

    @Test func storeProblemsFailClosedEvenWithNullok() throws {
        let fixture = try Fixture(moduleArguments: "nullok")
        try fixture.enroll(user, "604917")
        chmod(fixture.etc + "/users", 0o770)
        let result = try fixture.authenticate(user, replies: ["604917"])
        #expect(result.status == PAMCode.authInfoUnavailable)
        chmod(fixture.etc + "/users", 0o700)
        // A record replaced by a symlink to another file is refused, not followed.
        let record = fixture.etc + "/users/" + user
        try FileManager.default.removeItem(atPath: record)
        try FileManager.default.createSymbolicLink(atPath: record, withDestinationPath: "/etc/shadow")
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.authInfoUnavailable)
    }

    @Test func badModuleArgumentsFailClosed() throws {
        let fixture = try Fixture(moduleArguments: "deny=lots nullok")
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.serviceError)
        try fixture.service("dir=relative/path nullok")
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.serviceError)
        try fixture.write(fixture.conf, "deny = -1\n", mode: 0o600)
        try fixture.service("nullok")
        #expect(try fixture.authenticate(user, replies: ["604917"]).status == PAMCode.serviceError)
    }

    @Test func accountAndSetcredHaveDefinedResults() throws {
        let fixture = try Fixture()
        #expect(try fixture.authenticate(user, extra: ["--op", "setcred"]).status == PAMCode.success)
        // The account hook returns PAM_IGNORE: in this stack an ignore falls through to
        // pam_permit (success) and anything else ends the stack with the module's own code.
        try fixture.write(fixture.pamDirectory + "/puff-account", """
            account [ignore=ignore default=die] \(Artefacts.module)
            account required pam_permit.so

            """, mode: 0o644)
        #expect(try fixture.authenticate(user, extra: ["--op", "acct"], service: "puff-account").status == PAMCode.success)
        // And it never touches the counter (the account stack must not reset a lockout).
        try fixture.enroll(user, "604917")
        try fixture.authenticate(user, replies: ["111333"])
        try fixture.authenticate(user, extra: ["--op", "acct"], service: "puff-account")
        #expect(try fixture.failures(user) == 1)
    }
}
