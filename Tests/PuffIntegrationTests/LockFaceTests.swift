import Foundation
import Testing

/// What the lock screen looks like and how it lives with the desktop (Xvfb, xdotool): both
/// themes and the desktop's preference, the translucent background, the shake after a wrong
/// entry that never holds up the next input, a 1024×600 and a 3840×2160 screen, xss-lock's
/// sleep lock released only once the screen is covered, and monitors changed while locked.
/// Screenshots in build/screenshots/lock-face-*.png.
@Suite(.serialized)
struct LockFaceTests {
    typealias XServer = LockScreenTests.XServer
    typealias Locker = LockScreenTests.Locker

    /// The colour of one pixel of a screenshot (ImageMagick), as red, green, blue 0–255.
    static func pixel(_ name: String, _ x: Int, _ y: Int) throws -> (Int, Int, Int) {
        let path = LockScreenTests.screenshots + "/" + name + ".png"
        let result = try run("/usr/bin/convert", [path, "-format", "%[fx:int(255*p{\(x),\(y)}.r)] %[fx:int(255*p{\(x),\(y)}.g)] %[fx:int(255*p{\(x),\(y)}.b)]", "info:"])
        let values = result.output.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard values.count == 3 else { throw PadTestError("convert: \(result.output) \(result.errors)") }
        return (values[0], values[1], values[2])
    }

    /// Clicks the passcode on the keypad.
    static func click(_ passcode: String, _ server: XServer, _ locker: Locker) throws {
        let buttons = try locker.layout().buttons
        for digit in passcode {
            let (x, y) = try #require(buttons["digit\(digit)"], "\(buttons)")
            try server.xdotool(["mousemove", String(x), String(y), "click", "1"])
        }
    }

    /// Each theme: its screenshot, its background, the shake after a wrong passcode, and the
    /// right passcode typed straight after the wrong one (while PAM checks the first and the
    /// field shakes) unlocks.
    @Test(arguments: ["dark", "light"])
    func theThemes(_ theme: String) throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server, extra: ["--theme", theme])
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("theme \(theme) (--theme \(theme))"), "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-face-\(theme)")
        // The line under the bar, at the left edge: the background.
        let background = try Self.pixel("lock-face-\(theme)", 4, 60)
        if theme == "dark" {
            #expect(background.0 < 40 && background.1 < 40 && background.2 < 40, "\(background)")
        } else {
            #expect(background.0 > 215 && background.1 > 215 && background.2 > 215, "\(background)")
        }
        // A gesture drawn (not submitted), for the README's screenshots; Esc clears it.
        try LockScreenTests.draw(server, locker, GestureLoginTests.genuine)
        usleep(300_000)
        try server.screenshot("lock-face-\(theme)-drawn")
        try server.xdotool(["key", "Escape"])
        try server.xdotool(["type", "--delay", "30", "111333"])
        #expect(locker.waitFor("Puff: wrong passcode."), "\(locker.text)")
        #expect(locker.waitFor("screen ready", count: 2), "\(locker.text)")
        usleep(120_000)
        try server.screenshot("lock-face-\(theme)-shake")
        // At once, mid-shake: the right passcode.
        try server.xdotool(["type", "--delay", "30", "604917"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// A wrong passcode and the right one typed in one go, without a pause: the second is
    /// taken by the next prompt (typed while the first was checked), so nothing typed is lost
    /// to the check or the shake.
    @Test func theNextEntryIsNeverHeldUp() throws {
        let (user, stage, server, locker) = try LockScreenTests.readyLocker()
        try server.xdotool(["type", "--delay", "25", "111333604917"])
        #expect(locker.exitStatus(timeout: 30) == 0, "\(locker.text)")
        #expect(try stage.fixture.failures(user) == 0)
        #expect(locker.text.contains("Puff: wrong passcode."), "\(locker.text)")
    }

    /// `--theme auto` (the default) follows GTK's settings.ini when GNOME's color-scheme says
    /// nothing (GSETTINGS_BACKEND=memory: its default, 'default').
    @Test(arguments: [("0", "light"), ("1", "dark")])
    func theDesktopsPreferenceIsFollowed(_ setting: String, _ expected: String) throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let config = "\(Artefacts.temporary)/puff-lock-face-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: config) }
        try FileManager.default.createDirectory(atPath: config + "/gtk-3.0", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        try "[Settings]\ngtk-theme-name=Adwaita\ngtk-application-prefer-dark-theme=\(setting)\n"
            .write(toFile: config + "/gtk-3.0/settings.ini", atomically: false, encoding: .utf8)
        chmod(config + "/gtk-3.0/settings.ini", 0o644)
        let server = try XServer()
        let locker = try Locker(stage: stage, user: user, server: server,
                                environment: ["XDG_CONFIG_HOME=\(config)", "GSETTINGS_BACKEND=memory"])
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("theme \(expected) (gtk-3.0/settings.ini gtk-theme-name=Adwaita)")
                || locker.text.contains("theme \(expected) (gtk-3.0/settings.ini gtk-application-prefer-dark-theme=\(setting))"),
                "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-face-auto-\(expected)")
        let background = try Self.pixel("lock-face-auto-\(expected)", 4, 60)
        #expect(expected == "dark" ? background.0 < 40 : background.0 > 215, "\(background)")
        try Self.click("604917", server, locker)
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// `--translucent`: a red window on the desktop shows through, blurred and veiled.
    @Test(arguments: ["dark", "light"])
    func theTranslucentBackground(_ theme: String) throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        // -noreset: without it the server resets when xdpyinfo (its readiness check) leaves,
        // and an xclock connecting at that moment is refused.
        let server = try XServer(extra: ["-noreset"])
        let clock = try TmuxPane.spawn("/usr/bin/xclock", ["xclock", "-display", server.display, "-bg", "red", "-fg", "yellow",
                                                          "-geometry", "420x700+0+60"])
        defer {
            kill(clock, SIGKILL)
            _ = try? TmuxPane.wait(clock)
        }
        // Mapped and painted before the lock copies the screen (slow on a loaded machine).
        let deadline = Date().addingTimeInterval(20)
        var viewable = false
        while !viewable && Date() < deadline {
            viewable = try run("/usr/bin/xwininfo", ["-display", server.display, "-name", "xclock"]).output.contains("Map State: IsViewable")
            if !viewable { usleep(100_000) }
        }
        try #require(viewable, "xclock did not show")
        usleep(500_000)
        let locker = try Locker(stage: stage, user: user, server: server, extra: ["--translucent", "--theme", theme])
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        usleep(300_000)
        try server.screenshot("lock-face-translucent-\(theme)")
        // Left of the picture, over where the red window was: reddish, not the plain background.
        let shown = try Self.pixel("lock-face-translucent-\(theme)", 30, 420)
        #expect(shown.0 > shown.1 + 25 && shown.0 > shown.2 + 25, "\(shown)")
        try Self.click("604917", server, locker)
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// The smallest and the largest screens: the same screen, scaled (2× at 4K), and usable.
    @Test(arguments: ["1024x600", "3840x2160"])
    func screenSizes(_ size: String) throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let server = try XServer(size: size)
        let locker = try Locker(stage: stage, user: user, server: server, extra: ["--theme", "dark"])
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        usleep(500_000)
        try server.screenshot("lock-face-\(size)")
        let layout = try locker.layout()
        let dimensions = size.split(separator: "x").compactMap { Double($0) }
        for (name, (x, y)) in layout.buttons {
            #expect(Double(x) > 0 && Double(x) < dimensions[0] && Double(y) > 0 && Double(y) < dimensions[1], "\(name) at \(x),\(y)")
        }
        if size == "3840x2160" {
            // Keys twice as far apart as at scale 1 (86 + 12 pixels).
            let one = try #require(layout.buttons["digit1"]), two = try #require(layout.buttons["digit2"])
            #expect(two.0 - one.0 == 196, "\(one) \(two)")
        }
        try Self.click("604917", server, locker)
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// xss-lock --transfer-sleep-lock hands the locker a descriptor (XSS_SLEEP_LOCK_FD) that
    /// holds off suspend until it is closed: closed by puff-lock only when the screen is
    /// covered and grabbed, and not held by the authentication process.
    @Test func theSleepLockIsReleasedOnlyOnceCovered() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let server = try XServer()
        let fifo = "\(Artefacts.temporary)/puff-lock-sleep-\(UUID().uuidString)"
        #expect(mkfifo(fifo, 0o666) == 0)
        chmod(fifo, 0o666)
        defer { unlink(fifo) }
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        defer { close(reader) }
        // A gsettings (asked for the theme) that leaves a process behind, as one that starts a
        // D-Bus or dconf service does: it must not hold the sleep lock.
        let bin = "\(Artefacts.temporary)/puff-lock-bin-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        defer {
            if let left = try? String(contentsOfFile: bin + "/left", encoding: .utf8), let pid = pid_t(left.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(pid, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: bin)
        }
        try "#!/bin/sh\nsleep 60 </dev/null >/dev/null 2>&1 &\necho $! >'\(bin)/left'\necho \"'prefer-dark'\"\n"
            .write(toFile: bin + "/gsettings", atomically: false, encoding: .utf8)
        chmod(bin + "/gsettings", 0o755)
        let locker = try Locker(stage: stage, user: user, server: server, environment: ["XSS_SLEEP_LOCK_FD=7", "PATH=\(bin):/usr/bin:/bin"],
                                beforeExec: "exec 7>'\(fifo)' && ")
        // POLLHUP: a writer opened the FIFO and every writer has closed it since.
        var poller = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(30)
        var released = false
        while Date() < deadline && !released {
            poller.revents = 0
            released = poll(&poller, 1, 10) > 0 && poller.revents & Int16(POLLHUP) != 0
        }
        #expect(released, "the sleep lock was never released: \(locker.text)")
        // At that moment the screen is covered.
        #expect(try LockCrashTests.covered(server), "released before the screen was covered")
        #expect(locker.text.contains("locked \(user)") || locker.waitFor("locked \(user)", timeout: 2))
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        #expect(locker.text.contains("theme dark (color-scheme 'prefer-dark')"), "the stand-in gsettings was not asked: \(locker.text)")
        try Self.click("604917", server, locker)
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }

    /// A monitor plugged in while locked: the framebuffer grows from 1280×800 to 2560×800 (Xvfb
    /// can shrink its framebuffer below the size it started with and grow it back, with RandR's
    /// RRScreenChangeNotify as on real hardware) and a second monitor appears on the right. The
    /// covering window grows to the whole new screen (timed from the xrandr that grows it), it is
    /// the topmost window there, above a session window (xev) that the new area uncovered, keys
    /// and clicks there reach no other client, and the picture stays on the primary monitor.
    @Test func aScreenGrownWhileLockedIsCovered() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let server = try XServer(extra: ["-noreset"], size: "2560x800")
        func xrandr(_ arguments: [String]) throws -> Run {
            try run("/usr/bin/xrandr", ["-display", server.display] + arguments)
        }
        // One 1280×800 monitor: the output's CRTC off (xrandr reports the size it cannot keep),
        // the framebuffer shrunk, the monitor named.
        _ = try xrandr(["--output", "screen", "--off"])
        let shrunk = try xrandr(["--fb", "1280x800"])
        #expect(shrunk.status == 0, "\(shrunk.errors)")
        let left = try xrandr(["--setmonitor", "*left", "1280/338x800/211+0+0", "none"])
        #expect(left.status == 0, "\(left.errors)")
        #expect(try run("/usr/bin/xdpyinfo", ["-display", server.display]).output.contains("1280x800 pixels"))
        // A window of the session where the second monitor will be (off the screen for now).
        let session = try LockCrashTests.SessionWindow(server: server, directory: stage.fixture.root, geometry: "300x300+1800+250")
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        let before = try locker.layout()
        let found = try server.xdotool(["search", "--name", "^puff-lock$"])
        let cover = try #require(found.lines.first, "\(found.output)")
        let layouts = locker.text.components(separatedBy: "screen ready").count - 1
        let laidOut = LogStopwatch(log: locker.log, needle: "screen ready", count: layouts + 1, timeout: 20)

        // Timed from the start of the xrandr that grows it (the server's change happens while
        // xrandr runs; its own start-up, ~10 ms, is in the figure).
        let grownAt = Date()
        let grown = try xrandr(["--fb", "2560x800", "--setmonitor", "right", "1280/338x800/211+1280+0", "none"])
        #expect(grown.status == 0, "\(grown.errors)")
        var coveredAt: Date?
        while coveredAt == nil && Date().timeIntervalSince(grownAt) < 10 {
            let geometry = try run("/usr/bin/xwininfo", ["-display", server.display, "-id", cover]).output
            if geometry.contains("Width: 2560") && geometry.contains("Height: 800") { coveredAt = Date() } else { usleep(2_000) }
        }
        let relaidAt = laidOut.result()
        let covering = coveredAt.map { Int(($0.timeIntervalSince(grownAt) * 1000).rounded()) }
        let relaid = relaidAt.map { Int(($0.timeIntervalSince(grownAt) * 1000).rounded()) }
        LockCrashTests.record("screen grown: covering window 2560x800 \(covering.map { "\($0) ms" } ?? "never") after xrandr --fb started, "
                              + "the lock screen laid out again after \(relaid.map { "\($0) ms" } ?? "never")")
        #expect(coveredAt != nil, "the covering window did not grow: \(locker.text)")
        #expect(relaidAt != nil, "the lock screen was not laid out again: \(locker.text)")
        #expect(try LockCrashTests.covered(server, size: "2560x800"))
        // Topmost where the session window is: the cover, whatever the stacking of the rest.
        let tree = try run("/usr/bin/xwininfo", ["-display", server.display, "-root", "-children"])
        let viewable = tree.lines.filter { $0.hasPrefix("     0x") }
        #expect(viewable.first?.contains("\"puff-lock\"") == true, "\(tree.output)")
        usleep(300_000)
        try server.screenshot("lock-face-screen-grown")
        // The new area shows the lock's background, not the session window (xev is white).
        let newArea = try Self.pixel("lock-face-screen-grown", 1950, 400)
        #expect(newArea.0 < 40 && newArea.1 < 40 && newArea.2 < 40, "\(newArea)")
        // The picture stays on the primary (left) monitor.
        let after = try locker.layout()
        #expect(after.x == before.x && after.x + 400 * after.scale <= 1280, "\(before) → \(after)")
        try server.xdotool(["mousemove", "1950", "400", "click", "1", "key", "b", "mousemove", "2500", "700", "click", "1"])
        usleep(400_000)
        #expect(session.count("KeyPress") == 0 && session.count("ButtonPress") == 0, "input in the new area reached the session")
        try Self.click("604917", server, locker)
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
        // The control: unlocked, the session window there gets the keys.
        try server.xdotool(["mousemove", "1950", "400", "key", "d"])
        usleep(400_000)
        #expect(session.count("KeyPress") == 1, "the session window in the new area does not get keys at all")
    }

    /// Monitors set while locked (a second monitor plugged in, made primary): the picture
    /// moves to the new primary; the covering window spans the whole screen throughout.
    @Test func aMonitorAddedWhileLockedIsFollowed() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let stage = try LockScreenTests.stage(user)
        let server = try XServer(extra: ["-noreset"])
        let locker = try Locker(stage: stage, user: user, server: server)
        #expect(locker.waitFor("screen ready"), "\(locker.text)")
        let before = try locker.layout()
        #expect(before.x < 640, "\(before)")
        for monitor in ["left 640/170x800/212+0+0", "*right 640/170x800/212+640+0"] {
            let set = try run("/usr/bin/xrandr", ["-display", server.display, "--setmonitor"] + monitor.split(separator: " ").map(String.init) + ["none"])
            #expect(set.status == 0, "\(set.errors)")
        }
        // From the moment the primary monitor was set (the second xrandr has returned).
        let changedAt = Date()
        var moved = false
        while Date().timeIntervalSince(changedAt) < 10 && !moved {
            moved = ((try? locker.layout().x) ?? 0) >= 640
            if !moved { usleep(20_000) }
        }
        let seconds = Date().timeIntervalSince(changedAt)
        LockCrashTests.record("monitors: the picture on the new primary \(Int((seconds * 1000).rounded())) ms after the second xrandr --setmonitor returned")
        #expect(moved, "the layout did not follow the new primary monitor: \(locker.text)")
        #expect(try LockCrashTests.covered(server))
        usleep(300_000)
        try server.screenshot("lock-face-monitor-added")
        try LockScreenTests.draw(server, locker, GestureLoginTests.genuine)
        try server.xdotool(["key", "Return"])
        #expect(locker.exitStatus(timeout: 20) == 0, "\(locker.text)")
    }
}
