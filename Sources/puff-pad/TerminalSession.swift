import Glibc
import PuffClient

/// The controlling terminal in full-screen mode: raw input, the alternate screen, xterm mouse
/// reporting, and a guaranteed restore on every way out.
///
/// The terminal is `/dev/tty`, never stdin/stdout, so `puff-pad draw > file` and a parent
/// reading the gesture from a pipe both work. Signals are turned into bytes on a pipe (the
/// self-pipe trick) and handled in the event loop, where restoring the terminal is ordinary
/// code; an `atexit` hook restores it if the process exits some other way.
final class TerminalSession {
    /// Why the terminal cannot be used for drawing.
    enum Unavailable: Error, CustomStringConvertible {
        case noTerminal
        case noMouse(String)

        var description: String {
            switch self {
            case .noTerminal: "there is no terminal (/dev/tty cannot be opened)"
            case .noMouse(let term): "the terminal (TERM=\(term)) has no mouse support"
            }
        }
    }

    /// What the event loop delivers.
    enum Event {
        case input(InputEvent)
        /// The window size changed, or the process was continued after a stop: redraw all.
        case redraw
        /// SIGINT, SIGTERM or SIGHUP: leave now.
        case terminate(Int32)
        /// `next(timeout:)`'s time passed without input.
        case timeout
    }

    let fd: Int32
    private var decoder = InputDecoder()
    private var pending: [InputEvent] = []
    private(set) var isActive = false

    /// Opens `/dev/tty`. Refuses terminals that cannot report the mouse (`TERM` unset, `dumb`)
    /// unless `requireMouse` is false.
    init(requireMouse: Bool = true) throws(Unavailable) {
        let term = getenv("TERM").flatMap { String(validatingCString: $0) } ?? ""
        guard let descriptor = TerminalInput.openTerminal() else { throw .noTerminal }
        guard TerminalInput.mode(of: descriptor) != nil else {
            close(descriptor)
            throw .noTerminal
        }
        if requireMouse && !Self.reportsMouse(term: term) {
            close(descriptor)
            throw .noMouse(term.isEmpty ? "unset" : term)
        }
        fd = descriptor
    }

    deinit {
        leave()
        close(fd)
    }

    /// Terminals that speak no xterm mouse protocol at all.
    static func reportsMouse(term: String) -> Bool {
        !(term.isEmpty || term == "dumb" || term == "unknown" || term.hasPrefix("vt1") || term == "cons25")
    }

    /// Raw mode, alternate screen, hidden cursor, mouse button-event tracking in SGR encoding,
    /// bracketed paste off. Installs the signal handlers and the exit hook on first use.
    func enter() {
        guard !isActive else { return }
        TerminalRestore.install(fd: fd)
        TerminalInput.setMode(of: fd, to: TerminalInput.rawMode(from: TerminalRestore.saved))
        TerminalRestore.isRaw = 1
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?2004l\u{1B}[?1000h\u{1B}[?1002h\u{1B}[?1006h\u{1B}[2J")
        // Pixel-precise reports (SGR-Pixels, mode 1016) where the terminal has them: ask
        // whether it knows the mode, then its cell size, and only then switch the mode on, so
        // a report is never read in the wrong unit. Without answers the reports stay in cells.
        decoder.cellSize = nil
        write("\u{1B}[?1016$p")
        isActive = true
    }

    /// Acts on the terminal's answers to the mode-1016 and cell-size queries; other events
    /// are passed on.
    private func absorbAnswers(_ events: [InputEvent]) -> [InputEvent] {
        events.filter { event in
            switch event {
            case .pixelReports(let supported):
                if supported { write("\u{1B}[16t") }
                return false
            case .cellPixels(let width, let height):
                let first = decoder.cellSize == nil
                decoder.cellSize = (width, height)
                if first { write("\u{1B}[?1016h") }
                return false
            default:
                return true
            }
        }
    }

    /// Puts the terminal back exactly as it was found.
    func leave() {
        guard isActive else { return }
        TerminalRestore.restore()
        isActive = false
    }

    /// The window size in cells, and in pixels when the terminal tells (else 0).
    func size() -> (columns: Int, rows: Int, pixelWidth: Int, pixelHeight: Int) {
        var window = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else {
            return (80, 24, 0, 0)
        }
        return (Int(window.ws_col), Int(window.ws_row), Int(window.ws_xpixel), Int(window.ws_ypixel))
    }

    /// Writes all of `text` to the terminal.
    func write(_ text: String) {
        var copy = text
        copy.withUTF8 { write(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Writes all of `bytes` to the terminal, retrying short writes and EINTR.
    func write(bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count, let base = bytes.baseAddress {
            let wrote = Glibc.write(fd, base + offset, bytes.count - offset)
            if wrote < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            offset += wrote
        }
    }

    /// Waits for the next event, or `.timeout` after `timeout` milliseconds without one (-1:
    /// no limit). A lone ESC is told apart from the start of an escape sequence by 60 ms of
    /// silence after it.
    func next(timeout limit: Int32 = -1) -> Event {
        while true {
            if !pending.isEmpty { return .input(pending.removeFirst()) }
            if let signal = TerminalRestore.takeSignal() {
                switch signal {
                case SIGWINCH:
                    // The cell size may have changed with the window (a font change).
                    if decoder.cellSize != nil { write("\u{1B}[16t") }
                    return .redraw
                case SIGTSTP:
                    suspend()
                    return .redraw
                case SIGCONT:
                    // Continued after a stop we did not see (SIGSTOP): take the terminal back.
                    if isActive {
                        isActive = false
                        enter()
                    }
                    return .redraw
                default:
                    return .terminate(signal)
                }
            }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: TerminalRestore.signalReadEnd, events: Int16(POLLIN), revents: 0)]
            let waiting = decoder.isWaiting
            let timeout: Int32 = waiting ? (limit >= 0 ? min(60, limit) : 60) : limit
            let ready = poll(&fds, 2, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return .terminate(SIGHUP)
            }
            if ready == 0 {
                guard waiting else { return .timeout }
                pending += absorbAnswers(decoder.flush())
                continue
            }
            if fds[1].revents & Int16(POLLIN) != 0 { TerminalRestore.drainSignals() }
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                var buffer = [UInt8](repeating: 0, count: 512)
                let got = read(fd, &buffer, buffer.count)
                if got < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                // The terminal hung up (SSH connection dropped): like SIGHUP.
                if got <= 0 { return .terminate(SIGHUP) }
                pending += absorbAnswers(decoder.feed(buffer[0..<got]))
                for index in buffer.indices { buffer[index] = 0 }
            }
        }
    }

    /// Ctrl-Z or SIGTSTP: restore the terminal, stop, and take it back when continued.
    func suspend() {
        let wasActive = isActive
        leave()
        TerminalRestore.stopSelf()
        if wasActive { enter() }
    }
}

/// The process-wide state behind the terminal restore: what signal handlers and the exit hook
/// may touch. Everything here is set before any handler is installed and read by async-signal
/// safe code only (`tcsetattr`, `write`).
enum TerminalRestore {
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var fd: Int32 = -1
    /// 1 while the terminal is raw and in the alternate screen.
    nonisolated(unsafe) static var isRaw: Int32 = 0
    nonisolated(unsafe) static var signalReadEnd: Int32 = -1
    nonisolated(unsafe) static var signalWriteEnd: Int32 = -1
    nonisolated(unsafe) static var installed = false
    nonisolated(unsafe) static var caught: [Int32] = []

    /// Mouse off (every mode we or the terminal may have on), attributes reset, cursor shown,
    /// back to the main screen.
    static let resetSequence: [UInt8] = Array(
        "\u{1B}[?1016l\u{1B}[?1006l\u{1B}[?1002l\u{1B}[?1000l\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8)

    static let handledSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT, SIGWINCH]

    static func install(fd descriptor: Int32) {
        guard !installed else { return }
        installed = true
        fd = descriptor
        if let mode = TerminalInput.mode(of: descriptor) { saved = mode }
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
            signalReadEnd = ends[0]
            signalWriteEnd = ends[1]
        }
        for signal in handledSignals { handle(signal) }
        // A parent may have left them blocked (blocked masks survive exec).
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handledSignals { sigaddset(&set, signal) }
        sigprocmask(SIG_UNBLOCK, &set, nil)
        atexit { TerminalRestore.restore() }
    }

    private static func handle(_ signal: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            let saved = errno
            _ = Glibc.write(TerminalRestore.signalWriteEnd, &byte, 1)
            errno = saved
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(signal, &action, nil)
    }

    /// Restores the terminal if it is raw; safe to call any number of times.
    static func restore() {
        guard isRaw != 0, fd >= 0 else { return }
        isRaw = 0
        resetSequence.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count, let base = bytes.baseAddress {
                let wrote = Glibc.write(fd, base + offset, bytes.count - offset)
                if wrote < 0 { if errno == EINTR { continue } else { break } }
                offset += wrote
            }
        }
        _ = tcsetattr(fd, TCSAFLUSH, &saved)
    }

    /// Moves signal numbers from the pipe to `caught`.
    static func drainSignals() {
        guard signalReadEnd >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let got = read(signalReadEnd, &buffer, buffer.count)
            if got <= 0 { break }
            caught += buffer[0..<got].map { Int32($0) }
        }
    }

    /// The oldest signal not handled yet. A termination signal wins over everything else.
    static func takeSignal() -> Int32? {
        drainSignals()
        if let fatal = caught.firstIndex(where: { [SIGINT, SIGTERM, SIGHUP, SIGQUIT].contains($0) }) {
            let signal = caught[fatal]
            caught.removeAll()
            return signal
        }
        return caught.isEmpty ? nil : caught.removeFirst()
    }

    /// Stops the process with the default SIGTSTP action, then re-installs the handler.
    static func stopSelf() {
        signal(SIGTSTP, SIG_DFL)
        raise(SIGTSTP)
        handle(SIGTSTP)
    }

    /// Ends the process the way `signal` would have, after restoring the terminal.
    static func die(of number: Int32) -> Never {
        restore()
        signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        sigprocmask(SIG_UNBLOCK, &set, nil)
        raise(number)
        exit(128 + number)
    }
}
