// The shared geometry of enrollment and verification. Everything is computed in whole
// milli-pixels (thousandths of a pixel) so that boundaries are exact: a point exactly on the
// edge of a tolerance square is inside on every side, and touching raster squares never
// intersect, whatever the binary representation of 0.03 or 0.045.

/// A point in whole milli-pixels.
struct GestureMilliPoint: Equatable, Sendable {
    /// Horizontal position in milli-pixels.
    var x: Int
    /// Vertical position in milli-pixels.
    var y: Int

    /// Converts a pixel point, rounding to the nearest milli-pixel; nil when not finite.
    init?(_ point: GesturePoint) {
        guard let x = GestureDecimal.milli(point.x), let y = GestureDecimal.milli(point.y) else { return nil }
        self.x = x
        self.y = y
    }

    /// Creates a point from milli-pixel coordinates.
    init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }

    /// The same point in pixels.
    var pixels: GesturePoint {
        GesturePoint(x: GestureDecimal.pixels(milli: x), y: GestureDecimal.pixels(milli: y))
    }
}

/// The picture and the parameters turned into milli-pixel sizes.
struct GestureScale: Sendable {
    /// Picture width in milli-pixels.
    let width: Int
    /// Picture height in milli-pixels.
    let height: Int
    /// Side of a raster square.
    let rasterSide: Int
    /// Side of a tolerance square.
    let toleranceSide: Int
    /// Largest distance between successive interpolated points: a quarter raster side, so a
    /// fast stroke with far-apart samples still crosses every square it passes through.
    let step: Int

    /// Nil when the picture size is out of range.
    init?(width: Int, height: Int, parameters: GestureParameters) {
        guard Gesture.isValidSide(width), Gesture.isValidSide(height) else { return nil }
        self.width = width * GestureDecimal.milliPerPixel
        self.height = height * GestureDecimal.milliPerPixel
        let longest = Double(max(self.width, self.height))
        guard let raster = GestureRounding.nearest(parameters.raster * longest),
              let tolerance = GestureRounding.nearest(parameters.tolerance * longest),
              raster >= 1, tolerance >= raster
        else { return nil }
        rasterSide = raster
        toleranceSide = tolerance
        step = max(1, raster / 4)
    }

    /// A point in fractions of the longest side turned into milli-pixels, clamped into the picture.
    func milliPoint(_ point: GestureUnitPoint) -> GestureMilliPoint {
        let longest = Double(max(width, height))
        func clamp(_ value: Double, _ limit: Int) -> Int {
            guard value.isFinite else { return 0 }
            let scaled = value * longest
            if scaled <= 0 { return 0 }
            if scaled >= Double(limit) { return limit }
            return GestureRounding.nearest(scaled) ?? 0
        }
        return GestureMilliPoint(x: clamp(point.x, width), y: clamp(point.y, height))
    }

    /// Whether `point` lies in the picture, edges included.
    func contains(_ point: GestureMilliPoint) -> Bool {
        point.x >= 0 && point.y >= 0 && point.x <= width && point.y <= height
    }

    /// Whether `input` lies in the tolerance square centred on `stored`, edges included:
    /// |dx| ≤ T/2 and |dy| ≤ T/2, compared as 2|dx| ≤ T to stay in whole numbers.
    func isWithinTolerance(_ input: GestureMilliPoint, of stored: GestureMilliPoint) -> Bool {
        2 * (input.x - stored.x).magnitude <= toleranceSide.magnitude
            && 2 * (input.y - stored.y).magnitude <= toleranceSide.magnitude
    }
}

/// Path interpolation: successive points closer than one step, so no square is skipped.
enum GestureInterpolation {
    /// How many steps the segment from `start` to `end` is cut into: ⌈length / step⌉, computed
    /// exactly in integers; 0 for a repeated point.
    static func steps(from start: GestureMilliPoint, to end: GestureMilliPoint, step: Int) -> Int {
        let dx = end.x - start.x
        let dy = end.y - start.y
        // 2^30 milli-pixels is ten times the largest picture; the bound keeps dx² + dy² in range.
        guard dx.magnitude < 1 << 30, dy.magnitude < 1 << 30 else { return Int.max }
        let squaredLength = dx * dx + dy * dy
        let step = max(1, step)
        if squaredLength == 0 { return 0 }
        // Densely sampled strokes take this branch for nearly every segment.
        if squaredLength <= step * step { return 1 }
        let length = ceilingSquareRoot(squaredLength)
        return (length + step - 1) / step
    }

    /// ⌈√value⌉ for 0 ≤ value < 2^62, by integer Newton iteration. `Double.squareRoot` would
    /// do, but unoptimized builds call libm's `sqrt` for it, and the module links no libm.
    static func ceilingSquareRoot(_ value: Int) -> Int {
        guard value > 1 else { return max(0, value) }
        // Start above √value: 2^⌈bits / 2⌉; the iteration then decreases to ⌊√value⌋.
        var root = 1 << ((Int.bitWidth - value.leadingZeroBitCount + 1) / 2)
        while true {
            let next = (root + value / root) / 2
            if next >= root { break }
            root = next
        }
        return root * root == value ? root : root + 1
    }

    /// The number of points `points` expands to, or nil when it would exceed `limit`.
    static func count(_ points: [GestureMilliPoint], step: Int, limit: Int) -> Int? {
        var total = points.isEmpty ? 0 : 1
        for (start, end) in zip(points, points.dropFirst()) {
            let (sum, overflow) = total.addingReportingOverflow(steps(from: start, to: end, step: step))
            guard !overflow, sum <= limit else { return nil }
            total = sum
        }
        return total <= limit ? total : nil
    }

    /// Calls `body` with the first point, then for each segment with evenly spaced points up
    /// to and including its end. Callers bound the total with `count` first.
    static func forEach(_ points: [GestureMilliPoint], step: Int, _ body: (GestureMilliPoint) -> Void) {
        guard let first = points.first else { return }
        body(first)
        for (start, end) in zip(points, points.dropFirst()) {
            let steps = Self.steps(from: start, to: end, step: step)
            guard steps > 0 else { continue }
            let dx = end.x - start.x
            let dy = end.y - start.y
            for index in 1...steps {
                body(GestureMilliPoint(x: start.x + roundedQuotient(dx * index, steps),
                                       y: start.y + roundedQuotient(dy * index, steps)))
            }
        }
    }

    /// `numerator / denominator` rounded to nearest, halves away from zero; denominator > 0.
    static func roundedQuotient(_ numerator: Int, _ denominator: Int) -> Int {
        let half = denominator / 2
        return numerator >= 0 ? (numerator + half) / denominator : -((half - numerator) / denominator)
    }
}

/// Rasterization of one part, in drawing order: a point is kept only when the square of one
/// raster side centred on it does not intersect a square already kept.
///
/// Two such squares intersect when |dx| < side and |dy| < side; squares that only touch
/// (|dx| == side or |dy| == side) do not. Kept points are therefore at least one side apart
/// on some axis, so each grid cell of one side holds at most one kept point and a new point
/// needs to look at its 3 × 3 neighbourhood only.
struct GestureRaster {
    private let side: Int
    private let columns: Int
    private let rows: Int
    /// Index into `kept` of the point in each cell, or -1.
    private var cells: [Int]
    /// The kept points in drawing order.
    private(set) var kept: [GestureMilliPoint] = []

    /// Most cells in one grid; the raster floor of 0.005 needs ≈ 40,401.
    static let maximumCells = 1 << 20

    /// Nil when the grid would be larger than `maximumCells`.
    init?(scale: GestureScale) {
        side = scale.rasterSide
        columns = scale.width / side + 1
        rows = scale.height / side + 1
        let (cellCount, overflow) = columns.multipliedReportingOverflow(by: rows)
        guard !overflow, cellCount <= Self.maximumCells else { return nil }
        cells = Array(repeating: -1, count: cellCount)
    }

    /// Keeps `point` unless its square intersects a kept one; returns whether it was kept.
    /// Points outside the picture are never kept (callers validate before this).
    @discardableResult
    mutating func offer(_ point: GestureMilliPoint) -> Bool {
        guard point.x >= 0, point.y >= 0 else { return false }
        let column = point.x / side
        let row = point.y / side
        guard column < columns, row < rows else { return false }
        for neighbourRow in max(0, row - 1)...min(rows - 1, row + 1) {
            for neighbourColumn in max(0, column - 1)...min(columns - 1, column + 1) {
                let keptIndex = cells[neighbourRow * columns + neighbourColumn]
                guard keptIndex >= 0 else { continue }
                let other = kept[keptIndex]
                if (other.x - point.x).magnitude < side.magnitude, (other.y - point.y).magnitude < side.magnitude {
                    return false
                }
            }
        }
        cells[row * columns + column] = kept.count
        kept.append(point)
        return true
    }
}

/// The tolerance squares of one stored part, bucketed on a grid of one tolerance side so an
/// input point looks at no more than 2 × 2 cells (3 × 3 in a rare rounding case).
struct GestureToleranceGrid {
    private let scale: GestureScale
    private let columns: Int
    private let rows: Int
    private let stored: [GestureMilliPoint]
    /// First stored index in each cell, or -1; `next` chains the rest of the cell.
    private var heads: [Int]
    private var next: [Int]

    /// Nil when the grid would be too large or a stored point lies outside the picture.
    init?(stored: [GestureMilliPoint], scale: GestureScale) {
        self.scale = scale
        self.stored = stored
        let side = scale.toleranceSide
        columns = scale.width / side + 1
        rows = scale.height / side + 1
        let (cellCount, overflow) = columns.multipliedReportingOverflow(by: rows)
        guard !overflow, cellCount <= GestureRaster.maximumCells else { return nil }
        heads = Array(repeating: -1, count: cellCount)
        next = Array(repeating: -1, count: stored.count)
        for (index, point) in stored.enumerated() {
            guard scale.contains(point) else { return nil }
            let cell = (point.y / side) * columns + point.x / side
            next[index] = heads[cell]
            heads[cell] = index
        }
    }

    /// Calls `body` with the index of every stored point whose tolerance square holds `point`.
    func forEachHit(_ point: GestureMilliPoint, _ body: (Int) -> Void) {
        let side = scale.toleranceSide
        // A stored q is hit when |p - q| ≤ T/2, so q / T lies in [(2p - T) / 2T, (2p + T) / 2T].
        let firstColumn = max(0, Self.floorQuotient(2 * point.x - side, 2 * side))
        let lastColumn = min(columns - 1, Self.floorQuotient(2 * point.x + side, 2 * side))
        let firstRow = max(0, Self.floorQuotient(2 * point.y - side, 2 * side))
        let lastRow = min(rows - 1, Self.floorQuotient(2 * point.y + side, 2 * side))
        guard firstColumn <= lastColumn, firstRow <= lastRow else { return }
        for row in firstRow...lastRow {
            for column in firstColumn...lastColumn {
                var index = heads[row * columns + column]
                while index >= 0 {
                    if scale.isWithinTolerance(point, of: stored[index]) { body(index) }
                    index = next[index]
                }
            }
        }
    }

    /// ⌊numerator / denominator⌋ for denominator > 0.
    static func floorQuotient(_ numerator: Int, _ denominator: Int) -> Int {
        numerator >= 0 ? numerator / denominator : -((denominator - 1 - numerator) / denominator)
    }
}

/// Order checking for path parts.
enum GestureOrder {
    /// The length of the longest non-decreasing subsequence of `values`, in O(n log n).
    static func longestNonDecreasingRun(_ values: [Int]) -> Int {
        // tails[k] is the smallest last value of a non-decreasing subsequence of length k + 1.
        var tails: [Int] = []
        for value in values {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = low + (high - low) / 2
                if tails[middle] <= value { low = middle + 1 } else { high = middle }
            }
            if low == tails.count { tails.append(value) } else { tails[low] = value }
        }
        return tails.count
    }
}
