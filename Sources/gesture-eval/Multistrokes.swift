// `gesture-eval --mmg DIRECTORY` (scripts/gesture-real.sh): multistroke gestures drawn with a
// finger or a stylus as real drawings of several parts drawn as one gesture (issue 35). The
// Mixed Multistroke Gestures set (Anthony and Wobbrock, GI 2012: 20 people, 10 with a finger and
// 10 with a stylus, × 16 symbols × 10 repetitions × 3 speeds, X, Y, T and a stroke number per
// point) is mapped so that each stroke of a symbol is one part of a gesture on the picture and
// the parts keep the places the hand gave them relative to each other; then the real enroller
// and matcher, as for the $1 logs (RealDrawings.swift, docs/gesture-format.md).
import Glibc
import PuffCore
import PuffSimulation

/// One drawing of a symbol: its strokes in the order drawn, in device pixels, with times (ms).
struct MultistrokeDrawing {
    var strokes: [[Point]]
    var times: [[Double]]
}

/// One person: the input device and, for each speed and symbol, the repetitions in order.
struct MultistrokeDrawer {
    var device: String
    var drawings: [String: [String: [MultistrokeDrawing]]] = [:]
}

enum MMG {
    static let speeds = ["slow", "medium", "fast"]

    /// The set as CSV files, one a drawing, `<symbol>/<person>-<finger|stylus>-<speed>-<symbol>-<NN>.csv`,
    /// rows "X,-Y,1,T,stroke" (the conversion of the original XML logs in the DEICTIC
    /// repository); DIRECTORY may be that folder or one holding `repository/deictic/mdollar-dataset/raw`.
    static func load(_ directory: String) -> Result<[String: MultistrokeDrawer], SignatureFileError> {
        var root = directory
        for nested in ["repository", "deictic", "mdollar-dataset", "raw"] where Dollar1.list(root).contains(nested) {
            root += "/" + nested
        }
        var set: [String: MultistrokeDrawer] = [:]
        for symbol in Dollar1.list(root) {
            var files: [(String, String, String, Int, String)] = []
            for file in Dollar1.list(root + "/" + symbol) where file.hasSuffix(".csv") {
                let words = file.dropLast(4).split(separator: "-").map(String.init)
                guard words.count >= 5, let number = Int(words[words.count - 1]),
                      ["finger", "stylus"].contains(words[1]), speeds.contains(words[2]) else { continue }
                files.append((words[0], words[1], words[2], number, file))
            }
            for (person, device, speed, _, file) in files.sorted(by: { ($0.0, $0.2, $0.3) < ($1.0, $1.2, $1.3) }) {
                guard let bytes = Dollar1.read(root + "/" + symbol + "/" + file) else {
                    return .failure(SignatureFileError(reason: "\(root)/\(symbol)/\(file): cannot be read"))
                }
                switch parse(bytes) {
                case .success(let drawing):
                    set[person, default: MultistrokeDrawer(device: device)].drawings[speed, default: [:]][symbol, default: []].append(drawing)
                case .failure(let error):
                    return .failure(SignatureFileError(reason: "\(root)/\(symbol)/\(file): \(error.reason)"))
                }
            }
        }
        return .success(set)
    }

    /// Rows "X,Y,pressure,T,stroke"; a new stroke begins where the stroke number changes. Y is
    /// stored negated and is turned back to screen coordinates.
    static func parse(_ bytes: [UInt8]) -> Result<MultistrokeDrawing, SignatureFileError> {
        var drawing = MultistrokeDrawing(strokes: [], times: [])
        var current: Int?
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",").map { Double($0.trimmingPrefix(" ")) }
            guard fields.count >= 5, let x = fields[0], let y = fields[1], let t = fields[3], let stroke = fields[4] else {
                return .failure(SignatureFileError(reason: "a row is not five numbers: \(line.prefix(60))"))
            }
            if current != Int(stroke) {
                current = Int(stroke)
                drawing.strokes.append([])
                drawing.times.append([])
            }
            drawing.strokes[drawing.strokes.count - 1].append(Point(x: x, y: -y))
            drawing.times[drawing.times.count - 1].append(t)
        }
        guard !drawing.strokes.isEmpty else { return .failure(SignatureFileError(reason: "no points")) }
        return .success(drawing)
    }
}

// MARK: A symbol as a gesture of several parts

/// How the parts are put on the picture.
enum MultistrokeLayout: CustomStringConvertible {
    /// Where the hand put each stroke relative to the others; the symbol's centre on the
    /// picture's centre, moved by a common shift of this σ per axis (fraction of the longest side).
    case asDrawn(shift: Double)
    /// Each stroke's centroid where this person puts it on average (over their ten medium
    /// repetitions with the same number of strokes): the hand gives only each part's shape.
    case meanLayout

    var description: String {
        switch self {
        case .asDrawn(let shift): shift == 0 ? "parts where the hand put them" : "parts where the hand put them, common shift σ \(fmt(100 * shift)) %"
        case .meanLayout: "each part on the person's mean layout"
        }
    }
}

/// The strokes' centroids relative to the symbol's centre (the mean of the stroke centroids).
func strokeOffsets(_ drawing: MultistrokeDrawing) -> [Point] {
    let centres = drawing.strokes.map(pathCentroid)
    let middle = centroid(centres)
    return centres.map { Point(x: $0.x - middle.x, y: $0.y - middle.y) }
}

/// One drawing as a gesture: each stroke one part, scaled by `pixelsPerUnit` about its own
/// centroid and placed by `layout` around the picture's centre.
func multistrokeGesture(_ drawing: MultistrokeDrawing, pixelsPerUnit: Double, layout: MultistrokeLayout,
                        meanOffsets: [Point]?, random: inout Random) -> Gesture {
    let centre = Point(x: pictureWidth / 2, y: pictureHeight / 2)
    var shift = Point(x: 0, y: 0)
    var offsets = strokeOffsets(drawing)
    switch layout {
    case .asDrawn(let sigma):
        if sigma > 0 { shift = Point(x: random.gaussian(sigma * longestSide), y: random.gaussian(sigma * longestSide)) }
    case .meanLayout:
        if let meanOffsets, meanOffsets.count == offsets.count { offsets = meanOffsets }
    }
    var parts: [GesturePart] = []
    for (stroke, offset) in zip(drawing.strokes, offsets) {
        let own = pathCentroid(stroke)
        var kept: [GesturePoint] = []
        for p in stroke {
            let q = Shapes.clamp(Point(x: centre.x + shift.x + (offset.x + p.x - own.x) * pixelsPerUnit,
                                       y: centre.y + shift.y + (offset.y + p.y - own.y) * pixelsPerUnit))
            let point = GesturePoint(x: (q.x * 1000).rounded() / 1000, y: (q.y * 1000).rounded() / 1000)
            if kept.last != point { kept.append(point) }
        }
        if kept.count == 1 { kept.append(kept[0]) }
        parts.append(GesturePart(kind: .path, points: kept))
    }
    return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
}

/// The mean stroke offsets of a person's medium repetitions with the most common stroke count.
func meanStrokeOffsets(_ drawings: [MultistrokeDrawing]) -> [Point]? {
    var counts: [Int: Int] = [:]
    for drawing in drawings { counts[drawing.strokes.count, default: 0] += 1 }
    guard let usual = counts.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) })?.key else { return nil }
    let same = drawings.filter { $0.strokes.count == usual }.map(strokeOffsets)
    return (0..<usual).map { i in centroid(same.map { $0[i] }) }
}

/// Picture pixels per device pixel at 1×: the median medium-speed stroke gets the median $1
/// stroke's RMS radius (41 px).
func multistrokeScale(_ set: [String: MultistrokeDrawer]) -> Double {
    var radii: [Double] = []
    for (_, drawer) in set {
        for (_, drawings) in drawer.drawings["medium"] ?? [:] {
            for drawing in drawings { radii += drawing.strokes.filter { $0.count >= 2 }.map(partRadius) }
        }
    }
    let radius = median(radii)
    return radius > 0 ? dollar1MedianRadius / radius : 1
}

/// The symbols that make a gesture the enroller takes: usually drawn with at least
/// `minimumVersion2Parts` strokes, the shortest of them (median) no shorter than
/// `minimumPathLength` at 1× (two-stroke symbols, and the dot of "!", would be refused for
/// their shape, not for the hand).
func multistrokeSymbols(_ set: [String: MultistrokeDrawer], pixelsPerUnit: Double) -> [String] {
    var strokes: [String: [Double]] = [:], shortest: [String: [Double]] = [:]
    for (_, drawer) in set {
        for (symbol, drawings) in drawer.drawings["medium"] ?? [:] {
            strokes[symbol, default: []] += drawings.map { Double($0.strokes.count) }
            shortest[symbol, default: []] += drawings.map { drawing in
                drawing.strokes.map { stroke in zip(stroke, stroke.dropFirst()).reduce(0) { $0 + hypot($1.1.x - $1.0.x, $1.1.y - $1.0.y) } }.min() ?? 0
            }
        }
    }
    let minimumLength = GestureEnroller.minimumPathLength * longestSide / pixelsPerUnit
    return strokes.filter { median($0.value) >= Double(GestureEnroller.minimumVersion2Parts) && median(shortest[$0.key] ?? []) >= minimumLength }
        .keys.sorted()
}

// MARK: The goal rows

/// The goal rows for one layout, for the people drawing with `device` (nil: everyone).
func multistrokeEvaluation(_ set: [String: MultistrokeDrawer], device: String?, pixelsPerUnit: Double,
                           layout: MultistrokeLayout, seed: UInt64) {
    var random = Random(seed: seed)
    let people = set.keys.sorted(), owners = people.filter { device == nil || set[$0]?.device == device }
    let symbols = multistrokeSymbols(set, pixelsPerUnit: pixelsPerUnit)
    var later = RealCount(), slow = RealCount(), fast = RealCount()
    var perPerson: [RealCount] = []
    var othersTried = 0, othersAccepted = 0, never = 0, enrolledOwners = 0, tries = 0, refusedTries = 0
    for person in owners {
        guard let drawer = set[person], let medium = drawer.drawings["medium"] else { continue }
        var mine = RealCount()
        for symbol in symbols {
            guard let reps = medium[symbol] else { continue }
            let mean = meanStrokeOffsets(reps)
            func gesture(_ drawing: MultistrokeDrawing, _ offsets: [Point]?) -> Gesture {
                multistrokeGesture(drawing, pixelsPerUnit: pixelsPerUnit, layout: layout, meanOffsets: offsets, random: &random)
            }
            // Enrollment as `puff-enroll` does it, on the medium repetitions in order.
            var next = 0
            let enrolled = enrollInOrder {
                guard next < reps.count else { return nil }
                defer { next += 1 }
                return gesture(reps[next], mean)
            }
            let template = enrolled.template
            refusedTries += enrolled.refused
            tries += enrolled.tries
            guard let template else {
                never += 1
                continue
            }
            enrolledOwners += 1
            for rep in reps[next...] { mine.add(GestureMatcher.verify(template, gesture(rep, mean))) }
            for (speed, count) in [("slow", 0), ("fast", 1)] {
                let own = drawer.drawings[speed]?[symbol] ?? []
                let ownMean = meanStrokeOffsets(own)
                for rep in own {
                    let result = GestureMatcher.verify(template, gesture(rep, ownMean))
                    if count == 0 { slow.add(result) } else { fast.add(result) }
                }
            }
            for other in people where other != person {
                let theirs = set[other]?.drawings["medium"]?[symbol] ?? []
                let theirMean = meanStrokeOffsets(theirs)
                for rep in theirs {
                    othersTried += 1
                    if GestureMatcher.verify(template, gesture(rep, theirMean)).passed { othersAccepted += 1 }
                }
            }
        }
        later.merge(mine)
        perPerson.append(mine)
    }
    print("### MMG, \(device.map { "drawn with a " + $0 } ?? "everyone"): \(layout), 1×")
    print("")
    print("| row | goal | measured (n; 95 % Wilson interval) | refusals by rule |")
    print("|---|---|---|---|")
    print("| later repetitions, same speed (medium) | FRR ≤ 2 % median person | \(rate(later.refused, later.n)) | \(later.ruleText) |")
    print("| per person (\(owners.count)) | median ≤ 2 %, 75th percentile ≤ 10 % | \(spread(perPerson)) |  |")
    print("| enrolled medium, drawn slow | FRR ≤ 5 % | \(rate(slow.refused, slow.n)) | \(slow.ruleText) |")
    print("| enrolled medium, drawn fast | FRR ≤ 5 % | \(rate(fast.refused, fast.n)) | \(fast.ruleText) |")
    print("| other people who know the symbol (their own layout) | FAR ≤ 20 % | \(rate(othersAccepted, othersTried)) |  |")
    print("| enrollment: tries refused; never enrolled | every owner within 5 tries | \(rate(refusedTries, tries)); \(never) of \(never + enrolledOwners) never |  |")
    print("")
}

// MARK: The hand's variation: how parts drawn as one gesture sit relative to each other

func multistrokeVariation(_ set: [String: MultistrokeDrawer], pixelsPerUnit: Double) {
    print("### MMG: the hand's variation (medium speed; picture pixels at 1×, 10 px = 1 % of the longest side)")
    print("")
    print("| drawn with | size (RMS radius of a part, median) | the symbol's centre on the blank screen, per axis | a part against the symbol's centre, per axis | rotation σ | scale σ | point noise after alignment, per axis | strokes drawn the other way round | the usual number of strokes | first 3 vs later 7: a part against the symbol's centre | shape: 3 vs 7 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    let symbols = multistrokeSymbols(set, pixelsPerUnit: pixelsPerUnit)
    for device in ["finger", "stylus"] {
        var sizes: [Double] = [], wholes: [Double] = [], own: [Double] = [], angles: [Double] = [], scales: [Double] = [], residuals: [Double] = []
        var usual = 0, all = 0, reversed = 0, strokesSeen = 0
        var ownFirst: [Double] = [], ownLater: [Double] = [], shapeFirst: [Double] = [], shapeLater: [Double] = []
        for (_, drawer) in set.sorted(by: { $0.key < $1.key }) where drawer.device == device {
            for symbol in symbols {
                guard let reps = drawer.drawings["medium"]?[symbol], reps.count >= 4 else { continue }
                var counts: [Int: Int] = [:]
                for rep in reps { counts[rep.strokes.count, default: 0] += 1 }
                guard let modal = counts.max(by: { $0.value < $1.value })?.key else { continue }
                usual += counts[modal] ?? 0
                all += reps.count
                // Only repetitions with the usual stroke count have comparable parts; in order.
                let same = reps.filter { $0.strokes.count == modal }
                guard same.count >= 4 else { continue }
                let centres = same.map { centroid($0.strokes.map(pathCentroid)) }
                let mc = centroid(centres)
                for c in centres { wholes += [(c.x - mc.x) * pixelsPerUnit, (c.y - mc.y) * pixelsPerUnit] }
                let offsets = same.map(strokeOffsets)
                for part in 0..<modal {
                    let mine = offsets.map { $0[part] }, m = centroid(mine), m3 = centroid(Array(mine.prefix(3)))
                    for o in mine { own += [(o.x - m.x) * pixelsPerUnit, (o.y - m.y) * pixelsPerUnit] }
                    for (index, o) in mine.enumerated() {
                        let d = [(o.x - m3.x) * pixelsPerUnit, (o.y - m3.y) * pixelsPerUnit]
                        if index < 3 { ownFirst += d } else { ownLater += d }
                    }
                    let shapes = same.map { resampled($0.strokes[part], 32).map { Point(x: $0.x * pixelsPerUnit, y: $0.y * pixelsPerUnit) } }
                    let average = meanShape(shapes), three = meanShape(Array(shapes.prefix(3)))
                    sizes.append(rms(average.map { hypot($0.x, $0.y) }))
                    var logs: [Double] = []
                    for shape in shapes {
                        let fit = similarity(shape, to: average)
                        strokesSeen += 1
                        // A stroke drawn the other way round aligns at about 180°: counted, not a rotation.
                        guard abs(fit.angle) <= Double.pi / 2 else {
                            reversed += 1
                            continue
                        }
                        angles.append(fit.angle * 180 / Double.pi)
                        logs.append(fit.logScale)
                        residuals.append(fit.residual)
                    }
                    let ml = mean(logs)
                    scales += logs.map { $0 - ml }
                    for (index, shape) in shapes.enumerated() {
                        if index < 3 { shapeFirst.append(shapeDistance(shape, three)) } else { shapeLater.append(shapeDistance(shape, three)) }
                    }
                }
            }
        }
        print("| \(device) | \(fmt(median(sizes))) px | \(fmt(rms(wholes))) px | \(fmt(rms(own))) px | \(fmt(rms(angles)))° | \(fmt(100 * rms(scales))) % | \(fmt(rms(residuals))) px | \(fmt(100 * Double(reversed) / Double(max(1, strokesSeen)))) % | \(fmt(100 * Double(usual) / Double(max(1, all)))) % of drawings | \(fmt(rms(ownFirst))) vs \(fmt(rms(ownLater))) px | \(fmt(rms(shapeFirst))) vs \(fmt(rms(shapeLater))) px |")
    }
    print("")
}

/// `--mmg DIRECTORY`: the variation table, then the goal rows for finger, stylus, each layout.
func runMultistrokes(_ directory: String, people: Int) {
    let set = loadedOrExit(MMG.load(directory), people: people)
    let drawings = set.values.reduce(0) { $0 + $1.drawings.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } } }
    guard drawings > 0 else {
        complain("gesture-eval: no MMG drawings (<symbol>/<person>-<finger|stylus>-<speed>-<symbol>-<NN>.csv) under \(directory)\n")
        exit(2)
    }
    let pixelsPerUnit = multistrokeScale(set)
    let fingers = set.values.filter { $0.device == "finger" }.count
    print("## Real drawings: MMG multistroke symbols (\(set.count) people, \(fingers) with a finger; \(drawings) drawings)")
    print("")
    print("Mapping: each stroke of a symbol is a part; the symbols used (three strokes or more, each long enough for the enroller): \(multistrokeSymbols(set, pixelsPerUnit: pixelsPerUnit).joined(separator: ", ")); 1× = \(fmt(100 * pixelsPerUnit)) picture px per 100 device px.")
    print("")
    multistrokeVariation(set, pixelsPerUnit: pixelsPerUnit)
    for layout in [MultistrokeLayout.meanLayout, .asDrawn(shift: 0), .asDrawn(shift: 0.01)] {
        for device in ["finger", "stylus"] {
            multistrokeEvaluation(set, device: device, pixelsPerUnit: pixelsPerUnit, layout: layout, seed: baseSeed)
        }
    }
}
