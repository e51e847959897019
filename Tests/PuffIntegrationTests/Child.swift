import Foundation
import Testing

// glibc has them (addclosefrom_np since 2.34); Swift's Glibc module does not declare them.
@_silgen_name("pipe2")
private func pipe2(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ first: Int32) -> Int32

/// <spawn.h>: the child calls setsid (a GNU extension the Glibc module does not import).
private let spawnSetSession: Int32 = 0x80

/// Every process the suite starts is started here, the same way:
/// - it gets only descriptors 0–2 (`closefrom(3)`). Foundation's `Pipe` makes descriptors
///   without close-on-exec, so before this a daemon one test started (slapd detaches and keeps
///   what it inherited) could hold the write end of another test's output pipe, and that
///   test's read waited for the daemon's end — a hang for as long as the daemon lived;
/// - default signal dispositions and an empty mask (the runner's threads block some signals,
///   and a child must be stoppable with SIGTERM);
/// - the environment given, or the test process's.
struct Child {
    /// What one of the standard descriptors is in the child.
    enum Stream {
        case null
        /// A descriptor of the test process (dup2'ed).
        case descriptor(Int32)
        /// A file, created if missing, appended to.
        case append(String)
        /// A terminal (or any file) opened read-write; with `newSession` it becomes the
        /// controlling terminal.
        case terminal(String)
        /// The same as the child's stdin (for a terminal) or stdout (for stderr).
        case same
    }

    var arguments: [String]
    var stdin = Stream.null
    var stdout = Stream.null
    var stderr = Stream.null
    /// The whole environment; nil: the test process's.
    var environment: [String: String]? = nil
    var newSession = false
    /// A process group of its own, so a deadline can kill everything it started.
    var newGroup = false

    init(_ arguments: [String], stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null,
         environment: [String: String]? = nil, newSession: Bool = false, newGroup: Bool = false) {
        self.arguments = arguments
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.environment = environment
        self.newSession = newSession
        self.newGroup = newGroup
    }

    /// Starts `arguments[0]` (an absolute path); its pid, to reap with `Child.wait`.
    func start() throws -> pid_t {
        // A child that stops reading its input early must give the writer EPIPE, never a
        // SIGPIPE that ends the whole test process (seen once in a full run).
        signal(SIGPIPE, SIG_IGN)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            let result: Int32
            switch stream {
            case .null:
                result = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let descriptor):
                result = posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .append(let path):
                result = posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            case .terminal(let path):
                result = posix_spawn_file_actions_addopen(&actions, target, path, O_RDWR, 0)
            case .same:
                result = target == 0 ? EINVAL : posix_spawn_file_actions_adddup2(&actions, target == 2 ? 1 : 0, target)
            }
            guard result == 0 else { throw Self.error("file action for descriptor \(target)", result) }
        }
        guard addCloseFrom(&actions, 3) == 0 else { throw Self.error("closefrom", errno) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newSession { flags |= spawnSetSession } else if newGroup { flags |= POSIX_SPAWN_SETPGROUP }
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let result: Int32
        if let environment {
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { envp.forEach { free($0) } }
            result = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, &envp)
        } else {
            result = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        }
        guard result == 0 else { throw Self.error("posix_spawn \(arguments[0])", result) }
        return child
    }

    /// Starts the program and reaps it; its exit status (128 + signal when killed).
    func run() throws -> Int32 {
        try Self.wait(start())
    }

    /// Reaps `pid`; its exit status, 128 + the signal when a signal ended it.
    static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw error("waitpid \(pid)", errno) }
        }
        return exitStatus(status)
    }

    /// WIFEXITED/WEXITSTATUS/WTERMSIG spelled out (C macros).
    static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    static func error(_ what: String, _ code: Int32) -> CocoaError {
        CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(what): \(String(cString: strerror(code)))"])
    }
}

/// A pipe whose two ends are close-on-exec (Foundation's `Pipe` makes them inheritable).
private func closeOnExecPipe() throws -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard pipe2(&ends, O_CLOEXEC) == 0 else { throw Child.error("pipe2", errno) }
    return (ends[0], ends[1])
}

/// Runs a program to completion, feeding `input` on stdin, with `environment` added to the
/// test process's. A program still running after `seconds` is killed with everything in its
/// process group, and the test fails saying so (status -1): a hang shows as a failure with
/// the command, not as a suite that never ends.
@discardableResult
func run(_ program: String, _ arguments: [String], input: String? = nil, environment: [String: String] = [:],
         seconds: Double = 240) throws -> Run {
    let inPipe = try closeOnExecPipe(), outPipe = try closeOnExecPipe(), errPipe = try closeOnExecPipe()
    var child = Child([program] + arguments, stdin: .descriptor(inPipe.read), stdout: .descriptor(outPipe.write),
                      stderr: .descriptor(errPipe.write), newGroup: true)
    if !environment.isEmpty { child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let pid: pid_t
    do { pid = try child.start() } catch {
        [inPipe.read, inPipe.write, outPipe.read, outPipe.write, errPipe.read, errPipe.write].forEach { close($0) }
        throw error
    }
    close(inPipe.read)
    close(outPipe.write)
    close(errPipe.write)
    defer { close(outPipe.read); close(errPipe.read) }

    // The input is written as the child reads it, while its output is read (either side may
    // fill a pipe first); a child that stops reading early gets EPIPE, not the test SIGPIPE.
    let pending = Array((input ?? "").utf8)
    var written = 0
    var inputOpen = true
    if pending.isEmpty { close(inPipe.write); inputOpen = false } else { _ = fcntl(inPipe.write, F_SETFL, O_NONBLOCK) }
    defer { if inputOpen { close(inPipe.write) } }
    var output: [UInt8] = [], errors: [UInt8] = []
    var open = [outPipe.read: true, errPipe.read: true]
    let deadline = Date().addingTimeInterval(seconds)
    var buffer = [UInt8](repeating: 0, count: 65536)
    while open.values.contains(true) || inputOpen {
        let left = deadline.timeIntervalSinceNow
        if left <= 0 { break }
        var descriptors: [pollfd] = []
        for (descriptor, isOpen) in open where isOpen { descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        if inputOpen { descriptors.append(pollfd(fd: inPipe.write, events: Int16(POLLOUT), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(min(left, 1) * 1000) + 1)
        if ready < 0 && errno != EINTR { throw Child.error("poll", errno) }
        for entry in descriptors where entry.revents != 0 {
            if entry.fd == inPipe.write {
                let count = pending.withUnsafeBytes { bytes in
                    write(entry.fd, bytes.baseAddress! + written, bytes.count - written)
                }
                if count > 0 { written += count }
                if count < 0 && errno == EAGAIN { continue }
                if count <= 0 || written == pending.count {
                    close(inPipe.write)
                    inputOpen = false
                }
            } else {
                let count = read(entry.fd, &buffer, buffer.count)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if count <= 0 { open[entry.fd] = false; continue }
                if entry.fd == outPipe.read { output += buffer[0..<count] } else { errors += buffer[0..<count] }
            }
        }
    }
    // Reaped within what is left of the deadline (a child may close its output and go on).
    var status: Int32 = 0
    var reaped = false
    while !reaped {
        let got = waitpid(pid, &status, WNOHANG)
        if got == pid { reaped = true; break }
        if got < 0 && errno != EINTR { throw Child.error("waitpid", errno) }
        if deadline.timeIntervalSinceNow <= 0 { break }
        usleep(5_000)
    }
    let text = String(decoding: output, as: UTF8.self), errorText = String(decoding: errors, as: UTF8.self)
    guard reaped else {
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        _ = try? Child.wait(pid)
        let command: String = ([program] + arguments).joined(separator: " ")
        let shownOutput = String(text.suffix(2000)), shownErrors = String(errorText.suffix(2000))
        let message: String = "\(command) was still running after \(Int(seconds)) s and was killed; "
            + "output so far: \(shownOutput); errors so far: \(shownErrors)"
        Issue.record(Comment(rawValue: message))
        return Run(status: -1, output: text, errors: errorText)
    }
    return Run(status: Child.exitStatus(status), output: text, errors: errorText)
}

/// A long-lived child a test watches through the file its stderr goes to (puff-lock, puff-enroll
/// on a display): the text so far, a bounded wait for a line, and its exit status. It is killed
/// (its process group when `group`) and reaped if it still runs when released.
class WatchedChild {
    let pid: pid_t
    let log: String
    private let group: Bool
    private var status: Int32?

    init(pid: pid_t, log: String, group: Bool) {
        self.pid = pid
        self.log = log
        self.group = group
    }

    deinit {
        if exitStatus(timeout: 0) == nil {
            kill(group ? -pid : pid, SIGKILL)
            _ = try? Child.wait(pid)
        }
    }

    var isRunning: Bool { exitStatus(timeout: 0) == nil }

    var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Waits until the log holds `needle` `count` times; false on timeout or when the child
    /// ended without writing it.
    @discardableResult
    func waitFor(_ needle: String, count: Int = 1, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if text.components(separatedBy: needle).count - 1 >= count { return true }
            if !isRunning { return text.components(separatedBy: needle).count - 1 >= count }
            usleep(50_000)
        }
        return false
    }

    /// The exit status (or 128 + the signal), waiting at most `timeout` seconds; nil while
    /// still running.
    func exitStatus(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while status == nil {
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                status = Child.exitStatus(raw)
            } else if Date() >= deadline {
                return nil
            } else {
                usleep(50_000)
            }
        }
        return status
    }
}

/// When a log first held a line `count` times, seen by reading it every 5 ms on a thread of its
/// own while the test does other things: for timing what the product reports (a new lock screen
/// drawn), not the test's own steps.
final class LogStopwatch: @unchecked Sendable {
    private let lock = NSLock()
    private var seenAt: Date?
    private var done = false

    init(log: String, needle: String, count: Int, timeout: Double) {
        let thread = Thread { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                if text.components(separatedBy: needle).count - 1 >= count {
                    let now = Date()
                    lock.withLock { seenAt = now }
                    break
                }
                usleep(5_000)
            }
            lock.withLock { done = true }
        }
        thread.start()
    }

    /// When the line was seen (nil when it was not within the timeout), once the watch ended.
    func result() -> Date? {
        while !lock.withLock({ done }) { usleep(5_000) }
        return lock.withLock { seenAt }
    }
}
