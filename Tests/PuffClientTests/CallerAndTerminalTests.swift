import Foundation
import Glibc
import PuffClient
import PuffPlatform
import Testing

@Suite struct CallerTests {
    @Test func theCallerIsTheRealUidsAccount() throws {
        let caller = try #require(Caller.current())
        #expect(caller.uid == getuid())
        let entry = try #require(getpwuid(getuid())?.pointee)
        #expect(caller.name.value == String(cString: entry.pw_name))
        #expect(caller.gid == entry.pw_gid)
        #expect(caller.home == String(cString: entry.pw_dir))
    }

    @Test func anUnknownUidIsNobodysCaller() {
        #expect(Caller.lookup(uid: 3_999_999_999) == nil)
    }
}

@Suite struct TerminalInputTests {
    /// `text` written into a pipe and closed; the read end.
    func pipe(_ text: [UInt8]) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        try #require(Glibc.pipe(&ends) == 0)
        _ = text.withUnsafeBytes { Glibc.write(ends[1], $0.baseAddress, $0.count) }
        close(ends[1])
        return ends[0]
    }

    func string(_ line: TerminalInput.Line) -> String? {
        guard case .secret(let secret) = line else { return nil }
        return secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    static let file = TerminalInput.LineRules(endOfInputEndsLine: true, controlBytesCancel: false)
    static let terminal = TerminalInput.LineRules(endOfInputEndsLine: false, controlBytesCancel: true)

    @Test func oneLineIsReadAndNothingAfterIt() throws {
        let fd = try pipe(Array("123456\r\nsecond\n".utf8))
        defer { close(fd) }
        #expect(string(TerminalInput.readLine(from: fd, capacity: 64, rules: Self.file)) == "123456")
        #expect(string(TerminalInput.readLine(from: fd, capacity: 64, rules: Self.file)) == "second")
    }

    @Test func theEndOfInputEndsOrCancelsAsTold() throws {
        let first = try pipe(Array("abc".utf8))
        defer { close(first) }
        #expect(string(TerminalInput.readLine(from: first, capacity: 64, rules: Self.file)) == "abc")
        let second = try pipe(Array("abc".utf8))
        defer { close(second) }
        guard case .cancelled = TerminalInput.readLine(from: second, capacity: 64, rules: Self.terminal) else {
            Issue.record("the end of a terminal's input must cancel")
            return
        }
    }

    @Test func controlBytesCancelOnATerminal() throws {
        for byte: UInt8 in [0x03, 0x04] {
            let fd = try pipe(Array("12".utf8) + [byte] + Array("34\n".utf8))
            defer { close(fd) }
            guard case .cancelled = TerminalInput.readLine(from: fd, capacity: 64, rules: Self.terminal) else {
                Issue.record("byte \(byte) must cancel")
                continue
            }
        }
    }

    @Test func aLineLongerThanTheBufferIsRefusedNotCut() throws {
        let fd = try pipe(Array("12345678\n".utf8))
        defer { close(fd) }
        guard case .tooLong = TerminalInput.readLine(from: fd, capacity: 4, rules: Self.file) else {
            Issue.record("a long line must be refused")
            return
        }
    }

    /// The echo-off prompt on a real pseudo-terminal: echo is off while the answer is typed,
    /// the answer is not shown, and the mode is restored afterwards.
    @Test func theSecretPromptTurnsEchoOffAndRestoresTheTerminal() throws {
        // posix_openpt and friends are not in Swift's Glibc module: /dev/ptmx with the two
        // ioctls they make (TIOCSPTLCK to unlock, TIOCGPTN for the number).
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(slave >= 0)
        defer { close(slave) }
        let before = try #require(TerminalInput.mode(of: slave))
        #expect(before.c_lflag & tcflag_t(ECHO) != 0)
        // The typist: waits until echo is off (the prompt is up), then types.
        let typist = Thread {
            for _ in 0..<500 {
                if let mode = TerminalInput.mode(of: slave), mode.c_lflag & tcflag_t(ECHO) == 0 { break }
                usleep(10_000)
            }
            _ = "sesame\n".withCString { Glibc.write(master, $0, 7) }
        }
        typist.start()
        let line = TerminalInput.readSecret(terminal: slave, prompt: "Passcode: ", capacity: 64)
        #expect(string(line) == "sesame")
        let after = try #require(TerminalInput.mode(of: slave))
        #expect(after.c_lflag == before.c_lflag && after.c_iflag == before.c_iflag)
        // What the terminal showed: the prompt and the newline, never the passcode.
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        var shown = [UInt8](repeating: 0, count: 256)
        let got = Glibc.read(master, &shown, shown.count)
        let text = String(decoding: shown.prefix(max(got, 0)), as: UTF8.self)
        #expect(text.hasPrefix("Passcode: "))
        #expect(!text.contains("sesame"))
    }

    @Test func rawModeLeavesNoLineDisciplineOn() throws {
        let raw = TerminalInput.rawMode(from: termios())
        #expect(raw.c_lflag & tcflag_t(ECHO | ICANON | ISIG | IEXTEN) == 0)
        let line = TerminalInput.lineMode(from: raw, echo: false, signals: false)
        #expect(line.c_lflag & tcflag_t(ICANON) != 0 && line.c_lflag & tcflag_t(ECHO | ISIG) == 0)
        #expect(line.c_iflag & tcflag_t(ICRNL) != 0)
    }
}
