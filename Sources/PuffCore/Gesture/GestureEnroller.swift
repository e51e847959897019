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

    /// Fewest parts of a version-2 gesture. Someone who saw the gesture once copies every
    /// part a little off, each on its own; what tells that copy from a genuine redraw (which
    /// moves everything together) is where the parts lie relative to each other. Two parts give
    /// a single relative offset, and a copy whose two errors point the same way then looks like
    /// a redraw moved as a whole: `make gesture-eval` measured 18.7 % of such copies accepted on
    /// two-part gestures at the default (14–25 % at the other settings tried), against 5.2 % on
    /// three parts and 1.6 % on four (docs/gesture-format.md). Windows 8's picture password asks
    /// for three gestures too. Checked only at enrollment: older templates keep working.
    public static let minimumVersion2Parts = 3
    /// Shortest path of a version-2 template, in fractions of the longest side: a shorter
    /// stroke is a smudge that one tap-sized guess covers, and its direction means little.
    public static let minimumPathLength = 0.06
    /// Smallest spread of a gesture's parts (the diagonal of the box around every point, in
    /// fractions of the longest side): parts all in one spot make one guess cover them all.
    public static let minimumGestureSpan = 0.12
    /// A part whose confirmation lies farther than this share of its tolerance from the
    /// definition counts as "differs a lot": enrollment then asks for a third drawing.
    public static let thirdDrawingShare = 0.8

    /// Builds a version-2 template from `drawings`: the first defines the gesture, the
    /// others (confirmations, at least one) must verify against it and teach each part's
    /// spread, the largest distance of a confirmation to the definition (rounded to
    /// millionths, as stored).
    ///
    /// Refuses, with a reason the user can act on: fewer than `minimumVersion2Parts` parts,
    /// parts all in one spot, a path shorter than `minimumPathLength`, and confirmations that
    /// do not match the definition.
    public static func build(drawings: [Gesture],
                             settings: GestureRecognizerSettings = .standard) throws(GestureEnrollmentError) -> GestureTemplate {
        guard let definition = drawings.first else { throw .noParts }
        let template = try define(definition, settings: settings)
        var spreads = Array(repeating: 0.0, count: template.parts.count)
        for drawing in drawings.dropFirst() {
            let result = GestureMatcher.verify(template, drawing)
            guard result.passed, result.parts.count == template.parts.count else {
                throw .confirmationMismatch(result.detail)
            }
            for (index, part) in result.parts.enumerated() {
                spreads[index] = max(spreads[index], part.distance)
            }
        }
        let rounded = spreads.map { Double(GestureRounding.nearest($0 * 1_000_000) ?? 0) / 1_000_000 }
        return GestureTemplate(checkedWidth: template.width, height: template.height, settings: settings,
                               storedPoints: template.storedPoints, kinds: template.parts.map { $0.kind },
                               spreads: rounded.map { min(1, max(0, $0)) }, scale: template.scale)
    }

    /// Whether `confirmation` passes against the template of `definition` but some part lies
    /// farther than `thirdDrawingShare` of its tolerance: the two differ a lot, and a third
    /// drawing tells whether the user is inconsistent or made a slip.
    public static func differsALot(_ definition: Gesture, _ confirmation: Gesture,
                                   settings: GestureRecognizerSettings = .standard) -> Bool {
        guard let template = try? define(definition, settings: settings) else { return false }
        let result = GestureMatcher.verify(template, confirmation)
        return result.passed && result.parts.contains {
            $0.placeScore > 4
                || $0.shapeDistance > thirdDrawingShare * settings.shapeTolerance
        }
    }

    /// The version-2 template of one drawing, without learned spreads, after the strength checks.
    static func define(_ gesture: Gesture, settings: GestureRecognizerSettings) throws(GestureEnrollmentError) -> GestureTemplate {
        guard !gesture.parts.isEmpty else { throw .noParts }
        do {
            try gesture.validate()
        } catch {
            throw .invalidGesture(error)
        }
        guard gesture.parts.count >= minimumVersion2Parts else { throw .tooFewParts(gesture.parts.count) }
        guard let scale = GestureScale(width: gesture.width, height: gesture.height, parameters: .standard) else {
            throw .invalidGesture(.badSize)
        }
        let drawn = try milliParts(of: gesture)
        guard drawn.reduce(0, { $0 + $1.count }) <= GestureLimits.maximumInterpolatedPoints else { throw .tooComplex }
        let longest = Double(max(scale.width, scale.height))
        var storedPoints: [[GestureMilliPoint]] = []
        var everything: [GestureUnitPoint] = []
        for (index, (part, points)) in zip(gesture.parts, drawn).enumerated() {
            let units = points.map { GestureUnitPoint(x: Double($0.x) / longest, y: Double($0.y) / longest) }
            everything.append(contentsOf: units)
            switch part.kind {
            case .tap:
                storedPoints.append(points)
            case .path:
                let resampled = GestureShape.resample(units)
                let length = GestureShape.length(resampled)
                guard length >= minimumPathLength else {
                    throw .pathTooShort(part: index, rasterPoints: 0)
                }
                storedPoints.append(resampled.map { scale.milliPoint($0) })
            }
        }
        let span = GestureShape.extent(everything)
        guard GestureShape.squareRoot(span.width * span.width + span.height * span.height) >= minimumGestureSpan else {
            throw .allInOneSpot
        }
        return GestureTemplate(checkedWidth: gesture.width, height: gesture.height, settings: settings,
                               storedPoints: storedPoints, kinds: gesture.parts.map { $0.kind },
                               spreads: Array(repeating: 0, count: gesture.parts.count), scale: scale)
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
    /// Version 1: fewer than `minimumParts` parts and fewer than `minimumSinglePathPoints` points.
    case tooSimple
    /// Version 2: fewer than `minimumVersion2Parts` parts (the count drawn).
    case tooFewParts(Int)
    /// Version 2: every part lies within `minimumGestureSpan` of the others.
    case allInOneSpot
    /// Version 2: a confirmation does not match the definition (the part and rule when known).
    case confirmationMismatch(GestureFailureDetail?)
}

extension GestureEnrollmentError: CustomStringConvertible {
    /// A sentence the person enrolling can act on.
    public var description: String {
        switch self {
        case .noParts: "the gesture has no parts"
        case .invalidGesture(let error): "the gesture is not valid (\(error))"
        case .tooComplex: "the gesture has too many points"
        case .pathTooShort(let part, _): "stroke \(part + 1) is too short; draw strokes of at least 6 % of the picture"
        case .tooSimple: "a single tap or a short single stroke is too easy to guess; add parts (taps, lines, circles)"
        case .tooFewParts(let count):
            "the gesture has \(count) part\(count == 1 ? "" : "s"); draw at least \(GestureEnroller.minimumVersion2Parts) (taps, lines, circles), or someone who saw it once could copy it"
        case .allInOneSpot: "all parts are in one spot; spread them over the picture"
        case .confirmationMismatch(let detail?): "the confirmation does not match the first drawing (\(detail))"
        case .confirmationMismatch(nil): "the confirmation does not match the first drawing"
        }
    }
}
