import CLockX
import Glibc
import PuffClient
import PuffPlatform
import PuffScreen

/// What the locking parent holds the screen with: X11's covering windows and grabs
/// (`LockDisplay`) or a Wayland session lock (`WaylandCover`).
protocol LockCover: AnyObject {
    /// The next input event (or a change of the screens), waiting at most `timeout` seconds;
    /// nil on timeout or when one of `wakeDescriptors` is readable.
    func nextEvent(timeout: Double?) -> LockEvent?
    var wakeDescriptors: [Int32] { get set }
    /// The child's arguments that say where it draws (`--embed WINDOW`, `--frames`).
    var childEmbedding: [String] { get }
    /// A new child's socket, or a new screen size for both: what the child must know before
    /// it draws (Wayland: the lock screen's size).
    func introduce(_ socket: Int32)
    /// A record of a kind the guard does not handle itself, with the descriptor that came with
    /// it (or -1), which this call owns.
    func childSaid(_ record: LockChannel.Record, descriptor: Int32, fromActive: Bool)
}

extension LockDisplay: LockCover {
    var childEmbedding: [String] { ["--embed", String(window)] }
    func introduce(_ socket: Int32) {}
    func childSaid(_ record: LockChannel.Record, descriptor: Int32, fromActive: Bool) {
        if descriptor >= 0 { close(descriptor) }
    }
}

/// The locking parent: holds the grabs and the covering windows, forwards the input to the
/// active authentication child (which draws and runs PAM in a window inside the parent's), and
/// unlocks only when that child said `success` *and* exited with status 0. A child that dies
/// in any other way, stops (SIGSTOP), or stops answering in its event loop is replaced; the
/// screen stays covered and grabbed meanwhile. This process runs no PAM, decodes no picture
/// and draws nothing but its windows' background colour.
///
/// A second child waits on standby (PAM started, picture decoded, window created and not
/// shown), so a replacement only has to show its window and ask: it takes over at once, and a
/// new standby is started behind it. The standby gets no input and cannot unlock: only the
/// active child's `success` and exit status count.
final class LockGuard {
    /// Why the screen was never locked.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    /// Seconds a child may take from its start to `started` (pam_start, the picture decoded).
    static let startSeconds = 20.0
    /// Seconds a child may be silent in its event loop before it is judged hung: the first
    /// time; doubled after each child replaced for its silence (a machine so loaded that
    /// healthy children miss it gets more patience, not a replacement loop), up to
    /// `longestAnswerSeconds`, and back to this once a child has answered for `calmSeconds`.
    static let answerSeconds = 0.6
    static let longestAnswerSeconds = 4.8
    static let calmSeconds = 10.0
    /// Seconds a child may be silent after it said `busy`: in PAM, or laying out a new screen.
    static let busySeconds = 120.0
    static let layoutSeconds = 5.0
    static let pingSeconds = 0.1
    /// The standby is started this long after a child became the active one, so that it does
    /// not compete with that child's first screen.
    static let standbyDelay = 0.5
    /// A crash loop (this many starts within `loopWindow` seconds) waits a second between starts.
    static let loopStarts = 6
    static let loopWindow = 10.0

    /// One authentication process and what this process knows of it.
    private struct Child {
        let pid: pid_t
        let socket: Int32
        let startedAt: Double
        var lastHeard = 0.0
        var lastPing = 0.0
        /// Set by `busy`: how long it may be silent now; nil in its event loop.
        var allowance: Double?
        var saidStarted = false
        var saidSuccess = false
        /// When it was told `locked` (made the one that asks); nil while on standby.
        var activeSince: Double?
    }

    private let display: any LockCover
    /// The child's command line after the program (its window id is added at each start).
    private let childArguments: [String]
    private let signals: Int32
    private var active: Child?
    private var standby: Child?
    /// Seconds of silence after which the active child is judged hung (see `answerSeconds`).
    private var answerLimit = LockGuard.answerSeconds
    /// When the watchdog last ran: a longer gap means this process was stopped (or starved),
    /// so the children's silence meanwhile says nothing about them.
    private var lastWatch = 0.0
    /// The screen is covered and grabbed (`locked()` was called).
    private var isLocked = false
    /// The longest silence of an active child in its event loop that ended with an answer
    /// (reported at the unlock: how close healthy children came to the limit).
    private var longestSilence = 0.0
    private var starts: [Double] = []
    /// Children that would not die at once after SIGKILL (in the kernel): reaped later.
    private var abandoned: [pid_t] = []

    init(display: any LockCover, childArguments: [String]) throws(StartError) {
        self.display = display
        self.childArguments = childArguments
        signals = puff_child_signals()
        guard signals >= 0 else { throw StartError(description: "cannot watch the authentication child (errno \(errno))") }
        display.wakeDescriptors = [signals]
    }

    /// Starts the first child and waits until it has started PAM (so that a broken service
    /// fails before anything is locked). Throws when it ends or does not get there.
    func startFirstChild() throws(StartError) {
        guard let first = spawn() else { throw StartError(description: "cannot start the authentication process (errno \(errno))") }
        active = first
        Report.warn("started the authentication process \(first.pid)")
        let deadline = monotonicSeconds() + Self.startSeconds
        while active?.saidStarted == false {
            if monotonicSeconds() >= deadline {
                stop()
                throw StartError(description: "the authentication process did not start in \(Int(Self.startSeconds)) s")
            }
            if case .text(var typed)? = display.nextEvent(timeout: 0.1) { typed.wipe() }
            readChildren()
            if let raw = ended(first.pid) {
                close(first.socket)
                active = nil
                updateWakeDescriptors()
                throw StartError(description: "the authentication process ended before it could ask (\(Self.describe(raw)))")
            }
        }
    }

    /// The screen is covered and grabbed: from now on the active child may ask.
    func locked() {
        isLocked = true
        if let first = active { activate(first) }
    }

    /// Runs until the active child reports a verified success.
    func run() {
        while true {
            if let event = display.nextEvent(timeout: Self.pingSeconds) {
                if case .screensChanged = event {
                    // Wayland: the lock screen's output changed size; both children draw at it.
                    for child in [active, standby].compactMap({ $0 }) { display.introduce(child.socket) }
                }
                forward(event)
            }
            readChildren()
            if reapChildren() {
                stopStandby()
                Report.warn("the longest silence of an authentication process in its event loop: "
                            + "\(Int((longestSilence * 1000).rounded())) ms (judged hung after \(Int((answerLimit * 1000).rounded())) ms)")
                return
            }
            watchdog()
        }
    }

    /// Forwards an input event to the active child (typed text is wiped from this process
    /// once sent). The standby never gets input.
    private func forward(_ event: LockEvent) {
        let target = active?.activeSince != nil ? active?.socket : nil
        // Wiped on every path, also with no child to send it to.
        let copied = target != nil ? LockChannel.record(event) : nil
        if case .text(var typed) = event { typed.wipe() }
        guard var record = copied, let target else { return }
        LockChannel.send(target, &record)
    }

    /// Reads what both children say.
    private func readChildren() {
        if var child = active {
            read(&child, isActive: true)
            active = child
        }
        if var child = standby {
            read(&child, isActive: false)
            standby = child
        }
    }

    private func read(_ child: inout Child, isActive: Bool) {
        while true {
            var descriptor: Int32 = -1
            switch LockChannel.receive(child.socket, descriptor: &descriptor) {
            case .nothing, .closed:
                // Closed: the child is ending; its status decides (reapChildren).
                return
            case .record(var record):
                let now = monotonicSeconds()
                if isActive, child.activeSince != nil, child.allowance == nil, child.lastHeard > 0 {
                    longestSilence = max(longestSilence, now - child.lastHeard)
                }
                child.lastHeard = now
                switch record.kind {
                case .started?:
                    if !child.saidStarted && !isActive { Report.warn("the standby authentication process \(child.pid) is ready") }
                    child.saidStarted = true
                case .pong?: child.allowance = nil
                case .busy?: child.allowance = record.busyReason == .layout ? Self.layoutSeconds : Self.busySeconds
                case .success?:
                    // Only the child that was given the input can have authenticated anyone.
                    if isActive && child.activeSince != nil {
                        child.saidSuccess = true
                    } else {
                        Report.warn("the standby authentication process \(child.pid) said it succeeded; ignored")
                    }
                default:
                    // Wayland: the frames and which one is drawn, shown only for the active child.
                    display.childSaid(record, descriptor: descriptor, fromActive: isActive && child.activeSince != nil)
                    descriptor = -1
                }
                if descriptor >= 0 { close(descriptor) }
                record.wipe()
            }
        }
    }

    /// Reaps ended (or stopped) children: the standby is replaced later, the active child at
    /// once by the standby. True when the active child said `success` and exited with status 0.
    private func reapChildren() -> Bool {
        var info = signalfd_siginfo()
        while Glibc.read(signals, &info, MemoryLayout<signalfd_siginfo>.size) > 0 {}
        for old in abandoned where waitpid(old, nil, WNOHANG) == old {
            abandoned.removeAll { $0 == old }
        }
        if let child = standby, let raw = ended(child.pid) {
            Report.warn("the standby authentication process \(child.pid) \(Self.describe(raw))")
            close(child.socket)
            standby = nil
            updateWakeDescriptors()
        }
        guard var child = active, let raw = ended(child.pid) else { return false }
        // What it said before it ended is still in the socket: a `success` sent just before
        // its exit (after this loop last read) would otherwise be missed, and a right
        // passcode answered with a new lock screen.
        read(&child, isActive: true)
        let exitedZero = raw & 0x7F == 0 && (raw >> 8) & 0xFF == 0
        if exitedZero && child.saidSuccess { return true }
        Report.warn("the authentication process \(child.pid) \(Self.describe(raw))\(exitedZero ? " without saying it succeeded" : ""); replacing it")
        close(child.socket)
        active = nil
        updateWakeDescriptors()
        takeOver()
        return false
    }

    /// The raw status of `pid` when it ended or stopped (a stopped one is killed and reaped
    /// here: it cannot answer), else nil.
    private func ended(_ pid: pid_t) -> Int32? {
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG | WUNTRACED) == pid else { return nil }
        if raw & 0xFF == 0x7F {
            Report.warn("the authentication process \(pid) was stopped (signal \((raw >> 8) & 0xFF)); killing it")
            terminate(pid)
            return Int32(SIGKILL)
        }
        return raw
    }

    /// Pings both children, replaces one that does not answer in time, starts a standby when
    /// none waits, and an active child when none runs.
    private func watchdog() {
        let now = monotonicSeconds()
        defer { lastWatch = now }
        if now - lastWatch > 2 * Self.pingSeconds + 0.3 {
            // This process did not run for a while: ask again before judging.
            for index in 0..<2 {
                guard var child = index == 0 ? active : standby else { continue }
                LockChannel.send(child.socket, .ping)
                child.lastPing = now
                child.lastHeard = max(child.lastHeard, now - Self.pingSeconds)
                if index == 0 { active = child } else { standby = child }
            }
            return
        }
        // A pong may be waiting unread (this process was busy or stopped since it came).
        readChildren()
        guard isLocked else { return }
        if var child = active {
            if isHung(child, now: now) {
                let silent = now - max(child.lastHeard, child.startedAt)
                Report.warn("the authentication process \(child.pid) has not answered for \((silent * 10).rounded() / 10) s; replacing it")
                // Not waited for: a frozen process dies only when it is thawed. Reaped later;
                // its window, under the new child's, goes when it dies.
                kill(child.pid, SIGKILL)
                abandoned.append(child.pid)
                close(child.socket)
                active = nil
                updateWakeDescriptors()
                answerLimit = min(answerLimit * 2, Self.longestAnswerSeconds)
                takeOver()
            } else {
                ping(&child, now: now)
                if let since = child.activeSince, now - since > Self.calmSeconds, child.allowance == nil,
                   now - child.lastHeard < Self.answerSeconds {
                    answerLimit = Self.answerSeconds
                }
                active = child
            }
        }
        if var child = standby {
            if isHung(child, now: now) {
                Report.warn("the standby authentication process \(child.pid) has not answered; replacing it")
                terminate(child.pid)
                close(child.socket)
                standby = nil
                updateWakeDescriptors()
            } else {
                ping(&child, now: now)
                standby = child
            }
        }
        if active == nil {
            takeOver()
        } else if standby == nil, let since = active?.activeSince, now - since >= Self.standbyDelay, let next = spawn() {
            Report.warn("started a standby authentication process \(next.pid)")
            standby = next
        }
    }

    /// Whether `child` has been silent for longer than it may be, though asked.
    private func isHung(_ child: Child, now: Double) -> Bool {
        let since = max(child.lastHeard, child.startedAt)
        let limit = !child.saidStarted ? Self.startSeconds : child.allowance ?? answerLimit
        return now - since > limit && child.lastPing > since
    }

    private func ping(_ child: inout Child, now: Double) {
        guard now - child.lastPing >= Self.pingSeconds else { return }
        LockChannel.send(child.socket, .ping)
        child.lastPing = now
    }

    /// The active child is gone: the standby takes over (told `locked`, it shows its window
    /// and asks), or, without one, a new child is started (after a pause in a crash loop).
    private func takeOver() {
        if let next = standby {
            standby = nil
            Report.warn("the standby authentication process \(next.pid) takes over")
            activate(next)
            return
        }
        guard let next = spawn() else { return }
        Report.warn("started the authentication process \(next.pid)")
        activate(next)
    }

    private func activate(_ child: Child) {
        var chosen = child
        chosen.activeSince = monotonicSeconds()
        LockChannel.send(chosen.socket, .locked)
        active = chosen
    }

    /// Ends both children (the lock was refused).
    func stop() {
        if let child = active {
            terminate(child.pid)
            close(child.socket)
            active = nil
        }
        stopStandby()
    }

    private func stopStandby() {
        guard let child = standby else { return }
        terminate(child.pid)
        close(child.socket)
        standby = nil
        updateWakeDescriptors()
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

    /// The signals and the children's sockets wake the event loop; a closed descriptor left in
    /// the poll set would wake it at once, forever.
    private func updateWakeDescriptors() {
        display.wakeDescriptors = [signals] + [active, standby].compactMap { $0?.socket }
    }

    /// Starts `/proc/self/exe --auth-child --embed WINDOW …` with the socket as descriptor 3,
    /// no other descriptor, every signal at its default; nil when it could not, or when a
    /// crash loop makes the next start wait.
    private func spawn() -> Child? {
        let now = monotonicSeconds()
        starts = starts.filter { now - $0 < Self.loopWindow }
        // In a crash loop, one start a second; the watchdog asks again. The screen stays
        // covered and grabbed meanwhile (the server holds the grabs).
        if starts.count >= Self.loopStarts, let last = starts.last, now - last < 1 { return nil }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            Report.warn("cannot start the authentication process (errno \(errno)); trying again")
            return nil
        }
        // The child's end above 3, so that the dup2 below always clears close-on-exec.
        let childEnd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10)
        close(pair[1])
        guard childEnd >= 0 else {
            close(pair[0])
            return nil
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
            return nil
        }
        defer { posix_spawnattr_destroy(&attributes) }
        let arguments = ["puff-lock", "--auth-child"] + display.childEmbedding + childArguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, &argv, environ)
        close(childEnd)
        guard spawned == 0 else {
            close(pair[0])
            Report.warn("cannot start the authentication process (errno \(spawned)); trying again")
            errno = spawned
            return nil
        }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        starts.append(now)
        let child = Child(pid: pid, socket: pair[0], startedAt: now)
        display.introduce(pair[0])
        display.wakeDescriptors = display.wakeDescriptors + [pair[0]]
        return child
    }

    static func describe(_ raw: Int32) -> String {
        if raw & 0x7F == 0 { return "exited with status \((raw >> 8) & 0xFF)" }
        return "was killed by signal \(raw & 0x7F)"
    }
}
