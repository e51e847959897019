import Glibc
import PuffCore

/// Root-only secrets in small files (the fleet key, the directory bind password), read
/// straight into wiped memory through the trusted-files checks: every directory on the path
/// owned by root and not writable by others, the file regular, root 0600, one link, no symlink.
enum SecretFile {
    /// The content of `path` (at most `maximumSize` bytes), or `nil` when it does not exist;
    /// its directory is reached through `session` (walked once per login).
    static func read(_ path: String, maximumSize: Int, session: StoreSession) throws(StoreError) -> SecureBytes? {
        guard let (parent, name) = try session.parent(of: path) else { return nil }
        let file: FileDescriptor
        do throws(Errno) {
            file = try parent.trusted.descriptor.open(name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error == .noEntry { return nil }
            if error.rawValue == ELOOP { throw .unsafe(path: path, reason: "symlink") }
            throw .system("open", path: path, error)
        }
        try TrustedDirectory.checkFile(file, path: path, .rootPrivate(maximumSize: maximumSize))
        // One byte more than allowed detects a file that grew after the check.
        var buffer = try SecureBytes(count: maximumSize + 1)
        let raw = file.rawValue
        let result: Result<Int, Errno> = buffer.withMutableBytes { bytes in
            do throws(Errno) {
                return .success(try FileDescriptor.read(raw, into: bytes))
            } catch {
                return .failure(error)
            }
        }
        let total: Int
        switch result {
        case .success(let count): total = count
        case .failure(let error): throw .system("read", path: path, error)
        }
        _ = file.rawValue  // keeps the descriptor open until the reads are done
        guard total <= maximumSize else { throw .tooLarge(path: path) }
        return try buffer.prefix(total)
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
