import Glibc
import PuffPlatform

/// Runs `puff-pad draw` so a gesture is drawn on the picture instead of typed as text, when
/// `puff-enroll gesture` is attached to a terminal.
enum PadRunner {
    /// Exit status of `puff-pad` when it cannot draw here (no terminal, no mouse support).
    static let unavailable: Int32 = 69
    /// Exit status of `puff-pad` when the user cancelled.
    static let cancelled: Int32 = 2

    /// Whether to draw: stdin and stdout are a terminal and `--stdin` was not given.
    static func applies(fromStdin: Bool) -> Bool {
        !fromStdin && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
    }

    /// `puff-pad` next to this executable (`/proc/self/exe`), else the first on `PATH`.
    static func locate() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var candidates: [String] = []
        if length > 0 {
            let exe = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = exe.lastIndex(of: "/") { candidates.append(String(exe[..<slash]) + "/puff-pad") }
        }
        let path = getenv("PATH").flatMap { String(validatingCString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        candidates += path.split(separator: ":").map { $0 + "/puff-pad" }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// Draws one gesture with `puff-pad draw`. Nil when the pad is missing or cannot draw in
    /// this terminal (it says why): the caller reads the gesture as text instead.
    static func draw(picture: String, title: String) throws -> Terminal.Read? {
        guard let pad = locate() else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw Failure(ExitCodes.storeFailure, "cannot create a pipe for puff-pad") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO)
        posix_spawn_file_actions_addclose(&actions, writeEnd)
        let arguments = [pad, "draw", "--picture", picture, "--title", title]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, pad, &actions, nil, &argv, environ)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            throw Failure(ExitCodes.storeFailure, "cannot run \(pad)")
        }

        // One line of at most the wire format's size, straight into wiped memory.
        let capacity = Terminal.maximumLine + 1
        var buffer = try SecureBytes(count: capacity)
        var length = 0
        while length < capacity {
            let got = buffer.withMutableBytes { bytes in read(readEnd, bytes.baseAddress.map { $0 + length }, capacity - length) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            length += got
        }
        close(readEnd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0
        let code = (status >> 8) & 0xFF
        guard exited else { throw Failure(ExitCodes.refused, "puff-pad was killed") }
        switch code {
        case 0:
            if length > 0 && buffer.withBytes({ $0[length - 1] }) == UInt8(ascii: "\n") { length -= 1 }
            return .secret(try buffer.prefix(length))
        case cancelled:
            return .cancelled
        case unavailable:
            return nil
        default:
            throw Failure(ExitCodes.refused, "puff-pad failed (exit \(code))")
        }
    }
}
