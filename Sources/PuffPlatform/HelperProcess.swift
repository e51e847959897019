import CSpawn
import Glibc
import PuffCore

/// Runs the setuid helper `puff-check` and collects its exit status and report; `HelperClient`
/// (for the module when it is not root, and for `puff-enroll` run by an ordinary user) is
/// its one user.
///
/// posix_spawn, not fork: the module's host may be multithreaded. The child gets an empty
/// environment, default signal dispositions and an empty mask, a socket as stdin and as
/// stdout, and /dev/null as stderr; every other descriptor of the parent is O_CLOEXEC or closed
/// by the helper itself. The input goes over a socketpair with MSG_NOSIGNAL, so a helper that
/// dies early gives EPIPE, never a SIGPIPE that would kill the host; no signal disposition of
/// the caller is touched.
public struct HelperProcess: Sendable {
    /// The helper executable.
    public let path: String

    /// Runs the helper at `path`.
    public init(path: String) { self.path = path }

    /// Longest standard output read back: a report, or a login's answer (a report and a
    /// counted failure's two counters).
    public static let maximumOutput = 4 * HelperReport.maximumSize

    /// Runs `puff-check operation`, sends the buffers of `input` one after the other on its
    /// stdin, closes it, and returns the exit status and the standard output (`nil` when
    /// longer than a report can be). A helper killed by a signal, or one this process cannot
    /// wait for, throws. A service call runs only a helper that is root's own
    /// (`checkOwnedByRoot`), with real uid root when this process's effective uid is root but
    /// its real uid is not (su or sudo run by a user).
    public func run(_ operation: HelperOperation, input: [UnsafeRawBufferPointer])
        throws(StoreError) -> (status: Int32, output: [UInt8]?) {
        let running = try start(operation)
        var sendError: StoreError?
        do throws(StoreError) {
            try running.send(input)
        } catch {
            sendError = error
        }
        let (status, output) = try running.finish()
        if let sendError, status == 0 { throw sendError }
        return (status, output)
    }

    /// Starts `puff-check operation` with a socket on each of its stdin and stdout, for a
    /// conversation of several rounds (a login: the state, then, after the prompt, the
    /// attempt). A service call runs only a helper that is root's own, with real uid root when
    /// only this process's effective uid is.
    public func start(_ operation: HelperOperation) throws(StoreError) -> Running {
        if operation.isService { try checkOwnedByRoot() }
        // Socket pairs both ways: MSG_NOSIGNAL needs a socket, and Glibc's module does not
        // import pipe2.
        let toChild: (Int32, Int32), fromChild: (Int32, Int32)
        do throws(Errno) {
            toChild = try ChildProcess.socketPair()
        } catch {
            throw .system("socketpair", path: path, error)
        }
        do throws(Errno) {
            fromChild = try ChildProcess.socketPair()
        } catch {
            close(toChild.0)
            close(toChild.1)
            throw .system("socketpair", path: path, error)
        }
        let child: pid_t
        do throws(StoreError) {
            child = try spawn(operation.rawValue, stdin: toChild.1, stdout: fromChild.1,
                              asRoot: operation.isService && getuid() != 0)
        } catch {
            [toChild.0, toChild.1, fromChild.0, fromChild.1].forEach { close($0) }
            throw error
        }
        close(toChild.1)
        close(fromChild.1)
        return Running(path: path, child: child, input: toChild.0, output: fromChild.0)
    }

    /// A started helper: its input and output sockets and its pid. Dropped before `finish`, it
    /// closes the helper's input (the helper then ends without doing anything more) and reaps it.
    public final class Running {
        let path: String
        let child: pid_t
        private var input: Int32
        private var output: Int32
        private var reaped = false

        init(path: String, child: pid_t, input: Int32, output: Int32) {
            (self.path, self.child, self.input, self.output) = (path, child, input, output)
        }

        deinit {
            if input >= 0 { close(input) }
            if output >= 0 { close(output) }
            if !reaped { _ = try? ChildProcess.wait(child) }
        }

        /// Sends the buffers of `input` one after the other on the helper's stdin.
        public func send(_ buffers: [UnsafeRawBufferPointer]) throws(StoreError) {
            for bytes in buffers {
                do throws(Errno) {
                    try FileDescriptor.sendAll(input, bytes)
                } catch {
                    throw .system("send", path: path, error)
                }
            }
        }

        /// A reader of the helper's answer as it comes (HelperProtocol.swift): a login's state
        /// frame, before the prompt.
        func answerReader() -> HelperFrameReader<HelperDescriptorSource> {
            HelperFrameReader(HelperDescriptorSource(output))
        }

        /// Closes the helper's stdin, reads the rest of its stdout and waits for it: its exit
        /// status and that output (`nil` when longer than a report can be). A helper killed by a
        /// signal, or one this process cannot wait for, throws.
        public func finish() throws(StoreError) -> (status: Int32, output: [UInt8]?) {
            shutdown(input, Int32(SHUT_WR))
            let rest = readOutput()
            return (try wait(), rest)
        }

        /// Closes the helper's stdin and waits for it, leaving its output to `answerReader`:
        /// its exit status. A helper killed by a signal, or one this process cannot wait for,
        /// throws.
        func wait() throws(StoreError) -> Int32 {
            shutdown(input, Int32(SHUT_WR))
            reaped = true
            let status: Int32
            do throws(Errno) {
                status = try ChildProcess.wait(child)
            } catch {
                throw .system("waitpid", path: path, error)
            }
            // WIFEXITED / WEXITSTATUS, spelled out (they are C macros).
            guard status & 0x7f == 0 else { throw .unsafe(path: path, reason: "the helper was killed by signal \(status & 0x7f)") }
            return (status >> 8) & 0xff
        }

        /// The child's stdout up to EOF; `nil` when it is longer than a report can be.
        private func readOutput() -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: HelperProcess.maximumOutput + 1)
            // Array's closure methods rethrow untyped errors, so the typed read is caught inside.
            let count = bytes.withUnsafeMutableBytes { buffer in try? FileDescriptor.read(output, into: buffer) }
            guard let count, count <= HelperProcess.maximumOutput else { return nil }
            return Array(bytes.prefix(count))
        }
    }

    /// Root runs the helper only when it is a regular file owned by root with one link, not
    /// writable by group or others, in directories walked from `/` like every file Puff trusts
    /// (root-owned, not writable by others, no symbolic link): then only root could replace it
    /// before the exec.
    private func checkOwnedByRoot() throws(StoreError) {
        guard let (directory, name) = try StoreSession().parent(of: path) else { throw .system("open", path: path, .noEntry) }
        let helper = try directory.trusted.openFile(name, .rootWritable(maximumSize: Int.max))
        guard helper != nil else { throw .system("open", path: path, .noEntry) }
    }

    private func failure(_ operation: String, _ error: Int32 = errno) -> StoreError {
        .system(operation, path: path, Errno(error))
    }

    private func spawn(_ operation: String, stdin: Int32, stdout: Int32, asRoot: Bool) throws(StoreError) -> pid_t {
        if asRoot {
            guard geteuid() == 0 else { throw .unsafe(path: path, reason: "a service call needs an effective uid of root") }
            return try withArguments(operation) { argv throws(StoreError) in
                let child = puff_spawn_as_root(path, argv, stdin, stdout)
                guard child > 0 else { throw failure("fork") }
                return child
            }
        }
        do {
            return try ChildProcess.spawn(path, arguments: ["puff-check", operation], input: stdin, output: stdout)
        } catch {
            throw .system("posix_spawn", path: path, error)
        }
    }

    /// `body` with the helper's argv: its name and `operation`.
    private func withArguments(_ operation: String,
                               _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) throws(StoreError) -> pid_t) throws(StoreError) -> pid_t {
        let name = strdup("puff-check"), verb = strdup(operation)
        defer { free(name); free(verb) }
        guard let name, let verb else { throw failure("strdup", ENOMEM) }
        let argv: [UnsafeMutablePointer<CChar>?] = [name, verb, nil]
        // Array's closure methods rethrow untyped errors, so the typed call is caught inside.
        let ran = argv.withUnsafeBufferPointer { buffer -> Result<pid_t, StoreError> in
            guard let base = buffer.baseAddress else { return .failure(failure("argv", EINVAL)) }
            do throws(StoreError) {
                return .success(try body(base))
            } catch {
                return .failure(error)
            }
        }
        return try ran.get()
    }
}
