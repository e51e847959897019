/// Makes untrusted bytes safe for one log line.
public enum LogText {
    /// Printable ASCII stays as is; everything else (and the backslash) becomes `\xNN`.
    /// At most `limit` input bytes are shown, so a 64 KiB name cannot flood the log.
    public static func escape(_ bytes: some Sequence<UInt8>, limit: Int = 64) -> String {
        escaping(Array(bytes.prefix(min(max(limit, 0), Int.max - 1) + 1)), limit: limit, field: false)
    }

    /// `escape` that also writes the space and `=` as `\x20` and `\x3d`, for the value of a
    /// `key=value` field: no byte of it can end the field or start another.
    public static func escapeField(_ bytes: some Sequence<UInt8>, limit: Int = 64) -> String {
        escaping(Array(bytes.prefix(min(max(limit, 0), Int.max - 1) + 1)), limit: limit, field: true)
    }

    /// Both escapes over at most `limit + 1` bytes (one more shows that the input was cut),
    /// in one non-generic function: each caller's sequence type is only copied.
    private static func escaping(_ bytes: [UInt8], limit: Int, field: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for (count, byte) in bytes.enumerated() {
            if count == limit {
                out.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "."), UInt8(ascii: ".")])
                break
            }
            let plain = byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "\\")
                && !(field && (byte == UInt8(ascii: " ") || byte == UInt8(ascii: "=")))
            if plain {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "x"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0f))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Escapes a Swift string's UTF-8 bytes.
    public static func escape(_ text: String, limit: Int = 64) -> String {
        escape(text.utf8, limit: limit)
    }
}
