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
    /// Lock root too (by default root is never locked, as with pam_faillock).
    public var evenDenyRoot = false

    /// The default policy.
    public init() {}

    /// Whether an attempt may run now.
    public func status(of tally: Tally, now: Int64, isRoot: Bool) -> LockStatus {
        guard deny > 0, !isRoot || evenDenyRoot, tally.lockedUntil != 0 else { return .open }
        if tally.lockedUntil == Tally.untilReset { return .lockedUntilReset }
        guard now < tally.lockedUntil else { return .open }
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
        if deny > 0, next.failures >= deny {
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

/// One user's failure counter as stored under the state directory.
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

    /// An empty tally.
    public init(failures: UInt32 = 0, lastFailure: Int64 = 0, lockedUntil: Int64 = 0) {
        self.failures = failures
        self.lastFailure = lastFailure
        self.lockedUntil = lockedUntil
    }

    /// Largest encoded size accepted when reading.
    public static let maximumEncodedSize = 1024

    /// The on-disk text: a version line, then `key value` lines.
    public func encoded() -> [UInt8] {
        Array("""
        puff-tally 1
        failures \(failures)
        last-failure \(lastFailure)
        locked-until \(lockedUntil)

        """.utf8)
    }

    /// Parses `encoded()` output strictly.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> Tally {
        let fields = try KeyValueText.parse(bytes, header: "puff-tally 1", maximumSize: maximumEncodedSize,
                                            keys: ["failures", "last-failure", "locked-until"],
                                            optional: [])
        // Canonical decimal only: Swift's parsers also take "+1", "-0" and "01".
        func canonical<T: FixedWidthInteger>(_ key: String, _ type: T.Type) -> T? {
            guard let text = fields[key], let value = T(text), String(value) == text else { return nil }
            return value
        }
        guard let failures = canonical("failures", UInt32.self),
              let last = canonical("last-failure", Int64.self), last >= 0,
              let until = canonical("locked-until", Int64.self), until >= 0 else {
            throw .badValue
        }
        return Tally(failures: failures, lastFailure: last, lockedUntil: until)
    }
}
