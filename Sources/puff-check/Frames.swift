import Glibc
import PuffPlatform

/// The enrollment requests on the helper's standard input: fields in order, each as its
/// length in ASCII decimal, a newline, and that many bytes. Every field has its own bound;
/// secrets are read straight into wiped memory.
struct FrameReader {
    /// Why a request is refused unread.
    struct Malformed: Error {}

    /// Reads exactly `count` bytes from stdin into `buffer`.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(Malformed) {
        let got: Int
        do {
            got = try FileDescriptor.read(0, into: buffer)
        } catch {
            throw Malformed()
        }
        guard got == buffer.count else { throw Malformed() }
    }

    /// The next field's length, at most `limit`.
    private static func length(limit: Int) throws(Malformed) -> Int {
        var value = 0
        for index in 0..<11 {
            var byte: UInt8 = 0
            let read = withUnsafeMutableBytes(of: &byte) { buffer in (try? fill(buffer)) != nil }
            guard read else { throw Malformed() }
            if byte == UInt8(ascii: "\n"), index > 0 { return value }
            guard byte >= 0x30, byte <= 0x39 else { throw Malformed() }
            value = value * 10 + Int(byte - 0x30)
            guard value <= limit else { throw Malformed() }
        }
        throw Malformed()
    }

    /// A secret field (proof, passcode, gesture) in wiped memory; never empty.
    static func secret(limit: Int) throws(Malformed) -> SecureBytes {
        let count = try length(limit: limit)
        guard count > 0, var field = try? SecureBytes(count: count) else { throw Malformed() }
        try field.withMutableBytes { buffer throws(Malformed) in try fill(buffer) }
        return field
    }

    /// A public field (passcode type, picture).
    static func bytes(limit: Int) throws(Malformed) -> [UInt8] {
        let count = try length(limit: limit)
        guard count > 0 else { throw Malformed() }
        var field = [UInt8](repeating: 0, count: count)
        let complete = field.withUnsafeMutableBytes { buffer in (try? fill(buffer)) != nil }
        guard complete else { throw Malformed() }
        return field
    }

    /// Nothing may follow the last field.
    static func end() throws(Malformed) {
        var byte: UInt8 = 0
        let got = withUnsafeMutableBytes(of: &byte) { buffer in (try? FileDescriptor.read(0, into: buffer)) ?? -1 }
        guard got == 0 else { throw Malformed() }
    }
}
