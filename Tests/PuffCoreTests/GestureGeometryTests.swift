import Testing
@testable import PuffCore
import PuffSimulation

@Suite("Gesture geometry")
struct GestureGeometryTests {
    // 1000 × 1000 with the standard parameters: raster side 30 px, tolerance side 45 px.
    static let scale = GestureScale(width: 1000, height: 1000, parameters: .standard)

    @Test("derives the reference sizes from the longest side")
    func referenceSizes() throws {
        let scale = try #require(Self.scale)
        #expect(scale.rasterSide == 30_000)
        #expect(scale.toleranceSide == 45_000)
        #expect(scale.step == 7_500)
        let wide = try #require(GestureScale(width: 2000, height: 500, parameters: .standard))
        #expect(wide.rasterSide == 60_000)
        #expect(wide.toleranceSide == 90_000)
    }

    @Test("keeps touching raster squares and drops intersecting ones", arguments: [
        // second point relative to a kept point at (100, 100); raster side 30
        (130.0, 100.0, true),        // touches on the right
        (70.0, 100.0, true),         // touches on the left
        (100.0, 130.0, true),        // touches below
        (100.0, 70.0, true),         // touches above
        (130.0, 129.999, true),      // touches on x, overlaps on y: still only touching
        (129.999, 130.0, true),
        (129.999, 100.0, false),     // overlaps by a thousandth of a pixel
        (70.001, 100.0, false),
        (100.0, 129.999, false),
        (129.0, 129.0, false),       // diagonal overlap
        (130.0, 130.0, true),        // corners touch
        (100.0, 100.0, false),       // same point
    ])
    func strictIntersection(x: Double, y: Double, kept: Bool) throws {
        let scale = try #require(Self.scale)
        var raster = try #require(GestureRaster(scale: scale))
        let first = raster.offer(milli(100, 100))
        let second = raster.offer(try #require(GestureMilliPoint(GesturePoint(x: x, y: y))))
        #expect(first)
        #expect(second == kept)
    }

    @Test("rasterizes in drawing order, checking against every kept square of the part")
    func rasterOrder() throws {
        let scale = try #require(Self.scale)
        var raster = try #require(GestureRaster(scale: scale))
        // The third point is 30 from the second but 20 from the first: it is dropped.
        let offered = [milli(100, 100), milli(130, 100), milli(120, 115), milli(160, 100)]
        var decisions: [Bool] = []
        for point in offered { decisions.append(raster.offer(point)) }
        #expect(decisions == [true, true, false, true])
        #expect(raster.kept == [milli(100, 100), milli(130, 100), milli(160, 100)])
    }

    @Test("interpolation fills a fast two-sample stroke")
    func interpolationFillsFastStroke() throws {
        let scale = try #require(Self.scale)
        let stroke = [milli(100, 500), milli(900, 500)]
        var expanded: [GestureMilliPoint] = []
        GestureInterpolation.forEach(stroke, step: scale.step) { expanded.append($0) }
        #expect(expanded.count == GestureInterpolation.count(stroke, step: scale.step, limit: .max))
        #expect(expanded.first == stroke.first)
        #expect(expanded.last == stroke.last)
        for (a, b) in zip(expanded, expanded.dropFirst()) {
            #expect(b.x - a.x <= scale.step && b.x > a.x)
        }

        // Without interpolation the raster would keep just the two samples.
        var sparse = try #require(GestureRaster(scale: scale))
        stroke.forEach { sparse.offer($0) }
        #expect(sparse.kept.count == 2)

        let template = try GestureEnroller.build(from: Gesture(width: 1000, height: 1000, parts: [
            GesturePart(kind: .path, points: stroke.map(\.pixels)),
        ]))
        let kept = try #require(template.parts.first).points
        // 107 steps of 7.48 px; a point is kept every 5 steps (37.4 px): 22 points.
        #expect(kept.count == 22)
        for (a, b) in zip(kept, kept.dropFirst()) {
            #expect(b.x - a.x >= 30 && b.x - a.x < 30 + 7.5)
        }
    }

    @Test("interpolation counts are bounded before any work", arguments: [
        // Each diagonal of 1,414 px becomes 189 steps of at most 7.5 px: 379 points in all.
        (378, nil), (379, 379), (10_000, 379),
    ] as [(Int, Int?)])
    func interpolationBound(limit: Int, expected: Int?) {
        let stroke = [milli(0, 0), milli(1000, 1000), milli(0, 0)]
        #expect(GestureInterpolation.count(stroke, step: 7_500, limit: limit) == expected)
    }

    @Test("integer ceiling square root matches brute force")
    func ceilingSquareRoot() {
        var root = 0
        for value in 0...20_000 {
            while root * root < value { root += 1 }
            #expect(GestureInterpolation.ceilingSquareRoot(value) == root)
        }
        for value in [1 << 40, (1 << 40) + 1, (1 << 61) - 1, 20_000_000_000_000_000] {
            let result = GestureInterpolation.ceilingSquareRoot(value)
            #expect(result * result >= value && (result - 1) * (result - 1) < value)
        }
    }

    @Test("rounding without libm", arguments: [
        (2.5, 2, 3, 3), (-2.5, -3, -2, -3), (2.4999999999999996, 2, 3, 2), (0.49999999999999994, 0, 1, 0),
        (-0.0, 0, 0, 0), (7.0, 7, 7, 7), (-7.0, -7, -7, -7), (-0.2, -1, 0, 0), (1e15 + 0.5, 1_000_000_000_000_000, 1_000_000_000_000_001, 1_000_000_000_000_001),
        (4.5e18, 4_500_000_000_000_000_000, 4_500_000_000_000_000_000, 4_500_000_000_000_000_000),
    ] as [(Double, Int, Int, Int)])
    func rounding(value: Double, floor: Int, ceiling: Int, nearest: Int) {
        #expect(GestureRounding.floor(value) == floor)
        #expect(GestureRounding.ceiling(value) == ceiling)
        #expect(GestureRounding.nearest(value) == nearest)
    }

    @Test("rounding refuses what cannot be converted", arguments: [Double.nan, .infinity, -.infinity, 4.7e18, -4.7e18, 1e300])
    func roundingRefuses(value: Double) {
        #expect(GestureRounding.floor(value) == nil)
        #expect(GestureRounding.ceiling(value) == nil)
        #expect(GestureRounding.nearest(value) == nil)
        #expect(GestureDecimal.milli(value) == nil)
    }

    @Test("the tolerance square is centred: edge inside, a thousandth beyond outside, on all four sides",
          arguments: [
              (522.5, 400.0, true), (522.501, 400.0, false),      // right
              (477.5, 400.0, true), (477.499, 400.0, false),      // left
              (500.0, 422.5, true), (500.0, 422.501, false),      // below
              (500.0, 377.5, true), (500.0, 377.499, false),      // above
              (522.5, 422.5, true), (477.5, 377.5, true),         // corners
              (522.501, 377.5, false), (477.5, 422.501, false),
          ])
    func centredTolerance(x: Double, y: Double, inside: Bool) throws {
        let scale = try #require(Self.scale)
        let stored = milli(500, 400)
        let input = try #require(GestureMilliPoint(GesturePoint(x: x, y: y)))
        #expect(scale.isWithinTolerance(input, of: stored) == inside)
        let grid = try #require(GestureToleranceGrid(stored: [stored], scale: scale))
        var hits: [Int] = []
        grid.forEachHit(input) { hits.append($0) }
        #expect(hits == (inside ? [0] : []))
    }

    @Test("the tolerance grid finds every square holding a point, and only those")
    func toleranceGridMatchesBruteForce() throws {
        let scale = try #require(Self.scale)
        var random = SplitMix64(seed: 7)
        var raster = try #require(GestureRaster(scale: scale))
        for _ in 0..<2000 {
            raster.offer(milli(random.uniform(0, 1000), random.uniform(0, 1000)))
        }
        let grid = try #require(GestureToleranceGrid(stored: raster.kept, scale: scale))
        for _ in 0..<2000 {
            let point = milli(random.uniform(0, 1000), random.uniform(0, 1000))
            var hits: [Int] = []
            grid.forEachHit(point) { hits.append($0) }
            let expected = raster.kept.indices.filter { scale.isWithinTolerance(point, of: raster.kept[$0]) }
            #expect(hits.sorted() == expected)
        }
    }

    @Test("required hits round up and the raster limit rounds down, exactly", arguments: zip(
        1...10,
        [(1, 1), (2, 2), (3, 4), (3, 5), (4, 7), (5, 8), (5, 9), (6, 11), (7, 12), (7, 14)]
    ))
    func roundingTable(stored: Int, expected: (Int, Int)) {
        #expect(GestureParameters.standard.requiredHits(storedCount: stored) == expected.0)
        #expect(GestureParameters.standard.rasterLimit(storedCount: stored) == expected.1)
    }

    @Test("rounding of other ratios", arguments: [
        (0.5, 3, 2), (0.5, 4, 2), (1.0, 7, 7), (0.1, 30, 3), (0.3, 10, 3), (0.01, 1, 1), (0.7, 100, 70),
    ])
    func otherRatios(ratio: Double, stored: Int, required: Int) throws {
        let parameters = try GestureParameters(minimumHitRatio: ratio)
        #expect(parameters.requiredHits(storedCount: stored) == required)
    }

    @Test("parameter ranges", arguments: [
        (0.004, 0.045, 0.7, 1.4, .rasterOutOfRange),
        (0.0, 0.045, 0.7, 1.4, .rasterOutOfRange),
        (0.26, 0.3, 0.7, 1.4, .rasterOutOfRange),
        (Double.nan, 0.045, 0.7, 1.4, .rasterOutOfRange),
        (0.03, 0.029, 0.7, 1.4, .toleranceOutOfRange),
        (0.03, 0.121, 0.7, 1.4, .toleranceOutOfRange),
        (0.03, .infinity, 0.7, 1.4, .toleranceOutOfRange),
        (0.03, 0.045, 0.0, 1.4, .hitRatioOutOfRange),
        (0.03, 0.045, 1.01, 1.4, .hitRatioOutOfRange),
        (0.03, 0.045, .nan, 1.4, .hitRatioOutOfRange),
        (0.03, 0.045, 0.7, 0.99, .overflowOutOfRange),
        (0.03, 0.045, 0.7, 10.01, .overflowOutOfRange),
        (0.03, 0.045, 0.7, .infinity, .overflowOutOfRange),
        (0.005, 0.005, 0.7, 1.4, nil),
        (0.25, 1.0, 1.0, 1.0, nil),
        (0.03, 0.12, 0.01, 10, nil),
    ] as [(Double, Double, Double, Double, GestureParameterError?)])
    func parameterRanges(raster: Double, tolerance: Double, ratio: Double, overflow: Double,
                         expected: GestureParameterError?) {
        do {
            _ = try GestureParameters(raster: raster, tolerance: tolerance, minimumHitRatio: ratio,
                                      overflow: overflow)
            #expect(expected == nil)
        } catch {
            #expect(error == expected)
        }
    }

    @Test("longest non-decreasing run", arguments: [
        ([], 0), ([5], 1), ([1, 2, 3], 3), ([3, 2, 1], 1), ([2, 2, 2], 3),
        ([0, 9, 1, 2, 3], 4), ([10, 9, 9, 8, 1, 2], 2), ([0, 100, 1, 101, 2, 3], 4),
    ])
    func longestRun(values: [Int], expected: Int) {
        #expect(GestureOrder.longestNonDecreasingRun(values) == expected)
    }

    @Test("enrollment keeps the kind of each part and refuses weak gestures", arguments: [
        (Gesture(width: 1000, height: 750, parts: []), .noParts),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400)]), .tooSimple),
        (Gesture(width: 1000, height: 750, parts: [Draw.path(Draw.line(100, 100, 250, 100, samples: 10))]),
         .tooSimple),  // 5 raster points
        (Gesture(width: 1000, height: 750, parts: [Draw.path(Draw.line(100, 100, 400, 100, samples: 10))]),
         nil),         // 10 raster points
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400), Draw.tap(100, 100)]), nil),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400), Draw.path(Draw.line(10, 10, 50, 10, samples: 5))]),
         .pathTooShort(part: 1, rasterPoints: 2)),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(500, 400), Draw.path(Draw.line(10, 10, 70, 10, samples: 5))]),
         nil),         // 3 raster points
        (Gesture(width: 1000, height: 750, parts: [Draw.path([GesturePoint(x: 5, y: 5), GesturePoint(x: 5, y: 5)]),
                                                   Draw.tap(1, 1)]),
         .pathTooShort(part: 0, rasterPoints: 1)),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(.nan, 1), Draw.tap(1, 1)]),
         .invalidGesture(.nonFiniteCoordinate)),
        (Gesture(width: 1000, height: 750, parts: [Draw.tap(1001, 1), Draw.tap(1, 1)]),
         .invalidGesture(.coordinateOutsidePicture)),
        (Gesture(width: 0, height: 750, parts: [Draw.tap(0, 0), Draw.tap(0, 0)]), .invalidGesture(.badSize)),
    ] as [(Gesture, GestureEnrollmentError?)])
    func enrollmentRules(gesture: Gesture, expected: GestureEnrollmentError?) {
        do {
            let template = try GestureEnroller.build(from: gesture)
            #expect(expected == nil)
            #expect(template.parts.map(\.kind) == gesture.parts.map(\.kind))
        } catch {
            #expect(error == expected)
        }
    }

    @Test("enrollment fails cleanly when the paths would expand too far")
    func enrollmentTooComplex() throws {
        // Raster 0.005 on a 100000-px picture: a step of 125 px, ≈ 1,132 per diagonal.
        let parameters = try GestureParameters(raster: 0.005, tolerance: 0.005)
        let zigzag = (0..<1000).map { GesturePoint(x: $0 % 2 == 0 ? 0 : 100_000, y: $0 % 2 == 0 ? 0 : 100_000) }
        let gesture = Gesture(width: 100_000, height: 100_000, parts: [Draw.path(zigzag)])
        #expect(throws: GestureEnrollmentError.tooComplex) {
            try GestureEnroller.build(from: gesture, parameters: parameters)
        }
    }

    @Test("the same gesture on a picture scaled twice stores the same points, scaled")
    func scalingInvariance() throws {
        let small = try GestureEnroller.build(from: Draw.genuine)
        let large = try GestureEnroller.build(from: Draw.scaled(Draw.genuine, by: 2))
        #expect(small.parts.map(\.points.count) == large.parts.map(\.points.count))
        for (a, b) in zip(small.parts, large.parts) {
            for (p, q) in zip(a.points, b.points) {
                #expect(abs(2 * p.x - q.x) <= 0.002 && abs(2 * p.y - q.y) <= 0.002)
            }
        }
    }

    private func milli(_ x: Double, _ y: Double) -> GestureMilliPoint {
        GestureMilliPoint(x: Int(x * 1000), y: Int(y * 1000))
    }
}

// MARK: - Fixtures shared by the gesture tests

/// Gesture builders for the tests.
enum Draw {
    static func tap(_ x: Double, _ y: Double) -> GesturePart {
        GesturePart(kind: .tap, points: [GesturePoint(x: x, y: y)])
    }

    static func path(_ points: [GesturePoint]) -> GesturePart {
        GesturePart(kind: .path, points: points)
    }

    /// `samples` evenly spaced points from (x0, y0) to (x1, y1), both ends included.
    static func line(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double, samples: Int) -> [GesturePoint] {
        (0..<samples).map { index in
            let t = Double(index) / Double(samples - 1)
            return GesturePoint(x: x0 + (x1 - x0) * t, y: y0 + (y1 - y0) * t)
        }
    }

    /// A full circle of `samples` + 1 points, the last equal to the first.
    static func circle(_ cx: Double, _ cy: Double, radius: Double, samples: Int,
                       clockwise: Bool, start: Double = 0) -> [GesturePoint] {
        (0...samples).map { index in
            let turn = 2 * Double.pi * Double(index) / Double(samples)
            let angle = start + (clockwise ? turn : -turn)
            return GesturePoint(x: cx + radius * Trig.cos(angle), y: cy + radius * Trig.sin(angle))
        }
    }

    /// A realistic three-part gesture on a 1000 × 750 picture: an outline, a tap, a line.
    static let genuine = Gesture(width: 1000, height: 750, parts: [
        path(circle(300, 300, radius: 100, samples: 60, clockwise: true)),
        tap(700, 200),
        path(line(600, 600, 900, 450, samples: 20)),
    ])

    static func map(_ gesture: Gesture, _ transform: (GesturePoint) -> GesturePoint) -> Gesture {
        Gesture(width: gesture.width, height: gesture.height, parts: gesture.parts.map {
            GesturePart(kind: $0.kind, points: $0.points.map(transform))
        })
    }

    /// Each point moved by up to ±`amplitude` pixels on each axis, kept inside the picture.
    static func jittered(_ gesture: Gesture, amplitude: Double, seed: UInt64) -> Gesture {
        var random = SplitMix64(seed: seed)
        return map(gesture) { point in
            GesturePoint(x: min(Double(gesture.width), max(0, point.x + random.uniform(-amplitude, amplitude))),
                         y: min(Double(gesture.height), max(0, point.y + random.uniform(-amplitude, amplitude))))
        }
    }

    static func shifted(_ gesture: Gesture, dx: Double, dy: Double) -> Gesture {
        map(gesture) { GesturePoint(x: $0.x + dx, y: $0.y + dy) }
    }

    static func scaled(_ gesture: Gesture, by factor: Int) -> Gesture {
        let scaled = map(gesture) { GesturePoint(x: $0.x * Double(factor), y: $0.y * Double(factor)) }
        return Gesture(width: gesture.width * factor, height: gesture.height * factor, parts: scaled.parts)
    }

    /// The same gesture with every path drawn backwards.
    static func reversedPaths(_ gesture: Gesture) -> Gesture {
        Gesture(width: gesture.width, height: gesture.height, parts: gesture.parts.map {
            GesturePart(kind: $0.kind, points: $0.points.reversed())
        })
    }
}

