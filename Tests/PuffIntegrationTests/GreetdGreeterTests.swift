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

        init(fixture: Fixture, server: LockScreenTests.XServer) throws {
            guard FileManager.default.isExecutableFile(atPath: GreetdGreeterTests.greetdBinary) else {
                throw PadTestError("no greetd at \(GreetdGreeterTests.greetdBinary): run `make greetd-test-env`")
            }
            var template = Array("/tmp/puff-it-greetd-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp") }
            let work = String(cString: made)
            self.work = work
            chmod(work, 0o755)
            for directory in ["sessions", "markers", "pam.d"] {
                try FileManager.default.createDirectory(atPath: work + "/" + directory, withIntermediateDirectories: true)
            }
            chmod(work + "/markers", 0o1777)
            func write(_ name: String, _ text: String, mode: Int = 0o644) throws {
                try text.write(toFile: work + "/" + name, atomically: false, encoding: .utf8)
                chmod(work + "/" + name, mode_t(mode))
            }
            let auth = try String(contentsOfFile: fixture.pamDirectory + "/puff-test", encoding: .utf8)
                .split(separator: "\n").filter { $0.hasPrefix("auth") }.joined(separator: "\n")
            try write("pam.d/greetd", auth + "\naccount required pam_permit.so\nsession required pam_permit.so\n")
            try write("pam.d/greetd-greeter", "auth required pam_permit.so\naccount required pam_permit.so\nsession required pam_permit.so\n")
            try write("session.sh", "#!/bin/sh\nid -un > \(work)/markers/session\n", mode: 0o755)
            try write("sessions/puff-test.desktop", "[Desktop Entry]\nName=Puff test session\nExec=\(work)/session.sh\n")
            try write("greeter.log", "", mode: 0o666)
            try write("greeter.sh", "#!/bin/sh\nexec /usr/bin/env DISPLAY=\(server.display) '\(GreeterTests.greeterBinary)' --greetd "
                      + "--dir '\(fixture.etc)' --print-layout --sessions '\(work)/sessions' 2>>'\(work)/greeter.log'\n", mode: 0o755)
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
