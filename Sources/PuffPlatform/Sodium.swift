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
        // Built as bytes, then one String (appending scalars one by one cost more than the hash
        // it spelled: the counter's check is read and written several times a login).
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(2 * bytes.count)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
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

extension Sodium {
    /// BLAKE2b-128 of `bytes` (`crypto_generichash`, no key) as lowercase hex: a check that
    /// tells a whole slot of the counter file from one a cut-short write left (not a secret).
    public static func checkDigest(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        let status = digest.withUnsafeMutableBufferPointer { out -> Int32 in
            bytes.withUnsafeBufferPointer { input -> Int32 in
                guard let outBase = out.baseAddress else { return -1 }
                return crypto_generichash(outBase, out.count, input.baseAddress, UInt64(input.count), nil, 0)
            }
        }
        // A failure gives a check no slot has: the slot then reads as damaged (fails closed).
        return status == 0 ? hex(digest) : "-"
    }
}
