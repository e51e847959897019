import Testing
@testable import PuffCore

/// `GestureCompaction`: puff-greeter's answers fit LightDM's buffer and keep the matcher's verdict.
@Suite("Gesture compaction for the login screen")
struct GestureCompactionTests {
    /// A dense drawing as the pointer gives it: a point every 0.7 px with sub-pixel jitter.
    static func dense(_ gesture: Gesture) -> Gesture {
        var copy = gesture
        var state: UInt64 = 7
        func jitter() -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Double(state >> 40) / Double(1 << 24) * 0.6 - 0.3
        }
        for index in copy.parts.indices where copy.parts[index].kind == .path {
            let points = copy.parts[index].points
            var dense: [GesturePoint] = []
            for (a, b) in zip(points, points.dropFirst()) {
                let steps = max(1, Int((((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot() / 0.7).rounded(.up)))
                for step in 0..<steps {
                    let t = Double(step) / Double(steps)
                    dense.append(GesturePoint(x: min(max(a.x + (b.x - a.x) * t + jitter(), 0), Double(copy.width)),
                                              y: min(max(a.y + (b.y - a.y) * t + jitter(), 0), Double(copy.height))))
                }
            }
            if let last = points.last { dense.append(last) }
            copy.parts[index].points = dense
        }
        return copy
    }

    @Test("every attempt of the recognizer's table gets the same verdict compacted", arguments: GestureRecognizerTests.cases.indices)
    func sameVerdict(index: Int) throws {
        let (name, attempt, _) = GestureRecognizerTests.cases[index]
        let template = try GestureRecognizerTests.template()
        let full = Self.dense(attempt)
        #expect(GestureWire.serialize(full).count > 1000, "\(name): the test drawing should need compaction")
        let compacted = try #require(GestureCompaction.compact(full, budget: 1000, discard: { _ in }), "\(name)")
        #expect(compacted.bytes <= 1000)
        #expect(GestureWire.serialize(compacted.gesture).count == compacted.bytes)
        #expect(GestureMatcher.verify(template, compacted.gesture).passed == GestureMatcher.verify(template, full).passed, "\(name)")
        // Whole pixels; every part keeps its kind, its first and last point (rounded).
        #expect(try GestureWire.parse(GestureWire.serialize(compacted.gesture)) == compacted.gesture)
        for (part, original) in zip(compacted.gesture.parts, full.parts) {
            #expect(part.kind == original.kind)
            #expect(part.points.allSatisfy { $0.x == Double(Int($0.x)) && $0.y == Double(Int($0.y)) })
            #expect(part.points.first == original.points.first.map { GesturePoint(x: $0.x.rounded(), y: $0.y.rounded()) })
            #expect(part.points.last == original.points.last.map { GesturePoint(x: $0.x.rounded(), y: $0.y.rounded()) })
        }
    }

    @Test func aGestureThatCannotFitWithoutDistortionIsRefused() {
        // Sixteen zigzags whose corners are all farther apart than the largest deviation, and
        // too many to keep 12 points each.
        var parts: [GesturePart] = []
        for row in 0..<16 {
            var points: [GesturePoint] = []
            for index in 0..<60 {
                let y: Int = row * 46 + (index % 2) * 40
                points.append(GesturePoint(x: Double(index * 16), y: Double(y)))
            }
            parts.append(GesturePart(kind: .path, points: points))
        }
        let gesture = Gesture(width: 1000, height: 750, parts: parts)
        #expect(GestureCompaction.compact(gesture, budget: 1000, discard: { _ in }) == nil)
    }

    @Test func theDiscardedIntermediatesAreHandedBack() {
        let gesture = Self.dense(GestureRecognizerTests.base)
        var discarded = 0
        _ = GestureCompaction.compact(gesture, budget: 1000, discard: { _ in discarded += 1 })
        #expect(discarded >= 1)
    }
}
