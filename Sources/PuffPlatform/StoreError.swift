import PuffCore

/// Why the store could not be used. Every case fails closed; the description is for the
/// log and names paths and reasons, never file contents.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// A system call failed.
    case system(_ operation: String, path: String, Errno)
    /// A file or directory was refused because it could be controlled by someone other
    /// than root (symlink, owner, mode, link count, type).
    case unsafe(path: String, reason: String)
    /// A file larger than its format allows.
    case tooLarge(path: String)
    /// A file whose content does not parse.
    case format(path: String, RecordFormatError)
    /// Another attempt held the user's lock for longer than `lock_wait`.
    case lockTimeout(path: String)
    /// The record names another user or uid than the account it was found for.
    case wrongOwner(path: String)
    /// libsodium failed (allocation, initialisation, hashing).
    case crypto(String)
    /// A configuration value that cannot be used.
    case configuration(String)
    /// A sealed gesture template that does not open: edited, copied from another user, or
    /// sealed under another host key.
    case tampered(path: String)
    /// Fleet mode: the directory could not be reached, refused an operation, or holds
    /// something unusable. Fails closed like every store error (PAM_AUTHINFO_UNAVAIL).
    case directory(String)
    /// Fleet mode: the directory could not be reached at all (connection refused or lost, a
    /// timeout, a TLS handshake or certificate that failed). Fails closed like `directory`;
    /// only this case may fall back to the offline cache (`ldap_cache_ttl`).
    case directoryUnreachable(String)
    /// Tpm mode: the TPM that keeps the store's key could not be reached, or refused to give
    /// it (cleared, replaced, another TPM, PCR 7 changed). Fails closed (PAM_AUTHINFO_UNAVAIL).
    case tpm(String)

    /// One log line.
    public var description: String {
        switch self {
        case .system(let operation, let path, let errno): "\(operation) \(path): \(errno)"
        case .unsafe(let path, let reason): "refusing \(path): \(reason)"
        case .tooLarge(let path): "refusing \(path): larger than allowed"
        case .format(let path, let problem): "refusing \(path): malformed (\(problem))"
        case .lockTimeout(let path): "timed out waiting for the lock on \(path)"
        case .wrongOwner(let path): "refusing \(path): it belongs to another user or uid"
        case .crypto(let what): "libsodium: \(what)"
        case .configuration(let what): "configuration: \(what)"
        case .directory(let what): "directory: \(what)"
        case .directoryUnreachable(let what): "directory unreachable: \(what)"
        case .tpm(let what): "TPM: \(what)"
        case .tampered(let path): "refusing \(path): the sealed gesture template does not open (edited, copied from another user, or another host key)"
        }
    }
}
