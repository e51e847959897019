import CSodium
import PuffCore

/// libsodium: initialisation, wiped buffers, randomness, keyed BLAKE2b.
public enum Sodium {
    /// `sodium_init()`; called on every module entry (it is cheap after the first time).
    public static func initialize() throws(StoreError) {
        guard sodium_init() >= 0 else { throw .crypto("sodium_init failed") }
    }

    /// `randombytes_buf` as lowercase hex, for temp-file names.
    public static func randomHex(byteCount: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: byteCount)
        bytes.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
        return hex(bytes)
    }

    /// Lowercase hex of `bytes` (not for secrets: the result is an ordinary string).
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".unicodeScalars)
        var text = ""
        for byte in bytes {
            text.unicodeScalars.append(digits[Int(byte >> 4)])
            text.unicodeScalars.append(digits[Int(byte & 0x0f)])
        }
        return text
    }
}

/// A secret held in memory from `sodium_malloc` (guard pages, locked where possible),
/// zeroed and freed by `sodium_free` when it goes out of scope. It cannot be copied.
public struct SecureBytes: ~Copyable {
    /// Its length in bytes.
    public let count: Int
    private let base: UnsafeMutableRawPointer

    /// Allocates `count` zeroed bytes (at least one is allocated).
    public init(count: Int) throws(StoreError) {
        guard count >= 0, count <= 1 << 24, let base = sodium_malloc(max(count, 1)) else {
            throw .crypto("sodium_malloc failed")
        }
        sodium_memzero(base, max(count, 1))
        self.base = base
        self.count = count
    }

    /// Copies `bytes` into a new secure buffer.
    public init(copying bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try self.init(count: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: bytes.count)
        }
    }

    deinit { sodium_free(base) }

    /// Reads the bytes.
    public func withBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Writes the bytes.
    public mutating func withMutableBytes<Result, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// Constant-time equality (`sodium_memcmp`).
    public func constantTimeEquals(_ other: borrowing SecureBytes) -> Bool {
        guard count == other.count else { return false }
        return other.withBytes { sodium_memcmp(base, $0.baseAddress, count) == 0 }
    }

    /// True when the bytes start with `prefix` (constant time over the prefix length).
    public func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard count >= prefix.count else { return false }
        return prefix.withUnsafeBytes { sodium_memcmp(base, $0.baseAddress, prefix.count) == 0 }
    }

    /// A copy of the first `length` bytes.
    public func prefix(_ length: Int) throws(StoreError) -> SecureBytes {
        try SecureBytes(copying: UnsafeRawBufferPointer(start: base, count: min(length, count)))
    }
}

extension Sodium {
    /// Fills a secure buffer with `randombytes_buf`.
    public static func fillRandom(_ buffer: inout SecureBytes) {
        buffer.withMutableBytes { bytes in
            if let base = bytes.baseAddress { randombytes_buf(base, bytes.count) }
        }
    }
}

extension Sodium {
    /// Length of `keyedDigest`'s result and of its key.
    public static let digestLength = 32

    /// BLAKE2b-256 of `secret` under `key` (`crypto_generichash`), in wiped memory: lets a
    /// process recognise a secret again later without keeping the secret itself.
    public static func keyedDigest(of secret: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) -> SecureBytes {
        var digest = try SecureBytes(count: digestLength)
        guard key.count == digestLength else { throw .crypto("digest key of the wrong length") }
        let status = digest.withMutableBytes { out -> Int32 in
            secret.withBytes { input -> Int32 in
                key.withBytes { keyBytes -> Int32 in
                    guard let outBase = out.baseAddress, let keyBase = keyBytes.baseAddress else { return -1 }
                    return crypto_generichash(outBase.assumingMemoryBound(to: UInt8.self), out.count,
                                              input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                                              keyBase.assumingMemoryBound(to: UInt8.self), keyBytes.count)
                }
            }
        }
        guard status == 0 else { throw .crypto("crypto_generichash failed") }
        return digest
    }
}
