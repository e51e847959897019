import Glibc
import PuffCore
import PuffPlatform

/// Root-only secrets in small files (the fleet key, the directory bind password), read
/// straight into wiped memory through the trusted-files checks: every directory on the path
/// owned by root and not writable by others, the file regular, root 0600, one link, no symlink.
enum SecretFile {
    /// The content of `path` (at most `maximumSize` bytes), or `nil` when it does not exist;
    /// its directory is reached through `session` (walked once per login).
    static func read(_ path: String, maximumSize: Int, session: StoreSession) throws(StoreError) -> SecureBytes? {
        guard let (parent, name) = try session.parent(of: path) else { return nil }
        return try parent.trusted.readSecret(name, maximumSize: maximumSize)
    }

    /// The fleet key: exactly `PasscodeHasher.keyLength` bytes, from its file or unsealed by the
    /// TPM in tpm mode (StoreKey.swift). Missing is an error in fleet mode: without it no
    /// record in the directory can be checked.
    static func fleetKey(_ path: String, session: StoreSession, tpm: TPMSettings) throws(StoreError) -> SecureBytes {
        guard let (parent, name) = try session.parent(of: path),
              let key = try StoreKey.read(name, in: parent.trusted, tpm: tpm) else {
            throw .configuration("the fleet key \(path) is missing (backend = ldap)")
        }
        return key
    }
}
