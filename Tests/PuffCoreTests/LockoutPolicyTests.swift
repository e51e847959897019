import PuffCore
import Testing

@Suite("LockoutPolicy")
struct LockoutPolicyTests {
    static let start: Int64 = 1_700_000_000

    private func policy(deny: UInt32 = 3, delays: [Int64] = [60, 300, 900], failInterval: Int64 = 0,
                        evenDenyRoot: Bool = false, maxFailures: UInt32 = 0) -> LockoutPolicy {
        var policy = LockoutPolicy()
        policy.maxFailures = maxFailures
        policy.deny = deny
        policy.delays = delays
        policy.failInterval = failInterval
        policy.evenDenyRoot = evenDenyRoot
        return policy
    }

    /// Records one failure per entry of `times`, returning every intermediate tally.
    private func failures(_ policy: LockoutPolicy, at times: [Int64], from tally: Tally = Tally()) -> [Tally] {
        var current = tally
        return times.map { time in
            current = policy.recordingFailure(in: current, now: time)
            return current
        }
    }

    @Test("no lock before the deny-th failure")
    func noLockBeforeDeny() {
        let rules = policy(deny: 3)
        let tallies = failures(rules, at: [Self.start, Self.start + 1])
        #expect(tallies == [
            Tally(failures: 1, lastFailure: Self.start, lockedUntil: 0).numbered(1),
            Tally(failures: 2, lastFailure: Self.start + 1, lockedUntil: 0).numbered(2),
        ])
        #expect(rules.status(of: tallies[1], now: Self.start + 1, isRoot: false) == .open)
    }

    @Test("delays[0] at the deny-th failure, then delays[1], then the last entry repeats")
    func delaySequence() {
        let rules = policy(deny: 3, delays: [60, 300, 900])
        let t = Self.start
        let tallies = failures(rules, at: [t, t + 1, t + 2, t + 100, t + 500, t + 2000, t + 3000])
        #expect(tallies.map(\.failures) == [1, 2, 3, 4, 5, 6, 7])
        #expect(tallies.map(\.lockedUntil) == [0, 0, t + 2 + 60, t + 100 + 300, t + 500 + 900, t + 2000 + 900, t + 3000 + 900])
        #expect(tallies.map(\.lastFailure) == [t, t + 1, t + 2, t + 100, t + 500, t + 2000, t + 3000])
    }

    @Test("deny=1 locks at the first failure")
    func denyOne() {
        let rules = policy(deny: 1, delays: [30])
        let tally = rules.recordingFailure(in: Tally(), now: Self.start)
        #expect(tally == Tally(failures: 1, lastFailure: Self.start, lockedUntil: Self.start + 30).numbered(1))
        #expect(rules.status(of: tally, now: Self.start, isRoot: false) == .locked(secondsLeft: 30))
    }

    @Test("an unlock_time-style single delay applies to every lock")
    func singleDelay() {
        let rules = policy(deny: 2, delays: [600])
        let t = Self.start
        let tallies = failures(rules, at: [t, t + 1, t + 700, t + 1400])
        #expect(tallies.map(\.lockedUntil) == [0, t + 601, t + 1300, t + 2000])
    }

    @Test("a 0 delay locks until an admin reset")
    func zeroDelay() {
        let rules = policy(deny: 2, delays: [60, 0])
        let t = Self.start
        let tallies = failures(rules, at: [t, t + 1, t + 100])
        #expect(tallies[1].lockedUntil == t + 61)
        #expect(tallies[2].lockedUntil == Tally.untilReset)
        #expect(rules.status(of: tallies[2], now: t + 100, isRoot: false) == .lockedUntilReset)
        #expect(rules.status(of: tallies[2], now: Int64.max - 1, isRoot: false) == .lockedUntilReset)
        #expect(rules.status(of: tallies[2], now: Int64.max, isRoot: false) == .lockedUntilReset)
        // An empty list behaves like [0].
        let empty = policy(deny: 1, delays: [])
        #expect(empty.recordingFailure(in: Tally(), now: t).lockedUntil == Tally.untilReset)
    }

    @Test("deny=0 never locks")
    func denyZero() {
        let rules = policy(deny: 0, delays: [60])
        let tallies = failures(rules, at: (0..<50).map { Self.start + $0 })
        #expect(tallies.last == Tally(failures: 50, lastFailure: Self.start + 49, lockedUntil: 0).numbered(50))
        #expect(tallies.allSatisfy { $0.lockedUntil == 0 })
        #expect(rules.status(of: tallies[49], now: Self.start + 49, isRoot: false) == .open)
        // Even a tally written under an earlier policy does not lock.
        let locked = Tally(failures: 9, lastFailure: Self.start, lockedUntil: Self.start + 1000)
        #expect(rules.status(of: locked, now: Self.start, isRoot: false) == .open)
    }

    @Test("root is locked by default; root_exempt (evenDenyRoot false) is the opt-out")
    func rootDefault() {
        #expect(LockoutPolicy().evenDenyRoot)
        #expect(LockoutPolicy().maxFailures == 10)
    }

    @Test("after max_failures only a reset helps, whatever the delays; 0 means no cap")
    func cap() {
        let t = Self.start
        let capped = policy(deny: 5, delays: [60, 300, 900, 900, 3600], maxFailures: 10)
        var tally = Tally()
        for index in 0..<10 { tally = capped.recordingFailure(in: tally, now: t + Int64(index) * 10_000) }
        #expect(tally.failures == 10)
        #expect(tally.lockedUntil == Tally.untilReset)
        #expect(capped.status(of: tally, now: Int64.max - 1, isRoot: false) == .lockedUntilReset)
        #expect(capped.status(of: tally, now: t, isRoot: true) == .open)  // root_exempt in this policy
        var uncapped = Tally()
        let open = policy(deny: 5, delays: [60, 3600], maxFailures: 0)
        for index in 0..<10 { uncapped = open.recordingFailure(in: uncapped, now: t + Int64(index) * 10_000) }
        #expect(uncapped.lockedUntil == t + 90_000 + 3600)
        // The default policy: 10 failures, whatever the spacing, and the account waits for a reset.
        var defaults = Tally()
        for index in 0..<10 { defaults = LockoutPolicy().recordingFailure(in: defaults, now: t + Int64(index) * 100_000) }
        #expect(LockoutPolicy().status(of: defaults, now: t + 2_000_000, isRoot: true) == .lockedUntilReset)
    }

    @Test("the cap is on the count: a counter from before max_failures with an expired lock stays locked until reset")
    func capOnTheCount() {
        let t = Self.start
        // 500 failures under a policy without a cap, the last timed lock long over.
        let old = Tally(failures: 500, lastFailure: t, lockedUntil: t + 3600)
        #expect(LockoutPolicy().status(of: old, now: t + 100_000, isRoot: false) == .lockedUntilReset)
        #expect(LockoutPolicy().status(of: old, now: t + 100_000, isRoot: true) == .lockedUntilReset)
        // Exactly at the cap, with no lock stored at all.
        #expect(LockoutPolicy().status(of: Tally(failures: 10, lastFailure: t), now: t, isRoot: false) == .lockedUntilReset)
        #expect(LockoutPolicy().status(of: Tally(failures: 9, lastFailure: t), now: t, isRoot: false) == .open)
        // No cap, no locking, or root exempt: the count alone does not lock.
        let uncapped = policy(deny: 5, delays: [60], maxFailures: 0)
        #expect(uncapped.status(of: old, now: t + 100_000, isRoot: false) == .open)
        #expect(policy(deny: 0, delays: [60], maxFailures: 10).status(of: old, now: t + 100_000, isRoot: false) == .open)
        #expect(policy(deny: 5, delays: [60], evenDenyRoot: false, maxFailures: 10).status(of: old, now: t + 100_000, isRoot: true) == .open)
    }

    @Test("a success clears the failures counted before it and keeps those counted after it")
    func settlingSuccess() {
        let rules = policy(deny: 3, delays: [60])
        let t = Self.start
        // Attempts 1..4 counted; attempt 2 turns out to be right while 3 and 4 still run.
        let four = failures(rules, at: [t, t + 1, t + 2, t + 3])[3]
        #expect(four.serial == 4 && four.lockedUntil == t + 63)
        let settled = four.settlingSuccess(of: 2, deny: rules.deny)
        #expect(settled?.failures == 2)
        #expect(settled?.lockedUntil == 0)
        #expect(settled?.clearedSerial == 2)
        // The latest attempt's success clears everything.
        #expect(four.settlingSuccess(of: 4, deny: rules.deny)?.failures == 0)
        // An older success finishing after a newer one (or a reset) changes nothing.
        #expect(settled?.settlingSuccess(of: 1, deny: rules.deny) == nil)
        #expect(settled?.settlingSuccess(of: 2, deny: rules.deny) == nil)
        // An attempt number never counted is refused.
        #expect(four.settlingSuccess(of: 5, deny: rules.deny) == nil)
        // Failures after the success that reach deny keep their lock.
        let six = failures(rules, at: [t + 4, t + 5], from: four)[1]
        let kept = six.settlingSuccess(of: 2, deny: rules.deny)
        #expect(kept?.failures == 4)
        #expect(kept?.lockedUntil == six.lockedUntil)
    }

    @Test("a damaged counter reads as locked until reset, never as zero")
    func damaged() {
        #expect(Tally.damaged.isDamaged)
        #expect(Tally.damaged.failures > 0)
        #expect(LockoutPolicy().status(of: .damaged, now: Self.start, isRoot: false) == .lockedUntilReset)
    }

    @Test("root is locked only with evenDenyRoot")
    func root() {
        let locked = Tally(failures: 3, lastFailure: Self.start, lockedUntil: Self.start + 60)
        let forever = Tally(failures: 3, lastFailure: Self.start, lockedUntil: Tally.untilReset)
        let lenient = policy(deny: 3, evenDenyRoot: false)
        let strict = policy(deny: 3, evenDenyRoot: true)
        #expect(lenient.status(of: locked, now: Self.start, isRoot: true) == .open)
        #expect(lenient.status(of: forever, now: Self.start, isRoot: true) == .open)
        #expect(lenient.status(of: locked, now: Self.start, isRoot: false) == .locked(secondsLeft: 60))
        #expect(strict.status(of: locked, now: Self.start, isRoot: true) == .locked(secondsLeft: 60))
        #expect(strict.status(of: forever, now: Self.start, isRoot: true) == .lockedUntilReset)
    }

    @Test("the status counts down and opens exactly at lockedUntil")
    func countdown() {
        let rules = policy()
        let tally = Tally(failures: 3, lastFailure: Self.start, lockedUntil: Self.start + 60)
        #expect(rules.status(of: tally, now: Self.start, isRoot: false) == .locked(secondsLeft: 60))
        #expect(rules.status(of: tally, now: Self.start + 1, isRoot: false) == .locked(secondsLeft: 59))
        #expect(rules.status(of: tally, now: Self.start + 59, isRoot: false) == .locked(secondsLeft: 1))
        #expect(rules.status(of: tally, now: Self.start + 60, isRoot: false) == .open)
        #expect(rules.status(of: tally, now: Self.start + 61, isRoot: false) == .open)
        #expect(rules.status(of: Tally(), now: Self.start, isRoot: false) == .open)
    }

    @Test("a clock going backwards does not unlock early")
    func clockBackwards() {
        let rules = policy(deny: 3, delays: [60], failInterval: 30)
        let tally = Tally(failures: 3, lastFailure: Self.start, lockedUntil: Self.start + 60)
        #expect(rules.status(of: tally, now: Self.start - 3600, isRoot: false) == .locked(secondsLeft: 3660))
        #expect(rules.status(of: tally, now: 0, isRoot: false) == .locked(secondsLeft: Self.start + 60))
        // A failure recorded at an earlier time does not forget the run.
        let below = Tally(failures: 2, lastFailure: Self.start, lockedUntil: 0)
        let next = rules.recordingFailure(in: below, now: Self.start - 10_000)
        #expect(next.failures == 3)
        #expect(next.lockedUntil == Self.start - 10_000 + 60)
    }

    @Test("failInterval forgets a run only after the quiet time since the last failure")
    func failIntervalFromLastFailure() {
        let rules = policy(deny: 3, delays: [60], failInterval: 900)
        let t = Self.start
        let two = failures(rules, at: [t, t + 10])[1]
        #expect(rules.recordingFailure(in: two, now: t + 10 + 900).failures == 3)
        #expect(rules.recordingFailure(in: two, now: t + 10 + 900).lockedUntil == t + 910 + 60)
        let forgotten = rules.recordingFailure(in: two, now: t + 10 + 901)
        #expect(forgotten == Tally(failures: 1, lastFailure: t + 911, lockedUntil: 0).numbered(3))
    }

    @Test("failInterval is measured from the end of the lock when that is later")
    func failIntervalFromLockEnd() {
        let rules = policy(deny: 3, delays: [3600], failInterval: 900)
        let t = Self.start
        let locked = Tally(failures: 3, lastFailure: t, lockedUntil: t + 3600)
        // 901 s after the last failure, but still within the lock's quiet window.
        let stillCounting = rules.recordingFailure(in: locked, now: t + 3600 + 900)
        #expect(stillCounting.failures == 4)
        #expect(stillCounting.lockedUntil == t + 4500 + 3600)
        let forgotten = rules.recordingFailure(in: locked, now: t + 3600 + 901)
        #expect(forgotten == Tally(failures: 1, lastFailure: t + 4501, lockedUntil: 0).numbered(1))
    }

    @Test("failInterval 0 never forgets")
    func failIntervalZero() {
        let rules = policy(deny: 10, delays: [60], failInterval: 0)
        let tally = Tally(failures: 2, lastFailure: 1000, lockedUntil: 0)
        #expect(rules.recordingFailure(in: tally, now: Self.start).failures == 3)
    }

    @Test("failures saturate at UInt32.max without trapping")
    func saturation() {
        let rules = policy(deny: 3, delays: [60, 120])
        let full = Tally(failures: UInt32.max, lastFailure: Self.start, lockedUntil: 0)
        let next = rules.recordingFailure(in: full, now: Self.start + 1)
        #expect(next == Tally(failures: UInt32.max, lastFailure: Self.start + 1, lockedUntil: Self.start + 121).numbered(1))
        let almost = Tally(failures: UInt32.max - 1, lastFailure: Self.start, lockedUntil: 0)
        #expect(rules.recordingFailure(in: almost, now: Self.start).failures == UInt32.max)
        let huge = policy(deny: UInt32.max, delays: [60])
        #expect(huge.recordingFailure(in: almost, now: Self.start).lockedUntil == Self.start + 60)
    }

    @Test("a lock end beyond Int64 becomes a lock until reset")
    func lockEndOverflow() {
        let rules = policy(deny: 1, delays: [60])
        #expect(rules.recordingFailure(in: Tally(), now: Int64.max - 10).lockedUntil == Tally.untilReset)
    }
}

extension Tally {
    /// This tally as the `serial`-th counted attempt left it.
    func numbered(_ serial: UInt64) -> Tally {
        var copy = self
        copy.serial = serial
        return copy
    }
}
