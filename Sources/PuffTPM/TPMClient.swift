import CTPM
import Glibc
import PuffCore
import PuffPlatform

/// The TPM operations of tpm mode (Sources/CTPM/include/puff_tpm.h), with Swift types: seal a
/// key in a persistent object, unseal it, evict it. The helper loads `puff-tpm.so` on the
/// first use; puff-enroll and the tests link the implementation directly.
public enum TPMClient {
    /// The persistent handle of the sealed host key: in the owner's range, beside the storage
    /// primary at 0x81000001.
    public static let hostKeyHandle: UInt32 = 0x8150_4601
    /// The persistent handle of the sealed fleet key.
    public static let fleetKeyHandle: UInt32 = 0x8150_4602

    /// What `seal` came to.
    public enum Sealed {
        /// Sealed; the object's description.
        case sealed([UInt8])
        /// The handle already holds an object, described here (the caller unseals it to see
        /// whether it holds the same key, after a `tpm enable` killed midway).
        case occupied([UInt8])
    }

    /// Seals `key` at `handle`; with `pcr7`, under a policy on PCR 7 as it reads now.
    public static func seal(_ key: borrowing SecureBytes, handle: UInt32, pcr7: Bool,
                            settings: TPMSettings) throws(StoreError) -> Sealed {
        try load(settings)
        var blob = [UInt8](repeating: 0, count: Int(PUFF_TPM_BLOB_MAX))
        var length = 0
        var error = [CChar](repeating: 0, count: 512)
        let code = key.withBytes { bytes -> Int32 in
            settings.tcti.withCString { tcti in
                puff_tpm_seal(tcti, handle, pcr7 ? 1 : 0, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                              bytes.count, &blob, blob.count, &length, &error, error.count)
            }
        }
        guard length <= blob.count else { throw failure(PUFF_TPM_ARGUMENT, error, settings) }
        if code == PUFF_TPM_OCCUPIED { return .occupied(Array(blob[..<length])) }
        guard code == PUFF_TPM_OK else { throw failure(code, error, settings) }
        return .sealed(Array(blob[..<length]))
    }

    /// The key the object `blob` describes holds, in wiped memory.
    public static func unseal(_ blob: [UInt8], settings: TPMSettings) throws(StoreError) -> SecureBytes {
        try load(settings)
        var key = try SecureBytes(count: Int(PUFF_TPM_KEY_MAX))
        var length = 0
        var error = [CChar](repeating: 0, count: 512)
        let code = key.withMutableBytes { out -> Int32 in
            settings.tcti.withCString { tcti in
                puff_tpm_unseal(tcti, blob, blob.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count,
                                &length, &error, error.count)
            }
        }
        guard code == PUFF_TPM_OK, length <= key.count else { throw failure(code, error, settings) }
        return try key.prefix(length)
    }

    /// Removes the object `blob` describes (nothing when it is gone already).
    public static func evict(_ blob: [UInt8], settings: TPMSettings) throws(StoreError) {
        try load(settings)
        var error = [CChar](repeating: 0, count: 512)
        let code = settings.tcti.withCString { tcti in puff_tpm_evict(tcti, blob, blob.count, &error, error.count) }
        guard code == PUFF_TPM_OK else { throw failure(code, error, settings) }
    }

    private static func failure(_ code: Int32, _ error: [CChar], _ settings: TPMSettings) -> StoreError {
        let text = LogText.escape(TrustedLibrary.text(error, or: "unknown error"), limit: 400)
        let reached = code == PUFF_TPM_NO_TPM ? "cannot reach the TPM at " : "the TPM at "
        return .tpm(reached + LogText.escape(settings.tcti, limit: 200) + ": " + text)
    }

    /// Makes libtss2 available: the helper loads `tpm_library` on the first use
    /// (Sources/CTPM/puff_tpm_loader.c, the same checks as the LDAP client's); a build linked
    /// with libtss2 has nothing to do.
    /// `settings` are checked here, where they are used (TPMSettings.apply takes them as they are).
    private static func load(_ settings: TPMSettings) throws(StoreError) {
        do {
            try settings.validate()
        } catch {
            throw .configuration(error.description)
        }
        guard puff_tpm_is_loaded() == 0 else { return }
        let path = settings.libraryPath
        func failure(_ reason: String) -> StoreError {
            .tpm("the TPM client library \(path) cannot be loaded: " + LogText.escape(reason, limit: 300))
        }
        do {
            try TrustedLibrary.load(path) { puff_tpm_load($0, $1, $2) }
        } catch {
            throw failure(error.reason)
        }
    }
}
