import FuzzSupport
import PuffCore
import PuffPlatform

// The stored-hash parameter check that stands between a record and libsodium. For every
// input: parsing never traps; accepted parameters lie inside the bounds; and a string the
// check accepts at a cheap cost is handed to libsodium's verifier (as the module would),
// which must neither trap nor accept a random prehash.

let sodiumReady: Bool = (try? Sodium.initialize()) != nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArgon2(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.require(sodiumReady, "sodium_init failed")
    let text = String(decoding: Fuzz.input(data, size), as: UTF8.self)
    guard let parameters = try? Argon2Parameters.parse(text) else { return 0 }
    Fuzz.require(Argon2Parameters.memoryKiBRange.contains(parameters.memoryKiB)
                 && Argon2Parameters.iterationRange.contains(parameters.iterations)
                 && parameters.parallelism == 1, "parameters outside the bounds were accepted")
    Fuzz.require(text.utf8.count <= Argon2Parameters.maximumStringLength, "an overlong hash was accepted")
    // Only cheap costs go on to libsodium, so the fuzzer keeps its pace.
    guard parameters.memoryKiB <= 256, parameters.iterations <= 2 else { return 0 }
    let hasher = PasscodeHasher(cost: Argon2Parameters(memoryKiB: 8, iterations: 1))
    guard let prehash = try? SecureBytes(count: PasscodeHasher.keyLength) else { return 0 }
    do throws(StoreError) {
        Fuzz.require(try !hasher.verify(prehash, against: text), "a random prehash verified")
    } catch {
        Fuzz.require(false, "verify refused a hash the parameter check accepted: \(error)")
    }
    _ = hasher.needsRehash(text)
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzArgon2) }
}
#endif
