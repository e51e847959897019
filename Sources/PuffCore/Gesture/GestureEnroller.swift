/// Builds templates from enrollment gestures.
///
/// Each path is interpolated along its length (a point at least every quarter raster side)
/// and rasterized; a tap keeps its point. The confirmation step of enrollment is an ordinary
/// `GestureMatcher.verify(template, secondDrawing)`.
///
/// Minimum strength, and why: with the default tolerance (4.5 % of the longest side) a 4:3
/// picture holds about 22 × 17 ≈ 370 separable tolerance squares, so one tap is ≈ 8.5 bits
/// before any bias, and points-of-interest dictionaries (Zhao et al. 2013) make a single
/// salient tap far weaker than that. Hence a gesture needs either
/// - at least `minimumParts` (2) parts: ≈ 17 bits for two taps, more with a path, plus the
///   kinds and their order; or
/// - one path of at least `minimumSinglePathPoints` (8) raster points: a stroke of at least
///   seven raster steps (≈ 21 % of the longest side) whose start (≈ 370 choices), shape and
///   direction must all be matched in order.
/// Every path needs `minimumPathPoints` (3) raster points: a shorter stroke is a smudge that
/// one tap-sized guess covers, and with fewer than three points the direction check means
/// little. Lockout, not these minimums, is what keeps online guessing harmless.
public enum GestureEnroller {
    /// Fewest raster points in any path part.
    public static let minimumPathPoints = 3
    /// Fewest parts, unless the kept points reach `minimumSinglePathPoints`.
    public static let minimumParts = 2
    /// Fewest kept points of a gesture with fewer than `minimumParts` parts.
    public static let minimumSinglePathPoints = 8

    /// Builds the template for `gesture`, or explains why the gesture is not acceptable.
    public static func build(from gesture: Gesture,
                             parameters: GestureParameters = .standard) throws(GestureEnrollmentError) -> GestureTemplate {
        guard !gesture.parts.isEmpty else { throw .noParts }
        do {
            try gesture.validate()
        } catch {
            throw .invalidGesture(error)
        }
        guard let scale = GestureScale(width: gesture.width, height: gesture.height, parameters: parameters) else {
            throw .invalidGesture(.badSize)
        }
        let drawn = try milliParts(of: gesture)
        var budget = GestureLimits.maximumInterpolatedPoints
        for points in drawn {
            guard let count = GestureInterpolation.count(points, step: scale.step, limit: budget) else {
                throw .tooComplex
            }
            budget -= count
        }

        var storedPoints: [[GestureMilliPoint]] = []
        for (index, (part, points)) in zip(gesture.parts, drawn).enumerated() {
            switch part.kind {
            case .tap:
                storedPoints.append(points)
            case .path:
                guard var raster = GestureRaster(scale: scale) else { throw .tooComplex }
                GestureInterpolation.forEach(points, step: scale.step) { raster.offer($0) }
                guard raster.kept.count >= minimumPathPoints else {
                    throw .pathTooShort(part: index, rasterPoints: raster.kept.count)
                }
                storedPoints.append(raster.kept)
            }
        }
        let keptPoints = storedPoints.reduce(0) { $0 + $1.count }
        guard gesture.parts.count >= minimumParts || keptPoints >= minimumSinglePathPoints else {
            throw .tooSimple
        }
        return GestureTemplate(checkedWidth: gesture.width, height: gesture.height, parameters: parameters,
                               storedPoints: storedPoints, kinds: gesture.parts.map { $0.kind }, scale: scale)
    }

    /// The parts of a validated gesture in milli-pixels.
    static func milliParts(of gesture: Gesture) throws(GestureEnrollmentError) -> [[GestureMilliPoint]] {
        var result: [[GestureMilliPoint]] = []
        for part in gesture.parts {
            var points: [GestureMilliPoint] = []
            points.reserveCapacity(part.points.count)
            for point in part.points {
                guard let converted = GestureMilliPoint(point) else { throw .invalidGesture(.nonFiniteCoordinate) }
                points.append(converted)
            }
            result.append(points)
        }
        return result
    }
}

/// Why a gesture cannot be enrolled.
public enum GestureEnrollmentError: Error, Equatable, Sendable {
    /// The gesture has no parts.
    case noParts
    /// The gesture breaks a structural rule.
    case invalidGesture(GestureFormatError)
    /// The paths would expand to more than `GestureLimits.maximumInterpolatedPoints` points.
    case tooComplex
    /// Path `part` (counted from 0) rasterizes to fewer than `minimumPathPoints` points.
    case pathTooShort(part: Int, rasterPoints: Int)
    /// Fewer than `minimumParts` parts and fewer than `minimumSinglePathPoints` points.
    case tooSimple
}
