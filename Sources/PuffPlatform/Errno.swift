import Glibc

/// A C `errno` value.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    /// The raw value.
    public let rawValue: Int32

    /// Wraps a raw value.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    static var current: Errno { Errno(errno) }

    /// What went wrong in words, then the symbolic name (which a search or a bug report
    /// needs), for the values Puff meets; else the number. A `switch`, not a dictionary
    /// literal: a duplicate key there would trap in the host process.
    public var description: String {
        switch rawValue {
        case EPERM: "operation not permitted (EPERM)"
        case ENOENT: "no such file or directory (ENOENT)"
        case EINTR: "interrupted (EINTR)"
        case EIO: "input/output error (EIO)"
        case EBADF: "bad file descriptor (EBADF)"
        case EAGAIN: "resource temporarily unavailable (EAGAIN)"
        case ENOMEM: "out of memory (ENOMEM)"
        case EACCES: "permission denied (EACCES)"
        case EEXIST: "already exists (EEXIST)"
        case ENOTDIR: "not a directory (ENOTDIR)"
        case EISDIR: "is a directory (EISDIR)"
        case EINVAL: "invalid argument (EINVAL)"
        case ENOSPC: "no space left on the device (ENOSPC)"
        case EROFS: "read-only file system (EROFS)"
        case ELOOP: "a symbolic link where none is allowed (ELOOP)"
        case ENAMETOOLONG: "name too long (ENAMETOOLONG)"
        case EDQUOT: "disk quota exceeded (EDQUOT)"
        case ENXIO: "no such device or address (ENXIO)"
        case ETXTBSY: "file busy (ETXTBSY)"
        case EMFILE: "too many open files in this process (EMFILE)"
        case ENFILE: "too many open files in the system (ENFILE)"
        default: "errno \(rawValue)"
        }
    }

    /// No such file or directory.
    public static let noEntry = Errno(ENOENT)
    /// Out of memory.
    public static let outOfMemory = Errno(ENOMEM)
}
