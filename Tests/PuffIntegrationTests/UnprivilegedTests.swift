import Foundation
import Testing

/// The module in a process that is not root (a screen locker): it goes through the setuid
/// helper, which serves only the caller's own account.
///
/// The helper reads the fixed store (/etc/puff, /var/lib/puff), so each test runs its PAM
/// application in a private mount namespace where a temp store is bind-mounted there; the
/// machine's own /etc/puff is never touched. The programs are copied into a temp directory
/// the test user can reach, with the helper made setuid root.
@Suite(.serialized)
struct UnprivilegedTests {
    static var helperBinary: String {
        ProcessInfo.processInfo.environment["PUFF_HELPER"] ?? Artefacts.repository.appendingPathComponent("build/puff-check").path
    }

    /// A store mounted at the fixed paths and the programs an ordinary user can run.
    final class Stage {
        let fixture: Fixture
        let bin: String
        var helper: String { bin + "/puff-check" }
        var harness: String { bin + "/puff-pam-harness" }
        var enroll: String { bin + "/puff-enroll" }
        var createdMountPoints: [String] = []

        init(config: String = "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\n") throws {
            // The helper reads /etc/puff/puff.conf only, so dir= and state_dir= must not be in it.
            fixture = try Fixture(config: config, moduleArguments: "")
            chmod(fixture.etc, 0o755)
            chmod(fixture.conf, 0o644)
            bin = fixture.root + "/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o755])
            try copy(UnprivilegedTests.helperBinary, to: helper, mode: 0o4755)
            try copy(Artefacts.harness, to: harness, mode: 0o755)
            try copy(Artefacts.module, to: bin + "/pam_puff.so", mode: 0o644)
            try copy(Artefacts.enroll, to: enroll, mode: 0o755)
            try fixture.write(fixture.pamDirectory + "/puff-test",
                              "auth required \(bin)/pam_puff.so nodelay helper=\(helper)\naccount required pam_permit.so\n",
                              mode: 0o644)
            chmod(fixture.pamDirectory, 0o755)
            for point in ["/etc/puff", "/var/lib/puff"] where access(point, F_OK) != 0 {
                #expect(mkdir(point, 0o755) == 0)
                createdMountPoints.append(point)
            }
        }

        deinit {
            for point in createdMountPoints { rmdir(point) }
        }

        private func copy(_ from: String, to: String, mode: Int) throws {
            try FileManager.default.copyItem(atPath: from, toPath: to)
            chown(to, 0, 0)
            chmod(to, mode_t(mode))
        }

        /// Runs `command` as `user` inside a mount namespace that shows this store at the
        /// fixed paths.
        func runAs(_ user: String, _ command: [String], input: String? = nil) throws -> Run {
            let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            let script = "mount --bind \(fixture.etc) /etc/puff && mount --bind \(fixture.state) /var/lib/puff && "
                + "exec setpriv --reuid=\(user) --regid=\(user) --init-groups \(quoted)"
            return try run("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script], input: input)
        }

        func authenticate(as caller: String, user: String? = nil, replies: [String]) throws -> Run {
            var arguments = [harness, "--confdir", fixture.pamDirectory, "--service", "puff-test", "--user", user ?? caller]
            for reply in replies { arguments += ["--reply", reply] }
            return try runAs(caller, arguments)
        }
    }

    @Test func anOrdinaryUserAuthenticatesItselfWithPasscodeAndGesture() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try Stage()
        #expect(try stage.fixture.enroll(alice, "604917").status == 0)
        try GestureLoginTests().enrolled(stage.fixture, alice)

        let right = try stage.authenticate(as: alice, replies: ["604917"])
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        #expect(right.lines.first == "PROMPT echo-off Puff passcode or gesture [6 digits]: ")
        let gesture = try stage.authenticate(as: alice, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
        #expect(gesture.status == PAMCode.success, "\(gesture.output) \(gesture.errors)")

        let wrong = try stage.authenticate(as: alice, replies: ["111333"])
        #expect(wrong.status == PAMCode.authError)
        #expect(wrong.lines.contains("ERROR Puff: wrong passcode."))
        #expect(try stage.fixture.failures(alice) == 1)
    }

    @Test func theLockoutHoldsThroughTheHelper() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try Stage()
        try stage.fixture.enroll(alice, "604917")
        for _ in 1...3 { try stage.authenticate(as: alice, replies: ["111333"]) }
        let locked = try stage.authenticate(as: alice, replies: ["604917"])
        #expect(locked.status == PAMCode.authError)
        #expect(locked.lines.contains("ERROR Puff: too many failed attempts; try again in 1 minute."))
        #expect(!locked.lines.contains { $0.hasPrefix("PROMPT") })
        #expect(try stage.fixture.failures(alice) == 3)
    }

    @Test func anOrdinaryUserCannotAuthenticateAnotherUserReadTheStoreOrResetItself() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let bob = try TestUsers.ensure("puff-it-bob")
        let stage = try Stage()
        try stage.fixture.enroll(alice, "604917")
        try stage.fixture.enroll(bob, "271828")
        // Bob's right passcode, asked for by alice's process: refused before any prompt.
        let other = try stage.authenticate(as: alice, user: bob, replies: ["271828"])
        #expect(other.status == PAMCode.authError)
        #expect(!other.lines.contains { $0.hasPrefix("PROMPT") })
        // The helper itself only ever checks the caller: bob's passcode is wrong for alice.
        let direct = try stage.runAs(alice, [stage.helper, "verify"], input: "271828")
        #expect(direct.status == 1)
        #expect(direct.output.contains("outcome failure"))
        #expect(!direct.output.contains("271828"))
        // The store is unreadable.
        for path in ["/etc/puff/users/\(alice)", "/etc/puff/host.key", "/var/lib/puff/\(alice)"] {
            let read = try stage.runAs(alice, ["/bin/cat", path])
            #expect(read.status != 0 && read.output.isEmpty, "\(path) was readable")
        }
        // No way to clear the counter: the helper has no such operation, puff-enroll refuses.
        #expect(try stage.runAs(alice, [stage.helper, "reset"]).status == 2)
        #expect(try stage.runAs(alice, [stage.helper, "verify", "--user", bob], input: "271828").status == 2)
        let reset = try stage.runAs(alice, [stage.enroll, "reset", "--user", alice])
        #expect(reset.status == 77, "\(reset.errors)")
        #expect(try stage.fixture.failures(alice) == 1)
        #expect(try stage.fixture.failures(bob) == 0)
    }

    @Test func theHelperTrustsNothingFromItsCaller() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try Stage()
        try stage.fixture.enroll(alice, "604917")
        // An environment that would redirect a careless program changes nothing.
        let poisoned = try stage.runAs(alice, ["/usr/bin/env", "HOME=/tmp", "TMPDIR=/tmp", "LD_PRELOAD=/nonexistent.so",
                                               "PUFF_DIR=/tmp", "SWIFT_BACKTRACE=enable=yes", stage.helper, "verify"],
                                       input: "604917")
        #expect(poisoned.status == 0, "\(poisoned.output) \(poisoned.errors)")
        #expect(poisoned.output.contains("outcome success"))
        // Oversized input is refused unread and not counted.
        let huge = try stage.runAs(alice, [stage.helper, "verify"], input: String(repeating: "7", count: 70_000))
        #expect(huge.status == 2)
        // Empty input too.
        #expect(try stage.runAs(alice, [stage.helper, "verify"], input: "").status == 2)
        #expect(try stage.fixture.failures(alice) == 0)
        // Closed standard descriptors: the helper reopens them on /dev/null and still answers.
        let closed = try stage.runAs(alice, ["/bin/sh", "-c", "exec \(stage.helper) query 2>&-"])
        #expect(closed.status == 0)
        #expect(closed.output.hasPrefix("puff-check 1\noutcome state\n"))
    }
}
