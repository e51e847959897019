import ArgumentParser
import CLockX
import CPAM
import Glibc
import PuffClient
import PuffClientPicture
import PuffCore
import PuffPlatform
import PuffScreen

/// Exit statuses of `puff-lock`.
enum LockExit {
    /// The user authenticated: the screen is unlocked.
    static let unlocked: Int32 = 0
    /// No display, the grabs refused, or PAM could not start: the screen was never locked.
    static let cannotLock: Int32 = 69
    /// Run as root.
    static let refused: Int32 = 77
    /// `--draw`: cancelled.
    static let cancelled: Int32 = 2
}

/// `puff-lock`: the X11 and Wayland screen locker for Puff's picture password and passcode.
@main
struct PuffLock: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "puff-lock",
        abstract: "Lock the X11 or Wayland session until you draw your Puff gesture or type your passcode.",
        discussion: """
        Covers every screen, grabs the keyboard and the pointer (and refuses to lock, saying \
        why, when it cannot), and starts an authentication process that draws the lock screen \
        and runs pam_authenticate for the calling user until it succeeds; the screen unlocks \
        only then. A crashed, killed or stopped authentication process is replaced and the \
        screen stays locked. \
        Draw on your picture with the left button, a pen or a finger; Enter or ✓ submits, \
        Backspace or ↶ removes the last part, Esc clears; typing switches to the passcode. \
        Prompts of other modules in the PAM service are answered in the same window. Run it as \
        the user whose session it locks (never as root): `xss-lock -- puff-lock`. \
        With WAYLAND_DISPLAY set it locks through the compositor's ext-session-lock-v1 \
        protocol instead (sway 1.8 and later, Hyprland, river, labwc, niri), which keeps every \
        output covered until it unlocks, also if it dies; it refuses to start on a compositor \
        without the protocol. \
        Exit status: 0 unlocked, 69 could not lock, 77 run as root. \
        With --draw --picture FILE it locks nothing: it opens an ordinary window on the picture \
        and prints the gesture drawn there in the wire format on stdout (exit 0; 2 when \
        cancelled with Esc or by closing the window), for `puff-enroll gesture --stdin`. \
        With --show --picture FILE it reads a template and the drawings it was built from on \
        stdin, shows the template's points, tolerance squares, order and directions with a \
        replay of the drawings, and exits 0 when the user saves, 2 when they cancel (for \
        `puff-enroll gesture`). --draw and --show started as root continue as `nobody` once \
        the display is open and the picture decoded (always in a confined child).
        """,
        version: BuildInfo.version
    )

    /// Names the program in its messages (the kit's `Report`), then parses and runs.
    static func main() {
        Report.program = "puff-lock"
        main(nil)
    }

    @Option(help: "The PAM service.")
    var service = "puff-lock"

    @Option(help: "The user to authenticate (default: the calling user; the module accepts only that one).")
    var user: String?

    @Option(help: "The Puff record directory, where pictures/USER is read.")
    var dir = "/etc/puff"

    @Option(name: .customLong("pam-confdir"), help: "Read the PAM service from this directory (pam_start_confdir) instead of /etc/pam.d.")
    var pamConfdir: String?

    @Option(name: .customLong("grab-timeout"), help: "Seconds to keep trying when another program holds a grab.")
    var grabTimeout = 2.0

    @Flag(help: "Lock nothing: draw one gesture on --picture in a window and print it in the wire format.")
    var draw = false

    @Flag(help: "Lock nothing: show the template read from stdin over --picture, with a replay of the drawings; exit 0 to save, 2 to cancel.")
    var show = false

    @Option(help: "The picture to draw on (with --draw or --show).")
    var picture: String?

    @Option(help: "The drawing window's title (with --draw).")
    var title = "puff-lock: draw your gesture"

    @Flag(name: .customLong("print-layout"), help: "Print where the picture and the buttons are on stderr (for scripts and tests).")
    var printLayout = false

    @Option(help: "The colours: light, dark, or auto (the desktop's preference: GNOME's color-scheme, GTK's prefer-dark setting; dark when none is set).")
    var theme = "auto"

    @Flag(help: "Show the screen behind, blurred and dimmed, instead of a plain background (it shows the outlines of what was open).")
    var translucent = false

    /// The pixmap the parent copied the screen into (`--translucent`).
    @Option(name: .customLong("backdrop"), help: .hidden)
    var backdrop: UInt?

    /// The authentication process puff-lock starts for itself (never started by hand): draws
    /// in the window `--embed` names and runs PAM, its input on descriptor 3.
    @Flag(name: .customLong("auth-child"), help: .hidden)
    var authChild = false

    @Option(name: .customLong("embed"), help: .hidden)
    var embed: UInt?

    /// The Wayland authentication process: draws into frames it passes to the parent.
    @Flag(name: .customLong("frames"), help: .hidden)
    var frames = false

    @Option(help: "Where to lock: x11, wayland (ext-session-lock-v1), or auto (wayland when WAYLAND_DISPLAY is set, else x11).")
    var backend = "auto"

    func validate() throws {
        guard grabTimeout >= 0, grabTimeout <= 60 else { throw ValidationError("--grab-timeout must be 0 to 60 seconds") }
        guard !(draw && show) else { throw ValidationError("--draw and --show exclude each other") }
        guard ["auto", "light", "dark"].contains(theme) else { throw ValidationError("--theme is light, dark or auto") }
        guard ["auto", "x11", "wayland"].contains(backend) else { throw ValidationError("--backend is x11, wayland or auto") }
        guard authChild == (embed != nil || frames), !(embed != nil && frames), !(authChild && (draw || show)) else {
            throw ValidationError("--auth-child and --embed are for puff-lock's own use")
        }
        guard (draw || show) == (picture != nil) else { throw ValidationError("--picture goes with --draw or --show") }
    }

    func run() throws {
        // No program this process starts (gsettings for the theme, the authentication child,
        // what PAM starts there) inherits a descriptor it was not given: above all not
        // xss-lock's sleep lock (XSS_SLEEP_LOCK_FD), which would hold off suspend's lock
        // transfer for as long as that program or anything it left behind runs.
        guard puff_cloexec_from(3) == 0 else {
            Report.warn("cannot mark descriptors close-on-exec (errno \(errno)): not locking")
            throw ExitCode(LockExit.cannotLock)
        }
        if draw || show { return try window() }
        // A screen locker never runs as root: the module would then read the store itself,
        // and a root process drawing on an X server the user controls is a needless risk.
        guard getuid() != 0, geteuid() != 0 else {
            Report.warn("refusing to run as root: run puff-lock as the user whose screen it locks")
            throw ExitCode(LockExit.refused)
        }
        guard puff_forbid_dumps() == 0 else {
            Report.warn("cannot disable core dumps: not locking")
            throw ExitCode(LockExit.cannotLock)
        }
        guard let name = user ?? Caller.current()?.name.value else {
            Report.warn("cannot tell who you are; use --user")
            throw ExitCode(LockExit.cannotLock)
        }
        if authChild { return try authenticate(name) }
        if usesWayland { return try guardWayland(name) }
        try guardScreen(name)
    }

    /// The locking parent: covers and grabs, starts the authentication process and replaces
    /// it until it reports a verified success (`LockGuard`).
    private func guardScreen(_ name: String) throws {
        let display: LockDisplay
        let watcher: LockGuard
        do {
            display = try LockDisplay()
            let chosen = LockTheme.named(theme).map { (theme: $0, source: "--theme \(theme)") } ?? LockTheme.desktopPreference()
            Report.warn("theme \(chosen.theme.name) (\(chosen.source))")
            display.setBackground(chosen.theme.backgroundPixel)
            var arguments = ["--user", name, "--service", service, "--dir", dir, "--theme", chosen.theme.name]
            // The screen as it is, before anything covers it; the children blur it.
            if translucent { arguments += ["--backdrop", String(display.captureScreen())] }
            if let pamConfdir { arguments += ["--pam-confdir", pamConfdir] }
            if printLayout { arguments.append("--print-layout") }
            watcher = try LockGuard(display: display, childArguments: arguments)
            try Self.claim(display)
            // PAM starts (in the child) before the grab, so a broken service never leaves a
            // grabbed, unusable screen: it fails before anything is locked.
            try watcher.startFirstChild()
        } catch {
            Report.warn("\(error); not locking")
            throw ExitCode(LockExit.cannotLock)
        }
        do {
            try display.lock(timeout: grabTimeout)
        } catch {
            watcher.stop()
            Report.warn("\(error)")
            throw ExitCode(LockExit.cannotLock)
        }
        // Covered and grabbed: the system may sleep now (xss-lock --transfer-sleep-lock).
        display.releaseSleepLock()
        watcher.locked()
        Report.warn("locked \(name) (pointer through \(display.usesXInput2 ? "XInput2" : "the core protocol"))")
        watcher.run()
        Report.warn("unlocked \(name)")
    }

    /// Whether to lock through Wayland: `--backend wayland`, or `auto` with WAYLAND_DISPLAY set
    /// (an X11 locker cannot lock a Wayland session, even through Xwayland).
    private var usesWayland: Bool {
        switch backend {
        case "wayland": return true
        case "x11": return false
        default: return getenv("WAYLAND_DISPLAY").map { $0.pointee != 0 } ?? false
        }
    }

    /// The locking parent on Wayland: the compositor covers every output (ext-session-lock-v1)
    /// until this process says `unlock_and_destroy`, and keeps them covered if it dies. The
    /// authentication child and its standby are watched and replaced as on X11 (`LockGuard`).
    private func guardWayland(_ name: String) throws {
        // A crash ends this process at once (the Swift runtime's backtracer would hold it for
        // a debugger that cannot attach): the compositor keeps the session locked, the children
        // die with it, and a new puff-lock can take the lock over.
        for crash in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] { signal(crash, SIG_DFL) }
        let cover: WaylandCover
        let watcher: LockGuard
        do {
            let chosen = LockTheme.named(theme).map { (theme: $0, source: "--theme \(theme)") } ?? LockTheme.desktopPreference()
            Report.warn("theme \(chosen.theme.name) (\(chosen.source))")
            // A compositor without the protocol is refused here, before any child starts:
            // nothing is shown that would lock nothing.
            cover = try WaylandCover(background: chosen.theme.backgroundPixel)
            if translucent { Report.warn("--translucent is not available on Wayland (no screen copy); the background is opaque") }
            var arguments = ["--user", name, "--service", service, "--dir", dir, "--theme", chosen.theme.name]
            if let pamConfdir { arguments += ["--pam-confdir", pamConfdir] }
            if printLayout { arguments.append("--print-layout") }
            watcher = try LockGuard(display: cover, childArguments: arguments)
            try watcher.startFirstChild()
        } catch {
            Report.warn("\(error); not locking")
            throw ExitCode(LockExit.cannotLock)
        }
        do {
            try cover.lock(timeout: max(grabTimeout, 5))
        } catch {
            watcher.stop()
            Report.warn("\(error); not locking")
            throw ExitCode(LockExit.cannotLock)
        }
        cover.releaseSleepLock()
        watcher.locked()
        Report.warn("locked \(name) (Wayland session lock, \(cover.surfaceCount) output\(cover.surfaceCount == 1 ? "" : "s"))")
        watcher.run()
        cover.unlock()
        Report.warn("unlocked \(name)")
    }

    /// One puff-lock per display: the owner of the `_PUFF_LOCK_S<screen>` selection holds it.
    static func claim(_ display: LockDisplay) throws(LockDisplayError) {
        let name = "_PUFF_LOCK_S\(display.screen)"
        let atom = XInternAtom(display.display, name, 0)
        // Any X client can own the selection (X11 has no way to reserve it); name the owner's
        // window (`xwininfo -id`, `xprop -id` tell whose it is), not just "another puff-lock".
        func taken(_ owner: UInt) -> LockDisplayError {
            LockDisplayError(description: "another puff-lock is locking this display, or another X client blocks it: "
                + "the selection \(name) is owned by window 0x\(String(owner, radix: 16))")
        }
        let owner = XGetSelectionOwner(display.display, atom)
        guard owner == UInt(None) else { throw taken(owner) }
        XSetSelectionOwner(display.display, atom, display.window, UInt(CurrentTime))
        let now = XGetSelectionOwner(display.display, atom)
        guard now == display.window else { throw taken(now) }
    }

    /// The authentication process (`--auth-child`): draws in the parent's window, answers
    /// PAM's prompts with the input the parent forwards, and says `success` then exits 0
    /// only after pam_authenticate succeeded. Any other end keeps the screen locked.
    private func authenticate(_ name: String) throws {
        let channel: Int32 = 3
        // A crash ends this process at once: the Swift runtime's backtracer would catch it
        // and wait for a debugger that cannot attach (not dumpable), while the screen shows
        // no prompt. The parent starts a new child when this one is gone.
        for crash in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] { signal(crash, SIG_DFL) }
        var status = stat()
        guard puff_die_with_parent() == 0, fstat(channel, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK,
              fcntl(channel, F_SETFD, FD_CLOEXEC) == 0, embed != nil || frames else {
            Report.warn("--auth-child is started by puff-lock itself")
            throw ExitCode(LockExit.cannotLock)
        }
        let display: any LockScreenDisplay
        if frames {
            display = LockFrames(channel: channel)
        } else {
            do {
                display = try LockDisplay(embeddedIn: Window(embed ?? 0), channel: channel)
            } catch {
                Report.warn("\(error)")
                throw ExitCode(LockExit.cannotLock)
            }
        }
        // Programs that PAM modules start (pam_exec, helpers) get neither the channel nor the
        // X connection.
        _ = puff_cloexec_from(3)
        var picture: LockPicture?
        var undecodable = false
        do {
            picture = try LockPicture(path: UserPicture.path(directory: dir, user: name))
        } catch {
            // Users without a gesture have no picture; the passcode keypad is shown alone.
            picture = nil
            undecodable = error.undecodable
        }
        let session = LockSession(display: display, user: name, picture: picture, printLayout: printLayout,
                                  title: "Locked: " + Self.shownName(name), cancellable: false)
        session.pictureUndecodable = undecodable
        session.theme = LockTheme.named(theme) ?? .dark
        if !frames { session.backdrop = backdrop.map { Pixmap($0) } }
        session.showsClock = true
        let (trail, warning) = TrailSetting.load(configFile: dir + "/puff.conf")
        if let warning { Report.warn(warning) }
        session.trail = trail
        let transaction: PAMTransaction
        do {
            transaction = try PAMTransaction(service: service, user: name, confdir: pamConfdir, conversation: session)
        } catch {
            Report.warn("\(error)")
            throw ExitCode(LockExit.cannotLock)
        }
        LockChannel.send(channel, .started)
        display.waitUntilLocked()
        while true {
            session.startAttempt()
            // The modules' work before their first prompt (a helper, a directory) happens out
            // of the event loop, as the check of a submission does.
            display.busy(.pam)
            let status = transaction.authenticate()
            if status == PAM_SUCCESS { break }
            if !session.answeredPrompt {
                // Nothing was asked (a locked account, a broken service): wait for the user.
                if status != PAM_AUTH_ERR {
                    let text = transaction.describe(status)
                    Report.warn("pam_authenticate: \(text)")
                    session.note("Authentication is unavailable: \(text).")
                }
                session.acknowledge()
            } else if status != PAM_AUTH_ERR && status != PAM_MAXTRIES {
                let text = transaction.describe(status)
                Report.warn("pam_authenticate: \(text)")
                session.note("Authentication failed: \(text).")
            } else if session.messagesThisAttempt == 0 {
                // Modules other than Puff (pam_unix) say nothing when the answer is wrong.
                session.note("Authentication failed.")
            }
        }
        // Like other lockers: refresh credentials (Kerberos tickets and the like); its result
        // does not keep the screen locked.
        _ = transaction.setCredentials(Int32(PAM_REFRESH_CRED))
        transaction.end(PAM_SUCCESS)
        // The parent unlocks on this and on the exit status 0 that follows, never on one alone.
        guard LockChannel.send(channel, .success) else { throw ExitCode(1) }
    }

    /// `--draw` and `--show`: an ordinary window on the picture. They run no PAM and read only
    /// the picture (and `--show` its stdin), so root may run them (puff-enroll for another
    /// user); the picture is decoded in the client kit's confined child (as `nobody`), and
    /// root continues as `nobody` once the display is open and the picture decoded, so the
    /// event handling never runs as root either.
    private func window() throws {
        guard puff_forbid_dumps() == 0 else {
            Report.warn("cannot disable core dumps")
            throw ExitCode(LockExit.cannotLock)
        }
        let path = picture ?? ""
        let display: LockDisplay
        let loaded: LockPicture
        do {
            display = try LockDisplay(title: title)
            // Decoded in the kit's confined child (as nobody when this is root).
            loaded = try LockPicture(path: path)
            if getuid() == 0 || geteuid() == 0 { try Self.dropRoot() }
        } catch {
            Report.warn("\(error)")
            throw ExitCode(LockExit.cannotLock)
        }
        if show { return try review(display: display, picture: loaded) }
        let session = LockSession(display: display, user: Caller.current()?.name.value ?? "", picture: loaded,
                                  printLayout: printLayout, title: title)
        display.show()
        guard let secret = session.drawGesture() else {
            Report.warn("cancelled")
            throw ExitCode(LockExit.cancelled)
        }
        let written = secret.withUnsafeBytes { bytes -> Bool in
            var line = [UInt8](repeating: 0, count: bytes.count + 1)
            defer { Wipe.array(&line) }
            for index in 0..<bytes.count { line[index] = bytes[index] }
            line[bytes.count] = UInt8(ascii: "\n")
            return line.withUnsafeBytes { (try? FileDescriptor.writeAll(STDOUT_FILENO, $0)) != nil }
        }
        guard written else {
            Report.warn("cannot write the gesture on stdout")
            throw ExitCode(1)
        }
    }

    /// `--show`: the template and the drawings from stdin; exit 0 when saved, 2 when cancelled.
    private func review(display: LockDisplay, picture: LockPicture) throws {
        let input: TemplateReviewInput
        do {
            input = try TemplateReviewInput.read(from: STDIN_FILENO, width: picture.width, height: picture.height)
        } catch {
            Report.warn("\(error)")
            throw ExitCode(1)
        }
        display.show()
        // The review owns the points and wipes them when it ends.
        let saved = TemplateReview(display: display, picture: picture, input: consume input, title: title,
                                   printLayout: printLayout).run()
        guard saved else {
            Report.warn("cancelled")
            throw ExitCode(LockExit.cancelled)
        }
    }

    /// Continues as `nobody`: no supplementary groups, its group and user, and no way back.
    struct PrivilegeError: Error, CustomStringConvertible {
        let description: String
    }

    static func dropRoot() throws(PrivilegeError) {
        guard let entry = getpwnam("nobody") else { throw PrivilegeError(description: "no account 'nobody' to run as") }
        let uid = entry.pointee.pw_uid, gid = entry.pointee.pw_gid
        guard uid != 0, gid != 0, setgroups(0, nil) == 0, setgid(gid) == 0, setuid(uid) == 0,
              getuid() == uid, geteuid() == uid, getgid() == gid, getegid() == gid, setuid(0) != 0 else {
            throw PrivilegeError(description: "cannot drop root privileges")
        }
        // setuid made the process dumpable again.
        guard puff_forbid_dumps() == 0 else { throw PrivilegeError(description: "cannot disable core dumps") }
    }

    /// The account's full name from its GECOS field, with the login name: `Lena Puff (lena)`;
    /// the login name alone when there is none.
    static func shownName(_ name: String) -> String {
        guard let entry = getpwnam(name), let gecos = entry.pointee.pw_gecos,
              let field = String(validatingCString: gecos)?.split(separator: ",", omittingEmptySubsequences: false).first,
              !field.isEmpty, field != name else { return name }
        return "\(field) (\(name))"
    }
}
