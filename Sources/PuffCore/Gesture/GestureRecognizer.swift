/// The thresholds of the version-2 recognizer, in fractions of the picture's longest side.
///
/// They are stored in every version-2 template, so a later change of the defaults never
/// changes how an enrolled gesture verifies.
public struct GestureRecognizerSettings: Equatable, Sendable {
    /// Largest distance between where a part lies (a tap's point, a path's centroid) and
    /// where the stored part lies, once the whole gesture's common shift is taken out
    /// (0.002…0.25). This is what a copy from memory gets wrong.
    public let placeTolerance: Double
    /// Largest root-mean-square distance between a path and the stored path, each taken on
    /// its own centroid, along their best in-order alignment (dynamic time warping) (0.002…0.25).
    public let shapeTolerance: Double
    /// Largest common shift of the whole gesture (0.002…0.5).
    public let shiftLimit: Double
    /// Most an attempt path may exceed the stored one in length, as a factor (1…10); its
    /// bounding box may exceed the stored one's by half as much. Stops scribbles.
    public let overflow: Double

    /// The defaults, chosen with `make gesture-eval` (docs/dev/gesture-format.md has the table).
    public static let standard = GestureRecognizerSettings(
        checkedPlace: 0.006, shape: 0.03, shift: 0.0125, overflow: 2.0)

    /// Creates settings, refusing values outside the documented ranges (NaN included).
    public init(placeTolerance: Double, shapeTolerance: Double, shiftLimit: Double,
                overflow: Double) throws(GestureParameterError) {
        guard placeTolerance >= 0.002, placeTolerance <= 0.25,
              shapeTolerance >= 0.002, shapeTolerance <= 0.25,
              shiftLimit >= 0.002, shiftLimit <= 0.5
        else { throw .toleranceOutOfRange }
        guard overflow >= 1, overflow <= 10 else { throw .overflowOutOfRange }
        self.init(checkedPlace: placeTolerance, shape: shapeTolerance, shift: shiftLimit, overflow: overflow)
    }

    private init(checkedPlace place: Double, shape: Double, shift: Double, overflow: Double) {
        placeTolerance = place
        shapeTolerance = shape
        shiftLimit = shift
        self.overflow = overflow
    }

    /// The defaults with the three distances multiplied by `factor` (the ROC knob and the
    /// `gesture_tolerance` option: 4.5 % is a factor of 1); nil when the result is out of range.
    public static func scaled(by factor: Double) -> GestureRecognizerSettings? {
        try? GestureRecognizerSettings(placeTolerance: standard.placeTolerance * factor,
                                       shapeTolerance: standard.shapeTolerance * factor,
                                       shiftLimit: standard.shiftLimit * factor, overflow: standard.overflow)
    }

    /// A part's place tolerance grows with the spread learned at enrollment up to this factor.
    static let spreadCeiling = 1.25
    /// The spread learned at enrollment is multiplied by this before it is compared.
    static let spreadFactor = 1.0
    /// Added (in quadrature) to the place scale of a path: its centroid moves a little when
    /// the ends are trimmed, which a tap cannot do.
    static let pathPlaceFloor = 0.003
    /// The 99.5 % quantiles of the χ² distribution with 2, 4, …, 32 degrees of freedom: the
    /// limit of the place score for 1…16 parts.
    static let placeScoreLimits: [Double] = [
        10.60, 14.86, 18.55, 21.95, 25.19, 28.30, 31.32, 34.27,
        37.16, 40.00, 42.80, 45.56, 48.29, 50.99, 53.67, 56.33,
    ]
    /// Absolute slack of the overflow rule, so that very short strokes are not refused for
    /// a small absolute difference.
    static let overflowSlack = 0.03
}

/// A point in fractions of the picture's longest side.
struct GestureUnitPoint: Equatable, Sendable {
    var x: Double
    var y: Double
}

/// Resampling and the distances of the version-2 recognizer. Every path is resampled to
/// `samples` points evenly spaced along its length, and every tap is repeated `samples`
/// times, so that each comparison costs the same whatever it compares.
enum GestureShape {
    /// Points per resampled part.
    static let samples = 32
    /// Half-width of the alignment band: point i of one part may pair with points
    /// i − band … i + band of the other (a quarter of the part's length).
    static let band = 8

    /// `points` resampled to `samples` points evenly spaced along the polyline; a polyline of
    /// length zero (or a tap) gives `samples` copies of its first point. Linear in the input.
    static func resample(_ points: [GestureUnitPoint]) -> [GestureUnitPoint] {
        guard let first = points.first else { return Array(repeating: GestureUnitPoint(x: 0, y: 0), count: samples) }
        var total = 0.0
        for (start, end) in zip(points, points.dropFirst()) { total += distance(start, end) }
        var output = Array(repeating: first, count: samples)
        guard total > 0 else { return output }
        let spacing = total / Double(samples - 1)
        var index = 1
        var travelled = 0.0
        for (start, end) in zip(points, points.dropFirst()) {
            let length = distance(start, end)
            guard length > 0 else { continue }
            while index < samples - 1, Double(index) * spacing <= travelled + length {
                let fraction = (Double(index) * spacing - travelled) / length
                output[index] = GestureUnitPoint(x: start.x + (end.x - start.x) * fraction,
                                                 y: start.y + (end.y - start.y) * fraction)
                index += 1
            }
            travelled += length
        }
        let last = points[points.count - 1]
        while index < samples {
            output[index] = last
            index += 1
        }
        return output
    }

    /// The first point, the midpoint of every two consecutive points, and the last point: a
    /// report that flickers to a neighbouring cell and back (A, B, A) adds no length, while a
    /// stroke keeps its ends and its course. Linear in the input.
    static func midpoints(_ points: [GestureUnitPoint]) -> [GestureUnitPoint] {
        guard let first = points.first, let last = points.last, points.count > 2 else { return points }
        var output = [first]
        output.reserveCapacity(points.count + 1)
        for (a, b) in zip(points, points.dropFirst()) {
            output.append(GestureUnitPoint(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2))
        }
        output.append(last)
        return output
    }

    /// Euclidean distance.
    static func distance(_ a: GestureUnitPoint, _ b: GestureUnitPoint) -> Double {
        let dx = a.x - b.x
        let dy = a.y - b.y
        return squareRoot(dx * dx + dy * dy)
    }

    /// √value for finite value ≥ 0 (0 otherwise), by Newton's method from a power of two
    /// within a factor 2 of the root. `Double.squareRoot` would do, but unoptimized builds
    /// call libm's `sqrt` for it, and the module links no libm.
    static func squareRoot(_ value: Double) -> Double {
        guard value.isFinite, value > 0 else { return value == .infinity ? value : 0 }
        var root = Double(sign: .plus, exponent: value.exponent / 2, significand: 1)
        for _ in 0..<8 { root = 0.5 * (root + value / root) }
        return root
    }

    /// The mean of the points.
    static func centroid(_ points: [GestureUnitPoint]) -> GestureUnitPoint {
        var x = 0.0
        var y = 0.0
        for point in points {
            x += point.x
            y += point.y
        }
        let count = Double(max(1, points.count))
        return GestureUnitPoint(x: x / count, y: y / count)
    }

    /// Length of the polyline.
    static func length(_ points: [GestureUnitPoint]) -> Double {
        var total = 0.0
        for (start, end) in zip(points, points.dropFirst()) { total += distance(start, end) }
        return total
    }

    /// Width and height of the bounding box.
    static func extent(_ points: [GestureUnitPoint]) -> (width: Double, height: Double) {
        guard let first = points.first else { return (0, 0) }
        var low = first
        var high = first
        for point in points {
            low.x = min(low.x, point.x)
            low.y = min(low.y, point.y)
            high.x = max(high.x, point.x)
            high.y = max(high.y, point.y)
        }
        return (high.x - low.x, high.y - low.y)
    }

    /// The mean squared distance between `stored` and `attempt` moved by −`shift`, along the
    /// cheapest monotone alignment that starts at both first points, ends at both last points
    /// and keeps within `band` (symmetric dynamic time warping: a diagonal step weighs 2, the
    /// total is divided by 2 × samples). Both arrays hold `samples` points; when `reversed`,
    /// `attempt` is walked from its end. The work is the same for every input.
    static func warpedMeanSquare(_ stored: [GestureUnitPoint], _ attempt: [GestureUnitPoint],
                                 shift: GestureUnitPoint, reversed: Bool) -> Double {
        let count = samples
        guard stored.count == count, attempt.count == count else { return .infinity }
        let infinity = Double.infinity
        var previous = Array(repeating: infinity, count: count)
        var current = Array(repeating: infinity, count: count)
        for row in 0..<count {
            for column in 0..<count { current[column] = infinity }
            let low = max(0, row - band)
            let high = min(count - 1, row + band)
            for column in low...high {
                let other = attempt[reversed ? count - 1 - column : column]
                let dx = stored[row].x - (other.x - shift.x)
                let dy = stored[row].y - (other.y - shift.y)
                let cost = dx * dx + dy * dy
                if row == 0, column == 0 {
                    current[column] = 2 * cost
                    continue
                }
                var best = infinity
                if row > 0 { best = min(best, previous[column] + cost) }
                if column > 0 { best = min(best, current[column - 1] + cost) }
                if row > 0, column > 0 { best = min(best, previous[column - 1] + 2 * cost) }
                current[column] = best
            }
            swap(&previous, &current)
        }
        return previous[count - 1] / Double(2 * count)
    }

    /// The alignment `warpedMeanSquare` finds (same band, steps and weights; forward only):
    /// for each stored point, the mean of the attempt points it is paired with, moved by
    /// −`shift`, and the mean squared distance (equal to `warpedMeanSquare`'s). Learning
    /// (`GestureLearning`) moves a consensus point towards its pair, so that a stroke drawn at
    /// another pace is not averaged point by point with the wrong part of itself.
    static func warpedPairs(_ stored: [GestureUnitPoint], _ attempt: [GestureUnitPoint],
                            shift: GestureUnitPoint) -> (pairs: [GestureUnitPoint], meanSquare: Double)? {
        let count = samples
        guard stored.count == count, attempt.count == count else { return nil }
        let infinity = Double.infinity
        var total = Array(repeating: Array(repeating: infinity, count: count), count: count)
        func cost(_ row: Int, _ column: Int) -> Double {
            let dx = stored[row].x - (attempt[column].x - shift.x)
            let dy = stored[row].y - (attempt[column].y - shift.y)
            return dx * dx + dy * dy
        }
        for row in 0..<count {
            for column in max(0, row - band)...min(count - 1, row + band) {
                let c = cost(row, column)
                if row == 0, column == 0 {
                    total[row][column] = 2 * c
                    continue
                }
                var best = infinity
                if row > 0 { best = min(best, total[row - 1][column] + c) }
                if column > 0 { best = min(best, total[row][column - 1] + c) }
                if row > 0, column > 0 { best = min(best, total[row - 1][column - 1] + 2 * c) }
                total[row][column] = best
            }
        }
        guard total[count - 1][count - 1].isFinite else { return nil }
        // Back along the cheapest steps, summing each stored point's partners.
        var sums = Array(repeating: GestureUnitPoint(x: 0, y: 0), count: count)
        var partners = Array(repeating: 0.0, count: count)
        var row = count - 1, column = count - 1
        while true {
            sums[row].x += attempt[column].x - shift.x
            sums[row].y += attempt[column].y - shift.y
            partners[row] += 1
            if row == 0, column == 0 { break }
            let c = cost(row, column)
            if row > 0, column > 0, total[row][column] == total[row - 1][column - 1] + 2 * c {
                row -= 1
                column -= 1
            } else if row > 0, total[row][column] == total[row - 1][column] + c {
                row -= 1
            } else if column > 0 {
                column -= 1
            } else {
                row -= 1
            }
        }
        let pairs = zip(sums, partners).map { sum, n in GestureUnitPoint(x: sum.x / max(1, n), y: sum.y / max(1, n)) }
        return (pairs, total[count - 1][count - 1] / Double(2 * count))
    }
}

/// Which rule a part broke, for debug logs: names only, never a coordinate.
public enum GestureRule: String, Equatable, Sendable {
    /// A tap where a path was stored, or the reverse.
    case kind = "kind"
    /// A tap too far from the stored tap.
    case tapDistance = "tap distance"
    /// A path whose shape is too far from the stored path's.
    case coverage = "coverage"
    /// A path whose place, relative to the rest of the gesture, is too far from the stored one.
    case place = "place"
    /// A path that fits better drawn the other way (order and direction).
    case order = "order"
    /// A path much longer or wider than the stored one (scribble).
    case overflow = "overflow"
    /// The whole gesture shifted beyond the limit.
    case shift = "shift"
}

/// The part and rule behind a failed verification, for debug logs.
public struct GestureFailureDetail: Equatable, Sendable, CustomStringConvertible {
    /// The failing part, counted from 1; 0 when the rule concerns the whole gesture.
    public let part: Int
    /// The rule it broke.
    public let rule: GestureRule

    /// "part 2: tap distance", or "whole gesture: shift".
    public var description: String {
        part == 0 ? "whole gesture: \(rule.rawValue)" : "part \(part): \(rule.rawValue)"
    }
}

/// Version-2 verification: resampled shapes compared in order, after taking out the whole
/// gesture's common shift.
///
/// 1. Every part of the template and of the attempt is resampled to `GestureShape.samples`
///    points along its length (a tap: that many copies of its point), in picture units.
/// 2. The common shift is the mean, over the parts, of the difference of their centroids;
///    it must be at most `shiftLimit` long. A genuine redraw moves everything together; a
///    copy from memory misplaces each part on its own, which the shift cannot absorb.
/// 3. Each part, moved back by the common shift, is compared with the stored part by
///    dynamic time warping within a band: the root-mean-square distance must be at most the
///    part's tolerance (tap or path tolerance, widened by the spread learned at enrollment
///    up to 1.5 ×). Ends trimmed or a different speed cost little; a path drawn backwards
///    pairs its start with the stored end and fails.
/// 4. A path may not be longer, wider or taller than `overflow` × the stored one (plus 3 %).
///
/// Constant work: all `GestureLimits.maximumParts` slots are compared every time (slots
/// without a real pair compare stand-ins), whatever the number of parts or which one fails.
/// The attempt is resampled once, in time linear in its points.
enum GestureRecognizer {
    static func verify(_ template: GestureTemplate, _ attempt: Gesture) -> GestureMatchResult {
        let longest = Double(max(template.scale.width, template.scale.height))
        // Template parts, resampled when built.
        let stored = template.storedPoints.map { part in
            part.map { GestureUnitPoint(x: Double($0.x) / longest, y: Double($0.y) / longest) }
        }.map(GestureShape.resample)
        var drawn: [[GestureUnitPoint]] = []
        var total = 0
        for part in attempt.parts {
            total += part.points.count
            guard total <= GestureLimits.maximumInterpolatedPoints else {
                return GestureMatchResult(failure: .tooComplex)
            }
            var points: [GestureUnitPoint] = []
            points.reserveCapacity(part.points.count)
            for point in part.points {
                guard let milli = GestureMilliPoint(point) else {
                    return GestureMatchResult(failure: .invalidAttempt(.nonFiniteCoordinate))
                }
                points.append(GestureUnitPoint(x: Double(milli.x) / longest, y: Double(milli.y) / longest))
            }
            drawn.append(GestureShape.resample(points))
        }
        let countsMatch = drawn.count == stored.count
        let evaluation = evaluate(stored: stored, kinds: template.parts.map { $0.kind },
                                  spreads: template.spreads, drawn: drawn,
                                  drawnKinds: attempt.parts.map { $0.kind }, settings: template.settings)
        guard countsMatch else { return GestureMatchResult(failure: .partCountMismatch) }
        return evaluation
    }

    /// The measurements of every slot, and the verdict; `drawn` may hold another number of
    /// parts than `stored` (the verdict is then ignored by the caller).
    static func evaluate(stored: [[GestureUnitPoint]], kinds: [GesturePartKind], spreads: [Double],
                         drawn: [[GestureUnitPoint]], drawnKinds: [GesturePartKind],
                         settings: GestureRecognizerSettings) -> GestureMatchResult {
        let slots = GestureLimits.maximumParts
        let real = min(stored.count, drawn.count)
        let fallback = [GestureUnitPoint](repeating: GestureUnitPoint(x: 0, y: 0), count: GestureShape.samples)
        func storedPart(_ slot: Int) -> [GestureUnitPoint] { stored.isEmpty ? fallback : stored[slot % stored.count] }
        func drawnPart(_ slot: Int) -> [GestureUnitPoint] { drawn.isEmpty ? fallback : drawn[slot % drawn.count] }

        // The common shift, from every slot's centroid difference; stand-ins carry weight 0.
        var offsets: [GestureUnitPoint] = []
        var shift = GestureUnitPoint(x: 0, y: 0)
        for slot in 0..<slots {
            let a = GestureShape.centroid(drawnPart(slot))
            let b = GestureShape.centroid(storedPart(slot))
            let offset = GestureUnitPoint(x: a.x - b.x, y: a.y - b.y)
            offsets.append(offset)
            let weight = slot < real ? 1.0 : 0.0
            shift.x += weight * offset.x
            shift.y += weight * offset.y
        }
        shift.x /= Double(max(1, real))
        shift.y /= Double(max(1, real))
        let shiftSquare = shift.x * shift.x + shift.y * shift.y
        let partCount = Double(max(1, real))
        // The user's consistency, learned at enrollment: how far the confirmations' parts lay
        // from the definition, relative to the common shift (per axis, over the residual
        // degrees of freedom). A steady hand keeps the tight default, a looser one gets up to
        // `spreadCeiling` times more room, for the place and the shift alike.
        var spreadSquares = 0.0
        for spread in spreads { spreadSquares += spread * spread }
        let residualFreedom = Double(2 * max(1, stored.count - 1))
        let consistency = GestureShape.squareRoot(spreadSquares / residualFreedom)
        let widening = min(GestureRecognizerSettings.spreadCeiling,
                           max(1, GestureRecognizerSettings.spreadFactor * consistency / settings.placeTolerance))
        let placeScale = settings.placeTolerance * widening
        let shiftLimit = settings.shiftLimit * widening
        let shiftScale = shiftLimit * shiftLimit * (1 + 1 / (4 * partCount))
        let shiftTerm = shiftSquare / shiftScale
        var placeScore = shiftTerm

        var diagnostics: [GesturePartDiagnostics] = []
        var firstFailure: GestureFailureDetail?
        var allPassed = true
        var worstPlace = (term: shiftTerm, part: 0, rule: GestureRule.shift)
        for slot in 0..<slots {
            let storedPoints = storedPart(slot)
            let drawnPoints = drawnPart(slot)
            let storedKind = slot < kinds.count ? kinds[slot] : .path
            let drawnKind = slot < drawnKinds.count ? drawnKinds[slot] : .path
            // Where the part lies, against where the common shift says it should.
            let offset = offsets[slot]
            let placeX = offset.x - shift.x
            let placeY = offset.y - shift.y
            let placeSquare = placeX * placeX + placeY * placeY
            // Its shape, each on its own centroid, both directions.
            let forward = GestureShape.warpedMeanSquare(storedPoints, drawnPoints, shift: offset, reversed: false)
            let backward = GestureShape.warpedMeanSquare(storedPoints, drawnPoints, shift: offset, reversed: true)
            let storedLength = GestureShape.length(storedPoints)
            let drawnLength = GestureShape.length(drawnPoints)
            let storedExtent = GestureShape.extent(storedPoints)
            let drawnExtent = GestureShape.extent(drawnPoints)
            let slack = GestureRecognizerSettings.overflowSlack
            let boxFactor = 1 + (settings.overflow - 1) / 2
            let overflowOK = drawnLength <= settings.overflow * storedLength + slack
                && drawnExtent.width <= boxFactor * storedExtent.width + slack
                && drawnExtent.height <= boxFactor * storedExtent.height + slack
            let tolerance = placeScale
            let floor = storedKind == .tap ? 0 : GestureRecognizerSettings.pathPlaceFloor
            let placeTerm = placeSquare / (tolerance * tolerance * max(0.25, 1 - 1 / partCount) + floor * floor)
            let weight = slot < real ? 1.0 : 0.0
            placeScore += weight * placeTerm
            if slot < real, placeTerm > worstPlace.term {
                worstPlace = (placeTerm, slot + 1, storedKind == .tap ? .tapDistance : .place)
            }
            let shapeOK = forward <= settings.shapeTolerance * settings.shapeTolerance
            let rule: GestureRule?
            if storedKind != drawnKind {
                rule = .kind
            } else if storedKind == .tap {
                rule = nil
            } else if !overflowOK {
                rule = .overflow
            } else if !shapeOK {
                rule = backward < forward ? .order : .coverage
            } else {
                rule = nil
            }
            guard slot < real else { continue }
            diagnostics.append(GesturePartDiagnostics(storedKind: storedKind, attemptKind: drawnKind,
                                                      distance: GestureShape.squareRoot(placeSquare),
                                                      placeScore: placeTerm,
                                                      tolerance: tolerance,
                                                      shapeDistance: GestureShape.squareRoot(forward),
                                                      failedRule: rule))
            if let rule {
                allPassed = false
                if firstFailure == nil { firstFailure = GestureFailureDetail(part: slot + 1, rule: rule) }
            }
        }
        // Where the parts lie, all together: under the genuine model (a common shift plus a
        // small aim error per part) the score follows a χ² law with 2 × parts degrees of
        // freedom; a copy from memory misplaces each part on its own and scores far higher.
        let limits = GestureRecognizerSettings.placeScoreLimits
        let placeLimit = limits[min(limits.count, max(1, real)) - 1]
        if !(placeScore <= placeLimit) {
            allPassed = false
            if firstFailure == nil { firstFailure = GestureFailureDetail(part: worstPlace.part, rule: worstPlace.rule) }
        }
        return GestureMatchResult(passed: allPassed, failure: allPassed ? nil : .partMismatch,
                                  parts: diagnostics, detail: firstFailure)
    }
}
