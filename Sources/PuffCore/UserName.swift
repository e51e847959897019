/// A login name that is safe to use as a file name in the store and in log lines.
///
/// The checks stop path tricks (`../x`, `a/b`), hidden or temporary names (a leading `.`
/// collides with the store's temp files), control characters that could forge log lines,
/// and names longer than any Linux account tool accepts.
public struct UserName: Hashable, Sendable, CustomStringConvertible {
    /// The longest name accepted, in bytes (useradd's limit).
    public static let maximumLength = 32

    /// The validated name.
    public let value: String

    /// Validates `value`; returns `nil` when it cannot name a Puff record.
    public init?(_ value: String) {
        let bytes = Array(value.utf8)
        guard !bytes.isEmpty, bytes.count <= UserName.maximumLength else { return nil }
        guard bytes[0] != UInt8(ascii: ".") && bytes[0] != UInt8(ascii: "-") else { return nil }
        for byte in bytes {
            // Only the portable user-name characters of POSIX plus the common extras.
            let ok = (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a)
                || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "$")
            guard ok else { return nil }
        }
        self.value = value
    }

    /// The name as written.
    public var description: String { value }

    /// The same bytes: the kernel and NSS compare names byte by byte (ByteText.swift).
    public static func == (left: UserName, right: UserName) -> Bool { left.value.sameBytes(as: right.value) }

    /// Hashes the name's bytes, as `==` compares them.
    public func hash(into hasher: inout Hasher) {
        for byte in value.utf8 { hasher.combine(byte) }
        hasher.combine(value.utf8.count)
    }
}
