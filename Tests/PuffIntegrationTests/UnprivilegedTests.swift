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
    static var helperBinary: String { Artefacts.helper }

    /// A store mounted at the fixed paths and the programs an ordinary user can run.
    final class Stage {
        let fixture: Fixture
        let bin: String
        var helper: String { bin + "/puff-check" }
        var harness: String { bin + "/puff-pam-harness" }
        var enroll: String { bin + "/puff-enroll" }
        var systemPAM: String { fixture.root + "/system-pam.d" }
        var shadow: String { fixture.root + "/shadow" }

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
            // The system PAM directory the helper sees: only the puff-enroll service.
            try FileManager.default.createDirectory(atPath: systemPAM, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o755])
            try fixture.write(systemPAM + "/puff-enroll", "auth required pam_unix.so\naccount required pam_unix.so\n", mode: 0o644)
            try copy(GestureLoginTests.picture, to: bin + "/picture.png", mode: 0o644)
            // The system files the helper's system-password proof reads (pam_unix as root):
            // /etc/shadow as a copy, to which userWithPassword adds a password.
            try FileManager.default.copyItem(atPath: "/etc/shadow", toPath: shadow)
            chmod(shadow, 0o640)
            // Owned like the real one, so unix_chkpwd (setgid shadow: pam_unix in an
            // ordinary user's process) reads it too.
            if let group = getgrnam("shadow") { chown(shadow, 0, group.pointee.gr_gid) }
            // Empty mount points, made when missing (in the suite's private /etc and /var/lib).
            for (point, mode) in [("/etc/puff", 0o755), ("/var/lib/puff", 0o700)] where access(point, F_OK) != 0 {
                #expect(mkdir(point, mode_t(mode)) == 0 || errno == EEXIST)
            }
        }

        private func copy(_ from: String, to: String, mode: Int) throws {
            // Copied by cp(1), not in this process: a descriptor open for writing here would be
            // inherited by a concurrent test's fork, and executing the copy then fails with
            // ETXTBSY ("Text file busy").
            let copied = try run("/bin/cp", [from, to])
            guard copied.status == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cp \(from): \(copied.errors)"])
            }
            chown(to, 0, 0)
            chmod(to, mode_t(mode))
        }

        /// Runs `command` as `user` inside a mount namespace that shows this store at the
        /// fixed paths.
        func runAs(_ user: String, _ command: [String], input: String? = nil) throws -> Run {
            let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            // The namespace also shows the stage's /etc/shadow and system PAM directory, and
            // proves it before running anything: the files at the system paths must be the
            // copies (same device and inode), or the run stops with status 99.
            let script = """
                mount --bind \(fixture.etc) /etc/puff && mount --bind \(fixture.state) /var/lib/puff \
                  && mount --bind \(shadow) /etc/shadow && mount --bind \(systemPAM) /etc/pam.d || exit 98
                [ "$(stat -c %d:%i /etc/shadow)" = "$(stat -c %d:%i \(shadow))" ] \
                  && [ "$(stat -c %d:%i /etc/pam.d)" = "$(stat -c %d:%i \(systemPAM))" ] \
                  && [ "$(stat -c %d:%i /etc/puff)" = "$(stat -c %d:%i \(fixture.etc))" ] \
                  || { echo "the stage's shadow, pam.d or store is not what the namespace shows" >&2; exit 99; }
                exec setpriv --reuid=\(user) --regid=\(user) --init-groups \(quoted)
                """
            Hermetic.systemFiles.lockForReading()
            defer { Hermetic.systemFiles.unlock() }
            let result = try run("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script], input: input)
            guard result.status != 98 && result.status != 99 else {
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "private mounts: \(result.errors)"])
            }
            return result
        }

        @discardableResult
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

    /// Issue 31, item 3: a screen locker's unlock is one helper run (`login`: the state, then
    /// the attempt), not two (`query` before the prompt, `verify` after, each loading the
    /// configuration); a login that ends before the attempt runs it once too and counts nothing.
    /// A wrapper at `helper=` writes down each run's operation and execs the real setuid helper.
    @Test func anUnlockIsOneHelperRun() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try Stage()
        #expect(try stage.fixture.enroll(alice, "604917").status == 0)
        let runs = stage.bin + "/runs"
        try stage.fixture.write(runs, "", mode: 0o666)
        let wrapper = stage.bin + "/counting-helper"
        try stage.fixture.write(wrapper, "#!/bin/sh\necho \"$1\" >> \(runs)\nexec \(stage.helper) \"$@\"\n", mode: 0o755)
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-count",
                                "auth required \(stage.bin)/pam_puff.so nodelay helper=\(wrapper)\naccount required pam_permit.so\n",
                                mode: 0o644)
        func unlock(_ replies: [String]) throws -> Run {
            try stage.runAs(alice, [stage.harness, "--confdir", stage.fixture.pamDirectory, "--service", "puff-count",
                                    "--user", alice] + replies.flatMap { ["--reply", $0] })
        }
        let right = try unlock(["604917"])
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        #expect(try String(contentsOfFile: runs, encoding: .utf8) == "login\n")
        let wrong = try unlock(["111333"])
        #expect(wrong.status == PAMCode.authError, "\(wrong.output) \(wrong.errors)")
        #expect(wrong.lines.contains("ERROR Puff: wrong passcode."))
        let empty = try unlock([""])
        #expect(empty.status == PAMCode.authError, "\(empty.output)")
        #expect(try String(contentsOfFile: runs, encoding: .utf8) == "login\nlogin\nlogin\n")
        #expect(try stage.fixture.failures(alice) == 1)
    }

    /// Issue 31, item 3: one log line per attempt. The helper writes the attempt's line; the
    /// module writes the pam_unix-shaped line fail2ban reads, once, and repeats nothing.
    @Test func eachAttemptThroughTheHelperIsLoggedOnce() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        // The module runs as the user here: its lines reach the capture only when it may connect.
        chmod(SyslogCapture.path, 0o666)
        // An account no other test uses: the suites log to the same /dev/log in parallel.
        let alice = try TestUsers.ensure("puff-it-logonce")
        let stage = try Stage()
        #expect(try stage.fixture.enroll(alice, "604917").status == 0)
        _ = capture.drain()
        #expect(try stage.authenticate(as: alice, replies: ["111333"]).status == PAMCode.authError)
        #expect(try stage.authenticate(as: alice, replies: ["604917"]).status == PAMCode.success)
        let lines = capture.drain().filter { $0.contains(alice) }
        let attempts = lines.filter { $0.contains("user \(alice): authentication failure (1 in a row)") }
        #expect(attempts.count == 1 && attempts.allSatisfy { $0.contains("puff-check[") }, "\(lines)")
        // The module's own lines are there (it may log), its fail2ban line once.
        #expect(lines.filter { $0.contains("pam_puff(puff-test:auth): authentication failure; logname=") && $0.hasSuffix("user=\(alice)") }
                .count == 1, "\(lines)")
        #expect(lines.filter { $0.contains("user \(alice): passcode accepted") }.count == 1, "\(lines)")
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
        // The query reports the count it read (the same read that decided the lock).
        let query = try stage.runAs(alice, [stage.helper, "query"])
        #expect(query.output.contains("lock seconds ") && query.output.contains("failures 3\n"), "\(query.output)")
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
        let direct = try stage.runAs(alice, [stage.helper, "login"], input: "6\n271828")
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
        #expect(try stage.runAs(alice, [stage.helper, "login", "--user", bob], input: "6\n271828").status == 2)
        let reset = try stage.runAs(alice, [stage.enroll, "reset", "--user", alice])
        #expect(reset.status == 77, "\(reset.errors)")
        #expect(try stage.fixture.failures(alice) == 1)
        #expect(try stage.fixture.failures(bob) == 0)
    }

    /// The caller's own account is recognised by its name's bytes: a PAM user name that Swift's
    /// `==` calls equal to the caller's (the Kelvin sign U+212A decomposes to "K") is another
    /// name to libpam and NSS, so it is refused before any prompt like any other user's (the
    /// module compared the names with `==` before, prompted, and the caller's own passcode
    /// then authenticated a PAM user that is no account).
    @Test func aNameCanonicallyEquivalentToTheCallersIsAnotherUser() throws {
        let kim = try TestUsers.ensure("puff-it-Kim")
        let stage = try Stage()
        #expect(try stage.fixture.enroll(kim, "604917").status == 0)
        let lookalike = "puff-it-\u{212A}im"
        #expect(lookalike == kim && !lookalike.utf8.elementsEqual(kim.utf8), "the premise")
        let refused = try stage.authenticate(as: kim, user: lookalike, replies: ["604917"])
        #expect(refused.status == PAMCode.authError, "\(refused.output) \(refused.errors)")
        #expect(!refused.lines.contains { $0.hasPrefix("PROMPT") }, "\(refused.output)")
        // The account itself, by its own bytes, still logs in.
        let own = try stage.authenticate(as: kim, replies: ["604917"])
        #expect(own.status == PAMCode.success, "\(own.output) \(own.errors)")
        #expect(try stage.fixture.failures(kim) == 0)
    }

    /// The service calls (the module as root in fleet mode) name a user and carry module
    /// arguments, so they serve a caller whose real uid is root only: an ordinary user who runs
    /// the setuid helper with them, naming another user and an argument that would lift the
    /// lockout, is refused before anything is read or counted.
    @Test func theServiceCallsServeOnlyARootCaller() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let bob = try TestUsers.ensure("puff-it-bob")
        let stage = try Stage()
        try stage.fixture.enroll(bob, "604917")
        /// Fields as the helper reads them: each its length line, then its bytes.
        func request(_ fields: [String]) -> String { fields.map { "\($0.utf8.count)\n\($0)" }.joined() }
        let origin = ["=puff-test", "=pts/9", "=192.0.2.7", "="]
        for (operation, fields) in [("service-login", [bob, "1", "deny=0"] + origin + ["000000"]),
                                    ("service-take-back", [bob, "1", "deny=0", "x", "y", "local"])] {
            let refused = try stage.runAs(alice, [stage.helper, operation], input: request(fields))
            #expect(refused.status == 2 && refused.output.isEmpty, "\(operation): \(refused.status) \(refused.output)")
        }
        #expect(try stage.fixture.failures(bob) == 0)
        // Root (the module's case) is served, with the module's arguments. A login without an
        // attempt: the state as one frame, and nothing counted when the input ends.
        let store = ["3", "dir=\(stage.fixture.etc)", "state_dir=\(stage.fixture.state)", "conf=\(stage.fixture.conf)"]
        let state = try run(stage.helper, ["service-login"], input: request([bob] + store + origin))
        #expect(state.status == 2 && state.output.range(of: #"^\d+\npuff-check 1\noutcome state\n[^\n]*\n[^\n]*\nfailures 0\n$"#,
                                                         options: .regularExpression) != nil, "\(state.output)")
        // The origin (four frames, each "=" and the item, for the failure history), then the
        // secret: the answer is the state, then the report and the counted failure (before,
        // after, where), framed.
        let login = try run(stage.helper, ["service-login"], input: request([bob] + store + origin + ["000000"]))
        #expect(login.status == 1, "\(login.output)")
        #expect(login.output.range(of: #"^\d+\npuff-check 1\noutcome state\n"#, options: .regularExpression) != nil, "\(login.output)")
        #expect(login.output.range(of: #"\d+\npuff-check 1\noutcome failure\n"#, options: .regularExpression) != nil, "\(login.output)")
        #expect(login.output.hasSuffix("5\nlocal"), "\(login.output)")
        #expect(!login.output.contains("000000"))
        #expect(try stage.fixture.failures(bob) == 1)
        let history = try #require(try stage.fixture.status(bob)["recent_failures"] as? [[String: Any]])
        #expect(history.count == 1 && history[0]["service"] as? String == "puff-test" && history[0]["rhost"] as? String == "192.0.2.7",
                "\(history)")
        // A malformed request is refused unread, in words in the helper's log, and counts nothing.
        let capture = SyslogCapture()
        _ = capture?.drain()
        for fields in [[bob, "x"], [bob, "4"] + store, [bob] + store + origin + ["000000", "extra"], [""] + store,
                       [bob] + store + ["000000"], [bob] + store + ["puff-test"] + origin.dropFirst() + ["000000"],
                       [bob] + store + origin.dropLast() + ["=" + String(repeating: "r", count: 257), "000000"],
                       [bob] + store + origin + [String(repeating: "7", count: 65_537)]] {
            let malformed = try run(stage.helper, ["service-login"], input: request(fields))
            #expect(malformed.status == 2, "\(fields): \(malformed.status)")
        }
        let truncated = try run(stage.helper, ["service-login"], input: request([bob] + store + origin) + "6\n0000")
        #expect(truncated.status == 2)
        #expect(try stage.fixture.failures(bob) == 1)
        if let capture {
            let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("malformed request") }
            for reason in ["the argument count is not valid", "the input ends before the origin item is whole", "bytes follow the last field",
                           "the user name is empty", "the origin item is not valid", "the origin item is longer than 257 bytes",
                           "the secret is longer than 65536 bytes", "the input ends before the secret is whole"] {
                #expect(lines.contains { $0.contains(reason) }, "\(reason): \(lines)")
            }
        }
    }

    @Test func theHelperTrustsNothingFromItsCaller() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try Stage()
        try stage.fixture.enroll(alice, "604917")
        // An environment that would redirect a careless program changes nothing.
        let poisoned = try stage.runAs(alice, ["/usr/bin/env", "HOME=/tmp", "TMPDIR=/tmp", "LD_PRELOAD=/nonexistent.so",
                                               "PUFF_DIR=/tmp", "SWIFT_BACKTRACE=enable=yes", stage.helper, "login"],
                                       input: "6\n604917")
        #expect(poisoned.status == 0, "\(poisoned.output) \(poisoned.errors)")
        #expect(poisoned.output.contains("outcome success"))
        // And it opens exactly the same files with a poisoned environment as with a clean one
        // (strace, as root, on `query` for root, which has no record: nothing is written).
        // The loader's own variables (LD_*) are left out: traced as root there is no setuid
        // transition, and in a real one the kernel's secure mode makes ld.so ignore them.
        let clean = try Self.openedFiles(stage.helper, environment: ["PATH": "/usr/bin:/bin"], trace: stage.fixture.root + "/clean")
        let dirty = try Self.openedFiles(stage.helper, environment: [
            "PATH": "/tmp:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "XDG_CONFIG_HOME": "/tmp", "LANG": "xx_XX.UTF-8",
            "LC_ALL": "xx_XX.UTF-8", "PUFF_DIR": "/tmp", "PUFF_CONF": "/tmp/puff.conf", "SWIFT_BACKTRACE": "enable=yes",
        ], trace: stage.fixture.root + "/dirty")
        #expect(clean.contains("puff.conf"), "\(clean)")
        #expect(clean == dirty, "clean: \(clean)\npoisoned: \(dirty)")
        // Oversized input is refused unread and not counted.
        let huge = try stage.runAs(alice, [stage.helper, "login"], input: "70000\n" + String(repeating: "7", count: 70_000))
        #expect(huge.status == 2)
        // Unframed input, an empty frame and no input at all: no attempt either.
        for input in [String(repeating: "7", count: 6), "0\n", ""] {
            #expect(try stage.runAs(alice, [stage.helper, "login"], input: input).status == 2)
        }
        #expect(try stage.fixture.failures(alice) == 0)
        // Closed standard descriptors: the helper reopens them on /dev/null and still answers.
        let closed = try stage.runAs(alice, ["/bin/sh", "-c", "exec \(stage.helper) query 2>&-"])
        #expect(closed.status == 0)
        #expect(closed.output.hasPrefix("puff-check 1\noutcome state\n"))
    }

    @Test func theHelperLoadsNothingFromBesideItselfOrTheToolchain() throws {
        let dynamic = try run("/usr/bin/readelf", ["-d", Self.helperBinary])
        #expect(dynamic.status == 0, "\(dynamic.errors)")
        #expect(!dynamic.output.contains("RUNPATH") && !dynamic.output.contains("RPATH"), "\(dynamic.output)")
        #expect(!dynamic.output.contains("libswift"), "\(dynamic.output)")
    }

    /// The paths `helper query` opens (openat), traced with strace under `environment`.
    static func openedFiles(_ helper: String, environment: [String: String], trace: String) throws -> [String] {
        _ = try Child(["/usr/bin/strace", "-f", "-qq", "-e", "trace=openat,open", "-o", trace, helper, "query"],
                      environment: environment).run()
        let text = try String(contentsOfFile: trace, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let open = line.range(of: "\""), let close = line[open.upperBound...].range(of: "\"") else { return nil }
            return String(line[open.upperBound..<close.lowerBound])
        }
    }

    /// An account with a known system password, set only in the stage's copy of /etc/shadow,
    /// which `runAs` mounts at /etc/shadow in its namespace: no other file ever holds it.
    func userWithPassword(_ stage: Stage) throws -> String {
        let dave = try TestUsers.ensure("puff-it-dave")
        let hash = try run("/usr/bin/openssl", ["passwd", "-6", "-stdin"], input: "Sys-pass-4821\n")
        #expect(hash.status == 0, "\(hash.errors)")
        let password = hash.output.trimmingCharacters(in: .whitespacesAndNewlines)
        // The copy was taken before dave existed: his line is replaced, or added.
        let shadow = try String(contentsOfFile: stage.shadow, encoding: .utf8)
        var lines = shadow.split(separator: "\n").map(String.init).filter { !$0.hasPrefix(dave + ":") }
        lines.append("\(dave):\(password):20000:0:99999:7:::")
        try stage.fixture.write(stage.shadow, lines.joined(separator: "\n") + "\n", mode: 0o640)
        return dave
    }

    /// Issue 31: the helper's proof for a self-service change read the files store even in
    /// fleet mode, where it holds no record: a user whose passcode lives in the directory was
    /// asked for the system password instead, and a change proven with it was stored. Now the
    /// proof is read from the subject the fleet store resolved: the Puff passcode or nothing.
    @Test func inFleetModeAChangeNeedsThePasscodeTheDirectoryHolds() throws {
        let directory = try FleetDirectory()
        let key = newFleetKey()
        let stage = try Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\nbackend = ldap\n"
                              + "ldap_base = \(FleetDirectory.base)\nldap_uri = \(directory.ldapsURI)\n"
                              + "ldap_ca_file = \(directory.caFile)\nldap_bind_dn = cn=host1,ou=hosts,dc=puff,dc=test\n"
                              + "ldap_bind_pw_file = /etc/puff/ldap.secret\n"
                              + "fleet_key = /etc/puff/fleet.key\nfleet_host = host1\nldap_timeout = 5\n"
                              + "ldap_library = \(Artefacts.ldapLibrary)\n")
        // A host binds with its own entry and password, as a fleet host does.
        try stage.fixture.write(stage.fixture.etc + "/ldap.secret", "host1-secret\n", mode: 0o600)
        try key.write(to: URL(fileURLWithPath: stage.fixture.etc + "/fleet.key"))
        chmod(stage.fixture.etc + "/fleet.key", 0o600)
        let dave = try userWithPassword(stage)
        try directory.addUser(dave)
        let enrolled = try stage.runAs("root", [stage.enroll, "passcode", "--user", dave, "--stdin"], input: "604917\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        #expect(try directory.binaryValue(dave, "puffRecord") != nil)
        func selfEnroll(_ input: String) throws -> Run {
            try stage.runAs(dave, [stage.enroll, "passcode", "--stdin", "--helper", stage.helper], input: input)
        }
        // The system password is no proof while a Puff passcode is enrolled (in the directory).
        let withPassword = try selfEnroll("Sys-pass-4821\n135790\n")
        #expect(withPassword.status != 0, "a change proven with the system password: \(withPassword.output)")
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)
        #expect(try stage.authenticate(as: dave, replies: ["135790"]).status == PAMCode.authError)
        // The passcode is.
        let withPasscode = try selfEnroll("604917\n135790\n")
        #expect(withPasscode.status == 0, "\(withPasscode.errors)")
        #expect(try stage.authenticate(as: dave, replies: ["135790"]).status == PAMCode.success)
    }

    @Test func theSystemPasswordLivesOnlyInTheStagesShadowCopy() throws {
        let stage = try Stage()
        let dave = try userWithPassword(stage)
        // What pam_unix reads in the namespace is the copy, with dave's password...
        let inside = try stage.runAs("root", ["/usr/bin/getent", "shadow", dave])
        #expect(inside.status == 0 && inside.output.hasPrefix(dave + ":$6$"), "\(inside.output) \(inside.errors)")
        let service = try stage.runAs("root", ["/bin/cat", "/etc/pam.d/puff-enroll"])
        #expect(service.output == "auth required pam_unix.so\naccount required pam_unix.so\n")
        // ...and the suite's own /etc/shadow (itself a private copy of the machine's) has none.
        let outside = try run("/usr/bin/getent", ["shadow", dave])
        #expect(outside.status == 0 && !outside.output.contains("$6$"), "\(outside.output)")
    }

    private func selfEnroll(_ stage: Stage, _ user: String, _ arguments: [String], input: String) throws -> Run {
        try stage.runAs(user, [stage.enroll] + arguments + ["--stdin", "--helper", stage.helper], input: input)
    }

    /// Issue 33 through the caller's own helper (a screen locker, no root): with `keyring = yes`
    /// the copy kept at self-enrollment's password proof is opened by `login` after a passcode
    /// success and handed on as PAM_AUTHTOK; a wrong passcode and a gesture hand on nothing.
    /// Before, nothing was released on this path.
    @Test func aLockerUnlockWithThePasscodeHandsOnTheSystemPassword() throws {
        let stage = try Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\nkeyring = yes\n")
        let dave = try userWithPassword(stage)
        let enrolled = try selfEnroll(stage, dave, ["passcode"], input: "Sys-pass-4821\n604917\n")
        #expect(enrolled.status == 0, "\(enrolled.output) \(enrolled.errors)")
        let seen = stage.bin + "/seen-authtok", probe = stage.bin + "/probe.sh"
        try stage.fixture.write(probe, "#!/bin/sh\ncat > \"$1\"\n", mode: 0o755)
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-locker", """
            auth requisite \(stage.bin)/pam_puff.so nodelay helper=\(stage.helper)
            auth optional pam_exec.so quiet expose_authtok \(probe) \(seen)
            account required pam_permit.so

            """, mode: 0o644)
        func unlock(_ reply: String) throws -> (Run, String) {
            try stage.fixture.write(seen, "", mode: 0o666)
            let result = try stage.runAs(dave, [stage.harness, "--confdir", stage.fixture.pamDirectory, "--service", "puff-locker",
                                                "--user", dave, "--reply", reply])
            return (result, (try? String(contentsOfFile: seen, encoding: .utf8)) ?? "")
        }
        let (right, token) = try unlock("604917")
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        #expect(token == "Sys-pass-4821")
        let (wrong, wrongToken) = try unlock("111333")
        #expect(wrong.status == PAMCode.authError)
        #expect(wrongToken.isEmpty)
        try GestureLoginTests().enrolled(stage.fixture, dave)
        let (gesture, gestureToken) = try unlock(GestureLoginTests.wire(GestureLoginTests.genuine))
        #expect(gesture.status == PAMCode.success, "\(gesture.output) \(gesture.errors)")
        #expect(gestureToken.hasPrefix("puff-gesture:"))
    }

    @Test func anOrdinaryUserEnrollsAndChangesTheirOwnCredentials() throws {
        let stage = try Stage()
        let dave = try userWithPassword(stage)
        // No Puff passcode yet: the proof is the system password; a wrong one changes nothing and counts.
        let wrongProof = try selfEnroll(stage, dave, ["passcode"], input: "not-my-password\n604917\n")
        #expect(wrongProof.status == 3, "\(wrongProof.errors)")
        #expect(wrongProof.errors.contains("the proof of identity is wrong"))
        #expect(try stage.fixture.failures(dave) == 1)
        let first = try selfEnroll(stage, dave, ["passcode"], input: "Sys-pass-4821\n604917\n")
        #expect(first.status == 0, "\(first.output) \(first.errors)")
        // The right system password took back only its own attempt.
        #expect(try stage.fixture.failures(dave) == 1)
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)
        #expect(try stage.fixture.failures(dave) == 0)

        // Now the proof is the Puff passcode; the system password no longer works.
        #expect(try selfEnroll(stage, dave, ["passcode"], input: "Sys-pass-4821\n135790\n").status == 3)
        let changed = try selfEnroll(stage, dave, ["passcode"], input: "604917\n135790\n")
        #expect(changed.status == 0, "\(changed.errors)")
        #expect(try stage.authenticate(as: dave, replies: ["135790"]).status == PAMCode.success)
        // A weak new passcode is refused before anything is sent.
        #expect(try selfEnroll(stage, dave, ["passcode"], input: "135790\n123456\n").status == 3)

        // The gesture: proved with the passcode, never with a gesture.
        let gesture = GestureLoginTests.wire(GestureLoginTests.genuine)
        let picture = ["gesture", "--picture", stage.bin + "/picture.png"]
        let byGesture = try selfEnroll(stage, dave, picture, input: "\(gesture)\n\(gesture)\n\(gesture)\n")
        #expect(byGesture.status == 3)
        #expect(byGesture.errors.contains("the current Puff passcode is required"), "\(byGesture.errors)")
        let drawn = try selfEnroll(stage, dave, picture, input: "135790\n\(gesture)\n\(gesture)\n")
        #expect(drawn.status == 0, "\(drawn.errors)")
        let login = try stage.authenticate(as: dave, replies: [gesture])
        #expect(login.status == PAMCode.success, "\(login.output)")
        #expect(login.lines.first == "PROMPT echo-off Puff passcode or gesture [6 digits]: ")
        // The picture is in the store, readable by helpers running as the user.
        #expect(try stage.runAs(dave, ["/usr/bin/test", "-r", "/etc/puff/pictures/\(dave)"]).status == 0)

        let status = try stage.runAs(dave, [stage.enroll, "status", "--helper", stage.helper])
        #expect(status.status == 0, "\(status.errors)")
        #expect(status.output.contains("the next login accepts passcode or gesture"), "\(status.output)")
    }

    /// Issue 27 item 5: a user may not weaken their own passcode below 6 digits through the
    /// helper unless the administrator set `min_passcode`; nothing is changed or counted.
    @Test func anOrdinaryUserCannotLowerTheirPasscodeBelowSixDigits() throws {
        let stage = try Stage()
        let dave = try userWithPassword(stage)
        #expect(try stage.fixture.enroll(dave, "604917").status == 0)
        let record = stage.fixture.etc + "/users/" + dave
        let before = try String(contentsOfFile: record, encoding: .utf8)
        for type in ["digits4", "numeric"] {
            let lowered = try selfEnroll(stage, dave, ["passcode", "--type", type], input: "604917\n5839\n")
            #expect(lowered.status == 3, "\(type): \(lowered.output) \(lowered.errors)")
            #expect(lowered.errors.contains("fewer than 6 digits"), "\(lowered.errors)")
            #expect(try String(contentsOfFile: record, encoding: .utf8) == before)
        }
        #expect(try stage.fixture.failures(dave) == 0)
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)

        // The administrator allows 4 digits explicitly: then the user may choose them.
        let allowing = try Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\nmin_passcode = digits4\n")
        let erin = try userWithPassword(allowing)
        #expect(try allowing.fixture.enroll(erin, "604917").status == 0)
        let allowed = try selfEnroll(allowing, erin, ["passcode", "--type", "digits4"], input: "604917\n5839\n")
        #expect(allowed.status == 0, "\(allowed.errors)")
        #expect(try allowing.authenticate(as: erin, replies: ["5839"]).status == PAMCode.success)
    }

    /// Issue 32, item 7: self-service checks what it can before it asks for more: a type below
    /// the policy is refused before anything is read, a wrong system password before the new
    /// passcode (or the gesture) is asked for. Standard input holds only what was asked.
    @Test func selfServiceChecksBeforeItAsks() throws {
        let stage = try Stage()
        let dave = try userWithPassword(stage)
        let lowType = try selfEnroll(stage, dave, ["passcode", "--type", "digits4"], input: "")
        #expect(lowType.status == 3, "\(lowType.errors)")
        #expect(lowType.errors.contains("fewer than 6 digits"), "\(lowType.errors)")
        #expect(!lowType.errors.contains("ended"), "\(lowType.errors)")
        #expect(try stage.fixture.failures(dave) == 0)
        let wrongProof = try selfEnroll(stage, dave, ["passcode"], input: "not-my-password\n")
        #expect(wrongProof.status == 3, "\(wrongProof.errors)")
        #expect(wrongProof.errors.contains("the proof of identity is wrong"), "\(wrongProof.errors)")
        #expect(try stage.fixture.failures(dave) == 1)
        let wrongGestureProof = try selfEnroll(stage, dave, ["gesture", "--picture", stage.bin + "/picture.png"],
                                               input: "not-my-password\n")
        #expect(wrongGestureProof.status == 3, "\(wrongGestureProof.errors)")
        #expect(wrongGestureProof.errors.contains("the proof of identity is wrong"), "\(wrongGestureProof.errors)")
        #expect(try stage.fixture.failures(dave) == 2)
        // The right proof still enrolls (checked once before the new passcode, once with it).
        let enrolled = try selfEnroll(stage, dave, ["passcode"], input: "Sys-pass-4821\n604917\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)
    }

    /// The self-service client reads the helper's refusals through the shared mapping: a
    /// proof refused while locked says so, changes nothing, and the state reads back locked.
    @Test func aSelfServiceProofWhileLockedIsRefusedAsLocked() throws {
        let stage = try Stage()  // deny = 3
        let dave = try userWithPassword(stage)
        #expect(try stage.fixture.enroll(dave, "604917").status == 0)
        let record = stage.fixture.etc + "/users/" + dave
        let before = try String(contentsOfFile: record, encoding: .utf8)
        for (index, wrong) in ["111111", "222222", "333333"].enumerated() {
            let refused = try selfEnroll(stage, dave, ["passcode"], input: "\(wrong)\n135790\n")
            #expect(refused.status == 3, "\(refused.errors)")
            #expect(refused.errors.contains("the proof of identity is wrong"), "\(refused.errors)")
            #expect(try stage.fixture.failures(dave) == index + 1)
        }
        let locked = try selfEnroll(stage, dave, ["passcode"], input: "604917\n135790\n")
        #expect(locked.status == 3)
        #expect(locked.errors.contains("locked after too many failed attempts"), "\(locked.errors)")
        #expect(try String(contentsOfFile: record, encoding: .utf8) == before)
        #expect(try stage.fixture.failures(dave) == 3)
        let status = try stage.runAs(dave, [stage.enroll, "status", "--json", "--helper", stage.helper])
        #expect(status.status == 0, "\(status.errors)")
        #expect(status.output.contains("\"failures\": 3, \"locked\": true"), "\(status.output)")
    }

    /// A screen locker whose stack falls back to the password (common-auth with the `puff`
    /// profile): the system password typed at Puff's prompt is checked by the helper itself
    /// and its failure taken back, however often, even at the lockout's edge; a wrong one
    /// counts once, like any wrong answer.
    @Test func theSystemPasswordAtThePromptOfAScreenLockerIsNoPuffFailure() throws {
        let stage = try Stage()  // deny = 3
        let dave = try userWithPassword(stage)
        try stage.fixture.enroll(dave, "604917")
        // The locker's stack as pam-auth-update writes it: Puff, else pam_unix with the same reply.
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-fallback", """
            auth [success=2 default=ignore] \(stage.bin)/pam_puff.so nodelay nullok helper=\(stage.helper)
            auth [success=1 default=ignore] pam_unix.so nodelay try_first_pass
            auth requisite pam_deny.so
            auth required pam_permit.so
            account required pam_permit.so

            """, mode: 0o644)
        func unlock(_ reply: String) throws -> Run {
            try stage.runAs(dave, [stage.harness, "--confdir", stage.fixture.pamDirectory, "--service", "puff-fallback",
                                   "--user", dave, "--reply", reply])
        }
        #expect(try stage.fixture.failures(dave) == 0)
        // Two wrong answers: counted (deny = 3, so one more would lock).
        for _ in 1...2 { #expect(try unlock("111333").status == PAMCode.authError) }
        #expect(try stage.fixture.failures(dave) == 2)
        // Five unlocks with the system password: each logs in through pam_unix and none counts.
        for round in 1...5 {
            let unlocked = try unlock("Sys-pass-4821")
            #expect(unlocked.status == PAMCode.success, "round \(round): \(unlocked.output) \(unlocked.errors)")
            #expect(try stage.fixture.failures(dave) == 2, "round \(round)")
        }
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)
        #expect(try stage.fixture.failures(dave) == 0)
        // A wrong system password is a wrong answer, counted once.
        #expect(try unlock("Sys-pass-0000").status == PAMCode.authError)
        #expect(try stage.fixture.failures(dave) == 1)
    }

    @Test func anOrdinaryUserCannotEnrollAnotherUserOrChooseTheStore() throws {
        let stage = try Stage()
        let dave = try userWithPassword(stage)
        let alice = try TestUsers.ensure("puff-it-alice")
        try stage.fixture.enroll(alice, "604917")
        let other = try selfEnroll(stage, dave, ["passcode", "--user", alice], input: "Sys-pass-4821\n135790\n")
        #expect(other.status == 77)
        let store = try selfEnroll(stage, dave, ["passcode", "--dir", "/tmp"], input: "Sys-pass-4821\n135790\n")
        #expect(store.status == 77)
        for command in [["reset", "--user", dave], ["lock", "--user", dave], ["remove", "--user", alice],
                        ["show-gesture", "--user", dave, "--output", "/tmp/x.svg"]] {
            #expect(try stage.runAs(dave, [stage.enroll] + command).status == 77, "\(command)")
        }
        // A request straight to the helper names no user: it always acts on the caller.
        #expect(try stage.authenticate(as: alice, replies: ["604917"]).status == PAMCode.success)
        #expect(try stage.runAs(dave, [stage.helper, "enroll-passcode", alice], input: "").status == 2)
    }

    /// `keyring = yes` through the setuid helper: a self-enrollment proven with the system
    /// password keeps it sealed to the new passcode; a change proven with that passcode seals
    /// it again to the new one, which a root login (the module's own process) then hands on.
    @Test func aSelfEnrollmentKeepsThePasswordItProvedAndAChangeSealsItAgain() throws {
        let stage = try Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\nkeyring = yes\n")
        let dave = try userWithPassword(stage)
        let copy = stage.fixture.etc + "/keyring/" + dave
        #expect(try selfEnroll(stage, dave, ["passcode"], input: "Sys-pass-4821\n604917\n").status == 0)
        let first = try String(contentsOfFile: copy, encoding: .utf8)
        #expect(first.hasPrefix("puff-keyring 1\n"), "\(first)")
        #expect(!first.contains("Sys-pass-4821"))
        #expect(try selfEnroll(stage, dave, ["passcode"], input: "604917\n135790\n").status == 0)
        let second = try String(contentsOfFile: copy, encoding: .utf8)
        #expect(second != first)
        let status = try run(Artefacts.enroll, ["keyring", "status", "--user", dave] + stage.fixture.storeArguments)
        #expect(status.output.contains("is kept, sealed to the passcode, since") && !status.output.contains("stale"),
                "\(status.output) \(status.errors)")
        // The new passcode hands the password on (pam_exec's expose_authtok as the witness).
        let seen = stage.fixture.root + "/seen"
        try stage.fixture.write(stage.fixture.root + "/probe.sh", "#!/bin/sh\ncat > \"$1\"\n", mode: 0o755)
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-keyring", """
            auth required \(Artefacts.module) dir=\(stage.fixture.etc) state_dir=\(stage.fixture.state) conf=\(stage.fixture.conf) nodelay
            auth optional pam_exec.so quiet expose_authtok \(stage.fixture.root)/probe.sh \(seen)

            """, mode: 0o644)
        let login = try stage.fixture.authenticate(dave, replies: ["135790"], service: "puff-keyring")
        #expect(login.lines.last == "RESULT 0 Success", "\(login.output)")
        #expect((try? String(contentsOfFile: seen, encoding: .utf8)) == "Sys-pass-4821")
        let since = try #require(try stage.fixture.status(dave)["keyring_since"] as? Int)
        #expect(abs(since - Int(Date().timeIntervalSince1970)) < 600)
        let shown = try run(Artefacts.enroll, ["status", "--user", dave] + stage.fixture.storeArguments)
        #expect(shown.lines.contains { $0.hasPrefix("Keyring: \(dave)'s system password is kept") }, "\(shown.output)")
        // `keyring forget` drops it (and says so when there is none).
        let forget = try run(Artefacts.enroll, ["keyring", "forget", "--user", dave] + stage.fixture.storeArguments)
        #expect(forget.status == 0, "\(forget.errors)")
        #expect(!FileManager.default.fileExists(atPath: copy))
        #expect(try stage.fixture.status(dave)["keyring_since"] is NSNull)
        #expect(try run(Artefacts.enroll, ["keyring", "forget", "--user", dave] + stage.fixture.storeArguments).status == 4)
        // An administrator's change knows no old passcode: a copy kept meanwhile goes.
        #expect(try selfEnroll(stage, dave, ["passcode"], input: "135790\n246801\n").status == 0)
        try stage.fixture.write(copy, second, mode: 0o600)
        #expect(try stage.fixture.enroll(dave, "583920").status == 0)
        #expect(!FileManager.default.fileExists(atPath: copy))
    }
}
