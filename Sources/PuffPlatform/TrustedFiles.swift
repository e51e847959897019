import Glibc
import PuffCore

/// How a file must look before Puff trusts its content.
public struct FileRequirement: Sendable {
    /// Mode bits that must all be clear (0o022: no group/other write; 0o077: private).
    public var forbiddenMode: mode_t
    /// Largest size accepted.
    public var maximumSize: Int

    /// A root-owned file nobody else may write (configuration).
    public static func rootWritable(maximumSize: Int) -> FileRequirement {
        FileRequirement(forbiddenMode: 0o022, maximumSize: maximumSize)
    }

    /// A root-owned file nobody else may read or write (records, host key, counters).
    public static func rootPrivate(maximumSize: Int) -> FileRequirement {
        FileRequirement(forbiddenMode: 0o077, maximumSize: maximumSize)
    }
}

/// A directory reached from `/` one `openat` at a time, every step checked, so a swapped
/// parent directory or a symlink anywhere on the path is refused rather than followed.
public struct TrustedDirectory: ~Copyable {
    /// The open directory.
    public let descriptor: FileDescriptor
    /// Its path, for log lines.
    public let path: String

    /// Walks `path` from `/`. Every component must be a real directory owned by root;
    /// intermediate ones may be group/other-writable only when sticky (like `/tmp`:
    /// there only the owner of an entry, root here, can rename or remove it); the final
    /// one must not be group/other-writable. Throws `Errno.noEntry` wrapped in
    /// `.system("open", …)` when a component does not exist.
    public init(_ path: String) throws(StoreError) {
        guard path.utf8.first == UInt8(ascii: "/") else { throw .unsafe(path: path, reason: "not an absolute path") }
        // Cut at every '/' byte, as the kernel does. A split by Characters would keep "/" and a
        // combining mark after it ("a/\u{301}b") as one character, hand "a/\u{301}b" to openat
        // as one name, and the kernel would follow a symlink at "a" despite O_NOFOLLOW.
        let components = path.utf8.split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
        var current: FileDescriptor
        do {
            current = try FileDescriptor.openRoot()
        } catch {
            throw .system("open", path: "/", error)
        }
        try Self.check(current, path: "/", isFinal: components.isEmpty)
        var walked = ""
        for (index, name) in components.enumerated() {
            walked += "/" + name
            guard !name.sameBytes(as: ".."), !name.sameBytes(as: ".") else { throw .unsafe(path: walked, reason: "'.' or '..' in path") }
            current = try Self.step(from: current, name, path: walked, isFinal: index == components.count - 1)
        }
        self.descriptor = current
        self.path = path
    }

    /// Opens `name` in `parent` (a directory already walked and checked) and checks it as the
    /// last step of a walk would: a real directory (no symlink followed), owned by root, not
    /// group/other-writable. Reaching it through `parent`'s descriptor is as safe as a walk
    /// from `/`: only root can replace an entry of a checked directory.
    public init(_ name: String, in parent: borrowing TrustedDirectory) throws(StoreError) {
        let path = parent.path + "/" + name
        guard !name.isEmpty, !name.sameBytes(as: "."), !name.sameBytes(as: ".."), !name.utf8.contains(UInt8(ascii: "/")) else {
            throw .unsafe(path: path, reason: "not a directory name")
        }
        self.descriptor = try Self.step(from: parent.descriptor, name, path: path, isFinal: true)
        self.path = path
    }

    /// One step of a walk, the same for both ways of reaching a directory: `name` opened in
    /// `directory` without following a symlink, then checked.
    private static func step(from directory: borrowing FileDescriptor, _ name: String, path: String,
                             isFinal: Bool) throws(StoreError) -> FileDescriptor {
        let next: FileDescriptor
        do {
            next = try directory.open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NOCTTY)
        } catch {
            if error.rawValue == ELOOP || error.rawValue == ENOTDIR {
                throw .unsafe(path: path, reason: "not a directory (symlink?)")
            }
            throw .system("open", path: path, error)
        }
        try check(next, path: path, isFinal: isFinal)
        return next
    }

    private static func check(_ directory: borrowing FileDescriptor, path: String, isFinal: Bool) throws(StoreError) {
        let info: stat
        do {
            info = try directory.status()
        } catch {
            throw .system("fstat", path: path, error)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .unsafe(path: path, reason: "not a directory") }
        guard info.st_uid == 0 else { throw .unsafe(path: path, reason: "not owned by root") }
        let sticky = info.st_mode & S_ISVTX != 0
        if info.st_mode & 0o022 != 0 && (isFinal || !sticky) {
            throw .unsafe(path: path, reason: "writable by group or others")
        }
    }

    /// True when `error` means "the thing does not exist" and nothing else.
    public static func isMissing(_ error: StoreError) -> Bool {
        if case .system(_, _, let errno) = error, errno == .noEntry { return true }
        return false
    }

    /// Opens `name` for reading without following a symbolic link and checks it against
    /// `requirement` (regular, root, one link, mode, size); `nil` only when it does not exist
    /// (ENOENT). `O_NONBLOCK` keeps a FIFO planted in its place from hanging the login.
    public func openFile(_ name: String, _ requirement: FileRequirement) throws(StoreError) -> FileDescriptor? {
        let filePath = path + "/" + name
        let file: FileDescriptor
        do {
            file = try descriptor.open(name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error == .noEntry { return nil }
            if error.rawValue == ELOOP { throw .unsafe(path: filePath, reason: "symlink") }
            throw .system("open", path: filePath, error)
        }
        try Self.checkFile(file, path: filePath, requirement)
        return file
    }

    /// Opens and reads `name` (`openFile`), returning `nil` only when it does not exist.
    public func readFile(_ name: String, _ requirement: FileRequirement) throws(StoreError) -> [UInt8]? {
        guard let file = try openFile(name, requirement) else { return nil }
        let bytes: [UInt8]?
        do {
            bytes = try file.readAll(limit: requirement.maximumSize, regularFile: true)
        } catch {
            throw .system("read", path: path + "/" + name, error)
        }
        guard let bytes else { throw .tooLarge(path: path + "/" + name) }
        return bytes
    }

    /// A root-private secret file (`openFile` with `.rootPrivate`) read straight into wiped
    /// memory, at most `maximumSize` bytes; `nil` only when it does not exist. One byte more
    /// than allowed is asked for, so a file that grew after the check is refused.
    public func readSecret(_ name: String, maximumSize: Int) throws(StoreError) -> SecureBytes? {
        guard let file = try openFile(name, .rootPrivate(maximumSize: maximumSize)) else { return nil }
        var buffer = try SecureBytes(count: maximumSize + 1)
        let raw = file.rawValue
        let result: Result<Int, Errno> = buffer.withMutableBytes { bytes in
            do throws(Errno) {
                return .success(try FileDescriptor.read(raw, into: bytes))
            } catch {
                return .failure(error)
            }
        }
        _ = file.rawValue  // keeps the descriptor open until the read is done
        let total: Int
        switch result {
        case .success(let count): total = count
        case .failure(let error): throw .system("read", path: path + "/" + name, error)
        }
        guard total <= maximumSize else { throw .tooLarge(path: path + "/" + name) }
        return try buffer.prefix(total)
    }

    /// Checks an open file against `requirement` (regular, root, one link, mode, size); its
    /// status as checked.
    @discardableResult
    public static func checkFile(_ file: borrowing FileDescriptor, path: String,
                                 _ requirement: FileRequirement) throws(StoreError) -> stat {
        let info: stat
        do {
            info = try file.status()
        } catch {
            throw .system("fstat", path: path, error)
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .unsafe(path: path, reason: "not a regular file") }
        guard info.st_uid == 0 else { throw .unsafe(path: path, reason: "not owned by root") }
        // 0 links is a file an atomic replace has just renamed over: its content is the
        // complete old version. More than one link could be a hard link planted elsewhere.
        guard info.st_nlink <= 1 else { throw .unsafe(path: path, reason: "has more than one link") }
        guard info.st_mode & requirement.forbiddenMode == 0 else {
            throw .unsafe(path: path, reason: "mode \(String(info.st_mode & 0o7777, radix: 8)) too open")
        }
        guard info.st_size >= 0, info.st_size <= requirement.maximumSize else { throw .tooLarge(path: path) }
        return info
    }

    /// How much of a replacement must be on disk when `replaceFile` returns.
    public enum Durability: Sendable {
        /// The new content and the rename (file and directory fsynced): a crash after the
        /// return leaves the new file.
        case durable
        /// The new content is on disk before the rename (file fsynced), the rename may not be:
        /// a crash leaves the old file or the new one, whole. For a write whose loss is safe
        /// (settling a success only lowers a count the old file holds).
        case ordered
        /// Nothing synced: a crash may leave the old file, the new one, or an empty or partly
        /// written one. Only for what nothing depends on (the failure history).
        case unsynced
    }

    /// Replaces `name` atomically: an unnamed file in the same directory (`O_TMPFILE`), written,
    /// its size checked (a caller's RLIMIT_FSIZE cuts writes short), fsynced, then linked
    /// under a random temp name starting with `.` (never read as a record) and renamed over the
    /// old one, and the directory fsynced (`durability` may leave out the syncs). A crash leaves
    /// the old or the new file, never a mix; a process that dies before the link leaves
    /// nothing. Filesystems without `O_TMPFILE` get a named temp file from the start.
    public func replaceFile(_ name: String, with bytes: UnsafeRawBufferPointer, mode: mode_t = 0o600,
                            durability: Durability = .durable) throws(StoreError) {
        let temporary = "." + name + ".tmp-" + Sodium.randomHex(byteCount: 8)
        let tempPath = path + "/" + temporary
        do throws(Errno) {
            var named = false
            let file: FileDescriptor
            do {
                file = try descriptor.openUnnamed(O_WRONLY | O_NOCTTY, mode: 0o600)
            } catch {
                guard error.rawValue == EOPNOTSUPP || error.rawValue == EISDIR || error.rawValue == EINVAL else { throw error }
                file = try descriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode: 0o600)
                named = true
            }
            do throws(Errno) {
                try file.setMode(mode)
                try file.writeAll(bytes)
                let info = try file.status()
                guard info.st_size == bytes.count else { throw Errno(EIO) }
                if durability != .unsynced { try file.sync() }
                if !named {
                    try descriptor.link(file, as: temporary)
                    named = true
                }
            } catch {
                if named { try? descriptor.unlink(temporary) }
                throw error
            }
        } catch {
            throw .system("write", path: tempPath, error)
        }
        do {
            try descriptor.rename(temporary, to: name)
        } catch {
            try? descriptor.unlink(temporary)
            throw .system("rename", path: path + "/" + name, error)
        }
        guard durability == .durable else { return }
        do {
            try descriptor.sync()
        } catch {
            throw .system("fsync", path: path, error)
        }
    }

    /// Removes what killed writers of older versions left: `.NAME.tmp-*` temp files beside
    /// `name` (each up to the size of the file they were replacing). Returns how many.
    @discardableResult
    public func removeLeftovers(of name: String) -> Int {
        let prefix = "." + name + ".tmp-"
        guard let names = try? descriptor.entries() else { return 0 }
        var removed = 0
        for entry in names where entry.hasBytePrefix(prefix) && entry.utf8.count == prefix.utf8.count + 16 {
            if (try? descriptor.unlink(entry)) != nil { removed += 1 }
        }
        return removed
    }

    /// `replaceFile` for an array.
    public func replaceFile(_ name: String, with bytes: [UInt8], mode: mode_t = 0o600,
                            durability: Durability = .durable) throws(StoreError) {
        let failure = bytes.withUnsafeBytes { buffer -> StoreError? in
            do throws(StoreError) {
                try replaceFile(name, with: buffer, mode: mode, durability: durability)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Renames `from` over `to` in this directory and syncs the directory.
    public func renameFile(_ from: String, to: String) throws(StoreError) {
        do {
            try descriptor.rename(from, to: to)
        } catch {
            throw .system("rename", path: path + "/" + to, error)
        }
        do {
            try descriptor.sync()
        } catch {
            throw .system("fsync", path: path, error)
        }
    }

    /// Removes `name`; `false` when it did not exist.
    public func removeFile(_ name: String) throws(StoreError) -> Bool {
        do {
            try descriptor.unlink(name)
        } catch {
            if error == .noEntry { return false }
            throw .system("unlink", path: path + "/" + name, error)
        }
        do {
            try descriptor.sync()
        } catch {
            throw .system("fsync", path: path, error)
        }
        return true
    }

    /// Opens (creating if needed, root 0700) the subdirectory `name` through this directory's
    /// descriptor, checked like the rest.
    public func subdirectory(_ name: String, create: Bool, mode: mode_t = 0o700) throws(StoreError) -> TrustedDirectory {
        var created = false
        if create {
            do {
                try descriptor.makeDirectory(name, mode: mode)
                created = true
            } catch {
                if error.rawValue != EEXIST { throw .system("mkdir", path: path + "/" + name, error) }
            }
        }
        let directory = try TrustedDirectory(name, in: self)
        if created { try directory.setMode(mode) }
        return directory
    }

    /// `fchmod` on the directory: the caller's umask must not decide a store mode.
    public func setMode(_ mode: mode_t) throws(StoreError) {
        do {
            try descriptor.setMode(mode)
        } catch {
            throw .system("chmod", path: path, error)
        }
    }
}
