import Glibc
import PuffCore
import PuffPlatform

/// The gesture being drawn: up to 16 parts of up to 4,096 points each, in picture pixels, in
/// one fixed buffer that is allocated once, locked in memory when possible and wiped with
/// `explicit_bzero` on every clear, so a stroke leaves no copy behind after a submission.
package final class StrokeBuffer {
    /// One part: where its points sit in the buffer.
    package struct Part {
        package var kind: GesturePartKind
        package var start: Int
        package var count: Int
        /// When the part was finished (`monotonicSeconds()`), for a trail that fades; nil while
        /// it is drawn and for parts added whole (the review's replay).
        package var endedAt: Double?
    }

    package static let pointsPerPart = GestureLimits.maximumWirePointsPerPart
    package static let capacity = GestureLimits.maximumParts * pointsPerPart
    /// A press that moves less than this (screen pixels) before the release is a tap.
    package static let tapTravel = 6.0

    private let coordinates: UnsafeMutablePointer<Double>
    package private(set) var parts: [Part] = []
    private var drawing: Part?
    private var pressedAt: (x: Double, y: Double) = (0, 0)
    private var travel = 0.0

    package init() {
        coordinates = .allocate(capacity: 2 * Self.capacity)
        coordinates.initialize(repeating: 0, count: 2 * Self.capacity)
        _ = mlock(coordinates, 2 * Self.capacity * MemoryLayout<Double>.stride)
        parts.reserveCapacity(GestureLimits.maximumParts)
    }

    deinit {
        explicit_bzero(coordinates, 2 * Self.capacity * MemoryLayout<Double>.stride)
        _ = munlock(coordinates, 2 * Self.capacity * MemoryLayout<Double>.stride)
        coordinates.deallocate()
    }

    package var isEmpty: Bool { parts.isEmpty && drawing == nil }
    package var isDrawing: Bool { drawing != nil }
    package var isFull: Bool { parts.count >= GestureLimits.maximumParts }

    /// The parts to show: the finished ones and the one being drawn.
    package var visibleParts: [Part] { drawing.map { parts + [$0] } ?? parts }

    package func point(_ part: Part, _ index: Int) -> GesturePoint {
        let offset = 2 * (part.start + index)
        return GesturePoint(x: coordinates[offset], y: coordinates[offset + 1])
    }

    /// Starts a part at a press; false when the gesture already has 16 parts.
    package func begin(_ point: GesturePoint, screenX: Double, screenY: Double) -> Bool {
        guard !isFull, drawing == nil else { return false }
        let start = parts.count * Self.pointsPerPart
        drawing = Part(kind: .path, start: start, count: 0)
        pressedAt = (screenX, screenY)
        travel = 0
        append(point)
        return true
    }

    /// Adds a point while the button is held (a point equal to the last one is skipped; a
    /// full part keeps following the pointer with its last point).
    package func extend(_ point: GesturePoint, screenX: Double, screenY: Double) {
        guard let part = drawing else { return }
        travel = max(travel, hypot(screenX - pressedAt.x, screenY - pressedAt.y))
        if part.count > 0 && self.point(part, part.count - 1) == point { return }
        append(point)
    }

    /// Ends the part at the release: a tap at the press point when the pointer hardly moved,
    /// a path otherwise.
    package func end(_ point: GesturePoint, screenX: Double, screenY: Double) {
        extend(point, screenX: screenX, screenY: screenY)
        guard var part = drawing else { return }
        drawing = nil
        if travel < Self.tapTravel || part.count < 2 {
            part.kind = .tap
            // The tap is where the press was; the rest is wiped.
            wipe(from: part.start + 1, count: part.count - 1)
            part.count = 1
        }
        part.endedAt = monotonicSeconds()
        parts.append(part)
    }

    /// Whether a part finished less than `seconds` ago (a fading trail still shows it).
    package func endedWithin(_ seconds: Double, of now: Double) -> Bool {
        parts.contains { part in part.endedAt.map { now - $0 < seconds } ?? false }
    }

    private func append(_ point: GesturePoint) {
        guard var part = drawing else { return }
        if part.count == Self.pointsPerPart { part.count -= 1 }
        let offset = 2 * (part.start + part.count)
        coordinates[offset] = point.x
        coordinates[offset + 1] = point.y
        part.count += 1
        drawing = part
    }

    /// Adds a finished part as it is given (the review window's replay); false when the
    /// gesture is full, a part is being drawn or `points` is empty. Points past a part's
    /// capacity are dropped.
    @discardableResult
    package func appendPart(kind: GesturePartKind, points: some Collection<GesturePoint>) -> Bool {
        guard !isFull, drawing == nil, !points.isEmpty else { return false }
        var part = Part(kind: kind, start: parts.count * Self.pointsPerPart, count: 0)
        for point in points.prefix(Self.pointsPerPart) {
            let offset = 2 * (part.start + part.count)
            coordinates[offset] = point.x
            coordinates[offset + 1] = point.y
            part.count += 1
        }
        parts.append(part)
        return true
    }

    /// Removes the last part (or the one being drawn).
    package func removeLast() {
        if let part = drawing {
            wipe(from: part.start, count: part.count)
            drawing = nil
        } else if let part = parts.popLast() {
            wipe(from: part.start, count: part.count)
        }
    }

    /// Removes everything and wipes the buffer.
    package func removeAll() {
        explicit_bzero(coordinates, 2 * Self.capacity * MemoryLayout<Double>.stride)
        parts.removeAll(keepingCapacity: true)
        drawing = nil
        travel = 0
        pressedAt = (0, 0)
    }

    private func wipe(from start: Int, count: Int) {
        guard count > 0 else { return }
        explicit_bzero(coordinates + 2 * start, 2 * count * MemoryLayout<Double>.stride)
    }

    /// The gesture in the wire format (docs/dev/gesture-format.md), in a wiped-on-release buffer;
    /// nil when nothing was drawn or the gesture is not valid. The intermediate arrays are
    /// wiped in place before they are released.
    package func serialized(width: Int, height: Int) -> SecretBuffer? {
        guard var gesture = drawnGesture(width: width, height: height) else { return nil }
        defer { gesture.wipe() }
        guard (try? gesture.validate()) != nil else { return nil }
        var wire = GestureWire.serialize(gesture)
        defer { Wipe.array(&wire) }
        return SecretBuffer(copying: wire)
    }
}
