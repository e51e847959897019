/// Version 4: a version-3 template that follows its owner's hand from the logins it accepted,
/// within bounds fixed at enrollment.
///
/// Three consecutive enrollment drawings are a sample of that minute: in the $1 unistroke logs
/// (docs/dev/gesture-format.md, "Real drawings") later drawings lie 1.29 times further from the
/// first three's centroid, and their shapes 1.15 times, than independent drawings would.
/// Widening every template at enrollment by that drift gave it to every attacker; learning from
/// the owner's own successes follows the owner only.
///
/// **The rule** (`learned(from:settings:)`), after a login the matcher accepted:
/// - the consensus is the running mean of every drawing it has seen, as enrollment's is of its
///   K drawings: each stored point moves by 1 / (K + n + 1), n the logins learned so far,
///   counted up to `evidenceCap`, towards the attempt's points the matcher's alignment pairs
///   it with (`GestureShape.warpedPairs`; a tap towards its point). Point by point by index
///   instead, a signature drawn at another pace was averaged with the wrong part of itself, and
///   the blurred consensus refused its owner twice as often (SVC2004, a week later: 13.5 %
///   as enrolled, 27.3 % learned by index, 11.3 % learned along the alignment);
/// - each spread is the evidence-weighted mean of its variance so far and this login's
///   residual against the consensus before the update (the shift, the parts' places after
///   the shift, each path's aligned shape distance: the matcher's own measurements), so the
///   floor keeps the weight `GestureConsensus.priorWeight` gave it at enrollment; each
///   login's residual counts at most `residualCap` times the spread's current variance; and,
///   as enrollment stores (1 + 1/K) times a drawing's variance for a consensus of K, the
///   estimate is rescaled from (1 + 1/(K + n)) to (1 + 1/(K + n + 1)) as the consensus
///   sharpens (without it, a sharper consensus with the same room let the simulator's
///   video-studier in 3–7 points more often);
/// - every spread stays within the template's floor…ceiling (those of its enrollment), and the
///   consensus within one ceiling spread of the enrolled consensus for each of the matcher's
///   terms (the whole gesture's shift, each part's place after it, each path's shape).
///
/// So nothing learned gives more room than an enrollment could have, and the consensus never
/// leaves the neighbourhood of what the owner enrolled: an attacker who once succeeds pulls it
/// at most that far, however often they succeed again. Only an accepted attempt can be
/// learned from: `GestureAcceptance` has no public initializer and is only made by `accept`
/// when the matcher passes the attempt.
public enum GestureLearning {
    /// Logins after which the weights stop falling: the template keeps following the hand
    /// with at least 1 / (K + `evidenceCap` + 1) of each new login.
    public static let evidenceCap = 20
    /// The most one login's squared residual may count, in the spread's current variance: an
    /// attempt just inside the limits (a lucky onlooker's) widens a spread by at most
    /// √((W + w · cap) / (W + w)), W the evidence so far and w the login's.
    public static let residualCap = 2.0
    /// Drawings a migrated version-3 template is taken to have been enrolled from (the enroller
    /// combines three, four when one more is asked for).
    static let assumedDrawings = 3

    /// The attempt when the matcher accepts it against `template`, or nil with the matcher's
    /// result. The only way to make a `GestureAcceptance`.
    public static func accept(_ attempt: Gesture, by template: GestureTemplate) -> (result: GestureMatchResult, acceptance: GestureAcceptance?) {
        let result = GestureMatcher.verify(template, attempt)
        guard result.passed, template.version >= 3 else { return (result, nil) }
        let longest = Double(max(template.scale.width, template.scale.height))
        guard let (drawn, _) = GestureConsensus.resampled(attempt, longest: longest),
              drawn.count == template.storedPoints.count else { return (result, nil) }
        return (result, GestureAcceptance(template: template, drawn: drawn))
    }

    /// The template after the login `acceptance` holds: version 4, learned as described above.
    /// `settings` (the `gesture_tolerance` option) gives the bounds of a version-3 template
    /// migrated now; a version-4 template keeps its own.
    public static func learned(from acceptance: GestureAcceptance,
                               settings: GestureRecognizerSettings = .standard) -> GestureTemplate {
        let template = migrated(acceptance.template, settings: settings)
        guard let state = template.learning else { return template }
        let model = GestureConsensus.model(of: template)
        let drawn = acceptance.drawn
        let partCount = model.stored.count
        guard partCount == drawn.count, partCount == state.enrolled.count else { return template }
        let p = Double(partCount)

        // The matcher's measurements of this login against the consensus before the update.
        var offsets: [GestureUnitPoint] = []
        var shift = GestureUnitPoint(x: 0, y: 0)
        for index in 0..<partCount {
            let a = GestureShape.centroid(drawn[index])
            let b = GestureShape.centroid(model.stored[index])
            offsets.append(GestureUnitPoint(x: a.x - b.x, y: a.y - b.y))
            shift.x += (a.x - b.x) / p
            shift.y += (a.y - b.y) / p
        }
        var placeSquares = 0.0
        for offset in offsets {
            placeSquares += (offset.x - shift.x) * (offset.x - shift.x) + (offset.y - shift.y) * (offset.y - shift.y)
        }
        let n = Double(min(state.logins, evidenceCap))
        let k = Double(max(2, state.drawings))
        let placeFreedom = 2 * max(1, p - 1)
        // A login differs from a consensus of m drawings by (1 + 1/m) times a drawing's
        // variance, as at enrollment: the estimate moves from m = K + n to K + n + 1 until the
        // weights stop falling (the bounds stay those of the enrollment).
        let sharper = state.logins < evidenceCap ? (1 + 1 / (k + n + 1)) / (1 + 1 / (k + n)) : 1
        func updated(_ spread: Double, residual: Double, perLogin w: Double, enrolled d: Double,
                     floor: Double, ceiling: Double) -> Double {
            let variance = spread * spread
            let evidence = (1 + GestureConsensus.priorWeight) * d + n * w
            let counted = min(residual, residualCap * variance)
            let next = GestureShape.squareRoot(sharper * (evidence * variance + w * counted) / (evidence + w))
            return GestureConsensus.bounded(next, floor, max(floor, ceiling))
        }
        let shiftSpread = updated(model.shiftSpread, residual: (shift.x * shift.x + shift.y * shift.y) / 2, perLogin: 2,
                                  enrolled: 2 * (k - 1), floor: state.shiftFloor, ceiling: state.shiftCeiling)
        let placeSpread = updated(model.placeSpread, residual: placeSquares / placeFreedom, perLogin: placeFreedom,
                                  enrolled: (k - 1) * placeFreedom, floor: state.placeFloor, ceiling: state.placeCeiling)
        var shapeSpreads = model.shapeSpreads
        for index in 0..<partCount where model.kinds[index] == .path {
            let forward = GestureShape.warpedMeanSquare(model.stored[index], drawn[index], shift: offsets[index], reversed: false)
            let ceiling = index < state.shapeCeilings.count ? state.shapeCeilings[index] : state.shapeFloor
            shapeSpreads[index] = updated(model.shapeSpreads[index], residual: forward, perLogin: 2, enrolled: 2 * (k - 1),
                                          floor: state.shapeFloor, ceiling: ceiling)
        }

        // The running mean, each stored point towards the attempt's points the matcher's
        // alignment pairs it with (a tap: its point).
        let weight = 1 / (k + n + 1)
        var consensus = model.stored
        for index in 0..<partCount {
            var target = drawn[index]
            if model.kinds[index] == .path,
               let aligned = GestureShape.warpedPairs(model.stored[index], drawn[index], shift: GestureUnitPoint(x: 0, y: 0)) {
                target = aligned.pairs
            }
            for sample in consensus[index].indices where sample < target.count {
                consensus[index][sample].x += weight * (target[sample].x - consensus[index][sample].x)
                consensus[index][sample].y += weight * (target[sample].y - consensus[index][sample].y)
            }
        }
        let longest = Double(max(template.scale.width, template.scale.height))
        let enrolled = state.enrolled.map { part in
            GestureShape.resample(part.map { GestureUnitPoint(x: Double($0.x) / longest, y: Double($0.y) / longest) })
        }
        consensus = kept(consensus, near: enrolled, kinds: model.kinds, state: state)

        let storedPoints = consensus.enumerated().map { index, part -> [GestureMilliPoint] in
            let points = model.kinds[index] == .tap ? Array(part.prefix(1)) : part
            return points.map { template.scale.milliPoint($0) }
        }
        let spreads = shapeSpreads.map { min(1, max(0, Double(GestureRounding.nearest($0 * 1_000_000) ?? 0) / 1_000_000)) }
        guard let stored = try? GestureRecognizerSettings(placeTolerance: max(0.002, placeSpread),
                                                          shapeTolerance: template.settings.shapeTolerance,
                                                          shiftLimit: max(0.002, shiftSpread),
                                                          overflow: template.settings.overflow)
        else { return template }
        var next = state
        next.logins = min(state.logins + 1, Int(UInt16.max))
        return GestureTemplate(checkedWidth: template.width, height: template.height, settings: stored,
                               storedPoints: storedPoints, kinds: model.kinds, spreads: spreads, scale: template.scale,
                               version: 4, learning: next)
    }

    /// `template` as version 4: itself when it is; a version-3 template with its consensus as
    /// the enrolled one and the enrollment bounds at `settings`' factor, each widened to hold
    /// the template's own spreads (a migration neither narrows nor widens what it allowed);
    /// older templates as `GestureTemplate.upgraded` makes them.
    static func migrated(_ template: GestureTemplate, settings: GestureRecognizerSettings) -> GestureTemplate {
        template.upgraded(settings: settings)
    }

    /// A version-3 template (`base`, itself from `drawings` drawings) as version 4, with its
    /// consensus as the enrolled one; see `migrated`.
    static func version4(of base: GestureTemplate, drawings: Int, settings: GestureRecognizerSettings) -> GestureTemplate {
        guard base.version == 3 else { return base }
        let f = GestureConsensus.factor(settings)
        let kinds = base.parts.map { $0.kind }
        let bounds = GestureConsensus.Bounds(factor: f, cellVariance: 0, parts: Double(kinds.count))
        let model = GestureConsensus.model(of: base)
        let shapeCeilings = kinds.indices.map { index -> Double in
            guard kinds[index] == .path else { return 0 }
            let part = model.stored[index]
            let c = GestureShape.centroid(part)
            var squares = 0.0
            for point in part { squares += (point.x - c.x) * (point.x - c.x) + (point.y - c.y) * (point.y - c.y) }
            let size = GestureShape.squareRoot(squares / Double(max(1, part.count)))
            let ceiling = max(bounds.ceiling.shape, f * GestureConsensus.shapeCeilingShare * size, model.shapeSpreads[index])
            return min(1, Double(GestureRounding.ceiling(ceiling * 1_000_000) ?? 1_000_000) / 1_000_000)
        }
        let state = GestureLearningState(
            enrolled: base.storedPoints, logins: 0, drawings: drawings,
            shiftFloor: min(bounds.floor.shift, model.shiftSpread),
            shiftCeiling: max(bounds.ceiling.shift, model.shiftSpread),
            placeFloor: min(bounds.floor.place, model.placeSpread),
            placeCeiling: max(bounds.ceiling.place, model.placeSpread),
            shapeFloor: min(bounds.floor.shape, model.shapeSpreads.filter { $0 > 0 }.min() ?? bounds.floor.shape),
            shapeCeilings: shapeCeilings)
        return GestureTemplate(checkedWidth: base.width, height: base.height, settings: base.settings,
                               storedPoints: base.storedPoints, kinds: kinds, spreads: base.spreads, scale: base.scale,
                               version: 4, learning: state)
    }

    /// `consensus` moved back, term by term of the matcher's score, to within one ceiling
    /// spread per axis of `enrolled`: the whole gesture's shift, the parts' places after it
    /// (all scaled by one factor, so they still sum to nothing), and each path's shape.
    static func kept(_ consensus: [[GestureUnitPoint]], near enrolled: [[GestureUnitPoint]],
                     kinds: [GesturePartKind], state: GestureLearningState) -> [[GestureUnitPoint]] {
        let count = min(consensus.count, enrolled.count)
        guard count > 0 else { return consensus }
        var moves: [GestureUnitPoint] = []
        var shift = GestureUnitPoint(x: 0, y: 0)
        for index in 0..<count {
            let a = GestureShape.centroid(consensus[index])
            let b = GestureShape.centroid(enrolled[index])
            moves.append(GestureUnitPoint(x: a.x - b.x, y: a.y - b.y))
            shift.x += (a.x - b.x) / Double(count)
            shift.y += (a.y - b.y) / Double(count)
        }
        func factor(_ length: Double, _ limit: Double) -> Double { length > limit && length > 0 ? limit / length : 1 }
        let root2 = GestureShape.squareRoot(2)
        let shiftFactor = factor(GestureShape.squareRoot(shift.x * shift.x + shift.y * shift.y), root2 * state.shiftCeiling)
        var largestPlace = 0.0
        for move in moves {
            largestPlace = max(largestPlace, GestureShape.distance(move, shift))
        }
        let placeFactor = factor(largestPlace, root2 * state.placeCeiling)
        var result = consensus
        for index in 0..<count {
            let move = moves[index]
            let place = GestureUnitPoint(x: placeFactor * (move.x - shift.x), y: placeFactor * (move.y - shift.y))
            let centre = GestureUnitPoint(x: shiftFactor * shift.x + place.x, y: shiftFactor * shift.y + place.y)
            var squares = 0.0
            let samples = min(consensus[index].count, enrolled[index].count)
            for sample in 0..<samples {
                let dx = consensus[index][sample].x - enrolled[index][sample].x - move.x
                let dy = consensus[index][sample].y - enrolled[index][sample].y - move.y
                squares += dx * dx + dy * dy
            }
            let shapeCeiling = index < state.shapeCeilings.count ? state.shapeCeilings[index] : 0
            let shapeFactor = index < kinds.count && kinds[index] == .path
                ? factor(GestureShape.squareRoot(squares / Double(max(1, samples))), shapeCeiling) : 0
            for sample in 0..<samples {
                let dx = consensus[index][sample].x - enrolled[index][sample].x - move.x
                let dy = consensus[index][sample].y - enrolled[index][sample].y - move.y
                result[index][sample] = GestureUnitPoint(x: enrolled[index][sample].x + centre.x + shapeFactor * dx,
                                                         y: enrolled[index][sample].y + centre.y + shapeFactor * dy)
            }
        }
        return result
    }
}

/// A login the matcher accepted, as `GestureLearning.accept` made it: the template that
/// accepted it and the attempt's parts resampled as the matcher resampled them. It holds the
/// secret points of both; wipe them (`forEachPointStorage`) once learned from.
public struct GestureAcceptance: Sendable {
    /// The template that accepted the attempt.
    public let template: GestureTemplate
    /// The attempt's parts in picture units, `GestureShape.samples` points each.
    let drawn: [[GestureUnitPoint]]

    fileprivate init(template: GestureTemplate, drawn: [[GestureUnitPoint]]) {
        self.template = template
        self.drawn = drawn
    }

    /// Calls `body` with the memory of every array that holds the attempt's points (the
    /// template's have their own `forEachPointStorage`).
    public func forEachPointStorage(_ body: (UnsafeRawBufferPointer) -> Void) {
        for part in drawn { part.withUnsafeBytes(body) }
    }
}

/// What a version-4 template keeps beside version 3's consensus and spreads, to learn from
/// successful logins within its enrollment's bounds.
public struct GestureLearningState: Equatable, Sendable {
    /// The consensus as enrolled, in milli-pixels like the stored parts.
    let enrolled: [[GestureMilliPoint]]
    /// Successful logins learned from, up to 65535.
    public internal(set) var logins: Int
    /// Drawings the enrollment combined (1…`GestureConsensus.maximumDrawings`).
    public let drawings: Int
    /// The shift spread's floor and ceiling, per axis, in fractions of the longest side.
    public let shiftFloor: Double
    /// See `shiftFloor`.
    public let shiftCeiling: Double
    /// The place spread's floor and ceiling.
    public let placeFloor: Double
    /// See `placeFloor`.
    public let placeCeiling: Double
    /// Every path's shape floor.
    public let shapeFloor: Double
    /// Each part's shape ceiling (0 for a tap).
    public let shapeCeilings: [Double]

    /// Whether every bound is a finite fraction of the picture, each floor at most its ceiling.
    var isValid: Bool {
        func fraction(_ value: Double) -> Bool { value >= 0 && value <= 1 }
        return fraction(shiftFloor) && fraction(shiftCeiling) && shiftFloor <= shiftCeiling
            && fraction(placeFloor) && fraction(placeCeiling) && placeFloor <= placeCeiling
            && fraction(shapeFloor) && shapeCeilings.allSatisfy(fraction)
            && drawings >= 1 && drawings <= GestureConsensus.maximumDrawings && logins >= 0 && logins <= Int(UInt16.max)
    }
}
