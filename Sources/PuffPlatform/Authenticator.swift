import PuffCore

/// The authentication flow shared by everything that checks a secret: look the user up,
/// consult the lockout, count the attempt before the slow check, verify, clear on success.
/// It knows nothing of PAM; the caller owns the conversation and maps the outcomes.
public struct Authenticator {
    /// The effective options.
    public let options: PuffOptions
    /// The wall clock, injectable for tests.
    public let now: () -> Int64

    /// Creates an authenticator.
    public init(options: PuffOptions, now: @escaping () -> Int64 = Clock.wallSeconds) {
        self.options = options
        self.now = now
    }

    var records: RecordStore { RecordStore(directory: options.recordDirectory) }
    var counters: LockoutStore { LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds) }
    var hasher: PasscodeHasher { PasscodeHasher(cost: options.kdf) }

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
    }

    /// Resolves `userName` (raw, as the application gave it) to a subject.
    public func subject(for userName: String) throws(StoreError) -> Subject {
        guard UserName(userName) != nil else { return .notEnrolled(reason: "invalid user name") }
        guard let account = try Account.lookup(userName) else { return .notEnrolled(reason: "no such account") }
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

    /// Checks `passcode` for `subject`. The attempt is counted as a failure *before* the
    /// argon2id run and cleared on success, all under the user's exclusive lock, so a
    /// process killed during verification leaves its attempt counted and attempts on one
    /// user never overlap.
    public func attempt(_ passcode: borrowing SecureBytes, for subject: Subject) throws(StoreError) -> Outcome {
        switch subject {
        case .notEnrolled:
            try runDummyVerification(passcode)
            return .notEnrolled
        case .enrolled(let enrolled):
            let account = enrolled.account
            guard let hostKey = try records.loadHostKey() else {
                throw .unsafe(path: options.recordDirectory + "/host.key", reason: "missing while records exist")
            }
            let isRoot = account.uid == 0
            return try counters.update(account.name) { tally, save throws(StoreError) -> Outcome in
                let started = now()
                let status = options.lockout.status(of: tally, now: started, isRoot: isRoot)
                guard status == .open else { return .locked(status) }
                // Re-read under the lock: an enrollment may have changed the record since.
                guard let record = try records.load(account), record.hasAnyFactor else {
                    try runDummyVerification(passcode)
                    return .notEnrolled
                }
                let boot = bootID()
                let acceptance = options.quickFactor.acceptance(of: record, tally, bootID: boot, now: started)
                let isGesture = passcode.hasPrefix(GestureWire.prefix)
                if case .refused = acceptance { return .locked(.lockedUntilReset) }
                if isGesture, case .passcodeOnly(_, let reason?) = acceptance { return .passcodeRequired(reason) }
                // Open the template before counting: a store problem must not cost an attempt.
                var template: GestureTemplate?
                if isGesture, let gesture = record.gesture {
                    template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: hostKey,
                                                       path: records.recordPath(account.name))
                }
                var counted = options.lockout.recordingFailure(in: tally, now: started)
                if isGesture, counted.gestureFailures < UInt32.max { counted.gestureFailures += 1 }
                try save(counted)
                func failed(_ detail: String) -> Outcome {
                    .failure(failures: counted.failures,
                             lock: options.lockout.status(of: counted, now: started, isRoot: isRoot), detail: detail)
                }
                tally = counted
                if isGesture {
                    guard let template else { return failed("a gesture was sent but none is enrolled") }
                    if let problem = Self.gestureProblem(passcode, template, naming: options.debug) {
                        return failed(problem)
                    }
                    tally = counted.clearingFailures()
                    try save(tally)
                    // A version-1 template is migrated after a success, as passcode hashes are rehashed.
                    guard template.version < GestureTemplate.encodingVersion, var stored = record.gesture else {
                        return .success(rehashed: false)
                    }
                    stored.sealedTemplate = try GestureSealing.seal(template.upgraded(), for: account, hostKey: hostKey)
                    var migrated = record
                    migrated.gesture = stored
                    try records.save(migrated)
                    return .success(rehashed: true)
                }
                guard let stored = record.passcode else { return failed("a passcode was sent but only a gesture is enrolled") }
                let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: hostKey)
                guard try hasher.verify(prehash, against: stored.hash) else { return failed("") }
                tally = Self.passcodeUsed(counted.clearingFailures(), at: started, boot: boot)
                try save(tally)
                guard hasher.needsRehash(stored.hash) else { return .success(rehashed: false) }
                var upgraded = record
                upgraded.passcode = StoredPasscode(type: stored.type, hash: try hasher.hash(prehash))
                try records.save(upgraded)
                return .success(rehashed: true)
            }
        }
    }

    /// Runs `check` (a proof that is not a Puff secret, such as the system password before a
    /// first enrollment) as a counted attempt: refused while locked, counted before the check.
    /// A success only takes its own attempt back: it never clears earlier failures, so no
    /// other secret can lift a Puff lockout.
    public func countedAttempt(for account: Account, _ check: () throws(StoreError) -> Bool) throws(StoreError) -> Outcome {
        let isRoot = account.uid == 0
        return try counters.update(account.name) { tally, save throws(StoreError) -> Outcome in
            let started = now()
            let status = options.lockout.status(of: tally, now: started, isRoot: isRoot)
            guard status == .open else { return .locked(status) }
            let before = tally
            let counted = options.lockout.recordingFailure(in: tally, now: started)
            try save(counted)
            guard try check() else {
                return .failure(failures: counted.failures,
                                lock: options.lockout.status(of: counted, now: started, isRoot: isRoot),
                                detail: "wrong system password")
            }
            tally = before
            try save(tally)
            return .success(rehashed: false)
        }
    }

    /// `tally` after a passcode success (or enrollment) at `time`: the gesture is trusted again.
    static func passcodeUsed(_ tally: Tally, at time: Int64, boot: String?) -> Tally {
        var next = tally
        next.passcodeAt = time
        next.passcodeBoot = boot ?? ""
        next.adminLock = false
        return next
    }

    /// The current boot id; `nil` (a restart is assumed) when it cannot be read.
    func bootID() -> String? {
        BootID.current()
    }

    /// Why a serialized gesture does not verify against `template`, or `nil` when it does;
    /// `naming` (the `debug` option) adds the failing part and rule, never a coordinate.
    static func gestureProblem(_ secret: borrowing SecureBytes, _ template: GestureTemplate,
                               naming: Bool = false) -> String? {
        secret.withBytes { bytes -> String? in
            let attempt: Gesture
            do {
                attempt = try GestureWire.parse(bytes)
                try attempt.requireSize(width: template.width, height: template.height)
            } catch {
                return "gesture rejected: \(error)"
            }
            let result = GestureMatcher.verify(template, attempt)
            if result.passed { return nil }
            if naming, let detail = result.detail { return "gesture did not match (\(detail))" }
            return "gesture did not match" + (result.failure.map { " (\($0))" } ?? "")
        }
    }

    private func runDummyVerification(_ passcode: borrowing SecureBytes) throws(StoreError) {
        // The host key if there is one, so the cost matches a real attempt.
        let key: SecureBytes
        switch try records.loadHostKey() {
        case .some(let stored): key = stored
        case .none: key = try SecureBytes(count: PasscodeHasher.keyLength)
        }
        guard let nobody = UserName("nobody") else { return }
        let prehash = try hasher.prehash(passcode, user: nobody, uid: UInt32.max, hostKey: key)
        _ = try hasher.verify(prehash, against: hasher.dummyHash)
    }

    /// Hashes `passcode` at the current cost (creating the host key on first use) and
    /// stores it with `type` in `account`'s record, keeping the record's other fields.
    /// Runs under the user's counter lock, so it cannot interleave with a login's rehash.
    public func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType,
                              for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey()
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: hostKey)
        let hash = try hasher.hash(prehash)
        try counters.update(account.name) { tally, save throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            record.passcode = StoredPasscode(type: type, hash: hash)
            try records.save(record)
            // Whoever just set the passcode knows it: it counts as a passcode success.
            tally = Self.passcodeUsed(tally, at: now(), boot: bootID())
            try save(tally)
        }
    }

    /// Seals `template` for `account`, stores a copy of the picture it was drawn on and
    /// records both (keeping the record's passcode), under the user's counter lock.
    public func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey()
        let sealed = try GestureSealing.seal(template, for: account, hostKey: hostKey)
        try counters.update(account.name) { _, _ throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            // Picture staged, record saved (the commit), picture moved into place.
            let digest = SHA256.hex(picture)
            try records.stagePicture(picture, for: account.name)
            record.gesture = StoredGesture(pictureWidth: template.width, pictureHeight: template.height,
                                           pictureSHA256: digest, sealedTemplate: sealed)
            try records.save(record)
            try records.settlePicture(for: account.name, expectedSHA256: digest)
        }
    }

    /// Opens `account`'s sealed template (for the debug view); `nil` when none is enrolled.
    public func openGesture(of account: Account) throws(StoreError) -> (template: GestureTemplate, picture: [UInt8]?)? {
        guard let record = try records.load(account), let gesture = record.gesture else { return nil }
        guard let hostKey = try records.loadHostKey() else {
            throw .unsafe(path: options.recordDirectory + "/host.key", reason: "missing while records exist")
        }
        let template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: hostKey,
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

    /// Removes `account`'s record and clears its counter; `false` when there was no record.
    public func removeEnrollment(of name: UserName) throws(StoreError) -> Bool {
        try counters.update(name) { tally, save throws(StoreError) -> Bool in
            let removed = try records.remove(name)
            tally = Tally()
            try save(tally)
            return removed
        }
    }
}
