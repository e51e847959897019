import Glibc
import PuffPlatform

/// Reading secrets from the terminal or stdin, and writing messages.
enum Terminal {
    /// Longest secret line read.
    static let maximumLine = 65536

    /// A message on stderr.
    static func warn(_ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }

    /// A line on stdout.
    static func say(_ text: String) {
        print(text)
    }

    /// What reading a secret came to.
    enum Read: ~Copyable {
        case secret(SecureBytes)
        case cancelled
    }

    /// Reads one line from `/dev/tty` with echo and signals off (Ctrl-C and Ctrl-D cancel),
    /// or from stdin when `fromStdin`. The bytes go straight into wiped memory.
    static func readSecret(prompt: String, fromStdin: Bool) throws -> Read {
        if fromStdin { return try readLine(from: STDIN_FILENO, terminal: false) }
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw Failure(64, "no terminal to read the passcode from; use --stdin to read it from standard input")
        }
        defer { close(tty) }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { throw Failure(64, "cannot configure the terminal") }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ISIG)
        quiet.c_lflag |= tcflag_t(ICANON)
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        guard tcsetattr(tty, TCSAFLUSH, &quiet) == 0 else { throw Failure(64, "cannot turn off echo") }
        defer {
            var restore = saved
            _ = tcsetattr(tty, TCSAFLUSH, &restore)
            _ = write(tty, "\n", 1)
        }
        return try readLine(from: tty, terminal: true)
    }

    private static func readLine(from fd: Int32, terminal: Bool) throws -> Read {
        var buffer = try SecureBytes(count: maximumLine)
        var length = 0
        var ended = false
        while !ended {
            guard length < maximumLine else { throw Failure(ExitCodes.refused, "the passcode is too long") }
            var byte: UInt8 = 0
            guard let got = try? withUnsafeMutableBytes(of: &byte, { buffer throws(Errno) in try FileDescriptor.read(fd, into: buffer) })
            else { throw Failure(ExitCodes.storeFailure, "cannot read the passcode") }
            if got == 0 || byte == UInt8(ascii: "\n") { ended = true; continue }
            if terminal && (byte == 0x03 || byte == 0x04) { return .cancelled }
            buffer.withMutableBytes { $0[length] = byte }
            byte = 0
            length += 1
        }
        if length > 0 && buffer.withBytes({ $0[length - 1] }) == UInt8(ascii: "\r") { length -= 1 }
        return .secret(try buffer.prefix(length))
    }
}
