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
        let set = try run("/usr/sbin/chpasswd", [], input: "\(user.name):\(password)\n")
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
        // Locked now (deny=5): Puff no longer prompts, the password still logs in, and the
        // password success does not lift Puff's lock.
        let locked = try fixture.authenticate(user.name, replies: [Self.password], service: "puff-fallback")
        #expect(locked.lines.contains { $0.contains("too many failed attempts") || $0.contains("Too many failed attempts") }, "\(locked.output)")
        #expect(locked.lines.last == "RESULT 0 Success", "\(locked.output)")
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
}
