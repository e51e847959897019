import PuffCore

/// Where an attempt's count goes: the one thing that differs between the files store
/// (`FilesCounter`, the local counter file), fleet mode online (`DirectoryCounter`, the
/// directory's Modify-Increment and the local counter) and offline (`OfflineCounter`, the local
/// counter and the cache's failures to push). `Authenticator.run(_:_:for:asProofForChange:counted:)`
/// is the one engine that drives them: the count before the check, the check, the settle.
/// Used as a generic parameter (Embedded Swift has no existentials of such protocols).
package protocol AttemptCounter {
    /// The key the records are peppered and sealed with (the host key or the fleet key).
    func key() throws(StoreError) -> SecureBytes
    /// Step 1: reads the record and the tally this attempt goes by, lets `admit` decide
    /// whether it is counted (the same rules everywhere: the lock, the quick-factor policy, the
    /// passcode minimum, the template opened before anything is counted), and counts it where
    /// this counter counts, durably, before returning. No record: `.decided(.notEnrolled)`.
    func count(at time: Int64, _ admit: (_ record: UserRecord, _ tally: Tally, _ source: String)
        throws(StoreError) -> Admission) throws(StoreError) -> CountStep
    /// Step 3, after the secret verified: reads the record again and lets `stillValid` refuse
    /// (the secret changed or was removed meanwhile, an administrator's lock), then clears the
    /// failures counted up to this attempt and stores `upgrade` (a rehash, a migrated template).
    func settle(_ attempt: CountedAttempt, passcodeUsed: Bool, upgrade: RecordUpgrade?, at time: Int64,
                _ stillValid: (_ current: UserRecord?, _ adminLock: Bool) -> Authenticator.Outcome?)
        throws(StoreError) -> Authenticator.Outcome
    /// Takes back an attempt whose secret was never compared (argon2id could not allocate).
    func takeBack(_ attempt: CountedAttempt) throws(StoreError)
}

/// What `admit` decided in step 1.
package enum Admission {
    /// Refused or decided without counting.
    case decided(Authenticator.Outcome)
    /// To be counted and checked; a gesture's template, opened before counting.
    case count(template: GestureTemplate?)
}

/// What step 1 came to.
package enum CountStep {
    /// Decided without counting (locked, not enrolled, passcode required, ...).
    case decided(Authenticator.Outcome)
    /// Counted; the secret is to be checked.
    case counted(CountedAttempt)
}

/// An attempt as step 1 counted it.
package struct CountedAttempt {
    /// The record the secret is checked against.
    package var record: UserRecord
    /// A gesture's template, opened before counting.
    package var template: GestureTemplate?
    /// The failures in a row this count makes (reported on failure).
    package var failures: UInt32
    /// The lock this count leaves.
    package var lock: LockStatus
    /// What `authsucc` (or the helper's system-password check) takes back.
    package var failure: Authenticator.CountedFailure
    /// Where the count went, for the failure's log line ("" for the files store).
    package var origin: String = ""
    /// Fleet mode: `false` when another host counted between this attempt's read and its
    /// increment past `deny` (`LockoutPolicy.fleetMayVerify`): counted, never verified.
    package var mayVerify = true
    /// Fleet mode online: the directory's count after this attempt's increment.
    package var directoryCount: UInt32 = 0

    package init(record: UserRecord, template: GestureTemplate?, failures: UInt32, lock: LockStatus,
                 failure: Authenticator.CountedFailure, origin: String = "", mayVerify: Bool = true,
                 directoryCount: UInt32 = 0) {
        (self.record, self.template, self.failures, self.lock, self.failure) = (record, template, failures, lock, failure)
        (self.origin, self.mayVerify, self.directoryCount) = (origin, mayVerify, directoryCount)
    }
}

/// What a success stores beside settling the counter.
package enum RecordUpgrade {
    /// The passcode hash at the current cost.
    case passcode(StoredPasscode)
    /// A version-1 gesture template sealed again in the current encoding.
    case gesture(sealed: String)
}

extension Authenticator {
    /// The one attempt engine: the count before the check, the check (passcode or gesture, and
    /// the policy refusals) and the settle, for whatever `counter` counts in. In three steps, so
    /// that no process, stopped or slow, holds a user's lock for longer than a read and a write:
    ///
    /// 1. `counter.count`: refuse when locked, count the attempt as a failure, on disk (or in
    ///    the directory) before anything is verified; a count that fails ends the attempt.
    /// 2. without any lock: argon2id or the gesture match. A process killed or stopped here
    ///    leaves its attempt counted and blocks nobody.
    /// 3. on success only, `counter.settle`: clear the failures counted up to this attempt
    ///    (those counted after it stay), unless a newer success or an admin reset already did;
    ///    the record must still hold the secret that verified.
    ///
    /// With `evenRefusals`, a refusal that counted nothing writes the decoy instead, one that
    /// ran no argon2id (a gesture, locked, passcode required, a factor not enrolled) runs the
    /// dummy verification, and a gesture reply that was matched against no template is matched
    /// against a decoy (`runDummyGestureMatch`): every refusal does one of each.
    package func run<Counter: AttemptCounter>(_ secret: borrowing SecureBytes, _ counter: Counter, for account: Account,
                                              asProofForChange: Bool,
                                              counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        var work = RefusalWork()
        let key = try counter.key()
        let outcome = try runSteps(secret, counter, key: key, for: account, asProofForChange: asProofForChange,
                                   counted: &countedFailure, work: &work)
        guard evenRefusals else { return outcome }
        if case .success = outcome { return outcome }
        if !work.counted { try writeDecoy() }
        if !work.hashed { try runDummyVerification(secret, key: key) }
        if !work.matched { try runDummyGestureMatch(secret, key: key) }
        return outcome
    }

    /// What an attempt did of a refusal's work: a count written, an argon2id run, a gesture
    /// matched against a template.
    package struct RefusalWork {
        var counted = false
        var hashed = false
        var matched = false
    }

    private func runSteps<Counter: AttemptCounter>(_ secret: borrowing SecureBytes, _ counter: Counter, key: borrowing SecureBytes,
                                                   for account: Account, asProofForChange: Bool,
                                                   counted countedFailure: inout CountedFailure?,
                                                   work: inout RefusalWork) throws(StoreError) -> Outcome {
        countedFailure = nil
        let isRoot = account.uid == 0
        let isGesture = secret.hasPrefix(GestureWire.prefix)
        let started = now()
        let step = try counter.count(at: started) { record, tally, source throws(StoreError) -> Admission in
            let status = options.lockout.status(of: tally, now: started, isRoot: isRoot)
            guard status == .open else { return .decided(.locked(status)) }
            if let decided = decidedBeforeCounting(record, tally, isGesture: isGesture,
                                                   asProofForChange: asProofForChange, at: started) {
                return .decided(decided)
            }
            // Opened before counting: a store problem must not cost an attempt.
            guard isGesture, let gesture = record.gesture else { return .count(template: nil) }
            return .count(template: try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key, path: source))
        }
        let attempt: CountedAttempt
        switch step {
        case .decided(let outcome):
            if outcome == .notEnrolled {
                try runDummyVerification(secret, key: key)
                work.hashed = true
            }
            return outcome
        case .counted(let counted):
            attempt = counted
            work.counted = true
        }
        func failed(_ detail: String) -> Outcome {
            countedFailure = attempt.failure
            let joined = attempt.origin.isEmpty ? detail : detail.isEmpty ? attempt.origin : attempt.origin + "; " + detail
            return .failure(failures: attempt.failures, lock: attempt.lock, detail: joined)
        }
        guard attempt.mayVerify else {
            if attempt.lock == .open { return failed("not verified: another host counted at the same time") }
            return .locked(attempt.lock)
        }
        let record = attempt.record
        if isGesture {
            guard let template = attempt.template else { return failed("a gesture was sent but none is enrolled") }
            // The opened points are wiped once this attempt is over, as the secret is.
            defer { template.wipeStorage() }
            work.matched = true
            if let problem = Self.gestureProblem(secret, template, naming: options.debug) { return failed(problem) }
            // A version-1 template is migrated after a success, as passcode hashes are rehashed.
            var upgrade: RecordUpgrade?
            if template.version < GestureTemplate.encodingVersion {
                let upgraded = template.upgraded()
                defer { upgraded.wipeStorage() }
                upgrade = .gesture(sealed: try GestureSealing.seal(upgraded, for: account, hostKey: key))
            }
            return try counter.settle(attempt, passcodeUsed: false, upgrade: upgrade, at: started) { current, adminLock in
                guard let current else { return failed("the record was removed meanwhile") }
                guard current.gesture == record.gesture else { return failed("the gesture was changed meanwhile") }
                // An administrator's lock issued meanwhile: the gesture no longer opens.
                guard !adminLock else { return current.passcode == nil ? .locked(.lockedUntilReset) : .passcodeRequired(.administrator) }
                return nil
            }
        }
        guard let stored = record.passcode else { return failed("a passcode was sent but only a gesture is enrolled") }
        let prehash = try hasher.prehash(secret, user: account.name, uid: account.uid, hostKey: key)
        let matched: Bool
        work.hashed = true
        do {
            matched = try hasher.verify(prehash, against: stored.hash)
        } catch {
            // No secret was compared: take the attempt back rather than count a right
            // passcode as wrong.
            if case .system(_, _, let errno) = error, errno == .outOfMemory { try counter.takeBack(attempt) }
            throw error
        }
        guard matched else { return failed("") }
        // The upgrade at the current cost is hashed here, outside any lock, too.
        let upgrade: RecordUpgrade? = hasher.needsRehash(stored.hash)
            ? .passcode(StoredPasscode(type: stored.type, hash: try hasher.hash(prehash), keyring: stored.keyring)) : nil
        return try counter.settle(attempt, passcodeUsed: true, upgrade: upgrade, at: started) { current, _ in
            guard let current else { return failed("the record was removed meanwhile") }
            guard current.passcode == stored else { return failed("the passcode was changed meanwhile") }
            return nil
        }
    }

    /// The local counter's step 1, for every counter: under the user's lock, read the tally,
    /// let `admit` decide on `view(tally)` (the files store's own tally, or the fleet's view
    /// of it), and when it says count, write `tally` with one more failure (and a gesture
    /// failure) durably. `extra` runs inside the lock after the write (the offline cache's
    /// count). Returns the local tally before and after, or the decision.
    package func countLocally(_ name: UserName, at time: Int64, record: () throws(StoreError) -> UserRecord?,
                              view: (Tally) throws(StoreError) -> Tally, source: String, isGesture: Bool,
                              _ admit: (UserRecord, Tally, String) throws(StoreError) -> Admission,
                              extra: () throws(StoreError) -> Void = {})
        throws(StoreError) -> LocalCount {
        try counters.update(name) { tally, save throws(StoreError) -> LocalCount in
            // Read under the lock: an enrollment may have changed the record since.
            guard let record = try record(), record.hasAnyFactor else { return .decided(.notEnrolled) }
            let seen = try view(tally)
            let template: GestureTemplate?
            switch try admit(record, seen, source) {
            case .decided(let outcome): return .decided(outcome)
            case .count(let opened): template = opened
            }
            // The administrator's lock of the view is not written into the local counter.
            var base = seen
            base.adminLock = tally.adminLock
            var next = options.lockout.recordingFailure(in: base, now: time)
            if isGesture, next.gestureFailures < UInt32.max { next.gestureFailures += 1 }
            try save(next)
            try extra()
            let before = tally
            tally = next
            return .counted(record: record, template: template, before: before, after: next)
        }
    }

    /// What `countLocally` came to.
    package enum LocalCount {
        case decided(Outcome)
        case counted(record: UserRecord, template: GestureTemplate?, before: Tally, after: Tally)
    }
}

/// The files store's counter: the local counter file (`LockoutStore`), the record and the
/// host key under the store directory.
package struct FilesCounter: AttemptCounter {
    let authenticator: Authenticator
    let account: Account
    let isGesture: Bool

    package init(_ authenticator: Authenticator, account: Account, isGesture: Bool) {
        self.authenticator = authenticator
        self.account = account
        self.isGesture = isGesture
    }

    package func key() throws(StoreError) -> SecureBytes { try authenticator.hostKey() }

    package func count(at time: Int64, _ admit: (UserRecord, Tally, String) throws(StoreError) -> Admission)
        throws(StoreError) -> CountStep {
        let records = authenticator.records
        let step = try authenticator.countLocally(account.name, at: time, record: { () throws(StoreError) in try records.load(account) },
                                                  view: { $0 }, source: records.recordPath(account.name),
                                                  isGesture: isGesture, admit)
        switch step {
        case .decided(let outcome):
            return .decided(outcome)
        case .counted(let record, let template, let before, let after):
            let lockout = authenticator.options.lockout
            return .counted(CountedAttempt(record: record, template: template, failures: after.failures,
                                           lock: lockout.status(of: after, now: time, isRoot: account.uid == 0),
                                           failure: .init(user: account.name, before: before, after: after)))
        }
    }

    package func settle(_ attempt: CountedAttempt, passcodeUsed: Bool, upgrade: RecordUpgrade?, at time: Int64,
                        _ stillValid: (UserRecord?, Bool) -> Authenticator.Outcome?) throws(StoreError) -> Authenticator.Outcome {
        let records = authenticator.records
        return try authenticator.counters.update(account.name) { tally, save throws(StoreError) -> Authenticator.Outcome in
            let current = try records.load(account)
            if let refused = stillValid(current, tally.adminLock) { return refused }
            try authenticator.settleCounter(&tally, of: attempt.failure.after.serial, passcodeUsed: passcodeUsed, at: time, save)
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
        try authenticator.takeBack(attempt.failure.after.serial, for: account.name)
    }
}
