import Foundation
import Testing

/// `puff-lock` on a real X server (Xvfb), driven with xdotool: it runs as an ordinary user in
/// a private mount namespace where a test store is mounted at /etc/puff, so the module goes
/// through the setuid helper as it does for a real screen locker. Each test saves screenshots
/// in build/screenshots/.
@Suite(.serialized)
struct LockScreenTests {
    static var lockBinary: String { Artefacts.binaries + "/puff-lock" }
    static let screenshots = Artefacts.repository.appendingPathComponent("build/screenshots").path

    /// An Xvfb server of its own (1280x800), killed at the end. Started without the test
    /// runner's blocked signals (TmuxPane.spawn), so it can be stopped.
    final class XServer {
        let display: String
        private let number: Int
        private let pid: pid_t

        /// `extra`: more Xvfb arguments (more screens, -noreset); `size`: the first screen's.
        init(extra: [String] = [], size: String = "1280x800") throws {
            var chosen: (Int, pid_t)?
            for number in 60..<100 where access("/tmp/.X\(number)-lock", F_OK) != 0 {
                let pid = try TmuxPane.spawn("/usr/bin/Xvfb", ["Xvfb", ":\(number)", "-screen", "0", size + "x24", "-nolisten", "tcp",
                                                                  // No key repeat: on a loaded machine xdotool's key
                                                                  // release can come late enough to repeat a key.
                                                                  "-ardelay", "60000"]
                                             // No reset when the readiness check (xdpyinfo) leaves: a
                                             // client connecting during a reset is refused.
                                             + (extra.contains("-noreset") ? extra : extra + ["-noreset"]))
                let deadline = Date().addingTimeInterval(10)
                var ready = false
                while !ready && Date() < deadline && childIsRunning(pid) {
                    // Ours, not another suite's server that took the number at the same moment:
                    // the lock file names the server's pid.
                    let owner = (try? String(contentsOfFile: "/tmp/.X\(number)-lock", encoding: .utf8))?
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                    ready = false
                    if owner == String(pid) { ready = try run("/usr/bin/xdpyinfo", ["-display", ":\(number)"]).status == 0 }
                    if !ready { usleep(100_000) }
                }
                if ready {
                    chosen = (number, pid)
                    break
                }
                kill(pid, SIGKILL)
                _ = try? TmuxPane.wait(pid)
            }
            guard let chosen else { throw PadTestError("no Xvfb display could be started") }
            (number, pid) = chosen
            display = ":\(number)"
        }

        deinit {
            kill(pid, SIGTERM)
            _ = try? TmuxPane.wait(pid)
            // Left behind only when it was killed harder; never another server's.
            unlink("/tmp/.X\(number)-lock")
            unlink("/tmp/.X11-unix/X\(number)")
        }

        @discardableResult
        func xdotool(_ arguments: [String]) throws -> Run {
            let result = try run("/usr/bin/xdotool", arguments, environment: ["DISPLAY": display])
            #expect(result.status == 0, "xdotool \(arguments.prefix(4)): \(result.errors)")
            return result
        }

        /// Saves the whole screen as build/screenshots/NAME.png.
        func screenshot(_ name: String) throws {
            try FileManager.default.createDirectory(atPath: LockScreenTests.screenshots, withIntermediateDirectories: true)
            let path = LockScreenTests.screenshots + "/" + name + ".png"
            let result = try run("/usr/bin/import", ["-display", display, "-window", "root", path])
            #expect(result.status == 0, "import: \(result.errors)")
        }
    }

    /// A running `puff-lock` and what it wrote on stderr.
    final class Locker: WatchedChild {
        /// `systemPassword`: the namespace also shows the stage's copy of /etc/shadow (for
        /// pam_unix after Puff in the service).
        /// `environment`: more variables for puff-lock (NAME=VALUE, no quotes).
        init(stage: UnprivilegedTests.Stage, user: String, server: XServer, extra: [String] = [],
             systemPassword: Bool = false, environment: [String] = [], beforeExec: String = "") throws {
            let log = stage.fixture.root + "/lock-\(UUID().uuidString).log"
            FileManager.default.createFile(atPath: log, contents: nil)
            let command = [stage.bin + "/puff-lock", "--pam-confdir", stage.fixture.pamDirectory, "--print-layout"] + extra
            let quoted = command.map { "'" + $0 + "'" }.joined(separator: " ")
            let shadow = systemPassword ? "mount --bind \(stage.shadow) /etc/shadow && " : ""
            let script = "mount --bind \(stage.fixture.etc) /etc/puff && mount --bind \(stage.fixture.state) /var/lib/puff && " + shadow
                + beforeExec + "exec setpriv --reuid=\(user) --regid=\(user) --init-groups /usr/bin/env -u WAYLAND_DISPLAY DISPLAY=\(server.display) "
                + environment.map { "'\($0)' " }.joined() + "\(quoted) 2>>'\(log)'"
            let pid = try TmuxPane.spawn("/usr/bin/unshare", ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script])
            super.init(pid: pid, log: log, group: false)
        }

        func layout() throws -> (x: Double, y: Double, scale: Double, buttons: [String: (Int, Int)]) {
            try LockScreenTests.layout(in: text)
        }

        deinit {
            // How close the healthy authentication processes came to the watchdog's limit, for
            // docs/dev/puff-lock-design.md (measured in every test that unlocks, alone and in make test).
            if let line = text.split(separator: "\n").first(where: { $0.contains("the longest silence of an authentication process") }) {
                LockCrashTests.record("silence: " + line.dropFirst("puff-lock: ".count), file: "lock-silences.txt", quiet: true)
            }
        }

        /// The authentication processes that were the active one (given the input, able to
        /// unlock), in order: started as such, or a standby that took over.
        var children: [pid_t] {
            text.split(separator: "\n").compactMap { line in
                if let range = line.range(of: "started the authentication process ") { return pid_t(line[range.upperBound...]) }
                guard let start = line.range(of: "the standby authentication process "),
                      let end = line.range(of: " takes over", range: start.upperBound..<line.endIndex) else { return nil }
                return pid_t(line[start.upperBound..<end.lowerBound])
            }
        }

        /// The standby authentication processes started, in order.
        var standbys: [pid_t] {
            text.split(separator: "\n").compactMap { line in
                guard let range = line.range(of: "started a standby authentication process ") else { return nil }
                return pid_t(line[range.upperBound...])
            }
        }

        /// The authentication process now (the last one made the active one).
        func child() throws -> pid_t { try #require(children.last, "no authentication process in: \(text)") }
    }

    /// The last layout `--print-layout` wrote: the picture's origin and scale, and the buttons' centres.
    static func layout(in text: String) throws -> (x: Double, y: Double, scale: Double, buttons: [String: (Int, Int)]) {
            var picture: (Double, Double, Double)?
            var buttons: [String: (Int, Int)] = [:]
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                if words.count >= 5, words[1] == "picture", let x = Double(words[2]), let y = Double(words[3]), let scale = Double(words[4]) {
                    picture = (x, y, scale)
                    buttons = [:]
                }
                if words.count == 5, words[1] == "button", let x = Double(words[3]), let y = Double(words[4]) {
                    buttons[String(words[2])] = (Int(x), Int(y))
                }
            }
            let found = try #require(picture, "no layout in: \(text)")
            return (found.0, found.1, found.2, buttons)
    }

    /// The common start of a test: puff-it-lena enrolled on a stage of its own, an X server,
    /// and puff-lock on it, its screen ready.
    static func readyLocker() throws -> (user: String, stage: UnprivilegedTests.Stage, server: XServer, locker: Locker) {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try Self.stage(user)
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        return (user, stage, server, locker)
    }

    /// A store with the user's 6-digit passcode and gesture, and a `puff-lock` service that
    /// reaches the module through the helper.
    static func stage(_ user: String, config: String = "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\n") throws -> UnprivilegedTests.Stage {
        let stage = try UnprivilegedTests.Stage(config: config)
        #expect(try stage.fixture.enroll(user, "604917").status == 0)
        try GestureLoginTests().enrolled(stage.fixture, user)
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-lock",
                                "auth required \(stage.bin)/pam_puff.so nodelay helper=\(stage.helper)\naccount required pam_permit.so\n",
                                mode: 0o644)
        // cp(1), not copyItem: see Stage.copy (ETXTBSY from a write descriptor inherited by a fork).
        let copied = try run("/bin/cp", [lockBinary, stage.bin + "/puff-lock"])
        #expect(copied.status == 0, "\(copied.errors)")
        chmod(stage.bin + "/puff-lock", 0o755)
        return stage
    }

    /// Draws the parts with the mouse: presses, moves through every point (screen pixels of
    /// the picture points), releases.
    static func draw(_ server: XServer, _ locker: Locker, _ parts: [GestureLoginTests.Part],
                     shift: Double = 0) throws {
        try draw(server, layoutText: locker.text, parts, shift: shift)
    }

    static func draw(_ server: XServer, layoutText: String, _ parts: [GestureLoginTests.Part], shift: Double = 0) throws {
        let layout = try Self.layout(in: layoutText)
        for part in parts {
            var arguments: [String] = []
            for (index, point) in part.points.enumerated() {
                let x = Int((layout.x + (point.0 + shift) * layout.scale).rounded())
                let y = Int((layout.y + point.1 * layout.scale).rounded())
                arguments += ["mousemove", String(x), String(y)]
                if index == 0 { arguments += ["mousedown", "1"] }
            }
            arguments += ["mouseup", "1"]
            try server.xdotool(arguments)
        }
    }

    @Test func theRightGestureUnlocksAndAWrongOneKeepsTheScreenLocked() throws {
        let (user, stage, server, locker) = try Self.readyLocker()
        #expect(locker.text.contains("locked \(user)"))
        try server.screenshot("lock-ready")

        // 40 picture pixels (10 % of the picture) to the right: the version-2 recognizer
        // forgives a small whole-gesture shift (GestureLoginTests), not this one.
        try Self.draw(server, locker, GestureLoginTests.genuine, shift: 40)
        usleep(300_000)
        try server.screenshot("lock-wrong-drawn")
        try server.xdotool(["key", "Return"])
        #expect(locker.waitFor("Puff: wrong gesture."), "\(locker.text)")
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-wrong-message")
        #expect(locker.exitStatus(timeout: 0.5) == nil, "a wrong gesture unlocked: \(locker.text)")
        #expect(try stage.fixture.failures(user) == 1)

        try Self.draw(server, locker, GestureLoginTests.genuine)
        usleep(300_000)
        try server.screenshot("lock-right-drawn")
        try server.xdotool(["key", "Return"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(locker.text.contains("unlocked \(user)"))
        #expect(try stage.fixture.failures(user) == 0)
    }

    @Test func thePasscodeClickedOnTheKeypadUnlocks() throws {
        let (user, stage, server, locker) = try Self.readyLocker()
        let buttons = try locker.layout().buttons
        for digit in "60491" {
            let (x, y) = try #require(buttons["digit\(digit)"], "\(buttons)")
            try server.xdotool(["mousemove", String(x), String(y), "click", "1"])
        }
        usleep(300_000)
        try server.screenshot("lock-keypad")
        // The sixth digit answers (a fixed-length passcode needs no Enter).
        let (x, y) = try #require(buttons["digit7"])
        try server.xdotool(["mousemove", String(x), String(y), "click", "1"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(try stage.fixture.failures(user) == 0)
    }

    /// Issue 32, item 4: a picture in the store that cannot be decoded (cut short after it was
    /// enrolled) is said to be that, not missing; the keypad still takes the passcode.
    @Test func anUndecodableStoredPictureIsSaidToBeSo() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try Self.stage(user)
        let stored = stage.fixture.etc + "/pictures/" + user
        let bytes = try Data(contentsOf: URL(fileURLWithPath: stored))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: stored))
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("The picture for \(user) in the Puff store could not be decoded"), "\(locker.text)")
        #expect(!locker.text.contains("No picture"), "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-undecodable-picture")
        #expect(locker.text.contains("puff-lock: picture none"), "\(locker.text)")
        // The keypad's buttons (no picture line: the layout's own parser wants one).
        var buttons: [String: (Int, Int)] = [:]
        for line in locker.text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 5, words[1] == "button", let x = Double(words[3]), let y = Double(words[4]) {
                buttons[String(words[2])] = (Int(x), Int(y))
            }
        }
        // The sixth digit answers (a fixed-length passcode needs no Enter).
        for digit in "604917" {
            let (x, y) = try #require(buttons["digit\(digit)"], "\(locker.text)")
            try server.xdotool(["mousemove", String(x), String(y), "click", "1"])
        }
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    @Test func aLockedAccountShowsTheTimeLeftAndStaysLocked() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try Self.stage(user)
        for _ in 1...3 { try stage.authenticate(as: user, replies: ["111333"]) }
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("Puff: too many failed attempts; try again in 1 minute."), "\(locker.text)")
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-locked-out")
        // No prompt, no loop: the next attempt waits for a key.
        usleep(1_000_000)
        #expect(locker.text.components(separatedBy: "too many failed attempts").count - 1 == 1, "\(locker.text)")
        #expect(locker.exitStatus(timeout: 0.1) == nil)
        #expect(try stage.fixture.failures(user) == 3)

        // A second locker is refused while one runs, and says so, before it starts anything.
        let second = try Locker(stage: stage, user: user, server: server, extra: ["--grab-timeout", "0.5"])
        #expect(second.exitStatus(timeout: 20) == 69)
        // It names the selection's owner: the first locker's covering window.
        let windows = try run("/usr/bin/xwininfo", ["-display", server.display, "-root", "-children"])
        let cover = try #require(windows.lines.first { $0.contains("\"puff-lock\"") }?.split(separator: " ").first, "\(windows.output)")
        #expect(second.text.contains("another puff-lock is locking this display, or another X client blocks it: the selection _PUFF_LOCK_S0 is owned by window \(cover); not locking"), "\(second.text)")
        #expect(second.children.isEmpty, "\(second.text)")

        // A window mapped over the lock screen is covered again.
        let clock = try TmuxPane.spawn("/usr/bin/xclock", ["xclock", "-display", server.display, "-geometry", "400x400+0+0"])
        defer {
            kill(clock, SIGKILL)
            _ = try? TmuxPane.wait(clock)
        }
        usleep(1_000_000)
        let tree = try run("/usr/bin/xwininfo", ["-display", server.display, "-root", "-children"])
        // xwininfo lists the children from the top of the stack down.
        let children = tree.lines.filter { $0.hasPrefix("     0x") }
        #expect(children.first?.contains("\"puff-lock\"") == true, "\(tree.output)")
        #expect(children.contains { $0.contains("xclock") }, "\(tree.output)")
        try server.screenshot("lock-after-xclock")
        // Unmapped by another client (any client may, by id): mapped again at once.
        let found = try server.xdotool(["search", "--name", "^puff-lock$"])
        let id = try #require(found.lines.first, "\(found.output)")
        try server.xdotool(["windowunmap", id])
        usleep(500_000)
        let state = try run("/usr/bin/xwininfo", ["-display", server.display, "-id", id])
        #expect(state.output.contains("Map State: IsViewable"), "\(state.output)")

        // A key press tries again: still locked, one more message, not counted.
        try server.xdotool(["key", "space"])
        #expect(locker.waitFor("too many failed attempts", count: 2), "\(locker.text)")
        #expect(try stage.fixture.failures(user) == 3)
    }

    /// The shipped service (pam.d/puff-lock, with common-auth reduced to pam_unix): a user
    /// without a Puff record gets the password prompt in the same window, and the password
    /// unlocks; an enrolled user's wrong gesture ends the attempt without reaching pam_unix.
    @Test func theShippedServiceAsksUsersWithoutARecordForTheirPassword() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try UnprivilegedTests.Stage()
        // cp(1), not copyItem: see Stage.copy (ETXTBSY from a write descriptor inherited by a fork).
        #expect(try run("/bin/cp", [Self.lockBinary, stage.bin + "/puff-lock"]).status == 0)
        chmod(stage.bin + "/puff-lock", 0o755)
        let shipped = try String(contentsOfFile: Artefacts.repository.appendingPathComponent("pam.d/puff-lock").path, encoding: .utf8)
        let service = shipped.replacingOccurrences(of: " pam_puff.so nullok", with: " \(stage.bin)/pam_puff.so nullok nodelay helper=\(stage.helper)")
        #expect(service != shipped)
        try stage.fixture.write(stage.fixture.pamDirectory + "/puff-lock", service, mode: 0o644)
        try stage.fixture.write(stage.fixture.pamDirectory + "/common-auth", "auth required pam_unix.so\n", mode: 0o644)
        // The password exists only in the stage's shadow copy, readable by unix_chkpwd (group shadow).
        let hash = try run("/usr/bin/openssl", ["passwd", "-6", "-stdin"], input: "Lock-pass-3141\n")
        let shadow = try String(contentsOfFile: stage.shadow, encoding: .utf8)
        var lines = shadow.split(separator: "\n").map(String.init).filter { !$0.hasPrefix(user + ":") }
        lines.append("\(user):\(hash.output.trimmingCharacters(in: .whitespacesAndNewlines)):20000:0:99999:7:::")
        try stage.fixture.write(stage.shadow, lines.joined(separator: "\n") + "\n", mode: 0o640)
        let group = try #require(getgrnam("shadow")).pointee.gr_gid
        chown(stage.shadow, 0, group)

        // The lockers bind the stage's shadow over /etc/shadow for their whole life: no
        // useradd may replace the suite's /etc/shadow meanwhile (it would detach that mount).
        Hermetic.systemFiles.lockForReading()
        defer { Hermetic.systemFiles.unlock() }
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server, systemPassword: true)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("picture none"))
        try server.xdotool(["type", "--delay", "20", "not-the-password"])
        try server.xdotool(["key", "Return"])
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        usleep(300_000)
        #expect(locker.exitStatus(timeout: 0.1) == nil)
        try server.xdotool(["type", "--delay", "20", "Lock-pass-3141"])
        usleep(300_000)
        try server.screenshot("lock-password-prompt")
        try server.xdotool(["key", "Return"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(locker.text.contains("unlocked \(user)"))
        #expect(!locker.text.contains("Lock-pass-3141") && !locker.text.contains("not-the-password"))

        // Enrolled now: a wrong gesture ends the attempt in Puff; pam_unix never asks.
        #expect(try stage.fixture.enroll(user, "604917").status == 0)
        try GestureLoginTests().enrolled(stage.fixture, user)
        let enrolled = try Locker(stage: stage, user: user, server: server, systemPassword: true)
        #expect(enrolled.waitFor("screen ready"), "\(enrolled.text)")
        try Self.draw(server, enrolled, GestureLoginTests.genuine, shift: 40)
        try server.xdotool(["key", "Return"])
        #expect(enrolled.waitFor("Puff: wrong gesture."), "\(enrolled.text)")
        #expect(enrolled.waitFor("screen ready", count: 2), "\(enrolled.text)")
        #expect(!enrolled.text.contains("picture none"), "\(enrolled.text)")
        #expect(try stage.fixture.failures(user) == 1)
    }

    /// A child's exit status within `timeout` seconds; killed (nil) when it is still running.
    static func exitStatus(_ pid: pid_t, timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        var raw: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &raw, WNOHANG) == pid { return raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F) }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        _ = try? TmuxPane.wait(pid)
        return nil
    }

    /// `--draw`: the gesture drawn in a window comes out in the wire format, in picture
    /// pixels; enrolled from it, the test's own wire text of the same gesture logs in.
    @Test func aGestureDrawnInTheWindowEnrollsAndVerifies() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let fixture = try Fixture(moduleArguments: "deny=100")
        let server = try XServer()
        let output = fixture.root + "/drawn.txt", log = fixture.root + "/draw.log"
        func start() throws -> pid_t {
            // The previous run's log must not be read as this one's.
            unlink(log)
            return try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec /usr/bin/env DISPLAY=\(server.display) '\(Self.lockBinary)' --draw "
                                            + "--picture '\(GestureLoginTests.picture)' --print-layout > '\(output)' 2> '\(log)'"])
        }
        func waitForLayout() -> String {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                if text.contains("screen ready") { return text }
                usleep(50_000)
            }
            return ""
        }
        let drawing = try start()
        let layoutText = waitForLayout()
        try Self.draw(server, layoutText: layoutText, GestureLoginTests.genuine)
        usleep(300_000)
        try server.screenshot("draw-window")
        try server.xdotool(["key", "Return"])
        #expect(Self.exitStatus(drawing, timeout: 20) == 0)
        let drawn = try String(contentsOfFile: output, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(drawn.hasPrefix("puff-gesture:1:400x300:p "), "\(drawn)")
        #expect(drawn.split(separator: ";").count == 3, "\(drawn)")
        // The first point is the stroke's start, (40, 260), within half a screen pixel.
        let first = drawn.dropFirst("puff-gesture:1:400x300:p ".count).prefix { $0 != " " }.split(separator: ",").compactMap { Double($0) }
        let scale = try Self.layout(in: layoutText).scale
        #expect(first.count == 2 && abs(first[0] - 40) <= 0.5 / scale + 0.001 && abs(first[1] - 260) <= 0.5 / scale + 0.001, "\(first)")

        try GestureLoginTests().enrolled(fixture, user, gesture: drawn)
        let login = try fixture.authenticate(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
        #expect(login.status == PAMCode.success, "\(login.output)")

        // Esc on an empty picture cancels: exit 2, nothing on stdout.
        let cancelled = try start()
        #expect(waitForLayout().contains("screen ready"))
        try server.xdotool(["key", "Escape"])
        #expect(Self.exitStatus(cancelled, timeout: 20) == 2)
        #expect(try String(contentsOfFile: output, encoding: .utf8).isEmpty)
    }

    /// Two X screens, and two monitors on the first with the right one primary: the picture
    /// and the keypad are on the primary monitor, and the second X screen is covered too.
    @Test func thePictureIsOnThePrimaryMonitorAndEveryScreenIsCovered() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try Self.stage(user)
        // -noreset: the monitors set below outlive the xrandr clients that set them.
        let server = try XServer(extra: ["-screen", "1", "800x600x24", "-noreset"])
        for monitor in ["left 640/170x800/212+0+0", "*right 640/170x800/212+640+0"] {
            let set = try run("/usr/bin/xrandr", ["-display", server.display, "--setmonitor"] + monitor.split(separator: " ").map(String.init) + ["none"])
            #expect(set.status == 0, "\(set.errors)")
        }
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        let layout = try locker.layout()
        #expect(layout.x >= 640 && layout.x + 400 * layout.scale <= 1280, "\(layout)")
        for (name, (x, _)) in layout.buttons { #expect(x >= 640 && x < 1280, "\(name) at \(x)") }
        try server.screenshot("lock-primary-monitor")
        // The second X screen: one child of its root, covering it.
        let tree = try run("/usr/bin/xwininfo", ["-display", server.display + ".1", "-root", "-children"])
        let children = tree.lines.filter { $0.hasPrefix("     0x") }
        #expect(children.count == 1 && children.first?.contains("800x600+0+0") == true, "\(tree.output)")
        // Still drawable and unlockable there.
        try Self.draw(server, locker, GestureLoginTests.genuine)
        try server.xdotool(["key", "Return"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// An ordinary window (xev) that gets keys and clicks before the lock gets none while the
    /// screen is locked, and gets them again after the unlock.
    @Test func keysAndClicksDoNotReachTheSessionWhileLocked() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try Self.stage(user)
        let server = try XServer(extra: ["-noreset"])
        let events = stage.fixture.root + "/xev.txt"
        let xev = try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec /usr/bin/xev -display \(server.display) -geometry 200x200+1000+560 > '\(events)'"])
        defer {
            kill(xev, SIGKILL)
            _ = try? TmuxPane.wait(xev)
        }
        func count(_ event: String) -> Int {
            ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").components(separatedBy: event + " event").count - 1
        }
        usleep(800_000)
        // The control: before the lock, the session's window receives both.
        try server.xdotool(["mousemove", "1100", "650", "key", "a", "click", "1"])
        usleep(400_000)
        #expect(count("KeyPress") == 1 && count("ButtonPress") == 1, "xev saw nothing before the lock")

        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        try server.xdotool(["mousemove", "1100", "650", "key", "b", "key", "c", "click", "1", "click", "3", "key", "Escape"])
        usleep(400_000)
        #expect(count("KeyPress") == 1 && count("ButtonPress") == 1, "input reached the session while locked")

        let buttons = try locker.layout().buttons
        for digit in "604917" {
            let (x, y) = try #require(buttons["digit\(digit)"])
            try server.xdotool(["mousemove", String(x), String(y), "click", "1"])
        }
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        try server.xdotool(["mousemove", "1100", "650", "key", "d"])
        usleep(400_000)
        #expect(count("KeyPress") == 2, "the session's window gets keys again after the unlock")
    }

    /// Whether `needle` is anywhere in the readable, writable memory of `pid` (heap, stacks,
    /// anonymous and data mappings), read through /proc/PID/mem as root.
    static func memoryContains(_ pid: pid_t, _ needle: String) throws -> Bool {
        let pattern = Array(needle.utf8)
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let fd = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PadTestError("cannot open /proc/\(pid)/mem: errno \(errno)") }
        defer { close(fd) }
        var regions = 0
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[1].hasPrefix("rw") else { continue }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16), end > start else { continue }
            var buffer = [UInt8](repeating: 0, count: Int(end - start))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(truncatingIfNeeded: start)) }
            guard got > 0 else { continue }
            regions += 1
            let found = buffer.withUnsafeBytes { haystack in
                pattern.withUnsafeBytes { findBytes(haystack.baseAddress, got, $0.baseAddress, $0.count) != nil }
            }
            if found { return true }
        }
        guard regions > 0 else { throw PadTestError("no memory of \(pid) could be read") }
        return false
    }

    /// The gesture's wire text and the typed passcode are gone from both processes' memory
    /// once submitted (the passcode is found in the child's while it is being typed: the scan
    /// works), and both are not dumpable and have a core limit of 0.
    @Test func noStrokeOrPasscodeIsLeftInMemoryAfterASubmission() throws {
        let (user, stage, server, locker) = try Self.readyLocker()
        let child = try locker.child()
        for pid in [locker.pid, child] {
            let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
            #expect(exe.hasSuffix("/puff-lock"), "\(exe)")
            let state = try GraphicalEnrollmentTests.dumpState(pid)
            #expect(state.realUid == getpwnam(user)?.pointee.pw_uid, "\(state)")
            #expect(state.procOwner == 0, "puff-lock \(pid) is dumpable: \(state)")
            #expect(state.coreLimit == "0 0", "\(state)")
        }

        try Self.draw(server, locker, GestureLoginTests.genuine, shift: 40)
        try server.xdotool(["key", "Return"])
        #expect(locker.waitFor("Puff: wrong gesture."), "\(locker.text)")
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        for pid in [locker.pid, child] {
            #expect(try !Self.memoryContains(pid, "puff-gesture:1:400x300"), "the submitted gesture is still in \(pid)'s memory")
        }

        // Five digits typed: in the child's field, so in its memory (the control).
        try server.xdotool(["type", "--delay", "30", "11133"])
        usleep(500_000)
        #expect(try Self.memoryContains(child, "11133"), "the memory scan does not see the typed field")
        // The sixth submits; the wrong passcode is wiped everywhere, in the parent that
        // forwarded the keys as well.
        try server.xdotool(["type", "3"])
        #expect(locker.waitFor("Puff: wrong passcode.", count: 1), "\(locker.text)")
        #expect(locker.waitFor("screen ready", count: 3), "\(locker.text)")
        for pid in [locker.pid, child] {
            #expect(try !Self.memoryContains(pid, "11133"), "the submitted passcode is still in \(pid)'s memory")
        }
        #expect(try stage.fixture.failures(user) == 2)
    }

    @Test func itRefusesToRunAsRoot() throws {
        let result = try run(Self.lockBinary, ["--pam-confdir", "/nonexistent", "--backend", "x11"], environment: ["DISPLAY": ":0"])
        #expect(result.status == 77)
        #expect(result.errors.contains("refusing to run as root"))
    }
}

/// glibc's memmem (a GNU extension the Glibc module does not declare).
@_silgen_name("memmem")
private func findBytes(_ haystack: UnsafeRawPointer?, _ haystackLength: Int, _ needle: UnsafeRawPointer?,
                       _ needleLength: Int) -> UnsafeMutableRawPointer?

/// Whether a child has not exited yet (it is not reaped here).
func childIsRunning(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.range(of: ") ", options: .backwards) else { return false }
    return !stat[close.upperBound...].hasPrefix("Z")
}

