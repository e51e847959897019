import CSodium

/// Base64 (standard alphabet, padded) through libsodium.
public enum Base64 {
    static let variant = Int32(sodium_base64_VARIANT_ORIGINAL)
    /// Without the `=` padding, as argon2id strings spell their salt and hash.
    static let unpadded = Int32(sodium_base64_VARIANT_ORIGINAL_NO_PADDING)

    /// Encodes `bytes` (`padded: false`: without `=`).
    public static func encode(_ bytes: [UInt8], padded: Bool = true) -> String {
        let variant = padded ? Self.variant : Self.unpadded
        let length = sodium_base64_encoded_len(bytes.count, variant)
        var out = [CChar](repeating: 0, count: length)
        out.withUnsafeMutableBufferPointer { buffer in
            if let base = buffer.baseAddress { _ = sodium_bin2base64(base, length, bytes, bytes.count, variant) }
        }
        return out.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { String(validatingCString: $0) } ?? ""
        }
    }

    /// Decodes `text`, or `nil` when it is not strict base64 (`padded: false`: without `=`).
    public static func decode(_ text: some StringProtocol, padded: Bool = true) -> [UInt8]? {
        let variant = padded ? Self.variant : Self.unpadded
        let input = Array(text.utf8)
        var out = [UInt8](repeating: 0, count: input.count / 4 * 3 + 3)
        var written = 0
        let status = input.withUnsafeBufferPointer { source -> Int32 in
            out.withUnsafeMutableBufferPointer { target -> Int32 in
                guard let targetBase = target.baseAddress, let sourceBase = source.baseAddress else { return -1 }
                return sourceBase.withMemoryRebound(to: CChar.self, capacity: source.count) { chars in
                    sodium_base642bin(targetBase, target.count, chars, source.count, nil, &written, nil, variant)
                }
            }
        }
        guard status == 0 else { return nil }
        return Array(out.prefix(written))
    }
}
