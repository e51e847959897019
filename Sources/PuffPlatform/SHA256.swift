import CSodium

/// SHA-256 through libsodium, as lowercase hex.
public enum SHA256 {
    /// The digest of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&digest, bytes, UInt64(bytes.count))
        return Sodium.hex(digest)
    }
}
