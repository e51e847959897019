import Testing
@testable import PuffCore

/// The version-2 recognizer, enroller and template format, on a 1000 × 750 picture.
@Suite("Gesture recognition, version 2")
struct GestureRecognizerTests {
    static func line(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double, steps: Int = 40) -> GesturePart {
        GesturePart(kind: .path, points: (0...steps).map {
            let t = Double($0) / Double(steps)
            return GesturePoint(x: x0 + (x1 - x0) * t, y: y0 + (y1 - y0) * t)
        })
    }

    static func tap(_ x: Double, _ y: Double) -> GesturePart {
        GesturePart(kind: .tap, points: [GesturePoint(x: x, y: y)])
    }

    /// A line, a tap and a vertical line, well apart.
    static let base = Gesture(width: 1000, height: 750, parts: [
        line(100, 600, 400, 400), tap(650, 300), line(850, 150, 850, 550),
    ])

    static func moved(_ gesture: Gesture, by offsets: [(Double, Double)]) -> Gesture {
        var copy = gesture
        for index in copy.parts.indices {
            let (dx, dy) = offsets[index % offsets.count]
            copy.parts[index].points = copy.parts[index].points.map { GesturePoint(x: $0.x + dx, y: $0.y + dy) }
        }
        return copy
    }

    /// A version-2 template of `base` (what records enrolled before version 3 hold).
    static func template() throws -> GestureTemplate {
        try GestureEnroller.define(base, settings: .standard)
    }

    /// Attempts and whether each passes, with the rule and part of the first failure.
    static let cases: [(String, Gesture, GestureFailureDetail?)] = [
        ("the definition itself", base, nil),
        ("the whole gesture 40 px right", moved(base, by: [(40, 0)]), nil),
        ("each part a few px off its own way", moved(base, by: [(5, 3), (-4, 6), (2, -5)]), nil),
        ("the whole gesture 200 px down", moved(base, by: [(0, 120)]), GestureFailureDetail(part: 0, rule: .shift)),
        ("the tap alone 45 px off", moved(base, by: [(0, 0), (45, 0), (0, 0)]), GestureFailureDetail(part: 2, rule: .tapDistance)),
        ("the last line alone 50 px off", moved(base, by: [(0, 0), (0, 0), (-50, 0)]), GestureFailureDetail(part: 3, rule: .place)),
        ("the first line drawn backwards", Gesture(width: 1000, height: 750, parts: [
            line(400, 400, 100, 600), tap(650, 300), line(850, 150, 850, 550)]), GestureFailureDetail(part: 1, rule: .order)),
        ("a scribble for the last line", Gesture(width: 1000, height: 750, parts: [
            line(100, 600, 400, 400), tap(650, 300),
            GesturePart(kind: .path, points: (0...30).map { GesturePoint(x: $0 % 2 == 0 ? 780 : 920, y: 150 + 13 * Double($0)) })]),
         GestureFailureDetail(part: 3, rule: .overflow)),
        ("a tap where a path was stored", Gesture(width: 1000, height: 750, parts: [
            tap(250, 500), tap(650, 300), line(850, 150, 850, 550)]), GestureFailureDetail(part: 1, rule: .kind)),
        ("a bent first line", Gesture(width: 1000, height: 750, parts: [
            GesturePart(kind: .path, points: [GesturePoint(x: 100, y: 600), GesturePoint(x: 100, y: 400), GesturePoint(x: 400, y: 400)]),
            tap(650, 300), line(850, 150, 850, 550)]), GestureFailureDetail(part: 1, rule: .coverage)),
    ]

    @Test("attempts pass or fail with the expected part and rule", arguments: cases.indices)
    func verdicts(index: Int) throws {
        let (name, attempt, expected) = Self.cases[index]
        let result = GestureMatcher.verify(try Self.template(), attempt)
        #expect(result.passed == (expected == nil), "\(name)")
        #expect(result.detail == expected, "\(name)")
    }

    @Test("another number of parts fails, with the same work", arguments: [1, 2, 4, 16])
    func partCount(count: Int) throws {
        let parts = (0..<count).map { Self.tap(50 + 50 * Double($0), 300) }
        let result = GestureMatcher.verify(try Self.template(), Gesture(width: 1000, height: 750, parts: parts))
        #expect(!result.passed)
        #expect(result.failure == .partCountMismatch)
    }

    @Test("the enroller refuses weak gestures with a reason", arguments: [
        (Gesture(width: 1000, height: 750, parts: [tap(500, 300)]), GestureEnrollmentError.tooFewParts(1)),
        (Gesture(width: 1000, height: 750, parts: [line(100, 100, 900, 600)]), .tooFewParts(1)),
        (Gesture(width: 1000, height: 750, parts: [line(100, 100, 600, 100), tap(800, 500)]), .tooFewParts(2)),
        (Gesture(width: 1000, height: 750, parts: [tap(200, 100), tap(800, 600)]), .tooFewParts(2)),
        (Gesture(width: 1000, height: 750, parts: [tap(500, 300), tap(520, 310), tap(510, 330)]), .allInOneSpot),
        (Gesture(width: 1000, height: 750, parts: [line(100, 100, 130, 100), tap(600, 500), tap(800, 200)]),
         .pathTooShort(part: 0, rasterPoints: 0)),
    ])
    func weak(gesture: Gesture, expected: GestureEnrollmentError) {
        #expect(throws: expected) { try GestureEnroller.build(drawings: [gesture, gesture]) }
    }

    @Test("the refusal of too few parts says how many to draw")
    func tooFewPartsMessage() {
        #expect(GestureEnrollmentError.tooFewParts(2).description
                == "the gesture has 2 parts; draw at least 3 (taps, lines, circles), or someone who saw it once could copy it")
        #expect(GestureEnrollmentError.tooFewParts(1).description.hasPrefix("the gesture has 1 part;"))
    }

    @Test("a confirmation that does not match is refused, naming the part")
    func confirmationMismatch() {
        let wrong = Self.moved(Self.base, by: [(0, 0), (60, 0), (0, 0)])
        #expect(throws: GestureEnrollmentError.confirmationMismatch(GestureFailureDetail(part: 2, rule: .tapDistance))) {
            try GestureEnroller.build(drawings: [Self.base, wrong])
        }
    }

    @Test("a version-2 template round-trips through the encoding")
    func versionTwoEncoding() throws {
        let template = try GestureTemplate(width: 1000, height: 750, settings: .standard,
                                           parts: try Self.template().parts, spreads: [0.001, 0.002, 0.003])
        #expect(template.version == 2)
        let decoded = try GestureTemplate.decode(template.encode())
        #expect(decoded == template && decoded.version == 2)
        #expect(template.encode()[4] == 2)
    }

    @Test("a two-part gesture is refused at enrollment, but a two-part version-1 record still verifies and migrates")
    func twoPartRecordsKeepWorking() throws {
        let gesture = Gesture(width: 1000, height: 750, parts: [Self.line(100, 600, 400, 400), Self.tap(700, 200)])
        #expect(throws: GestureEnrollmentError.tooFewParts(2)) { try GestureEnroller.build(drawings: [gesture, gesture]) }
        let old = try GestureTemplate.decode(try GestureEnroller.build(from: gesture).encode())
        #expect(old.version == 1 && GestureMatcher.verify(old, gesture).passed)
        let upgraded = old.upgraded()
        #expect(upgraded.version == 4 && upgraded.parts.count == 2)
        #expect(GestureMatcher.verify(upgraded, gesture).passed)
        #expect(GestureMatcher.verify(upgraded, Self.moved(gesture, by: [(0, 0), (60, 0)])).passed == false)
    }

    @Test("a version-1 template still decodes, verifies with the old rules, and upgrades to version 4")
    func versionOne() throws {
        let old = try GestureEnroller.build(from: Self.base)
        #expect(old.version == 1)
        let decoded = try GestureTemplate.decode(old.encode())
        #expect(decoded.version == 1 && decoded == old)
        #expect(GestureMatcher.verify(decoded, Self.base).passed)
        let upgraded = decoded.upgraded()
        #expect(upgraded.version == 4)
        #expect(upgraded.parts.map(\.kind) == old.parts.map(\.kind))
        #expect(GestureMatcher.verify(upgraded, Self.base).passed)
        #expect(GestureMatcher.verify(upgraded, Self.moved(Self.base, by: [(0, 0), (45, 0), (0, 0)])).passed == false)
        #expect(try GestureTemplate.decode(upgraded.encode()) == upgraded)
    }

    @Test("version-2 decoding refuses bad spreads, point counts and versions", arguments: [0, 1, 2])
    func badEncodings(kind: Int) throws {
        var bytes = try Self.template().encode()
        // Part 1 starts at 46: kind (1), spread (4), count (2).
        switch kind {
        case 0: bytes.replaceSubrange(47..<51, with: [0x00, 0x0F, 0x42, 0x41])  // 1,000,001
            #expect(throws: GestureTemplateError.badSpread) { try GestureTemplate.decode(bytes) }
        case 1: bytes[52] = 31
            #expect(throws: GestureTemplateError.self) { try GestureTemplate.decode(bytes) }
        default: bytes[4] = 5
            #expect(throws: GestureTemplateError.unsupportedVersion) { try GestureTemplate.decode(bytes) }
        }
    }

    @Test("resampling spaces points evenly and keeps the ends", arguments: [2, 3, 17, 500])
    func resampling(count: Int) {
        let points = (0..<count).map { GestureUnitPoint(x: 0.1 + 0.5 * Double($0) / Double(count - 1), y: 0.2) }
        let resampled = GestureShape.resample(points)
        #expect(resampled.count == GestureShape.samples)
        #expect(abs(resampled[0].x - 0.1) < 1e-12 && abs(resampled[GestureShape.samples - 1].x - 0.6) < 1e-12)
        for (a, b) in zip(resampled, resampled.dropFirst()) {
            #expect(abs((b.x - a.x) - 0.5 / Double(GestureShape.samples - 1)) < 1e-9)
        }
    }

    @Test("the square root needs no libm and is exact enough", arguments: [0.0, 1e-12, 2e-6, 0.25, 2, 1e6])
    func squareRoot(value: Double) {
        let root = GestureShape.squareRoot(value)
        #expect(abs(root * root - value) <= 1e-12 * max(1, value))
    }
}
