/// Fleet mode's lockout arithmetic: the failure count lives in the directory and is
/// incremented there atomically by every host; the lock is derived from it with the same
/// policy as the local counter. Pure functions of their inputs, like `LockoutPolicy`.
public struct FleetCounter: Equatable, Sendable {
    /// `puffFailures`: failures in a row, fleet-wide.
    public var failures: UInt32
    /// `puffLastFailure`: time of the latest failure (0 when none).
    public var lastFailure: Int64
    /// `puffAdminLock`.
    public var adminLock: Bool

    /// A counter as read from the directory.
    public init(failures: UInt32, lastFailure: Int64, adminLock: Bool) {
        self.failures = failures
        self.lastFailure = lastFailure
        self.adminLock = adminLock
    }
}

extension LockoutPolicy {
    /// When the lock that follows the `failures`-th failure in a row at `time` ends: 0 when
    /// that failure does not lock, `Tally.untilReset` for a lock only an administrator lifts.
    /// The same steps as `recordingFailure(in:now:)`.
    public func lockEnd(afterFailures failures: UInt32, at time: Int64) -> Int64 {
        guard deny > 0, failures >= deny || (maxFailures > 0 && failures >= maxFailures) else { return 0 }
        if maxFailures > 0, failures >= maxFailures { return Tally.untilReset }
        let index = Int(min(failures - deny, UInt32(Int32.max)))
        let delay = delays.isEmpty ? 0 : delays[min(index, delays.count - 1)]
        if delay == 0 { return Tally.untilReset }
        let (end, overflow) = time.addingReportingOverflow(delay)
        return overflow ? Tally.untilReset : end
    }

    /// The tally an attempt on this host goes by: the failures, their time and the lock from
    /// the fleet's counter; the quick-factor state of this host (gesture failures, the time
    /// and boot of its latest passcode success); an administrator's lock from either.
    public func fleetTally(_ fleet: FleetCounter, local: Tally) -> Tally {
        var tally = local
        tally.failures = fleet.failures
        tally.lastFailure = fleet.lastFailure
        tally.lockedUntil = lockEnd(afterFailures: fleet.failures, at: fleet.lastFailure)
        tally.adminLock = local.adminLock || fleet.adminLock
        return tally
    }

    /// Whether the quiet time (`fail_interval`) since the fleet's latest failure or lock has
    /// passed at `now`, so the run of failures is forgotten before this attempt is counted.
    public func fleetRunExpired(_ fleet: FleetCounter, now: Int64) -> Bool {
        guard failInterval > 0, fleet.failures > 0 else { return false }
        let end = lockEnd(afterFailures: fleet.failures, at: fleet.lastFailure)
        let quietSince = max(fleet.lastFailure, end == Tally.untilReset ? 0 : end)
        return now > quietSince && now - quietSince > failInterval
    }

    /// Whether an attempt whose increment produced `counted` may go on to the verification,
    /// given the counter `before` it read (and found open) just before incrementing.
    ///
    /// The first `deny` failures of a run are verified whatever their order. Beyond them an
    /// attempt is verified only when nobody counted between its read and its increment
    /// (`counted == before + 1`): then the lock it found expired is the one its own count
    /// follows. Otherwise another host counted in between, possibly the failure that locks,
    /// and the attempt stays counted but unverified: over-counting is the safe side.
    public func fleetMayVerify(before: UInt32, counted: UInt32, isRoot: Bool) -> Bool {
        guard deny > 0, !isRoot || evenDenyRoot else { return true }
        if counted <= deny { return true }
        return before < UInt32.max && counted == before + 1
    }
}
