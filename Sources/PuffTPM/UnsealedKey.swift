import CTPM
import Glibc
import PuffCore
import PuffPlatform

/// The key the TPM unsealed, kept until the next boot (issue 36, item 3; Sources/CTPM/
/// puff_key_cache.c): in root's persistent kernel keyring, which only a process with a root
/// uid can reach, in kernel memory that is never swapped and is gone at the next boot.
///
/// Every refusal must cost what a real attempt costs, and in tpm mode both read the key, so
/// every refusal made the TPM unseal it (two TPM commands), also for a name that is no account:
/// an unauthenticated sshd client could keep the TPM busy (0.2-2.7 s an unseal on real chips)
/// and every tpm-mode login queued behind it. With the key kept, the first read after a boot
/// unseals and every later one, real or discreet, takes the kept copy: the same work for all,
/// and at most one unseal a boot. The kept key is checked against `host.key.tpm`'s check value
/// before use, like an unsealed one. `puff-enroll tpm forget` drops it (as a reboot does).
public enum UnsealedKey {
    /// The name the key of `sealed`, reached through `tcti`, is kept under: `puff:` and a
    /// digest of both, so another store, another TPM or another way to it is another name.
    static func name(of sealed: StoreKey.Sealed, tcti: String) -> String {
        "puff:" + Sodium.checkDigest(Array("puff-unsealed-key-v1".utf8) + [0] + Array(tcti.utf8) + [0] + sealed.encoded)
    }

    /// The kept key of `sealed`, or `nil` (none kept, or the keyring cannot be used).
    static func kept(_ sealed: StoreKey.Sealed, tcti: String) -> SecureBytes? {
        guard var key = try? SecureBytes(count: PasscodeHasher.keyLength + 1) else { return nil }
        var length = 0
        let found = key.withMutableBytes { out -> Int32 in
            name(of: sealed, tcti: tcti).withCString { cName in
                puff_key_cache_get(cName, out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count, &length)
            }
        }
        guard found == 0, length == PasscodeHasher.keyLength else { return nil }
        return try? key.prefix(length)
    }

    /// Keeps `key` (unsealed from `sealed` and checked) for the rest of the boot; `false` when
    /// the keyring cannot be used (the next read unseals again).
    @discardableResult
    static func keep(_ key: borrowing SecureBytes, of sealed: StoreKey.Sealed, tcti: String) -> Bool {
        key.withBytes { bytes -> Int32 in
            name(of: sealed, tcti: tcti).withCString { cName in
                puff_key_cache_put(cName, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
            }
        } == 0
    }

    /// Drops every kept key: how many there were.
    public static func forget() throws(StoreError) -> Int {
        let count = puff_key_cache_forget()
        guard count >= 0 else { throw .system("keyctl", path: "root's persistent keyring", Errno(errno)) }
        return Int(count)
    }
}
