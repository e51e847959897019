import PuffCore

/// The one attempt engine, for every store: count before the check, the check, settle.
/// In three steps, so that no process, stopped or slow, holds a user's lock for longer than a
/// read and a write:
///
/// 1. `counter.count`: under the counter's lock, the record read again, `AdmissionRules`
///    refuse or admit, the attempt counted as a failure on disk (or in the directory) before
///    anything is verified; a count that fails ends the attempt.
/// 2. without any lock: argon2id or the gesture match. A process killed or stopped here leaves
///    its attempt counted and blocks nobody.
/// 3. on success only, `counter.settle`: the record must still hold the secret that verified;
///    the failures counted up to this attempt are cleared (later ones stay).
///
/// With `evenRefusals` every refusal does one count (or the decoy write), one argon2id (or the
/// dummy) and, for a gesture reply, one match (or the decoy match).
package struct AttemptEngine {
    let options: PuffOptions
    let session: StoreSession
    let now: () -> Int64
    let evenRefusals: Bool

    package init(options: PuffOptions, session: StoreSession, now: @escaping () -> Int64, evenRefusals: Bool) {
        (self.options, self.session, self.now, self.evenRefusals) = (options, session, now, evenRefusals)
    }

    private var hasher: PasscodeHasher { PasscodeHasher(cost: options.kdf) }

    /// One attempt of `account` counted by `counter`; `key` peppers and seals the records.
    package func run<Counter: AttemptCounter>(_ secret: borrowing SecureBytes, _ counter: Counter, key: borrowing SecureBytes,
                                              for account: Account, asProofForChange: Bool,
                                              counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
        counted = nil
        var work = RefusalWork()
        let outcome = try steps(secret, counter, key: key, for: account, asProofForChange: asProofForChange,
                                counted: &counted, work: &work)
        guard evenRefusals else { return outcome }
        if case .success = outcome { return outcome }
        if !work.wroteCount { try writeDecoy() }
        if !work.hashed { try runDummyVerification(secret, key: key) }
        if !work.matched { try runDummyGestureMatch(secret, key: key) }
        return outcome
    }

    /// A user with no record or no account: the dummy verification (and, discreet, the decoy
    /// count and match), then refused.
    package func refuseUnenrolled(_ secret: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) -> AttemptOutcome {
        if evenRefusals {
            try writeDecoy()
            try runDummyGestureMatch(secret, key: key)
        }
        try runDummyVerification(secret, key: key)
        return .notEnrolled
    }

    /// What an attempt did of a refusal's work.
    private struct RefusalWork {
        var wroteCount = false
        var hashed = false
        var matched = false
    }

    private func steps<Counter: AttemptCounter>(_ secret: borrowing SecureBytes, _ counter: Counter, key: borrowing SecureBytes,
                                                for account: Account, asProofForChange: Bool,
                                                counted: inout CountedFailure?, work: inout RefusalWork) throws(StoreError) -> AttemptOutcome {
        let isGesture = secret.hasPrefix(GestureWire.prefix)
        let rules = AdmissionRules(lockout: options.lockout, quickFactor: options.quickFactor,
                                   minimumPasscode: options.minimumPasscode, bootID: session.bootID(), time: now(),
                                   isRoot: account.uid == 0, isGesture: isGesture, asProofForChange: asProofForChange)
        let attempt: CountedAttempt
        switch try counter.count(rules, key: key) {
        case .decided(let outcome):
            if outcome == .notEnrolled {
                try runDummyVerification(secret, key: key)
                work.hashed = true
            }
            return outcome
        case .counted(let step):
            attempt = step
            work.wroteCount = true
        }
        let outcome = try check(secret, attempt, counter, rules, key: key, for: account, work: &work)
        // A counted failure is what `authsucc` may take back; a success or a lock has none.
        if case .failure = outcome { counted = attempt.failure }
        return outcome
    }

    /// Steps 2 and 3 of a counted attempt: the check without a lock, then the settle.
    private func check<Counter: AttemptCounter>(_ secret: borrowing SecureBytes, _ attempt: CountedAttempt, _ counter: Counter,
                                                _ rules: AdmissionRules, key: borrowing SecureBytes, for account: Account,
                                                work: inout RefusalWork) throws(StoreError) -> AttemptOutcome {
        guard attempt.mayVerify else {
            if attempt.lock == .open { return attempt.failed("not verified: another host counted at the same time") }
            return .locked(attempt.lock)
        }
        let record = attempt.record
        if rules.isGesture {
            guard let template = attempt.template else { return attempt.failed("a gesture was sent but none is enrolled") }
            // The opened points are wiped once this attempt is over, as the secret is.
            defer { template.wipeStorage() }
            work.matched = true
            let checked = Self.gestureCheck(secret, template, naming: options.debug)
            defer { checked.acceptance?.wipeStorage() }
            if let problem = checked.problem { return attempt.failed(problem) }
            // A success re-seals the template: learned from this login (version 3 or 4), or an
            // older one migrated, as passcode hashes are rehashed.
            let settings = (try? options.gestureRecognizerSettings()) ?? .standard
            var upgrade: RecordUpgrade?
            if let acceptance = checked.acceptance {
                let learned = GestureLearning.learned(from: acceptance, settings: settings)
                defer { learned.wipeStorage() }
                upgrade = .gesture(sealed: try GestureSealing.seal(learned, for: account, hostKey: key))
            } else if template.version < GestureTemplate.encodingVersion {
                let upgraded = template.upgraded(settings: settings)
                defer { upgraded.wipeStorage() }
                upgrade = .gesture(sealed: try GestureSealing.seal(upgraded, for: account, hostKey: key))
            }
            return try counter.settle(attempt, rules, passcodeUsed: false, upgrade: upgrade, check: .gesture(record.gesture))
        }
        guard let stored = record.passcode else { return attempt.failed("a passcode was sent but only a gesture is enrolled") }
        let prehash = try hasher.prehash(secret, user: account.name, uid: account.uid, hostKey: key)
        let matched: Bool
        work.hashed = true
        do {
            matched = try hasher.verify(prehash, against: stored.hash)
        } catch {
            // No secret was compared: take the attempt back rather than count a right passcode as wrong.
            if case .system(_, _, let errno) = error, errno == .outOfMemory { try counter.takeBack(attempt) }
            throw error
        }
        guard matched else { return attempt.failed("") }
        // The upgrade at the current cost is hashed here, outside any lock, too.
        let upgrade: RecordUpgrade? = hasher.needsRehash(stored.hash)
            ? .passcode(StoredPasscode(type: stored.type, hash: try hasher.hash(prehash), keyring: stored.keyring)) : nil
        return try counter.settle(attempt, rules, passcodeUsed: true, upgrade: upgrade, check: .passcode(stored))
    }

    // MARK: the work of a refusal

    /// The work of counting a failure, for a refusal that counted none: `LockoutStore.writeDecoy`
    /// with a counter shaped like a first failure now, and the failure history's decoy (whose
    /// errors, like the history's, change nothing).
    package func writeDecoy() throws(StoreError) {
        let time = now()
        try LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds, session: session)
            .writeDecoy(like: options.lockout.recordingFailure(in: Tally(), now: time))
        try? FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds, session: session)
            .writeDecoy(.init(time: time, service: "-", tty: "-", rhost: "-", ruser: "-"))
    }

    /// The work of verifying a wrong passcode: the reply peppered with `key` and checked
    /// against a dummy hash at the current cost.
    package func runDummyVerification(_ passcode: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) {
        guard let nobody = UserName("nobody") else { return }
        let prehash = try hasher.prehash(passcode, user: nobody, uid: UInt32.max, hostKey: key)
        _ = try hasher.verify(prehash, against: hasher.dummyHash)
    }

    /// The work of matching a gesture reply refused without a template to match it with: a
    /// decoy template on the reply's picture size, sealed under `key`, opened and matched; the
    /// result thrown away. Nothing for a passcode reply.
    package func runDummyGestureMatch(_ secret: borrowing SecureBytes, key: borrowing SecureBytes) throws(StoreError) {
        guard secret.hasPrefix(GestureWire.prefix), let nobody = UserName("nobody") else { return }
        // Parsed once, as the real path parses it once.
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

    // MARK: the gesture check

    /// Why a serialized gesture does not verify against `template`, or `nil` when it does;
    /// `naming` (the `debug` option) adds the failing part and rule, never a coordinate.
    package static func gestureProblem(_ secret: borrowing SecureBytes, _ template: GestureTemplate,
                                       naming: Bool = false) -> String? {
        let checked = gestureCheck(secret, template, naming: naming)
        checked.acceptance?.wipeStorage()
        return checked.problem
    }

    /// `gestureProblem`, and on a success of a version-3 or version-4 template the login to
    /// learn from (`GestureLearning.accept`: only a match can make one).
    package static func gestureCheck(_ secret: borrowing SecureBytes, _ template: GestureTemplate,
                                     naming: Bool = false) -> (problem: String?, acceptance: GestureAcceptance?) {
        secret.withBytes { bytes -> (problem: String?, acceptance: GestureAcceptance?) in
            var attempt: Gesture
            do throws(GestureFormatError) {
                attempt = try GestureWire.parse(bytes)
            } catch {
                return ("gesture rejected: \(error)", nil)
            }
            defer { attempt.wipe() }
            return gestureCheck(attempt, template, naming: naming)
        }
    }

    static func gestureProblem(_ attempt: Gesture, _ template: GestureTemplate, naming: Bool = false) -> String? {
        let checked = gestureCheck(attempt, template, naming: naming)
        checked.acceptance?.wipeStorage()
        return checked.problem
    }

    static func gestureCheck(_ attempt: Gesture, _ template: GestureTemplate,
                             naming: Bool = false) -> (problem: String?, acceptance: GestureAcceptance?) {
        do throws(GestureFormatError) {
            try attempt.requireSize(width: template.width, height: template.height)
        } catch {
            // Drawn on another picture: refused, but matched first as if drawn on this one, so
            // the refusal costs a match as every other does (else the size would be a fast probe).
            var rescaled = attempt.rescaled(width: template.width, height: template.height)
            defer { rescaled.wipe() }
            _ = GestureMatcher.verify(template, rescaled)
            return ("gesture rejected: \(error)", nil)
        }
        let (result, acceptance) = GestureLearning.accept(attempt, by: template)
        if result.passed { return (nil, acceptance) }
        if naming, let detail = result.detail { return ("gesture did not match (\(detail))", nil) }
        return ("gesture did not match" + (result.failure.map { " (\($0))" } ?? ""), nil)
    }
}

/// Where an attempt's count goes: the counter file (`FilesCounter`), the directory
/// (`DirectoryCounter`) or the offline cache (`OfflineCounter`). Each applies `AdmissionRules`
/// under its own lock. A generic parameter of the engine: Embedded Swift has no existentials.
package protocol AttemptCounter {
    /// Step 1: the record and tally read under the lock, `rules` applied, a gesture's template
    /// opened with `key`, and the attempt counted durably. No record: `.decided(.notEnrolled)`.
    func count(_ rules: AdmissionRules, key: borrowing SecureBytes) throws(StoreError) -> CountStep
    /// Step 3, after the secret verified: `check` against the record read again, then the
    /// failures up to this attempt cleared and `upgrade` stored.
    func settle(_ attempt: CountedAttempt, _ rules: AdmissionRules, passcodeUsed: Bool, upgrade: RecordUpgrade?,
                check: SettleCheck) throws(StoreError) -> AttemptOutcome
    /// Takes back an attempt whose secret was never compared (argon2id could not allocate).
    func takeBack(_ attempt: CountedAttempt) throws(StoreError)
}

/// What step 1 came to.
package enum CountStep {
    /// Decided without counting (locked, not enrolled, passcode required, ...).
    case decided(AttemptOutcome)
    /// Counted; the secret is to be checked.
    case counted(CountedAttempt)
}

/// What a success stores beside settling the counter.
package enum RecordUpgrade {
    /// The passcode hash at the current cost.
    case passcode(StoredPasscode)
    /// A gesture template sealed again: learned from this login, or an older version migrated.
    case gesture(sealed: String)
}
