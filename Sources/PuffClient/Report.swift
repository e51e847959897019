import Glibc
import PuffPlatform

/// The clients' messages on standard error, one line each, written whole through
/// `FileDescriptor.writeAll` (the one EINTR loop): `PROGRAM: text` once a program has named
/// itself, the bare text otherwise (puff-enroll's messages).
public enum Report {
    /// Set once at start-up, before any other thread exists.
    public nonisolated(unsafe) static var program: String?

    /// `text` as one line, after the program's name.
    public static func warn(_ text: String) {
        raw((program.map { $0 + ": " } ?? "") + text + "\n")
    }

    /// `text` as it is (lines for scripts and tests).
    public static func raw(_ text: String) {
        var copy = text
        copy.withUTF8 { bytes in _ = try? FileDescriptor.writeAll(STDERR_FILENO, UnsafeRawBufferPointer(bytes)) }
    }
}
