import Glibc
import PuffClient
import PuffPlatform

/// Reading secrets from the terminal or stdin (the client kit's `TerminalInput`), and lines on stdout.
enum Terminal {
    /// Longest secret line read.
    static let maximumLine = 65536

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
    /// or from stdin when `fromStdin` (the end of input ends the line there). The bytes go
    /// straight into wiped memory (the client kit's `TerminalInput`).
    /// `what` names the secret in messages ("passcode", "gesture", "system password").
    static func readSecret(prompt: String, fromStdin: Bool, what: String = "passcode") throws -> Read {
        let line: TerminalInput.Line
        if fromStdin {
            line = TerminalInput.readLine(from: STDIN_FILENO, capacity: maximumLine,
                                          rules: .init(endOfInputEndsLine: true, controlBytesCancel: false))
            // The input ended before a line began: no secret was given (an empty line is one).
            if case .cancelled = line {
                throw Failure(ExitCodes.refused, "standard input ended before the \(what) was read; nothing was changed")
            }
        } else {
            guard let tty = TerminalInput.openTerminal() else {
                throw Failure(64, "no terminal to read the \(what) from; use --stdin to read it from standard input")
            }
            defer { close(tty) }
            line = TerminalInput.readSecret(terminal: tty, prompt: prompt, capacity: maximumLine)
        }
        switch line {
        case .secret(let secret):
            var copy = try SecureBytes(count: secret.count)
            copy.withMutableBytes { target in secret.withUnsafeBytes { source in target.copyMemory(from: source) } }
            return .secret(copy)
        case .cancelled:
            return .cancelled
        case .tooLong:
            throw Failure(ExitCodes.refused, "the \(what) is too long")
        case .noTerminalMode:
            throw Failure(64, "cannot turn off echo")
        case .readFailed:
            throw Failure(ExitCodes.storeFailure, "cannot read the \(what)")
        }
    }
}
