import Foundation
import Testing

/// `puff-greeter` under Debian's real LightDM daemon, run as root (as a display manager runs)
/// in a mount namespace of its own: its seat's X server is Xephyr nested in an Xvfb, its PAM
/// service `lightdm` holds the built `pam_puff.so` in front of pam_unix, the Puff store is a
/// throwaway fixture, and a private dbus-daemon is the system bus (Tests/Greeter/lightdm-seat.sh).
/// The user's session is a test session whose command writes a marker and exits. Driven with
/// xdotool on the nested server; screenshots in build/screenshots/greeter-*.png.
///
/// Root, not `lightdm --test-mode`: in test mode PAM runs as the invoking user, so the module
/// would go through the setuid helper, which serves only its caller's account — not what a
/// login screen does. As root, the module runs in LightDM's session child with uid 0, as it
/// will on a real machine: the discreet conversation (docs/dev/prompt-contract.md), or with
/// `tell_state = lightdm` in puff.conf the told one (the keypad type, the lock's time left).
@Suite(.serialized)
struct GreeterTests {
    static var greeterBinary: String { Artefacts.binaries + "/puff-greeter" }
    static let seatScript = Artefacts.repository.appendingPathComponent("Tests/Greeter/lightdm-seat.sh").path

    /// The discreet messages of a root-run service (docs/dev/prompt-contract.md).
    static let gestureRefusal = "Puff: not accepted (a wrong gesture, too many failed attempts, or only the passcode is accepted now)."
    static let passcodeRefusal = "Puff: not accepted (a wrong passcode, or too many failed attempts)."

    /// One LightDM seat with puff-greeter, in its own namespace; stopped (SIGTERM, then
    /// SIGKILL to what is left of its process group) when released.
    final class Seat {
        let work: String
        /// LightDM's X server for the seat: the first free display from `minimum-display-number`
        /// on (another run's server may hold the one asked for), found by its authority file.
        var display: String {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: work + "/run/root")) ?? []
            return names.first { $0.hasPrefix(":") } ?? ":\(number)"
        }
        var authority: String { work + "/run/root/" + display }
        private let number: Int
        private let pid: pid_t
        var greeterLog: String { work + "/log/seat0-greeter.log" }

        init(server: LockScreenTests.XServer, fixture: Fixture, greeterUser: String = "lightdm") throws {
            var template = Array("\(Artefacts.temporary)/puff-it-seat-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp") }
            let work = String(cString: made)
            self.work = work
            chmod(work, 0o755)
            var number = 150
            while number < 200 && access("/tmp/.X\(number)-lock", F_OK) == 0 { number += 1 }
            self.number = number
            for directory in ["bin", "greeters", "sessions", "log", "run", "cache"] {
                try FileManager.default.createDirectory(atPath: work + "/" + directory, withIntermediateDirectories: true)
            }
            try FileManager.default.createDirectory(atPath: work + "/markers", withIntermediateDirectories: true)
            chmod(work + "/markers", 0o1777)
            func write(_ name: String, _ text: String, mode: Int = 0o644) throws {
                try text.write(toFile: work + "/" + name, atomically: false, encoding: .utf8)
                chmod(work + "/" + name, mode_t(mode))
            }
            // Xephyr as LightDM starts it, without the VT argument it does not know.
            try write("bin/Xephyr", """
                #!/bin/sh
                for a; do shift; case "$a" in vt[0-9]*) ;; *) set -- "$@" "$a" ;; esac; done
                exec /usr/bin/Xephyr -screen 1024x768 "$@"

                """, mode: 0o755)
            // As /etc/X11/Xsession, the wrapper gets the session's Exec line as one argument.
            try write("bin/session-wrapper", "#!/bin/sh\nexec /bin/sh -c \"$1\"\n", mode: 0o755)
            try write("sessions/puff-test.desktop", """
                [Desktop Entry]
                Name=Puff test session
                Exec=/bin/sh -c 'id -un > \(work)/markers/session-$(id -un)'
                Type=Application

                """)
            try write("sessions/puff-other.desktop", """
                [Desktop Entry]
                Name=Another session
                Exec=/bin/sh -c 'id -un > \(work)/markers/other-$(id -un)'
                Type=Application

                """)
            try write("greeters/puff-greeter.desktop", """
                [Desktop Entry]
                Name=Puff
                Exec=\(GreeterTests.greeterBinary) --dir \(fixture.etc) --print-layout
                Type=Application

                """)
            try write("lightdm.conf", """
                [LightDM]
                dbus-service=false
                minimum-display-number=\(number)
                log-directory=\(work)/log
                run-directory=\(work)/run
                cache-directory=\(work)/cache
                greeter-user=\(greeterUser)
                greeters-directory=\(work)/greeters
                sessions-directory=\(work)/sessions
                user-authority-in-system-dir=true
                [Seat:*]
                greeter-session=puff-greeter
                greeter-hide-users=false
                user-session=puff-test
                session-wrapper=\(work)/bin/session-wrapper

                """)
            // The test accounts are system accounts (uids counted down from 999) with nologin as
            // their shell: listed here, and the other system accounts (the machine's, the other
            // suites') hidden.
            let others = ((try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ":", omittingEmptySubsequences: false)
                guard fields.count > 2, let uid = Int(fields[2]), uid >= 900, !fields[0].hasPrefix("puff-it-gr-") else { return nil as String? }
                return String(fields[0])
            }
            try write("users.conf", "[UserList]\nminimum-uid=900\nhidden-users=nobody \(others.joined(separator: " "))\nhidden-shells=\n")
            let module = "\(Artefacts.module) nodelay dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf)"
            // As pam.d/puff-lock: a Puff user answers Puff only; nullok lets users without a
            // record through to the system password.
            try write("pam-lightdm", """
                auth     [success=done ignore=ignore default=die]  \(module) nullok
                auth     required  pam_unix.so
                account  required  pam_unix.so
                session  required  pam_unix.so
                password required  pam_deny.so

                """)
            try write("pam-lightdm-greeter", """
                auth     required  pam_permit.so
                account  required  pam_permit.so
                session  required  pam_unix.so
                password required  pam_deny.so

                """)
            try write("bus.conf", """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>system</type>
                  <listen>unix:path=\(work)/system_bus_socket</listen>
                  <auth>EXTERNAL</auth>
                  <policy context="default">
                    <allow user="*"/>
                    <allow own="*"/>
                    <allow send_destination="*"/>
                    <allow receive_sender="*"/>
                  </policy>
                </busconfig>

                """)
            var child = Child(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/bash", GreeterTests.seatScript, work],
                              stdout: .append(work + "/seat.out"), stderr: .append(work + "/seat.out"))
            child.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": server.display]) { $1 }
            child.newGroup = true
            pid = try child.start()
        }

        deinit {
            kill(pid, SIGTERM)
            let deadline = Date().addingTimeInterval(15)
            var status: Int32 = 0
            while waitpid(pid, &status, WNOHANG) == 0 && Date() < deadline { usleep(50_000) }
            kill(-pid, SIGKILL)
            _ = try? Child.wait(pid)
            try? FileManager.default.removeItem(atPath: work)
        }

        var log: String { (try? String(contentsOfFile: greeterLog, encoding: .utf8)) ?? "" }
        var daemonLog: String { (try? String(contentsOfFile: work + "/lightdm.out", encoding: .utf8)) ?? "" }

        /// Waits until the greeter's log holds `needle` `count` times.
        @discardableResult
        func waitFor(_ needle: String, count: Int = 1, timeout: Double = 40) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if log.components(separatedBy: needle).count - 1 >= count { return true }
                usleep(100_000)
            }
            return false
        }

        /// The line the test session wrote in the marker `name`, waiting for it.
        func marker(_ name: String, timeout: Double = 30) -> String? {
            let path = work + "/markers/" + name
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                // The session's shell creates the file before it writes the line.
                if let text = try? String(contentsOfFile: path, encoding: .utf8), text.hasSuffix("\n") { return text }
                usleep(100_000)
            }
            return nil
        }

        @discardableResult
        func xdotool(_ arguments: [String]) throws -> Run {
            let result = try run("/usr/bin/xdotool", arguments, environment: ["DISPLAY": display, "XAUTHORITY": authority])
            #expect(result.status == 0, "xdotool \(arguments.prefix(4)): \(result.errors)")
            return result
        }

        /// Saves the seat's screen as build/screenshots/greeter-NAME.png.
        func screenshot(_ name: String) throws {
            try FileManager.default.createDirectory(atPath: LockScreenTests.screenshots, withIntermediateDirectories: true)
            let path = LockScreenTests.screenshots + "/greeter-" + name + ".png"
            let result = try run("/usr/bin/import", ["-display", display, "-window", "root", path],
                                 environment: ["XAUTHORITY": authority])
            #expect(result.status == 0, "import: \(result.errors)")
        }

        /// Where the greeter put a row (`user NAME`, `other`, `session`).
        func row(_ key: String) throws -> (Int, Int) {
            var found: (Int, Int)?
            for line in log.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count >= 4, words[0] == "puff-greeter:" else { continue }
                if words[1] == "user", words.count == 5, "user " + words[2] == key, let x = Double(words[3]), let y = Double(words[4]) {
                    found = (Int(x), Int(y))
                } else if words.count == 4, String(words[1]) == key, let x = Double(words[2]), let y = Double(words[3]) {
                    found = (Int(x), Int(y))
                }
            }
            return try #require(found, "no row \(key) in: \(log)")
        }

        /// Types a name on the user list and presses Enter.
        func choose(typing name: String) throws {
            try xdotool(["type", "--delay", "30", name])
            try xdotool(["key", "Return"])
        }
    }

    /// A store with `user`'s 6-digit passcode 604917 and the gesture of GestureLoginTests on the
    /// 400x300 picture; the store directory readable, as an installed one is (pictures are
    /// world-readable; records and keys are not).
    static func enrolledStore(_ user: String, config: String = "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\n") throws -> Fixture {
        let fixture = try Fixture(config: config)
        chmod(fixture.etc, 0o755)
        #expect(try fixture.enroll(user, "604917").status == 0)
        try GestureLoginTests().enrolled(fixture, user)
        return fixture
    }

    /// A test account (a system account whose home under /home does not exist: the seat's
    /// namespace makes it, lightdm-seat.sh). Not usermod: the machine's PID namespace is shared,
    /// and usermod refuses while any process has the same uid, another test run's included.
    static func account(_ name: String) throws -> String {
        try TestUsers.ensure(name)
    }

    /// Draws the parts on the picture the greeter printed last.
    static func draw(_ seat: Seat, _ parts: [GestureLoginTests.Part], shift: Double = 0) throws {
        let layout = try LockScreenTests.layout(in: seat.log)
        for part in parts {
            var arguments: [String] = []
            for (index, point) in part.points.enumerated() {
                let x = Int((layout.x + (point.0 + shift) * layout.scale).rounded())
                let y = Int((layout.y + point.1 * layout.scale).rounded())
                arguments += ["mousemove", String(x), String(y)]
                if index == 0 { arguments += ["mousedown", "1"] }
            }
            arguments += ["mouseup", "1"]
            try seat.xdotool(arguments)
        }
    }

    @Test func theRightGestureStartsTheSessionAndAWrongOneIsCountedAtTheGreeter() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.screenshot("users")

        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        try seat.screenshot("picture")

        // 40 px to the right of the enrolled gesture: refused, counted, and the greeter asks again.
        try Self.draw(seat, GestureLoginTests.genuine, shift: 40)
        try seat.screenshot("wrong-drawn")
        try seat.xdotool(["key", "Return"])
        #expect(seat.waitFor("screen ready", count: 2), "\(seat.log)")
        #expect(seat.log.contains(Self.gestureRefusal), "\(seat.log)")
        #expect(try fixture.failures(user) == 1)
        try seat.screenshot("wrong-message")
        #expect(seat.marker("session-\(user)", timeout: 1) == nil)

        try Self.draw(seat, GestureLoginTests.genuine)
        try seat.screenshot("right-drawn")
        try seat.xdotool(["key", "Return"])
        let marker = seat.marker("session-\(user)")
        #expect(marker == user + "\n", "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        #expect(try fixture.failures(user) == 0)
    }

    @Test func thePasscodeTypedAtTheGreeterStartsTheChosenSession() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        // The other session, chosen with the keyboard (→), then the user from the list with ↓/Enter.
        let row = try seat.row("user \(user)")
        try seat.xdotool(["mousemove", String(row.0), String(row.1)])
        try seat.xdotool(["key", "Right"])
        try seat.screenshot("session-chosen")
        try seat.xdotool(["click", "1"])
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        try seat.xdotool(["type", "--delay", "40", "604917"])
        try seat.screenshot("passcode-typed")
        try seat.xdotool(["key", "Return"])
        let marker = seat.marker("other-\(user)")
        #expect(marker == user + "\n", "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
    }

    @Test func aLockedOutUserGetsTheDiscreetRefusalAndStaysAtTheGreeter() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user)
        // Three wrong passcodes through libpam: locked (deny = 3).
        for _ in 0..<3 { _ = try fixture.authenticate(user, replies: ["111111"]) }
        #expect(try fixture.failures(user) == 3)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        // The right passcode: not verified while locked, and the greeter cannot tell.
        try seat.xdotool(["type", "--delay", "40", "604917"])
        try seat.xdotool(["key", "Return"])
        #expect(seat.waitFor("screen ready", count: 2), "\(seat.log)")
        #expect(seat.log.contains(Self.passcodeRefusal), "\(seat.log)")
        try seat.screenshot("locked-out")
        #expect(seat.marker("session-\(user)", timeout: 1) == nil)
    }

    /// puff.conf for the tests where LightDM's service is told the state (issue 26).
    static let tellingConfig = "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\ndelays = 10m\ntell_state = lightdm\n"

    /// With `tell_state = lightdm` the prompt names the keypad (`[6 digits]`): the greeter shows
    /// puff-lock's keypad beside the picture, and the sixth digit clicked submits the passcode,
    /// with no Enter, as on the lock screen.
    @Test func withTheStateToldTheKeypadSubmitsThePasscodeAtItsLastDigit() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user, config: Self.tellingConfig)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        let buttons = try LockScreenTests.layout(in: seat.log).buttons
        for (index, digit) in "604917".enumerated() {
            let (x, y) = try #require(buttons["digit\(digit)"], "no keypad: \(seat.log)")
            let click = ["mousemove", String(x), String(y), "click", "1"]
            if index < 5 {
                try seat.xdotool(click)
            } else {
                // The last digit submits; the session may start, and LightDM stop the greeter's
                // X server, before xdotool is done with it.
                _ = try run("/usr/bin/xdotool", click, environment: ["DISPLAY": seat.display, "XAUTHORITY": seat.authority])
            }
            if index == 3 { try seat.screenshot("keypad") }
        }
        let marker = seat.marker("session-\(user)")
        #expect(marker == user + "\n", "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        #expect(try fixture.failures(user) == 0)
    }

    /// With `tell_state = lightdm`, a locked-out user is told the time left before any prompt
    /// (nothing is asked, nothing counted, no session), and a key goes back to the list.
    @Test func withTheStateToldALockedOutUserSeesTheTimeLeft() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user, config: Self.tellingConfig)
        for _ in 0..<3 { _ = try fixture.authenticate(user, replies: ["111111"]) }
        #expect(try fixture.failures(user) == 3)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("Puff: too many failed attempts; try again in 10 minutes."), "\(seat.log)")
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        try seat.screenshot("locked-time-left")
        #expect(!seat.log.contains("button digit"), "a keypad was offered to a locked account: \(seat.log)")
        try seat.xdotool(["key", "space"])
        #expect(seat.waitFor("users ready", count: 2), "\(seat.log)")
        #expect(seat.marker("session-\(user)", timeout: 1) == nil)
        #expect(try fixture.failures(user) == 3)
    }

    /// With `tell_state = lightdm`, wrong passcodes typed at the greeter are counted and named
    /// (`Wrong passcode.`); the third locks the account and the screen says so once, with the
    /// time left, before going back to the list on a key.
    @Test func withTheStateToldTheThirdWrongPasscodeShowsTheLockOnce() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user, config: Self.tellingConfig)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        for attempt in 1...3 {
            // Six digits typed: sent at the sixth, no Enter.
            try seat.xdotool(["type", "--delay", "40", "111333"])
            #expect(seat.waitFor("screen ready", count: attempt + 1), "\(seat.log)")
            #expect(try fixture.failures(user) == attempt)
            if attempt == 1 {
                #expect(seat.log.contains("Puff: wrong passcode."), "\(seat.log)")
                try seat.screenshot("wrong-passcode")
            }
        }
        #expect(seat.log.contains("Puff: wrong passcode. Too many failed attempts; try again in 10 minutes."), "\(seat.log)")
        #expect(seat.waitFor("Puff: too many failed attempts; try again in 10 minutes."), "\(seat.log)")
        try seat.screenshot("locked-after-three")
        try seat.xdotool(["key", "space"])
        #expect(seat.waitFor("users ready", count: 2), "\(seat.log)")
        #expect(seat.marker("session-\(user)", timeout: 1) == nil)
        #expect(try fixture.failures(user) == 3)
    }

    /// With `tell_state = lightdm`, a gesture user whose passcode an administrator asked for
    /// (`puff-enroll lock --user`) is told why before the prompt, gets the keypad without the
    /// drawing surface, and logs in with the passcode at its last digit.
    @Test func withTheStateToldThePasscodeRequiredNoticeComesWithTheKeypad() throws {
        let user = try Self.account("puff-it-gr-gina")
        let fixture = try Self.enrolledStore(user, config: Self.tellingConfig)
        #expect(try run(Artefacts.enroll, ["lock", "--user", user] + fixture.storeArguments).status == 0)
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        #expect(seat.log.contains("Puff: passcode required: an administrator asked for the passcode."), "\(seat.log)")
        // The keypad, and no picture to draw on (only the passcode is accepted now).
        #expect(seat.log.contains("puff-lock: button digit6 "), "no keypad: \(seat.log)")
        #expect(seat.log.contains("puff-lock: picture none"), "\(seat.log)")
        try seat.xdotool(["type", "--delay", "40", "6049"])
        try seat.screenshot("passcode-required")
        // The last two digits: the second submits, and the session may start (and LightDM
        // stop this X server) before xdotool is done with it.
        _ = try run("/usr/bin/xdotool", ["type", "--delay", "40", "17"], environment: ["DISPLAY": seat.display, "XAUTHORITY": seat.authority])
        let marker = seat.marker("session-\(user)")
        #expect(marker == user + "\n", "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
    }

    @Test func aUserWithoutPuffTypesTheSystemPassword() throws {
        let user = try Self.account("puff-it-gr-walt")
        let set = try Hermetic.setPassword(user, "Walt-pass-2026")
        #expect(set.status == 0, "chpasswd: \(set.errors)")
        let fixture = try Self.enrolledStore(try Self.account("puff-it-gr-gina"))
        let server = try LockScreenTests.XServer()
        let seat = try Seat(server: server, fixture: fixture)
        #expect(seat.waitFor("users ready"), "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
        try seat.choose(typing: user)
        #expect(seat.waitFor("screen ready"), "\(seat.log)")
        #expect(seat.log.contains("puff-lock: picture none"), "\(seat.log)")
        try seat.xdotool(["type", "--delay", "40", "Walt-pass-2026"])
        try seat.screenshot("password")
        try seat.xdotool(["key", "Return"])
        let marker = seat.marker("session-\(user)")
        #expect(marker == user + "\n", "greeter: \(seat.log)\ndaemon: \(seat.daemonLog.suffix(3000))")
    }

    /// The picture decoder child (`puff-greeter --puff-decode-picture`, the client kit's decoder): the size and RGBA pixels of
    /// a good picture, nothing for a broken one, and confined by seccomp (mode 2, a filter)
    /// while it writes: the test reads nothing until /proc shows the filter, so the child
    /// waits on its full pipe with the filter on.
    @Test func theDecoderChildIsConfinedAndRefusesBrokenPictures() throws {
        let picture = try Data(contentsOf: URL(fileURLWithPath: GestureLoginTests.picture))
        var output: [Int32] = [-1, -1]
        #expect(pipe(&output) == 0)
        let input = open(GestureLoginTests.picture, O_RDONLY | O_CLOEXEC)
        #expect(input >= 0)
        let pid = try Child([Self.greeterBinary, "--puff-decode-picture"], stdin: .descriptor(input),
                            stdout: .descriptor(output[1])).start()
        close(input)
        close(output[1])
        var confined = false
        let deadline = Date().addingTimeInterval(20)
        while !confined && Date() < deadline {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            confined = status.contains("Seccomp:\t2")
            if !confined { usleep(20_000) }
        }
        #expect(confined, "the decoder child never showed a seccomp filter")
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = read(output[0], &chunk, chunk.count)
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            received += chunk[0..<got]
        }
        close(output[0])
        #expect(try Child.wait(pid) == 0)
        #expect(received.count == 8 + 400 * 300 * 4)
        #expect(Array(received.prefix(8)) == [0x90, 0x01, 0, 0, 0x2C, 0x01, 0, 0])

        // A cut picture and a file that is no picture: exit 1, no pixels.
        for broken in [Data(picture.prefix(300)), Data("not a picture".utf8)] {
            let path = NSTemporaryDirectory() + "puff-it-broken-\(UUID().uuidString)"
            try broken.write(to: URL(fileURLWithPath: path))
            defer { unlink(path) }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            let out = open("/dev/null", O_WRONLY | O_CLOEXEC)
            let child = try Child([Self.greeterBinary, "--puff-decode-picture"], stdin: .descriptor(fd), stdout: .descriptor(out)).start()
            close(fd)
            close(out)
            #expect(try Child.wait(child) == 1)
        }
    }
}
