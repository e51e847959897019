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

    /// The fleet key: exactly `PasscodeHasher.keyLength` bytes. Missing is an error in fleet
    /// mode: without it no record in the directory can be checked.
    static func fleetKey(_ path: String, session: StoreSession) throws(StoreError) -> SecureBytes {
        guard let key = try read(path, maximumSize: PasscodeHasher.keyLength, session: session) else {
            throw .configuration("the fleet key \(path) is missing (backend = ldap)")
        }
        guard key.count == PasscodeHasher.keyLength else {
            throw .unsafe(path: path, reason: "not a \(PasscodeHasher.keyLength)-byte key")
        }
        return key
    }
}
