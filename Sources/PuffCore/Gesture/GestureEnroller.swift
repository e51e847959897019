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
    /// three parts and 1.6 % on four (docs/dev/gesture-format.md). Windows 8's picture password asks
    /// for three gestures too. Checked only at enrollment: older templates keep working.
    public static let minimumVersion2Parts = 3
    /// Shortest path of a version-2 template, in fractions of the longest side: a shorter
    /// stroke is a smudge that one tap-sized guess covers, and its direction means little.
    public static let minimumPathLength = 0.06
    /// Smallest spread of a gesture's parts (the diagonal of the box around every point, in
    /// fractions of the longest side): parts all in one spot make one guess cover them all.
    public static let minimumGestureSpan = 0.12
    /// Builds a version-3 template from `drawings` (2…`GestureConsensus.maximumDrawings`): the
    /// consensus of all of them, with the owner's spreads learned from how they differ
    /// (`GestureConsensus`). Every drawing must pass the strength checks, have the parts of the
    /// first, and verify against the consensus as a typical drawing of this owner would (its
    /// spreads shrunk to those of a drawing inside the consensus), and no spread may exceed its
    /// ceiling by more than `GestureConsensus.refusalFactor`: an owner that inconsistent would
    /// fail often and be given room onlookers pass, so is refused. With four or
    /// more drawings, one that does not fit may be left out (a slip), the rest deciding.
    ///
    /// Refuses, with a reason the user can act on: fewer than `minimumVersion2Parts` parts,
    /// parts all in one spot, a path shorter than `minimumPathLength`, and drawings that do not
    /// match each other.
    public static func build(drawings: [Gesture],
                             settings: GestureRecognizerSettings = .standard) throws(GestureEnrollmentError) -> GestureTemplate {
        guard let definition = drawings.first else { throw .noParts }
        let first = try define(definition, settings: settings)
        guard drawings.count >= 2 else { throw .confirmationMismatch(nil) }
        guard drawings.count <= GestureConsensus.maximumDrawings else { throw .tooComplex }
        var resampled = [GestureConsensus.units(of: first)]
        let side = Double(max(first.width, first.height))
        var cellVariance = GestureConsensus.cellVariance(definition.resolution, longest: side)
        var cell = GestureConsensus.cell(definition.resolution, longest: side)
        for drawing in drawings.dropFirst() {
            let template = try define(drawing, settings: settings)
            guard template.width == first.width, template.height == first.height,
                  template.parts.map({ $0.kind }) == first.parts.map({ $0.kind })
            else {
                throw .confirmationMismatch(GestureFailureDetail(part: 0, rule: .kind))
            }
            resampled.append(GestureConsensus.units(of: template))
            cellVariance = max(cellVariance, GestureConsensus.cellVariance(drawing.resolution, longest: side))
            let drawingCell = GestureConsensus.cell(drawing.resolution, longest: side)
            cell = GestureUnitPoint(x: max(cell.x, drawingCell.x), y: max(cell.y, drawingCell.y))
        }
        let kinds = first.parts.map { $0.kind }
        var candidates = [Array(resampled.indices)]
        if resampled.count >= 4 {
            for left in resampled.indices { candidates.append(resampled.indices.filter { $0 != left }) }
        }
        var chosen: GestureConsensus.Model?
        var firstRefusal: GestureFailureDetail?
        for candidate in candidates {
            let subset = candidate.map { resampled[$0] }
            let learned = GestureConsensus.learn(subset, kinds: kinds, settings: settings, cellVariance: cellVariance)
            let model = learned.model
            if let refusal = learned.refusal() {
                if firstRefusal == nil { firstRefusal = refusal }
                continue
            }
            // A drawing inside a consensus of K lies (K − 1)/(K + 1) as far from it, in variance,
            // as a later login does.
            let k = Double(subset.count)
            var refusal: GestureFailureDetail?
            for drawing in subset {
                let result = GestureConsensus.evaluate(model, drawn: drawing, drawnKinds: kinds, cell: cell, varianceScale: (k - 1) / (k + 1))
                if !result.passed {
                    refusal = result.detail
                    break
                }
            }
            if let refusal {
                if firstRefusal == nil { firstRefusal = refusal }
                continue
            }
            if let best = chosen, spreadSum(best) <= spreadSum(model) { continue }
            chosen = model
        }
        guard let model = chosen else { throw .confirmationMismatch(firstRefusal) }
        // The settings' own lower bound (0.2 %) is below every floor at the default factor and
        // reached only at the smallest gesture_tolerance.
        guard let stored = try? GestureRecognizerSettings(placeTolerance: max(0.002, model.placeSpread),
                                                          shapeTolerance: model.shapeCap,
                                                          shiftLimit: max(0.002, model.shiftSpread), overflow: model.overflow)
        else { throw .confirmationMismatch(nil) }
        let storedPoints = model.stored.enumerated().map { index, part -> [GestureMilliPoint] in
            let points = kinds[index] == .tap ? [part[0]] : part
            return points.map { first.scale.milliPoint($0) }
        }
        let spreads = model.shapeSpreads.map { Double(GestureRounding.nearest($0 * 1_000_000) ?? 0) / 1_000_000 }
        return GestureTemplate(checkedWidth: first.width, height: first.height, settings: stored,
                               storedPoints: storedPoints, kinds: kinds,
                               spreads: spreads.map { min(1, max(0, $0)) }, scale: first.scale, version: 3)
    }

    private static func spreadSum(_ model: GestureConsensus.Model) -> Double {
        model.placeSpread + model.shiftSpread + model.shapeSpreads.reduce(0, +)
    }

    /// What enrollment asks for after `drawings`, the drawings so far: the definition is
    /// checked for strength and a confirmation asked for; a confirmation identical to the
    /// definition (a line given twice by a script) completes it, any other is followed by a
    /// third drawing, and the consensus of the three is built; when the three do not agree, one
    /// more drawing is asked for before refusing, and the four decide (one may be left out).
    /// Throws the reason when the drawings so far are refused.
    public static func next(after drawings: [Gesture],
                            settings: GestureRecognizerSettings = .standard) throws(GestureEnrollmentError) -> GestureEnrollmentStep {
        switch drawings.count {
        case 0:
            throw .noParts
        case 1:
            _ = try define(drawings[0], settings: settings)
            return .confirm
        case 2 where drawings[0] != drawings[1]:
            _ = try define(drawings[1], settings: settings)
            return .onceMore
        case 3:
            do {
                return .done(try build(drawings: drawings, settings: settings))
            } catch .confirmationMismatch {
                return .oneMore
            }
        default:
            return .done(try build(drawings: drawings, settings: settings))
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
    /// Version 2: a confirmation does not match the definition (the part and rule when known);
    /// version 3: the drawings do not match each other.
    case confirmationMismatch(GestureFailureDetail?)
}

/// What enrollment needs next (`GestureEnroller.next(after:)`).
public enum GestureEnrollmentStep: Equatable, Sendable {
    /// Draw the gesture again to confirm it.
    case confirm
    /// Draw it a third time: the template is the consensus of every drawing.
    case onceMore
    /// The drawings do not agree yet: one more drawing before the enrollment is refused.
    case oneMore
    /// The template, built.
    case done(GestureTemplate)
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
        case .confirmationMismatch(let detail?): "the drawings do not match each other (\(detail))"
        case .confirmationMismatch(nil): "the drawings do not match each other"
        }
    }
}
