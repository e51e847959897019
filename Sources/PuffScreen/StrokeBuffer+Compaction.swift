import PuffCore
import PuffPlatform

extension StrokeBuffer {
    /// The finished parts as a gesture on a `width` × `height` picture (the caller wipes it);
    /// nil when nothing was drawn or a part is still being drawn.
    package func drawnGesture(width: Int, height: Int) -> Gesture? {
        guard !parts.isEmpty, !isDrawing else { return nil }
        var gesture = Gesture(width: width, height: height, parts: [])
        gesture.parts.reserveCapacity(parts.count)
        for part in parts {
            var points: [GesturePoint] = []
            points.reserveCapacity(part.count)
            for index in 0..<part.count { points.append(point(part, index)) }
            gesture.parts.append(GesturePart(kind: part.kind, points: points))
        }
        return gesture
    }

    /// The gesture in the wire format made to fit `budget` bytes (`GestureCompaction`: whole
    /// pixels, each path simplified), in a wiped-on-release buffer; nil when nothing was
    /// drawn, the gesture is not valid, or it cannot be made that small without distorting it.
    package func compactSerialized(width: Int, height: Int, budget: Int) -> SecretBuffer? {
        guard var gesture = drawnGesture(width: width, height: height) else { return nil }
        defer { gesture.wipe() }
        guard var compacted = GestureCompaction.compact(gesture, budget: budget, discard: { $0.wipe() }) else { return nil }
        defer { compacted.gesture.wipe() }
        var wire = GestureWire.serialize(compacted.gesture)
        defer { Wipe.array(&wire) }
        return SecretBuffer(copying: wire)
    }
}
