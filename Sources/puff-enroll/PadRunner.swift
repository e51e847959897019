import Glibc
import PuffPlatform

/// Starting the drawing tools `puff-enroll gesture` relies on (`puff-pad`, `puff-lock`) and
/// exchanging secrets with them through pipes only: never the command line or the
/// environment, and always through wiped memory.
enum ToolRunner {
    /// Exit status of both tools when they cannot draw here (no terminal, no display).
    static let unavailable: Int32 = 69
    /// Exit status of both tools when the user cancelled.
    static let cancelled: Int32 = 2

    /// `name` next to this executable (`/proc/self/exe`), then in the installed `bin`
    /// directory beside the build's `sbin` (`make install` puts puff-enroll in `$(PREFIX)/sbin`
    /// and the drawing tools in `$(PREFIX)/bin`), then the first on `PATH`.
    static func locate(_ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var candidates: [String] = []
        if length > 0 {
            let exe = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = exe.lastIndex(of: "/") { candidates.append(String(exe[..<slash]) + "/" + name) }
        }
        let helper = BuildInfo.helperPath
        if let sbin = helper.lastIndex(of: "/").map({ helper[..<$0] }), let prefix = sbin.lastIndex(of: "/").map({ sbin[..<$0] }) {
            candidates.append(prefix + "/bin/" + name)
        }
        let path = getenv("PATH").flatMap { String(validatingCString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        candidates += path.split(separator: ":").map { $0 + "/" + name }
        return candidates.first { $0.hasPrefix("/") && access($0, X_OK) == 0 }
    }

    /// What a tool gets on its stdin.
    enum Input {
        /// puff-enroll's own (the pad reads the terminal).
        case inherited
        case null
        /// These bytes through a pipe, closed after them.
        case bytes(UnsafeRawBufferPointer)
    }

    /// A tool's exit status and the line it wrote (empty when not read).
    struct Result: ~Copyable {
        let status: Int32
        let line: SecureBytes
    }

    /// Runs `arguments` (an absolute path first) with `input` on its stdin, stdout read into
    /// wiped memory when `readOutput` (at most one line of the wire format's size, without
    /// its newline; inherited otherwise), and stderr inherited (the tools' messages reach the
    /// user).
    static func run(_ arguments: [String], input: Input, readOutput: Bool) throws -> Result {
        let tool = arguments.first ?? ""
        var output: [Int32] = [-1, -1], feed: [Int32] = [-1, -1]
        func closeAll() { for fd in output + feed where fd >= 0 { close(fd) } }
        if readOutput {
            guard pipe(&output) == 0 else { throw Failure(ExitCodes.storeFailure, "cannot create a pipe for \(tool)") }
        }
        if case .bytes = input {
            guard pipe(&feed) == 0 else {
                closeAll()
                throw Failure(ExitCodes.storeFailure, "cannot create a pipe for \(tool)")
            }
        }
        // Our ends must not reach the child (a child holding the write end of its own stdin
        // would never see the end of it).
        for fd in [output[0], feed[1]] where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .inherited: break
        case .null: posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        case .bytes:
            posix_spawn_file_actions_adddup2(&actions, feed[0], STDIN_FILENO)
            posix_spawn_file_actions_addclose(&actions, feed[0])
        }
        if readOutput {
            posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO)
            posix_spawn_file_actions_addclose(&actions, output[1])
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, tool, &actions, nil, &argv, environ)
        // The child's ends.
        if output[1] >= 0 { close(output[1]); output[1] = -1 }
        if feed[0] >= 0 { close(feed[0]); feed[0] = -1 }
        guard spawned == 0 else {
            closeAll()
            throw Failure(ExitCodes.storeFailure, "cannot run \(tool)")
        }

        if case .bytes(let bytes) = input {
            // A tool that exits early must not kill puff-enroll with SIGPIPE: the write fails
            // with EPIPE instead, and the tool's exit status tells what happened.
            let previous = signal(SIGPIPE, SIG_IGN)
            _ = try? FileDescriptor.writeAll(feed[1], bytes)
            close(feed[1])
            feed[1] = -1
            signal(SIGPIPE, previous)
        }

        let capacity = readOutput ? Terminal.maximumLine + 1 : 0
        var buffer = try SecureBytes(count: capacity)
        var length = buffer.withMutableBytes { bytes in (try? FileDescriptor.read(output[0], into: bytes)) ?? 0 }
        closeAll()
        if length > 0 && buffer.withBytes({ $0[length - 1] }) == UInt8(ascii: "\n") { length -= 1 }
        guard let status = try? ChildProcess.wait(pid), status & 0x7F == 0 else { throw Failure(ExitCodes.refused, "\(tool) was killed") }
        return Result(status: (status >> 8) & 0xFF, line: try buffer.prefix(length))
    }
}

/// Runs `puff-pad draw` so a gesture is drawn on the picture instead of typed as text, when
/// `puff-enroll gesture` is attached to a terminal.
enum PadRunner {
    /// Whether to draw: stdin and stdout are a terminal and `--stdin` was not given.
    static func applies(fromStdin: Bool) -> Bool {
        !fromStdin && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
    }

    /// Draws one gesture with `puff-pad draw`. Nil when the pad is missing or cannot draw in
    /// this terminal (it says why): the caller reads the gesture as text instead.
    static func draw(picture: String, title: String) throws -> Terminal.Read? {
        guard let pad = ToolRunner.locate("puff-pad") else { return nil }
        // The pad draws on the terminal: it keeps puff-enroll's stdin.
        let result = try ToolRunner.run([pad, "draw", "--picture", picture, "--title", title], input: .inherited, readOutput: true)
        return try ToolRunner.drawing(result, tool: "puff-pad")
    }
}

extension ToolRunner {
    /// What a drawing tool's result means: the gesture line (exit 0), cancelled (2), nil when
    /// it cannot draw here (69), an error otherwise.
    static func drawing(_ result: borrowing Result, tool: String) throws -> Terminal.Read? {
        switch result.status {
        case 0: return .secret(try result.line.prefix(result.line.count))
        case cancelled: return .cancelled
        case unavailable: return nil
        default: throw Failure(ExitCodes.refused, "\(tool) failed (exit \(result.status))")
        }
    }
}
