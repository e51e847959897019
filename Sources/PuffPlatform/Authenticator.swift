import Glibc
import PuffCore

/// The authentication flow shared by everything that checks a secret: look the user up,
/// consult the lockout, count the attempt before the slow check, verify, clear on success.
/// It knows nothing of PAM; the caller owns the conversation and maps the outcomes.
///
/// The store's directories are opened once per authenticator (its `session`) and reached
/// through their descriptors from then on: make one per login, helper run or command.
public struct Authenticator {
    /// The effective options.
    public let options: PuffOptions
    /// The wall clock, injectable for tests.
    public let now: () -> Int64
    /// What this operation holds open of the store and the state directory.
    public let session: StoreSession

    /// Creates an authenticator; `session` may already hold the configuration's directory.
    /// Every refusal costs the same work, whatever the account, its state and the reply's
    /// kind: one argon2id (the real one, or a dummy) and one counter write (the real count, or
    /// `LockoutStore.writeDecoy`). Set for a discreet service, where the caller is not the user
    /// (the module as root for sshd or login; the helper's service calls), so neither the time
    /// nor the disk tells who is enrolled, locked or asked for the passcode (issue 27, item 2).
    public var evenRefusals = false

    public init(options: PuffOptions, session: StoreSession = StoreSession(),
                now: @escaping () -> Int64 = Clock.wallSeconds) {
        self.options = options
        self.session = session
        self.now = now
    }

    package var records: RecordStore { RecordStore(directory: options.recordDirectory, session: session) }
    package var counters: LockoutStore {
        LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds, session: session)
    }
    package var hasher: PasscodeHasher { PasscodeHasher(cost: options.kdf) }

    /// Who is asking, as far as the store can tell before any secret is read.
    public enum Subject: Sendable {
        /// No usable account or no record: the attempt runs against a dummy hash and fails.
        case notEnrolled(reason: String)
        /// An enrolled user and what the store says before the prompt.
        case enrolled(Enrolled)

        /// Which factor the prompt offers (users without a record see the common prompt).
        public var acceptance: Acceptance {
            switch self {
            case .notEnrolled: .unenrolled
            case .enrolled(let enrolled): enrolled.acceptance
            }
        }
    }

    /// An enrolled user as read before the prompt (the attempt reads record and counter
    /// again under the lock).
    public struct Enrolled: Sendable {
        /// The account.
        public var account: Account
        /// The record.
        public var record: UserRecord
        /// The counter as read.
        public var tally: Tally
        /// Whether the lockout allows an attempt now.
        public var lock: LockStatus
        /// Which factor is accepted now.
        public var acceptance: Acceptance

        package init(account: Account, record: UserRecord, tally: Tally, lock: LockStatus, acceptance: Acceptance) {
            (self.account, self.record, self.tally, self.lock, self.acceptance) = (account, record, tally, lock, acceptance)
        }
    }

    /// Resolves `userName` (raw, as the application gave it) to a subject in the files store.
    public func subject(for userName: String) throws(StoreError) -> Subject {
        let resolved = try Self.resolving(userName) { account throws(StoreError) in try self.subject(of: account) }
        readDecoyState(for: resolved)
        return resolved
    }

    /// With `evenRefusals`, for a name with no record (or no account): the reads an enrolled
    /// account's state costs before the prompt — a counter file and the boot id — done to a
    /// decoy counter, so the time to the prompt does not tell who is enrolled (issue 27,
    /// item 2). Its errors change nothing.
    package func readDecoyState(for subject: Subject) {
        guard evenRefusals, case .notEnrolled = subject else { return }
        _ = try? counters.readDecoy()
        _ = bootID()
    }

    /// The account of `userName` handed to `body`, or the reason there is none.
    package static func resolving(_ userName: String, _ body: (Account) throws(StoreError) -> Subject) throws(StoreError) -> Subject {
        guard UserName(userName) != nil else { return .notEnrolled(reason: "invalid user name") }
        guard let account = try Account.lookup(userName) else { return .notEnrolled(reason: "no such account") }
        return try body(account)
    }

    /// The subject of an account already looked up, in the files store.
    @inline(never)
    public func subject(of account: Account) throws(StoreError) -> Subject {
        guard let record = try records.load(account), record.hasAnyFactor else {
            return .notEnrolled(reason: "no Puff record")
        }
        // Finishes a gesture enrollment that was killed between its record and its picture.
        if let gesture = record.gesture {
            try records.settlePicture(for: account.name, expectedSHA256: gesture.pictureSHA256)
        }
        let tally = try counters.read(account.name)
        let time = now()
        return .enrolled(Enrolled(account: account, record: record, tally: tally,
                                  lock: options.lockout.status(of: tally, now: time, isRoot: account.uid == 0),
                                  acceptance: options.quickFactor.acceptance(of: record, tally, bootID: bootID(), now: time)))
    }

    /// What an attempt came to.
    public enum Outcome: Equatable, Sendable {
        /// Verified; `rehashed` when the stored hash was upgraded to the current cost.
        case success(rehashed: Bool)
        /// Wrong secret; the failure is counted and `lock` is the state it leaves. `detail`
        /// says why, for the log (never the secret): empty for a wrong passcode.
        case failure(failures: UInt32, lock: LockStatus, detail: String = "")
        /// Refused without verifying, because the user is locked.
        case locked(LockStatus)
        /// A gesture was refused without verifying, because only the passcode is accepted
        /// now; not counted.
        case passcodeRequired(PasscodeReason)
        /// Not enrolled; the dummy verification ran.
        case notEnrolled
    }

    /// A failure this process counted, as `attempt(_:for:counted:)` wrote it: what
    /// `takeBack(_:)` needs to undo it (the module's `authsucc` line).
    public struct CountedFailure: Equatable, Sendable {
        /// The user.
        public var user: UserName
        /// The counter before the failure was counted.
        public var before: Tally
        /// The counter as the failure left it (its `serial` numbers the attempt).
        public var after: Tally
        /// Fleet mode: the failure was also counted in the directory (PuffFleet/FleetStore.swift).
        public var countedInDirectory = false

        package init(user: UserName, before: Tally, after: Tally, countedInDirectory: Bool = false) {
            (self.user, self.before, self.after, self.countedInDirectory) = (user, before, after, countedInDirectory)
        }
    }

    /// `attempt(_:for:asProofForChange:counted:)` without the counted failure.
    public func attempt(_ passcode: borrowing SecureBytes, for subject: Subject,
                        asProofForChange: Bool = false) throws(StoreError) -> Outcome {
        var counted: CountedFailure?
        return try attempt(passcode, for: subject, asProofForChange: asProofForChange, counted: &counted)
    }

    /// One attempt with `passcode` for `subject` in the files store: the engine
    /// (`run`, AttemptEngine.swift) over the local counter file.
    public func attempt(_ passcode: borrowing SecureBytes, for subject: Subject, asProofForChange: Bool = false,
                             counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        countedFailure = nil
        switch subject {
        case .notEnrolled:
            let key = try dummyKey()
            if evenRefusals {
                try writeDecoy()
                try runDummyGestureMatch(passcode, key: key)
            }
            try runDummyVerification(passcode, key: key)
            return .notEnrolled
        case .enrolled(let enrolled):
            let counter = FilesCounter(self, account: enrolled.account, isGesture: passcode.hasPrefix(GestureWire.prefix))
            return try run(passcode, counter, for: enrolled.account, asProofForChange: asProofForChange, counted: &countedFailure)
        }
    }

    /// The host key, which peppers passcode hashes and seals gesture templates; missing while
    /// a record exists is an error. The one place the host key is loaded for an attempt: from
    /// `host.key`, or unsealed by the TPM in tpm mode (StoreKey.swift).
    package func hostKey() throws(StoreError) -> SecureBytes {
        guard let hostKey = try records.loadHostKey(tpm: options.tpm) else {
            throw .unsafe(path: options.recordDirectory + "/host.key", reason: "missing while records exist")
        }
        return hostKey
    }

    /// Step 3's write of the local counter, the same for the files store and for fleet mode
    /// online and offline: the failures counted before the attempt numbered `serial` cleared,
    /// and a passcode's success recorded.
    package func settleCounter(_ tally: inout Tally, of serial: UInt64, passcodeUsed: Bool, at started: Int64,
                       _ save: LockoutStore.Writer) throws(StoreError) {
        var next = tally.settlingSuccess(of: serial, deny: options.lockout.deny) ?? tally
        if passcodeUsed { next = Self.passcodeUsed(next, at: started, boot: bootID()) }
        guard next != tally else { return }
        // Not waited for on disk: a crash that loses this write leaves the counter as step 1
        // wrote it (this attempt counted as a failure, the passcode's time and an
        // administrator's lock as they were), which is stricter, never laxer.
        try save.lowering(next)
        tally = next
    }

    /// Takes back the attempt numbered `serial` (counted, but its secret was never compared),
    /// unless a success or a reset has cleared it already.
    @inline(never)
    package func takeBack(_ serial: UInt64, for name: UserName) throws(StoreError) {
        let deny = options.lockout.deny
        try counters.update(name) { tally, save throws(StoreError) in
            guard serial > tally.clearedSerial, tally.failures > 0, !tally.isDamaged else { return }
            var next = tally
            next.failures -= 1
            if deny == 0 || next.failures < deny { next.lockedUntil = 0 }
            try save(next)
            tally = next
        }
    }

    /// Runs `check` (a proof that is not a Puff secret, such as the system password before a
    /// first enrollment) as a counted attempt: refused while locked, counted before the check
    /// (which runs without the lock). A success only takes its own attempt back: it never
    /// clears earlier failures, so no other secret can lift a Puff lockout.
    @inline(never)
    public func countedAttempt(for account: Account, _ check: () throws(StoreError) -> Bool) throws(StoreError) -> Outcome {
        let isRoot = account.uid == 0
        let started = now()
        let (status, counted) = try counters.update(account.name) { tally, save throws(StoreError) -> (LockStatus, Tally) in
            let status = options.lockout.status(of: tally, now: started, isRoot: isRoot)
            guard status == .open else { return (status, tally) }
            tally = options.lockout.recordingFailure(in: tally, now: started)
            try save(tally)
            return (status, tally)
        }
        guard status == .open else { return .locked(status) }
        guard try check() else {
            return .failure(failures: counted.failures,
                            lock: options.lockout.status(of: counted, now: started, isRoot: isRoot),
                            detail: "wrong system password")
        }
        try takeBack(counted.serial, for: account.name)
        return .success(rehashed: false)
    }

    /// Undoes `failure` after another module accepted the same secret as the system password
    /// (the module's `authsucc` line): when the counter is still what the failure left, it
    /// goes back to what it was before (the attempt numbers keep counting up); when other
    /// attempts were counted since, only one failure is removed, and a lock is lifted only
    /// when the rest stay below `deny`. `false` when there is nothing left to take back: a
    /// success or an administrator's reset cleared it since, or the counter is damaged.
    @inline(never)
    public func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool {
        try counters.update(failure.user) { tally, save throws(StoreError) -> Bool in
            guard failure.after.serial > tally.clearedSerial, !tally.isDamaged, tally.failures > 0 else { return false }
            var next: Tally
            if tally == failure.after {
                next = failure.before
                next.serial = tally.serial
                next.clearedSerial = tally.clearedSerial
            } else {
                next = tally
                next.failures -= 1
                if options.lockout.deny == 0 || next.failures < options.lockout.deny { next.lockedUntil = 0 }
                if next.failures == 0 { next.lastFailure = 0 }
            }
            try save(next)
            tally = next
            return true
        }
    }

    /// `tally` after a passcode success (or enrollment) at `time`: the gesture is trusted again.
    package static func passcodeUsed(_ tally: Tally, at time: Int64, boot: String?) -> Tally {
        var next = tally
        next.passcodeAt = time
        next.passcodeBoot = boot ?? ""
        next.adminLock = false
        return next
    }

    /// The current boot id (read once per session); `nil` (a restart is assumed) when it
    /// cannot be read.
    package func bootID() -> String? {
        session.bootID()
    }

    /// Why a serialized gesture does not verify against `template`, or `nil` when it does;
    /// `naming` (the `debug` option) adds the failing part and rule, never a coordinate.
    package static func gestureProblem(_ secret: borrowing SecureBytes, _ template: GestureTemplate,
                               naming: Bool = false) -> String? {
        secret.withBytes { bytes -> String? in
            var attempt: Gesture
            do throws(GestureFormatError) {
                attempt = try GestureWire.parse(bytes)
            } catch {
                return "gesture rejected: \(error)"
            }
            defer { attempt.wipe() }
            return gestureProblem(attempt, template, naming: naming)
        }
    }

    /// `gestureProblem(_:_:naming:)` of a reply already parsed.
    static func gestureProblem(_ attempt: Gesture, _ template: GestureTemplate, naming: Bool = false) -> String? {
        do throws(GestureFormatError) {
            try attempt.requireSize(width: template.width, height: template.height)
        } catch {
            // Drawn on another picture: refused, but matched first as if drawn on this one, so
            // that the refusal costs a match as every other refusal does (`GestureDecoy`;
            // otherwise the size would be a fast probe for who has a gesture).
            var rescaled = attempt.rescaled(width: template.width, height: template.height)
            defer { rescaled.wipe() }
            _ = GestureMatcher.verify(template, rescaled)
            return "gesture rejected: \(error)"
        }
        let result = GestureMatcher.verify(template, attempt)
        if result.passed { return nil }
        if naming, let detail = result.detail { return "gesture did not match (\(detail))" }
        return "gesture did not match" + (result.failure.map { " (\($0))" } ?? "")
    }

    /// What an open attempt comes to before it is counted, when the record and the counter
    /// (`tally`: the local one, or the fleet's view of it) decide it without a secret: refused
    /// (an administrator's lock on a gesture-only user), a gesture while only the passcode is
    /// accepted, a passcode type below `min_passcode`. `nil`: count it and verify. The same
    /// rules for the local store and for the directory, online and offline.
    package func decidedBeforeCounting(_ record: UserRecord, _ tally: Tally, isGesture: Bool, asProofForChange: Bool,
                               at time: Int64) -> Outcome? {
        let acceptance = options.quickFactor.acceptance(of: record, tally, bootID: bootID(), now: time)
        if case .refused = acceptance { return .locked(.lockedUntilReset) }
        if isGesture, case .passcodeOnly(_, let reason?) = acceptance { return .passcodeRequired(reason) }
        if !isGesture, !asProofForChange, let minimum = options.minimumPasscode,
           let stored = record.passcode, !stored.type.meets(minimum) {
            return .failure(failures: tally.failures, lock: .open,
                            detail: "the enrolled passcode type \(stored.type.rawValue) is below "
                                + "min_passcode=\(minimum.rawValue); not counted, nothing verified")
        }
        return nil
    }

    /// The work of counting a failure, for a refusal that counted none:
    /// `LockoutStore.writeDecoy` with a counter shaped like a first failure now, and the
    /// failure history's decoy (whose errors, like the history's, change nothing).
    package func writeDecoy() throws(StoreError) {
        let time = now()
        try counters.writeDecoy(like: options.lockout.recordingFailure(in: Tally(), now: time))
        try? FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds, session: session)
            .writeDecoy(.init(time: time, service: "-", tty: "-", rhost: "-", ruser: "-"))
    }

    /// The work of matching a gesture reply that is refused without a template to match it
    /// with (no record, no such account, locked, passcode required, no gesture enrolled), as
    /// a discreet service's refusal of it must cost what an enrolled account's does: a template
    /// (`GestureDecoy`, on the reply's picture size) sealed under `key`, opened, and matched
    /// against the reply; the result is thrown away. Nothing is done for a passcode reply.
    package func runDummyGestureMatch(_ secret: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) {
        guard secret.hasPrefix(GestureWire.prefix), let nobody = UserName("nobody") else { return }
        // Parsed once, as the real path parses it once; a reply that does not parse costs the
        // template's opening only, as it does there.
        var parsed = secret.withBytes { bytes -> Gesture? in try? GestureWire.parse(bytes) }
        defer { parsed?.wipe() }
        guard let decoy = GestureDecoy.template(width: parsed?.width ?? 400, height: parsed?.height ?? 300)
                ?? GestureDecoy.template(width: 400, height: 300) else { return }
        let account = Account(name: nobody, uid: UInt32.max)
        let sealed = try GestureSealing.seal(decoy, for: account, hostKey: key)
        let opened = try GestureSealing.open(sealed, for: account, hostKey: key, path: "-")
        defer { opened.wipeStorage() }
        if let parsed { _ = Self.gestureProblem(parsed, opened) }
    }

    /// The host key for a dummy verification: the stored one if there is one, so the cost
    /// matches a real attempt, or a fresh random key.
    func dummyKey() throws(StoreError) -> SecureBytes {
        switch try records.loadHostKey(tpm: options.tpm) {
        case .some(let stored): return stored
        case .none: return try SecureBytes(count: PasscodeHasher.keyLength)
        }
    }

    /// The work of verifying a wrong passcode: `passcode` (whatever the reply) peppered with
    /// `key` and checked against a dummy hash at the current cost.
    package func runDummyVerification(_ passcode: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) {
        guard let nobody = UserName("nobody") else { return }
        let prehash = try hasher.prehash(passcode, user: nobody, uid: UInt32.max, hostKey: key)
        _ = try hasher.verify(prehash, against: hasher.dummyHash)
    }

    /// Hashes `passcode` at the current cost (creating the host key on first use) and
    /// stores it with `type` in `account`'s record, keeping the record's other fields.
    /// Runs under the user's counter lock, so it cannot interleave with a login's rehash.
    public func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType,
                              for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey(tpm: options.tpm)
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: hostKey)
        let hash = try hasher.hash(prehash)
        // `keyring = yes`: the passcode is known now, so its keyring key pair is made now (one
        // more argon2id); the copy sealed to the old passcode's key pair can never open again.
        let keyring = options.keyring && options.keyringRefusal == nil
            ? try KeyringKeys.make(for: passcode, account: account, hostKey: hostKey, cost: options.kdf) : nil
        try counters.update(account.name) { tally, save throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            record.passcode = StoredPasscode(type: type, hash: hash, keyring: keyring)
            try records.save(record)
            _ = try keyringCopies.forget(account.name)
            // Whoever just set the passcode knows it: it counts as a passcode success, except
            // that an administrator's lock stands until `puff-enroll reset`.
            let adminLock = tally.adminLock
            tally = Self.passcodeUsed(tally, at: now(), boot: bootID())
            tally.adminLock = adminLock
            try save(tally)
        }
        try prepareDecoysWhereUnstoppable()
    }

    /// Seals `template` for `account`, stores a copy of the picture it was drawn on and
    /// records both (keeping the record's passcode), under the user's counter lock.
    public func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey(tpm: options.tpm)
        let sealed = try GestureSealing.seal(template, for: account, hostKey: hostKey)
        try counters.update(account.name) { tally, save throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            // The counter in the layout written in place, so the first attempt costs what
            // every later one does (a discreet service's refusals are made to cost the same).
            if !save.isInPlace { try save(tally) }
            // Picture staged, record saved (the commit), picture moved into place.
            let digest = SHA256.hex(picture)
            try records.stagePicture(picture, for: account.name)
            record.gesture = StoredGesture(pictureWidth: template.width, pictureHeight: template.height,
                                           pictureSHA256: digest, sealedTemplate: sealed)
            try records.save(record)
            try records.settlePicture(for: account.name, expectedSHA256: digest)
        }
        try prepareDecoysWhereUnstoppable()
    }

    /// Prepares the decoy counters (`LockoutStore.prepareDecoys`, which takes each one's lock in
    /// turn) after an enrollment, but only in a process whose real and effective uid are root,
    /// which no ordinary user can stop, freeze, starve or trace. The setuid helper run by a user
    /// for their own enrollment skips it: a user single-stepping it (SIGSTOP while it held each
    /// lock) left every discreet refusal waiting `lock_wait` and failing (issue 36, item 1).
    /// The decoys are then made by `puff-enroll` as root or by the first discreet refusal that
    /// finds one missing (`LockoutStore.writeDecoy`).
    package func prepareDecoysWhereUnstoppable() throws(StoreError) {
        guard getuid() == 0, geteuid() == 0 else { return }
        try counters.prepareDecoys()
    }

    /// Opens `account`'s sealed template (for the debug view); `nil` when none is enrolled.
    public func openGesture(of account: Account) throws(StoreError) -> (template: GestureTemplate, picture: [UInt8]?)? {
        guard let record = try records.load(account), let gesture = record.gesture else { return nil }
        let template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: try hostKey(),
                                               path: records.recordPath(account.name))
        let picture = try records.loadPicture(account.name)
        return (template, picture.flatMap { SHA256.hex($0) == gesture.pictureSHA256 ? $0 : nil })
    }

    /// Makes the passcode mandatory for `name` until its next passcode success (the
    /// administrator's "remote lock").
    public func requirePasscode(of name: UserName) throws(StoreError) {
        try counters.update(name) { tally, save throws(StoreError) in
            tally.adminLock = true
            try save(tally)
        }
    }

    /// Removes `name`'s record, picture, counter, failure history and the counter's lock file;
    /// `false` when there was no record or picture. A name with none of these files gets
    /// nothing written, not even a lock file. (The lock file goes last, under its own lock:
    /// LockoutStore's `removeLockWhileLocked`.)
    public func removeEnrollment(of name: UserName) throws(StoreError) -> Bool {
        // Not `a || b`: its right side would be an untyped throwing autoclosure.
        if try !records.hasFiles(name) {
            guard try counters.hasFiles(name) else { return false }
        }
        return try counters.update(name) { _, _ throws(StoreError) -> Bool in
            let removed = try records.remove(name)
            let pictures = try records.removePictures(name)
            _ = try keyringCopies.forget(name)
            try counters.removeWhileLocked(name)
            _ = try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                                   session: session).remove(name)
            try counters.removeLockWhileLocked(name)
            return removed || pictures
        }
    }
}
