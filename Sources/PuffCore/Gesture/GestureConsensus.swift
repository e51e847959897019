/// Version 3: a template that is the consensus of every enrollment drawing, with the owner's
/// own consistency learned from how those drawings differ, and one score for a login.
///
/// **Enrollment** (`GestureConsensus.learn`). Every drawing's parts are resampled as in
/// version 2. A drawing's *shift* is the mean, over its parts, of how far each part's centroid
/// lies from that part's mean centroid over all drawings; the consensus part is the mean of the
/// drawings' parts, each moved back by its drawing's shift. From the same drawings it learns,
/// per axis and in fractions of the longest side:
/// - the *shift spread*: how far whole drawings lie from each other (K − 1 degrees of freedom);
/// - the *place spread*: how far each part lies from where its drawing's shift says, pooled
///   over the parts ((K − 1)(P − 1) degrees of freedom);
/// - each path's *shape spread*: the root-mean-square distance of its drawings to the
///   consensus shape along the best in-order alignment, each on its own centroid.
/// A later login differs from a consensus of K drawings by (1 + 1/K) times a drawing's
/// variance, so that is what is stored, each spread pulled towards its floor (`priorWeight`) and
/// bounded below (`floors`: a steady hand or a line given twice by a script still gets room for
/// an ordinary σ 1 % hand; drawings that declare a coarse input raise the floors by the cell's
/// error, `cellVariance`) and above (`ceilings`; beyond `refusalFactor` × a ceiling the owner
/// is refused).
///
/// **Verification** (`GestureConsensus.verify`). With the attempt's common shift s and each
/// part's offset o_i from its stored place, the score is
///
///     |s|² / σ_shift²  +  Σ |o_i − s|² / σ_place,i²  +  w · Σ_paths d_i² / σ_shape,i²
///
/// where d_i is the path's aligned RMS distance to the stored shape on its own centroid and w =
/// `shapeWeight`. Under the genuine model the first two sums follow a χ² law with 2P degrees of
/// freedom and the last averages w per path, so the score must stay under the
/// `confidence`-quantile of χ² with 2P + w·paths degrees of freedom (Wilson–Hilferty), and the
/// place sum alone under the `placeConfidence`-quantile of χ² with 2(P − 1).
///
/// A login's declared cell (`GestureResolution`, puff-pad in a terminal) is allowed for only when
/// every point is a centre of that grid (`onDeclaredGrid`): per axis the variance of a uniform
/// error over the cell, at most puff-pad's cell in a 100×30 terminal (`loginCellVariance`), less
/// what the template's floors may already hold (`enrolledCellVariance(of:)`); a tap's place gets
/// it whole, a path's place `cellShare.pathPlace`/k of it (k distinct cells), the shift 1/P, a
/// path's shape `cellShare.shape` of it once its staircase is smoothed along its midpoints. The
/// overflow rule measures such a stroke along its midpoints and widens the box by the cell.
/// A path must also keep the kind, direction (`order`: it fails when the reversed alignment
/// fits better by more than `orderMargin` times the path's shape variance), length and box
/// (`overflow`) rules and a shape within the stored hard cap (`coverage`).
///
/// Like version 2, every one of the `GestureLimits.maximumParts` slots is evaluated every time.
enum GestureConsensus {
    /// Lowest and highest learned spreads (per axis, fractions of the longest side) at the
    /// default settings; the `gesture_tolerance` factor scales both.
    static let floors = (shift: 0.0115, place: 0.0058, shape: 0.0045)
    /// See `floors`.
    static let ceilings = (shift: 0.022, place: 0.013, shape: 0.011)
    /// A path's shape spread may reach `shapeCeilingShare` of the path's own size (the RMS
    /// distance of its consensus points from their centroid) when that is above
    /// `ceilings.shape`: a real hand's shape varies with the size it draws. In the $1 unistroke
    /// logs (docs/gesture-format.md, "Real drawings") the same hands drawn twice as large were
    /// refused at enrollment (7 of 60 owners never enrolled) for their shapes' spread, a fixed
    /// fraction of the picture. Only the ceiling moves: the floor stays a fixed fraction, so a
    /// steady hand's large drawing gets no more room than its own drawings show (a floor in
    /// proportion too, 0.15 of the size, let 63 % of other people who drew the same shapes on the
    /// same spots in, against 31 %).
    static let shapeCeilingShare = 0.3
    /// How strongly a learned spread is pulled towards its floor, in the learned value's own
    /// degrees of freedom (0.5: the floor counts as half as much evidence as the drawings).
    /// Three drawings tell a spread only roughly; without the pull, an ordinary owner whose
    /// drawings happened to differ more than usual would get a template onlookers pass.
    static let priorWeight = 0.5
    /// Added in quadrature to a path's place spread: trimming the ends moves its centroid.
    static let pathPlaceFloor = 0.002
    /// How much better (in the path's shape variance) the reversed alignment must fit before a
    /// path counts as drawn backwards: under the score's model the reversed reading is then
    /// e⁴ ≈ 55 times as likely. A stroke that retraces itself fits both ways alike and is
    /// never refused for its direction; `make gesture-eval`'s backwards attack stays at 0 %
    /// with any margin from 0 to 6 (the score refuses it too).
    static let orderMargin = 4.0
    /// Weight of the shape terms in the score (in degrees of freedom per path).
    static let shapeWeight = 2.0
    /// Standard normal quantile of the whole score's limit (96.4 %).
    static let confidence = 1.8
    /// Standard normal quantile of the separate limit on the parts' places alone (99.3 %): a
    /// shoulder-surfer's shapes and shift are genuine, and in the whole score their room
    /// would pay for the misplaced parts.
    static let placeConfidence = 2.45
    /// The most cell variance (per axis) an enrollment's declaration raises the floors by: that
    /// of puff-pad's cell in a 100×30 terminal on a 4:3 picture (1.39 % × 2.78 % of the longest
    /// side), whatever cell is declared.
    static let maximumCellVariance = (0.0139 * 0.0139 + 0.0278 * 0.0278) / 24
    /// The share of a declared cell's variance a path's shape is given at login, and the share
    /// of its 1/k a path's place is given (`make gesture-eval`, docs/dev/gesture-format.md
    /// "Declared cells at login"): the attempt's staircase is smoothed once along its midpoints
    /// first, which takes most of the cell's error out of the shape. Larger shares let more
    /// owners through the pad and as many more onlookers who send their drawing through it.
    static let cellShare = (shape: 0.1, pathPlace: 0.5)
    /// Most drawings an enrollment combines.
    static let maximumDrawings = 8

    /// The owner's learned spreads and the consensus shapes, in picture units.
    struct Model {
        var stored: [[GestureUnitPoint]]
        var kinds: [GesturePartKind]
        var shiftSpread: Double
        var placeSpread: Double
        var shapeSpreads: [Double]
        var shapeCap: Double
        var overflow: Double
        /// The cell variance per axis the enrollment drawings' declared input put in the
        /// floors; a login's own declared cell adds only what exceeds it.
        var enrolledCellVariance = 0.0
    }

    /// The spreads before bounding (for tests and the enroller's refusal).
    struct Learned {
        var model: Model
        var rawShift: Double
        var rawPlace: Double
        var rawShapes: [Double]
        /// The part (from 0) whose places differ most between the drawings.
        var worstPlacePart: Int
        /// The ceilings these drawings were bounded by.
        var ceilings: (shift: Double, place: Double, shape: Double)
        /// Each part's shape ceiling (`shapeCeilingShare` of its size raises `ceilings.shape`; 0 for taps).
        var shapeCeilings: [Double] = []

        /// Why these drawings are too inconsistent to enroll, or nil: a raw spread beyond
        /// `refusalFactor` times its ceiling.
        func refusal() -> GestureFailureDetail? {
            let f = refusalFactor
            if rawShift > f * ceilings.shift { return GestureFailureDetail(part: 0, rule: .shift) }
            if rawPlace > f * ceilings.place {
                return GestureFailureDetail(part: worstPlacePart + 1,
                                            rule: model.kinds[worstPlacePart] == .tap ? .tapDistance : .place)
            }
            for (index, raw) in rawShapes.enumerated()
            where raw > f * (index < shapeCeilings.count ? shapeCeilings[index] : ceilings.shape) {
                return GestureFailureDetail(part: index + 1, rule: .coverage)
            }
            return nil
        }
    }

    /// The floors and ceilings of the learned spreads for a tolerance `factor`, both raised in
    /// quadrature by the variance of the enrollment drawings' declared cell (a whole drawing's
    /// shift by that over the parts).
    struct Bounds {
        var floor: (shift: Double, place: Double, shape: Double)
        var ceiling: (shift: Double, place: Double, shape: Double)

        init(factor f: Double, cellVariance: Double, parts: Double) {
            func raised(_ value: Double, _ cell: Double) -> Double { GestureShape.squareRoot(value * value + cell) }
            let perShift = cellVariance / max(1, parts)
            floor = (raised(f * floors.shift, perShift), raised(f * floors.place, cellVariance),
                     raised(f * floors.shape, cellVariance))
            ceiling = (raised(f * ceilings.shift, perShift), raised(f * ceilings.place, cellVariance),
                       raised(f * ceilings.shape, cellVariance))
        }
    }

    /// An enrollment whose raw spread exceeds its ceiling by more than this is refused: the
    /// learned spread would be cut to the ceiling, and this owner's logins would fail often.
    static let refusalFactor = 1.25

    /// The factor of `settings` against the defaults (the `gesture_tolerance` knob).
    static func factor(_ settings: GestureRecognizerSettings) -> Double {
        settings.placeTolerance / GestureRecognizerSettings.standard.placeTolerance
    }

    static func bounded(_ value: Double, _ low: Double, _ high: Double) -> Double {
        guard value.isFinite else { return high }
        return min(high, max(low, value))
    }

    /// Learns the consensus and the spreads from `drawings` (resampled, same kinds, ≥ 2).
    /// `cellVariance`: the variance per axis of the error of the drawings' declared cells
    /// (`cellVariance(_:longest:)`), which raises the floors.
    static func learn(_ drawings: [[[GestureUnitPoint]]], kinds: [GesturePartKind],
                      settings: GestureRecognizerSettings, cellVariance: Double = 0) -> Learned {
        let k = Double(drawings.count)
        let partCount = kinds.count
        let p = Double(partCount)
        // Each part's centroid in each drawing, and its mean over the drawings.
        let centroids = drawings.map { $0.map(GestureShape.centroid) }
        var meanCentroid = Array(repeating: GestureUnitPoint(x: 0, y: 0), count: partCount)
        for drawing in centroids {
            for (index, c) in drawing.enumerated() {
                meanCentroid[index].x += c.x / k
                meanCentroid[index].y += c.y / k
            }
        }
        // Each drawing's shift: the mean of its parts' offsets.
        let shifts = centroids.map { drawing -> GestureUnitPoint in
            var shift = GestureUnitPoint(x: 0, y: 0)
            for (index, c) in drawing.enumerated() {
                shift.x += (c.x - meanCentroid[index].x) / p
                shift.y += (c.y - meanCentroid[index].y) / p
            }
            return shift
        }
        // The consensus: the aligned mean, point by point.
        var stored = Array(repeating: Array(repeating: GestureUnitPoint(x: 0, y: 0), count: GestureShape.samples),
                           count: partCount)
        for (drawing, shift) in zip(drawings, shifts) {
            for (index, part) in drawing.enumerated() {
                for (sample, point) in part.enumerated() where sample < GestureShape.samples {
                    stored[index][sample].x += (point.x - shift.x) / k
                    stored[index][sample].y += (point.y - shift.y) / k
                }
            }
        }
        // The spreads, per axis, of one drawing around the true gesture.
        var shiftSquares = 0.0
        var placeSquares = 0.0
        var shapeSquares = Array(repeating: 0.0, count: partCount)
        var partPlaceSquares = Array(repeating: 0.0, count: partCount)
        for (drawing, (drawingCentroids, shift)) in zip(drawings, zip(centroids, shifts)) {
            shiftSquares += shift.x * shift.x + shift.y * shift.y
            for index in 0..<partCount {
                let dx = drawingCentroids[index].x - meanCentroid[index].x - shift.x
                let dy = drawingCentroids[index].y - meanCentroid[index].y - shift.y
                placeSquares += dx * dx + dy * dy
                partPlaceSquares[index] += dx * dx + dy * dy
                if kinds[index] == .path {
                    let storedCentroid = GestureShape.centroid(stored[index])
                    let offset = GestureUnitPoint(x: drawingCentroids[index].x - storedCentroid.x,
                                                  y: drawingCentroids[index].y - storedCentroid.y)
                    shapeSquares[index] += GestureShape.warpedMeanSquare(stored[index], drawing[index],
                                                                         shift: offset, reversed: false)
                }
            }
        }
        let freedom = max(1, k - 1)
        let login = 1 + 1 / k
        let rawShift = GestureShape.squareRoot(login * shiftSquares / (2 * freedom))
        let rawPlace = GestureShape.squareRoot(login * placeSquares / (2 * freedom * max(1, p - 1)))
        // A drawing's squared shape distance to a consensus that contains it is (1 − 1/K) of
        // its variance; a login's is (1 + 1/K).
        let rawShapes = shapeSquares.map { GestureShape.squareRoot(login * $0 / freedom) }
        let f = factor(settings)
        func pooled(_ raw: Double, _ prior: Double, freedom: Double) -> Double {
            let n0 = priorWeight * freedom
            return GestureShape.squareRoot((n0 * prior * prior + freedom * raw * raw) / (n0 + freedom))
        }
        // Drawn through a coarse input, an ordinary hand's spreads include the cell's error:
        // both bounds grow by it.
        let bounds = Bounds(factor: f, cellVariance: cellVariance, parts: p)
        let shiftFloor = bounds.floor.shift, placeFloor = bounds.floor.place
        // Each path's shape ceiling: the fixed one, raised to `shapeCeilingShare` of its own size.
        let sizes = stored.map { part -> Double in
            let c = GestureShape.centroid(part)
            var squares = 0.0
            for point in part { squares += (point.x - c.x) * (point.x - c.x) + (point.y - c.y) * (point.y - c.y) }
            return GestureShape.squareRoot(squares / Double(max(1, part.count)))
        }
        let shapeFloor = bounds.floor.shape
        let shapeCeilings = zip(kinds, sizes).map { kind, size in
            kind == .tap ? 0 : max(bounds.ceiling.shape, f * shapeCeilingShare * size)
        }
        let model = Model(
            stored: stored, kinds: kinds,
            shiftSpread: bounded(pooled(rawShift, shiftFloor, freedom: 2 * freedom), shiftFloor, bounds.ceiling.shift),
            placeSpread: bounded(pooled(rawPlace, placeFloor, freedom: 2 * freedom * max(1, p - 1)),
                                 placeFloor, bounds.ceiling.place),
            shapeSpreads: kinds.indices.map { index in
                kinds[index] == .tap ? 0
                    : bounded(pooled(rawShapes[index], shapeFloor, freedom: 2 * freedom), shapeFloor, shapeCeilings[index])
            },
            shapeCap: settings.shapeTolerance, overflow: settings.overflow)
        var worst = 0
        for (index, value) in partPlaceSquares.enumerated() where value > partPlaceSquares[worst] { worst = index }
        return Learned(model: model, rawShift: rawShift, rawPlace: rawPlace, rawShapes: rawShapes, worstPlacePart: worst,
                       ceilings: bounds.ceiling, shapeCeilings: shapeCeilings)
    }

    /// The score limit for `freedom` degrees of freedom: the `confidence` quantile of χ²
    /// (Wilson–Hilferty: k (1 − 2/9k + z √(2/9k))³).
    static func scoreLimit(freedom: Double, z: Double = confidence) -> Double {
        let k = max(1, freedom)
        let a = 2 / (9 * k)
        let term = 1 - a + z * GestureShape.squareRoot(a)
        return k * term * term * term
    }

    /// The variance per axis of a uniform error over the declared cell, at most
    /// `maximumCellVariance`; 0 without one.
    static func cellVariance(_ resolution: GestureResolution?, longest: Double) -> Double {
        let cell = cell(resolution, longest: longest)
        return min(maximumCellVariance, (cell.x * cell.x + cell.y * cell.y) / 24)
    }

    /// The declared cell in picture units, each side bounded by `GestureResolution.maximumCell`.
    static func cell(_ resolution: GestureResolution?, longest: Double) -> GestureUnitPoint {
        guard let resolution, longest > 0 else { return GestureUnitPoint(x: 0, y: 0) }
        let cap = GestureResolution.maximumCell
        let w = min(cap, max(0, resolution.width / longest))
        let h = min(cap, max(0, resolution.height / longest))
        return GestureUnitPoint(x: w.isFinite ? w : 0, y: h.isFinite ? h : 0)
    }

    /// Scores `drawn` against `model`; `varianceScale` shrinks the spreads (1 for a login).
    static func evaluate(_ model: Model, drawn: [[GestureUnitPoint]], drawnKinds: [GesturePartKind],
                         drawnLengths: [Double] = [], cell: GestureUnitPoint = GestureUnitPoint(x: 0, y: 0),
                         loginCellVariance: GestureUnitPoint = GestureUnitPoint(x: 0, y: 0),
                         varianceScale: Double = 1) -> GestureMatchResult {
        // The room a login's declared cell is given, per axis, beyond what the enrollment's
        // own cell put in the floors.
        let addX = max(0, loginCellVariance.x - model.enrolledCellVariance)
        let addY = max(0, loginCellVariance.y - model.enrolledCellVariance)
        let stored = model.stored
        let slots = GestureLimits.maximumParts
        let real = min(stored.count, drawn.count)
        let fallback = [GestureUnitPoint](repeating: GestureUnitPoint(x: 0, y: 0), count: GestureShape.samples)
        func storedPart(_ slot: Int) -> [GestureUnitPoint] { stored.isEmpty ? fallback : stored[slot % stored.count] }
        func drawnPart(_ slot: Int) -> [GestureUnitPoint] { drawn.isEmpty ? fallback : drawn[slot % drawn.count] }
        let partCount = Double(max(1, real))

        var offsets: [GestureUnitPoint] = []
        var shift = GestureUnitPoint(x: 0, y: 0)
        for slot in 0..<slots {
            let a = GestureShape.centroid(drawnPart(slot))
            let b = GestureShape.centroid(storedPart(slot))
            let offset = GestureUnitPoint(x: a.x - b.x, y: a.y - b.y)
            offsets.append(offset)
            let weight = slot < real ? 1.0 : 0.0
            shift.x += weight * offset.x / partCount
            shift.y += weight * offset.y / partCount
        }
        let shiftVariance = varianceScale * model.shiftSpread * model.shiftSpread
        let shiftTerm = shift.x * shift.x / (shiftVariance + addX / partCount)
            + shift.y * shift.y / (shiftVariance + addY / partCount)
        var score = shiftTerm
        var placeSum = 0.0
        var freedom = 2.0

        var diagnostics: [GesturePartDiagnostics] = []
        var firstFailure: GestureFailureDetail?
        var allPassed = true
        var worst = (term: shiftTerm / 2, part: 0, rule: GestureRule.shift)
        for slot in 0..<slots {
            let storedPoints = storedPart(slot)
            let drawnPoints = drawnPart(slot)
            let storedKind = slot < model.kinds.count ? model.kinds[slot] : .path
            let drawnKind = slot < drawnKinds.count ? drawnKinds[slot] : .path
            let isPath = storedKind == .path
            let offset = offsets[slot]
            let placeX = offset.x - shift.x
            let placeY = offset.y - shift.y
            let placeSquare = placeX * placeX + placeY * placeY
            let pathFloor = isPath ? pathPlaceFloor * pathPlaceFloor : 0
            let placeVariance = varianceScale * model.placeSpread * model.placeSpread + pathFloor
            // A stroke's centroid averages its points' cell errors: over k distinct cells per axis
            // its error has 1/k of a single point's variance (a tap's is the whole cell's).
            let partAddX = isPath && addX > 0 ? cellShare.pathPlace * addX / Double(distinctCells(drawnPoints, cell.x, horizontal: true)) : addX
            let partAddY = isPath && addY > 0 ? cellShare.pathPlace * addY / Double(distinctCells(drawnPoints, cell.y, horizontal: false)) : addY
            let placeTerm = placeX * placeX / (placeVariance + partAddX) + placeY * placeY / (placeVariance + partAddY)
            let forward = GestureShape.warpedMeanSquare(storedPoints, drawnPoints, shift: offset, reversed: false)
            let backward = GestureShape.warpedMeanSquare(storedPoints, drawnPoints, shift: offset, reversed: true)
            let shapeSpread = slot < model.shapeSpreads.count ? model.shapeSpreads[slot] : 0
            let shapeVariance = varianceScale * shapeSpread * shapeSpread + cellShare.shape * (addX + addY) / 2
            let shapeTerm = isPath ? shapeWeight * forward / max(shapeVariance, 1e-12) : 0
            let storedLength = GestureShape.length(storedPoints)
            let drawnLength = drawnLengths.isEmpty ? GestureShape.length(drawnPoints)
                : drawnLengths[slot % drawnLengths.count]
            let storedExtent = GestureShape.extent(storedPoints)
            let drawnExtent = GestureShape.extent(drawnPoints)
            let slack = GestureRecognizerSettings.overflowSlack
            let boxFactor = 1 + (model.overflow - 1) / 2
            // A staircase of cells may spread one cell wider than the stroke it follows.
            let overflowOK = drawnLength <= model.overflow * storedLength + slack
                && drawnExtent.width <= boxFactor * storedExtent.width + slack + cell.x
                && drawnExtent.height <= boxFactor * storedExtent.height + slack + cell.y
            let weight = slot < real ? 1.0 : 0.0
            score += weight * (placeTerm + shapeTerm)
            placeSum += weight * placeTerm
            freedom += weight * (2 + (isPath ? shapeWeight : 0))
            if slot < real, placeTerm / 2 > worst.term {
                worst = (placeTerm / 2, slot + 1, isPath ? .place : .tapDistance)
            }
            if slot < real, isPath, shapeTerm / shapeWeight > worst.term {
                worst = (shapeTerm / shapeWeight, slot + 1, .coverage)
            }
            let rule: GestureRule?
            if storedKind != drawnKind {
                rule = .kind
            } else if !isPath {
                rule = nil
            } else if !overflowOK {
                rule = .overflow
            } else if forward - backward > orderMargin * max(shapeVariance, 1e-12) {
                // Reversed, the stroke fits clearly better (`orderMargin`). A stroke that
                // retraces itself (out and back along one line) fits both ways alike, so a bare
                // `backward < forward` refused its owner on rounding or on an ordinary hand's
                // noise (half the logins, a quarter of enrollments), while its reverse is the
                // same stroke anyway.
                rule = .order
            } else if !(forward <= model.shapeCap * model.shapeCap) {
                rule = .coverage
            } else {
                rule = nil
            }
            guard slot < real else { continue }
            diagnostics.append(GesturePartDiagnostics(storedKind: storedKind, attemptKind: drawnKind,
                                                      distance: GestureShape.squareRoot(placeSquare),
                                                      placeScore: placeTerm,
                                                      tolerance: GestureShape.squareRoot(placeVariance),
                                                      shapeDistance: GestureShape.squareRoot(forward),
                                                      failedRule: rule))
            if let rule {
                allPassed = false
                if firstFailure == nil { firstFailure = GestureFailureDetail(part: slot + 1, rule: rule) }
            }
        }
        let placeLimit = scoreLimit(freedom: max(1, 2 * (partCount - 1)), z: placeConfidence)
        let scoreOK = score <= scoreLimit(freedom: freedom) && placeSum <= placeLimit
        if !scoreOK {
            allPassed = false
            if firstFailure == nil { firstFailure = GestureFailureDetail(part: worst.part, rule: worst.rule) }
        }
        return GestureMatchResult(passed: allPassed, failure: allPassed ? nil : .partMismatch,
                                  parts: diagnostics, detail: firstFailure)
    }

    /// The learned values for a template migrated from one drawing (version 1 or 2): the
    /// consistency version 2 learned from its confirmations (per axis, the spread of a part's
    /// place between two drawings, which is also a login's against one drawing) gives the place
    /// spread, twice that the shift spread (the model's whole-gesture shift is twice a part's
    /// aim), all bounded as at enrollment; the shapes get the highest spread, since one drawing
    /// tells nothing of them (and a version-1 path is only raster points, its corners and
    /// ends cut by up to a raster side). Version 2 allowed a shape RMS of 3 %; this is 1.1 %.
    static func migrated(kinds: [GesturePartKind], version2Spreads: [Double],
                         settings: GestureRecognizerSettings) -> (settings: GestureRecognizerSettings, spreads: [Double]) {
        var squares = 0.0
        for spread in version2Spreads { squares += spread * spread }
        let place = GestureShape.squareRoot(squares / Double(2 * max(1, kinds.count - 1)))
        let f = factor(settings)
        let placeSpread = bounded(place, f * floors.place, f * ceilings.place)
        let shiftSpread = bounded(2 * place, f * floors.shift, f * ceilings.shift)
        let stored = (try? GestureRecognizerSettings(placeTolerance: max(0.002, placeSpread),
                                                     shapeTolerance: settings.shapeTolerance,
                                                     shiftLimit: max(0.002, shiftSpread), overflow: settings.overflow)) ?? settings
        return (stored, kinds.map { $0 == .tap ? 0 : f * ceilings.shape })
    }

    /// The model a version-3 template stores.
    static func model(of template: GestureTemplate) -> Model {
        Model(stored: units(of: template), kinds: template.parts.map { $0.kind },
              shiftSpread: template.settings.shiftLimit, placeSpread: template.settings.placeTolerance,
              shapeSpreads: template.spreads, shapeCap: template.settings.shapeTolerance,
              overflow: template.settings.overflow, enrolledCellVariance: enrolledCellVariance(of: template))
    }

    /// The cell variance per axis a template's floors may already hold: the part of its place
    /// spread above the floor, at most `maximumCellVariance`. A template does not say whether
    /// its drawings came through a coarse input, and a pad-enrolled owner's floors already hold
    /// the cell: counting it again at a pad login would give onlookers the cell twice.
    static func enrolledCellVariance(of template: GestureTemplate) -> Double {
        let place = template.settings.placeTolerance
        // The default floor: a template does not store the tolerance it was enrolled at, and a
        // higher one only makes this estimate, and the login's room, smaller.
        return min(maximumCellVariance, max(0, place * place - floors.place * floors.place))
    }

    /// The template's stored parts in picture units: a path's `GestureShape.samples` points as
    /// stored, a tap's point repeated. Resampling them again would cut their corners a second
    /// time, and a drawing would no longer match its own template (found by the fuzzer).
    static func units(of template: GestureTemplate) -> [[GestureUnitPoint]] {
        let longest = Double(max(template.scale.width, template.scale.height))
        return template.storedPoints.map { part in
            let units = part.map { GestureUnitPoint(x: Double($0.x) / longest, y: Double($0.y) / longest) }
            return units.count == GestureShape.samples ? units : GestureShape.resample(units)
        }
    }

    /// Verifies `attempt` against a version-3 template (size already checked by the caller).
    static func verify(_ template: GestureTemplate, _ attempt: Gesture) -> GestureMatchResult {
        let longest = Double(max(template.scale.width, template.scale.height))
        // A declaration the points do not bear out (not every point a centre of the declared
        // grid) buys no room: to be allowed for a cell, an attempt must carry its error.
        let onGrid = onDeclaredGrid(attempt)
        guard let (drawn, lengths) = resampled(attempt, longest: longest, onGrid: onGrid) else {
            return GestureMatchResult(failure: .tooComplex)
        }
        let declared = cell(attempt.resolution, longest: longest / 1000)
        let room = onGrid ? loginCellVariance(declared) : GestureUnitPoint(x: 0, y: 0)
        let evaluation = evaluate(model(of: template), drawn: drawn, drawnKinds: attempt.parts.map { $0.kind },
                                  drawnLengths: lengths, cell: declared, loginCellVariance: room)
        guard drawn.count == template.storedPoints.count else { return GestureMatchResult(failure: .partCountMismatch) }
        return evaluation
    }

    /// Whether `gesture` declares a cell and every point is the centre of a cell of that size
    /// (cell (c, r) spans [c·w, (c + 1)·w) × [r·h, (r + 1)·h), as puff-pad maps them), within the
    /// wire's rounding of the points and of the declared size. Linear in the points.
    static func onDeclaredGrid(_ gesture: Gesture) -> Bool {
        guard let resolution = gesture.resolution, resolution.width > 0, resolution.height > 0,
              resolution.width.isFinite, resolution.height.isFinite
        else { return false }
        func centred(_ value: Double, _ side: Double) -> Bool {
            guard let index = GestureRounding.floor(value / side) else { return false }
            let cells = Double(index) + 0.5
            // The wire rounds a point and the declared side to 1/1000 px, which moves the c-th
            // centre by up to c/2000 px.
            return abs(value - cells * side) <= 0.002 + cells * 0.0005
        }
        for part in gesture.parts {
            for point in part.points where !(centred(point.x, resolution.width) && centred(point.y, resolution.height)) {
                return false
            }
        }
        return true
    }

    /// The variance per axis of a uniform error over a login's declared `cell` (picture units),
    /// both scaled down together until their mean is at most `maximumCellVariance`: whatever an
    /// attempt declares, it is allowed for no more than puff-pad's cell in a 100×30 terminal.
    static func loginCellVariance(_ cell: GestureUnitPoint) -> GestureUnitPoint {
        let x = cell.x * cell.x / 12, y = cell.y * cell.y / 12
        let mean = (x + y) / 2
        guard mean > maximumCellVariance, mean.isFinite else {
            return GestureUnitPoint(x: x.isFinite ? x : 0, y: y.isFinite ? y : 0)
        }
        let ratio = maximumCellVariance / mean
        return GestureUnitPoint(x: x * ratio, y: y * ratio)
    }

    /// How many distinct cells of side `side` the points' x (or y) coordinates fall in: 1 to
    /// `points.count`, and 1 without a cell.
    static func distinctCells(_ points: [GestureUnitPoint], _ side: Double, horizontal: Bool) -> Int {
        guard side > 0, side.isFinite else { return 1 }
        var cells: [Int] = []
        cells.reserveCapacity(points.count)
        for point in points {
            cells.append(GestureRounding.floor((horizontal ? point.x : point.y) / side) ?? 0)
        }
        cells.sort()
        var distinct = 1
        for (a, b) in zip(cells, cells.dropFirst()) where a != b { distinct += 1 }
        return distinct
    }

    /// The parts of a validated gesture in picture units, resampled, and each part's length for
    /// the overflow rule (along the midpoints of consecutive points when the gesture declares
    /// cells); nil beyond the point cap.
    static func resampled(_ gesture: Gesture, longest: Double, onGrid: Bool = false)
        -> (parts: [[GestureUnitPoint]], lengths: [Double])? {
        var drawn: [[GestureUnitPoint]] = []
        var lengths: [Double] = []
        var total = 0
        for part in gesture.parts {
            total += part.points.count
            guard total <= GestureLimits.maximumInterpolatedPoints else { return nil }
            var points: [GestureUnitPoint] = []
            points.reserveCapacity(part.points.count)
            for point in part.points {
                guard let milli = GestureMilliPoint(point) else { return nil }
                points.append(GestureUnitPoint(x: Double(milli.x) / longest, y: Double(milli.y) / longest))
            }
            // An attempt allowed for its cells is a staircase of cell centres: along its midpoints
            // it lies nearer the stroke it follows.
            let resampled = GestureShape.resample(onGrid ? GestureShape.midpoints(points) : points)
            drawn.append(resampled)
            // Reports of cells flicker between neighbours: the overflow rule measures a declared
            // coarse stroke along its midpoints, which cancel a flicker (A, B, A) but keep a scribble.
            lengths.append(GestureShape.length(gesture.resolution == nil
                                               ? resampled : GestureShape.resample(GestureShape.midpoints(points))))
        }
        return (drawn, lengths)
    }
}
