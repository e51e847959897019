import Glibc
import PuffCore
import PuffPlatform

/// Opens a sealed key through the TPM: puff-check and puff-enroll set it as `StoreKey.opener`.
public final class TPMUnsealer: SealedKeyOpener {
    /// The unsealer.
    public init() {}

    /// `name`'s sealed key, unsealed by the TPM and checked, or `nil` when there is no sealed
    /// file. Unsealed at most once a boot: a kept copy (UnsealedKey) that passes the check is used.
    public func open(_ name: String, in directory: borrowing TrustedDirectory,
                     tpm: TPMSettings) throws(StoreError) -> SecureBytes? {
        guard let sealed = try StoreKey.readSealed(name, in: directory) else { return nil }
        if let kept = UnsealedKey.kept(sealed, tcti: tpm.tcti), (try? StoreKey.check(of: kept)) == sealed.check {
            return kept
        }
        let key = try TPMClient.unseal(sealed.description, settings: tpm)
        guard key.count == PasscodeHasher.keyLength, try StoreKey.check(of: key) == sealed.check else {
            throw .tpm("the TPM gave another key than the one sealed for \(directory.path + "/" + name)")
        }
        UnsealedKey.keep(key, of: sealed, tcti: tpm.tcti)
        return key
    }
}
