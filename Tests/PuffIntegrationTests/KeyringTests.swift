import Foundation
import Testing

/// The login keyring after a Puff login (`keyring = yes`, issue 33), through the real thing:
/// Debian's pam_gnome_keyring (unpacked from libpam-gnome-keyring into build/, never installed,
/// so its postinst never runs pam-auth-update on this machine) in a private PAM stack shaped like
/// Debian 12's lightdm file (common-auth's lines, then `auth optional pam_gnome_keyring.so`,
/// `session optional pam_gnome_keyring.so auto_start`), a real gnome-keyring-daemon started by
/// that module as the user, on a private D-Bus session bus this test starts and stops; the
/// login collection's `Locked` property is read over the Secret Service API with busctl.
/// pam_exec's `expose_authtok` stands after Puff as a second witness of the token handed on
/// (`seteuid`: as root also under su run by the user, whose real uid is theirs).
@Suite(.serialized)
struct KeyringTests {
    static let passcode = "604917"
    static let password = "Sys-Pass-4217"
    static let newPassword = "New-Pass-8361"

    static var gnomeKeyringModule: String {
        ProcessInfo.processInfo.environment["PUFF_GNOME_KEYRING_PAM"]
            ?? Artefacts.repository.appendingPathComponent("build/keyring/lib/x86_64-linux-gnu/security/pam_gnome_keyring.so").path
    }

    /// A user with a home under the fixture (the daemon keeps `~/.local/share/keyrings` there),
    /// a system password, a private session bus and a runtime directory.
    final class Desktop {
        let fixture: Fixture
        let name: String
        let uid: uid_t
        let gid: gid_t
        var home: String { fixture.root + "/home" }
        var runtime: String { fixture.root + "/run" }
        var bus: String { "unix:path=" + runtime + "/bus" }
        var seen: String { fixture.root + "/seen-authtok" }
        private var busDaemon: RealClientTests.Spawned?

        init(_ fixture: Fixture) throws {
            self.fixture = fixture
            name = "puff-kr-" + String(UInt32.random(in: 0x100000...0xffffff), radix: 16)
            try Hermetic.addAccount(name, ["--system", "--home-dir", fixture.root + "/home", "--create-home", "--shell", "/bin/sh"])
            let entry = try #require(getpwnam(name))
            (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
            #expect(try Hermetic.setPassword(name, KeyringTests.password).status == 0)
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            chown(runtime, uid, gid)
            chmod(runtime, 0o700)
            busDaemon = try RealClientTests.Spawned(asUser(["/usr/bin/dbus-daemon", "--session", "--nofork", "--address=" + bus]),
                                                    log: fixture.root + "/dbus.log")
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: runtime + "/bus") && Date() < deadline { usleep(20_000) }
        }

        deinit {
            stopKeyringDaemon()
            busDaemon?.stop()
            Hermetic.removeAccount(name)
        }

        /// `arguments` run as the user with the session's environment only.
        func asUser(_ arguments: [String]) -> [String] {
            ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--init-groups", "/usr/bin/env", "-i",
             "HOME=" + home, "XDG_RUNTIME_DIR=" + runtime, "DBUS_SESSION_BUS_ADDRESS=" + bus, "PATH=/usr/bin:/bin"] + arguments
        }

        /// What a display manager puts in the PAM environment before the session.
        var pamEnvironment: [String] {
            ["--env", "HOME=" + home, "--env", "XDG_RUNTIME_DIR=" + runtime, "--env", "DBUS_SESSION_BUS_ADDRESS=" + bus]
        }

        /// The lightdm-shaped stack: Puff's README lines, pam_exec's witness, pam_gnome_keyring.
        func writeStack() throws {
            let module = "\(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay "
                + "helper=\(Artefacts.helper)"
            let probe = fixture.root + "/probe.sh"
            try fixture.write(probe, "#!/bin/sh\ncat > \"$1\"\n", mode: 0o755)
            try fixture.write(fixture.pamDirectory + "/puff-desktop", """
                auth     [success=2 default=ignore]   \(module) nullok_prompt
                auth     [success=1 default=ignore]   pam_unix.so nullok try_first_pass
                auth     requisite                    pam_deny.so
                auth     required                     pam_permit.so
                auth     optional                     \(module) authsucc
                auth     optional                     pam_exec.so quiet seteuid expose_authtok \(probe) \(seen)
                auth     optional                     \(KeyringTests.gnomeKeyringModule)
                account  required                     pam_permit.so
                session  optional                     \(KeyringTests.gnomeKeyringModule) auto_start
                password [success=1 default=ignore]   pam_unix.so obscure yescrypt
                password requisite                    pam_deny.so
                password required                     pam_permit.so
                password optional                     \(module)
                password optional                     \(KeyringTests.gnomeKeyringModule)

                """, mode: 0o644)
        }

        /// A display manager's login: authenticate, then open and close the session.
        func login(_ reply: String) throws -> Run {
            try? FileManager.default.removeItem(atPath: seen)
            return try fixture.authenticate(name, replies: [reply], extra: ["--op", "login"] + pamEnvironment,
                                            service: "puff-desktop")
        }

        /// The token pam_exec saw after Puff's lines (nil: it did not run).
        var tokenSeen: String? { try? String(contentsOfFile: seen, encoding: .utf8) }

        /// The login collection's `Locked` property over the Secret Service API, after the
        /// session's own start of the secrets component (what the desktop's autostart does);
        /// nil when no daemon answers.
        func loginKeyringLocked() throws -> Bool? {
            _ = try run("/usr/bin/setpriv", Array(asUser(["/usr/bin/gnome-keyring-daemon", "--start", "--components=secrets"]).dropFirst()))
            let reply = try run("/usr/bin/setpriv", Array(asUser(["/usr/bin/busctl", "--user", "--timeout=5", "get-property",
                "org.freedesktop.secrets", "/org/freedesktop/secrets/collection/login",
                "org.freedesktop.Secret.Collection", "Locked"]).dropFirst()))
            switch reply.output.trimmingCharacters(in: .whitespacesAndNewlines) {
            case "b true": return true
            case "b false": return false
            default: return nil
            }
        }

        /// Whether a gnome-keyring-daemon owns the Secret Service name on this bus.
        var keyringDaemonPID: pid_t? {
            guard let reply = try? run("/usr/bin/setpriv", Array(asUser(["/usr/bin/busctl", "--user", "--timeout=5", "call",
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s",
                "org.freedesktop.secrets"]).dropFirst())), reply.status == 0 else { return nil }
            let fields = reply.output.split(separator: " ")
            return fields.count == 2 ? pid_t(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) : nil
        }

        /// Ends the session's daemon (the next login starts a new one, as after a logout).
        func stopKeyringDaemon() {
            guard let pid = keyringDaemonPID, pid > 1 else { return }
            kill(pid, SIGTERM)
            for _ in 0..<250 where kill(pid, 0) == 0 { usleep(20_000) }
        }

        /// Every file under the store and the state directory, as bytes.
        func storeFiles() throws -> [(String, Data)] {
            var files: [(String, Data)] = []
            for directory in [fixture.etc, fixture.state] {
                guard let walker = FileManager.default.enumerator(atPath: directory) else { continue }
                for case let path as String in walker {
                    let full = directory + "/" + path
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                        files.append((full, try Data(contentsOf: URL(fileURLWithPath: full))))
                    }
                }
            }
            return files
        }
    }

    @Test func aPasscodeLoginUnlocksTheLoginKeyringThatAPasswordLoginKept() throws {
        try #require(FileManager.default.fileExists(atPath: Self.gnomeKeyringModule), "make test unpacks pam_gnome_keyring.so")
        let fixture = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\nkeyring = yes\n")
        let desktop = try Desktop(fixture)
        #expect(try fixture.enroll(desktop.name, Self.passcode).status == 0)
        try desktop.writeStack()

        // The password typed at Puff's prompt: pam_unix accepts it, authsucc keeps it sealed,
        // gnome-keyring makes the login keyring with it (unlocked).
        let first = try desktop.login(Self.password)
        #expect(first.lines.last == "RESULT 0 Success", "\(first.output)")
        #expect(first.lines.contains("SESSION 0 Success"), "\(first.output)")
        #expect(try desktop.loginKeyringLocked() == false)
        desktop.stopKeyringDaemon()
        #expect(FileManager.default.fileExists(atPath: desktop.home + "/.local/share/keyrings/login.keyring"))
        let copy = (try? String(contentsOfFile: fixture.etc + "/keyring/" + desktop.name, encoding: .utf8)) ?? ""
        #expect(copy.hasPrefix("puff-keyring 1\n"), "\(copy)")
        // No password in plain text anywhere in the store or the state directory.
        for (path, bytes) in try desktop.storeFiles() {
            #expect(bytes.range(of: Data(Self.password.utf8)) == nil, "\(path) holds the password")
            #expect(bytes.range(of: Data(Self.passcode.utf8)) == nil, "\(path) holds the passcode")
        }

        // The passcode: the copy opens, the password goes on, the keyring unlocks.
        let passcode = try desktop.login(Self.passcode)
        #expect(passcode.lines.last == "RESULT 0 Success", "\(passcode.output)")
        #expect(desktop.tokenSeen == Self.password)
        #expect(try desktop.loginKeyringLocked() == false)
        desktop.stopKeyringDaemon()

        // A wrong passcode: refused, nothing handed on, no session.
        let wrong = try desktop.login("111111")
        #expect(wrong.lines.last == "RESULT 7 Authentication failure", "\(wrong.output)")
        #expect(!wrong.lines.contains { $0.hasPrefix("SESSION") })
        #expect(desktop.tokenSeen == nil)
        #expect(desktop.keyringDaemonPID == nil)

        // A gesture login hands on nothing: the keyring stays locked.
        try GestureLoginTests().enrolled(fixture, desktop.name)
        let gesture = try desktop.login(GestureLoginTests.wire(GestureLoginTests.genuine))
        #expect(gesture.lines.last == "RESULT 0 Success", "\(gesture.output)")
        #expect(desktop.tokenSeen?.hasPrefix("puff-gesture:") == true)
        #expect(try desktop.loginKeyringLocked() == true)
        desktop.stopKeyringDaemon()

        // `keyring` off: the passcode login hands on the passcode, the keyring stays locked.
        try fixture.write(fixture.conf, "kdf_ops = 1\nkdf_mem_kib = 8\n", mode: 0o600)
        let off = try desktop.login(Self.passcode)
        #expect(off.lines.last == "RESULT 0 Success", "\(off.output)")
        #expect(desktop.tokenSeen == Self.passcode)
        #expect(try desktop.loginKeyringLocked() == true)
        desktop.stopKeyringDaemon()
    }

    /// Through the helper (issue 33's open part): su or sudo run by the user (real uid theirs,
    /// effective uid root) does the store work in the root-started helper (`service-login`),
    /// which now opens the copy after a passcode success and sends the password after its
    /// report; the module hands it on as the files store's path does. Before, nothing was
    /// released on this path (pam_exec saw the passcode).
    @Test func aPasscodeLoginThroughTheHelperHandsOnThePassword() throws {
        try #require(FileManager.default.fileExists(atPath: Self.gnomeKeyringModule), "make test unpacks pam_gnome_keyring.so")
        let fixture = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\nkeyring = yes\n")
        let desktop = try Desktop(fixture)
        #expect(try fixture.enroll(desktop.name, Self.passcode).status == 0)
        try desktop.writeStack()
        // The password login as root keeps the copy.
        let first = try desktop.login(Self.password)
        #expect(first.lines.last == "RESULT 0 Success", "\(first.output)")
        desktop.stopKeyringDaemon()
        func byTheUser(_ reply: String) throws -> Run {
            try? FileManager.default.removeItem(atPath: desktop.seen)
            return try fixture.authenticate(desktop.name, replies: [reply], extra: desktop.pamEnvironment,
                                            service: "puff-desktop", bySelf: true)
        }
        let passcode = try byTheUser(Self.passcode)
        #expect(passcode.lines.last == "RESULT 0 Success", "\(passcode.output)")
        #expect(desktop.tokenSeen == Self.password, "\(String(describing: desktop.tokenSeen))")
        // A wrong passcode and a gesture hand on nothing of the copy.
        let wrong = try byTheUser("111111")
        #expect(wrong.lines.last == "RESULT 7 Authentication failure", "\(wrong.output)")
        #expect(desktop.tokenSeen != Self.password)
        try GestureLoginTests().enrolled(fixture, desktop.name)
        let gesture = try byTheUser(GestureLoginTests.wire(GestureLoginTests.genuine))
        #expect(gesture.lines.last == "RESULT 0 Success", "\(gesture.output)")
        #expect(desktop.tokenSeen?.hasPrefix("puff-gesture:") == true)
        // `keyring` off in puff.conf: the helper releases nothing.
        try fixture.write(fixture.conf, "kdf_ops = 1\nkdf_mem_kib = 8\n", mode: 0o600)
        let off = try byTheUser(Self.passcode)
        #expect(off.lines.last == "RESULT 0 Success", "\(off.output)")
        #expect(desktop.tokenSeen == Self.passcode)
    }

    @Test func aPasswordChangedThroughThePasswordStackIsTheOneHandedOnNext() throws {
        try #require(FileManager.default.fileExists(atPath: Self.gnomeKeyringModule), "make test unpacks pam_gnome_keyring.so")
        let fixture = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\nkeyring = yes\n")
        let desktop = try Desktop(fixture)
        #expect(try fixture.enroll(desktop.name, Self.passcode).status == 0)
        try desktop.writeStack()
        #expect(try desktop.login(Self.password).lines.last == "RESULT 0 Success")
        #expect(try desktop.loginKeyringLocked() == false)

        // The user changes their password (passwd: real uid theirs, effective root) while the
        // session's daemon runs: pam_unix changes it, Puff keeps the new one, gnome-keyring
        // re-keys the login keyring.
        let change = try fixture.authenticate(desktop.name, replies: [Self.password, Self.newPassword, Self.newPassword],
                                              extra: ["--op", "chauthtok"] + desktop.pamEnvironment,
                                              service: "puff-desktop", bySelf: true)
        #expect(change.lines.last == "RESULT 0 Success", "\(change.output)")
        desktop.stopKeyringDaemon()

        let passcode = try desktop.login(Self.passcode)
        #expect(passcode.lines.last == "RESULT 0 Success", "\(passcode.output)")
        #expect(desktop.tokenSeen == Self.newPassword)
        #expect(try desktop.loginKeyringLocked() == false)
        desktop.stopKeyringDaemon()
        for (path, bytes) in try desktop.storeFiles() {
            #expect(bytes.range(of: Data(Self.newPassword.utf8)) == nil, "\(path) holds the new password")
        }

        // Root's chpasswd changes it out of Puff's sight: the copy is stale and the passcode
        // hands on the old one (which opens nothing new); the next password login at Puff's
        // prompt keeps the new one, which the passcode then hands on.
        #expect(try Hermetic.setPassword(desktop.name, "Third-Pass-5702").status == 0)
        #expect(try desktop.login(Self.passcode).lines.last == "RESULT 0 Success")
        #expect(desktop.tokenSeen == Self.newPassword)
        desktop.stopKeyringDaemon()
        #expect(try desktop.login("Third-Pass-5702").lines.last == "RESULT 0 Success")
        desktop.stopKeyringDaemon()
        #expect(try desktop.login(Self.passcode).lines.last == "RESULT 0 Success")
        #expect(desktop.tokenSeen == "Third-Pass-5702")
        desktop.stopKeyringDaemon()
    }
}
