import FuzzSupport
import PuffCore

// The binary template decoder, which runs on the plaintext of a sealed template (the
// sealing keeps outsiders from reaching it, but the decoder trusts nothing). For every
// input: decoding never traps; an accepted template encodes back to exactly the input (the
// decoder refuses anything `encode` would not write); and matching fixed attempts against a
// decoded template never traps.

let attempts: [Gesture] = [
    "puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600",
    "puff-gesture:1:1000x750:t 0,0",
    "puff-gesture:1:1000x750:p 0,0 1000,750 0,750 1000,0",
    "puff-gesture:1:1x1:t 1,1",
].compactMap { try? GestureWire.parse(Array($0.utf8)) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTemplate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.input(data, size)
    guard let template = try? GestureTemplate.decode(input) else { return 0 }
    Fuzz.require(template.encode().elementsEqual(input), "decode accepted a non-canonical encoding")
    for attempt in attempts {
        var resized = attempt
        resized.width = template.width
        resized.height = template.height
        for candidate in [attempt, resized] {
            let result = GestureMatcher.verify(template, candidate)
            Fuzz.require(result.passed == (result.failure == nil), "passed and failure disagree")
        }
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() {
        // `fuzz-template --write-seeds DIR`: encoded templates made by the real enroller.
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--write-seeds" {
            let gestures = [
                ("three-parts", "puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600"),
                ("two-taps", "puff-gesture:1:400x300:t 10,10;t 390,290"),
                ("long-path", "puff-gesture:1:1920x1080:p 0,0 1920,0 1920,1080 0,1080 0,10"),
            ]
            for (name, message) in gestures {
                guard let gesture = try? GestureWire.parse(Array(message.utf8)),
                      let template = try? GestureEnroller.build(from: gesture),
                      let templateV2 = try? GestureEnroller.build(drawings: [gesture, gesture]) else {
                    Fuzz.require(false, "seed \(name) does not enroll")
                    return
                }
                Fuzz.writeFile(arguments[2] + "/" + name, template.encode())
                Fuzz.writeFile(arguments[2] + "/" + name + "-v2", templateV2.encode())
            }
            return
        }
        Fuzz.replay(fuzzTemplate)
    }
}
#endif
