import Glibc
import PuffCore

/// The files store: records and the host key under the store directory (`RecordStore`),
/// counters under the state directory (`LockoutStore`). Its directories are opened once per
/// store (its `session`) and reached through their descriptors from then on: make one per
/// login, helper run or command.
public struct FilesStore: StoreBackend {
    public let options: PuffOptions
    public let session: StoreSession
    /// The wall clock, injectable for tests.
    public let now: () -> Int64
    /// Every refusal costs the same work, whatever the account, its state and the reply's kind
    /// (`AttemptEngine`). Set where the caller is not the user (sshd, login, the helper's
    /// service calls), so neither the time nor the disk tells who is enrolled or locked.
    public var evenRefusals = false
    /// Set by the module in tpm mode, which has no TPM code: a dummy verification (of a name
    /// that is no user name, refused here without the helper) then uses a random key.
    public var keyIsSealedAway = false

    public init(options: PuffOptions, session: StoreSession = StoreSession(),
                now: @escaping () -> Int64 = Clock.wallSeconds) {
        (self.options, self.session, self.now) = (options, session, now)
    }

    package var records: RecordStore { RecordStore(directory: options.recordDirectory, session: session) }
    package var counters: LockoutStore {
        LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds, session: session)
    }
    package var engine: AttemptEngine { AttemptEngine(options: options, session: session, now: now, evenRefusals: evenRefusals) }

    // MARK: a login

    public func subject(for userName: String) throws(StoreError) -> Subject {
        try resolve(userName) { account throws(StoreError) in try subject(of: account) }
    }

    /// `userName` (raw, as the application gave it) resolved to an account and handed to
    /// `subject`, or why it names no one. With `evenRefusals`, a name without a record costs
    /// the reads an enrolled one does, so the time to the prompt does not tell who is enrolled.
    public func resolve(_ userName: String, _ subject: (Account) throws(StoreError) -> Subject) throws(StoreError) -> Subject {
        let resolved: Subject
        if UserName(userName) == nil {
            resolved = .notEnrolled(reason: "invalid user name")
        } else if let account = try Account.lookup(userName) {
            resolved = try subject(account)
        } else {
            resolved = .notEnrolled(reason: "no such account")
        }
        if evenRefusals, case .notEnrolled = resolved {
            _ = try? counters.readDecoy()
            _ = session.bootID()
        }
        return resolved
    }

    @inline(never)
    public func subject(of account: Account) throws(StoreError) -> Subject {
        guard let record = try records.load(account), record.hasAnyFactor else {
            return .notEnrolled(reason: "no Puff record")
        }
        // Finishes a gesture enrollment that was killed between its record and its picture.
        if let gesture = record.gesture {
            try records.settlePicture(for: account.name, expectedSHA256: gesture.pictureSHA256)
        }
        return .enrolled(.init(account: account, record: record, tally: try counters.read(account.name), options: options,
                               bootID: session.bootID(), now: now()))
    }

    /// One attempt: the engine over the counter file (`FilesCounter`, below).
    public func attempt(_ secret: borrowing SecureBytes, for subject: Subject, asProofForChange: Bool = false,
                        counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
        counted = nil
        guard case .enrolled(let enrolled) = subject else {
            return try engine.refuseUnenrolled(secret, key: try dummyKey())
        }
        return try engine.run(secret, FilesCounter(store: self, account: enrolled.account), key: try hostKey(),
                              for: enrolled.account, asProofForChange: asProofForChange, counted: &counted)
    }

    /// The host key, which peppers passcode hashes and seals gesture templates: from
    /// `host.key`, or unsealed by the TPM in tpm mode (StoreKey.swift); missing while a record
    /// exists is an error.
    package func hostKey() throws(StoreError) -> SecureBytes {
        guard let hostKey = try records.loadHostKey(tpm: options.tpm) else {
            throw .unsafe(path: options.recordDirectory + "/host.key", reason: "missing while records exist")
        }
        return hostKey
    }

    /// The key of a dummy verification: the stored one, so it costs what a real attempt does,
    /// or a throwaway key of the same size.
    func dummyKey() throws(StoreError) -> SecureBytes {
        if keyIsSealedAway { return try SecureBytes(count: PasscodeHasher.keyLength) }
        switch try records.loadHostKey(tpm: options.tpm) {
        case .some(let stored): return stored
        case .none: return try SecureBytes(count: PasscodeHasher.keyLength)
        }
    }

    /// Undoes `failure` after the password module accepted the same text (`Tally.takingBack`).
    @inline(never)
    public func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool {
        let deny = options.lockout.deny
        return try counters.update(failure.user) { tally, save throws(StoreError) -> Bool in
            guard let next = tally.takingBack(failure, deny: deny) else { return false }
            try save(next)
            tally = next
            return true
        }
    }

    /// Runs `check` (a proof that is not a Puff secret: the system password before a first
    /// enrollment) as a counted attempt: refused while locked, counted before the check, which
    /// runs without the lock. A success takes back only its own attempt, so no other secret
    /// lifts a Puff lockout.
    @inline(never)
    public func countedAttempt(for account: Account, _ check: () throws(StoreError) -> Bool) throws(StoreError) -> AttemptOutcome {
        let lockout = options.lockout
        let isRoot = account.uid == 0
        let started = now()
        let (status, counted) = try counters.update(account.name) { tally, save throws(StoreError) -> (LockStatus, Tally) in
            let status = lockout.status(of: tally, now: started, isRoot: isRoot)
            guard status == .open else { return (status, tally) }
            tally = lockout.recordingFailure(in: tally, now: started)
            try save(tally)
            return (status, tally)
        }
        guard status == .open else { return .locked(status) }
        guard try check() else {
            return .failure(failures: counted.failures, lock: lockout.status(of: counted, now: started, isRoot: isRoot),
                            detail: "wrong system password")
        }
        try counters.update(account.name) { tally, save throws(StoreError) in
            guard let next = tally.takingBack(serial: counted.serial, deny: lockout.deny) else { return }
            try save(next)
            tally = next
        }
        return .success(rehashed: false)
    }

    // MARK: enrollment and administration

    /// Hashes `passcode` at the current cost (creating the host key on first use) and stores it
    /// with `type`, keeping the record's other fields, under the user's counter lock, so it
    /// cannot interleave with a login's rehash.
    public func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey(tpm: options.tpm)
        let hasher = PasscodeHasher(cost: options.kdf)
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: hostKey)
        let hash = try hasher.hash(prehash)
        // `keyring = yes`: the passcode is known now, so its key pair is made now; a copy
        // sealed to the old passcode's key pair can never open again.
        let keyring = options.keyring && options.keyringRefusal == nil
            ? try KeyringKeys.make(for: passcode, account: account, hostKey: hostKey, cost: options.kdf) : nil
        let time = now(), boot = session.bootID()
        try counters.update(account.name) { tally, save throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            record.passcode = StoredPasscode(type: type, hash: hash, keyring: keyring)
            try records.save(record)
            _ = try keyringCopies.forget(account.name)
            // Whoever set the passcode knows it: a passcode success, except that an
            // administrator's lock stands until `puff-enroll reset`.
            let adminLock = tally.adminLock
            tally = tally.passcodeUsed(at: time, boot: boot)
            tally.adminLock = adminLock
            try save(tally)
        }
        try prepareDecoysWhereUnstoppable()
    }

    /// Seals `template`, stores a copy of the picture it was drawn on and records both (keeping
    /// the passcode), under the user's counter lock.
    public func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
        let hostKey = try records.loadOrCreateHostKey(tpm: options.tpm)
        let sealed = try GestureSealing.seal(template, for: account, hostKey: hostKey)
        try counters.update(account.name) { tally, save throws(StoreError) in
            var record = try records.load(account) ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
            // The counter in the layout written in place, so the first attempt costs what every
            // later one does.
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

    /// The decoy counters (`LockoutStore.prepareDecoys`, each one's lock in turn), only in a
    /// process no ordinary user can stop: a user single-stepping their setuid helper while it
    /// held each lock made every discreet refusal wait `lock_wait` and fail (issue 36).
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

    public func requirePasscode(of name: UserName) throws(StoreError) {
        try counters.update(name) { tally, save throws(StoreError) in
            tally.adminLock = true
            try save(tally)
        }
    }

    /// Removes `name`'s record, picture, keyring copy, counter, failure history and, last and
    /// under its own lock, the counter's lock file. A name with none of these files gets
    /// nothing written, not even a lock file.
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

    /// Clears `name`'s failures and lock; a user with no record and no counter gets nothing written.
    public func reset(of name: UserName) throws(StoreError) -> String? {
        if try !records.hasFiles(name) {
            guard try counters.hasFiles(name) else { return nil }
        }
        let before = try counters.read(name)
        try counters.reset(name)
        return before.isDamaged ? "a damaged counter rewritten" : "\(before.failures) failures cleared"
    }

    public func status(of account: Account) throws(StoreError) -> StoreStatus {
        StoreStatus(record: try records.load(account), tally: try counters.read(account.name),
                    keyringSince: try keyringCopies.copy(of: account)?.captured)
    }

    public func enrolledNames() throws(StoreError) -> [UserName]? { try records.enrolledNames() }

    public var recordKeyPath: String { options.recordDirectory + "/" + RecordStore.hostKeyName }
}

/// The files store's counter for the engine: the counter file, and the record read again
/// under its lock.
package struct FilesCounter: AttemptCounter {
    let store: FilesStore
    let account: Account

    package func count(_ rules: AdmissionRules, key: borrowing SecureBytes) throws(StoreError) -> CountStep {
        let records = store.records
        return try store.counters.update(account.name) { tally, save throws(StoreError) -> CountStep in
            // Read under the lock: an enrollment may have changed the record since the prompt.
            guard let record = try records.load(account), record.hasAnyFactor else { return .decided(.notEnrolled) }
            if let refusal = rules.refusal(record, tally) { return .decided(refusal) }
            // Opened before counting: a store problem must not cost an attempt.
            var template: GestureTemplate?
            if rules.isGesture, let gesture = record.gesture {
                template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key,
                                                   path: records.recordPath(account.name))
            }
            let before = tally
            tally = rules.counting(before)
            try save(tally)
            return .counted(CountedAttempt(record: record, template: template, failures: tally.failures,
                                           lock: rules.lock(after: tally),
                                           failure: CountedFailure(user: account.name, before: before, after: tally)))
        }
    }

    package func settle(_ attempt: CountedAttempt, _ rules: AdmissionRules, passcodeUsed: Bool, upgrade: RecordUpgrade?,
                        check: SettleCheck) throws(StoreError) -> AttemptOutcome {
        let records = store.records
        return try store.counters.update(account.name) { tally, save throws(StoreError) -> AttemptOutcome in
            let current = try records.load(account)
            switch rules.settle(attempt, check, current: current, adminLock: tally.adminLock, tally: tally, passcodeUsed: passcodeUsed) {
            case .refused(let outcome): return outcome
            case .settled(nil): break
            case .settled(let next?):
                // Not waited for on disk: a crash that loses it leaves this attempt counted as
                // a failure, which is stricter, never laxer.
                try save.lowering(next)
                tally = next
            }
            guard let upgrade, var upgraded = current else { return .success(rehashed: false) }
            switch upgrade {
            case .passcode(let stored): upgraded.passcode = stored
            case .gesture(let sealed):
                guard var gesture = upgraded.gesture else { return .success(rehashed: false) }
                gesture.sealedTemplate = sealed
                upgraded.gesture = gesture
            }
            try records.save(upgraded)
            return .success(rehashed: true)
        }
    }

    package func takeBack(_ attempt: CountedAttempt) throws(StoreError) {
        let deny = store.options.lockout.deny
        try store.counters.update(account.name) { tally, save throws(StoreError) in
            guard let next = tally.takingBack(serial: attempt.failure.after.serial, deny: deny) else { return }
            try save(next)
            tally = next
        }
    }
}
