import Glibc

/// A C `errno` value.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    /// The raw value.
    public let rawValue: Int32

    /// Wraps a raw value.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    static var current: Errno { Errno(errno) }

    /// The symbolic name for the values Puff meets, else the number. A `switch`, not a
    /// dictionary literal: a duplicate key there would trap in the host process.
    public var description: String {
        switch rawValue {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EEXIST: "EEXIST"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EINVAL: "EINVAL"
        case ENOSPC: "ENOSPC"
        case EROFS: "EROFS"
        case ELOOP: "ELOOP"
        case ENAMETOOLONG: "ENAMETOOLONG"
        case EDQUOT: "EDQUOT"
        case ENXIO: "ENXIO"
        case ETXTBSY: "ETXTBSY"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        default: "errno \(rawValue)"
        }
    }

    /// No such file or directory.
    public static let noEntry = Errno(ENOENT)
    /// Out of memory.
    public static let outOfMemory = Errno(ENOMEM)
}
