import PuffCore
import Testing

@Suite("QuickFactorPolicy")
struct QuickFactorPolicyTests {
    static let boot = "0123456789abcdef0123456789abcdef"
    static let now: Int64 = 1_700_000_000
    static let hash = "$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"

    /// A tally whose passcode succeeded `age` seconds ago in this boot.
    static func trusted(age: Int64 = 60) -> Tally {
        var tally = Tally()
        tally.passcodeAt = now - age
        tally.passcodeBoot = boot
        return tally
    }

    @Test("the reasons, in their order of precedence")
    func reasons() {
        let policy = QuickFactorPolicy()
        #expect(policy.passcodeReason(Self.trusted(), bootID: Self.boot, now: Self.now) == nil)
        var tally = Self.trusted()
        tally.gestureFailures = 4
        #expect(policy.passcodeReason(tally, bootID: Self.boot, now: Self.now) == nil)
        tally.gestureFailures = 5
        #expect(policy.passcodeReason(tally, bootID: Self.boot, now: Self.now) == .gestureFailures(5))
        tally.adminLock = true
        #expect(policy.passcodeReason(tally, bootID: Self.boot, now: Self.now) == .administrator)
        #expect(policy.passcodeReason(Self.trusted(), bootID: "ffffffffffffffffffffffffffffffff", now: Self.now) == .restarted)
        #expect(policy.passcodeReason(Self.trusted(), bootID: nil, now: Self.now) == .restarted)
        #expect(policy.passcodeReason(Tally(), bootID: Self.boot, now: Self.now) == .restarted)
    }

    @Test("the interval: exactly 48 hours is still trusted, one second more is not, a clock set back is not")
    func interval() {
        let policy = QuickFactorPolicy()
        #expect(policy.passcodeReason(Self.trusted(age: 172_800), bootID: Self.boot, now: Self.now) == nil)
        #expect(policy.passcodeReason(Self.trusted(age: 172_801), bootID: Self.boot, now: Self.now) == .unused(interval: 172_800))
        #expect(policy.passcodeReason(Self.trusted(age: -10), bootID: Self.boot, now: Self.now) == .unused(interval: 172_800))
        var off = policy
        off.passcodeInterval = 0
        #expect(off.passcodeReason(Self.trusted(age: 10_000_000), bootID: Self.boot, now: Self.now) == nil)
    }

    @Test("each rule can be turned off")
    func switches() {
        var policy = QuickFactorPolicy()
        policy.gestureTries = 0
        policy.passcodeAfterReboot = false
        var tally = Self.trusted()
        tally.gestureFailures = 1000
        #expect(policy.passcodeReason(tally, bootID: nil, now: Self.now) == nil)
        tally.adminLock = true
        #expect(policy.passcodeReason(tally, bootID: nil, now: Self.now) == .administrator)
    }

    @Test("acceptance by enrolled factors")
    func acceptance() throws {
        let policy = QuickFactorPolicy()
        let gesture = StoredGesture(pictureWidth: 400, pictureHeight: 300, pictureSHA256: String(repeating: "0", count: 64),
                                    sealedTemplate: "AAAA")
        let passcode = StoredPasscode(type: .digits4, hash: Self.hash)
        let name = try #require(UserName("alice"))
        let both = UserRecord(user: name, uid: 1000, passcode: passcode, gesture: gesture)
        let passcodeOnly = UserRecord(user: name, uid: 1000, passcode: passcode)
        let gestureOnly = UserRecord(user: name, uid: 1000, passcode: nil, gesture: gesture)
        var locked = Self.trusted()
        locked.adminLock = true

        #expect(policy.acceptance(of: both, Self.trusted(), bootID: Self.boot, now: Self.now) == .passcodeOrGesture(.digits4))
        #expect(policy.acceptance(of: both, locked, bootID: Self.boot, now: Self.now) == .passcodeOnly(.digits4, because: .administrator))
        #expect(policy.acceptance(of: passcodeOnly, Self.trusted(), bootID: Self.boot, now: Self.now) == .passcodeOnly(.digits4, because: nil))
        #expect(policy.acceptance(of: gestureOnly, Tally(), bootID: nil, now: Self.now) == .gestureOnly)
        #expect(policy.acceptance(of: gestureOnly, locked, bootID: Self.boot, now: Self.now) == .refused(.administrator))
    }

    @Test("prompts and messages are the contract's")
    func texts() {
        #expect(Acceptance.passcodeOrGesture(.digits6).prompt == "Puff passcode or gesture [6 digits]: ")
        #expect(Acceptance.passcodeOnly(.numeric, because: .restarted).prompt == "Puff passcode [digits]: ")
        #expect(Acceptance.gestureOnly.prompt == "Puff gesture: ")
        #expect(Acceptance.unenrolled.prompt == "Puff passcode [6 digits]: ")
        #expect(PasscodeReason.gestureFailures(1).text == "the gesture failed 1 time in a row")
        #expect(PasscodeReason.unused(interval: 172_800).text == "the passcode was last used more than 48 hours ago")
        #expect(PasscodeReason.unused(interval: 7 * 86400).text == "the passcode was last used more than 7 days ago")
        #expect(DurationText.words(90) == "90 seconds")
        #expect(DurationText.words(3600) == "60 minutes")
    }

    @Test("boot ids: the kernel's dashed form becomes 32 hex digits; anything else is refused", arguments: [
        ("01234567-89ab-cdef-0123-456789abcdef\n", "0123456789abcdef0123456789abcdef"),
        ("01234567-89ab-cdef-0123-456789abcdef", "0123456789abcdef0123456789abcdef"),
        ("01234567-89AB-cdef-0123-456789abcdef\n", nil),
        ("01234567-89ab-cdef-0123-456789abcde\n", nil),
        ("01234567-89ab-cdef-0123-456789abcdef0\n", nil),
        ("\n", nil),
        ("01234567-89ab-cdef-0123-456789abcdef\n\n", nil),
    ] as [(String, String?)])
    func bootIDs(text: String, expected: String?) {
        #expect(BootID.canonical(Array(text.utf8)) == expected)
    }
}
