import FuzzSupport
import PuffCore

// The lockout counter decoder, as the module meets a counter file, and the lockout
// arithmetic on whatever values it accepts. For every input: decoding never traps; an
// accepted tally re-encodes to one that decodes to the same value; and the policies below,
// at clocks around and far from the stored times, never trap, never count down and never
// report a lock with no time left.

let policies: [LockoutPolicy] = {
    var standard = LockoutPolicy()
    var faillock = LockoutPolicy()
    faillock.deny = 3
    faillock.delays = [600]
    faillock.failInterval = 900
    faillock.evenDenyRoot = true
    var adminOnly = LockoutPolicy()
    adminOnly.deny = 1
    adminOnly.delays = [0]
    var longest = LockoutPolicy()
    longest.delays = [365 * 86400]
    longest.failInterval = 365 * 86400
    standard.evenDenyRoot = false
    return [standard, faillock, adminOnly, longest]
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTally(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.input(data, size)
    guard let tally = try? Tally.decode(input) else { return 0 }
    Fuzz.require((try? Tally.decode(tally.encoded())) == tally, "encoded() does not decode to the same tally")
    let clocks: [Int64] = [0, 1_700_000_000, tally.lastFailure, tally.lockedUntil,
                           tally.lockedUntil &- 1, tally.lastFailure &+ 900, Int64.max - 1]
    for policy in policies {
        for now in clocks where now >= 0 {
            let next = policy.recordingFailure(in: tally, now: now)
            Fuzz.require(next.failures >= 1, "a failure was not counted")
            Fuzz.require(next.failures == 1 || next.failures == tally.failures
                         || next.failures == tally.failures + 1, "the failure count jumped")
            Fuzz.require(next.lockedUntil >= 0, "a negative lock end")
            for state in [tally, next] {
                for isRoot in [false, true] {
                    if case .locked(let left) = policy.status(of: state, now: now, isRoot: isRoot) {
                        Fuzz.require(left > 0, "a lock with no time left")
                    }
                }
            }
        }
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzTally) }
}
#endif
