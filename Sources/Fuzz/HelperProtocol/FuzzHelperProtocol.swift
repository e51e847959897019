import FuzzSupport
import PuffCore
import PuffPlatform

// The helper codec's decoders (PuffPlatform/HelperProtocol.swift), as the helper meets its
// standard input and the client the helper's answer. The first byte picks the message, the
// rest is the input. For every input: decoding never traps; what is accepted encodes back to
// bytes that decode to the same message and are never longer (the length lines the reader
// accepts with leading zeros are written without).

let sodiumReady: Bool = (try? Sodium.initialize()) != nil

func reader(_ bytes: ArraySlice<UInt8>) -> HelperFrameReader<HelperBytesSource> {
    HelperFrameReader(HelperBytesSource(Array(bytes)))
}

func bytes(_ secret: borrowing SecureBytes) -> [UInt8] { secret.withBytes { Array($0) } }

/// An attempt's answer held in memory, read as the client reads it from the helper's socket.
func answerOutcome(status: Int32, output: [UInt8], helper: String, countedExpected: Bool,
                   counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
    var reader = HelperFrameReader(HelperBytesSource(output))
    var released: SecureBytes?
    return try HelperLoginAnswer.outcome(status: status, from: &reader, helper: helper, countedExpected: countedExpected,
                                         counted: &counted, released: &released)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHelperProtocol(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.require(sodiumReady, "libsodium did not initialize")
    let input = Array(Fuzz.input(data, size))
    guard let selector = input.first else { return 0 }
    let message = input.dropFirst()
    var source = reader(message)
    switch selector % 7 {
    case 0:
        // service-login's request: the service request, the origin, the secret or the end.
        guard let request = try? HelperServiceRequest.read(from: &source), let origin = try? HelperOrigin.read(from: &source) else {
            return 0
        }
        let secret: SecureBytes?
        do throws(HelperProtocolError) {
            secret = try HelperLoginSecret.read(from: &source)
        } catch {
            return 0
        }
        var encoded = request.encoded() + HelperOrigin.encoded(origin)
        if let secret { encoded += HelperLoginSecret.lengthLine(secret) + bytes(secret) }
        Fuzz.require(encoded.count <= message.count, "the encoding is longer than what was read")
        var again = reader(encoded[...])
        Fuzz.require((try? HelperServiceRequest.read(from: &again)) == request, "the request does not decode to itself")
        Fuzz.require((try? HelperOrigin.read(from: &again)) == origin, "the origin does not decode to itself")
    case 1:
        // service-take-back's request.
        guard let request = try? HelperServiceRequest.read(from: &source),
              let failure = try? HelperTakeBackRequest.readFailure(from: &source) else { return 0 }
        var again = reader(HelperTakeBackRequest.encoded(request, failure)[...])
        Fuzz.require((try? HelperServiceRequest.read(from: &again)) == request, "the request does not decode to itself")
        Fuzz.require((try? HelperTakeBackRequest.readFailure(from: &again)) == failure, "the failure does not decode to itself")
    case 2, 3:
        guard let enrollment = try? HelperChangeRequest.readEnrollment(gesture: selector % 7 == 3, from: &source) else { return 0 }
        Fuzz.require(enrollment.proof.count > 0 && enrollment.proof.count <= HelperBounds.secret, "a proof out of its bounds was accepted")
        Fuzz.require(enrollment.secret.count > 0 && enrollment.secret.count <= HelperBounds.secret, "a secret out of its bounds was accepted")
        Fuzz.require((enrollment.type == nil) == (selector % 7 == 3), "a passcode without a type, or a gesture with one")
    case 4:
        guard let precheck = try? HelperChangeRequest.readPrecheck(from: &source) else { return 0 }
        if let proof = precheck.takeProof() {
            Fuzz.require(proof.count > 0 && proof.count <= HelperBounds.secret, "a proof out of its bounds was accepted")
        }
    case 5:
        // A login's state frame, as the client reads it.
        guard let state = try? HelperLoginAnswer.readState(from: &source, helper: "fuzz") else { return 0 }
        var again = reader(HelperLoginAnswer.stateFrame(state)[...])
        Fuzz.require((try? HelperLoginAnswer.readState(from: &again, helper: "fuzz")) == state, "the state does not decode to itself")
    default:
        // An attempt's answer, with and without a counted failure expected.
        for status in [HelperExit.success, HelperExit.refused] {
            for expected in [false, true] {
                var reader = reader(message)
                var counted: CountedFailure?
                var released: SecureBytes?
                guard let outcome = try? HelperLoginAnswer.outcome(status: status, from: &reader, helper: "fuzz", countedExpected: expected,
                                                                   counted: &counted, released: &released) else { continue }
                var isSuccess = false, isFailure = false
                if case .success = outcome { isSuccess = true }
                if case .failure = outcome { isFailure = true }
                Fuzz.require(expected || counted == nil, "a counted failure was accepted from the own account's helper")
                Fuzz.require(counted == nil || isFailure, "a counted failure beside an outcome that is no failure")
                Fuzz.require(released == nil || isSuccess, "a released password beside an outcome that is no success")
            }
        }
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzHelperProtocol) }
}
#endif
