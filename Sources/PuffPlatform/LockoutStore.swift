import Glibc
import PuffCore

/// The persistent failure counters under `state_dir` (default `/var/lib/puff`): one file
/// per user, root 0600, kept across reboots (pam_faillock's tmpfs tallies are cleared by one).
///
/// A counter is never rewritten in place: each write is a new file, its size checked, fsynced
/// and renamed over the old one (`TrustedDirectory.replaceFile`). A write cut short (a
/// caller's RLIMIT_FSIZE inside `su`, a full disk, SIGKILL) leaves the old counter whole, and
/// the caller fails closed before verifying anything, so no write can lower a count.
/// Read-modify-writes are serialized by `flock(LOCK_EX)` on a separate, never-renamed lock
/// file `.NAME.lock` (user names cannot start with a dot). Readers need no lock: a rename
/// shows them the old or the new counter, whole.
public struct LockoutStore {
    /// The state directory.
    public let directory: String
    /// How long to wait for another attempt on the same user, in seconds.
    public let lockWaitSeconds: Int64
    /// The session given at creation; without one, every call opens the state directory anew (a
    /// long-lived value then sees a directory replaced or made unsafe meanwhile).
    private let given: StoreSession?
    /// What this call holds open.
    var session: StoreSession { given ?? StoreSession() }

    /// The largest counter file accepted (older versions padded theirs to this size).
    public static let fileSize = 512

    /// A store rooted at `directory`.
    public init(directory: String, lockWaitSeconds: Int64, session: StoreSession? = nil) {
        self.directory = directory
        self.lockWaitSeconds = lockWaitSeconds
        self.given = session
    }

    /// The name of `name`'s lock file.
    static func lockName(_ name: UserName) -> String { "." + name.value + ".lock" }

    /// The user's counter as stored now (for status displays and the pre-prompt check); an
    /// absent file is an empty tally, one that does not parse reads as locked until reset.
    public func read(_ name: UserName) throws(StoreError) -> Tally {
        guard let state = try session.directory(directory) else { return Tally() }
        return try Self.load(name.value, from: state.trusted)
    }

    /// Runs `body` with the user's counter locked exclusively. `body` writes with `save`
    /// (nothing is written back implicitly, so a write happens exactly where the caller
    /// decides, such as before a verification). Keep `body` short: the slow verification
    /// runs between two updates, never inside one, so a stopped process cannot hold the lock
    /// for longer than a read and a write.
    public func update<Result>(_ name: UserName, _ body: (inout Tally, _ save: Writer) throws(StoreError) -> Result)
        throws(StoreError) -> Result {
        var held = try hold(name)
        return try body(&held.tally, held.writer)
    }

    /// The user's counter lock, held until this is dropped, and the counter read under it.
    struct Held: ~Copyable {
        /// The open lock file, which holds the `flock`.
        let lockFile: FileDescriptor
        var tally: Tally
        let writer: Writer
    }

    /// What `update` does before its body: one copy in the binary, not one per caller.
    @inline(never)
    private func hold(_ name: UserName) throws(StoreError) -> Held {
        let state = try openState()
        let lockFile = try lockedFile(Self.lockName(name), in: state)
        // Read only after the lock is held: another process may have written it meanwhile.
        let tally = try Self.load(name.value, from: state.trusted)
        return Held(lockFile: lockFile, tally: tally, writer: Writer(state: state, name: name))
    }

    /// The lock file `lockName` in `state`, opened (made when missing), checked and locked.
    private func lockedFile(_ lockName: String, in state: StoreSession.Directory) throws(StoreError) -> FileDescriptor {
        let lockPath = state.path + "/" + lockName
        let lockFile: FileDescriptor
        do {
            lockFile = try state.trusted.descriptor.open(lockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
                                                 mode: 0o600)
        } catch {
            throw Self.openError(error, path: lockPath)
        }
        try TrustedDirectory.checkFile(lockFile, path: lockPath, .rootPrivate(maximumSize: 0))
        try lock(lockFile, exclusive: true, path: lockPath)
        return lockFile
    }

    /// How the body of `update` writes the user's counter (each write replaces the file).
    public struct Writer {
        let state: StoreSession.Directory
        let name: UserName

        /// Writes `tally` durably: the file and the rename are on disk when this returns.
        public func callAsFunction(_ tally: Tally) throws(StoreError) {
            try state.trusted.replaceFile(name.value, with: tally.encoded(), durability: .durable)
        }

        /// Writes `tally` when losing the write in a crash is safe, because it only lowers what
        /// the counter on disk holds (settling a success): the new file is on disk before it
        /// replaces the old one, so a crash leaves one or the other whole, but the rename is not
        /// waited for (one fsync instead of two).
        public func lowering(_ tally: Tally) throws(StoreError) {
            try state.trusted.replaceFile(name.value, with: tally.encoded(), durability: .ordered)
        }
    }

    /// The files of `writeDecoy`, `.decoy-0` to `.decoy-f` (user names cannot start with a dot;
    /// sixteen, so that refusals at once seldom wait for each other's lock).
    static let decoyName = ".decoy-"

    /// The work of a counted failure's step 1 — its lock file opened and locked, the counter
    /// read, a new file of a counter's size written, fsynced, renamed, the directory fsynced —
    /// done to a decoy counter no user has: a discreet service's refusal that counted nothing
    /// (no record, no account, locked, passcode required) does it, so neither the disk nor the
    /// time tells such a refusal from a counted one (issue 27, item 2).
    public func writeDecoy(like tally: Tally) throws(StoreError) {
        let state = try openState()
        let file = Self.decoyName + String(Sodium.randomHex(byteCount: 1).prefix(1))
        let lockFile = try lockedFile("." + file + ".lock", in: state)
        _ = try Self.load(file, from: state.trusted)
        try state.trusted.replaceFile(file, with: tally.encoded(), durability: .durable)
        lockFile.unlock()
    }

    /// One of the decoy counters read, as `read(_:)` reads a user's (`Authenticator.readDecoyState`).
    public func readDecoy() throws(StoreError) -> Tally {
        guard let state = try session.directory(directory) else { return Tally() }
        return try Self.load(Self.decoyName + String(Sodium.randomHex(byteCount: 1).prefix(1)), from: state.trusted)
    }

    private static func load(_ name: String, from state: borrowing TrustedDirectory) throws(StoreError) -> Tally {
        guard var bytes = try state.readFile(name, .rootPrivate(maximumSize: fileSize)) else { return Tally() }
        // Older versions padded the file with NULs to a fixed size.
        while bytes.last == 0 { bytes.removeLast() }
        if bytes.isEmpty { return Tally() }
        do {
            return try Tally.decode(bytes)
        } catch {
            // Never read as zero: a counter that was cut or scribbled on locks the account
            // until an administrator's reset rewrites it.
            return Tally.damaged
        }
    }

    /// The admin reset: clears the failures, the lock and an administrator's passcode
    /// requirement; the time and boot of the latest passcode success are kept.
    /// A damaged counter is replaced by an empty one. Temp files left by killed writers of
    /// older versions are removed.
    ///
    /// A reset never waits for longer than `lock_wait`: when a process stopped inside its short
    /// locked step (SIGSTOP) still holds the lock then, the reset writes without it — a rename
    /// is atomic, so readers see the old or the reset counter. Should that process resume, it
    /// may write the count it had read (never a lower one), and the reset is to be repeated.
    public func reset(_ name: UserName) throws(StoreError) {
        func cleared(_ tally: Tally) -> Tally {
            var next = tally.isDamaged ? Tally() : tally.clearingFailures()
            next.adminLock = false
            next.clearedSerial = next.serial
            return next
        }
        do {
            try update(name) { tally, save throws(StoreError) in
                tally = cleared(tally)
                try save(tally)
            }
        } catch .lockTimeout {
            let state = try openState()
            try state.trusted.replaceFile(name.value, with: cleared(try Self.load(name.value, from: state.trusted)).encoded())
        }
        if let state = try? session.directory(directory) { state.trusted.removeLeftovers(of: name.value) }
    }

    /// Deletes `name`'s counter file; only inside `update(name)`, whose lock it still holds
    /// (removing an enrollment). An attempt that waited for that lock on the old file re-reads
    /// the record under it, finds none and writes nothing.
    public func removeWhileLocked(_ name: UserName) throws(StoreError) {
        _ = try openState().trusted.removeFile(name.value)
    }

    /// The state directory, created when missing.
    private func openState() throws(StoreError) -> StoreSession.Directory {
        try session.directory(directory, creatingWith: 0o700)
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
}
