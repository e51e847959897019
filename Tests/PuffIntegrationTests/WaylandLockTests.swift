import Foundation
import Testing

/// `puff-lock` on Wayland, under a headless compositor that implements ext-session-lock-v1
/// (Tests/Wayland/lock-compositor.py, on pywlroots 0.17.0: Debian 12's compositors lack the
/// protocol). The compositor shows magenta wherever the session would be visible, keeps a
/// black blanket under the lock surfaces while locked, and reports whether the session is
/// locked; screenshots come from grim (screencopy). puff-lock runs as an ordinary user through
/// the setuid helper and the real module (the stage of `LockScreenTests`), as on X11.
@Suite(.serialized)
struct WaylandLockTests {
    static var python: String {
        ProcessInfo.processInfo.environment["PUFF_WAYLAND_PYTHON"]
            ?? Artefacts.repository.appendingPathComponent("build/wayland-venv/bin/python").path
    }
    static var compositorScript: String { Artefacts.repository.appendingPathComponent("Tests/Wayland/lock-compositor.py").path }

    /// The test compositor, in a runtime directory of its own, stopped at the end.
    final class Compositor {
        let runtime: String
        let pid: pid_t
        var socket: String { runtime + "/wayland-puff" }

        init(sizes: [String] = ["1280x800"], withoutSessionLock: Bool = false) throws {
            guard FileManager.default.isExecutableFile(atPath: WaylandLockTests.python) else {
                throw PadTestError("no Python with pywlroots at \(WaylandLockTests.python): run `make wayland-test-env`")
            }
            var template = Array("/tmp/puff-wl-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp: errno \(errno)") }
            runtime = String(cString: made)
            chmod(runtime, 0o755)
            let log = runtime + "/compositor.log"
            pid = try TmuxPane.spawn("/bin/sh", ["sh", "-c", "exec '\(WaylandLockTests.python)' '\(WaylandLockTests.compositorScript)' "
                + (withoutSessionLock ? "--without-session-lock " : "") + "'\(runtime)' " + sizes.joined(separator: " ")
                + " > '\(log)' 2>&1"])
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if (try? command("state")) != nil { return }
                guard childIsRunning(pid) else { break }
                usleep(100_000)
            }
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            kill(pid, SIGKILL)
            _ = try? TmuxPane.wait(pid)
            throw PadTestError("the test compositor did not start: \(text)")
        }

        deinit {
            kill(pid, SIGTERM)
            _ = try? TmuxPane.wait(pid)
            try? FileManager.default.removeItem(atPath: runtime)
        }

        var log: String { (try? String(contentsOfFile: runtime + "/compositor.log", encoding: .utf8)) ?? "" }

        /// One command on the control socket, its one-line answer.
        @discardableResult
        func command(_ line: String) throws -> String {
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw PadTestError("socket: errno \(errno)") }
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let path = Array((runtime + "/control").utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.enumerated() where index < raw.count - 1 { raw[index] = byte }
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else { throw PadTestError("connect: errno \(errno)") }
            let request = Array((line + "\n").utf8)
            guard write(fd, request, request.count) == request.count else { throw PadTestError("write: errno \(errno)") }
            var reply: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !reply.contains(UInt8(ascii: "\n")) {
                let got = read(fd, &buffer, buffer.count)
                guard got > 0 else { break }
                reply += buffer[0..<got]
            }
            let text = String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.hasPrefix("error") { throw PadTestError("compositor: \(line.prefix(40)) → \(text)") }
            return text
        }

        var state: String { (try? command("state")) ?? "(no answer)" }

        /// The outputs: name → (x, y, width, height, whether a lock surface is mapped there).
        func outputs() throws -> [String: (x: Int, y: Int, width: Int, height: Int, mapped: Bool)] {
            var found: [String: (x: Int, y: Int, width: Int, height: Int, mapped: Bool)] = [:]
            for entry in try command("outputs").split(separator: ";") {
                let words = entry.split(separator: " ").map(String.init)
                guard words.count == 6, let x = Int(words[1]), let y = Int(words[2]), let width = Int(words[3]),
                      let height = Int(words[4]) else { continue }
                found[words[0]] = (x, y, width, height, words[5] == "mapped")
            }
            return found
        }

        /// Saves an output as build/screenshots/NAME.png (grim, through screencopy); the path.
        @discardableResult
        func screenshot(_ name: String, output: String = "HEADLESS-1") throws -> String {
            try FileManager.default.createDirectory(atPath: LockScreenTests.screenshots, withIntermediateDirectories: true)
            let path = LockScreenTests.screenshots + "/" + name + ".png"
            let result = try run("/usr/bin/grim", ["-o", output, path], environment: ["WAYLAND_DISPLAY": socket])
            #expect(result.status == 0, "grim: \(result.errors)")
            return path
        }

        /// The colours in a screenshot of the output (ImageMagick's histogram, `#RRGGBB` upper case).
        func colours(_ output: String, name: String) throws -> String {
            let path = try screenshot(name, output: output)
            let histogram = try run("/usr/bin/convert", [path, "-format", "%c", "histogram:info:-"])
            #expect(histogram.status == 0, "\(histogram.errors)")
            return histogram.output.uppercased()
        }

        /// Whether any pixel of the output shows the session (the compositor's magenta).
        func showsSession(_ output: String = "HEADLESS-1", name: String) throws -> Bool {
            try colours(output, name: name).contains("#FF00FF")
        }

        /// Whether puff-lock's own surface shows there, and nothing of the session: its dark
        /// theme's background (#121217) is on the output, magenta is not (the compositor's
        /// black blanket alone, or an output nothing is drawn on, is not puff-lock's).
        func showsLockSurface(_ output: String = "HEADLESS-1", name: String) throws -> Bool {
            let found = try colours(output, name: name)
            return found.contains("#121217") && !found.contains("#FF00FF")
        }

        /// Draws the parts with the pointer (or a finger): picture pixels through the layout
        /// `--print-layout` wrote, one stroke per part.
        /// `outputScale`: the output's scale (the layout is in its pixels, the pointer in points).
        func draw(layoutText: String, _ parts: [GestureLoginTests.Part], shift: Double = 0, touch: Bool = false,
                  outputScale: Double = 1) throws {
            let layout = try LockScreenTests.layout(in: layoutText)
            for part in parts {
                let points = part.points.map { point in
                    "\((layout.x + (point.0 + shift) * layout.scale).rounded() / outputScale) "
                        + "\((layout.y + point.1 * layout.scale).rounded() / outputScale)"
                }
                try command((touch ? "touch-drag " : "drag ") + points.joined(separator: " "))
            }
        }

        func waitFor(state wanted: String, timeout: Double = 10) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if state == wanted { return true }
                usleep(50_000)
            }
            return false
        }
    }

    /// puff-lock as the user on the compositor (WAYLAND_DISPLAY, the socket's full path).
    final class Locker: WatchedChild {
        init(stage: UnprivilegedTests.Stage, user: String, compositor: Compositor, extra: [String] = []) throws {
            let log = stage.fixture.root + "/wayland-lock-\(UUID().uuidString).log"
            FileManager.default.createFile(atPath: log, contents: nil)
            let command = [stage.bin + "/puff-lock", "--pam-confdir", stage.fixture.pamDirectory, "--print-layout"] + extra
            let quoted = command.map { "'" + $0 + "'" }.joined(separator: " ")
            let script = "mount --bind \(stage.fixture.etc) /etc/puff && mount --bind \(stage.fixture.state) /var/lib/puff && "
                + "exec setpriv --reuid=\(user) --regid=\(user) --init-groups /usr/bin/env -u DISPLAY "
                + "WAYLAND_DISPLAY=\(compositor.socket) \(quoted) 2>>'\(log)'"
            let pid = try TmuxPane.spawn("/usr/bin/unshare", ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script])
            super.init(pid: pid, log: log, group: false)
        }

        /// The authentication processes made the active one, in order (as `LockScreenTests.Locker`).
        var children: [pid_t] {
            text.split(separator: "\n").compactMap { line in
                if let range = line.range(of: "started the authentication process ") { return pid_t(line[range.upperBound...]) }
                guard let start = line.range(of: "the standby authentication process "),
                      let end = line.range(of: " takes over", range: start.upperBound..<line.endIndex) else { return nil }
                return pid_t(line[start.upperBound..<end.lowerBound])
            }
        }

        /// The locking parent: the process that exec'd into puff-lock (the unshare wrapper's pid).
        var parent: pid_t { pid }
    }

    static func readyLocker(sizes: [String] = ["1280x800"]) throws
        -> (user: String, stage: UnprivilegedTests.Stage, compositor: Compositor, locker: Locker) {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let compositor = try Compositor(sizes: sizes)
        let locker = try Locker(stage: stage, user: user, compositor: compositor)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("locked \(user) (Wayland session lock"), "\(locker.text)")
        #expect(compositor.state == "locked")
        return (user, stage, compositor, locker)
    }

    @Test func theRightGestureUnlocksAndAWrongOneKeepsTheSessionLocked() throws {
        let (user, stage, compositor, locker) = try Self.readyLocker()
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        #expect(try compositor.showsLockSurface(name: "wayland-lock-ready"))

        try compositor.draw(layoutText: locker.text, GestureLoginTests.genuine, shift: 40)
        usleep(300_000)
        try compositor.screenshot("wayland-lock-wrong-drawn")
        try compositor.command("key enter")
        #expect(locker.waitFor("Puff: wrong gesture."), "\(locker.text)")
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        usleep(300_000)
        #expect(try !compositor.showsSession(name: "wayland-lock-wrong-message"))
        #expect(locker.exitStatus(timeout: 0.5) == nil, "a wrong gesture unlocked: \(locker.text)")
        #expect(compositor.state == "locked")
        #expect(try stage.fixture.failures(user) == 1)

        try compositor.draw(layoutText: locker.text, GestureLoginTests.genuine)
        usleep(300_000)
        try compositor.screenshot("wayland-lock-right-drawn")
        try compositor.command("key enter")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(locker.text.contains("unlocked \(user)"))
        #expect(compositor.waitFor(state: "unlocked"), "\(compositor.log)")
        usleep(300_000)
        #expect(try compositor.showsSession(name: "wayland-lock-unlocked"), "the session is not shown after the unlock")
        #expect(try stage.fixture.failures(user) == 0)
    }

    @Test func theRightPasscodeTypedUnlocksAndAWrongOneDoesNot() throws {
        let (user, stage, compositor, locker) = try Self.readyLocker()
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        try compositor.command("type 111333")
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        usleep(300_000)
        try compositor.screenshot("wayland-lock-wrong-passcode")
        #expect(locker.exitStatus(timeout: 0.5) == nil, "a wrong passcode unlocked: \(locker.text)")
        #expect(compositor.state == "locked")
        #expect(try stage.fixture.failures(user) == 1)
        try compositor.command("type 60491")
        usleep(300_000)
        try compositor.screenshot("wayland-lock-typing")
        try compositor.command("type 7")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(compositor.waitFor(state: "unlocked"))
        #expect(try stage.fixture.failures(user) == 0)
    }

    /// Key repeat, which Wayland leaves to the client (the compositor says 25 a second after
    /// 300 ms): a held Backspace clears the two digits typed, so the passcode typed after it
    /// unlocks. Without repeat one digit stays and the sixth digit submits a wrong passcode.
    @Test func aHeldBackspaceRepeatsAndClearsTheField() throws {
        let (user, stage, compositor, locker) = try Self.readyLocker()
        defer { withExtendedLifetime(stage) {} }
        try compositor.command("type 99")
        try compositor.command("keydown backspace")
        usleep(1_500_000)
        try compositor.command("keyup backspace")
        try compositor.command("type 604917")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(compositor.waitFor(state: "unlocked"))
        #expect(try stage.fixture.failures(user) == 0)
    }

    /// A HiDPI output (scale 2: 1280 × 800 pixels, 640 × 400 points): the lock screen is drawn
    /// at its pixels (the layout is that of a 1280-pixel screen, not a 640-point one) and the
    /// pointer's positions, which come in points, are scaled to them: the gesture drawn
    /// through the compositor's points unlocks.
    @Test func aScaledOutputIsDrawnAtItsPixelsAndTheGestureUnlocks() throws {
        let (user, stage, compositor, locker) = try Self.readyLocker(sizes: ["1280x800@2"])
        defer { withExtendedLifetime(stage) {} }
        let layout = try LockScreenTests.layout(in: locker.text)
        // The 400-pixel-wide test picture: shown about twice its size on 1280 × 800 pixels, below
        // its size on 640 × 400 points.
        #expect(layout.scale > 1.2, "the picture is laid out for points, not pixels: \(locker.text)")
        try compositor.draw(layoutText: locker.text, GestureLoginTests.genuine, outputScale: 2)
        usleep(300_000)
        try compositor.screenshot("wayland-lock-hidpi-drawn")
        try compositor.command("key enter")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(compositor.waitFor(state: "unlocked"))
        #expect(try stage.fixture.failures(user) == 0)
    }

    @Test func theGestureDrawnWithAFingerUnlocks() throws {
        let (user, stage, compositor, locker) = try Self.readyLocker()
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        try compositor.draw(layoutText: locker.text, GestureLoginTests.genuine, touch: true)
        usleep(300_000)
        try compositor.screenshot("wayland-lock-touch-drawn")
        try compositor.command("key enter")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        #expect(locker.text.contains("unlocked \(user)"))
        #expect(compositor.waitFor(state: "unlocked"))
    }

    /// Harm to the authentication child: it is replaced by the standby, the compositor holds
    /// the lock meanwhile, no output shows the session, and the right gesture then unlocks.
    static func childSurvives(_ name: String, signal: Int32) throws {
        let (user, stage, compositor, locker) = try Self.readyLocker(sizes: ["1280x800", "1024x768"])
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        #expect(locker.waitFor("is ready", timeout: 20), "no standby: \(locker.text)")
        let first = try #require(locker.children.last)
        let readyBefore = locker.text.components(separatedBy: "screen ready").count - 1
        // From the harm to the new child's `screen ready` line, watched every 5 ms on a thread.
        let drawn = LogStopwatch(log: locker.log, needle: "screen ready", count: readyBefore + 1, timeout: 20)
        let harmedAt = Date()
        #expect(kill(first, signal) == 0)
        try compositor.command("type 12")
        #expect(compositor.state == "locked")
        #expect(try compositor.showsLockSurface(name: "wayland-lock-child-\(name)-gap"))
        #expect(try compositor.showsLockSurface("HEADLESS-2", name: "wayland-lock-child-\(name)-gap-2"))
        #expect(locker.waitFor("screen ready", count: readyBefore + 1, timeout: 20), "\(name): no new child drew: \(locker.text)")
        if let drawnAt = drawn.result() {
            LockCrashTests.record("wayland \(name): new authentication process drawing \(Int((drawnAt.timeIntervalSince(harmedAt) * 1000).rounded())) ms after the harm",
                                  file: "wayland-lock-crash-times.txt")
        }
        #expect(locker.children.count == 2 && locker.children.last != first, "\(locker.text)")
        usleep(300_000)
        #expect(try compositor.showsLockSurface(name: "wayland-lock-child-\(name)-replaced"))
        #expect(locker.exitStatus(timeout: 0.1) == nil, "\(name) unlocked: \(locker.text)")
        #expect(compositor.state == "locked")
        try compositor.draw(layoutText: locker.text, GestureLoginTests.genuine)
        try compositor.command("key enter")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(name): \(locker.text)")
        #expect(locker.text.contains("unlocked \(user)"))
        #expect(compositor.waitFor(state: "unlocked"))
    }

    @Test func aKilledChildIsReplacedWhileTheCompositorHoldsTheLock() throws {
        try Self.childSurvives("sigkill", signal: SIGKILL)
    }

    @Test func aSegfaultInTheChildKeepsTheLock() throws {
        try Self.childSurvives("sigsegv", signal: SIGSEGV)
    }

    @Test func aStoppedChildIsReplaced() throws {
        try Self.childSurvives("sigstop", signal: SIGSTOP)
    }

    /// Harm to the locking parent itself: killed or crashed, it takes its children with it,
    /// and the compositor keeps every output covered (the protocol's promise: "abandoned", still
    /// locked); a new puff-lock takes the lock over and the right passcode unlocks. Stopped, it
    /// keeps the lock, and unlocks once continued.
    static func parentHarmKeepsTheLock(_ name: String, signal: Int32) throws {
        let (user, stage, compositor, locker) = try Self.readyLocker(sizes: ["1280x800", "1024x768"])
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        let children = locker.children
        #expect(kill(locker.parent, signal) == 0)
        if signal == SIGSTOP {
            usleep(500_000)
            try compositor.command("type 604917")
            #expect(compositor.state == "locked")
            #expect(try compositor.showsLockSurface(name: "wayland-lock-parent-\(name)"))
            #expect(try compositor.showsLockSurface("HEADLESS-2", name: "wayland-lock-parent-\(name)-2"))
            #expect(kill(locker.parent, SIGCONT) == 0)
            // The keys sent while it was stopped were queued by the compositor: the passcode unlocks.
            #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
            #expect(compositor.waitFor(state: "unlocked"))
            return
        }
        #expect(locker.exitStatus(timeout: 10) != nil)
        #expect(compositor.waitFor(state: "abandoned"), "\(compositor.state)")
        usleep(300_000)
        for child in children { #expect(!childIsRunning(child) || kill(child, 0) != 0, "child \(child) outlived its parent") }
        // The compositor's blanket (black) on both outputs, no pixel of the session.
        for (output, shot) in [("HEADLESS-1", "wayland-lock-parent-\(name)"), ("HEADLESS-2", "wayland-lock-parent-\(name)-2")] {
            let found = try compositor.colours(output, name: shot)
            #expect(found.contains("#000000") && !found.contains("#FF00FF"), "\(output): \(found)")
        }
        #expect(compositor.state == "abandoned")

        let second = try Locker(stage: stage, user: user, compositor: compositor)
        #expect(second.waitFor("screen ready"), "\(second.text)")
        #expect(compositor.state == "locked")
        try compositor.command("type 604917")
        #expect(second.exitStatus(timeout: 20) == 0, "\(second.text)")
        #expect(compositor.waitFor(state: "unlocked"))
    }

    @Test func aKilledLockerLeavesTheSessionLocked() throws {
        try Self.parentHarmKeepsTheLock("sigkill", signal: SIGKILL)
    }

    @Test func aSegfaultInTheLockerLeavesTheSessionLocked() throws {
        try Self.parentHarmKeepsTheLock("sigsegv", signal: SIGSEGV)
    }

    @Test func aStoppedLockerKeepsTheLock() throws {
        try Self.parentHarmKeepsTheLock("sigstop", signal: SIGSTOP)
    }

    @Test func anOutputPluggedInWhileLockedIsCovered() throws {
        let (_, stage, compositor, locker) = try Self.readyLocker()
        // The stage (its store, its log files) must outlive the locker.
        defer { withExtendedLifetime(stage) {} }
        let added = try compositor.command("add-output 1024 768")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, try compositor.outputs()[added]?.mapped != true { usleep(50_000) }
        let outputs = try compositor.outputs()
        #expect(outputs[added]?.mapped == true, "\(outputs)")
        usleep(300_000)
        #expect(try compositor.showsLockSurface(added, name: "wayland-lock-output-added"))
        // Removed again: the lock holds, the lock screen stays on the first output.
        try compositor.command("remove-output \(added)")
        usleep(300_000)
        #expect(compositor.state == "locked")
        #expect(try compositor.showsLockSurface(name: "wayland-lock-output-removed"))
        #expect(locker.exitStatus(timeout: 0.1) == nil)
        // The lock screen's own output removed: the screen moves to the one that is left.
        let third = try compositor.command("add-output 800 600")
        let later = Date().addingTimeInterval(10)
        while Date() < later, try compositor.outputs()[third]?.mapped != true { usleep(50_000) }
        let readyBefore = locker.text.components(separatedBy: "screen ready").count - 1
        try compositor.command("remove-output HEADLESS-1")
        #expect(locker.waitFor("screen ready", count: readyBefore + 1, timeout: 20), "\(locker.text)")
        usleep(300_000)
        #expect(try compositor.showsLockSurface(third, name: "wayland-lock-screen-moved"))
        try compositor.command("type 604917")
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    @Test func aCompositorWithoutTheProtocolIsRefused() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let compositor = try Compositor(withoutSessionLock: true)
        let locker = try Locker(stage: stage, user: user, compositor: compositor)
        #expect(locker.exitStatus(timeout: 20) == 69, "\(locker.text)")
        #expect(locker.text.contains("the Wayland compositor does not offer ext_session_lock_manager_v1"), "\(locker.text)")
        #expect(!locker.text.contains("started the authentication process"), "\(locker.text)")
        #expect(try compositor.showsSession(name: "wayland-lock-refused"))
    }
}
