import Testing
import PuffCore

@Suite("Gesture verification")
struct GestureMatcherTests {
    static func enrolled(_ gesture: Gesture = Draw.genuine) throws -> GestureTemplate {
        try GestureEnroller.build(from: gesture)
    }

    /// Ten stored points 30 px apart on y = 500, x = 100…370 (raster squares touching).
    static func tenPointLine() throws -> GestureTemplate {
        try GestureTemplate(width: 1000, height: 1000, parameters: .standard, parts: [
            Draw.path((0..<10).map { GesturePoint(x: 100 + 30 * Double($0), y: 500) }),
        ])
    }

    @Test("the enrolled drawing itself passes, every stored point hit")
    func exactRepeat() throws {
        let result = GestureMatcher.verify(try Self.enrolled(), Draw.genuine)
        #expect(result.passed)
        #expect(result.failure == nil)
        #expect(result.parts.count == 3)
        for part in result.parts {
            #expect(part.hitCount == part.storedCount && part.orderedHits == part.storedCount && part.orderOK)
        }
    }

    @Test("a second drawing with small jitter passes (enrollment confirm)", arguments: 1...25)
    func jitterPasses(seed: UInt64) throws {
        let template = try Self.enrolled()
        #expect(GestureMatcher.verify(template, Draw.jittered(Draw.genuine, amplitude: 8, seed: seed)).passed)
        let offset = Draw.shifted(Draw.genuine, dx: 12, dy: -10)
        #expect(GestureMatcher.verify(template, Draw.jittered(offset, amplitude: 5, seed: seed)).passed)
    }

    @Test("shifting the whole gesture beyond the tolerance fails", arguments: [
        (30.0, 0.0), (-30.0, 0.0), (0.0, 30.0), (0.0, -30.0), (25.0, 25.0),
    ])
    func shiftedFails(dx: Double, dy: Double) throws {
        let result = GestureMatcher.verify(try Self.enrolled(), Draw.shifted(Draw.genuine, dx: dx, dy: dy))
        #expect(!result.passed)
        #expect(result.failure == .partMismatch)
        #expect(result.parts[1].passed == false)   // the tap
    }

    @Test("a path shifted to the exact edge of the tolerance passes, a tenth beyond fails", arguments: [
        (22.5, true), (-22.5, true), (22.6, false), (-22.6, false),
    ])
    func pathToleranceEdge(dy: Double, passes: Bool) throws {
        let template = try Self.tenPointLine()
        let attempt = Gesture(width: 1000, height: 1000, parts: [Draw.path(Draw.line(100, 500 + dy, 370, 500 + dy, samples: 2))])
        let result = GestureMatcher.verify(template, attempt)
        #expect(result.passed == passes)
        #expect(result.parts.first?.hitCount == (passes ? 10 : 0))
    }

    @Test("a tap at the exact edge of its centred square passes on every side, beyond fails", arguments: [
        (522.5, 400.0, true), (522.501, 400.0, false), (477.5, 400.0, true), (477.499, 400.0, false),
        (500.0, 422.5, true), (500.0, 422.501, false), (500.0, 377.5, true), (500.0, 377.499, false),
    ])
    func tapToleranceEdge(x: Double, y: Double, passes: Bool) throws {
        let template = try Self.enrolled(Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400), Draw.tap(100, 100)]))
        let attempt = Gesture(width: 1000, height: 750, parts: [Draw.tap(x, y), Draw.tap(100, 100)])
        #expect(GestureMatcher.verify(template, attempt).passed == passes)
    }

    @Test("hits: 7 of 10 stored points pass, 6 fail", arguments: [(280.0, 7, true), (250.0, 6, false)])
    func hitThreshold(endX: Double, hits: Int, passes: Bool) throws {
        let attempt = Gesture(width: 1000, height: 1000, parts: [Draw.path(Draw.line(100, 500, endX, 500, samples: 2))])
        let result = GestureMatcher.verify(try Self.tenPointLine(), attempt)
        #expect(result.parts.first?.hitCount == hits)
        #expect(result.parts.first?.requiredHits == 7)
        #expect(result.passed == passes)
    }

    @Test("overflow: 14 rasterized input points for 10 stored pass, 15 fail", arguments: [(490.0, 14, true), (520.0, 15, false)])
    func overflowThreshold(endX: Double, rasterCount: Int, passes: Bool) throws {
        let attempt = Gesture(width: 1000, height: 1000, parts: [Draw.path(Draw.line(100, 500, endX, 500, samples: 2))])
        let result = GestureMatcher.verify(try Self.tenPointLine(), attempt)
        #expect(result.parts.first?.hitCount == 10)
        #expect(result.parts.first?.inputRasterCount == rasterCount)
        #expect(result.parts.first?.rasterLimit == 14)
        #expect(result.passed == passes)
    }

    @Test("a scribble over the whole picture hits every stored point, in order, and still fails")
    func scribbleFails() throws {
        let template = try Self.enrolled(Gesture(width: 1000, height: 750, parts: [
            Draw.path(Draw.line(100, 10, 900, 10, samples: 50)),
        ]))
        var scribble: [GesturePoint] = []
        for row in stride(from: 0.0, through: 750, by: 15) {
            scribble += [GesturePoint(x: 0, y: row), GesturePoint(x: 1000, y: row)]
        }
        let result = GestureMatcher.verify(template, Gesture(width: 1000, height: 750, parts: [Draw.path(scribble)]))
        let part = try #require(result.parts.first)
        #expect(part.hitCount == part.storedCount)
        #expect(part.orderOK)
        #expect(part.inputRasterCount > part.rasterLimit)
        #expect(!result.passed)
    }

    @Test("a straight line drawn backwards fails on order alone")
    func backwardsLineFails() throws {
        let line = Gesture(width: 1000, height: 750, parts: [Draw.path(Draw.line(100, 100, 700, 400, samples: 40))])
        let template = try Self.enrolled(line)
        let result = GestureMatcher.verify(template, Draw.reversedPaths(line))
        let part = try #require(result.parts.first)
        #expect(part.hitCount == part.storedCount)
        #expect(part.inputRasterCount <= part.rasterLimit)
        #expect(part.orderedHits <= 2)
        #expect(!part.orderOK)
        #expect(!result.passed)
    }

    @Test("a closed loop drawn the other way round fails", arguments: [0.0, Double.pi / 2, Double.pi])
    func reversedCircleFails(start: Double) throws {
        let clockwise = Gesture(width: 1000, height: 750, parts: [
            Draw.path(Draw.circle(500, 375, radius: 150, samples: 80, clockwise: true, start: start)),
        ])
        let template = try Self.enrolled(clockwise)
        #expect(GestureMatcher.verify(template, clockwise).passed)
        let counter = Gesture(width: 1000, height: 750, parts: [
            Draw.path(Draw.circle(500, 375, radius: 150, samples: 80, clockwise: false, start: start)),
        ])
        let result = GestureMatcher.verify(template, counter)
        #expect(result.parts.first?.orderOK == false)
        #expect(!result.passed)
        #expect(!GestureMatcher.verify(template, Draw.reversedPaths(clockwise)).passed)
    }

    @Test("drawing a line both ways passes only when the right way comes first", arguments: [(true, true), (false, false)])
    func backAndForth(forwardFirst: Bool, passes: Bool) throws {
        let forward = Draw.line(100, 300, 800, 300, samples: 30)
        let template = try Self.enrolled(Gesture(width: 1000, height: 750, parts: [Draw.path(forward)]))
        let stroke = forwardFirst ? forward + forward.reversed() : forward.reversed() + forward
        let result = GestureMatcher.verify(template, Gesture(width: 1000, height: 750, parts: [Draw.path(stroke)]))
        #expect(result.parts.first?.hitCount == result.parts.first?.storedCount)
        #expect(result.passed == passes)
    }

    @Test("parts in the wrong order fail", arguments: [[2, 1, 0], [1, 0, 2], [0, 2, 1], [2, 0, 1]])
    func wrongOrder(order: [Int]) throws {
        let parts = Draw.genuine.parts
        let attempt = Gesture(width: 1000, height: 750, parts: order.map { parts[$0] })
        #expect(!GestureMatcher.verify(try Self.enrolled(), attempt).passed)
    }

    @Test("one part at 0 % fails the whole gesture")
    func onePartMissed() throws {
        var attempt = Draw.genuine
        attempt.parts[2] = Draw.path(Draw.line(100, 700, 400, 650, samples: 20))
        let result = GestureMatcher.verify(try Self.enrolled(), attempt)
        #expect(result.parts.map(\.passed) == [true, true, false])
        #expect(result.parts[2].hitCount == 0)
        #expect(!result.passed)
    }

    @Test("a tap never matches a one-point path and vice versa")
    func kindsAreStored() throws {
        let onePointPath = try GestureTemplate(width: 1000, height: 750, parameters: .standard, parts: [
            Draw.path([GesturePoint(x: 500, y: 400)]), Draw.tap(100, 100),
        ])
        let tapAttempt = Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400), Draw.tap(100, 100)])
        let tinyPath = Gesture(width: 1000, height: 750, parts: [
            Draw.path([GesturePoint(x: 500, y: 400), GesturePoint(x: 502, y: 401)]), Draw.tap(100, 100),
        ])
        let mismatch = GestureMatcher.verify(onePointPath, tapAttempt)
        #expect(!mismatch.passed)
        #expect(mismatch.parts.first?.storedKind == .path && mismatch.parts.first?.attemptKind == .tap)
        #expect(GestureMatcher.verify(onePointPath, tinyPath).passed)

        let taps = try Self.enrolled(tapAttempt)
        #expect(GestureMatcher.verify(taps, tapAttempt).passed)
        #expect(!GestureMatcher.verify(taps, tinyPath).passed)
    }

    @Test("a fast stroke with two samples matches a slowly drawn enrollment")
    func fastStrokeMatches() throws {
        let slow = Gesture(width: 1000, height: 750, parts: [Draw.path(Draw.line(100, 100, 900, 500, samples: 300))])
        let fast = Gesture(width: 1000, height: 750, parts: [Draw.path(Draw.line(100, 100, 900, 500, samples: 2))])
        #expect(GestureMatcher.verify(try Self.enrolled(slow), fast).passed)
        #expect(GestureMatcher.verify(try Self.enrolled(fast), slow).passed)
    }

    @Test("the same gesture on a picture scaled twice verifies the same way", arguments: 1...10)
    func scaled(seed: UInt64) throws {
        let small = try Self.enrolled()
        let large = try Self.enrolled(Draw.scaled(Draw.genuine, by: 2))
        let smallAttempt = Draw.jittered(Draw.genuine, amplitude: 8, seed: seed)
        let largeAttempt = Draw.scaled(smallAttempt, by: 2)
        let smallResult = GestureMatcher.verify(small, smallAttempt)
        let largeResult = GestureMatcher.verify(large, largeAttempt)
        #expect(smallResult.passed && largeResult.passed)
        #expect(smallResult.parts.map(\.hitCount) == largeResult.parts.map(\.hitCount))
        let shiftedLarge = Draw.shifted(Draw.scaled(Draw.genuine, by: 2), dx: 60, dy: 0)
        #expect(!GestureMatcher.verify(large, shiftedLarge).passed)
    }

    @Test("attempts that cannot be compared fail with a reason", arguments: [
        (Gesture(width: 1000, height: 751, parts: Draw.genuine.parts), GestureMatchFailure.pictureSizeMismatch),
        (Gesture(width: 1000, height: 750, parts: Array(Draw.genuine.parts.prefix(2))), .partCountMismatch),
        (Gesture(width: 1000, height: 750, parts: Draw.genuine.parts + [Draw.tap(1, 1)]), .partCountMismatch),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(.nan, 1), Draw.tap(1, 1), Draw.tap(1, 1)]),
         .invalidAttempt(.nonFiniteCoordinate)),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(1, 751), Draw.tap(1, 1), Draw.tap(1, 1)]),
         .invalidAttempt(.coordinateOutsidePicture)),
        (Gesture(width: 1000, height: 750, parts: []), .invalidAttempt(.noParts)),
        (Gesture(width: 1000, height: 750, parts: [
            Draw.path((0..<8000).map { GesturePoint(x: $0 % 2 == 0 ? 0 : 1000, y: $0 % 2 == 0 ? 0 : 750) }),
            Draw.tap(700, 200), Draw.path(Draw.line(600, 600, 900, 450, samples: 20)),
        ]), .tooComplex),
    ])
    func incomparable(attempt: Gesture, failure: GestureMatchFailure) throws {
        let result = GestureMatcher.verify(try Self.enrolled(), attempt)
        #expect(!result.passed)
        #expect(result.failure == failure)
        #expect(result.parts.isEmpty)
    }

    @Test("a parsed wire message verifies against a template built from another parse")
    func throughTheWire() throws {
        let enrollment = try GestureWire.parse(GestureWire.serialize(Draw.genuine))
        let template = try GestureTemplate.decode(GestureEnroller.build(from: enrollment).encode())
        let attempt = try GestureWire.parse(GestureWire.serialize(Draw.jittered(Draw.genuine, amplitude: 6, seed: 99)))
        try attempt.requireSize(width: template.width, height: template.height)
        #expect(GestureMatcher.verify(template, attempt).passed)
    }
}
