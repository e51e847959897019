import Glibc
import PuffCore

/// The persistent failure counters under `state_dir` (default `/var/lib/puff`): one file
/// per user, root 0600, kept across reboots (pam_faillock's tmpfs tallies are cleared by one).
///
/// A counter file (version 4) is two slots of 512 bytes, one disk sector each. A slot holds
/// one write: the tally, its generation (the number of the write) and a BLAKE2b check of
/// both, padded with NULs; the newer whole slot is the counter. A write goes to the *other*
/// slot in place (`pwrite`), so the slot holding the counter is never touched: a write cut
/// short (a caller's RLIMIT_FSIZE inside `su`, SIGKILL, a crash between the sectors) leaves a
/// slot whose check fails and the counter as it was, and the caller fails closed before
/// verifying anything. One `fdatasync` makes a count durable (no rename, no directory sync:
/// the file keeps its size and blocks); a success's settling write is not synced, as losing
/// it only leaves one failure too many counted. A missing file, one of an older version or
/// one with another link count is replaced whole (`TrustedDirectory.replaceFile`) in the
/// two-slot layout. Read-modify-writes are serialized by `flock(LOCK_EX)` on a separate,
/// never-renamed lock file `.NAME.lock` (user names cannot start with a dot). Readers need no
/// lock: the slot being written fails its check and the other one is read. Removing an
/// enrollment unlinks the lock file, as its last step and while holding its lock; whoever
/// then gets a lock checks that its file is still the one the name links to, and starts
/// again on the new one if not, so two holders never hold different files at once.
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

    /// One slot of the counter file: a disk sector.
    public static let slotSize = 512
    /// The counter file's size (older versions wrote at most `slotSize` bytes).
    public static let fileSize = 2 * slotSize

    /// A store rooted at `directory`.
    public init(directory: String, lockWaitSeconds: Int64, session: StoreSession? = nil) {
        self.directory = directory
        self.lockWaitSeconds = lockWaitSeconds
        self.given = session
    }

    /// The name of the lock file of counter file `file`.
    static func lockName(_ file: String) -> String { "." + file + ".lock" }

    /// The user's counter as stored now (for status displays and the pre-prompt check); an
    /// absent file is an empty tally, one that does not parse reads as locked until reset.
    public func read(_ name: UserName) throws(StoreError) -> Tally {
        guard let state = try session.directory(directory) else { return Tally() }
        return try Self.load(name.value, from: state.trusted).tally
    }

    /// Runs `body` with the user's counter locked exclusively. `body` writes with `save`
    /// (nothing is written back implicitly, so a write happens exactly where the caller
    /// decides, such as before a verification). Keep `body` short: the slow verification
    /// runs between two updates, never inside one, so a stopped process cannot hold the lock
    /// for longer than a read and a write.
    public func update<Result>(_ name: UserName, _ body: (inout Tally, _ save: Writer) throws(StoreError) -> Result)
        throws(StoreError) -> Result {
        var held = try hold(name.value)
        return try body(&held.tally, held.writer)
    }

    /// The counter's lock, held until this is dropped, the counter file opened for writing in
    /// place (when it can be) and the counter read under the lock.
    struct Held: ~Copyable {
        /// The open lock file, which holds the `flock`.
        let lockFile: FileDescriptor
        /// The counter file, open while `writer` writes into it.
        let counter: FileDescriptor?
        var tally: Tally
        let writer: Writer
    }

    /// What `update` does before its body: one copy in the binary, not one per caller.
    @inline(never)
    private func hold(_ file: String) throws(StoreError) -> Held {
        let state = try openState()
        let lockFile = try lockedFile(Self.lockName(file), in: state)
        // Read only after the lock is held: another process may have written it meanwhile.
        let path = state.path + "/" + file
        let counter: FileDescriptor
        do {
            counter = try state.trusted.descriptor.open(file, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            guard error == .noEntry else { throw Self.openError(error, path: path) }
            return Held(lockFile: lockFile, counter: nil, tally: Tally(),
                        writer: Writer(state: state, file: file, inPlace: nil, generation: 0))
        }
        let links = try TrustedDirectory.checkFile(counter, path: path, .rootPrivate(maximumSize: Self.fileSize)).st_nlink
        let read: [UInt8]?
        do throws(Errno) {
            read = try counter.readAll(limit: Self.fileSize, regularFile: true)
        } catch {
            throw .system("read", path: path, error)
        }
        guard let bytes = read else { throw .tooLarge(path: path) }
        let stored = Self.decode(bytes)
        // In place only into the two-slot layout of a file that is the directory's entry.
        let inPlace = bytes.count == Self.fileSize && links == 1 ? counter.rawValue : nil
        return Held(lockFile: lockFile, counter: counter, tally: stored.tally,
                    writer: Writer(state: state, file: file, inPlace: inPlace, generation: stored.generation))
    }

    /// The lock file `lockName` in `state`, opened (made when missing), checked and locked.
    /// A file that was unlinked while this waited for its lock (an enrollment removed) locks
    /// nothing any more: then the name's new file is opened and locked instead.
    private func lockedFile(_ lockName: String, in state: StoreSession.Directory) throws(StoreError) -> FileDescriptor {
        let lockPath = state.path + "/" + lockName
        // Each retry follows a removal by root; a few in a row mean something is wrong.
        for _ in 0..<8 {
            let lockFile: FileDescriptor
            do {
                lockFile = try state.trusted.descriptor.open(lockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
                                                             mode: 0o600)
            } catch {
                throw Self.openError(error, path: lockPath)
            }
            let held = try TrustedDirectory.checkFile(lockFile, path: lockPath, .rootPrivate(maximumSize: 0))
            try lock(lockFile, exclusive: true, path: lockPath)
            let linked: stat
            do {
                linked = try state.trusted.descriptor.status(of: lockName)
            } catch {
                guard error == .noEntry else { throw .system("fstatat", path: lockPath, error) }
                continue
            }
            if linked.st_ino == held.st_ino && linked.st_dev == held.st_dev { return lockFile }
        }
        throw .lockTimeout(path: lockPath)
    }

    /// Whether `name` has a counter or a lock file (without making either).
    public func hasFiles(_ name: UserName) throws(StoreError) -> Bool {
        guard let state = try session.directory(directory) else { return false }
        for file in [name.value, Self.lockName(name.value)] {
            do {
                _ = try state.trusted.descriptor.status(of: file)
                return true
            } catch {
                guard error == .noEntry else { throw .system("fstatat", path: state.path + "/" + file, error) }
            }
        }
        return false
    }

    /// How the body of `update` writes the counter: each write is the next generation, into
    /// the slot the counter is not in.
    public final class Writer {
        let state: StoreSession.Directory
        let file: String
        /// The counter file's descriptor (kept open by `Held`) when it is written in place.
        let inPlace: Int32?
        /// The generation of the counter as it stands.
        private(set) var generation: UInt64

        init(state: StoreSession.Directory, file: String, inPlace: Int32?, generation: UInt64) {
            self.state = state
            self.file = file
            self.inPlace = inPlace
            self.generation = generation
        }

        /// The counter file is written in place (it exists, in the two-slot layout).
        public var isInPlace: Bool { inPlace != nil }

        /// Writes `tally` durably: on disk when this returns (one `fdatasync` in place).
        public func callAsFunction(_ tally: Tally) throws(StoreError) {
            try write(tally, durable: true)
        }

        /// Writes `tally` when losing the write in a crash is safe, because it only lowers what
        /// the counter on disk holds (settling a success): not synced; a crash leaves the
        /// counter as it was or as written, never a mix (the slots).
        public func lowering(_ tally: Tally) throws(StoreError) {
            try write(tally, durable: false)
        }

        private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], at offset: Int) throws(Errno) {
            let failure = bytes.withUnsafeBytes { buffer -> Errno? in
                do throws(Errno) {
                    try FileDescriptor.writeAll(descriptor, buffer, at: offset)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
        }

        private func write(_ tally: Tally, durable: Bool) throws(StoreError) {
            let path = state.path + "/" + file
            let next = generation &+ 1
            guard next != 0, let slot = LockoutStore.slot(tally, generation: next) else { throw .tooLarge(path: path) }
            let offset = Int(next % 2) * LockoutStore.slotSize
            if let inPlace {
                do throws(Errno) {
                    try Self.writeAll(inPlace, slot, at: offset)
                    if durable { try FileDescriptor.dataSync(inPlace) }
                } catch {
                    throw .system("write", path: path, error)
                }
            } else {
                var content = [UInt8](repeating: 0, count: LockoutStore.fileSize)
                content.replaceSubrange(offset..<(offset + LockoutStore.slotSize), with: slot)
                try state.trusted.replaceFile(file, with: content, durability: durable ? .durable : .ordered)
            }
            generation = next
        }
    }

    /// The slot of one write: `Tally.encodedSlot`, its check line, NULs to `slotSize`; `nil`
    /// when it does not fit (it always does: the longest tally text is about 330 bytes).
    static func slot(_ tally: Tally, generation: UInt64) -> [UInt8]? {
        var slot = tally.encodedSlot(generation: generation)
        slot.append(contentsOf: Array("check \(Sodium.checkDigest(slot))\n".utf8))
        guard slot.count <= slotSize else { return nil }
        slot.append(contentsOf: repeatElement(0, count: slotSize - slot.count))
        return slot
    }

    /// Length of a slot's check line: "check ", 32 hex digits, a newline.
    private static let checkLineSize = 39

    /// What one slot holds: nothing whole (empty, or cut short: its check fails), or a whole
    /// write (its check matches), with its generation when its last line gives one.
    private enum Slot {
        case torn
        case whole(body: [UInt8], generation: UInt64?)
    }

    /// One slot, its text checked; the generation is read from its last line, so only the
    /// newer slot is parsed in full.
    private static func slot(_ bytes: ArraySlice<UInt8>) -> Slot {
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 0 { end -= 1 }
        guard end - bytes.startIndex > checkLineSize else { return .torn }
        let body = Array(bytes[bytes.startIndex..<(end - checkLineSize)])
        let check = Array("check \(Sodium.checkDigest(body))\n".utf8)
        guard bytes[(end - checkLineSize)..<end].elementsEqual(check) else { return .torn }
        // "generation N\n" ends the body (Tally.encodedSlot).
        let prefix = Array("\ngeneration ".utf8)
        guard let lineStart = body.dropLast().lastIndex(of: UInt8(ascii: "\n")),
              body[lineStart...].starts(with: prefix) else { return .whole(body: body, generation: nil) }
        let digits = body[(lineStart + prefix.count)..<(body.count - 1)]
        return .whole(body: body, generation: UInt64(String(decoding: digits, as: UTF8.self)))
    }

    /// A counter file's tally and generation. Two slots: the newer whole one. An older
    /// version's text (at most 512 bytes, maybe NUL-padded): generation 0. Never read as zero
    /// when it does not parse: a counter that was cut or scribbled on locks the account until
    /// an administrator's reset rewrites it.
    static func decode(_ bytes: [UInt8]) -> (tally: Tally, generation: UInt64) {
        if bytes.count == fileSize {
            var newer: (body: [UInt8], generation: UInt64)?
            for part in [slot(bytes[0..<slotSize]), slot(bytes[slotSize..<fileSize])] {
                guard case .whole(let body, let generation) = part else { continue }
                // A whole slot (its check matches) was not torn: one without a generation, or
                // that does not parse below, is a damaged file (the other slot would be a
                // rollback).
                guard let generation else { return (Tally.damaged, 0) }
                if let current = newer, current.generation >= generation { continue }
                newer = (body, generation)
            }
            if let newer, let decoded = try? Tally.decodeSlot(newer.body), decoded.generation == newer.generation {
                return (decoded.0, decoded.generation)
            }
            return (Tally.damaged, 0)
        }
        // Anything else that is more than a sector is not a counter of any version.
        guard bytes.count <= slotSize else { return (Tally.damaged, 0) }
        var text = bytes
        // Older versions padded the file with NULs to a fixed size.
        while text.last == 0 { text.removeLast() }
        if text.isEmpty { return (Tally(), 0) }
        guard let tally = try? Tally.decode(text) else { return (Tally.damaged, 0) }
        return (tally, 0)
    }

    /// The files of `writeDecoy`, `.decoy-0` to `.decoy-f` (user names cannot start with a dot;
    /// sixteen, so that refusals at once seldom wait for each other's lock).
    static let decoyName = ".decoy-"

    /// The work of a counted failure's step 1 — its lock file opened and locked, the counter
    /// opened and read, a slot written in place and synced —
    /// done to a decoy counter no user has: a discreet service's refusal that counted nothing
    /// (no record, no account, locked, passcode required) does it, so neither the disk nor the
    /// time tells such a refusal from a counted one (issue 27, item 2).
    ///
    /// Only processes that no ordinary user can stop, freeze, starve or trace take these locks
    /// (the module as root, the helper's service calls, `puff-enroll` as root): the setuid
    /// helper run by a user for their own enrollment leaves the decoys alone (issue 36, item 1),
    /// so a decoy found missing or of an older layout is made here, all sixteen at once, and
    /// only that one refusal in the state directory's life costs more than the others.
    public func writeDecoy(like tally: Tally) throws(StoreError) {
        let name = Self.randomDecoyName()
        do {
            let held = try hold(name)
            if held.writer.isInPlace { return try held.writer(tally) }
        }
        try prepareDecoys()
        // Bound to a name: a temporary `Held` would close the counter (and drop the lock)
        // before its writer writes into it.
        let held = try hold(name)
        try held.writer(tally)
    }

    /// Makes the decoy counters that are missing (or of an older layout), so that no refusal
    /// pays for creating one, after which a decoy write costs what a user's counted failure
    /// does (a slot written in place, one `fdatasync`). It takes each decoy's lock in turn:
    /// call it only where no ordinary user can stop the process (`writeDecoy`,
    /// `FilesStore.prepareDecoysWhereUnstoppable`).
    public func prepareDecoys() throws(StoreError) {
        for digit in "0123456789abcdef".utf8 {
            let held = try hold(Self.decoyName + String(decoding: [digit], as: UTF8.self))
            if !held.writer.isInPlace { try held.writer(held.tally) }
        }
    }

    /// One of the decoy counters read, as `read(_:)` reads a user's (`FilesStore.readDecoyState`).
    public func readDecoy() throws(StoreError) -> Tally {
        guard let state = try session.directory(directory) else { return Tally() }
        return try Self.load(Self.randomDecoyName(), from: state.trusted).tally
    }

    /// One of the sixteen decoy counters' names, at random: `decoyName` and a hex digit.
    private static func randomDecoyName() -> String {
        decoyName + String(decoding: Sodium.randomHex(byteCount: 1).utf8.prefix(1), as: UTF8.self)
    }

    private static func load(_ name: String, from state: borrowing TrustedDirectory) throws(StoreError)
        -> (tally: Tally, generation: UInt64) {
        guard let bytes = try state.readFile(name, .rootPrivate(maximumSize: fileSize)) else { return (Tally(), 0) }
        return decode(bytes)
    }

    /// The admin reset: clears the failures, the lock and an administrator's passcode
    /// requirement; the time and boot of the latest passcode success are kept.
    /// A damaged counter is replaced by an empty one. Temp files left by killed writers of
    /// older versions are removed.
    ///
    /// A reset never waits for longer than `lock_wait`: when a process stopped inside its short
    /// locked step (SIGSTOP) still holds the lock then, the reset replaces the file whole
    /// without it (a rename: readers see the old or the reset counter). Should that process
    /// resume, it writes into the file it opened, which the rename took out of the directory:
    /// the reset stands.
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
            let stored = try Self.load(name.value, from: state.trusted)
            try Writer(state: state, file: name.value, inPlace: nil, generation: stored.generation)(cleared(stored.tally))
        }
        if let state = try? session.directory(directory) { state.trusted.removeLeftovers(of: name.value) }
    }

    /// Deletes `name`'s counter file; only inside `update(name)`, whose lock it still holds
    /// (removing an enrollment). An attempt that waited for that lock on the old file re-reads
    /// the record under it, finds none and writes nothing.
    public func removeWhileLocked(_ name: UserName) throws(StoreError) {
        _ = try openState().trusted.removeFile(name.value)
    }

    /// Deletes `name`'s lock file; only inside `update(name)`, as the last thing it does
    /// (removing an enrollment). A process waiting for the lock on this file finds it unlinked
    /// once it has the lock and starts again on a new one (`lockedFile`); one that made the new
    /// file meanwhile finds the removal done.
    public func removeLockWhileLocked(_ name: UserName) throws(StoreError) {
        _ = try openState().trusted.removeFile(Self.lockName(name.value))
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
