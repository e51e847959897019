import Foundation
import Testing

/// `puff-greeter --greetd` against a stand-in for greetd's daemon (Tests/Greeter/greetd-server.py)
/// that speaks greetd's IPC as greetd-ipc(7) describes it and runs the real PAM transaction
/// (libpam, the built module, a throwaway store) as root, as greetd's worker does; the greeter
/// runs as `nobody` on an Xvfb display (under greetd it would run in cage, through Xwayland).
/// Real greetd 0.9 is not used: it wants a VT and a systemd-logind seat for its greeter
/// (docs/puff-greeter.md).
@Suite(.serialized)
struct GreetdGreeterTests {
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
