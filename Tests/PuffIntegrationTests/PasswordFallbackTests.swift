import Foundation
import Testing

/// The shipped "Puff, else the password" stack (`pam.d/puff-else-password`, the lines the
/// pam-auth-update profile gives common-auth) through real libpam, `su` and sshd: the system
/// password typed at Puff's prompt logs in and leaves no Puff failure, a wrong one counts
/// once, an empty reply goes to the password prompt uncounted.
@Suite(.serialized)
struct PasswordFallbackTests {
    static let passcode = "604917"
    static let password = "Sys-Pass-4217"

    /// The shipped stack with the module by absolute path on the fixture's store.
    static func shippedStack(_ fixture: Fixture) throws -> String {
        let shipped = try String(contentsOf: Artefacts.repository.appendingPathComponent("pam.d/puff-else-password"),
                                 encoding: .utf8)
        let module = "\(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay "
            + "helper=\(Artefacts.helper)"
        let lines = shipped.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(lines.count == 5, "the shipped stack changed: \(lines)")
        return lines.map { $0.replacingOccurrences(of: "pam_puff.so", with: module) + "\n" }.joined()
    }

    /// An account with a shell and `password` as its system password.
    static func userWithPassword(_ role: String) throws -> RealClientTests.ShellUser {
        let user = try RealClientTests.ShellUser(role)
        let set = try Hermetic.setPassword(user.name, password)
        #expect(set.status == 0, "chpasswd: \(set.errors)")
        return user
    }

    @Test func systemPasswordAtPuffsPromptNeverCountsThroughLibpam() throws {
        let user = try Self.userWithPassword("fb")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        try fixture.write(fixture.pamDirectory + "/puff-fallback",
                          try Self.shippedStack(fixture) + "account required pam_permit.so\n", mode: 0o644)

        for _ in 1...6 {
            let login = try fixture.authenticate(user.name, replies: [Self.password], service: "puff-fallback")
            #expect(login.lines.last == "RESULT 0 Success", "\(login.output)")
            #expect(try fixture.failures(user.name) == 0)
        }
        // A wrong password at Puff's prompt: refused, counted once in Puff.
        let wrong = try fixture.authenticate(user.name, replies: ["not-the-password"], service: "puff-fallback")
        #expect(wrong.lines.last == "RESULT 7 Authentication failure", "\(wrong.output)")
        #expect(try fixture.failures(user.name) == 1)
        // An empty reply: pam_unix asks for the password itself; nothing more is counted.
        let empty = try fixture.authenticate(user.name, replies: ["", Self.password], service: "puff-fallback")
        #expect(empty.lines.filter { $0.hasPrefix("PROMPT echo-off") }.count == 2, "\(empty.output)")
        #expect(empty.lines.last == "RESULT 0 Success", "\(empty.output)")
        #expect(try fixture.failures(user.name) == 1)
        // The passcode still works and clears Puff's count.
        let right = try fixture.authenticate(user.name, replies: [Self.passcode], service: "puff-fallback")
        #expect(right.lines.last == "RESULT 0 Success")
        #expect(try fixture.failures(user.name) == 0)
    }

    @Test func passcodeGuessesAreStillCountedWhenThePasswordFails() throws {
        let user = try Self.userWithPassword("fb")
        let fixture = try Fixture(moduleArguments: "")
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        try fixture.write(fixture.pamDirectory + "/puff-fallback",
                          try Self.shippedStack(fixture) + "account required pam_permit.so\n", mode: 0o644)
        for expected in 1...5 {
            let guess = try fixture.authenticate(user.name, replies: [String(111110 + expected)], service: "puff-fallback")
            #expect(guess.lines.last == "RESULT 7 Authentication failure")
            #expect(try fixture.failures(user.name) == expected)
        }
        // Locked now (deny=5). Where the caller is not the user, Puff still asks the common
        // prompt and says nothing (nullok_prompt); the password typed there logs in, and the
        // password success does not lift Puff's lock.
        let locked = try fixture.authenticate(user.name, replies: [Self.password], service: "puff-fallback")
        #expect(locked.lines.first == Discreet.prompt, "\(locked.output)")
        #expect(!locked.lines.contains { $0.hasPrefix("ERROR") || $0.hasPrefix("INFO") }, "\(locked.output)")
        #expect(locked.lines.last == "RESULT 0 Success", "\(locked.output)")
        // The user's own su or sudo: told about the lock, then pam_unix asks for the password.
        let own = try fixture.authenticate(user.name, replies: [Self.password], service: "puff-fallback", bySelf: true)
        #expect(own.lines.contains { $0.contains("too many failed attempts") }, "\(own.output)")
        #expect(own.lines.filter { $0.hasPrefix("PROMPT") } == ["PROMPT echo-off Password: "], "\(own.output)")
        #expect(own.lines.last == "RESULT 0 Success", "\(own.output)")
        #expect(try fixture.failures(user.name) == 5)
        #expect(try fixture.status(user.name)["locked"] as? Bool == true)
    }

    @Test func suWithTheShippedStack() throws {
        let caller = try RealClientTests.ShellUser("caller")
        let target = try Self.userWithPassword("target")
        let fixture = try Fixture()
        #expect(try fixture.enroll(target.name, Self.passcode).status == 0)
        let pamFile = fixture.root + "/su"
        try fixture.write(pamFile, try Self.shippedStack(fixture) + """
            account required pam_permit.so
            session required pam_permit.so

            """, mode: 0o644)

        for _ in 1...2 {
            let byPassword = try RealClientTests.su(as: caller, to: target, Self.password, pamFile: pamFile)
            #expect(byPassword.output.contains("puff-su-ok \(target.name)"), "\(byPassword.output)")
            #expect(try fixture.failures(target.name) == 0)
        }
        let wrong = try RealClientTests.su(as: caller, to: target, "not-the-password", pamFile: pamFile)
        #expect(!wrong.output.contains("puff-su-ok"), "\(wrong.output)")
        #expect(try fixture.failures(target.name) == 1)
        // Enter at Puff's prompt: the password prompt follows, and nothing more is counted.
        let skipped = try RealClientTests.su(as: caller, to: target,
                                             answers: [("asscode", ""), ("password", Self.password)], pamFile: pamFile)
        #expect(skipped.output.contains("puff-su-ok \(target.name)"), "\(skipped.output)")
        #expect(try fixture.failures(target.name) == 1)
        let byPasscode = try RealClientTests.su(as: caller, to: target, Self.passcode, pamFile: pamFile)
        #expect(byPasscode.output.contains("puff-su-ok \(target.name)"), "\(byPasscode.output)")
        #expect(try fixture.failures(target.name) == 0)
    }

    @Test func sshWithTheShippedStack() throws {
        let user = try Self.userWithPassword("ssh")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        let server = try RealClientTests.PrivateSSHServer(fixture, moduleArguments: "",
                                                          authStack: try Self.shippedStack(fixture))
        for _ in 1...3 {
            let login = try server.login(user.name, Self.password)
            #expect(login.lines.contains("puff-ssh-ok \(user.name)"), "\(login.output)\(login.errors)\n\(server.log)")
            #expect(try fixture.failures(user.name) == 0)
        }
        let byPasscode = try server.login(user.name, Self.passcode)
        #expect(byPasscode.lines.contains("puff-ssh-ok \(user.name)"), "\(byPasscode.output)\(byPasscode.errors)")
        #expect(try fixture.failures(user.name) == 0)
    }

    // MARK: Issue 32, item 1: a successful password login is no attack

    /// `fail2ban-regex` (Debian's fail2ban) with the shipped filter (docs/fail2ban) over syslog
    /// datagrams as the capture received them: the remote hosts of the lines it matches.
    static func fail2banMatches(_ datagrams: [String], in directory: String) throws -> [String] {
        let filters = directory + "/filter.d"
        try FileManager.default.createDirectory(atPath: filters, withIntermediateDirectories: true)
        for name in ["pam-generic.conf", "common.conf"] {
            try? FileManager.default.removeItem(atPath: filters + "/" + name)
            try FileManager.default.copyItem(atPath: "/etc/fail2ban/filter.d/" + name, toPath: filters + "/" + name)
        }
        let filter = filters + "/puff.conf"
        try? FileManager.default.removeItem(atPath: filter)
        try FileManager.default.copyItem(atPath: Artefacts.repository.appendingPathComponent("docs/fail2ban/filter.d/puff.conf").path,
                                         toPath: filter)
        // "<85>Nov 27 22:19:01 ident[pid]: text" as a log file has it: "Nov 27 22:19:01 host ident[pid]: text".
        let lines = datagrams.map { datagram -> String in
            let body = datagram.drop { $0 != ">" }.dropFirst()
            return String(body.prefix(15)) + " puff-host " + String(body.dropFirst(16))
        }
        let log = directory + "/auth.log"
        try (lines.joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let result = try run("/usr/bin/fail2ban-regex", ["-o", "ip", log, filter])
        #expect(result.status == 0, "fail2ban-regex: \(result.errors)")
        return result.lines.filter { !$0.isEmpty }
    }

    /// Through libpam with the shipped stack and a remote host (as sshd sets PAM_RHOST): six
    /// logins with the system password typed at Puff's prompt write nothing the shipped fail2ban
    /// filter matches and leave no row in the failure history; three wrong passwords are each
    /// matched once and listed.
    @Test func successfulPasswordLoginsAreNoFailuresToFail2ban() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let user = try Self.userWithPassword("f2b")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        try fixture.write(fixture.pamDirectory + "/sshd", try Self.shippedStack(fixture) + "account required pam_permit.so\n",
                          mode: 0o644)
        _ = capture.drain()
        for _ in 1...6 {
            let login = try fixture.authenticate(user.name, replies: [Self.password], extra: ["--rhost", "192.0.2.61", "--tty", "ssh"],
                                                 service: "sshd")
            #expect(login.lines.last == "RESULT 0 Success", "\(login.output)")
        }
        // Only this test's lines: /dev/log also receives other tests' (and other runs') lines.
        func ours(_ lines: [String]) -> [String] { lines.filter { $0.contains(user.name) } }
        let successes = ours(capture.drain())
        #expect(successes.filter { $0.contains("failure taken back") }.count == 6, "\(successes)")
        #expect(try Self.fail2banMatches(successes, in: fixture.root) == [], "\(successes)")
        #expect(!successes.contains { $0.contains("authentication failure") }, "\(successes)")
        let afterSuccesses = try fixture.status(user.name)
        #expect((afterSuccesses["recent_failures"] as? [Any])?.count == 0, "\(afterSuccesses)")
        #expect(afterSuccesses["failures"] as? Int == 0)

        for _ in 1...3 {
            let wrong = try fixture.authenticate(user.name, replies: ["not-the-password"], extra: ["--rhost", "192.0.2.62", "--tty", "ssh"],
                                                 service: "sshd")
            #expect(wrong.lines.last == "RESULT 7 Authentication failure", "\(wrong.output)")
        }
        let failures = ours(capture.drain())
        #expect(try Self.fail2banMatches(failures, in: fixture.root) == Array(repeating: "192.0.2.62", count: 3), "\(failures)")
        let afterFailures = try fixture.status(user.name)
        let rows = try #require(afterFailures["recent_failures"] as? [[String: Any]])
        #expect(rows.count == 3 && rows.allSatisfy { $0["rhost"] as? String == "192.0.2.62" }, "\(rows)")
        // And a password login after them: its own row goes, the three real ones stay.
        let login = try fixture.authenticate(user.name, replies: [Self.password], extra: ["--rhost", "192.0.2.61"], service: "sshd")
        #expect(login.lines.last == "RESULT 0 Success", "\(login.output)")
        #expect(try Self.fail2banMatches(ours(capture.drain()), in: fixture.root) == [])
        #expect((try fixture.status(user.name)["recent_failures"] as? [Any])?.count == 3)
        #expect(try fixture.failures(user.name) == 3)
    }

    // MARK: Issue 27, item 4: the shipped stack does not tell who uses Puff

    /// The pam-auth-update profile holds the same Puff line as the documented stack.
    @Test func theProfileAndTheDocumentedStackAgree() throws {
        func pamLine(_ text: String) -> String? {
            text.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) }
                .first { $0.contains("pam_puff.so") && !$0.contains("authsucc") }
                .map { Array($0.drop { $0 != "pam_puff.so" }).joined(separator: " ") }
        }
        let profile = try String(contentsOf: Artefacts.repository.appendingPathComponent("debian/pam-configs/puff"), encoding: .utf8)
        let stack = try String(contentsOf: Artefacts.repository.appendingPathComponent("pam.d/puff-else-password"), encoding: .utf8)
        #expect(pamLine(profile) == "pam_puff.so nullok_prompt", "\(pamLine(profile) ?? "none")")
        #expect(pamLine(profile) == pamLine(stack))
        let readme = try String(contentsOf: Artefacts.repository.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("pam_puff.so nullok_prompt"))
    }

    /// Through libpam as sshd runs it (real uid root): an enrolled account, an account without
    /// a record and a name that is no account see the same transcript for a wrong password,
    /// and the account without Puff logs in with its password typed once at the first prompt,
    /// with nothing counted or written for it.
    @Test func theShippedStackAsksEveryAccountTheSameThroughLibpam() throws {
        let enrolled = try Self.userWithPassword("fb")
        let withoutPuff = try Self.userWithPassword("nopuff")
        let noAccount = "puff-rc-no-such-account"
        #expect(getpwnam(noAccount) == nil)
        let fixture = try Fixture()
        #expect(try fixture.enroll(enrolled.name, Self.passcode).status == 0)
        try fixture.write(fixture.pamDirectory + "/puff-fallback",
                          try Self.shippedStack(fixture) + "account required pam_permit.so\n", mode: 0o644)

        let reference = try fixture.authenticate(enrolled.name, replies: ["not-the-password"], service: "puff-fallback")
        #expect(reference.lines.first == Discreet.prompt, "\(reference.output)")
        #expect(reference.lines.last == "RESULT 7 Authentication failure", "\(reference.output)")
        #expect(try fixture.failures(enrolled.name) == 1)
        for user in [withoutPuff.name, noAccount] {
            let seen = try fixture.authenticate(user, replies: ["not-the-password"], service: "puff-fallback")
            #expect(seen.lines == reference.lines, "\(user): \(seen.lines) vs \(reference.lines)")
        }
        let login = try fixture.authenticate(withoutPuff.name, replies: [Self.password], service: "puff-fallback")
        #expect(login.lines.filter { $0.hasPrefix("PROMPT") } == [Discreet.prompt], "\(login.output)")
        #expect(login.lines.last == "RESULT 0 Success", "\(login.output)")
        for user in [withoutPuff.name, noAccount] {
            #expect(!FileManager.default.fileExists(atPath: fixture.state + "/" + user), "a counter was written for \(user)")
            #expect(!FileManager.default.fileExists(atPath: fixture.state + "/.history/" + user))
        }
        // The enrolled account's fallback is unchanged: the password at Puff's prompt logs in
        // and authsucc takes back the failure it counted.
        let byPassword = try fixture.authenticate(enrolled.name, replies: [Self.password], service: "puff-fallback")
        #expect(byPassword.lines.last == "RESULT 0 Success", "\(byPassword.output)")
        #expect(try fixture.failures(enrolled.name) == 1)
    }

    /// The same through real `su` run by an ordinary user and a real sshd: the first prompt is
    /// the same for every account (a name that is no account only through sshd: su itself says
    /// so before PAM runs), and a user without Puff logs in typing the password once.
    @Test func theShippedStackAsksEveryAccountTheSameThroughSuAndSshd() throws {
        let caller = try RealClientTests.ShellUser("caller")
        let enrolled = try Self.userWithPassword("target")
        let withoutPuff = try Self.userWithPassword("nopuff")
        let noAccount = "puff-rc-no-such-account"
        let fixture = try Fixture()
        #expect(try fixture.enroll(enrolled.name, Self.passcode).status == 0)
        let pamFile = fixture.root + "/su"
        try fixture.write(pamFile, try Self.shippedStack(fixture) + """
            account required pam_permit.so
            session required pam_permit.so

            """, mode: 0o644)
        let prompt = "Puff passcode or gesture: "
        /// The terminal's text up to and including the first prompt's ": ".
        func firstPrompt(_ output: String) -> String {
            output.range(of: ": ").map { String(output[..<$0.upperBound]) } ?? output
        }
        let enrolledSu = try RealClientTests.su(as: caller, to: enrolled, answers: [(":", "not-the-password")], pamFile: pamFile)
        #expect(firstPrompt(enrolledSu.output) == prompt, "\(enrolledSu.output)")
        let plainSu = try RealClientTests.su(as: caller, to: withoutPuff, answers: [(":", Self.password)], pamFile: pamFile)
        #expect(firstPrompt(plainSu.output) == prompt, "\(plainSu.output)")
        #expect(plainSu.output.contains("puff-su-ok \(withoutPuff.name)"), "\(plainSu.output)")
        #expect(!plainSu.output.contains("Password:"), "asked twice: \(plainSu.output)")
        #expect(!plainSu.output.contains("Puff: "), "\(plainSu.output)")

        let server = try RealClientTests.PrivateSSHServer(fixture, moduleArguments: "",
                                                          authStack: try Self.shippedStack(fixture))
        // ssh asks through an askpass program, which logs every prompt it is shown.
        let askpass = fixture.root + "/askpass"
        try fixture.write(askpass, "#!/bin/sh\nprintf '%s\\n' \"$1\" >> \"$PUFF_ASKPASS_LOG\"\nprintf '%s\\n' \"$PUFF_ASKPASS_ANSWER\"\n",
                          mode: 0o755)
        func ssh(_ user: String, _ answer: String) throws -> (run: Run, prompts: [String]) {
            let log = fixture.root + "/prompts-" + user
            let result = try run("/usr/bin/timeout", ["60"] + server.clientArguments(user, command: "echo puff-ssh-ok $(id -un)"),
                                 environment: ["SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": "",
                                               "PUFF_ASKPASS_LOG": log, "PUFF_ASKPASS_ANSWER": answer])
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            // OpenSSH shows keyboard-interactive prompts as "(user@host) PROMPT".
            let prompts = text.split(separator: "\n").map { line in
                line.range(of: ") ").map { String(line[$0.upperBound...]) } ?? String(line)
            }
            return (result, prompts)
        }
        let enrolledSsh = try ssh(enrolled.name, "not-the-password")
        let plainSsh = try ssh(withoutPuff.name, Self.password)
        let nobodySsh = try ssh(noAccount, "not-the-password")
        #expect(enrolledSsh.prompts.first == prompt, "\(enrolledSsh.prompts) \(enrolledSsh.run.errors)")
        #expect(plainSsh.prompts.first == prompt, "\(plainSsh.prompts)")
        #expect(nobodySsh.prompts.first == prompt, "\(nobodySsh.prompts)")
        #expect(plainSsh.prompts.count == 1, "the password was asked for more than once: \(plainSsh.prompts)")
        #expect(plainSsh.run.lines.contains("puff-ssh-ok \(withoutPuff.name)"), "\(plainSsh.run.output)\(plainSsh.run.errors)")
        #expect(!enrolledSsh.run.output.contains("puff-ssh-ok"))
        // Puff counted nothing for the account without a record.
        #expect(!FileManager.default.fileExists(atPath: fixture.state + "/" + withoutPuff.name))
        #expect(try fixture.failures(enrolled.name) == 2)
    }
}
