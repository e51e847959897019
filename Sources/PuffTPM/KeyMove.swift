import Glibc
import PuffCore
import PuffPlatform

/// `puff-enroll tpm enable` and `tpm disable`: the same key moved into the TPM and out again,
/// so every record keeps working and nobody enrolls again. Each step leaves a store that works:
/// the sealed file is written (and the TPM's copy proven) before the clear file goes, and the
/// clear file is written before the sealed object goes; where both exist the clear file wins
/// (StoreKey), and running the command again finishes the move. Serialised with enrollments
/// (which may create the host key) by `flock` on the key's directory.
public enum KeyMove {
    /// What `enable` or `disable` did with one key.
    public enum Outcome: Equatable, Sendable {
        /// Moved (or, for a store without a key yet, made in the TPM).
        case moved
        /// Already where it was asked to be (the TPM's copy checked).
        case already
        /// There is no such key (no fleet key outside fleet mode, no host key yet on `disable`).
        case absent
    }

    /// Moves the key `name` in `directory` into the TPM at `handle` (PCR 7 policy with `pcr7`)
    /// and removes the clear file. `backup` receives the key before the clear file goes (the
    /// administrator's offline copy). With `create`, a store without a key gets a new one made
    /// straight into the TPM (it never rests in a file).
    public static func enable(_ name: String, in directory: borrowing TrustedDirectory, handle: UInt32, pcr7: Bool,
                              create: Bool, tpm: TPMSettings,
                              backup: (borrowing SecureBytes) throws(StoreError) -> Void) throws(StoreError) -> Outcome {
        try locked(directory) { () throws(StoreError) -> Outcome in
            let path = directory.path + "/" + name
            let existing = try StoreKey.readSealed(name, in: directory)
            var key: SecureBytes
            if let clear = try directory.readSecret(name, maximumSize: PasscodeHasher.keyLength) {
                guard clear.count == PasscodeHasher.keyLength else {
                    throw .unsafe(path: path, reason: "not a \(PasscodeHasher.keyLength)-byte key")
                }
                key = clear
            } else if let existing {
                _ = try unsealChecked(existing, tpm: tpm, path: path)
                return .already
            } else if create {
                key = try SecureBytes(count: PasscodeHasher.keyLength)
                Sodium.fillRandom(&key)
            } else {
                return .absent
            }
            let check = try StoreKey.check(of: key)
            if let existing {
                // A move killed between the sealed file and the clear file's removal.
                guard existing.check == check else {
                    throw .tpm("\(path) and \(StoreKey.sealedName(path)) hold different keys; "
                               + "remove the one that is wrong (the records open with the other)")
                }
                _ = try unsealChecked(existing, tpm: tpm, path: path)
            } else {
                let description: [UInt8]
                switch try TPMClient.seal(key, handle: handle, pcr7: pcr7, settings: tpm) {
                case .sealed(let sealed):
                    description = sealed
                case .occupied(let found):
                    // Ours from a move killed before its sealed file was written, or another one.
                    let held = try? TPMClient.unseal(found, settings: tpm)
                    guard let held, try StoreKey.check(of: held) == check else {
                        throw .tpm("TPM handle \(hex(handle)) already holds another object (an earlier store's sealed "
                                   + "key?); if nothing uses it, remove it with `tpm2_evictcontrol -C o -c \(hex(handle))`")
                    }
                    description = found
                }
                let sealed = StoreKey.Sealed(check: check, description: description)
                try directory.replaceFile(StoreKey.sealedName(name), with: sealed.encoded)
                // Proven through the TPM before the clear copy goes.
                _ = try unsealChecked(sealed, tpm: tpm, path: path)
            }
            try backup(key)
            try erase(name, in: directory)
            return .moved
        }
    }

    /// Moves the key `name` out of the TPM into its root 0600 file, evicts the TPM object and
    /// removes the sealed file. `backup` (the administrator's copy, when one is named) stands
    /// in for a TPM that can no longer unseal (cleared or replaced); it must match the check value.
    public static func disable(_ name: String, in directory: borrowing TrustedDirectory, tpm: TPMSettings,
                               backup: () throws(StoreError) -> SecureBytes?) throws(StoreError) -> Outcome {
        try locked(directory) { () throws(StoreError) -> Outcome in
            let path = directory.path + "/" + name
            guard let sealed = try StoreKey.readSealed(name, in: directory) else {
                return try directory.openFile(name, .rootPrivate(maximumSize: PasscodeHasher.keyLength)) != nil ? .already : .absent
            }
            var fromTPM = true
            if let clear = try directory.readSecret(name, maximumSize: PasscodeHasher.keyLength) {
                // A move killed after the clear file was written.
                guard clear.count == PasscodeHasher.keyLength, try StoreKey.check(of: clear) == sealed.check else {
                    throw .tpm("\(path) and \(StoreKey.sealedName(path)) hold different keys; "
                               + "remove the one that is wrong (the records open with the other)")
                }
            } else {
                let key: SecureBytes
                switch try backup() {
                case .some(let restored):
                    guard restored.count == PasscodeHasher.keyLength, try StoreKey.check(of: restored) == sealed.check else {
                        throw .tpm("the backup is not the key sealed for \(path)")
                    }
                    key = restored
                    fromTPM = false
                case .none:
                    key = try unsealChecked(sealed, tpm: tpm, path: path)
                }
                try key.withBytes { bytes throws(StoreError) in try directory.replaceFile(name, with: bytes) }
            }
            do throws(StoreError) {
                try TPMClient.evict(sealed.description, settings: tpm)
            } catch {
                // A cleared or replaced TPM holds nothing to remove; a reachable one must let go.
                if fromTPM { throw error }
            }
            _ = try directory.removeFile(StoreKey.sealedName(name))
            return .moved
        }
    }

    /// The key `sealed` describes, unsealed and checked.
    private static func unsealChecked(_ sealed: StoreKey.Sealed, tpm: TPMSettings,
                                      path: String) throws(StoreError) -> SecureBytes {
        let key = try TPMClient.unseal(sealed.description, settings: tpm)
        guard key.count == PasscodeHasher.keyLength, try StoreKey.check(of: key) == sealed.check else {
            throw .tpm("the TPM gave another key than the one sealed for \(path)")
        }
        return key
    }

    /// Removes the clear key file, its content overwritten with zeros and synced first (so the
    /// key's blocks do not linger in a filesystem that rewrites in place; copy-on-write
    /// filesystems, SSDs and earlier snapshots may still hold it: docs/admin/protection-at-rest.md),
    /// and any temp file a killed write of it left.
    private static func erase(_ name: String, in directory: borrowing TrustedDirectory) throws(StoreError) {
        let path = directory.path + "/" + name
        do throws(Errno) {
            let file = try directory.descriptor.open(name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
            let info = try file.status()
            guard info.st_mode & S_IFMT == S_IFREG, info.st_size <= 4096 else {
                throw Errno(EINVAL)
            }
            var zeros = try? SecureBytes(count: Int(info.st_size))
            guard let buffer = zeros.take() else { throw Errno(ENOMEM) }
            try buffer.withBytes { bytes throws(Errno) in try file.writeAll(bytes, at: 0) }
            try file.sync()
        } catch {
            if error != .noEntry { throw .system("overwrite", path: path, error) }
        }
        directory.removeLeftovers(of: name)
        _ = try directory.removeFile(name)
    }

    private static func locked<Result>(_ directory: borrowing TrustedDirectory,
                                       _ body: () throws(StoreError) -> Result) throws(StoreError) -> Result {
        let acquired: Bool
        do {
            acquired = try directory.descriptor.lock(exclusive: true, waitingAtMost: 30)
        } catch {
            throw .system("flock", path: directory.path, error)
        }
        guard acquired else { throw .lockTimeout(path: directory.path) }
        defer { directory.descriptor.unlock() }
        return try body()
    }

    static func hex(_ handle: UInt32) -> String {
        "0x" + String(handle, radix: 16)
    }
}
