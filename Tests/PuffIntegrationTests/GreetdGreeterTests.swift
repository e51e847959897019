import Foundation
import Testing

/// `puff-greeter --greetd` against a stand-in for greetd's daemon (Tests/Greeter/greetd-server.py)
/// that speaks greetd's IPC as greetd-ipc(7) describes it and runs the real PAM transaction
/// (libpam, the built module, a throwaway store) as root, as greetd's worker does; the greeter
/// runs as `nobody` on an Xvfb display (under greetd it would run in cage, through Xwayland).
/// And under Debian 12's real greetd 0.9 (unpacked into build/greetd by `make greetd-test-env`),
/// run as root in a namespace of its own with `vt = "current"` and `switch = false` (no VT is
/// taken), its PAM services bound over /etc/pam.d there (Tests/Greeter/greetd-seat.sh).
@Suite(.serialized)
struct GreetdGreeterTests {
    static var greetdBinary: String { Artefacts.repository.appendingPathComponent("build/greetd/usr/sbin/greetd").path }
    static let seatScript = Artefacts.repository.appendingPathComponent("Tests/Greeter/greetd-seat.sh").path

    /// greetd 0.9 itself: the greeter (puff-greeter --greetd as `nobody`, on `server`) and the
    /// user's session (a script that writes the account's name in markers/session).
    final class RealGreetd {
        let work: String
        let pid: pid_t
        var greeterLog: String { (try? String(contentsOfFile: work + "/greeter.log", encoding: .utf8)) ?? "" }
        var greetdLog: String { (try? String(contentsOfFile: work + "/greetd.log", encoding: .utf8)) ?? "" }

        /// The greeter as an X11 client on `server`, or as greetd's shipped config runs it: the
        /// shipped data/puff-greeter-cage (puff-greeter a Wayland window under Debian 12's cage,
        /// agreety if it fails), cage drawing into an X11 window on `server` (its x11 backend:
        /// xdotool's input reaches the greeter through cage). `auth`: greetd's auth lines
        /// (default: the fixture's Puff line only).
        let underCage: Bool
        var runtime: String { work + "/runtime" }

        init(fixture: Fixture, server: LockScreenTests.XServer, underCage: Bool = false, auth: String? = nil) throws {
            self.underCage = underCage
            guard FileManager.default.isExecutableFile(atPath: GreetdGreeterTests.greetdBinary) else {
                throw PadTestError("no greetd at \(GreetdGreeterTests.greetdBinary): run `make greetd-test-env`")
            }
            var template = Array("/tmp/puff-it-greetd-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp") }
            let work = String(cString: made)
            self.work = work
            chmod(work, 0o755)
            for directory in ["sessions", "markers", "pam.d", "runtime"] {
                try FileManager.default.createDirectory(atPath: work + "/" + directory, withIntermediateDirectories: true)
            }
            chmod(work + "/markers", 0o1777)
            // cage's XDG_RUNTIME_DIR, the greeter account's own, as pam_systemd would make it.
            chmod(work + "/runtime", 0o700)
            chown(work + "/runtime", 65534, 65534)
            func write(_ name: String, _ text: String, mode: Int = 0o644) throws {
                try text.write(toFile: work + "/" + name, atomically: false, encoding: .utf8)
                chmod(work + "/" + name, mode_t(mode))
            }
            let auth = try auth ?? String(contentsOfFile: fixture.pamDirectory + "/puff-test", encoding: .utf8)
                .split(separator: "\n").filter { $0.hasPrefix("auth") }.joined(separator: "\n")
            try write("pam.d/greetd", auth + "\naccount required pam_permit.so\nsession required pam_permit.so\n")
            try write("pam.d/greetd-greeter", "auth required pam_permit.so\naccount required pam_permit.so\nsession required pam_permit.so\n")
            try write("session.sh", "#!/bin/sh\nid -un > \(work)/markers/session\n", mode: 0o755)
            try write("sessions/puff-test.desktop", "[Desktop Entry]\nName=Puff test session\nExec=\(work)/session.sh\n")
            try write("greeter.log", "", mode: 0o666)
            if underCage {
                let shipped = try String(contentsOfFile: GreetdGreeterTests.cageScript, encoding: .utf8)
                    .replacingOccurrences(of: "@BINDIR@", with: (GreeterTests.greeterBinary as NSString).deletingLastPathComponent)
                try write("puff-greeter-cage", shipped, mode: 0o755)
                // agreety from the same unpacked greetd package.
                let agreety = (GreetdGreeterTests.greetdBinary as NSString).deletingLastPathComponent
                try write("greeter.sh", "#!/bin/sh\nexport DISPLAY=\(server.display) WLR_BACKENDS=x11 WLR_RENDERER=pixman XDG_RUNTIME_DIR=\(work)/runtime "
                          + "PATH=\(agreety):$PATH\nexec '\(work)/puff-greeter-cage' "
                          + "--dir '\(fixture.etc)' --print-layout --sessions '\(work)/sessions' 2>>'\(work)/greeter.log'\n", mode: 0o755)
            } else {
                try write("greeter.sh", "#!/bin/sh\nexec /usr/bin/env DISPLAY=\(server.display) '\(GreeterTests.greeterBinary)' --greetd "
                          + "--dir '\(fixture.etc)' --print-layout --sessions '\(work)/sessions' 2>>'\(work)/greeter.log'\n", mode: 0o755)
            }
            try write("config.toml", """
                [terminal]
                vt = "current"
                switch = false

                [general]
                runfile = "\(work)/runfile"
                source_profile = false

                [default_session]
                command = "\(work)/greeter.sh"
                user = "nobody"

                """)
            pid = try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec /usr/bin/unshare --mount --propagation private '\(GreetdGreeterTests.seatScript)' "
                + "'\(GreetdGreeterTests.greetdBinary)' '\(work)' > '\(work)/greetd.log' 2>&1"])
        }

        deinit {
            kill(pid, SIGTERM)
            for _ in 0..<40 where childIsRunning(pid) { usleep(50_000) }
            kill(pid, SIGKILL)
            _ = try? TmuxPane.wait(pid)
            try? FileManager.default.removeItem(atPath: work)
        }

        func waitFor(_ needle: String, count: Int = 1, timeout: Double = 30) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if greeterLog.components(separatedBy: needle).count - 1 >= count { return true }
                usleep(50_000)
            }
            return false
        }

        /// What cage shows, as grim (wlr-screencopy) takes it, saved as
        /// build/screenshots/greetd-cage-NAME.png.
        func grim(_ name: String) throws {
            let shot = work + "/markers/grim.png"
            let result = try run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/env",
                                                      "XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=wayland-0", "/usr/bin/grim", shot])
            #expect(result.status == 0, "grim: \(result.errors)")
            try FileManager.default.createDirectory(atPath: LockScreenTests.screenshots, withIntermediateDirectories: true)
            let path = LockScreenTests.screenshots + "/greetd-cage-" + name + ".png"
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: shot, toPath: path)
        }

        /// The processes under greetd (the pid it was started as) whose command is `name`.
        func descendants(named name: String) -> [pid_t] {
            var parents: [pid_t: pid_t] = [:], commands: [pid_t: String] = [:]
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let id = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                      let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
                commands[id] = String(stat[stat.index(after: open)..<close])
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 1, let parent = pid_t(fields[1]) { parents[id] = parent }
            }
            return commands.filter { $0.value == name }.keys.filter { id in
                var current = id
                for _ in 0..<64 {
                    guard let parent = parents[current], parent > 1 else { return false }
                    if parent == pid { return true }
                    current = parent
                }
                return false
            }
        }

        func marker(timeout: Double = 30) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let text = try? String(contentsOfFile: work + "/markers/session", encoding: .utf8), !text.isEmpty { return text }
                usleep(100_000)
            }
            return nil
        }
    }

    @Test func aPuffUserLogsInThroughRealGreetd() throws {
        let user = try GreeterTests.account("puff-it-gr-gina")
        let fixture = try GreeterTests.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let greetd = try RealGreetd(fixture: fixture, server: server)
        #expect(greetd.waitFor("users ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        try server.xdotool(["type", "--delay", "30", "111333"])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready", count: 2), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(greetd.greeterLog.contains(GreeterTests.passcodeRefusal), "\(greetd.greeterLog)")
        #expect(try fixture.failures(user) == 1)
        try Self.screenshot(server, "real-wrong-passcode")
        #expect(greetd.marker(timeout: 0.5) == nil)
        try LockScreenTests.draw(server, layoutText: greetd.greeterLog, GestureLoginTests.genuine)
        try Self.screenshot(server, "real-right-drawn")
        try server.xdotool(["key", "Return"])
        #expect(greetd.marker() == user + "\n", "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(try fixture.failures(user) == 0)
    }

    static let cageScript = Artefacts.repository.appendingPathComponent("data/puff-greeter-cage").path

    /// Under cage, as the shipped config runs it: puff-greeter is a Wayland client (it says
    /// so), xdotool's keys and pointer reach it through cage, a wrong passcode is counted and
    /// the drawn gesture starts the session.
    @Test func aPuffUserLogsInThroughRealGreetdUnderCage() throws {
        let user = try GreeterTests.account("puff-it-gr-gina")
        let fixture = try GreeterTests.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let greetd = try RealGreetd(fixture: fixture, server: server, underCage: true)
        #expect(greetd.waitFor("users ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(greetd.greeterLog.contains("puff-greeter: a Wayland window"), "\(greetd.greeterLog)")
        try greetd.grim("users")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        try greetd.grim("picture")
        try server.xdotool(["type", "--delay", "30", "111333"])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready", count: 2), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(greetd.greeterLog.contains(GreeterTests.passcodeRefusal), "\(greetd.greeterLog)")
        #expect(try fixture.failures(user) == 1)
        #expect(greetd.marker(timeout: 0.5) == nil)
        try LockScreenTests.draw(server, layoutText: greetd.greeterLog, GestureLoginTests.genuine)
        usleep(300_000)
        try greetd.grim("drawn")
        try server.xdotool(["key", "Return"])
        #expect(greetd.marker() == user + "\n", "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(try fixture.failures(user) == 0)
        #expect(!greetd.greeterLog.contains("agreety"), "\(greetd.greeterLog)")
    }

    /// A user with no Puff record, through the stack pam-auth-update gives common-auth
    /// (pam.d/puff-else-password: Puff with nullok_prompt, then pam_unix try_first_pass): the
    /// system password typed into puff-greeter under cage logs in; a wrong one does not.
    @Test func aPasswordUserLogsInThroughRealGreetdUnderCage() throws {
        let user = try GreeterTests.account("puff-it-gr-walt")
        #expect(try Hermetic.setPassword(user, "Walt-pass-2026").status == 0)
        let fixture = try GreeterTests.enrolledStore(try GreeterTests.account("puff-it-gr-gina"))
        let module = "\(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay helper=\(Artefacts.helper)"
        let shipped = try String(contentsOf: Artefacts.repository.appendingPathComponent("pam.d/puff-else-password"), encoding: .utf8)
        let auth = shipped.split(separator: "\n").filter { $0.hasPrefix("auth") }
            .map { $0.replacingOccurrences(of: "pam_puff.so", with: module) }.joined(separator: "\n")
        let server = try LockScreenTests.XServer()
        let greetd = try RealGreetd(fixture: fixture, server: server, underCage: true, auth: auth)
        #expect(greetd.waitFor("users ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(greetd.greeterLog.contains("puff-lock: picture none"), "\(greetd.greeterLog)")
        try server.xdotool(["type", "--delay", "30", "Walt-wrong-2026"])
        try server.xdotool(["key", "Return"])
        #expect(greetd.waitFor("screen ready", count: 2), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        #expect(greetd.marker(timeout: 0.5) == nil)
        try server.xdotool(["type", "--delay", "30", "Walt-pass-2026"])
        try greetd.grim("password")
        try server.xdotool(["key", "Return"])
        #expect(greetd.marker() == user + "\n", "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
    }

    /// The shipped fallback (data/puff-greeter-cage): puff-greeter crashing under cage
    /// (SIGSEGV) starts greetd's agreety, so the machine still has a login screen; cage alone
    /// exits 0 whatever its client did, so a plain `cage … || agreety` never falls back. The
    /// greeter resets the crash signals: Swift's backtracer caught a SIGSEGV sent by kill(2),
    /// printed a backtrace and let the greeter go on, so no fallback came.
    @Test func aCrashedGreeterUnderCageFallsBackToAgreety() throws {
        let user = try GreeterTests.account("puff-it-gr-gina")
        let fixture = try GreeterTests.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let greetd = try RealGreetd(fixture: fixture, server: server, underCage: true)
        #expect(greetd.waitFor("users ready"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        let greeters = greetd.descendants(named: "puff-greeter")
        #expect(greeters.count == 1, "\(greeters)")
        for greeter in greeters { kill(greeter, SIGSEGV) }
        #expect(greetd.waitFor("puff-greeter ended with status 139"), "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        let deadline = Date().addingTimeInterval(20)
        var agreety: [pid_t] = []
        while agreety.isEmpty && Date() < deadline {
            agreety = greetd.descendants(named: "agreety")
            usleep(20_000)
        }
        // agreety, greetd's text greeter, on greetd's console (here the machine's current VT,
        // where nobody types: the test stops at its start), its logins running the fallback.
        #expect(agreety.count == 1, "greeter: \(greetd.greeterLog)\ngreetd: \(greetd.greetdLog)")
        for id in agreety {
            let arguments = ((try? String(contentsOfFile: "/proc/\(id)/cmdline", encoding: .utf8)) ?? "").split(separator: "\0")
            #expect(arguments.suffix(2) == ["--cmd", "/bin/sh"], "\(arguments)")
        }
    }

    static let serverScript = Artefacts.repository.appendingPathComponent("Tests/Greeter/greetd-server.py").path

    final class Greetd {
        let work: String
        let pid: pid_t
        var socket: String { work + "/greetd.sock" }
        var log: String { (try? String(contentsOfFile: work + "/greetd.log", encoding: .utf8)) ?? "" }

        init(fixture: Fixture) throws {
            var template = Array("/tmp/puff-it-greetd-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp") }
            work = String(cString: made)
            chmod(work, 0o755)
            try FileManager.default.createDirectory(atPath: work + "/sessions", withIntermediateDirectories: true)
            try "[Desktop Entry]\nName=Puff test session\nExec=/usr/bin/true puff-test-session %U\n"
                .write(toFile: work + "/sessions/puff-test.desktop", atomically: false, encoding: .utf8)
            chmod(work + "/sessions/puff-test.desktop", 0o644)
            // greetd's service: the fixture's Puff auth line, and an account stack that admits
            // (greetd calls pam_acct_mgmt; Puff's account function only says PAM_IGNORE).
            let auth = try String(contentsOfFile: fixture.pamDirectory + "/puff-test", encoding: .utf8)
                .split(separator: "\n").filter { $0.hasPrefix("auth") }.joined(separator: "\n")
            try fixture.write(fixture.pamDirectory + "/greetd", auth + "\naccount required pam_permit.so\n", mode: 0o644)
            pid = try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec /usr/bin/python3 '\(GreetdGreeterTests.serverScript)' '\(work)/greetd.sock' "
                + "greetd '\(fixture.pamDirectory)' '\(work)/greetd.log' > '\(work)/greetd.out' 2>&1"])
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline && !log.contains("ready") { usleep(50_000) }
            guard log.contains("ready") else { throw PadTestError("the greetd stand-in did not start: \(log)") }
        }

        deinit {
            kill(pid, SIGKILL)
            _ = try? TmuxPane.wait(pid)
            try? FileManager.default.removeItem(atPath: work)
        }

        func waitFor(_ needle: String, timeout: Double = 20) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if log.contains(needle) { return true }
                usleep(50_000)
            }
            return false
        }
    }

    final class Greeter: WatchedChild {
        init(greetd: Greetd, server: LockScreenTests.XServer, fixture: Fixture) throws {
            let log = greetd.work + "/greeter.log"
            FileManager.default.createFile(atPath: log, contents: nil)
            chmod(log, 0o666)
            let command = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/env",
                           "DISPLAY=\(server.display)", "GREETD_SOCK=\(greetd.socket)", GreeterTests.greeterBinary, "--greetd",
                           "--dir", fixture.etc, "--print-layout", "--sessions", greetd.work + "/sessions"]
            let pid = try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec " + command.map { "'\($0)'" }.joined(separator: " ") + " 2>>'\(log)'"])
            super.init(pid: pid, log: log, group: false)
        }
    }

    static func screenshot(_ server: LockScreenTests.XServer, _ name: String) throws {
        try server.screenshot("greetd-" + name)
    }

    @Test func theRightGestureStartsTheSessionThroughGreetdAndAWrongOneIsCounted() throws {
        let user = try GreeterTests.account("puff-it-gr-gina")
        let fixture = try GreeterTests.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let greetd = try Greetd(fixture: fixture)
        let greeter = try Greeter(greetd: greetd, server: server, fixture: fixture)
        #expect(greeter.waitFor("users ready"), "\(greeter.text)")
        try Self.screenshot(server, "users")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greeter.waitFor("screen ready"), "greeter: \(greeter.text)\ngreetd: \(greetd.log)")
        #expect(greetd.log.contains("request create_session"))
        try Self.screenshot(server, "picture")

        try LockScreenTests.draw(server, layoutText: greeter.text, GestureLoginTests.genuine, shift: 40)
        try server.xdotool(["key", "Return"])
        #expect(greeter.waitFor("screen ready", count: 2), "\(greeter.text)\ngreetd: \(greetd.log)")
        #expect(greeter.text.contains(GreeterTests.gestureRefusal), "\(greeter.text)")
        #expect(try fixture.failures(user) == 1)
        try Self.screenshot(server, "wrong-message")
        #expect(!greetd.log.contains("request start_session"))

        try LockScreenTests.draw(server, layoutText: greeter.text, GestureLoginTests.genuine)
        try server.xdotool(["key", "Return"])
        #expect(greeter.exitStatus(timeout: 30) == 0, "greeter: \(greeter.text)\ngreetd: \(greetd.log)")
        #expect(greetd.waitFor("start [\"/usr/bin/true\", \"puff-test-session\"] [\"XDG_SESSION_TYPE=wayland\", \"XDG_SESSION_DESKTOP=puff-test\"] user=\(user)"),
                "\(greetd.log)")
        #expect(greetd.log.contains("pam \(user) Success"), "\(greetd.log)")
        #expect(try fixture.failures(user) == 0)
    }

    @Test func thePasscodeTypedStartsTheSessionAndNothingStartsWithoutIt() throws {
        let user = try GreeterTests.account("puff-it-gr-gina")
        let fixture = try GreeterTests.enrolledStore(user)
        let server = try LockScreenTests.XServer()
        let greetd = try Greetd(fixture: fixture)
        let greeter = try Greeter(greetd: greetd, server: server, fixture: fixture)
        #expect(greeter.waitFor("users ready"), "\(greeter.text)")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greeter.waitFor("screen ready"), "\(greeter.text)\ngreetd: \(greetd.log)")
        try server.xdotool(["type", "--delay", "30", "111333"])
        try server.xdotool(["key", "Return"])
        #expect(greeter.waitFor("screen ready", count: 2), "\(greeter.text)\ngreetd: \(greetd.log)")
        #expect(greeter.text.contains(GreeterTests.passcodeRefusal), "\(greeter.text)")
        #expect(try fixture.failures(user) == 1)
        // Esc on the empty screen goes back to the list: greetd's session is cancelled.
        try server.xdotool(["key", "Escape"])
        #expect(greeter.waitFor("users ready", count: 2), "\(greeter.text)")
        #expect(greetd.waitFor("request cancel_session"), "\(greetd.log)")
        try server.xdotool(["type", "--delay", "30", user])
        try server.xdotool(["key", "Return"])
        #expect(greeter.waitFor("screen ready", count: 3), "\(greeter.text)\ngreetd: \(greetd.log)")
        try server.xdotool(["type", "--delay", "30", "604917"])
        try server.xdotool(["key", "Return"])
        #expect(greeter.exitStatus(timeout: 30) == 0, "greeter: \(greeter.text)\ngreetd: \(greetd.log)")
        #expect(greetd.waitFor("start [\"/usr/bin/true\", \"puff-test-session\"]"), "\(greetd.log)")
        #expect(try fixture.failures(user) == 0)
        try Self.screenshot(server, "after")
    }
}
