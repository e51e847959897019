import Glibc
import PuffCore
import PuffPlatform

/// Runs `puff-check` for a module that is not root (a screen locker authenticating its own
/// user). The helper does the store work under the same lockout; this side only moves the
/// secret over a socket and reads back a `HelperReport`.
///
/// posix_spawn, not fork: the host may be multithreaded. The child gets an empty
/// environment, the socket as stdin, a socket as stdout and /dev/null as stderr; every other
/// descriptor of the host is O_CLOEXEC or closed by the helper itself. The secret goes over
/// a socketpair so a helper that dies early gives EPIPE (MSG_NOSIGNAL), never a SIGPIPE that
/// would kill the host.
struct HelperClient {
    /// The helper executable (module option `helper=`).
    let path: String

    /// Longest report read back.
    static let maximumOutput = HelperReport.maximumSize

    /// The state before the prompt.
    func query() throws(StoreError) -> HelperReport {
        try run("query", sending: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// One attempt with `secret`.
    func verify(_ secret: borrowing SecureBytes) throws(StoreError) -> HelperReport {
        try secret.withBytes { bytes throws(StoreError) in try run("verify", sending: bytes) }
    }

    private func send(_ bytes: UnsafeRawBufferPointer, to socket: Int32) throws(StoreError) {
        var done = 0
        while done < bytes.count, let base = bytes.baseAddress {
            let sent = Glibc.send(socket, base + done, bytes.count - done, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { throw failure("send") }
            done += sent
        }
    }

    private func failure(_ operation: String, _ error: Int32 = errno) -> StoreError {
        .system(operation, path: path, Errno(error))
    }

    private func run(_ operation: String, sending secret: UnsafeRawBufferPointer) throws(StoreError) -> HelperReport {
        var input: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &input) == 0 else {
            throw failure("socketpair")
        }
        defer { input.forEach { if $0 >= 0 { close($0) } } }
        var output: [Int32] = [-1, -1]
        // A socket pair here too: Glibc's module does not import pipe2.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &output) == 0 else {
            throw failure("socketpair")
        }
        defer { output.forEach { if $0 >= 0 { close($0) } } }

        let child = try spawn(operation, stdin: input[1], stdout: output[1])
        close(input[1]); input[1] = -1
        close(output[1]); output[1] = -1

        var sendError: StoreError?
        do {
            try send(secret, to: input[0])
        } catch {
            sendError = error
        }
        shutdown(input[0], Int32(SHUT_WR))
        let bytes = readOutput(output[0])
        let status = try wait(child)
        if let sendError { throw sendError }
        // Exit 0 and 1 carry a report; anything else (or a signal) means the helper failed closed.
        guard let bytes, status == 0 || status == 1 else {
            throw .unsafe(path: path, reason: "the helper failed (status \(status)); see its log")
        }
        do {
            let report = try HelperReport.decode(bytes)
            // A success report with a refusal status (or the reverse) is not believed.
            if (report.outcome == .success) != (status == 0 && operation == "verify") && operation == "verify" {
                throw StoreError.unsafe(path: path, reason: "the helper's status and report disagree")
            }
            return report
        } catch let error as StoreError {
            throw error
        } catch {
            throw .unsafe(path: path, reason: "the helper's report is malformed")
        }
    }

    private func spawn(_ operation: String, stdin: Int32, stdout: Int32) throws(StoreError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else { throw failure("posix_spawn_file_actions_init") }
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        guard posix_spawnattr_init(&attributes) == 0 else { throw failure("posix_spawnattr_init") }
        defer { posix_spawnattr_destroy(&attributes) }

        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigfillset(&defaults)
        guard posix_spawn_file_actions_adddup2(&actions, stdin, 0) == 0,
              posix_spawn_file_actions_adddup2(&actions, stdout, 1) == 0,
              posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) == 0,
              posix_spawnattr_setsigmask(&attributes, &empty) == 0,
              posix_spawnattr_setsigdefault(&attributes, &defaults) == 0,
              posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0 else {
            throw failure("posix_spawn setup")
        }
        let name = strdup("puff-check"), verb = strdup(operation)
        defer { free(name); free(verb) }
        guard let name, let verb else { throw failure("strdup", ENOMEM) }
        var argv: [UnsafeMutablePointer<CChar>?] = [name, verb, nil]
        var envp: [UnsafeMutablePointer<CChar>?] = [nil]
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, &argv, &envp)
        guard result == 0 else { throw failure("posix_spawn", result) }
        return child
    }

    /// The child's stdout up to EOF; `nil` when it is longer than a report can be.
    private func readOutput(_ descriptor: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Self.maximumOutput + 1)
        let count: Int
        do {
            count = try bytes.withUnsafeMutableBytes { buffer throws(Errno) in try FileDescriptor.read(descriptor, into: buffer) }
        } catch {
            return nil
        }
        guard count <= Self.maximumOutput else { return nil }
        return Array(bytes.prefix(count))
    }

    /// The child's exit status; a signal or a lost child (a host that reaps every child
    /// itself) throws.
    private func wait(_ child: pid_t) throws(StoreError) -> Int32 {
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 {
            guard errno == EINTR else { throw failure("waitpid") }
        }
        // WIFEXITED / WEXITSTATUS, spelled out (they are C macros).
        guard status & 0x7f == 0 else { throw .unsafe(path: path, reason: "the helper was killed by signal \(status & 0x7f)") }
        return (status >> 8) & 0xff
    }
}
