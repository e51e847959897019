/// A gesture made small enough for a channel with a fixed message size (LightDM's greeter
/// library builds each answer in a 1,024-byte buffer), in the ordinary wire format: the
/// compaction happens on the client, the module reads the result like any other gesture.
///
/// Every point is rounded to a whole picture pixel and each path is simplified with
/// Ramer–Douglas–Peucker: a point is dropped when the polyline without it stays within
/// `deviation` of it. The first and last point of every path and every tap are kept. The
/// deviation starts at `startDeviation` of the picture's longest side (a tenth of the
/// matcher's smallest tolerance, the 0.6 % place scale) and doubles up to
/// `maximumDeviation`. A shaky drawing (every point off its neighbours by more than that)
/// still does not fit: then every path is resampled evenly along its length — as the matcher
/// itself resamples each path to 32 points — with as many points as fit, at least
/// `minimumResampledPoints`; below that the gesture is refused rather than distorted.
public enum GestureCompaction {
    /// First deviation tried, as a fraction of the picture's longest side.
    public static let startDeviation = 0.0006
    /// Largest deviation used: a fifth of the 3 % shape tolerance.
    public static let maximumDeviation = 0.006
    /// Fewest points a resampled path keeps.
    public static let minimumResampledPoints = 12

    /// The compacted gesture and its wire text length, or nil when it cannot be brought to
    /// `budget` bytes (or the gesture is not valid). `discard` is given every intermediate
    /// gesture before it is released (the caller wipes them: a drawing is a secret).
    public static func compact(_ gesture: Gesture, budget: Int,
                               discard: (inout Gesture) -> Void) -> (gesture: Gesture, bytes: Int)? {
        // A declared input resolution (wire version 2) is not compacted: puff-greeter draws on
        // picture pixels and declares none.
        guard gesture.resolution == nil, (try? gesture.validate()) != nil else { return nil }
        let longest = Double(max(gesture.width, gesture.height))
        var fraction = startDeviation
        while fraction <= maximumDeviation * 1.0001 {
            var candidate = simplified(gesture, deviation: fraction * longest, discard: discard)
            let length = wireLength(candidate)
            if length <= budget, (try? candidate.validate()) != nil { return (candidate, length) }
            discard(&candidate)
            fraction *= 2
            if fraction > maximumDeviation && fraction < maximumDeviation * 2 { fraction = maximumDeviation }
        }
        // The most points per path that fit, by bisection.
        var low = minimumResampledPoints
        var high = gesture.parts.reduce(low) { max($0, $1.points.count) }
        var best: (gesture: Gesture, bytes: Int)?
        while low <= high {
            let middle = (low + high) / 2
            var candidate = resampled(gesture, points: middle, discard: discard)
            let length = wireLength(candidate)
            if length <= budget, (try? candidate.validate()) != nil {
                if var replaced = best?.gesture { discard(&replaced) }
                best = (candidate, length)
                low = middle + 1
            } else {
                discard(&candidate)
                high = middle - 1
            }
        }
        return best
    }

    /// The gesture on whole pixels with every path of more than `points` points resampled to
    /// `points` points evenly spaced along its length (its ends kept).
    public static func resampled(_ gesture: Gesture, points count: Int, discard: (inout Gesture) -> Void) -> Gesture {
        var spaced = Gesture(width: gesture.width, height: gesture.height, parts: [])
        spaced.parts.reserveCapacity(gesture.parts.count)
        for part in gesture.parts {
            guard part.kind == .path, part.points.count > count, count >= 2 else {
                spaced.parts.append(part)
                continue
            }
            var lengths = [0.0]
            lengths.reserveCapacity(part.points.count)
            for (a, b) in zip(part.points, part.points.dropFirst()) {
                let dx = b.x - a.x, dy = b.y - a.y
                lengths.append(lengths[lengths.count - 1] + GestureShape.squareRoot(dx * dx + dy * dy))
            }
            let total = lengths[lengths.count - 1]
            var points: [GesturePoint] = []
            points.reserveCapacity(count)
            var segment = 0
            for index in 0..<count {
                let target = total * Double(index) / Double(count - 1)
                while segment < part.points.count - 2 && lengths[segment + 1] < target { segment += 1 }
                let span = lengths[segment + 1] - lengths[segment]
                let t = span > 0 ? min(max((target - lengths[segment]) / span, 0), 1) : 0
                let a = part.points[segment], b = part.points[segment + 1]
                points.append(GesturePoint(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t))
            }
            points[0] = part.points[0]
            points[count - 1] = part.points[part.points.count - 1]
            spaced.parts.append(GesturePart(kind: .path, points: points))
        }
        defer { discard(&spaced) }
        // Whole pixels (and no simplification: deviation 0 keeps every point that moved).
        return simplified(spaced, deviation: 0, discard: discard)
    }

    /// The gesture on whole pixels with each path simplified within `deviation` pixels.
    public static func simplified(_ gesture: Gesture, deviation: Double, discard: (inout Gesture) -> Void) -> Gesture {
        var result = Gesture(width: gesture.width, height: gesture.height, parts: [])
        result.parts.reserveCapacity(gesture.parts.count)
        var onPixels = Gesture(width: gesture.width, height: gesture.height, parts: [])
        defer { discard(&onPixels) }
        for part in gesture.parts {
            var points: [GesturePoint] = []
            points.reserveCapacity(part.points.count + 1)
            for point in part.points {
                // (GestureRounding: no libm in the module's build of PuffCore.)
                let rounded = GesturePoint(x: min(max(Double(GestureRounding.nearest(point.x) ?? 0), 0), Double(gesture.width)),
                                           y: min(max(Double(GestureRounding.nearest(point.y) ?? 0), 0), Double(gesture.height)))
                // Consecutive points on the same pixel say nothing more.
                if part.kind == .path, let last = points.last, last == rounded { continue }
                points.append(rounded)
            }
            if part.kind == .path && points.count == 1 { points.append(points[0]) }
            // Kept where `discard` reaches it.
            onPixels.parts.append(GesturePart(kind: part.kind, points: points))
            switch part.kind {
            case .tap:
                result.parts.append(GesturePart(kind: .tap, points: Array(points.prefix(1))))
            case .path:
                let kept = keptIndices(points, deviation: deviation)
                var simple: [GesturePoint] = []
                simple.reserveCapacity(kept.count)
                for index in kept { simple.append(points[index]) }
                result.parts.append(GesturePart(kind: .path, points: simple))
            }
        }
        return result
    }

    /// The indices Ramer–Douglas–Peucker keeps (in order), with an explicit stack: the ends,
    /// and every point farther than `deviation` from the chord of the span it lies in.
    static func keptIndices(_ points: [GesturePoint], deviation: Double) -> [Int] {
        guard points.count > 2 else { return Array(points.indices) }
        var keep = [Bool](repeating: false, count: points.count)
        keep[0] = true
        keep[points.count - 1] = true
        var spans: [(Int, Int)] = [(0, points.count - 1)]
        while let (first, last) = spans.popLast() {
            guard last - first > 1 else { continue }
            var farthest = first, distance = -1.0
            for index in (first + 1)..<last {
                let d = squaredDistanceToSegment(points[index], points[first], points[last])
                if d > distance {
                    distance = d
                    farthest = index
                }
            }
            if distance > deviation * deviation {
                keep[farthest] = true
                spans.append((first, farthest))
                spans.append((farthest, last))
            }
        }
        return keep.indices.filter { keep[$0] }
    }

    static func squaredDistanceToSegment(_ p: GesturePoint, _ a: GesturePoint, _ b: GesturePoint) -> Double {
        let dx = b.x - a.x, dy = b.y - a.y
        let squared = dx * dx + dy * dy
        var t = squared > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / squared : 0
        t = min(max(t, 0), 1)
        let ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y
        return ex * ex + ey * ey
    }

    /// The length of `GestureWire.serialize(gesture)` for a gesture on whole pixels, counted
    /// without writing the text.
    public static func wireLength(_ gesture: Gesture) -> Int {
        func digits(_ value: Int) -> Int {
            var count = 1, rest = value
            while rest >= 10 {
                rest /= 10
                count += 1
            }
            return count
        }
        var length = GestureWire.prefix.count + digits(GestureWire.version) + 1
            + digits(gesture.width) + 1 + digits(gesture.height) + 1
        for (index, part) in gesture.parts.enumerated() {
            if index > 0 { length += 1 }
            length += 1
            for point in part.points {
                length += 1 + digits(Int(point.x)) + 1 + digits(Int(point.y))
            }
        }
        return length
    }
}
