/// What one attempt came to, in every store and through the helper.
public enum AttemptOutcome: Equatable, Sendable {
    /// Verified; `rehashed` when the stored hash was upgraded to the current cost.
    case success(rehashed: Bool)
    /// Wrong secret, counted; `lock` is the state it leaves. `detail` says why, for the log
    /// (never the secret): empty for a wrong passcode.
    case failure(failures: UInt32, lock: LockStatus, detail: String = "")
    /// Refused without verifying, because the user is locked.
    case locked(LockStatus)
    /// A gesture refused without verifying, because only the passcode is accepted now; not counted.
    case passcodeRequired(PasscodeReason)
    /// Not enrolled; the dummy verification ran.
    case notEnrolled
}

/// A failure an attempt counted: what the `authsucc` line needs to take it back.
public struct CountedFailure: Equatable, Sendable {
    /// The account's own name, which the counters are filed under.
    public var user: UserName
    /// The local counter before the failure was counted.
    public var before: Tally
    /// The local counter as the failure left it (its `serial` numbers the attempt).
    public var after: Tally
    /// Fleet mode: the failure was also counted in the directory.
    public var countedInDirectory = false

    public init(user: UserName, before: Tally, after: Tally, countedInDirectory: Bool = false) {
        (self.user, self.before, self.after, self.countedInDirectory) = (user, before, after, countedInDirectory)
    }
}

/// The state before the prompt: whether the user is enrolled, the lock, what the prompt offers.
public struct CredentialState: Equatable, Sendable {
    /// Why the user counts as not enrolled, or `nil` when enrolled.
    public var notEnrolledReason: String?
    public var lock: LockStatus
    public var acceptance: Acceptance
    /// Failures in a row.
    public var failures: UInt32
    /// The counter file does not parse (it reads as locked until reset); the helper logs it itself.
    public var counterDamaged: Bool

    public init(notEnrolledReason: String?, lock: LockStatus, acceptance: Acceptance, failures: UInt32,
                counterDamaged: Bool = false) {
        (self.notEnrolledReason, self.lock, self.acceptance) = (notEnrolledReason, lock, acceptance)
        (self.failures, self.counterDamaged) = (failures, counterDamaged)
    }

    /// A user without a record (or account): open, the common prompt, no failures.
    public static func notEnrolled(_ reason: String) -> CredentialState {
        CredentialState(notEnrolledReason: reason, lock: .open, acceptance: .unenrolled, failures: 0)
    }

    public var isEnrolled: Bool { notEnrolledReason == nil }

    /// Whether a Puff passcode is enrolled (then it is the proof for a change).
    public var hasPasscode: Bool {
        guard isEnrolled else { return false }
        switch acceptance {
        case .passcodeOrGesture, .passcodeOnly: return true
        case .gestureOnly, .refused: return false
        }
    }
}

/// The rules every counter applies under its own lock, before and after counting: one value,
/// no I/O, so the files store, the directory and the offline cache decide alike.
public struct AdmissionRules: Sendable {
    public var lockout: LockoutPolicy
    public var quickFactor: QuickFactorPolicy
    public var minimumPasscode: PasscodeType?
    /// This boot's id (`nil`: unreadable, a restart is assumed).
    public var bootID: String?
    /// The attempt's time.
    public var time: Int64
    public var isRoot: Bool
    public var isGesture: Bool
    /// A passcode proving a change: `min_passcode` does not refuse it.
    public var asProofForChange: Bool

    public init(lockout: LockoutPolicy, quickFactor: QuickFactorPolicy, minimumPasscode: PasscodeType?, bootID: String?,
                time: Int64, isRoot: Bool, isGesture: Bool, asProofForChange: Bool) {
        (self.lockout, self.quickFactor, self.minimumPasscode, self.bootID) = (lockout, quickFactor, minimumPasscode, bootID)
        (self.time, self.isRoot, self.isGesture, self.asProofForChange) = (time, isRoot, isGesture, asProofForChange)
    }

    /// What the record and the counter decide without a secret: refused (locked; an
    /// administrator's lock on a gesture-only user), a gesture while only the passcode is
    /// accepted, a passcode type below `min_passcode`. `nil`: count the attempt, then verify.
    public func refusal(_ record: UserRecord, _ tally: Tally) -> AttemptOutcome? {
        let status = lockout.status(of: tally, now: time, isRoot: isRoot)
        guard status == .open else { return .locked(status) }
        let acceptance = quickFactor.acceptance(of: record, tally, bootID: bootID, now: time)
        if case .refused = acceptance { return .locked(.lockedUntilReset) }
        if isGesture, case .passcodeOnly(_, let reason?) = acceptance { return .passcodeRequired(reason) }
        if !isGesture, !asProofForChange, let minimum = minimumPasscode, let stored = record.passcode, !stored.type.meets(minimum) {
            return .failure(failures: tally.failures, lock: .open,
                            detail: "the enrolled passcode type \(stored.type.rawValue) is below "
                                + "min_passcode=\(minimum.rawValue); not counted, nothing verified")
        }
        return nil
    }

    /// `tally` with this attempt counted as a failure (and as a gesture failure for a gesture).
    public func counting(_ tally: Tally) -> Tally {
        var next = lockout.recordingFailure(in: tally, now: time)
        if isGesture, next.gestureFailures < UInt32.max { next.gestureFailures += 1 }
        return next
    }

    /// The lock `tally` leaves.
    public func lock(after tally: Tally) -> LockStatus { lockout.status(of: tally, now: time, isRoot: isRoot) }

    /// `tally` after this attempt, numbered `serial`, verified: the failures counted up to it
    /// cleared, and a passcode's success recorded (the gesture is trusted again). `nil`: no change.
    public func settled(_ tally: Tally, serial: UInt64, passcodeUsed: Bool) -> Tally? {
        var next = tally.settlingSuccess(of: serial, deny: lockout.deny) ?? tally
        if passcodeUsed { next = next.passcodeUsed(at: time, boot: bootID) }
        return next == tally ? nil : next
    }
}

/// An attempt as a counter's step 1 counted it.
public struct CountedAttempt {
    /// The record the secret is checked against.
    public var record: UserRecord
    /// A gesture's template, opened before counting.
    public var template: GestureTemplate?
    /// The failures in a row this count makes.
    public var failures: UInt32
    /// The lock this count leaves.
    public var lock: LockStatus
    /// What `authsucc` (or the helper's system-password check) takes back.
    public var failure: CountedFailure
    /// Where the count went, for the failure's log line ("" for the files store).
    public var origin: String
    /// Fleet mode: `false` when another host counted between this attempt's read and its
    /// increment past `deny` (`LockoutPolicy.fleetMayVerify`): counted, never verified.
    public var mayVerify: Bool
    /// Fleet mode online: the directory's count after this attempt's increment.
    public var directoryCount: UInt32

    public init(record: UserRecord, template: GestureTemplate?, failures: UInt32, lock: LockStatus,
                failure: CountedFailure, origin: String = "", mayVerify: Bool = true, directoryCount: UInt32 = 0) {
        (self.record, self.template, self.failures, self.lock, self.failure) = (record, template, failures, lock, failure)
        (self.origin, self.mayVerify, self.directoryCount) = (origin, mayVerify, directoryCount)
    }

    /// This counted attempt refused, `detail` saying why.
    public func failed(_ detail: String) -> AttemptOutcome {
        let joined = origin.isEmpty ? detail : detail.isEmpty ? origin : origin + "; " + detail
        return .failure(failures: failures, lock: lock, detail: joined)
    }
}

/// What the record must still hold, read again under the lock after the secret verified.
public enum SettleCheck: Sendable {
    /// The passcode that verified.
    case passcode(StoredPasscode)
    /// The gesture that matched.
    case gesture(StoredGesture?)
}

/// What a counter's step 3 does after the secret verified.
public enum Settlement {
    /// The record changed meanwhile (or an administrator locked a gesture meanwhile): refused.
    case refused(AttemptOutcome)
    /// The success stands; the counter is to be written as this (`nil`: left as it is).
    case settled(Tally?)
}

extension AdmissionRules {
    /// Step 3's rule, the same for every counter: `current` (the record read again under the
    /// lock) must still hold what `check` verified; then the failures counted up to `attempt`
    /// are cleared from `tally`, and a passcode's success is recorded.
    public func settle(_ attempt: CountedAttempt, _ check: SettleCheck, current: UserRecord?, adminLock: Bool,
                       tally: Tally, passcodeUsed: Bool) -> Settlement {
        if let refused = refusal(of: attempt, check, current: current, adminLock: adminLock) { return .refused(refused) }
        return .settled(settled(tally, serial: attempt.failure.after.serial, passcodeUsed: passcodeUsed))
    }

    /// Why the success of `attempt` does not stand: `current` no longer holds what `check`
    /// verified, or an administrator locked a gesture meanwhile. `nil`: it stands.
    public func refusal(of attempt: CountedAttempt, _ check: SettleCheck, current: UserRecord?,
                        adminLock: Bool) -> AttemptOutcome? {
        guard let current else { return attempt.failed("the record was removed meanwhile") }
        switch check {
        case .passcode(let stored):
            return current.passcode == stored ? nil : attempt.failed("the passcode was changed meanwhile")
        case .gesture(let stored):
            guard current.gesture == stored else { return attempt.failed("the gesture was changed meanwhile") }
            guard adminLock else { return nil }
            return current.passcode == nil ? .locked(.lockedUntilReset) : .passcodeRequired(.administrator)
        }
    }
}

extension Tally {
    /// This tally after a passcode success (or an enrollment) at `time`: the gesture is trusted again.
    public func passcodeUsed(at time: Int64, boot: String?) -> Tally {
        var next = self
        next.passcodeAt = time
        next.passcodeBoot = boot ?? ""
        next.adminLock = false
        return next
    }

    /// This tally with the attempt numbered `serial` (counted, its secret never compared)
    /// taken back, unless a success or a reset cleared it already (`nil`).
    public func takingBack(serial: UInt64, deny: UInt32) -> Tally? {
        guard serial > clearedSerial, failures > 0, !isDamaged else { return nil }
        var next = self
        next.failures -= 1
        if deny == 0 || next.failures < deny { next.lockedUntil = 0 }
        return next
    }

    /// This tally with `failure` taken back after the system password was typed at Puff's
    /// prompt: back to what it was before when nothing was counted since, else one failure off
    /// (a lock lifted only when the rest stay below `deny`). `nil`: nothing left to take back.
    public func takingBack(_ failure: CountedFailure, deny: UInt32) -> Tally? {
        guard failure.after.serial > clearedSerial, !isDamaged, failures > 0 else { return nil }
        if self == failure.after {
            var next = failure.before
            next.serial = serial
            next.clearedSerial = clearedSerial
            return next
        }
        var next = self
        next.failures -= 1
        if deny == 0 || next.failures < deny { next.lockedUntil = 0 }
        if next.failures == 0 { next.lastFailure = 0 }
        return next
    }
}
