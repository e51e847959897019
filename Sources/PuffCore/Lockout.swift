/// The lockout rules: how many failures in a row are allowed and how long each lock lasts.
///
/// Arithmetic only; the clock is passed in, so every rule is testable to the second.
public struct LockoutPolicy: Equatable, Sendable {
    /// Failures in a row before the first lock; 0 turns locking off.
    public var deny: UInt32 = 5
    /// Seconds without a failure (counted from the end of the last lock) after which the run
    /// of failures is forgotten; 0 means never: only a success or an admin reset clears it.
    public var failInterval: Int64 = 0
    /// Lock lengths in seconds: entry 0 after the `deny`-th failure, entry 1 after the next,
    /// the last entry for every later failure. A 0 entry means "until an admin resets".
    /// The default follows iOS: 1, 5, 15, 15 and 60 minutes.
    public var delays: [Int64] = [60, 300, 900, 900, 3600]
    /// Lock root too. On by default: root's Puff secret has the same guess budget as
    /// anyone's (`root_exempt` turns it off, which leaves root's PIN open to unlimited
    /// guessing by anyone who can run `su`).
    public var evenDenyRoot = true
    /// Failures in a row after which only an administrator's reset helps (iOS stops at 10);
    /// 0 means no cap.
    public var maxFailures: UInt32 = 10

    /// The default policy.
    public init() {}

    /// Whether an attempt may run now.
    ///
    /// The cap is on the count, not on the stored lock: a counter written under an earlier
    /// policy (before `max_failures`, or with a higher one) that holds `maxFailures` failures
    /// or more is locked until a reset even when its timed lock has run out, so it never gets
    /// one more verified guess.
    public func status(of tally: Tally, now: Int64, isRoot: Bool) -> LockStatus {
        guard deny > 0, !isRoot || evenDenyRoot else { return .open }
        if tally.lockedUntil == Tally.untilReset || (maxFailures > 0 && tally.failures >= maxFailures) {
            return .lockedUntilReset
        }
        guard tally.lockedUntil != 0, now < tally.lockedUntil else { return .open }
        let (left, overflow) = tally.lockedUntil.subtractingReportingOverflow(now)
        return .locked(secondsLeft: overflow ? Int64.max : left)
    }

    /// The tally after one more failure at `now`.
    public func recordingFailure(in tally: Tally, now: Int64) -> Tally {
        var next = tally
        if failInterval > 0, tally.failures > 0 {
            let lockEnd = tally.lockedUntil == Tally.untilReset ? 0 : tally.lockedUntil
            let quietSince = max(tally.lastFailure, lockEnd)
            if now > quietSince, now - quietSince > failInterval { next = Tally() }
        }
        next.failures = next.failures == UInt32.max ? UInt32.max : next.failures + 1
        next.lastFailure = now
        next.serial = tally.serial == UInt64.max ? UInt64.max : tally.serial + 1
        next.clearedSerial = tally.clearedSerial
        if deny > 0, maxFailures > 0, next.failures >= maxFailures {
            next.lockedUntil = Tally.untilReset
        } else if deny > 0, next.failures >= deny {
            let index = Int(min(next.failures - deny, UInt32(Int32.max)))
            let delay = delays.isEmpty ? 0 : delays[min(index, delays.count - 1)]
            if delay == 0 {
                next.lockedUntil = Tally.untilReset
            } else {
                let (end, overflow) = now.addingReportingOverflow(delay)
                next.lockedUntil = overflow ? Tally.untilReset : end
            }
        }
        return next
    }
}

/// Whether the lockout allows an attempt.
public enum LockStatus: Equatable, Sendable {
    /// Attempts are allowed.
    case open
    /// Locked for this many more seconds.
    case locked(secondsLeft: Int64)
    /// Locked until an administrator runs `puff-enroll reset`.
    case lockedUntilReset
}

/// One user's counter and quick-factor state as stored under the state directory.
public struct Tally: Equatable, Sendable {
    /// `lockedUntil` value meaning "until an admin reset".
    public static let untilReset = Int64.max

    /// Failures in a row since the last success or reset. An attempt is counted here
    /// *before* its slow verification and cleared on success, so killing the process
    /// mid-verification leaves it counted.
    public var failures: UInt32 = 0
    /// Wall-clock seconds of the latest failure, 0 if none.
    public var lastFailure: Int64 = 0
    /// Wall-clock seconds at which the lock ends; 0 when not locked.
    public var lockedUntil: Int64 = 0
    /// Gesture failures in a row since the last success of either factor.
    public var gestureFailures: UInt32 = 0
    /// Wall-clock seconds of the latest passcode success (or passcode enrollment); 0 if none.
    public var passcodeAt: Int64 = 0
    /// The kernel boot id at the latest passcode success, 32 lowercase hex digits; empty if none.
    public var passcodeBoot: String = ""
    /// An administrator asked for the passcode (`puff-enroll lock`).
    public var adminLock = false
    /// Attempts ever counted for this user: each attempt's number, taken when it is counted
    /// (before its secret is checked), says which failures were counted after it.
    public var serial: UInt64 = 0
    /// The number of the latest attempt whose success (or an admin reset) cleared the count;
    /// a success of an older attempt, finishing later, clears nothing.
    public var clearedSerial: UInt64 = 0
    /// The file did not parse (cut short, scribbled on): the account is locked until an
    /// administrator's reset rewrites it. Never stored.
    public var isDamaged = false

    /// What a counter that does not parse reads as: never zero, locked until reset.
    public static var damaged: Tally {
        var tally = Tally(failures: UInt32.max, lastFailure: 0, lockedUntil: untilReset)
        tally.isDamaged = true
        return tally
    }

    /// Every field equal, the boot id by its bytes (ByteText.swift); written out instead of
    /// derived, which would compare the boot id by Unicode canonical equivalence.
    public static func == (left: Tally, right: Tally) -> Bool {
        left.failures == right.failures && left.lastFailure == right.lastFailure && left.lockedUntil == right.lockedUntil
            && left.gestureFailures == right.gestureFailures && left.passcodeAt == right.passcodeAt
            && left.passcodeBoot.sameBytes(as: right.passcodeBoot) && left.adminLock == right.adminLock
            && left.serial == right.serial && left.clearedSerial == right.clearedSerial && left.isDamaged == right.isDamaged
    }

    /// An empty tally.
    public init(failures: UInt32 = 0, lastFailure: Int64 = 0, lockedUntil: Int64 = 0) {
        self.failures = failures
        self.lastFailure = lastFailure
        self.lockedUntil = lockedUntil
    }

    /// This tally with the failure run and its lock cleared, keeping the quick-factor state.
    public func clearingFailures() -> Tally {
        var next = self
        next.failures = 0
        next.lastFailure = 0
        next.lockedUntil = 0
        next.gestureFailures = 0
        return next
    }

    /// This tally after the success of the attempt numbered `attempt` (its `serial` when it
    /// was counted): the failures counted after it (attempts still running, or failed since)
    /// stay counted, with their lock; those before it are cleared. When a newer success or a
    /// reset already cleared past `attempt`, nothing changes (`nil`).
    public func settlingSuccess(of attempt: UInt64, deny: UInt32) -> Tally? {
        guard attempt > clearedSerial, attempt <= serial else { return nil }
        let after = serial - attempt
        var next = after == 0 ? clearingFailures() : self
        next.clearedSerial = attempt
        if after > 0 {
            next.failures = UInt32(clamping: after)
            next.gestureFailures = min(gestureFailures, next.failures)
            if deny == 0 || next.failures < deny { next.lockedUntil = 0 }
        }
        return next
    }

    /// Largest encoded size accepted when reading.
    public static let maximumEncodedSize = 1024

    /// The on-disk text: a version line, then `key value` lines.
    public func encoded() -> [UInt8] {
        Array("puff-tally 3\n".utf8) + fieldLines()
    }

    /// The fields of versions 3 and 4, a `key value` line each.
    private func fieldLines() -> [UInt8] {
        Array("""
        failures \(failures)
        last-failure \(lastFailure)
        locked-until \(lockedUntil)
        gesture-failures \(gestureFailures)
        passcode-at \(passcodeAt)
        passcode-boot \(passcodeBoot.isEmpty ? "-" : passcodeBoot)
        admin-lock \(adminLock ? 1 : 0)
        serial \(serial)
        cleared-serial \(clearedSerial)

        """.utf8)
    }

    /// One slot of the version-4 counter file (`LockoutStore`): the version-3 fields, then
    /// `generation`, the number of this write (the file's newer slot is the one with the larger
    /// number). The store frames it (a check line, padding) and chooses the slot.
    public func encodedSlot(generation: UInt64) -> [UInt8] {
        Array("puff-tally 4\n".utf8) + fieldLines() + Array("generation \(generation)\n".utf8)
    }

    /// Parses `encodedSlot(generation:)` output strictly: the tally and its generation.
    public static func decodeSlot(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> (Tally, generation: UInt64) {
        let fields = try KeyValueText.parse(bytes, header: "puff-tally 4", maximumSize: maximumEncodedSize,
                                            keys: version4Keys, optional: [])
        guard let text = fields["generation"], let generation = UInt64(canonicalDecimal: text) else {
            throw .badValue
        }
        return (try tally(from: fields, version: 3), generation)
    }

    // Each version's keys written out.
    private static let version1Keys: [String] = ["failures", "last-failure", "locked-until"]
    private static let version2Keys: [String] = ["failures", "last-failure", "locked-until",
                                                    "gesture-failures", "passcode-at", "passcode-boot", "admin-lock"]
    private static let version3Keys: [String] = ["failures", "last-failure", "locked-until",
                                                    "gesture-failures", "passcode-at", "passcode-boot", "admin-lock",
                                                    "serial", "cleared-serial"]
    private static let version4Keys: [String] = ["failures", "last-failure", "locked-until",
                                                    "gesture-failures", "passcode-at", "passcode-boot", "admin-lock",
                                                    "serial", "cleared-serial", "generation"]

    /// Parses `encoded()` output strictly. Version 1 files (counters only) read as a tally
    /// whose passcode was never used, so the next login asks for the passcode.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> Tally {
        let isVersion1 = bytes.starts(with: Array("puff-tally 1\n".utf8))
        let isVersion2 = bytes.starts(with: Array("puff-tally 2\n".utf8))
        let fields = try KeyValueText.parse(bytes, header: isVersion1 ? "puff-tally 1" : isVersion2 ? "puff-tally 2" : "puff-tally 3",
                                            maximumSize: maximumEncodedSize,
                                            keys: isVersion1 ? version1Keys : isVersion2 ? version2Keys : version3Keys,
                                            optional: [])
        return try tally(from: fields, version: isVersion1 ? 1 : isVersion2 ? 2 : 3)
    }

    /// The tally of a parsed counter's fields (`version` 3 for the fields of versions 3 and 4).
    private static func tally(from fields: KeyValueFields, version: Int) throws(RecordFormatError) -> Tally {
        // Canonical decimal only: Swift's parsers also take "+1", "-0" and "01". Every field is a
        // count or a time that cannot be negative: one parser (UInt64), then each field's range.
        func canonical(_ key: String) -> UInt64? {
            guard let text = fields[key], let value = UInt64(canonicalDecimal: text) else { return nil }
            return value
        }
        guard let failures = canonical("failures").flatMap(UInt32.init(exactly:)),
              let last = canonical("last-failure").flatMap(Int64.init(exactly:)),
              let until = canonical("locked-until").flatMap(Int64.init(exactly:)) else {
            throw .badValue
        }
        var tally = Tally(failures: failures, lastFailure: last, lockedUntil: until)
        if version == 1 { return tally }
        guard let gestureFailures = canonical("gesture-failures").flatMap(UInt32.init(exactly:)),
              let passcodeAt = canonical("passcode-at").flatMap(Int64.init(exactly:)),
              let boot = fields["passcode-boot"], boot.sameBytes(as: "-") || BootID.isValid(boot),
              let adminLock = canonical("admin-lock"), adminLock <= 1 else {
            throw .badValue
        }
        tally.gestureFailures = gestureFailures
        tally.passcodeAt = passcodeAt
        tally.passcodeBoot = boot.sameBytes(as: "-") ? "" : boot
        tally.adminLock = adminLock == 1
        if version == 2 { return tally }
        guard let serial = canonical("serial"),
              let cleared = canonical("cleared-serial"), cleared <= serial else {
            throw .badValue
        }
        tally.serial = serial
        tally.clearedSerial = cleared
        return tally
    }
}
