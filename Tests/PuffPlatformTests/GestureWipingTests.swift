import PuffCore
import PuffPlatform
import Testing

/// A parsed gesture attempt is wiped after use (issue 11): in place, in the arrays that hold it.
struct GestureWipingTests {
    @Test func wipeZeroesTheParsedPointsInPlace() throws {
        var gesture = try GestureWire.parse(Array("puff-gesture:1:400x300:p 10,20 30.5,40;t 5,6".utf8))
        let before = gesture.parts.map { part in part.points.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
        #expect(gesture.parts[0].points[1] == GesturePoint(x: 30.5, y: 40))
        gesture.wipe()
        let after = gesture.parts.map { part in part.points.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
        // The same storage (no copy was wiped instead), now all zeros; the shape stays.
        #expect(after == before)
        #expect(gesture.parts.map(\.points.count) == [2, 1])
        #expect(gesture.parts.allSatisfy { part in part.points.allSatisfy { $0.x == 0 && $0.y == 0 } })
    }
}
