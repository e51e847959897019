import Glibc
import PuffPlatform

/// The controlling terminal as the clients use it: its modes (a line without echo for a
/// passcode, raw for the drawing pad), saved and restored, and secret lines read byte by byte
/// into a wiped buffer through `FileDescriptor.read` (the one EINTR loop).
public enum TerminalInput {
    /// Opens `/dev/tty` (never stdin, so output may go to a pipe): read-write, not made the
    /// controlling terminal, closed on exec. Nil when the process has no terminal.
    public static func openTerminal() -> Int32? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// `tcgetattr(3)`: the terminal's mode; nil when `fd` is no terminal.
    public static func mode(of fd: Int32) -> termios? {
        var mode = termios()
        return tcgetattr(fd, &mode) == 0 ? mode : nil
    }

    /// `tcsetattr(3)` with TCSAFLUSH (pending input is dropped, so nothing typed before the
    /// prompt becomes part of the answer); false when it fails.
    @discardableResult
    public static func setMode(of fd: Int32, to mode: termios) -> Bool {
        var copy = mode
        return tcsetattr(fd, TCSAFLUSH, &copy) == 0
    }

    /// `base` for reading one line: line editing on, Return read as a newline, echo only when
    /// `echo`, and Ctrl-C/Ctrl-Z delivered as signals only when `signals`.
    public static func lineMode(from base: termios, echo: Bool, signals: Bool) -> termios {
        var mode = base
        mode.c_lflag |= tcflag_t(ICANON)
        mode.c_iflag |= tcflag_t(ICRNL)
        if !echo { mode.c_lflag &= ~tcflag_t(ECHO) }
        if !signals { mode.c_lflag &= ~tcflag_t(ISIG) }
        return mode
    }

    /// `base` made raw: every byte delivered at once, no echo, no signals, no line editing,
    /// no output processing, 8-bit characters (cfmakeraw's choice, spelled out).
    public static func rawMode(from base: termios) -> termios {
        var mode = base
        mode.c_iflag &= ~tcflag_t(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON)
        mode.c_oflag &= ~tcflag_t(OPOST)
        mode.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | ISIG | IEXTEN)
        mode.c_cflag &= ~tcflag_t(CSIZE | PARENB)
        mode.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &mode.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        return mode
    }

    /// Writes all of `text` to `fd`; false when it cannot.
    @discardableResult
    public static func write(_ fd: Int32, _ text: String) -> Bool {
        var copy = text
        return copy.withUTF8 { bytes in (try? FileDescriptor.writeAll(fd, UnsafeRawBufferPointer(bytes))) != nil }
    }

    /// What reading a line came to.
    public enum Line {
        /// The line without its newline (and without a carriage return before it).
        case secret(SecretBuffer)
        /// Ctrl-C or Ctrl-D typed (when they cancel), or the input ended (when that cancels, or
        /// before any byte of the line).
        case cancelled
        /// More than the buffer's capacity before the newline.
        case tooLong
        /// The terminal's mode could not be read or set.
        case noTerminalMode
        /// read(2) failed.
        case readFailed
    }

    /// How a line ends other than with a newline.
    public struct LineRules: Sendable {
        /// The end of input ends the line (a file on stdin without a last newline) rather
        /// than cancelling it (a terminal that went away).
        public var endOfInputEndsLine: Bool
        /// The bytes Ctrl-C (0x03) and Ctrl-D (0x04) cancel (a terminal with signals off).
        public var controlBytesCancel: Bool

        public init(endOfInputEndsLine: Bool, controlBytesCancel: Bool) {
            self.endOfInputEndsLine = endOfInputEndsLine
            self.controlBytesCancel = controlBytesCancel
        }
    }

    /// Reads one line from `fd` byte by byte (so nothing after the newline is consumed) into
    /// a wiped buffer of `capacity` bytes.
    public static func readLine(from fd: Int32, capacity: Int, rules: LineRules) -> Line {
        let secret = SecretBuffer(capacity: capacity)
        while true {
            var byte: UInt8 = 0
            defer { byte = 0 }
            guard let got = try? withUnsafeMutableBytes(of: &byte, { buffer throws(Errno) in try FileDescriptor.read(fd, into: buffer) })
            else { return .readFailed }
            if got == 0 {
                // The end of input ends a line that began; before any byte there is no line
                // at all (an empty line is its newline), which cancels.
                if rules.endOfInputEndsLine && secret.withUnsafeBytes({ !$0.isEmpty }) { break }
                return .cancelled
            }
            if byte == UInt8(ascii: "\n") { break }
            if rules.controlBytesCancel && (byte == 0x03 || byte == 0x04) { return .cancelled }
            guard secret.append(byte) else { return .tooLong }
        }
        if secret.withUnsafeBytes({ $0.last }) == UInt8(ascii: "\r") { secret.removeLast() }
        return .secret(secret)
    }

    /// The terminal prompt for a secret: writes `prompt` to the terminal `tty`, reads one line
    /// with echo off (on when `echo`) and signals off (Ctrl-C and Ctrl-D then cancel), and puts
    /// the terminal back as it was, with the newline the user's Return did not echo.
    public static func readSecret(terminal tty: Int32, prompt: String, echo: Bool = false, capacity: Int) -> Line {
        guard let saved = mode(of: tty) else { return .noTerminalMode }
        write(tty, prompt)
        guard setMode(of: tty, to: lineMode(from: saved, echo: echo, signals: false)) else {
            setMode(of: tty, to: saved)
            return .noTerminalMode
        }
        defer {
            setMode(of: tty, to: saved)
            if !echo { write(tty, "\n") }
        }
        return readLine(from: tty, capacity: capacity, rules: LineRules(endOfInputEndsLine: false, controlBytesCancel: true))
    }
}
