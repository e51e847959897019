import FuzzSupport
import PuffCore

// The option grammar shared by puff.conf and the module arguments, in the order the module
// applies it (defaults, file, arguments) without the file I/O of `Configuration.load`.
// Input: the configuration file text, then NUL, then the arguments separated by NUL (PAM
// arguments are C strings, so they can hold anything but NUL). For every input: nothing
// traps; every value that was accepted lies in its documented range; and the lockout
// arithmetic with the accepted policy stays sane over many failures.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOptions(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.input(data, size)
    let pieces = input.split(separator: 0, omittingEmptySubsequences: false)
    let configText = String(decoding: pieces.first.map(Array.init) ?? [], as: UTF8.self)
    let arguments = pieces.dropFirst().map { String(decoding: $0, as: UTF8.self) }

    var options = PuffOptions()
    do throws(OptionError) {
        for token in OptionParser.tokens(ofConfigFile: configText) {
            Fuzz.require(!token.isEmpty && token.first != "#", "tokens() returned an empty or comment token")
            _ = try OptionParser.apply(token, to: &options, from: .configFile)
        }
        for argument in arguments {
            _ = try OptionParser.apply(argument, to: &options, from: .argument)
        }
        _ = try options.gestureParameters()
    } catch {
        Fuzz.require(!error.key.isEmpty, "an option error without a key")
        return 0
    }
    for path in [options.recordDirectory, options.stateDirectory, options.configFile, options.helperPath] {
        Fuzz.require(path.first == "/" && !path.split(separator: "/").contains(".."), "an unsafe path was accepted")
    }
    Fuzz.require((0...365 * 86400).contains(options.quickFactor.passcodeInterval), "passcode_interval out of range")
    Fuzz.require(options.quickFactor.gestureTries <= 1_000_000, "gesture_tries out of range")
    Fuzz.require((1...600).contains(options.lockWaitSeconds), "lock_wait out of range")
    Fuzz.require(options.lockout.deny <= 1_000_000, "deny out of range")
    Fuzz.require((1...32).contains(options.lockout.delays.count), "delays of a bad length")
    Fuzz.require(options.lockout.delays.allSatisfy { (0...365 * 86400).contains($0) }, "a delay out of range")
    Fuzz.require((0...365 * 86400).contains(options.lockout.failInterval), "fail_interval out of range")
    Fuzz.require(Argon2Parameters.memoryKiBRange.contains(options.kdf.memoryKiB)
                 && Argon2Parameters.iterationRange.contains(options.kdf.iterations), "kdf cost out of range")

    // The accepted policy over a run of failures: the count grows by one (or saturates),
    // locks never end in the past, and a lock is reported with a positive time left.
    var tally = Tally()
    let start: Int64 = 1_700_000_000
    for step in 0..<40 {
        let now = start + Int64(step) * 7
        let next = options.lockout.recordingFailure(in: tally, now: now)
        Fuzz.require(next.failures >= 1 && next.failures <= tally.failures &+ 1, "the failure count jumped")
        Fuzz.require(next.lockedUntil == 0 || next.lockedUntil >= now, "a lock that ends before it starts")
        for isRoot in [false, true] {
            switch options.lockout.status(of: next, now: now, isRoot: isRoot) {
            case .locked(let left): Fuzz.require(left > 0, "a lock with no time left")
            case .open, .lockedUntilReset: break
            }
        }
        tally = next
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzOptions) }
}
#endif
