import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("StoreSession")
struct StoreSessionTests {
    let alice = UserName("alice")!

    @Test("a directory is walked once and held: a symlink put in its place later does not redirect the session")
    func heldDirectory() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("etc"))
        try makeFile(scratch("etc/puff.conf"), "deny = 3\n")
        try makeDirectory(scratch("elsewhere"))
        try makeFile(scratch("elsewhere/puff.conf"), "deny = 9\n")
        let session = StoreSession()
        let first = try #require(try session.directory(scratch("etc")))
        #expect(rename(scratch("etc"), scratch("etc-moved")) == 0)
        try makeSymlink(scratch("elsewhere"), at: scratch("etc"))
        let again = try #require(try session.directory(scratch("etc")))
        #expect(first === again)
        let bytes = try again.trusted.readFile("puff.conf", .rootWritable(maximumSize: 100))
        #expect(bytes == Array("deny = 3\n".utf8))
        // A new session walks again and refuses the symlink.
        #expect(errorKind { () throws(StoreError) in _ = try StoreSession().directory(scratch("etc")) } == .unsafe)
    }

    @Test("a held directory is found by its path's bytes: a canonically equivalent path is another directory")
    func heldDirectoriesMatchByBytes() throws {
        let scratch = try ScratchDirectory()
        // Two names Swift's == calls equal (U+00E9, and "e" + U+0301), two entries to the kernel.
        let composed = scratch("caf\u{E9}"), decomposed = scratch("cafe\u{301}")
        #expect(composed == decomposed && composed.utf8.count != decomposed.utf8.count)
        try makeDirectory(composed)
        try makeFile(composed + "/puff.conf", "deny = 3\n")
        try makeDirectory(decomposed)
        try makeFile(decomposed + "/puff.conf", "deny = 9\n")
        let session = StoreSession()
        let first = try #require(try session.directory(composed))
        let second = try #require(try session.directory(decomposed))
        #expect(first !== second)
        #expect(second.path.utf8.elementsEqual(decomposed.utf8))
        #expect(try second.trusted.readFile("puff.conf", .rootWritable(maximumSize: 100)) == Array("deny = 9\n".utf8))
        #expect(try first.trusted.readFile("puff.conf", .rootWritable(maximumSize: 100)) == Array("deny = 3\n".utf8))
    }

    @Test("a subdirectory opened through its held parent is checked like the end of a walk")
    func subdirectoryChecks() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("etc"))
        let session = StoreSession()
        _ = try #require(try session.directory(scratch("etc")))
        // Missing: nil, and not remembered (it may be created meanwhile).
        #expect(try session.directory(scratch("etc/users")) == nil)
        try makeDirectory(scratch("etc/users"), mode: 0o777)
        try setMode(scratch("etc/users"), 0o777)
        #expect(errorKind { () throws(StoreError) in _ = try session.directory(scratch("etc/users")) } == .unsafe)
        try setMode(scratch("etc/users"), 0o700)
        try setOwner(scratch("etc/users"), 1000)
        #expect(errorKind { () throws(StoreError) in _ = try session.directory(scratch("etc/users")) } == .unsafe)
        try setOwner(scratch("etc/users"), 0)
        try makeDirectory(scratch("target"))
        try makeSymlink(scratch("target"), at: scratch("etc/pictures"))
        #expect(errorKind { () throws(StoreError) in _ = try session.directory(scratch("etc/pictures")) } == .unsafe)
        #expect(try session.directory(scratch("etc/users"))?.path == scratch("etc/users"))
    }

    @Test("a name that is not one directory entry is refused", arguments: ["", ".", "..", "a/b"])
    func badNames(_ name: String) throws {
        let scratch = try ScratchDirectory()
        let parent = try TrustedDirectory(scratch.path)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(name, in: parent) } == .unsafe)
    }

    @Test("a lock taken on a held directory ends with its user, not with the session")
    func locksOnHeldDirectories() throws {
        let scratch = try ScratchDirectory()
        try Sodium.initialize()
        try makeDirectory(scratch("state"))
        let session = StoreSession()
        let entry = FailureHistory.Entry(time: 1_700_000_000, service: "login", tty: "tty1", rhost: "", ruser: "")
        try FailureHistory(stateDirectory: scratch("state"), lockWaitSeconds: 1, session: session).record(entry, for: alice)
        _ = try RecordStore(directory: scratch("etc"), session: session).loadOrCreateHostKey(tpm: TPMSettings())
        // The session still holds both directories open; another descriptor can lock them.
        #expect(session.held(scratch("state/.history")) != nil)
        #expect(session.held(scratch("etc")) != nil)
        for path in [scratch("state/.history"), scratch("etc")] {
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            #expect(fd >= 0)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0, "\(path) is still locked")
            _ = close(fd)
        }
        // And a second writer with its own session is not kept waiting.
        try FailureHistory(stateDirectory: scratch("state"), lockWaitSeconds: 1, session: StoreSession()).record(entry, for: alice)
        #expect(try FailureHistory(stateDirectory: scratch("state"), lockWaitSeconds: 1).entries(for: alice).count == 2)
    }

    @Test("a settling write (lowering) goes into the other slot in place, like a durable one")
    func loweringWrite() throws {
        let scratch = try ScratchDirectory()
        let counters = LockoutStore(directory: scratch("state"), lockWaitSeconds: 5, session: StoreSession())
        let counted = Tally(failures: 3, lastFailure: 1_700_000_000, lockedUntil: 0)
        try counters.update(alice) { tally, save throws(StoreError) in
            tally = counted
            try save(tally)
        }
        try counters.update(alice) { tally, save throws(StoreError) in
            #expect(tally == counted)
            tally = Tally()
            try save.lowering(tally)
        }
        #expect(try LockoutStore(directory: scratch("state"), lockWaitSeconds: 5).read(alice) == Tally())
        // The counted write (generation 1) is still whole in the second slot; the settle
        // (generation 2) is in the first.
        let bytes = try contents(scratch("state/alice"))
        #expect(bytes.count == 1024)
        #expect(String(decoding: bytes[0..<512].prefix { $0 != 0 }, as: UTF8.self).hasPrefix("puff-tally 4\nfailures 0\n"))
        #expect(String(decoding: bytes[512...].prefix { $0 != 0 }, as: UTF8.self).hasPrefix("puff-tally 4\nfailures 3\n"))
        #expect(try fileStatus(scratch("state/alice")).st_mode & 0o777 == 0o600)
        #expect(try directoryNames(scratch("state")).sorted() == [".alice.lock", "alice"])
    }
}
