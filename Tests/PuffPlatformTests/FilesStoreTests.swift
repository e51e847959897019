import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("FilesStore")
struct FilesStoreTests {
    static let start: Int64 = 1_700_000_000
    static let cheap = Argon2Parameters(memoryKiB: 8, iterations: 1)

    init() throws { try Sodium.initialize() }

    /// Options for a temp store: minimum cost, root lockable, three failures, one minute.
    private func options(_ scratch: borrowing ScratchDirectory, kdf: Argon2Parameters = cheap) -> PuffOptions {
        var options = PuffOptions()
        options.recordDirectory = scratch("etc")
        options.stateDirectory = scratch("state")
        options.kdf = kdf
        options.lockout.evenDenyRoot = true
        options.lockout.deny = 3
        options.lockout.delays = [60]
        return options
    }

    private func root() throws -> Account {
        let account = try #require(try Account.lookup("root"))
        #expect(account.uid == 0)
        return account
    }

    /// Resolves `root` and runs one attempt.
    private func attempt(_ authenticator: FilesStore, _ passcode: String) throws -> AttemptOutcome {
        let subject = try authenticator.subject(for: "root")
        return try authenticator.attempt(try secret(passcode), for: subject)
    }

    private func storedHash(_ options: PuffOptions) throws -> String {
        let record = try #require(try RecordStore(directory: options.recordDirectory).load(try root()))
        return try #require(record.passcode?.hash)
    }

    /// One attempt that also returns what it counted.
    private func countedAttempt(_ authenticator: FilesStore, _ passcode: String)
        throws -> (AttemptOutcome, CountedFailure?) {
        let subject = try authenticator.subject(for: "root")
        var counted: CountedFailure?
        let outcome = try authenticator.attempt(try secret(passcode), for: subject, counted: &counted)
        return (outcome, counted)
    }

    @Test("takeBack restores the counter the failure found, also when that failure locked")
    func takeBackRestoresTheCounterBefore() throws {
        let scratch = try ScratchDirectory()
        let clock = TestClock(Self.start)
        let authenticator = FilesStore(options: options(scratch), now: { clock.now })
        let account = try root()
        let counters = LockoutStore(directory: scratch("state"), lockWaitSeconds: 30)
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)

        #expect(try countedAttempt(authenticator, "604917").1 == nil)
        _ = try attempt(authenticator, "111111")
        _ = try attempt(authenticator, "111112")
        let before = try counters.read(account.name)
        let (outcome, counted) = try countedAttempt(authenticator, "System-password")
        #expect(outcome == .failure(failures: 3, lock: .locked(secondsLeft: 60)))
        let failure = try #require(counted)
        let locked = try counters.read(account.name)
        #expect(failure.before == before && failure.after == locked)
        #expect(try authenticator.takeBack(failure))
        // The counter the failure found, but for the attempt numbers, which only count up.
        var restored = try counters.read(account.name)
        #expect(restored.serial == locked.serial)
        restored.serial = before.serial
        #expect(restored == before)
        guard case .enrolled(let enrolled) = try authenticator.subject(for: "root") else {
            Issue.record("root is no longer enrolled")
            return
        }
        #expect(enrolled.lock == .open)
        // Taken back once: a second time removes nothing more than one failure.
        #expect(try authenticator.takeBack(failure))
        #expect(try counters.read(account.name).failures == 1)
    }

    @Test("takeBack after other failures removes one and lifts a lock only below deny")
    func takeBackAfterOtherFailures() throws {
        let scratch = try ScratchDirectory()
        let clock = TestClock(Self.start)
        let authenticator = FilesStore(options: options(scratch), now: { clock.now })
        let account = try root()
        let counters = LockoutStore(directory: scratch("state"), lockWaitSeconds: 30)
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)

        let failure = try #require(try countedAttempt(authenticator, "System-password").1)
        _ = try attempt(authenticator, "111111")
        _ = try attempt(authenticator, "111112")
        #expect(try counters.read(account.name).lockedUntil != 0)
        #expect(try authenticator.takeBack(failure))
        let after = try counters.read(account.name)
        #expect(after.failures == 2 && after.lockedUntil == 0)
        // An administrator's reset since: nothing left to take back.
        try counters.reset(account.name)
        #expect(try authenticator.takeBack(failure) == false)
        #expect(try counters.read(account.name).failures == 0)
    }

    @Test("the whole flow: success, failures, lock, refusal while locked, unlock, clear")
    func endToEnd() throws {
        let scratch = try ScratchDirectory()
        let clock = TestClock(Self.start)
        let authenticator = FilesStore(options: options(scratch), now: { clock.now })
        let account = try root()
        let counters = LockoutStore(directory: scratch("state"), lockWaitSeconds: 30)

        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)
        #expect(try attempt(authenticator, "604917") == .success(rehashed: false))
        #expect(try counters.read(account.name).failureFields == Tally())

        #expect(try attempt(authenticator, "111111") == .failure(failures: 1, lock: .open))
        clock.advance(by: 5)
        #expect(try attempt(authenticator, "604918") == .failure(failures: 2, lock: .open))
        clock.advance(by: 5)
        #expect(try attempt(authenticator, "") == .failure(failures: 3, lock: .locked(secondsLeft: 60)))
        #expect(try counters.read(account.name).failureFields
            == Tally(failures: 3, lastFailure: Self.start + 10, lockedUntil: Self.start + 70))

        // The subject already shows the lock, before any secret is read.
        guard case .enrolled(let enrolled) = try authenticator.subject(for: "root") else {
            Issue.record("root should be enrolled")
            return
        }
        #expect(enrolled.account == account)
        #expect(enrolled.record.passcode?.type == .digits6)
        #expect(enrolled.lock == .locked(secondsLeft: 60))
        #expect(enrolled.tally.failures == 3)

        clock.advance(by: 30)
        #expect(try attempt(authenticator, "604917") == .locked(.locked(secondsLeft: 30)))
        // The refused attempt is not counted.
        #expect(try counters.read(account.name).failures == 3)

        clock.advance(by: 31)
        #expect(try attempt(authenticator, "604917") == .success(rehashed: false))
        #expect(try counters.read(account.name).failureFields == Tally())
        #expect(try attempt(authenticator, "000000") == .failure(failures: 1, lock: .open))
    }

    @Test("the lock at the deny-th failure holds until exactly lockedUntil")
    func lockBoundary() throws {
        let scratch = try ScratchDirectory()
        let clock = TestClock(Self.start)
        let authenticator = FilesStore(options: options(scratch), now: { clock.now })
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: try root())
        for expected in UInt32(1)...3 {
            guard case .failure(let failures, _, _) = try attempt(authenticator, "wrong") else {
                Issue.record("expected a failure")
                return
            }
            #expect(failures == expected)
        }
        clock.advance(by: 59)
        #expect(try attempt(authenticator, "604917") == .locked(.locked(secondsLeft: 1)))
        clock.advance(by: 1)
        #expect(try attempt(authenticator, "604917") == .success(rehashed: false))
    }

    @Test("root is not locked with root_exempt, but failures are counted")
    func rootExempt() throws {
        let scratch = try ScratchDirectory()
        var lenient = options(scratch)
        lenient.lockout.evenDenyRoot = false
        let authenticator = FilesStore(options: lenient, now: { Self.start })
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: try root())
        for failures in UInt32(1)...4 {
            #expect(try attempt(authenticator, "wrong") == .failure(failures: failures, lock: .open))
        }
        #expect(try attempt(authenticator, "604917") == .success(rehashed: false))
    }

    @Test("a cost change rehashes on the next success")
    func rehash() throws {
        let scratch = try ScratchDirectory()
        let clock = TestClock(Self.start)
        let before = options(scratch)
        try FilesStore(options: before, now: { clock.now })
            .storePasscode(try secret("correct horse"), type: .alphanumeric, for: try root())
        let oldHash = try storedHash(before)
        #expect(try Argon2Parameters.parse(oldHash) == Self.cheap)

        let after = options(scratch, kdf: Argon2Parameters(memoryKiB: 16, iterations: 2))
        let upgraded = FilesStore(options: after, now: { clock.now })
        // A wrong passcode does not rehash.
        #expect(try attempt(upgraded, "wrong horse") == .failure(failures: 1, lock: .open))
        #expect(try storedHash(after) == oldHash)

        #expect(try attempt(upgraded, "correct horse") == .success(rehashed: true))
        let newHash = try storedHash(after)
        #expect(newHash != oldHash)
        #expect(try Argon2Parameters.parse(newHash) == Argon2Parameters(memoryKiB: 16, iterations: 2))
        let record = try #require(try RecordStore(directory: after.recordDirectory).load(try root()))
        #expect(record.passcode?.type == .alphanumeric)
        #expect(try attempt(upgraded, "correct horse") == .success(rehashed: false))
        // The old cost sees a rehash again.
        #expect(try attempt(FilesStore(options: before, now: { clock.now }), "correct horse") == .success(rehashed: true))
        #expect(try Argon2Parameters.parse(try storedHash(before)) == Self.cheap)
    }

    @Test("storePasscode replaces the passcode and keeps one host key")
    func replacePasscode() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: try root())
        let key = try contents(scratch("etc/host.key"))
        try authenticator.storePasscode(try secret("5839"), type: .digits4, for: try root())
        #expect(try contents(scratch("etc/host.key")) == key)
        #expect(try attempt(authenticator, "604917") == .failure(failures: 1, lock: .open))
        #expect(try attempt(authenticator, "5839") == .success(rehashed: false))
        #expect(try RecordStore(directory: scratch("etc")).load(try root())?.passcode?.type == .digits4)
    }

    @Test("removeEnrollment removes the record and clears the counter")
    func removeEnrollment() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        let account = try root()
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)
        #expect(try attempt(authenticator, "wrong") == .failure(failures: 1, lock: .open))

        #expect(try authenticator.removeEnrollment(of: account.name) == true)
        #expect(try RecordStore(directory: scratch("etc")).load(account) == nil)
        #expect(try LockoutStore(directory: scratch("state"), lockWaitSeconds: 30).read(account.name).failureFields == Tally())
        #expect(try authenticator.removeEnrollment(of: account.name) == false)
        guard case .notEnrolled(let reason) = try authenticator.subject(for: "root") else {
            Issue.record("root should no longer be enrolled")
            return
        }
        #expect(reason == "no Puff record")
        #expect(try attempt(authenticator, "604917") == .notEnrolled)
    }

    /// One attempt as the module makes it, with the counted failure.
    private func attempt(_ store: FilesStore, _ name: String, _ passcode: String) throws -> (AttemptOutcome, CountedFailure?) {
        var counted: CountedFailure?
        let outcome = try store.attempt(try secret(passcode), for: try store.subject(for: name), counted: &counted)
        return (outcome, counted)
    }

    @Test("the files store's state and outcomes read back the same through a helper's report")
    func stateThroughReport() throws {
        let scratch = try ScratchDirectory()
        let store = FilesStore(options: options(scratch), now: { Self.start })
        let account = try root()
        let unenrolled = try store.subject(for: "root")
        #expect(unenrolled.state == .notEnrolled("no Puff record") && unenrolled.account == nil)
        #expect(try attempt(store, "root", "604917").0 == .notEnrolled)

        try store.storePasscode(try secret("604917"), type: .digits6, for: account)
        let subject = try store.subject(for: "root")
        let state = subject.state
        #expect(state == CredentialState(notEnrolledReason: nil, lock: .open,
                                         acceptance: .passcodeOnly(.digits6, because: nil), failures: 0))
        #expect(subject.account?.uid == 0)
        // What puff-check would send for this state reads back as the same state.
        #expect(try HelperReport.state(status: HelperExit.success, output: HelperReport(state).encoded(),
                                       helper: "puff-check") == state)
        let (wrong, counted) = try attempt(store, "root", "111111")
        #expect(wrong == .failure(failures: 1, lock: .open))
        #expect(counted?.after.failures == 1)
        let report = HelperReport(wrong, before: state)
        #expect(report.exitStatus == HelperExit.refused)
        #expect(try HelperReport.outcome(status: report.exitStatus, output: report.encoded(), helper: "puff-check")
                == .failure(failures: 1, lock: .open, detail: HelperReport.failureDetail))
        let (right, none) = try attempt(store, "root", "604917")
        #expect(right == .success(rehashed: false) && none == nil)
        #expect(try store.subject(for: "root").state.failures == 0)
    }

    @Test("subjects that are not enrolled, and their attempts")
    func notEnrolled() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        for (name, expected) in [("../x", "invalid user name"), ("a b", "invalid user name"),
                                 ("puff-no-such-user", "no such account"), ("root", "no Puff record")] {
            let subject = try authenticator.subject(for: name)
            guard case .notEnrolled(let reason) = subject else {
                Issue.record("\(name) should not be enrolled")
                continue
            }
            #expect(reason == expected)
            #expect(try authenticator.attempt(try secret("604917"), for: subject) == .notEnrolled)
        }
        // Nothing is created for users who are not enrolled.
        #expect(try directoryNames(scratch.path) == [])
    }

    @Test("an enrolled subject whose host key disappeared fails closed")
    func missingHostKey() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: try root())
        let subject = try authenticator.subject(for: "root")
        guard unlink(scratch("etc/host.key")) == 0 else { throw SetupError(what: "unlink") }
        let passcode = try secret("604917")
        #expect(errorKind { () throws(StoreError) in _ = try authenticator.attempt(passcode, for: subject) } == .unsafe)
    }

    @Test("a record for another uid fails closed")
    func recordForAnotherUid() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        let impostor = Account(name: try root().name, uid: 4242)
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: impostor)
        #expect(errorKind { () throws(StoreError) in _ = try authenticator.subject(for: "root") } == .wrongOwner)
    }

    @Test("a gesture drawn on another picture size is refused even when its rescaled shape matches")
    func anotherPictureSizeIsRefused() throws {
        let wire = "puff-gesture:1:400x300:p 10,10 200,10 200,200;t 300,80"
        let template = try GestureEnroller.build(from: try GestureWire.parse(Array(wire.utf8)),
                                                 parameters: try PuffOptions().gestureParameters())
        func problem(_ text: String) throws -> String? {
            try Array(text.utf8).withUnsafeBytes { buffer throws(StoreError) -> String? in
                AttemptEngine.gestureProblem(try SecureBytes(copying: buffer), template)
            }
        }
        #expect(try problem(wire) == nil)
        // The same drawing at twice the size: matched rescaled (for the time it costs), refused.
        let doubled = "puff-gesture:1:800x600:p 20,20 400,20 400,400;t 600,160"
        #expect(try problem(doubled) == "gesture rejected: pictureSizeMismatch")
    }

    @Test("a gesture enrollment killed between its record and its picture is finished by the next login")
    func stagedPicture() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        let account = try root()
        let records = RecordStore(directory: scratch("etc"))
        let wire = Array("puff-gesture:1:400x300:p 10,10 200,10 200,200;t 300,80".utf8)
        let template = try GestureEnroller.build(from: try GestureWire.parse(wire),
                                                 parameters: try PuffOptions().gestureParameters())
        let first: [UInt8] = [0x89, 0x50, 1, 2, 3], second: [UInt8] = [0x89, 0x50, 9, 9, 9]
        try authenticator.storeGesture(template, picture: first, for: account)
        #expect(try records.loadPicture(account.name) == first)
        #expect(!(try directoryNames(scratch("etc/pictures"))).contains(".next-root"))
        // What a kill after the record's rename leaves: the new record, its picture staged.
        try records.stagePicture(second, for: account.name)
        var record = try #require(try records.load(account))
        let gesture = try #require(record.gesture)
        record.gesture = StoredGesture(pictureWidth: gesture.pictureWidth, pictureHeight: gesture.pictureHeight,
                                       pictureSHA256: SHA256.hex(second), sealedTemplate: gesture.sealedTemplate)
        try records.save(record)
        #expect(try records.loadPicture(account.name) == first)
        _ = try authenticator.subject(for: "root")
        #expect(try records.loadPicture(account.name) == second)
        #expect(!(try directoryNames(scratch("etc/pictures"))).contains(".next-root"))
        // A staged picture whose record never committed is left alone and never shown.
        try records.stagePicture(first, for: account.name)
        _ = try authenticator.subject(for: "root")
        #expect(try records.loadPicture(account.name) == second)
    }

    @Test("a version-2 gesture template logs in by the version-2 rules and is migrated to version 3 by that success")
    func versionTwoMigrates() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch), now: { Self.start })
        let account = try root()
        // A version-2 template stores each path as 32 points along it.
        func line(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double) -> GesturePart {
            GesturePart(kind: .path, points: (0..<32).map {
                GesturePoint(x: x0 + (x1 - x0) * Double($0) / 31, y: y0 + (y1 - y0) * Double($0) / 31)
            })
        }
        func gesture(tapX: Double) -> Gesture {
            Gesture(width: 1000, height: 750, parts: [line(100, 600, 410, 383), GesturePart(kind: .tap, points: [GesturePoint(x: tapX, y: 300)]),
                                                      line(850, 155, 850, 558)])
        }
        let drawn = gesture(tapX: 650)
        let wire = String(decoding: GestureWire.serialize(drawn), as: UTF8.self)
        let old = try GestureTemplate(width: 1000, height: 750, settings: .standard, parts: drawn.parts, spreads: [0, 0, 0])
        #expect(old.version == 2)
        try authenticator.storeGesture(old, picture: [0x89, 0x50, 1, 2, 3], for: account)
        // The tap 45 px off: version 2 refuses it (place), and nothing is migrated by a failure.
        let far = String(decoding: GestureWire.serialize(gesture(tapX: 695)), as: UTF8.self)
        guard case .failure = try attempt(authenticator, far) else {
            Issue.record("a version-2 template accepted a tap 45 px off")
            return
        }
        #expect(try #require(try authenticator.openGesture(of: account)).template.version == 2)
        #expect(try attempt(authenticator, wire) == .success(rehashed: true))
        let migrated = try #require(try authenticator.openGesture(of: account)).template
        #expect(migrated.version == 4)
        #expect(migrated == old.upgraded())
        // Every later success learns from the login and stores the template again.
        #expect(try attempt(authenticator, wire) == .success(rehashed: true))
        #expect(try #require(try authenticator.openGesture(of: account)).template.learning?.logins == 1)
    }

    @Test("a version-1 gesture template logs in and is migrated to version 4 by that success")
    func versionOneMigrates() throws {
        let scratch = try ScratchDirectory()
        var debugOptions = options(scratch)
        debugOptions.debug = true
        let authenticator = FilesStore(options: debugOptions, now: { Self.start })
        let account = try root()
        let wire = "puff-gesture:1:400x300:p 10,10 200,10 200,200;t 300,80"
        let old = try GestureEnroller.build(from: try GestureWire.parse(Array(wire.utf8)))
        #expect(old.version == 1)
        try authenticator.storeGesture(old, picture: [0x89, 0x50, 1, 2, 3], for: account)
        #expect(try attempt(authenticator, wire) == .success(rehashed: true))
        let migrated = try #require(try authenticator.openGesture(of: account)).template
        #expect(migrated.version == 4)
        #expect(migrated == old.upgraded())
        // Every later success learns from the login and stores the template again.
        #expect(try attempt(authenticator, wire) == .success(rehashed: true))
        #expect(try #require(try authenticator.openGesture(of: account)).template.learning?.logins == 1)
        // With debug the log detail names the failing part and rule, and no coordinate.
        let outcome = try attempt(authenticator, "puff-gesture:1:400x300:p 10,10 200,10 200,200;t 360,80")
        guard case .failure(_, _, let detail) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(detail == "gesture did not match (part 2: tap distance)")
    }
}


extension Tally {
    /// Only the failure run (the quick-factor fields change with every passcode success).
    var failureFields: Tally { Tally(failures: failures, lastFailure: lastFailure, lockedUntil: lockedUntil) }
}
