/// Makes untrusted bytes safe for one log line.
public enum LogText {
    /// Printable ASCII stays as is; everything else (and the backslash) becomes `\xNN`.
    /// At most `limit` input bytes are shown, so a 64 KiB name cannot flood the log.
    public static func escape(_ bytes: some Sequence<UInt8>, limit: Int = 64) -> String {
        var out = ""
        var count = 0
        for byte in bytes {
            if count == limit {
                out += "..."
                break
            }
            count += 1
            if byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let digits = Array("0123456789abcdef".unicodeScalars)
                out += "\\x"
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0x0f)])
            }
        }
        return out
    }

    /// `escape` that also writes the space and `=` as `\x20` and `\x3d`, for the value of a
    /// `key=value` field: no byte of it can end the field or start another.
    public static func escapeField(_ bytes: some Sequence<UInt8>, limit: Int = 64) -> String {
        var out = ""
        for scalar in escape(bytes, limit: limit).unicodeScalars {
            switch scalar {
            case " ": out += "\\x20"
            case "=": out += "\\x3d"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Escapes a Swift string's UTF-8 bytes.
    public static func escape(_ text: String, limit: Int = 64) -> String {
        escape(text.utf8, limit: limit)
    }
}
