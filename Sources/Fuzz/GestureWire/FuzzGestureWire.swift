import FuzzSupport
import PuffCore

// The gesture wire parser, as the module meets it: any bytes a conversation reply can hold.
// For every input: parsing never traps; the raw-memory and the array entry points agree; an
// accepted message serializes to a canonical one that parses back to the same gesture; the
// size check and the matcher against a fixed template never trap; and a gesture that
// enrolls can be matched against its own template (it must pass when it has only taps; a
// path that doubles back may legitimately fail its own order check, by design).

/// The template every attempt is compared with (the seed corpus holds matching attempts).
let fixedTemplate: GestureTemplate? = {
    let message = Array("puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600".utf8)
    guard let gesture = try? GestureWire.parse(message) else { return nil }
    return try? GestureEnroller.build(from: gesture)
}()

/// The same gesture as a version-3 template (what enrollment writes today).
let fixedTemplateV3: GestureTemplate? = {
    let message = Array("puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600".utf8)
    guard let gesture = try? GestureWire.parse(message) else { return nil }
    return try? GestureEnroller.build(drawings: [gesture, gesture])
}()

/// The same parts as a version-2 template (what records enrolled before version 3 hold).
let fixedTemplateV2: GestureTemplate? = fixedTemplateV3.flatMap {
    try? GestureTemplate(width: $0.width, height: $0.height, settings: .standard, parts: $0.parts,
                         spreads: $0.parts.map { _ in 0.004 })
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGestureWire(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.input(data, size)
    guard let template = fixedTemplate, let templateV2 = fixedTemplateV2, let templateV3 = fixedTemplateV3 else {
        Fuzz.require(false, "the fixed template does not build")
        return 0
    }
    let parsed = Result { () throws(GestureFormatError) -> Gesture in try GestureWire.parse(UnsafeRawBufferPointer(input)) }
    let fromArray = Result { () throws(GestureFormatError) -> Gesture in try GestureWire.parse(Array(input)) }
    Fuzz.require(parsed == fromArray, "raw and array parsers disagree")
    guard case .success(let gesture) = parsed else { return 0 }

    Fuzz.require((try? gesture.validate()) != nil, "the parser accepted an invalid gesture")
    let canonical = GestureWire.serialize(gesture)
    let reparsed = try? GestureWire.parse(canonical)
    Fuzz.require(reparsed == gesture, "serialize(parse(m)) does not parse back to the same gesture")
    if let reparsed {
        Fuzz.require(GestureWire.serialize(reparsed) == canonical, "serialization is not canonical")
    }

    let sizeMatches = (try? gesture.requireSize(width: template.width, height: template.height)) != nil
    let result = GestureMatcher.verify(template, gesture)
    Fuzz.require(!result.passed || sizeMatches, "a gesture of another picture size passed")
    Fuzz.require(result.passed == (result.failure == nil), "passed and failure disagree")
    let resultV2 = GestureMatcher.verify(templateV2, gesture)
    Fuzz.require(!resultV2.passed || sizeMatches, "a gesture of another picture size passed (v2)")
    Fuzz.require(resultV2.passed == (resultV2.failure == nil), "passed and failure disagree (v2)")
    Fuzz.require(resultV2.passed || resultV2.failure != .partMismatch || resultV2.detail != nil,
                 "a v2 part mismatch without a part and rule")
    let resultV3 = GestureMatcher.verify(templateV3, gesture)
    Fuzz.require(!resultV3.passed || sizeMatches, "a gesture of another picture size passed (v3)")
    Fuzz.require(resultV3.passed == (resultV3.failure == nil), "passed and failure disagree (v3)")
    Fuzz.require(resultV3.passed || resultV3.failure != .partMismatch || resultV3.detail != nil,
                 "a v3 part mismatch without a part and rule")
    // A declared cell, however coarse, buys no room in the score: only the overflow rule
    // looks at it, so an attempt that passes with a declaration passes without one, or fails
    // only its overflow rule.
    if gesture.resolution != nil, resultV3.passed {
        var plain = gesture
        plain.resolution = nil
        let without = GestureMatcher.verify(templateV3, plain)
        Fuzz.require(without.passed || without.detail?.rule == .overflow, "a declared cell widened the v3 score")
    }

    // Enrolling the attempt itself exercises interpolation and rasterization on hostile input.
    if let own = try? GestureEnroller.build(from: gesture) {
        let selfCheck = GestureMatcher.verify(own, gesture)
        let onlyTaps = gesture.parts.allSatisfy { $0.kind == .tap }
        Fuzz.require(selfCheck.passed || !onlyTaps,
                     "taps do not verify against their own template: \(String(describing: selfCheck.failure))")
    }
    // Version 3: a gesture that enrolls (given twice, as a script does) always verifies
    // against its own template, and the template survives its encoding.
    if let own = try? GestureEnroller.build(drawings: [gesture, gesture]) {
        Fuzz.require(GestureMatcher.verify(own, gesture).passed, "a drawing does not verify against its own v3 template")
        Fuzz.require((try? GestureTemplate.decode(own.encode())) == own, "a v3 template does not survive its encoding")
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzGestureWire) }
}
#endif
