import Glibc
import PuffCore

/// Where a store's key (the host key, or the fleet key) is kept, and the one way the engine
/// reads it: a root-private file (`host.key`, file mode), or sealed in the TPM (tpm mode):
/// `host.key.tpm` then holds the description of the TPM object (no secret) and a check value,
/// and the key itself exists only inside the TPM and, per login, in the memory of the process
/// that unsealed it (docs/admin/protection-at-rest.md).
///
///     host.key.tpm    root 0600: "PUFFTPM1" ‖ BLAKE2b-256(key: K, "puff-key-check-v1") ‖ description
///
/// When both files exist (a `tpm enable` or `tpm disable` killed midway) the file wins: it is
/// the copy that works in both cases, and running the command again finishes it.
public enum StoreKey {
    /// Where a key is.
    public enum Location: Equatable, Sendable {
        /// A root-private file.
        case file
        /// Sealed in the TPM.
        case tpm
        /// Neither (nothing enrolled yet).
        case none
    }

    /// The sealed file's name beside the clear one's.
    public static func sealedName(_ name: String) -> String { name + ".tpm" }
    static let magic: [UInt8] = Array("PUFFTPM1".utf8)
    static let checkLength = Sodium.digestLength
    /// The largest sealed file.
    public static let maximumSealedSize = 8 + 32 + 4096

    /// Where `name`'s key in `directory` is (one openat when it is in a file... or none).
    public static func location(_ name: String, in directory: borrowing TrustedDirectory) throws(StoreError) -> Location {
        if try directory.openFile(name, .rootPrivate(maximumSize: PasscodeHasher.keyLength)) != nil { return .file }
        if try directory.openFile(sealedName(name), .rootPrivate(maximumSize: maximumSealedSize)) != nil { return .tpm }
        return .none
    }

    /// How this process opens a sealed key: puff-check and puff-enroll set PuffTPM's
    /// `TPMUnsealer` as they start. The module sets none, so its link proves this `nil` and
    /// drops the call: it has no TPM code, and a sealed key hands the attempt to the helper.
    nonisolated(unsafe) package static var opener: (any SealedKeyOpener)?

    /// The key, from the file or, when it is sealed, from `opener`; `nil` when there is neither.
    /// A key of the wrong length, a sealed file that does not parse, a TPM that cannot be reached
    /// or refuses, or a key that does not match its check value all throw.
    public static func read(_ name: String, in directory: borrowing TrustedDirectory,
                            tpm: TPMSettings) throws(StoreError) -> SecureBytes? {
        let path = directory.path + "/" + name
        if let key = try directory.readSecret(name, maximumSize: PasscodeHasher.keyLength) {
            guard key.count == PasscodeHasher.keyLength else {
                throw .unsafe(path: path, reason: "not a \(PasscodeHasher.keyLength)-byte key")
            }
            return key
        }
        // Looked for only when there is no clear key, so file mode pays nothing for tpm mode.
        if let opener { return try opener.open(name, in: directory, tpm: tpm) }
        // The module: a sealed key is the helper's to read, and this error hands the attempt
        // to it (Authentication.swift).
        guard try directory.openFile(sealedName(name), .rootPrivate(maximumSize: maximumSealedSize)) == nil else {
            throw .tpm("the key is sealed in the TPM; only puff-check unseals it")
        }
        return nil
    }

    /// A sealed file's parts.
    public struct Sealed: Equatable {
        /// The key's check value.
        public var check: [UInt8]
        /// The TPM object's description (Sources/CTPM).
        public var description: [UInt8]

        /// A sealed key's parts (KeyMove writes them).
        package init(check: [UInt8], description: [UInt8]) {
            self.check = check
            self.description = description
        }

        /// The file's bytes.
        public var encoded: [UInt8] { StoreKey.magic + check + description }
    }

    /// The sealed file of `name`, or `nil` when there is none.
    public static func readSealed(_ name: String, in directory: borrowing TrustedDirectory) throws(StoreError) -> Sealed? {
        let path = directory.path + "/" + sealedName(name)
        guard let bytes = try directory.readFile(sealedName(name), .rootPrivate(maximumSize: maximumSealedSize)) else {
            return nil
        }
        let header = magic.count + checkLength
        guard bytes.count > header, Array(bytes[..<magic.count]) == magic else {
            throw .unsafe(path: path, reason: "not a sealed Puff key")
        }
        return Sealed(check: Array(bytes[magic.count..<header]), description: Array(bytes[header...]))
    }

    /// The check value stored beside a sealed key: BLAKE2b-256 under the key of a fixed text
    /// (it tells the key apart from another one; it cannot give the key back).
    public static func check(of key: borrowing SecureBytes) throws(StoreError) -> [UInt8] {
        let label = Array("puff-key-check-v1".utf8)
        var text = try SecureBytes(count: label.count)
        text.withMutableBytes { out in
            for (index, byte) in label.enumerated() where index < out.count { out[index] = byte }
        }
        let digest = try Sodium.keyedDigest(of: text, key: key)
        return digest.withBytes { Array($0) }
    }
}

/// How puff-check and puff-enroll open a key sealed in the TPM (PuffTPM's `TPMUnsealer`,
/// `StoreKey.opener`). The module has none: libtss2 reads TSS2_LOGFILE from the environment,
/// which in su is the user's, so tpm mode is the helper's.
public protocol SealedKeyOpener: AnyObject {
    /// `name`'s sealed key in `directory`, unsealed and checked; `nil` when there is no sealed copy.
    func open(_ name: String, in directory: borrowing TrustedDirectory, tpm: TPMSettings) throws(StoreError) -> SecureBytes?
}
