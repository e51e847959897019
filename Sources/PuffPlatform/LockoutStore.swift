import Glibc
import PuffCore

/// The persistent failure counters under `state_dir` (default `/var/lib/puff`): one file
/// per user, root 0600, kept across reboots (pam_faillock's tmpfs tallies are cleared by one).
///
/// Each file has a fixed size and is rewritten in place with one `pwrite` under
/// `flock(LOCK_EX)`, held for the whole read-modify-write; the file is never unlinked or
/// renamed, so a lock can never be taken on a stale inode. A single small `pwrite` within
/// one page either happens whole or not at all, even under SIGKILL.
public struct LockoutStore: Sendable {
    /// The state directory.
    public let directory: String
    /// How long to wait for another attempt on the same user, in seconds.
    public let lockWaitSeconds: Int64

    /// The size every counter file is written at.
    static let fileSize = 512

    /// A store rooted at `directory`.
    public init(directory: String, lockWaitSeconds: Int64) {
        self.directory = directory
        self.lockWaitSeconds = lockWaitSeconds
    }

    /// The user's counter under a shared lock (for status displays and the pre-prompt
    /// check); an absent file is an empty tally.
    public func read(_ name: UserName) throws(StoreError) -> Tally {
        let state: TrustedDirectory
        do {
            state = try TrustedDirectory(directory)
        } catch {
            if TrustedDirectory.isMissing(error) { return Tally() }
            throw error
        }
        let path = state.path + "/" + name.value
        let file: FileDescriptor
        do {
            file = try state.descriptor.open(name.value, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error == .noEntry { return Tally() }
            throw Self.openError(error, path: path)
        }
        try TrustedDirectory.checkFile(file, path: path, .rootPrivate(maximumSize: Self.fileSize))
        try lock(file, exclusive: false, path: path)
        return try Self.decode(file, path: path)
    }

    /// Runs `body` with the user's counter locked exclusively. `body` writes with `save`
    /// (nothing is written back implicitly, so a write happens exactly where the caller
    /// decides, such as before a verification). `body` also runs the slow
    /// verification, so attempts on one user are strictly one at a time: a lock holder
    /// that finds a failure already counted knows the attempt that counted it is over.
    public func update<Result>(_ name: UserName,
                               _ body: (inout Tally, _ save: (Tally) throws(StoreError) -> Void) throws(StoreError) -> Result)
        throws(StoreError) -> Result {
        let state = try openState()
        let path = state.path + "/" + name.value
        let file: FileDescriptor
        do {
            file = try state.descriptor.open(name.value, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode: 0o600)
        } catch {
            throw Self.openError(error, path: path)
        }
        try TrustedDirectory.checkFile(file, path: path, .rootPrivate(maximumSize: Self.fileSize))
        try lock(file, exclusive: true, path: path)
        // Read only after the lock is held: the file may have been created or written by
        // another process between our open and our flock.
        var tally = try Self.decode(file, path: path)
        let save = { (next: Tally) throws(StoreError) -> Void in
            try Self.write(next, to: file, path: path)
        }
        return try body(&tally, save)
    }

    /// The admin reset: clears the failures, the lock and an administrator's passcode
    /// requirement; the time and boot of the latest passcode success are kept.
    public func reset(_ name: UserName) throws(StoreError) {
        try update(name) { tally, save throws(StoreError) in
            tally = tally.clearingFailures()
            tally.adminLock = false
            try save(tally)
        }
    }

    /// Deletes `name`'s counter file; only inside `update(name)`, whose lock it still holds
    /// (removing an enrollment). An attempt that waited for that lock on the old file re-reads
    /// the record under it, finds none and writes nothing.
    public func removeWhileLocked(_ name: UserName) throws(StoreError) {
        _ = try openState().removeFile(name.value)
    }

    private func openState() throws(StoreError) -> TrustedDirectory {
        let made = directory.withCString { mkdir($0, 0o700) }
        if made != 0 && errno != EEXIST { throw .system("mkdir", path: directory, Errno.current) }
        return try TrustedDirectory(directory)
    }

    private func lock(_ file: borrowing FileDescriptor, exclusive: Bool, path: String) throws(StoreError) {
        let locked: Bool
        do {
            locked = try file.lock(exclusive: exclusive, waitingAtMost: lockWaitSeconds)
        } catch {
            throw .system("flock", path: path, error)
        }
        guard locked else { throw .lockTimeout(path: path) }
    }

    private static func openError(_ error: Errno, path: String) -> StoreError {
        error.rawValue == ELOOP ? .unsafe(path: path, reason: "symlink") : .system("open", path: path, error)
    }

    private static func decode(_ file: borrowing FileDescriptor, path: String) throws(StoreError) -> Tally {
        var bytes: [UInt8]
        do {
            bytes = try file.readPrefix(limit: fileSize)
        } catch {
            throw .system("read", path: path, error)
        }
        while bytes.last == 0 { bytes.removeLast() }
        if bytes.isEmpty { return Tally() }
        do {
            return try Tally.decode(bytes)
        } catch {
            throw .format(path: path, error)
        }
    }

    private static func write(_ tally: Tally, to file: borrowing FileDescriptor, path: String) throws(StoreError) {
        var bytes = tally.encoded()
        guard bytes.count <= fileSize else { throw .tooLarge(path: path) }
        bytes += [UInt8](repeating: 0, count: fileSize - bytes.count)
        let failure: Errno? = bytes.withUnsafeBytes { buffer -> Errno? in
            do throws(Errno) {
                try file.writeAll(buffer, at: 0)
                try file.sync()
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw .system("write", path: path, failure) }
    }
}
