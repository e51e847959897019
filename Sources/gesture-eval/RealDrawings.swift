// `gesture-eval --dollar1 DIRECTORY` (scripts/gesture-real.sh): real drawings as the ground
// truth. The $1 unistroke logs (Wobbrock, Wilson and Li, UIST 2007: 10 people × 16 shapes ×
// 10 repetitions × 3 speeds, stylus on a 240 × 320 screen) are mapped to three-part gestures
// on a 1000 × 750 picture the way a person draws on a picture — each shape always on its own
// spot — and run through the real enroller (`GestureEnroller.next`, the steps `puff-enroll
// gesture` follows) and the real matcher (`GestureMatcher.verify`, what the module calls).
// It also measures the hand's variation that the simulator models (docs/gesture-format.md,
// "Real drawings").
import Glibc
import PuffCore
import PuffSimulation

/// One recorded stroke, in device pixels, with its times (ms).
struct RealStroke {
    var points: [Point]
    var times: [Double]
}

/// subject → speed → shape → the repetitions in their order (1…10).
typealias RealSet = [String: [String: [String: [RealStroke]]]]

enum Dollar1 {
    static let speeds = ["slow", "medium", "fast"]

    /// The names in a directory (no dot files).
    static func list(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = fread(&buffer, 1, buffer.count, file)
            if got <= 0 { break }
            bytes += buffer[0..<got]
        }
        return bytes
    }

    /// The `<Point X=".." Y=".." T=".."/>` elements of one log, in order.
    static func parse(_ bytes: [UInt8]) -> RealStroke {
        var stroke = RealStroke(points: [], times: [])
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(whereSeparator: \.isNewline) where line.contains("<Point ") {
            let words = line.split(separator: " ")
            func value(_ key: String) -> Double? {
                guard let word = words.first(where: { $0.hasPrefix(key + "=\"") }) else { return nil }
                return Double(word.dropFirst(key.count + 2).prefix { $0 != "\"" })
            }
            guard let x = value("X"), let y = value("Y"), let t = value("T") else { continue }
            stroke.points.append(Point(x: x, y: y))
            stroke.times.append(t)
        }
        return stroke
    }

    /// Everything under DIRECTORY/xml_logs (or DIRECTORY itself when it is that tree).
    static func load(_ directory: String) -> RealSet {
        var root = directory
        if list(root).contains("xml_logs") { root += "/xml_logs" }
        var set: RealSet = [:]
        for subject in list(root) where subject.hasPrefix("s") {
            for speed in speeds {
                let folder = root + "/" + subject + "/" + speed
                for file in list(folder) where file.hasSuffix(".xml") {
                    let base = String(file.dropLast(4))
                    let shape = String(base.dropLast(2))
                    guard let bytes = read(folder + "/" + file) else { continue }
                    let stroke = parse(bytes)
                    guard stroke.points.count >= 2 else { continue }
                    set[subject, default: [:]][speed, default: [:]][shape, default: []].append(stroke)
                }
            }
        }
        return set
    }
}

/// One decimal, no unit.
func fmt(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return (tenths < 0 ? "-" : "") + "\(abs(tenths) / 10).\(abs(tenths) % 10)"
}

// MARK: Geometry of one stroke

/// `points` resampled to `n` points evenly spaced along their length.
func resampled(_ points: [Point], _ n: Int) -> [Point] {
    var length = 0.0
    for (a, b) in zip(points, points.dropFirst()) { length += hypot(b.x - a.x, b.y - a.y) }
    guard length > 0, let first = points.first else { return Array(repeating: points.first ?? Point(x: 0, y: 0), count: n) }
    let step = length / Double(n - 1)
    var result = [first]
    var carried = 0.0
    var previous = first
    var index = 1
    while index < points.count {
        let next = points[index]
        let d = hypot(next.x - previous.x, next.y - previous.y)
        if carried + d >= step && d > 0 {
            let t = (step - carried) / d
            let q = Point(x: previous.x + t * (next.x - previous.x), y: previous.y + t * (next.y - previous.y))
            result.append(q)
            previous = q
            carried = 0
        } else {
            carried += d
            previous = next
            index += 1
        }
        if result.count == n { break }
    }
    while result.count < n { result.append(points[points.count - 1]) }
    return result
}

func centroid(_ points: [Point]) -> Point {
    let n = Double(points.count)
    return Point(x: points.reduce(0) { $0 + $1.x } / n, y: points.reduce(0) { $0 + $1.y } / n)
}

/// The centroid along the stroke's length (as the matcher's resampling sees it).
func pathCentroid(_ points: [Point]) -> Point { centroid(resampled(points, 64)) }

// MARK: Mapping to a picture

/// Where each part of a gesture is aimed (1000 × 750 picture): three objects of a picture.
let realSpots = [Point(x: 250, y: 230), Point(x: 730, y: 250), Point(x: 470, y: 560)]

/// How a drawing is put on its spot.
enum Aim: CustomStringConvertible {
    /// Each part's centroid exactly on its spot (the hand gives only shape, size, direction, speed).
    case exact
    /// The drawer's own placement scatter on the blank device screen, scaled like the stroke:
    /// its centroid's offset from the mean of that person's 10 repetitions of that shape.
    case recorded
    /// Each part off its spot by a Gaussian of this σ per axis (fraction of the longest side),
    /// on its own.
    case gaussian(Double)

    var description: String {
        switch self {
        case .exact: "centroid on the spot"
        case .recorded: "own blank-screen scatter"
        case .gaussian(let sigma): "aim σ \(fmt(100 * sigma)) % per part"
        }
    }
}

struct RealPlacement {
    var scale: Double
    var aim: Aim
}

/// One drawing of a three-part gesture: repetition `rep` of each shape, at `speed`.
func realGesture(_ data: [String: [RealStroke]], shapes: [String], rep: Int, placement: RealPlacement,
                 random: inout Random) -> Gesture? {
    var parts: [GesturePart] = []
    for (index, shape) in shapes.enumerated() {
        guard let reps = data[shape], rep < reps.count else { return nil }
        let stroke = reps[rep].points
        let own = pathCentroid(stroke)
        var offset = Point(x: 0, y: 0)
        switch placement.aim {
        case .exact: break
        case .recorded:
            let mean = centroid(reps.map { pathCentroid($0.points) })
            offset = Point(x: (own.x - mean.x) * placement.scale, y: (own.y - mean.y) * placement.scale)
        case .gaussian(let sigma):
            offset = Point(x: random.gaussian(sigma * longestSide), y: random.gaussian(sigma * longestSide))
        }
        let spot = realSpots[index]
        let points = stroke.map { p in
            let q = Shapes.clamp(Point(x: spot.x + offset.x + (p.x - own.x) * placement.scale,
                                       y: spot.y + offset.y + (p.y - own.y) * placement.scale))
            return GesturePoint(x: (q.x * 1000).rounded() / 1000, y: (q.y * 1000).rounded() / 1000)
        }
        var kept: [GesturePoint] = []
        for point in points where kept.last != point { kept.append(point) }
        if kept.count < 2 { kept.append(kept[0]) }
        parts.append(GesturePart(kind: .path, points: kept))
    }
    return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
}

/// The gestures each person draws: the 16 shapes in alphabetical order, three at a time
/// (the sixth wraps round to the first two).
func realTriples(_ shapes: [String]) -> [[String]] {
    (0..<6).map { g in (0..<3).map { shapes[(3 * g + $0) % shapes.count] } }
}

// MARK: The evaluation

/// A binomial proportion's 95 % Wilson interval, in percent.
func wilson(_ k: Int, _ n: Int) -> (Double, Double) {
    guard n > 0 else { return (0, 100) }
    let z = 1.959964, p = Double(k) / Double(n), nn = Double(n)
    let centre = (p + z * z / (2 * nn)) / (1 + z * z / nn)
    let half = z * ((p * (1 - p) / nn + z * z / (4 * nn * nn)).squareRoot()) / (1 + z * z / nn)
    return (100 * max(0, centre - half), 100 * min(1, centre + half))
}

func rate(_ k: Int, _ n: Int) -> String {
    let (low, high) = wilson(k, n)
    return "\(fmt(n == 0 ? 0 : 100 * Double(k) / Double(n))) % (\(k)/\(n); \(fmt(low))–\(fmt(high)))"
}

struct RealCount {
    var n = 0
    var refused = 0
    var rules: [String: Int] = [:]

    mutating func add(_ result: GestureMatchResult) {
        n += 1
        if !result.passed {
            refused += 1
            // A failure before the parts are compared (their count, the size) has no rule.
            let rule = result.detail.map { $0.rule.rawValue } ?? result.failure.map { String(describing: $0) } ?? "refused"
            rules[rule, default: 0] += 1
        }
    }

    mutating func merge(_ other: RealCount) {
        n += other.n
        refused += other.refused
        for (key, value) in other.rules { rules[key, default: 0] += value }
    }

    var ruleText: String {
        // Ties in name order, so two runs print the same line.
        rules.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            .joined(separator: ", ")
    }
}

/// Enrolls from drawings taken in order from `next`, as `puff-enroll` does: define, confirm,
/// once more (and one more when those disagree); a refused try starts again with the next
/// drawings, up to `maximumTries` tries or until `next` runs out. Every real set uses it.
func enrollInOrder(_ next: () -> Gesture?) -> (template: GestureTemplate?, tries: Int, refused: Int, drawings: [Gesture]) {
    var tries = 0, refused = 0
    while tries < maximumTries, let first = next() {
        tries += 1
        var drawings = [first]
        while true {
            let step: GestureEnrollmentStep
            do {
                step = try GestureEnroller.next(after: drawings, settings: .standard)
            } catch {
                refused += 1
                break
            }
            if case .done(let template) = step { return (template, tries, refused, drawings) }
            guard let more = next() else { return (nil, tries, refused, []) }
            drawings.append(more)
        }
    }
    return (nil, tries, refused, [])
}

/// Enrolls a person's gesture from their repetitions in order (`enrollInOrder`); returns the
/// template and the index of the first repetition not used.
func realEnroll(_ data: [String: [RealStroke]], shapes: [String], placement: RealPlacement,
                random: inout Random, capture: (Gesture) -> Gesture = { $0 })
    -> (template: GestureTemplate?, next: Int, tries: Int, refused: Int, drawings: [Gesture]) {
    var rep = 0
    let enrolled = enrollInOrder {
        defer { rep += 1 }
        return realGesture(data, shapes: shapes, rep: rep, placement: placement, random: &random).map(capture)
    }
    return (enrolled.template, rep, enrolled.tries, enrolled.refused, enrolled.drawings)
}

/// For the libpam replay (scripts/gesture-real.sh): for each person's first gesture, at the
/// first placement, `r<N>.enroll` (the drawings the enroller took, one a line, as `puff-enroll
/// gesture --stdin` reads them) and `r<N>.attempts` ("pass <wire>" or "fail <wire>": this
/// process's verdict after the wire round trip): the later repetitions (with pixels and through
/// puff-pad's cells), five slow and five fast ones, and two repetitions of each other person.
func writeRealWire(_ set: RealSet, placement: RealPlacement, to directory: String) {
    var random = Random(seed: baseSeed &+ 4242)
    let subjects = set.keys.sorted()
    let shapes = (set[subjects.first ?? ""]?["medium"]?.keys.sorted()) ?? []
    guard let triple = realTriples(shapes).first else { return }
    var summary = 0
    for (index, subject) in subjects.enumerated() {
        guard let medium = set[subject]?["medium"] else { continue }
        let enrolled = realEnroll(medium, shapes: triple, placement: placement, random: &random)
        guard enrolled.template != nil else { continue }
        let lines = enrolled.drawings.map(wire)
        guard let parsed = try? lines.map({ line throws(GestureFormatError) in try GestureWire.parse(Array(line.utf8)) }),
              var template = try? GestureEnroller.build(drawings: parsed) else { continue }
        writeFile("\(directory)/r\(index).enroll", lines.joined(separator: "\n") + "\n")
        var attempts: [Gesture] = []
        for rep in enrolled.next..<10 {
            if let g = realGesture(medium, shapes: triple, rep: rep, placement: placement, random: &random) { attempts.append(g) }
        }
        // The same later repetitions sent through puff-pad's cells (declared), as SSH users do.
        for attempt in attempts.prefix(10 - enrolled.next) { attempts.append(throughPad(attempt)) }
        for speed in ["slow", "fast"] {
            for rep in 0..<5 {
                if let data = set[subject]?[speed], let g = realGesture(data, shapes: triple, rep: rep, placement: placement, random: &random) {
                    attempts.append(g)
                }
            }
        }
        for other in subjects where other != subject {
            for rep in 0..<2 {
                if let data = set[other]?["medium"], let g = realGesture(data, shapes: triple, rep: rep, placement: placement, random: &random) {
                    attempts.append(g)
                }
            }
        }
        var text = ""
        for attempt in attempts {
            guard let entry = replayLine(attempt, against: &template) else { continue }
            text += entry
            summary += 1
        }
        writeFile("\(directory)/r\(index).attempts", text)
    }
    print("wrote \(summary) attempts of real drawings for the libpam replay to \(directory)")
}

/// The goal rows of issue 35 on the real drawings, for one placement.
func realEvaluation(_ set: RealSet, placement: RealPlacement, seed: UInt64) {
    var random = Random(seed: seed)
    let subjects = set.keys.sorted()
    let shapes = (set[subjects.first ?? ""]?["medium"]?.keys.sorted()) ?? []
    let triples = realTriples(shapes)
    var later = RealCount(), slow = RealCount(), fast = RealCount(), padLogin = RealCount(), padEnrolled = RealCount()
    var padNever = 0
    var othersTried = 0, othersAccepted = 0
    var perPerson: [(String, RealCount)] = []
    var owners = 0, never = 0, tries = 0, refusedTries = 0, mostTries = 0
    for subject in subjects {
        guard let medium = set[subject]?["medium"] else { continue }
        var mine = RealCount()
        for triple in triples {
            let enrolled = realEnroll(medium, shapes: triple, placement: placement, random: &random)
            owners += 1
            tries += enrolled.tries
            refusedTries += enrolled.refused
            mostTries = max(mostTries, enrolled.tries)
            guard let template = enrolled.template else {
                never += 1
                continue
            }
            // Later repetitions at the enrollment's speed.
            for rep in enrolled.next..<10 {
                guard let attempt = realGesture(medium, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                let result = GestureMatcher.verify(template, attempt)
                mine.add(result)
            }
            // The same later repetitions sent through puff-pad in a 100×30 terminal (declared
            // cells), drawn from a stream of their own so the other rows stay paired across versions.
            var padRandom = Random(seed: seed &+ 77 &+ UInt64(owners))
            for rep in enrolled.next..<10 {
                guard let attempt = realGesture(medium, shapes: triple, rep: rep, placement: placement, random: &padRandom) else { continue }
                padLogin.add(GestureMatcher.verify(template, throughPad(attempt)))
            }
            // Enrolled through puff-pad, the later repetitions with pixels.
            let throughPadEnrolled = realEnroll(medium, shapes: triple, placement: placement, random: &padRandom, capture: { throughPad($0) })
            if let padTemplate = throughPadEnrolled.template {
                for rep in throughPadEnrolled.next..<10 {
                    guard let attempt = realGesture(medium, shapes: triple, rep: rep, placement: placement, random: &padRandom) else { continue }
                    padEnrolled.add(GestureMatcher.verify(padTemplate, attempt))
                }
            } else {
                padNever += 1
            }
            // Another speed (its own block of ten).
            for (speed, count) in [("slow", 0), ("fast", 1)] {
                guard let data = set[subject]?[speed] else { continue }
                for rep in 0..<10 {
                    guard let attempt = realGesture(data, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                    let result = GestureMatcher.verify(template, attempt)
                    if count == 0 { slow.add(result) } else { fast.add(result) }
                }
            }
            // Other people who know the shapes and the spots, at the same speed.
            for other in subjects where other != subject {
                guard let theirs = set[other]?["medium"] else { continue }
                for rep in 0..<10 {
                    guard let attempt = realGesture(theirs, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                    let result = GestureMatcher.verify(template, attempt)
                    othersTried += 1
                    if result.passed { othersAccepted += 1 }
                }
            }
        }
        later.merge(mine)
        perPerson.append((subject, mine))
    }
    let rates = perPerson.map { $0.1.n == 0 ? 100 : 100 * Double($0.1.refused) / Double($0.1.n) }.sorted()
    func quantile(_ q: Double) -> Double {
        guard !rates.isEmpty else { return 0 }
        let position = q * Double(rates.count - 1)
        let low = Int(position.rounded(.down)), high = min(rates.count - 1, low + 1)
        return rates[low] + (rates[high] - rates[low]) * (position - Double(low))
    }
    print("### \(placement.aim), drawn \(fmt(placement.scale))× the device size")
    print("")
    print("| row | goal | measured (n; 95 % Wilson interval) | refusals by rule |")
    print("|---|---|---|---|")
    print("| later repetitions, same speed (medium) | FRR ≤ 2 % median person | \(rate(later.refused, later.n)) | \(later.ruleText) |")
    print("| per person (FRR, sorted) | median ≤ 2 %, 75th percentile ≤ 10 % | median \(fmt(quantile(0.5))) %, 75th percentile \(fmt(quantile(0.75))) %, worst \(fmt(rates.last ?? 0)) % | "
          + perPerson.map { "\($0.0) \($0.1.refused)/\($0.1.n)" }.joined(separator: ", ") + " |")
    print("| enrolled medium, drawn slow (10 reps) | FRR ≤ 5 % | \(rate(slow.refused, slow.n)) | \(slow.ruleText) |")
    print("| enrolled medium, drawn fast (10 reps) | FRR ≤ 5 % | \(rate(fast.refused, fast.n)) | \(fast.ruleText) |")
    print("| later repetitions through puff-pad, 100×30 terminal (enrolled with pixels) | FRR ≤ 5 % | \(rate(padLogin.refused, padLogin.n)) | \(padLogin.ruleText) |")
    print("| enrolled through puff-pad, later repetitions with pixels | FRR ≤ 2 % | \(rate(padEnrolled.refused, padEnrolled.n)) | \(padEnrolled.ruleText); \(padNever) never enrolled through the pad |")
    print("| other people who know the shapes and spots | FAR ≤ 20 % | \(rate(othersAccepted, othersTried)) |  |")
    print("| enrollment: tries refused; owners never enrolled in 5 tries | every owner within 5 | \(rate(refusedTries, tries)); \(never) of \(owners) never; most tries \(mostTries) |  |")
    print("")
}

// MARK: The hand's variation (the simulator's parameters)

/// Aligns `points` to `reference` (both resampled, same count) by a rotation and a scale
/// about their centroids; the angle (radians), the log of the scale, and the RMS residual per
/// axis after the alignment.
func similarity(_ points: [Point], to reference: [Point]) -> (angle: Double, logScale: Double, residual: Double) {
    let a = centroid(points), b = centroid(reference)
    var sxx = 0.0, sxy = 0.0, norm = 0.0, refNorm = 0.0
    for (p, q) in zip(points, reference) {
        let px = p.x - a.x, py = p.y - a.y, qx = q.x - b.x, qy = q.y - b.y
        sxx += px * qx + py * qy
        sxy += px * qy - py * qx
        norm += px * px + py * py
        refNorm += qx * qx + qy * qy
    }
    let angle = atan2(sxy, sxx)
    let scale = norm > 0 ? (sxx * cos(angle) + sxy * sin(angle)) / norm : 1
    var residual = 0.0
    for (p, q) in zip(points, reference) {
        let px = (p.x - a.x) * scale, py = (p.y - a.y) * scale
        let rx = px * cos(angle) - py * sin(angle), ry = px * sin(angle) + py * cos(angle)
        residual += (rx - (q.x - b.x)) * (rx - (q.x - b.x)) + (ry - (q.y - b.y)) * (ry - (q.y - b.y))
    }
    return (angle, log(max(scale, 1e-9)), (residual / Double(2 * points.count)).squareRoot())
}

func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
/// √(mean of squares): pooled standard deviations.
func rms(_ values: [Double]) -> Double { mean(values.map { $0 * $0 }).squareRoot() }

/// The variation of each person's repetitions of one shape at one speed, pooled, in device
/// pixels (×scale / 10 = % of a 1000 px picture's side).
func realVariation(_ set: RealSet) {
    print("### The hand's variation (device pixels; at 1× on a 1000 px picture, 10 px = 1 % of the longest side)")
    print("")
    print("| speed | size (RMS radius, median) | aim scatter of the centroid, per axis | rotation σ | scale σ | point noise after alignment, per axis | start/end off, per axis | points a stroke (median) | duration (median) | first 3 vs later 7: centroid off the first three's mean, per axis | shape: RMS to the first three's mean, 3 vs 7 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    var between: [String] = []
    for speed in Dollar1.speeds {
        var sizes: [Double] = [], aims: [Double] = [], angles: [Double] = [], scales: [Double] = [], residuals: [Double] = []
        var ends: [Double] = [], counts: [Double] = [], durations: [Double] = []
        var firstAim: [Double] = [], laterAim: [Double] = [], firstShape: [Double] = [], laterShape: [Double] = []
        for subject in set.keys.sorted() {
            for (_, reps) in (set[subject]?[speed] ?? [:]).sorted(by: { $0.key < $1.key }) where reps.count >= 4 {
                let sampled = reps.map { resampled($0.points, 32) }
                let centres = sampled.map(centroid)
                let mc = centroid(centres)
                for c in centres { aims += [c.x - mc.x, c.y - mc.y] }
                // The mean shape (centred), then each repetition aligned to it.
                var meanShape = [Point](repeating: Point(x: 0, y: 0), count: 32)
                for (shape, c) in zip(sampled, centres) {
                    for i in 0..<32 {
                        meanShape[i].x += (shape[i].x - c.x) / Double(sampled.count)
                        meanShape[i].y += (shape[i].y - c.y) / Double(sampled.count)
                    }
                }
                sizes.append(rms(meanShape.map { hypot($0.x, $0.y) }))
                var logs: [Double] = []
                for shape in sampled {
                    let fit = similarity(shape, to: meanShape)
                    angles.append(fit.angle * 180 / Double.pi)
                    logs.append(fit.logScale)
                    residuals.append(fit.residual)
                }
                let ml = mean(logs)
                scales += logs.map { $0 - ml }
                for index in [0, 31] {
                    let mx = mean(zip(sampled, centres).map { $0[index].x - $1.x }), my = mean(zip(sampled, centres).map { $0[index].y - $1.y })
                    for (shape, c) in zip(sampled, centres) { ends += [shape[index].x - c.x - mx, shape[index].y - c.y - my] }
                }
                counts += reps.map { Double($0.points.count) }
                durations += reps.map { ($0.times.last ?? 0) - ($0.times.first ?? 0) }
                // What three consecutive drawings tell of the later seven.
                let three = Array(sampled.prefix(3)), threeCentres = Array(centres.prefix(3))
                let m3 = centroid(threeCentres)
                var shape3 = [Point](repeating: Point(x: 0, y: 0), count: 32)
                for (shape, c) in zip(three, threeCentres) {
                    for i in 0..<32 {
                        shape3[i].x += (shape[i].x - c.x) / 3
                        shape3[i].y += (shape[i].y - c.y) / 3
                    }
                }
                for (index, (shape, c)) in zip(sampled, centres).enumerated() {
                    var d = 0.0
                    for i in 0..<32 {
                        let dx = shape[i].x - c.x - shape3[i].x, dy = shape[i].y - c.y - shape3[i].y
                        d += dx * dx + dy * dy
                    }
                    let shapeRMS = (d / 64).squareRoot()
                    if index < 3 {
                        firstAim += [c.x - m3.x, c.y - m3.y]
                        firstShape.append(shapeRMS)
                    } else {
                        laterAim += [c.x - m3.x, c.y - m3.y]
                        laterShape.append(shapeRMS)
                    }
                }
            }
        }
        // Between people: each person's mean shape against the mean over people, per shape.
        var shapes: [String: [[Point]]] = [:]
        for subject in set.keys.sorted() {
            for (shape, reps) in (set[subject]?[speed] ?? [:]) where !reps.isEmpty {
                var mean = [Point](repeating: Point(x: 0, y: 0), count: 32)
                for rep in reps {
                    let r = resampled(rep.points, 32), c = centroid(r)
                    for i in 0..<32 {
                        mean[i].x += (r[i].x - c.x) / Double(reps.count)
                        mean[i].y += (r[i].y - c.y) / Double(reps.count)
                    }
                }
                shapes[shape, default: []].append(mean)
            }
        }
        var betweenAngles: [Double] = [], betweenLogs: [Double] = [], betweenResiduals: [Double] = [], betweenShape: [Double] = []
        for (_, people) in shapes where people.count > 1 {
            var overall = [Point](repeating: Point(x: 0, y: 0), count: 32)
            for person in people {
                for i in 0..<32 {
                    overall[i].x += person[i].x / Double(people.count)
                    overall[i].y += person[i].y / Double(people.count)
                }
            }
            var logs: [Double] = []
            for person in people {
                let fit = similarity(person, to: overall)
                betweenAngles.append(fit.angle * 180 / Double.pi)
                logs.append(fit.logScale)
                betweenResiduals.append(fit.residual)
                var d = 0.0
                for i in 0..<32 { d += (person[i].x - overall[i].x) * (person[i].x - overall[i].x) + (person[i].y - overall[i].y) * (person[i].y - overall[i].y) }
                betweenShape.append((d / 64).squareRoot())
            }
            let ml = mean(logs)
            betweenLogs += logs.map { $0 - ml }
        }
        between.append("| \(speed) | \(fmt(rms(betweenAngles)))° | \(fmt(100 * rms(betweenLogs))) % | \(fmt(rms(betweenResiduals))) px | \(fmt(rms(betweenShape))) px |")
        print("| \(speed) | \(fmt(median(sizes))) px | \(fmt(rms(aims))) px | \(fmt(rms(angles)))° | \(fmt(100 * rms(scales))) % | \(fmt(rms(residuals))) px | \(fmt(rms(ends))) px | \(fmt(median(counts))) | \(fmt(median(durations))) ms | \(fmt(rms(firstAim))) vs \(fmt(rms(laterAim))) px | \(fmt(rms(firstShape))) vs \(fmt(rms(laterShape))) px |")
    }
    print("")
    print("Between people (each person's mean shape against the mean of all ten, per shape):")
    print("")
    print("| speed | rotation σ | scale σ | residual after alignment, per axis | RMS after the centroid only, per axis |")
    print("|---|---|---|---|---|")
    for line in between { print(line) }
    print("")
}

/// `--dollar1 DIRECTORY`: the variation table, then the goal rows for each placement.
func runRealDrawings(_ directory: String, scales: [Double], aims: [Aim] = [.exact, .recorded, .gaussian(0.004), .gaussian(0.008)],
                     variation: Bool = true, people: Int = 0, wireDirectory: String? = nil) {
    var set = Dollar1.load(directory)
    if people > 0 {
        for subject in set.keys.sorted().dropFirst(people) { set[subject] = nil }
    }
    let strokes = set.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } } }
    guard strokes > 0 else {
        complain("gesture-eval: no $1 logs under \(directory)\n")
        exit(2)
    }
    print("## Real drawings: the $1 unistroke logs (\(set.count) people, \(strokes) strokes)")
    print("")
    if let wireDirectory, let scale = scales.first, let aim = aims.first {
        writeRealWire(set, placement: RealPlacement(scale: scale, aim: aim), to: wireDirectory)
        return
    }
    if variation { realVariation(set) }
    for scale in scales {
        for aim in aims {
            realEvaluation(set, placement: RealPlacement(scale: scale, aim: aim), seed: baseSeed)
        }
    }
}
