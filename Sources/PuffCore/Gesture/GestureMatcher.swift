/// Verifies an attempt against an enrolled template.
///
/// The attempt must be drawn on a picture of the template's size, with the same number of
/// parts, of the same kinds, in the same order. Then every part must pass:
///
/// - **Tap**: the tapped point lies in the tolerance square centred on the stored point,
///   |dx| ≤ T/2 and |dy| ≤ T/2 with T = tolerance × longest side; the edge is inside.
/// - **Path**: the attempt is interpolated and rasterized exactly as at enrollment, then
///   (a) *hits*: at least `requiredHits` stored points have an interpolated input point in
///       their centred tolerance square;
///   (b) *overflow*: the rasterized input has at most `rasterLimit` points, so a scribble
///       over the whole picture fails although it hits everything;
///   (c) *order*: each stored point's hit time is the index of the first interpolated input
///       point inside its square; the longest run of stored points, in stored order, whose
///       hit times never decrease must also reach `requiredHits`. A path drawn backwards
///       hits its stored points in reverse and keeps a run of one or two. Only the *first*
///       visit counts, so drawing a line back and forth cannot satisfy both directions in
///       one attempt, while a stored point grazed too early costs only that one point.
///
/// Work is linear in the number of interpolated points: each looks at a bounded
/// neighbourhood of a grid over the stored squares, and the order check is O(n log n) in the
/// stored points. Attempts that would interpolate to more than
/// `GestureLimits.maximumInterpolatedPoints` fail without being examined.
///
/// Every part is evaluated even after one fails, so the time taken says little about which
/// part failed; a mismatch of picture size or part count still fails at once.
public enum GestureMatcher {
    /// Compares `attempt` with `template`; never throws and never traps, whatever the attempt.
    public static func verify(_ template: GestureTemplate, _ attempt: Gesture) -> GestureMatchResult {
        do {
            try attempt.validate()
        } catch {
            return GestureMatchResult(failure: .invalidAttempt(error))
        }
        guard attempt.width == template.width, attempt.height == template.height else {
            return GestureMatchResult(failure: .pictureSizeMismatch)
        }
        if template.version >= 3 { return GestureConsensus.verify(template, attempt) }
        if template.version == 2 { return GestureRecognizer.verify(template, attempt) }
        guard attempt.parts.count == template.storedPoints.count else {
            return GestureMatchResult(failure: .partCountMismatch)
        }
        let scale = template.scale
        var drawn: [[GestureMilliPoint]] = []
        var budget = GestureLimits.maximumInterpolatedPoints
        for part in attempt.parts {
            var points: [GestureMilliPoint] = []
            points.reserveCapacity(part.points.count)
            for point in part.points {
                guard let converted = GestureMilliPoint(point) else {
                    return GestureMatchResult(failure: .invalidAttempt(.nonFiniteCoordinate))
                }
                points.append(converted)
            }
            guard let count = GestureInterpolation.count(points, step: scale.step, limit: budget) else {
                return GestureMatchResult(failure: .tooComplex)
            }
            budget -= count
            drawn.append(points)
        }

        var diagnostics: [GesturePartDiagnostics] = []
        let storedParts = zip(template.parts.lazy.map { $0.kind }, template.storedPoints)
        let inputParts = zip(attempt.parts.lazy.map { $0.kind }, drawn)
        for ((storedKind, stored), (inputKind, input)) in zip(storedParts, inputParts) {
            switch (storedKind, inputKind) {
            case (.tap, .tap):
                diagnostics.append(evaluateTap(stored: stored, input: input, scale: scale))
            case (.path, .path):
                diagnostics.append(evaluatePath(stored: stored, input: input, scale: scale,
                                                parameters: template.parameters))
            default:
                diagnostics.append(GesturePartDiagnostics(
                    storedKind: storedKind, attemptKind: inputKind, storedCount: stored.count,
                    hitCount: 0, requiredHits: 1, orderedHits: 0, inputRasterCount: 0, rasterLimit: 0))
            }
        }
        let passed = diagnostics.allSatisfy { $0.passed }
        let detail = diagnostics.enumerated().first { !$0.element.passed }.flatMap { index, part in
            part.failedRule.map { GestureFailureDetail(part: index + 1, rule: $0) }
        }
        return GestureMatchResult(passed: passed, failure: passed ? nil : .partMismatch, parts: diagnostics,
                                  detail: detail)
    }

    private static func evaluateTap(stored: [GestureMilliPoint], input: [GestureMilliPoint],
                                    scale: GestureScale) -> GesturePartDiagnostics {
        var hit = 0
        if let storedPoint = stored.first, let inputPoint = input.first,
           scale.isWithinTolerance(inputPoint, of: storedPoint) {
            hit = 1
        }
        return GesturePartDiagnostics(storedKind: .tap, attemptKind: .tap, storedCount: stored.count,
                                      hitCount: hit, requiredHits: 1, orderedHits: hit,
                                      inputRasterCount: input.count, rasterLimit: 1)
    }

    private static func evaluatePath(stored: [GestureMilliPoint], input: [GestureMilliPoint],
                                     scale: GestureScale, parameters: GestureParameters) -> GesturePartDiagnostics {
        let required = parameters.requiredHits(storedCount: stored.count)
        let limit = parameters.rasterLimit(storedCount: stored.count)
        guard let grid = GestureToleranceGrid(stored: stored, scale: scale),
              var raster = GestureRaster(scale: scale)
        else {
            return GesturePartDiagnostics(storedKind: .path, attemptKind: .path, storedCount: stored.count,
                                          hitCount: 0, requiredHits: required, orderedHits: 0,
                                          inputRasterCount: 0, rasterLimit: limit)
        }
        // firstHit[j]: index of the first interpolated input point in stored square j, or -1.
        var firstHit = Array(repeating: -1, count: stored.count)
        var inputIndex = 0
        GestureInterpolation.forEach(input, step: scale.step) { point in
            raster.offer(point)
            grid.forEachHit(point) { storedIndex in
                if firstHit[storedIndex] < 0 { firstHit[storedIndex] = inputIndex }
            }
            inputIndex += 1
        }
        let hitTimes = firstHit.filter { $0 >= 0 }
        return GesturePartDiagnostics(storedKind: .path, attemptKind: .path, storedCount: stored.count,
                                      hitCount: hitTimes.count, requiredHits: required,
                                      orderedHits: GestureOrder.longestNonDecreasingRun(hitTimes),
                                      inputRasterCount: raster.kept.count, rasterLimit: limit)
    }
}

/// The outcome of a verification. The diagnostics are for debug logs and tests only: they
/// describe the template and must never be shown to the person logging in.
public struct GestureMatchResult: Equatable, Sendable {
    /// Whether the attempt matches the template.
    public let passed: Bool
    /// Why it did not match, or nil when it did.
    public let failure: GestureMatchFailure?
    /// One entry per part when the parts were compared; empty otherwise.
    public let parts: [GesturePartDiagnostics]
    /// The first failing part and the rule it broke (part 0: the whole gesture), for debug
    /// logs; nil when the attempt passed or failed before the parts were compared.
    public let detail: GestureFailureDetail?

    /// A result after the parts were compared.
    init(passed: Bool, failure: GestureMatchFailure?, parts: [GesturePartDiagnostics],
         detail: GestureFailureDetail? = nil) {
        self.passed = passed
        self.failure = failure
        self.parts = parts
        self.detail = detail
    }

    /// A failure found before any part was compared.
    init(failure: GestureMatchFailure) {
        self.init(passed: false, failure: failure, parts: [])
    }
}

/// Why an attempt did not match.
public enum GestureMatchFailure: Equatable, Sendable {
    /// The attempt breaks a structural rule of `Gesture.validate()`.
    case invalidAttempt(GestureFormatError)
    /// The attempt was drawn on a picture of another size.
    case pictureSizeMismatch
    /// The attempt has another number of parts.
    case partCountMismatch
    /// The attempt would interpolate to more than `GestureLimits.maximumInterpolatedPoints`.
    case tooComplex
    /// At least one part failed; see the diagnostics.
    case partMismatch
}

/// What verification measured for one part.
public struct GesturePartDiagnostics: Equatable, Sendable {
    /// The stored part's kind.
    public let storedKind: GesturePartKind
    /// The attempt part's kind; a different kind fails the part outright.
    public let attemptKind: GesturePartKind
    /// Points stored for the part.
    public let storedCount: Int
    /// Stored points with an input point in their tolerance square.
    public let hitCount: Int
    /// Hits needed: 1 for a tap, `GestureParameters.requiredHits` for a path.
    public let requiredHits: Int
    /// Longest run of stored points, in stored order, whose first hits never go back in time.
    public let orderedHits: Int
    /// Rasterized input points (a tap counts its one point).
    public let inputRasterCount: Int
    /// Most rasterized input points allowed: 1 for a tap, `GestureParameters.rasterLimit`
    /// for a path.
    public let rasterLimit: Int
    /// Whether the order check passed: `orderedHits >= requiredHits`.
    public let orderOK: Bool
    /// Whether the part passed: same kind, enough hits, within the limit, in order
    /// (version 2: same kind, within its tolerance and the overflow).
    public let passed: Bool
    /// Version 2: the root-mean-square distance to the stored part, in fractions of the
    /// longest side, once the common shift is taken out (0 for version 1).
    public let distance: Double
    /// Version 2: the part's tolerance for `distance` (0 for version 1).
    public let tolerance: Double
    /// Version 2: the root-mean-square distance between the part's shape and the stored
    /// one, each on its own centroid (0 for version 1 and for taps).
    public let shapeDistance: Double
    /// Version 2: the part's share of the place score (its squared distance over its scale).
    public let placeScore: Double
    /// The rule the part broke, or nil when it passed.
    public let failedRule: GestureRule?

    /// Version 2 measurements; counts are 0 and `passed` means no rule was broken.
    init(storedKind: GesturePartKind, attemptKind: GesturePartKind, distance: Double, placeScore: Double,
         tolerance: Double, shapeDistance: Double, failedRule: GestureRule?) {
        self.placeScore = placeScore
        self.shapeDistance = storedKind == .tap ? 0 : shapeDistance
        self.storedKind = storedKind
        self.attemptKind = attemptKind
        storedCount = 0
        hitCount = 0
        requiredHits = 0
        orderedHits = 0
        inputRasterCount = 0
        rasterLimit = 0
        orderOK = failedRule != .order
        passed = failedRule == nil
        self.distance = distance
        self.tolerance = tolerance
        self.failedRule = failedRule
    }

    /// Records the measurements and derives `orderOK` and `passed` from them.
    init(storedKind: GesturePartKind, attemptKind: GesturePartKind, storedCount: Int, hitCount: Int,
         requiredHits: Int, orderedHits: Int, inputRasterCount: Int, rasterLimit: Int) {
        self.storedKind = storedKind
        self.attemptKind = attemptKind
        self.storedCount = storedCount
        self.hitCount = hitCount
        self.requiredHits = requiredHits
        self.orderedHits = orderedHits
        self.inputRasterCount = inputRasterCount
        self.rasterLimit = rasterLimit
        orderOK = orderedHits >= requiredHits
        passed = storedKind == attemptKind && hitCount >= requiredHits
            && inputRasterCount <= rasterLimit && orderOK
        distance = 0
        tolerance = 0
        shapeDistance = 0
        placeScore = 0
        if storedKind != attemptKind {
            failedRule = .kind
        } else if storedKind == .tap, hitCount < requiredHits {
            failedRule = .tapDistance
        } else if inputRasterCount > rasterLimit {
            failedRule = .overflow
        } else if hitCount < requiredHits {
            failedRule = .coverage
        } else if !orderOK {
            failedRule = .order
        } else {
            failedRule = nil
        }
    }
}
