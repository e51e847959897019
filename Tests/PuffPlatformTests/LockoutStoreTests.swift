import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("LockoutStore")
struct LockoutStoreTests {
    let alice = UserName("alice")!

    private func store(_ scratch: borrowing ScratchDirectory, wait: Int64 = 30) -> LockoutStore {
        LockoutStore(directory: scratch("state"), lockWaitSeconds: wait)
    }

    /// Sets the tally with `update` and `save`.
    private func set(_ tally: Tally, in store: LockoutStore, for name: UserName) throws(StoreError) {
        try store.update(name) { current, save throws(StoreError) in
            current = tally
            try save(current)
        }
    }

    @Test("a missing directory or file reads as an empty tally")
    func absent() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        #expect(try counters.read(alice) == Tally())
        try makeDirectory(scratch("state"))
        #expect(try counters.read(alice) == Tally())
        #expect(try directoryNames(scratch("state")) == [])
    }

    /// The text of the slot at `index` (0 or 1) of a counter file, without its NUL padding.
    private func slotText(_ bytes: [UInt8], _ index: Int) -> String {
        String(decoding: bytes[(index * 512)..<(index * 512 + 512)].prefix { $0 != 0 }, as: UTF8.self)
    }

    @Test("update then read: a root 0600 file of two 512-byte slots beside its lock file, written in place")
    func roundTrip() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        let tally = Tally(failures: 4, lastFailure: 1_700_000_000, lockedUntil: 1_700_000_300)
        try set(tally, in: counters, for: alice)
        #expect(try counters.read(alice) == tally)
        let info = try fileStatus(scratch("state/alice"))
        #expect(info.st_size == 1024 && LockoutStore.fileSize == 1024)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(info.st_uid == 0)
        #expect(try fileStatus(scratch("state")).st_mode & 0o7777 == 0o700)
        // The first write (no file yet) is generation 1, in the second slot; the first is empty.
        let first = try contents(scratch("state/alice"))
        #expect(first[0..<512].allSatisfy { $0 == 0 })
        let text = slotText(first, 1)
        #expect(text.hasPrefix("puff-tally 4\nfailures 4\nlast-failure 1700000000\nlocked-until 1700000300\n"), "\(text)")
        #expect(text.contains("\ngeneration 1\ncheck "), "\(text)")
        // The next writes go in place (the same file), each into the slot the counter is not in:
        // the slot holding the counter is never written over.
        try set(Tally(failures: 1), in: counters, for: alice)
        #expect(try counters.read(alice) == Tally(failures: 1))
        let second = try contents(scratch("state/alice"))
        #expect(try fileStatus(scratch("state/alice")).st_ino == info.st_ino)
        #expect(second[512..<1024] == first[512..<1024])
        #expect(slotText(second, 0).contains("failures 1\n") && slotText(second, 0).contains("\ngeneration 2\n"))
        try set(Tally(failures: 2), in: counters, for: alice)
        let third = try contents(scratch("state/alice"))
        #expect(third[0..<512] == second[0..<512])
        #expect(slotText(third, 1).contains("\ngeneration 3\n"))
        #expect(try counters.read(alice) == Tally(failures: 2))
        #expect(try fileStatus(scratch("state/alice")).st_ino == info.st_ino)
        // The lock file is root 0600 and empty; nothing else is left in the directory.
        let lock = try fileStatus(scratch("state/.alice.lock"))
        #expect(lock.st_size == 0 && lock.st_mode & 0o7777 == 0o600 && lock.st_uid == 0)
        #expect(try directoryNames(scratch("state")) == [".alice.lock", "alice"])
    }

    /// What a write cut short leaves (RLIMIT_FSIZE in `su`, SIGKILL, power lost between the
    /// sectors): the slot being written holds part of the new text over part of the old. Its
    /// check fails and the counter is the other slot's, as it was — never a mix, never lower.
    @Test("a slot torn at any byte reads as the counter before the write", arguments: [1, 13, 40, 100, 200, 300, 400, 511])
    func tornSlot(at cut: Int) throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        try set(Tally(failures: 9, lastFailure: 100), in: counters, for: alice)       // generation 1, slot 1
        try set(Tally(failures: 10, lastFailure: 200), in: counters, for: alice)      // generation 2, slot 0
        let before = try contents(scratch("state/alice"))
        try set(Tally(failures: 11, lastFailure: 300), in: counters, for: alice)      // generation 3, slot 1
        let after = try contents(scratch("state/alice"))
        // Slot 1 torn: its first `cut` bytes new, the rest old (generation 1's).
        let torn = Array(after[0..<(512 + cut)]) + Array(before[(512 + cut)...])
        try makeFile(scratch("state/alice"), torn)
        let read = try counters.read(alice)
        #expect(!read.isDamaged)
        // Cut past the new text's end (the rest is padding either way), the write is whole.
        let whole = torn[512...] == after[512...]
        #expect(whole == (cut >= 512 - after[512...].reversed().prefix { $0 == 0 }.count))
        #expect(read == (whole ? Tally(failures: 11, lastFailure: 300) : Tally(failures: 10, lastFailure: 200)), "cut at \(cut)")
        // The next write goes into the torn slot again and is read back.
        try set(Tally(failures: 11, lastFailure: 300), in: counters, for: alice)
        #expect(try counters.read(alice) == Tally(failures: 11, lastFailure: 300))
    }

    /// The slots' check pinned to a value computed outside the code (`printf abc | b2sum -l 128`),
    /// so the writer and the readers (this suite's, `RawCounter`'s) cannot agree on a wrong digest.
    @Test("the slot check is BLAKE2b-128")
    func checkDigestKnownAnswer() {
        #expect(Sodium.checkDigest(Array("abc".utf8)) == "cf4ab791c62b8d2b2109c90275287816")
    }

    @Test("the newer whole slot is the counter; a whole slot that does not parse damages the counter")
    func newerSlot() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        try set(Tally(failures: 3), in: counters, for: alice)   // generation 1, slot 1
        try set(Tally(failures: 4), in: counters, for: alice)   // generation 2, slot 0
        var bytes = try contents(scratch("state/alice"))
        // Swapping the slots changes nothing: the generation, not the place, says which is newer.
        try makeFile(scratch("state/alice"), Array(bytes[512...]) + Array(bytes[..<512]))
        #expect(try counters.read(alice) == Tally(failures: 4))
        // An unknown key in the newer slot, with a check that matches it: not a torn write,
        // so not the older slot either (that would be a rollback) but a damaged counter.
        let body = Array(slotText(bytes, 0).utf8.dropLast(39)) + Array("extra 1\n".utf8)
        let slot = body + Array("check \(Sodium.checkDigest(body))\n".utf8)
        bytes.replaceSubrange(0..<512, with: slot + [UInt8](repeating: 0, count: 512 - slot.count))
        try makeFile(scratch("state/alice"), bytes)
        #expect(try counters.read(alice).isDamaged)
        // Both slots torn: damaged.
        try makeFile(scratch("state/alice"), [UInt8](repeating: 0x41, count: 1024))
        #expect(try counters.read(alice).isDamaged)
    }

    @Test("an older version's file is read, and replaced by the two-slot layout at the next write")
    func olderVersionMigrates() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        let tally = Tally(failures: 3, lastFailure: 7)
        try makeFile(scratch("state/alice"), tally.encoded())
        let counters = store(scratch)
        #expect(try counters.read(alice) == tally)
        let inode = try fileStatus(scratch("state/alice")).st_ino
        try counters.update(alice) { current, save throws(StoreError) in
            current.failures += 1
            try save(current)
        }
        #expect(try fileStatus(scratch("state/alice")).st_size == 1024)
        #expect(try fileStatus(scratch("state/alice")).st_ino != inode)
        #expect(try counters.read(alice) == Tally(failures: 4, lastFailure: 7))
    }

    @Test("a counter file with a second link is refused, never written through")
    func linkedFileReplaced() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        try set(Tally(failures: 1), in: counters, for: alice)
        let before = try contents(scratch("state/alice"))
        #expect(link(scratch("state/alice"), scratch("elsewhere")) == 0)
        // Two links: refused as unsafe to read at all; the planted name keeps the old bytes.
        let kind = errorKind { () throws(StoreError) in try set(Tally(failures: 2), in: counters, for: alice) }
        #expect(kind == .unsafe)
        #expect(try contents(scratch("elsewhere")) == before)
    }

    @Test("a file of the previous version (padded to 512 bytes) still reads")
    func paddedFile() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        let tally = Tally(failures: 3, lastFailure: 7)
        try makeFile(scratch("state/alice"), tally.encoded() + [UInt8](repeating: 0, count: 512 - tally.encoded().count))
        #expect(try store(scratch).read(alice) == tally)
    }

    @Test("update passes the stored tally in and returns the body's result")
    func updateResult() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        try set(Tally(failures: 2, lastFailure: 10), in: counters, for: alice)
        let seen = try counters.update(alice) { tally, _ throws(StoreError) -> Tally in tally }
        #expect(seen == Tally(failures: 2, lastFailure: 10))
        // Users have separate counters.
        #expect(try counters.read(UserName("bob")!) == Tally())
    }

    @Test("a save's error propagates out of update")
    func errorPropagates() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        let kind = errorKind { () throws(StoreError) in
            try counters.update(alice) { _, _ throws(StoreError) in throw StoreError.crypto("boom") }
        }
        #expect(kind == .crypto)
    }

    @Test("16 threads × 20 increments lose no update")
    func concurrentIncrements() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch("state")
        let name = alice
        let problems = Problems()
        runThreads(16) { _ in
            let counters = LockoutStore(directory: directory, lockWaitSeconds: 60)
            for _ in 0..<20 {
                do {
                    try counters.update(name) { tally, save throws(StoreError) in
                        tally.failures += 1
                        try save(tally)
                    }
                } catch {
                    problems.add("\(error)")
                }
            }
        }
        #expect(problems.all == [])
        #expect(try store(scratch).read(alice).failures == 320)
    }

    @Test("a corrupted counter reads as locked until reset (never zero), and reset repairs it", arguments: [
        [UInt8]("garbage\n".utf8),
        [UInt8]("puff-tally 1\nfailures x\nlast-failure 0\nlocked-until 0\n".utf8),
        [UInt8]("puff-tally 1\nfailures 1\n".utf8),
        [UInt8]("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0".utf8) + [0, 0, 0],
        [0xff] + [UInt8](repeating: 0, count: 511),
        // What RLIMIT_FSIZE left of an in-place write by the previous version.
        [UInt8]("puff-tally 2\nfailures 1".utf8),
    ])
    func corrupted(bytes: [UInt8]) throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        try makeFile(scratch("state/alice"), bytes)
        let counters = store(scratch)
        let read = try counters.read(alice)
        #expect(read.isDamaged)
        #expect(LockoutPolicy().status(of: read, now: 1_700_000_000, isRoot: false) == .lockedUntilReset)
        let seen = try counters.update(alice) { tally, _ throws(StoreError) -> Tally in tally }
        #expect(seen.isDamaged)
        #expect(try contents(scratch("state/alice")) == bytes)
        try counters.reset(alice)
        #expect(try counters.read(alice) == Tally())
    }

    @Test("reset removes temp files killed writers of older versions left")
    func leftovers() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        try makeFile(scratch("state/.alice.tmp-0123456789abcdef"), [UInt8]("puff-tally 2\nfa".utf8))
        try makeFile(scratch("state/.bob.tmp-0123456789abcdef"), [UInt8]("x".utf8))
        try store(scratch).reset(alice)
        #expect(try directoryNames(scratch("state")) == [".alice.lock", ".bob.tmp-0123456789abcdef", "alice"])
    }

    @Test("an empty or all-zero file is an empty tally")
    func zeroFile() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        try makeFile(scratch("state/alice"), [UInt8](repeating: 0, count: 512))
        try makeFile(scratch("state/bob"), [])
        #expect(try store(scratch).read(alice) == Tally())
        #expect(try store(scratch).read(UserName("bob")!) == Tally())
    }

    @Test("a symlinked counter file is refused and its target left alone")
    func symlink() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        let target = Tally(failures: 1).encoded()
        try makeFile(scratch("victim"), target)
        try makeSymlink(scratch("victim"), at: scratch("state/alice"))
        try makeSymlink(scratch("nothing"), at: scratch("state/bob"))
        let counters = store(scratch)
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try counters.reset(alice) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try counters.reset(UserName("bob")!) } == .unsafe)
        #expect(try contents(scratch("victim")) == target)
        #expect(try directoryNames(scratch.path) == ["state", "victim"])
    }

    @Test("a counter file that is not root 0600, single-link and small is refused")
    func unsafeFiles() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        let counters = store(scratch)
        try makeFile(scratch("state/alice"), Tally().encoded(), mode: 0o644)
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try counters.reset(alice) } == .unsafe)
        try setMode(scratch("state/alice"), 0o600)
        try setOwner(scratch("state/alice"), 65534)
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .unsafe)
        try setOwner(scratch("state/alice"), 0)
        try makeFile(scratch("state/alice"), [UInt8](repeating: 0, count: 1025))
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .tooLarge)
        // Between one sector and two: no version's size, read as damaged.
        try makeFile(scratch("state/alice"), [UInt8](repeating: 0, count: 513))
        #expect(try counters.read(alice).isDamaged)
        try makeFile(scratch("state/alice"), [])
        guard link(scratch("state/alice"), scratch("state/bob")) == 0 else { throw SetupError(what: "link") }
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .unsafe)
        guard mkfifo(scratch("state/carol"), 0o600) == 0 else { throw SetupError(what: "mkfifo") }
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(UserName("carol")!) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try counters.reset(UserName("carol")!) } == .unsafe)
    }

    @Test("a state directory writable by others is refused")
    func writableDirectory() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"), mode: 0o777)
        let counters = store(scratch)
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try counters.reset(alice) } == .unsafe)
    }

    @Test("reset clears the tally")
    func reset() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        try set(Tally(failures: 9, lastFailure: 5, lockedUntil: Tally.untilReset), in: counters, for: alice)
        try counters.reset(alice)
        #expect(try counters.read(alice) == Tally())
        #expect(try counters.read(alice).failures == 0)
    }

    @Test("a held lock makes update give up with lockTimeout after lock_wait")
    func lockTimeout() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch, wait: 1)
        try counters.reset(alice)
        // The lock is on the lock file, which is never renamed.
        let fd = open(scratch("state/.alice.lock"), O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SetupError(what: "open") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw SetupError(what: "flock") }
        #expect(errorKind { () throws(StoreError) in try set(Tally(failures: 2), in: counters, for: alice) } == .lockTimeout)
        // Readers need no lock: a rename shows them the old or the new file, whole.
        #expect(try counters.read(alice) == Tally())
        _ = flock(fd, LOCK_UN)
        #expect(errorKind { () throws(StoreError) in try set(Tally(failures: 2), in: counters, for: alice) } == nil)
    }

    @Test("a reset waits at most lock_wait for a stuck lock holder, then resets without the lock")
    func resetPastAStuckHolder() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch, wait: 1)
        try set(Tally(failures: 7, lastFailure: 5, lockedUntil: Tally.untilReset), in: counters, for: alice)
        let fd = open(scratch("state/.alice.lock"), O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SetupError(what: "open") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw SetupError(what: "flock") }
        try counters.reset(alice)
        #expect(try counters.read(alice).failures == 0)
        #expect(try counters.read(alice).lockedUntil == 0)
    }
}
