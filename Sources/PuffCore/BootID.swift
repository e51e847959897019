/// The kernel's boot id in the canonical form Puff stores.
public enum BootID {
    /// 32 lowercase hex digits (the kernel's UUID without its dashes).
    public static func isValid(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The canonical form of `/proc/sys/kernel/random/boot_id`'s content (a dashed UUID and a
    /// newline), or `nil` when it is not one.
    public static func canonical(_ bytes: some Collection<UInt8>) -> String? {
        var digits: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "\n") && index == bytes.count - 1 { break }
            if byte == UInt8(ascii: "-") { continue }
            guard digits.count < 32 else { return nil }
            digits.append(byte)
        }
        let text = String(decoding: digits, as: UTF8.self)
        return isValid(text) ? text : nil
    }
}
