import PuffCore
import PuffPlatform
import Testing

@Suite("SecureBytes")
struct SecureBytesTests {
    init() throws { try Sodium.initialize() }

    @Test("a new buffer is zeroed and has the asked size")
    func zeroed() throws {
        let bytes = try SecureBytes(count: 48)
        #expect(bytes.count == 48)
        #expect(plain(bytes) == [UInt8](repeating: 0, count: 48))
        let empty = try SecureBytes(count: 0)
        #expect(empty.count == 0)
        #expect(plain(empty) == [])
    }

    @Test("impossible sizes throw instead of trapping", arguments: [-1, Int.min, (1 << 24) + 1, Int.max])
    func impossibleSizes(count: Int) {
        #expect(errorKind { () throws(StoreError) in _ = try SecureBytes(count: count) } == .crypto)
    }

    @Test("copying keeps the bytes, and the copy is independent")
    func copying() throws {
        let source: [UInt8] = [1, 2, 3, 250, 0, 9]
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: source.count, alignment: 1)
        defer { raw.deallocate() }
        raw.copyBytes(from: source)
        var copy = try SecureBytes(copying: UnsafeRawBufferPointer(raw))
        #expect(copy.count == 6)
        #expect(plain(copy) == source)
        copy.withMutableBytes { $0[0] = 42 }
        #expect(plain(copy) == [42, 2, 3, 250, 0, 9])
        #expect(source == [1, 2, 3, 250, 0, 9])
        let none = try SecureBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(none.count == 0)
    }

    @Test("constantTimeEquals compares content and length")
    func equality() throws {
        let a = try secret("correct horse")
        #expect(a.constantTimeEquals(try secret("correct horse")))
        #expect(!a.constantTimeEquals(try secret("correct horsE")))
        #expect(!a.constantTimeEquals(try secret("Correct horse")))
        #expect(!a.constantTimeEquals(try secret("correct hors")))
        #expect(!a.constantTimeEquals(try secret("correct horse ")))
        #expect(!a.constantTimeEquals(try secret("")))
        #expect(try secret("").constantTimeEquals(try secret("")))
        #expect(a.constantTimeEquals(a) == true)
    }

    @Test("hasPrefix")
    func prefixCheck() throws {
        let gesture = try secret("puff-gesture:0,1,2")
        #expect(gesture.hasPrefix(PasscodeRules.gesturePrefix) == true)
        #expect(gesture.hasPrefix(Array("puff-gesture:0,1,2".utf8)) == true)
        #expect(gesture.hasPrefix([]) == true)
        #expect(gesture.hasPrefix(Array("puff-gesture:0,1,2,".utf8)) == false)
        #expect(gesture.hasPrefix(Array("puff-Gesture:".utf8)) == false)
        #expect(!(try secret("puff-gesture")).hasPrefix(PasscodeRules.gesturePrefix))
        #expect(!(try secret("")).hasPrefix([0]))
    }

    @Test("prefix copies the first bytes, at most all of them")
    func prefix() throws {
        let bytes = try secret([10, 20, 30, 40])
        #expect(plain(try bytes.prefix(2)) == [10, 20])
        #expect(plain(try bytes.prefix(4)) == [10, 20, 30, 40])
        #expect(plain(try bytes.prefix(100)) == [10, 20, 30, 40])
        #expect(plain(try bytes.prefix(0)) == [])
        var copy = try bytes.prefix(3)
        copy.withMutableBytes { $0[0] = 99 }
        #expect(plain(bytes) == [10, 20, 30, 40])
    }

    @Test("fillRandom fills the whole buffer, differently each time")
    func random() throws {
        var first = try SecureBytes(count: 32)
        var second = try SecureBytes(count: 32)
        Sodium.fillRandom(&first)
        Sodium.fillRandom(&second)
        #expect(first.constantTimeEquals(second) == false)
        #expect(plain(first) != [UInt8](repeating: 0, count: 32))
    }

    @Test("randomHex gives lowercase hex of the asked length")
    func randomHex() {
        let hex = Sodium.randomHex(byteCount: 8)
        #expect(hex.count == 16)
        #expect(hex.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(Sodium.randomHex(byteCount: 8) != hex)
        #expect(Sodium.randomHex(byteCount: 0) == "")
    }
}

@Suite("PasscodeHasher")
struct PasscodeHasherTests {
    static let cheap = Argon2Parameters(memoryKiB: 8, iterations: 1)
    let hasher = PasscodeHasher(cost: cheap)
    let alice = UserName("alice")!
    let bob = UserName("bob")!

    init() throws { try Sodium.initialize() }

    private func prehash(_ passcode: String, user: UserName? = nil, uid: UInt32 = 1000,
                         key: UInt8 = 0x5a) throws -> SecureBytes {
        try hasher.prehash(try secret(passcode), user: user ?? alice, uid: uid, hostKey: try hostKey(key))
    }

    @Test("hash then verify the same passcode")
    func roundTrip() throws {
        let stored = try hasher.hash(try prehash("604917"))
        #expect(try Argon2Parameters.parse(stored) == Self.cheap)
        #expect(stored.hasPrefix("$argon2id$v=19$m=8,t=1,p=1$"))
        #expect(try hasher.verify(try prehash("604917"), against: stored))
    }

    @Test("two hashes of one passcode differ (random salt) and both verify")
    func salted() throws {
        let first = try hasher.hash(try prehash("604917"))
        let second = try hasher.hash(try prehash("604917"))
        #expect(first != second)
        #expect(try hasher.verify(try prehash("604917"), against: second))
    }

    @Test("a wrong passcode, user, uid or host key does not verify")
    func mismatches() throws {
        let stored = try hasher.hash(try prehash("604917"))
        #expect(try !hasher.verify(try prehash("604918"), against: stored))
        #expect(try !hasher.verify(try prehash("60491"), against: stored))
        #expect(try !hasher.verify(try prehash(""), against: stored))
        #expect(try !hasher.verify(try prehash("604917", user: bob), against: stored))
        #expect(try !hasher.verify(try prehash("604917", uid: 1001), against: stored))
        #expect(try !hasher.verify(try prehash("604917", uid: 0), against: stored))
        #expect(try !hasher.verify(try prehash("604917", key: 0x5b), against: stored))
        #expect(try hasher.verify(try prehash("604917"), against: stored))
    }

    @Test("the prehash is 32 bytes, deterministic, and binds every input")
    func prehashBinding() throws {
        let base = try prehash("604917")
        #expect(base.count == PasscodeHasher.keyLength)
        #expect(base.constantTimeEquals(try prehash("604917")))
        #expect(!base.constantTimeEquals(try prehash("604918")))
        #expect(!base.constantTimeEquals(try prehash("604917", user: bob)))
        #expect(!base.constantTimeEquals(try prehash("604917", uid: 1001)))
        #expect(!base.constantTimeEquals(try prehash("604917", key: 0)))
        // The NUL separator keeps name and passcode apart: "ab"+"c" is not "a"+"bc".
        let split1 = try hasher.prehash(try secret("c"), user: UserName("ab")!, uid: 1, hostKey: try hostKey(1))
        let split2 = try hasher.prehash(try secret("bc"), user: UserName("a")!, uid: 1, hostKey: try hostKey(1))
        #expect(split1.constantTimeEquals(split2) == false)
    }

    @Test("a host key of the wrong length is refused", arguments: [16, 31, 33, 64])
    func wrongKeyLength(length: Int) throws {
        let key = try secret([UInt8](repeating: 1, count: length))
        let passcode = try secret("604917")
        #expect(errorKind { () throws(StoreError) in
            _ = try hasher.prehash(passcode, user: alice, uid: 1, hostKey: key)
        } == .crypto)
    }

    @Test("the dummy hash never verifies and parses at the current cost")
    func dummyHash() throws {
        let dummy = hasher.dummyHash
        #expect(try Argon2Parameters.parse(dummy) == Self.cheap)
        #expect(try !hasher.verify(try prehash("604917"), against: dummy))
        #expect(try !hasher.verify(try prehash(""), against: dummy))
        // libsodium parses it at this cost (an unparsable string always "needs rehash").
        #expect(!hasher.needsRehash(dummy))
        #expect(PasscodeHasher(cost: Argon2Parameters(memoryKiB: 16, iterations: 1)).needsRehash(dummy))
        #expect(PasscodeHasher(cost: Argon2Parameters(memoryKiB: 8, iterations: 2)).needsRehash(dummy))
        let defaults = PasscodeHasher(cost: PuffOptions().kdf)
        #expect(!defaults.needsRehash(defaults.dummyHash))
        #expect(try Argon2Parameters.parse(defaults.dummyHash) == PuffOptions().kdf)
    }

    @Test("needsRehash follows the cost")
    func needsRehash() throws {
        let stored = try hasher.hash(try prehash("604917"))
        #expect(!hasher.needsRehash(stored))
        #expect(PasscodeHasher(cost: Argon2Parameters(memoryKiB: 16, iterations: 1)).needsRehash(stored))
        #expect(PasscodeHasher(cost: Argon2Parameters(memoryKiB: 8, iterations: 2)).needsRehash(stored))
        #expect(hasher.needsRehash("not a hash"))
    }

    @Test("a stored string with absurd costs throws instead of running", arguments: [
        "m=4194304,t=1,p=1", "m=8,t=1000000,p=1", "m=8,t=1,p=4",
    ])
    func absurdCosts(costs: String) throws {
        let stored = "$argon2id$v=19$\(costs)$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"
        let attempt = try prehash("604917")
        #expect(errorKind { () throws(StoreError) in _ = try hasher.verify(attempt, against: stored) } == .crypto)
    }

    @Test("a malformed stored string throws", arguments: ["", "$2b$12$abcdefghijk", "$argon2i$v=19$m=8,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"])
    func malformedStored(stored: String) throws {
        let attempt = try prehash("604917")
        #expect(errorKind { () throws(StoreError) in _ = try hasher.verify(attempt, against: stored) } == .crypto)
    }
}
