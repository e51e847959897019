import CSodium
import PuffCore

/// Seals and opens gesture templates: XChaCha20-Poly1305 under a key derived from the host
/// key, a fresh random nonce per write, and associated data binding the user name, uid and
/// record version, so a record edited by hand or copied into another user's file does not open.
public enum GestureSealing {
    /// `crypto_kdf` context (8 bytes) and subkey id for the sealing key.
    static let context = Array("puffgest".utf8CString)
    static let subkeyID: UInt64 = 1
    static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    static func associatedData(_ account: Account) -> [UInt8] {
        Array("puff-gesture-v1".utf8) + [0] + Array(account.name.value.utf8) + [0]
            + withUnsafeBytes(of: account.uid.bigEndian, Array.init) + [UInt8(UserRecord.version)]
    }

    static func sealingKey(_ hostKey: borrowing SecureBytes) throws(StoreError) -> SecureBytes {
        var key = try SecureBytes(count: Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES))
        let status = key.withMutableBytes { out in
            hostKey.withBytes { master -> Int32 in
                guard let outBase = out.baseAddress, let masterBase = master.baseAddress,
                      master.count == Int(crypto_kdf_KEYBYTES) else { return -1 }
                return context.withUnsafeBufferPointer { ctx -> Int32 in
                    guard let ctxBase = ctx.baseAddress else { return -1 }
                    return crypto_kdf_derive_from_key(outBase.assumingMemoryBound(to: UInt8.self), out.count, subkeyID,
                                                      ctxBase, masterBase.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard status == 0 else { throw .crypto("crypto_kdf_derive_from_key failed") }
        return key
    }

    /// Encrypts `template` for `account`; returns base64 of nonce ‖ ciphertext.
    public static func seal(_ template: GestureTemplate, for account: Account,
                            hostKey: borrowing SecureBytes) throws(StoreError) -> String {
        let key = try sealingKey(hostKey)
        var plain = template.encode()
        // The plaintext template is wiped once sealed, as `open` wipes what it decrypts.
        defer { Wipe.array(&plain) }
        let data = associatedData(account)
        var output = [UInt8](repeating: 0, count: nonceLength + plain.count + tagLength)
        let status = output.withUnsafeMutableBytes { out -> Int32 in
            guard let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return -1 }
            randombytes_buf(base, nonceLength)
            return key.withBytes { keyBytes -> Int32 in
                guard let keyBase = keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return -1 }
                var written: UInt64 = 0
                return crypto_aead_xchacha20poly1305_ietf_encrypt(
                    base + nonceLength, &written, plain, UInt64(plain.count),
                    data, UInt64(data.count), nil, base, keyBase)
            }
        }
        guard status == 0 else { throw .crypto("crypto_aead_xchacha20poly1305_ietf_encrypt failed") }
        return Base64.encode(output)
    }

    /// Decrypts and decodes the template; any tampering, wrong user, wrong host key or
    /// malformed content throws `.tampered`.
    public static func open(_ sealed: String, for account: Account, hostKey: borrowing SecureBytes,
                            path: String) throws(StoreError) -> GestureTemplate {
        guard let bytes = Base64.decode(sealed), bytes.count > nonceLength + tagLength else {
            throw .tampered(path: path)
        }
        let key = try sealingKey(hostKey)
        let data = associatedData(account)
        var plain = [UInt8](repeating: 0, count: bytes.count - nonceLength - tagLength)
        let status = plain.withUnsafeMutableBytes { out -> Int32 in
            bytes.withUnsafeBytes { input -> Int32 in
                key.withBytes { keyBytes -> Int32 in
                    guard let outBase = out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                          let inBase = input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                          let keyBase = keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return -1 }
                    var written: UInt64 = 0
                    return crypto_aead_xchacha20poly1305_ietf_decrypt(
                        outBase, &written, nil, inBase + nonceLength, UInt64(input.count - nonceLength),
                        data, UInt64(data.count), inBase, keyBase)
                }
            }
        }
        defer { sodium_memzero(&plain, plain.count) }
        guard status == 0 else { throw .tampered(path: path) }
        do {
            return try GestureTemplate.decode(plain)
        } catch {
            throw .tampered(path: path)
        }
    }
}
