import CLockX
import Glibc
import PuffPlatform
import PuffScreen

/// The locking parent: holds the grabs and the covering windows, forwards the input to the
/// authentication child (which draws and runs PAM in a window inside the parent's), and
/// unlocks only when that child said `success` *and* exited with status 0. A child that dies
/// in any other way, stops (SIGSTOP), or stops answering in its event loop is replaced; the
/// screen stays covered and grabbed meanwhile. This process runs no PAM, decodes no picture
/// and draws nothing but its windows' background colour.
final class LockGuard {
    /// Why the screen was never locked.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    /// Seconds a child may take from its start to `started` (pam_start), and to answer a ping
    /// in its event loop, and to come back from PAM once it said `busy`.
    static let startSeconds = 20.0
    static let answerSeconds = 1.0
    static let busySeconds = 120.0
    static let pingSeconds = 0.2
    /// A crash loop (this many starts within `loopWindow` seconds) waits a second between starts.
    static let loopStarts = 6
    static let loopWindow = 10.0

    private let display: LockDisplay
    /// The child's command line after the program (its window id is added at each start).
    private let childArguments: [String]
    private let signals: Int32
    private(set) var child: pid_t = 0
    private var socket: Int32 = -1
    private var startedAt = 0.0
    private var lastHeard = 0.0
    private var lastPing = 0.0
    /// When the watchdog last ran: a longer gap means this process was stopped (or starved),
    /// so the child's silence meanwhile says nothing about the child.
    private var lastWatch = 0.0
    private var busy = false
    private var saidStarted = false
    private var saidSuccess = false
    private var starts: [Double] = []
    /// Children that would not die at once after SIGKILL (in the kernel): reaped later.
    private var abandoned: [pid_t] = []

    init(display: LockDisplay, childArguments: [String]) throws(StartError) {
        self.display = display
        self.childArguments = childArguments
        signals = puff_child_signals()
        guard signals >= 0 else { throw StartError(description: "cannot watch the authentication child (errno \(errno))") }
        display.wakeDescriptors = [signals]
    }

    /// Starts the first child and waits until it has started PAM (so that a broken service
    /// fails before anything is locked). Throws when it ends or does not get there.
    func startFirstChild() throws(StartError) {
        guard spawn() else { throw StartError(description: "cannot start the authentication process (errno \(errno))") }
        let deadline = monotonicSeconds() + Self.startSeconds
        while !saidStarted {
            if monotonicSeconds() >= deadline {
                killChild()
                throw StartError(description: "the authentication process did not start in \(Int(Self.startSeconds)) s")
            }
            if case .text(var typed)? = display.nextEvent(timeout: 0.1) { typed.wipe() }
            readChild()
            if let status = reap(), status.pid == child {
                closeSocket()
                child = 0
                throw StartError(description: "the authentication process ended before it could ask (\(Self.describe(status.raw)))")
            }
        }
    }

    /// The screen is covered and grabbed: from now on the child may ask.
    func locked() {
        LockChannel.send(socket, .locked)
    }

    /// Runs until the child reports a verified success.
    func run() {
        while true {
            if let event = display.nextEvent(timeout: Self.pingSeconds) {
                forward(event)
            }
            readChild()
            if let status = reap() {
                if status.pid == child {
                    let exitedZero = status.raw & 0x7F == 0 && (status.raw >> 8) & 0xFF == 0
                    if exitedZero && saidSuccess { return }
                    Report.warn("the authentication process \(child) \(Self.describe(status.raw))\(exitedZero ? " without saying it succeeded" : ""); starting a new one")
                    closeSocket()
                    child = 0
                    restart()
                }
                continue
            }
            watchdog()
        }
    }

    /// Forwards an input event (typed text is wiped from this process once sent).
    private func forward(_ event: LockEvent) {
        // Wiped on every path, also with no child to send it to.
        let copied = child != 0 ? LockChannel.record(event) : nil
        if case .text(var typed) = event { typed.wipe() }
        guard var record = copied else { return }
        LockChannel.send(socket, &record)
    }

    /// Reads what the child says.
    private func readChild() {
        guard socket >= 0 else { return }
        while true {
            switch LockChannel.receive(socket) {
            case .nothing:
                return
            case .closed:
                // The child is ending; its status decides (reap).
                return
            case .record(var record):
                lastHeard = monotonicSeconds()
                switch record.kind {
                case .started?: saidStarted = true
                case .pong?: busy = false
                case .busy?: busy = true
                case .success?: saidSuccess = true
                default: break
                }
                record.wipe()
            }
        }
    }

    /// Pings the child and replaces it when it does not answer in time, and kills (then
    /// replaces) a stopped one at once.
    private func watchdog() {
        guard child != 0 else {
            restart()
            return
        }
        let now = monotonicSeconds()
        defer { lastWatch = now }
        if now - lastWatch > 2 * Self.pingSeconds + 0.3 {
            // This process did not run for a while: ask again before judging.
            LockChannel.send(socket, .ping)
            lastPing = now
            lastHeard = max(lastHeard, now - Self.pingSeconds)
            return
        }
        // A pong may be waiting unread (this process was busy or stopped since it came).
        readChild()
        let silentFor = now - max(lastHeard, startedAt)
        let limit = !saidStarted ? Self.startSeconds : busy ? Self.busySeconds : Self.answerSeconds
        if silentFor > limit && lastPing > max(lastHeard, startedAt) {
            Report.warn("the authentication process \(child) has not answered for \((silentFor * 10).rounded() / 10) s; replacing it")
            killChild()
            restart()
            return
        }
        if now - lastPing >= Self.pingSeconds {
            LockChannel.send(socket, .ping)
            lastPing = now
        }
    }

    /// Reaps one ended (or stopped) child: a stopped one is killed and reaped here.
    private func reap() -> (pid: pid_t, raw: Int32)? {
        var info = signalfd_siginfo()
        while read(signals, &info, MemoryLayout<signalfd_siginfo>.size) > 0 {}
        for old in abandoned where waitpid(old, nil, WNOHANG) == old {
            abandoned.removeAll { $0 == old }
        }
        guard child != 0 else { return nil }
        var raw: Int32 = 0
        let got = waitpid(child, &raw, WNOHANG | WUNTRACED)
        guard got == child else { return nil }
        if raw & 0xFF == 0x7F {
            // Stopped (SIGSTOP, SIGTSTP): it cannot answer; replaced now.
            Report.warn("the authentication process \(child) was stopped (signal \((raw >> 8) & 0xFF)); killing it")
            terminate(child)
            return (child, Int32(SIGKILL))
        }
        return (got, raw)
    }

    /// Ends the child (the lock was refused).
    func stop() { killChild() }

    private func killChild() {
        guard child != 0 else { return }
        terminate(child)
        closeSocket()
        child = 0
    }

    /// SIGKILL and reap, waiting up to 50 ms; one that does not die at once (in the kernel,
    /// or frozen by a cgroup) is reaped later, and its window (under the new child's) goes
    /// when it dies.
    private func terminate(_ pid: pid_t) {
        kill(pid, SIGKILL)
        for _ in 0..<25 {
            if waitpid(pid, nil, WNOHANG) == pid { return }
            usleep(2_000)
        }
        abandoned.append(pid)
    }

    private func closeSocket() {
        if socket >= 0 { close(socket) }
        socket = -1
        // A closed descriptor left in the poll set would wake it at once, forever.
        display.wakeDescriptors = [signals]
    }

    /// Starts a new child at once (after a second in a crash loop), already told it is locked.
    private func restart() {
        let now = monotonicSeconds()
        starts = starts.filter { now - $0 < Self.loopWindow }
        if starts.count >= Self.loopStarts {
            // Waiting here keeps the grabs (the server holds them) and the windows.
            if case .text(var typed)? = display.nextEvent(timeout: 1) { typed.wipe() }
        }
        if spawn() {
            LockChannel.send(socket, .locked)
        } else {
            Report.warn("cannot start the authentication process (errno \(errno)); trying again")
        }
    }

    /// Starts `/proc/self/exe --auth-child --embed WINDOW …` with the socket as descriptor 3,
    /// no other descriptor, every signal at its default.
    private func spawn() -> Bool {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { return false }
        // The child's end above 3, so that the dup2 below always clears close-on-exec.
        let childEnd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10)
        close(pair[1])
        guard childEnd >= 0 else {
            close(pair[0])
            return false
        }
        _ = puff_cloexec_from(3)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childEnd, 3)
        var attributes = posix_spawnattr_t()
        guard puff_spawn_defaults(&attributes) == 0 else {
            close(pair[0])
            close(childEnd)
            return false
        }
        defer { posix_spawnattr_destroy(&attributes) }
        let arguments = ["puff-lock", "--auth-child", "--embed", String(display.window)] + childArguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, &argv, environ)
        close(childEnd)
        guard spawned == 0 else {
            close(pair[0])
            errno = spawned
            return false
        }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        socket = pair[0]
        display.wakeDescriptors = [signals, socket]
        child = pid
        startedAt = monotonicSeconds()
        lastHeard = 0
        lastPing = 0
        busy = false
        saidStarted = false
        saidSuccess = false
        starts.append(startedAt)
        Report.warn("started the authentication process \(pid)")
        return true
    }

    static func describe(_ raw: Int32) -> String {
        if raw & 0x7F == 0 { return "exited with status \((raw >> 8) & 0xFF)" }
        return "was killed by signal \(raw & 0x7F)"
    }
}
