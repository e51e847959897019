import Glibc
import PuffCore

/// What one login (or one helper run, or one command) holds open of the store, the state
/// directory and the configuration's directory, so that each is walked and checked once.
///
/// A directory is walked from `/` (`TrustedDirectory`), or opened through the descriptor of
/// its parent when the session holds that, on first use; it then stays open until the session
/// ends, and every file in it is opened relative to its descriptor (`openat` with
/// `O_NOFOLLOW`). The checks are those of a walk: a directory reached through a held
/// descriptor was root-owned and closed to others when it was opened, and only root can
/// replace its entries. A directory that does not exist is not remembered (an enrollment may
/// create it meanwhile). The boot id is read once too.
///
/// A session belongs to one operation: `pam_sm_authenticate` makes one per call and the helper
/// one per run, so no descriptor or check outlives the operation it served.
public final class StoreSession {
    /// One directory the session holds open.
    public final class Directory {
        /// The directory, walked and checked.
        public let trusted: TrustedDirectory
        fileprivate let next: Directory?

        fileprivate init(_ trusted: consuming TrustedDirectory, next: Directory?) {
            self.trusted = trusted
            self.next = next
        }

        /// Its path, as it was asked for.
        public var path: String { trusted.path }
    }

    private var opened: Directory?
    private var bootIDWasRead = false
    private var currentBootID: String?

    /// An empty session.
    public init() {}

    /// The directory at `path` when the session holds it open.
    public func held(_ path: String) -> Directory? {
        var node = opened
        while let current = node {
            if current.path.sameBytes(as: path) { return current }
            node = current.next
        }
        return nil
    }

    /// Holds `directory` open for the rest of the session.
    @discardableResult
    public func hold(_ directory: consuming TrustedDirectory) -> Directory {
        let node = Directory(directory, next: opened)
        opened = node
        return node
    }

    /// The directory at `path`: held from earlier, opened in its parent when the session holds
    /// that, or walked from `/`. `nil` only when it does not exist (ENOENT on the way).
    public func directory(_ path: String) throws(StoreError) -> Directory? {
        if let open = held(path) { return open }
        do {
            if let (parent, name) = Self.split(path), let open = held(parent) {
                return hold(try TrustedDirectory(name, in: open.trusted))
            }
            return hold(try TrustedDirectory(path))
        } catch {
            if TrustedDirectory.isMissing(error) { return nil }
            throw error
        }
    }

    /// The directory at `path`, made with `mode` (set exactly, whatever the umask) when it is
    /// missing, then held: the roots of the store and of the state directory.
    public func directory(_ path: String, creatingWith mode: mode_t) throws(StoreError) -> Directory {
        if let open = held(path) { return open }
        let made = path.withCString { mkdir($0, mode) }
        if made != 0 && errno != EEXIST { throw .system("mkdir", path: path, Errno.current) }
        let open = hold(try TrustedDirectory(path))
        if made == 0 { try open.trusted.setMode(mode) }
        return open
    }

    /// `name` in the held directory `parent`, made with `mode` when it is missing, then held.
    public func subdirectory(_ name: String, of parent: Directory, creatingWith mode: mode_t) throws(StoreError) -> Directory {
        if let open = held(parent.path + "/" + name) { return open }
        return hold(try parent.trusted.subdirectory(name, create: true, mode: mode))
    }

    /// The directory holding the file at absolute `path`, and the file's name; `nil` when that
    /// directory does not exist. A path that names no file (relative, or ending in "/") is a
    /// configuration error.
    public func parent(of path: String) throws(StoreError) -> (directory: Directory, name: String)? {
        guard path.utf8.first == UInt8(ascii: "/"), path.utf8.last != UInt8(ascii: "/"),
              let (parent, name) = Self.split(path) else {
            throw .configuration("\(path) is not an absolute file path")
        }
        guard let directory = try directory(parent.isEmpty ? "/" : parent) else { return nil }
        return (directory, name)
    }

    /// The boot id (`BootID.current()`), read once per session.
    public func bootID() -> String? {
        if !bootIDWasRead {
            currentBootID = BootID.current()
            bootIDWasRead = true
        }
        return currentBootID
    }

    /// `path` cut at its last "/" byte (bytes, as the kernel cuts), when what follows is a
    /// name a directory entry can have.
    static func split(_ path: String) -> (parent: String, name: String)? {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let name = String(decoding: bytes[bytes.index(after: slash)...], as: UTF8.self)
        guard !name.isEmpty, !name.sameBytes(as: "."), !name.sameBytes(as: "..") else { return nil }
        return (String(decoding: bytes[..<slash], as: UTF8.self), name)
    }
}
