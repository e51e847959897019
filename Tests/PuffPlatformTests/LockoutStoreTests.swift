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

    @Test("update then read, in a fixed-size root 0600 file")
    func roundTrip() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch)
        let tally = Tally(failures: 4, lastFailure: 1_700_000_000, lockedUntil: 1_700_000_300)
        try set(tally, in: counters, for: alice)
        #expect(try counters.read(alice) == tally)
        let info = try fileStatus(scratch("state/alice"))
        #expect(info.st_size == 512)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(info.st_uid == 0)
        #expect(try fileStatus(scratch("state")).st_mode & 0o7777 == 0o700)
        let bytes = try contents(scratch("state/alice"))
        let encoded = tally.encoded()
        #expect(Array(bytes.prefix(encoded.count)) == encoded)
        #expect(bytes.dropFirst(encoded.count).allSatisfy { $0 == 0 })
        // A shorter tally overwrites the longer one completely.
        try set(Tally(failures: 1), in: counters, for: alice)
        #expect(try counters.read(alice) == Tally(failures: 1))
        #expect(try fileStatus(scratch("state/alice")).st_size == 512)
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

    @Test("a corrupted counter is a format error", arguments: [
        ([UInt8]("garbage\n".utf8), RecordFormatError.badHeader),
        ([UInt8]("puff-tally 1\nfailures x\nlast-failure 0\nlocked-until 0\n".utf8), .badValue),
        ([UInt8]("puff-tally 1\nfailures 1\n".utf8), .missingKey),
        ([UInt8]("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0".utf8) + [0, 0, 0], .badText),
        ([0xff] + [UInt8](repeating: 0, count: 511), .badText),
    ])
    func corrupted(bytes: [UInt8], problem: RecordFormatError) throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("state"))
        try makeFile(scratch("state/alice"), bytes)
        let counters = store(scratch)
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .format(problem))
        #expect(errorKind { () throws(StoreError) in try set(Tally(), in: counters, for: alice) } == .format(problem))
        #expect(try contents(scratch("state/alice")) == bytes)
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
        try makeFile(scratch("state/alice"), [UInt8](repeating: 0, count: 513))
        #expect(errorKind { () throws(StoreError) in _ = try counters.read(alice) } == .tooLarge)
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
        #expect(try fileStatus(scratch("state/alice")).st_size == 512)
    }

    @Test("a held lock makes update give up with lockTimeout after lock_wait")
    func lockTimeout() throws {
        let scratch = try ScratchDirectory()
        let counters = store(scratch, wait: 1)
        try counters.reset(alice)
        let fd = open(scratch("state/alice"), O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SetupError(what: "open") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw SetupError(what: "flock") }
        #expect(errorKind { () throws(StoreError) in try counters.reset(alice) } == .lockTimeout)
        _ = flock(fd, LOCK_UN)
        #expect(errorKind { () throws(StoreError) in try counters.reset(alice) } == nil)
    }
}
