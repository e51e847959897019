import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("RecordStore")
struct RecordStoreTests {
    static let hash = "$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"

    init() throws { try Sodium.initialize() }

    /// The names in these tests are literals known to be valid.
    private func account(_ name: String, _ uid: UInt32) -> Account {
        Account(name: UserName(name)!, uid: uid)
    }

    private func record(_ name: String, _ uid: UInt32, type: PasscodeType = .digits6) -> UserRecord {
        UserRecord(user: UserName(name)!, uid: uid, passcode: StoredPasscode(type: type, hash: Self.hash))
    }

    @Test("save then load, creating a root 0755 store, a 0700 users directory and a root 0600 file")
    func roundTrip() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        let alice = record("alice", 1000)
        try store.save(alice)
        #expect(try store.load(account("alice", 1000)) == alice)
        // The store root is traversable (helpers read pictures/); the records are not.
        for (directory, mode) in [("etc", mode_t(0o755)), ("etc/users", mode_t(0o700))] {
            let info = try fileStatus(scratch(directory))
            #expect(info.st_mode & S_IFMT == S_IFDIR)
            #expect(info.st_mode & 0o7777 == mode)
        }
        let file = try fileStatus(scratch("etc/users/alice"))
        #expect(file.st_mode & 0o7777 == 0o600)
        #expect(file.st_uid == 0)
        #expect(try contents(scratch("etc/users/alice")) == alice.encoded())
        // A second save replaces the record.
        let changed = record("alice", 1000, type: .alphanumeric)
        try store.save(changed)
        #expect(try store.load(account("alice", 1000)) == changed)
        #expect(try directoryNames(scratch("etc/users")) == ["alice"])
    }

    @Test("a record without a passcode round trips")
    func withoutPasscode() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        let bare = UserRecord(user: try #require(UserName("bob")), uid: 1001, passcode: nil)
        try store.save(bare)
        #expect(try store.load(account("bob", 1001)) == bare)
    }

    @Test("no store, no users directory or no record all load as nil")
    func absent() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        #expect(try store.load(account("alice", 1000)) == nil)
        try makeDirectory(scratch("etc"))
        #expect(try store.load(account("alice", 1000)) == nil)
        try store.save(record("bob", 1001))
        #expect(try store.load(account("alice", 1000)) == nil)
    }

    @Test("a record for another uid or name is refused")
    func wrongOwner() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        try store.save(record("alice", 1000))
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1001)) } == .wrongOwner)
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 0)) } == .wrongOwner)
        // Bob's record copied into Alice's file.
        try makeFile(scratch("etc/users/alice"), record("bob", 1000).encoded())
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .wrongOwner)
    }

    @Test("a truncated or corrupted record is a format error")
    func truncated() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        let encoded = record("alice", 1000).encoded()
        try store.save(record("alice", 1000))
        try makeFile(scratch("etc/users/alice"), Array(encoded.dropLast(10)))
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .format(.badText))
        try makeFile(scratch("etc/users/alice"), "puff-record 1\nuser alice\n")
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .format(.missingKey))
        try makeFile(scratch("etc/users/alice"), [])
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .format(.badText))
    }

    @Test("a record replaced by a symlink is refused", arguments: ["/etc/shadow", "bob", "/nonexistent"])
    func symlink(target: String) throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        try store.save(record("bob", 1000))
        try makeSymlink(target, at: scratch("etc/users/alice"))
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .unsafe)
    }

    @Test("a record readable by others, or owned by someone else, is refused")
    func unsafeRecord() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        try store.save(record("alice", 1000))
        try setMode(scratch("etc/users/alice"), 0o644)
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .unsafe)
        try setMode(scratch("etc/users/alice"), 0o600)
        try setOwner(scratch("etc/users/alice"), 1000)
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .unsafe)
    }

    @Test("a writable store directory is refused")
    func writableStore() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        try store.save(record("alice", 1000))
        try setMode(scratch("etc/users"), 0o777)
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in try store.save(record("alice", 1000)) } == .unsafe)
    }

    @Test("a record larger than the format allows is refused")
    func oversize() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        try store.save(record("alice", 1000))
        try makeFile(scratch("etc/users/alice"), [UInt8](repeating: 0x41, count: UserRecord.maximumEncodedSize + 1))
        #expect(errorKind { () throws(StoreError) in _ = try store.load(account("alice", 1000)) } == .tooLarge)
    }

    @Test("remove deletes the record once")
    func remove() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        let alice = try #require(UserName("alice"))
        #expect(try store.remove(alice) == false)
        try store.save(record("alice", 1000))
        #expect(try store.remove(alice) == true)
        #expect(try store.remove(alice) == false)
        #expect(try store.load(account("alice", 1000)) == nil)
    }

    @Test("enrolledNames lists records only, sorted, skipping temp files and odd names")
    func enrolledNames() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        #expect(try store.enrolledNames() == [])
        try store.save(record("carol", 1002))
        try store.save(record("alice", 1000))
        try store.save(record("bob", 1001))
        try makeFile(scratch("etc/users/.alice.tmp-0011223344556677"), "partial")
        try makeFile(scratch("etc/users/not a name"), "x")
        #expect(try store.enrolledNames().map(\.value) == ["alice", "bob", "carol"])
    }

    @Test("the host key is created once: 32 bytes, root 0600, the same bytes afterwards")
    func hostKeyCreation() throws {
        let scratch = try ScratchDirectory()
        let store = RecordStore(directory: scratch("etc"))
        #expect(try store.loadHostKey(tpm: TPMSettings()) == nil)
        let created = try store.loadOrCreateHostKey(tpm: TPMSettings())
        #expect(created.count == 32)
        let info = try fileStatus(scratch("etc/host.key"))
        #expect(info.st_mode & S_IFMT == S_IFREG)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(info.st_uid == 0)
        #expect(info.st_size == 32)
        #expect(try contents(scratch("etc/host.key")) == plain(created))
        let again = try store.loadOrCreateHostKey(tpm: TPMSettings())
        #expect(plain(again) == plain(created))
        guard let loaded = try store.loadHostKey(tpm: TPMSettings()) else {
            Issue.record("the created host key does not load")
            return
        }
        #expect(plain(loaded) == plain(created))
        #expect(try directoryNames(scratch("etc")) == ["host.key"])
        // Another store gets another key.
        let other = try RecordStore(directory: scratch("other")).loadOrCreateHostKey(tpm: TPMSettings())
        #expect(plain(other) != plain(created))
    }

    @Test("concurrent first uses agree on one host key")
    func hostKeyRace() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch("etc")
        let keys = Problems()
        runThreads(8) { _ in
            do {
                let key = try RecordStore(directory: directory).loadOrCreateHostKey(tpm: TPMSettings())
                keys.add(hex(plain(key)))
            } catch {
                keys.add("error: \(error)")
            }
        }
        #expect(keys.all.count == 8)
        #expect(Set(keys.all).count == 1)
        #expect(try keys.all.first == hex(contents(scratch("etc/host.key"))))
    }

    @Test("a host key of the wrong size or mode is refused and left alone", arguments: [
        ([UInt8](repeating: 1, count: 31), mode_t(0o600), ErrorKind.unsafe),
        ([UInt8](repeating: 1, count: 0), 0o600, .unsafe),
        ([UInt8](repeating: 1, count: 33), 0o600, .tooLarge),
        ([UInt8](repeating: 1, count: 32), 0o644, .unsafe),
        ([UInt8](repeating: 1, count: 32), 0o640, .unsafe),
    ])
    func badHostKey(bytes: [UInt8], mode: mode_t, expected: ErrorKind) throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("etc"))
        try makeFile(scratch("etc/host.key"), bytes, mode: mode)
        let store = RecordStore(directory: scratch("etc"))
        #expect(errorKind { () throws(StoreError) in _ = try store.loadHostKey(tpm: TPMSettings()) } == expected)
        #expect(errorKind { () throws(StoreError) in _ = try store.loadOrCreateHostKey(tpm: TPMSettings()) } == expected)
        #expect(try contents(scratch("etc/host.key")) == bytes)
    }

    @Test("a symlinked or foreign host key is refused")
    func hostKeySymlinkOrOwner() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("etc"))
        try makeFile(scratch("key"), [UInt8](repeating: 1, count: 32))
        try makeSymlink(scratch("key"), at: scratch("etc/host.key"))
        let store = RecordStore(directory: scratch("etc"))
        #expect(errorKind { () throws(StoreError) in _ = try store.loadHostKey(tpm: TPMSettings()) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try store.loadOrCreateHostKey(tpm: TPMSettings()) } == .unsafe)
        guard unlink(scratch("etc/host.key")) == 0 else { throw SetupError(what: "unlink") }
        try makeFile(scratch("etc/host.key"), [UInt8](repeating: 1, count: 32))
        try setOwner(scratch("etc/host.key"), 65534)
        #expect(errorKind { () throws(StoreError) in _ = try store.loadHostKey(tpm: TPMSettings()) } == .unsafe)
    }
}

/// Two lowercase hex digits per byte.
private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
