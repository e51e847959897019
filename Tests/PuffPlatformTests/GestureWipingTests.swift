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

/// An opened template's points are wiped where they lie once the attempt is over.
struct TemplateWipingTests {
    @Test func wipeStorageZeroesThePointsEveryCopyShares() throws {
        let parts = [GesturePart(kind: .path, points: (0..<10).map { GesturePoint(x: 20 + Double($0) * 30, y: 150) }),
                     GesturePart(kind: .tap, points: [GesturePoint(x: 300, y: 80)]),
                     GesturePart(kind: .tap, points: [GesturePoint(x: 100, y: 60)])]
        let template = try GestureTemplate(width: 400, height: 300, parameters: .standard, parts: parts)
        let copy = template
        var nonZero = 0
        copy.forEachPointStorage { bytes in nonZero += bytes.filter { $0 != 0 }.count }
        #expect(nonZero > 0)
        template.wipeStorage()
        var left = 0
        copy.forEachPointStorage { bytes in left += bytes.filter { $0 != 0 }.count }
        #expect(left == 0)
    }
}
