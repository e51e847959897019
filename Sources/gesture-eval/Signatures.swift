// `gesture-eval --svc2004 DIRECTORY` (scripts/gesture-real.sh): signatures written in two
// sessions at least a week apart, with skilled forgeries, as the ground truth for tomorrow's hand
// (issue 35). The SVC2004 sets (Yeung et al., ICBA 2004: 40 people × 20 genuine signatures,
// 1–10 in a first session and 11–20 in a second, + 20 skilled forgeries each, by people who
// had watched the writing replayed) are mapped to three-part gestures on the 1000 × 750 picture
// — each third of a signature's pen-down path always on its own spot — and run through the real
// enroller and matcher, like the $1 logs in RealDrawings.swift (docs/gesture-format.md,
// "Real drawings").
import Glibc
import PuffCore
import PuffSimulation

/// One signature as the tablet recorded it: points in tablet units, times in ms, and the index
/// of each pen-down stroke's first point.
struct TabletSignature {
    var points: [Point]
    var times: [Double]
    var strokeStarts: Set<Int>
}

/// person → signature number (1–10 first session, 11–20 second session, 21–40 skilled
/// forgeries of that person's signature) → the signature.
typealias SignatureSet = [Int: [Int: TabletSignature]]

/// Why a file of the set could not be used, in words.
/// The set a loader read, cut to its first `people` people in key order (all when 0); the
/// process ends with status 2, saying why, when it could not be read.
func loadedOrExit<Key: Comparable, Value>(_ result: Result<[Key: Value], SignatureFileError>, people: Int) -> [Key: Value] {
    switch result {
    case .success(var set):
        if people > 0 {
            for key in set.keys.sorted().dropFirst(people) { set[key] = nil }
        }
        return set
    case .failure(let error):
        complain("gesture-eval: \(error.reason)\n")
        exit(2)
    }
}

struct SignatureFileError: Error {
    var reason: String
}

enum SVC2004 {
    /// Genuine signatures of the first session, of the second, and the skilled forgeries.
    static let firstSession = Array(1...10)
    static let secondSession = Array(11...20)
    static let forgeries = Array(21...40)

    /// One file: a count N, then N rows of 4 (Task 1: X Y T button) or 7 (Task 2: X Y T button
    /// azimuth altitude pressure) integers. Button 0 marks the first point after the pen touched
    /// down again; the rest of a stroke is 1.
    static func parse(_ bytes: [UInt8]) -> Result<TabletSignature, SignatureFileError> {
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" || $0.isNewline })
        guard let first = words.first, let count = Int(first), count >= 4 else {
            return .failure(SignatureFileError(reason: "the first number (the count of points) is missing or below 4"))
        }
        let values = words.dropFirst().map { Double($0) }
        guard values.allSatisfy({ $0 != nil }) else { return .failure(SignatureFileError(reason: "a value is not a number")) }
        guard values.count == count * 4 || values.count == count * 7 else {
            return .failure(SignatureFileError(reason: "\(values.count) values for \(count) points (4 or 7 a point expected)"))
        }
        let columns = values.count / count
        var signature = TabletSignature(points: [], times: [], strokeStarts: [0])
        for row in 0..<count {
            let x = values[row * columns] ?? 0, y = values[row * columns + 1] ?? 0
            signature.points.append(Point(x: x, y: y))
            signature.times.append(values[row * columns + 2] ?? 0)
            if values[row * columns + 3] == 0 { signature.strokeStarts.insert(row) }
        }
        return .success(signature)
    }

    /// Every `U<person>S<number>.TXT` under DIRECTORY (or its Task2 or Task1 folder).
    static func load(_ directory: String) -> Result<SignatureSet, SignatureFileError> {
        var root = directory
        for task in ["Task2", "Task1"] where Dollar1.list(root).contains(task) {
            root += "/" + task
            break
        }
        var set: SignatureSet = [:]
        for file in Dollar1.list(root) {
            let upper = file.uppercased()
            guard upper.hasPrefix("U"), upper.hasSuffix(".TXT") else { continue }
            let name = upper.dropFirst().dropLast(4).split(separator: "S")
            guard name.count == 2, let person = Int(name[0]), let number = Int(name[1]), (1...40).contains(number) else { continue }
            guard let bytes = Dollar1.read(root + "/" + file) else { return .failure(SignatureFileError(reason: "\(root)/\(file): cannot be read")) }
            switch parse(bytes) {
            case .success(let signature): set[person, default: [:]][number] = signature
            case .failure(let error): return .failure(SignatureFileError(reason: "\(root)/\(file): \(error.reason)"))
            }
        }
        return .success(set)
    }
}

// MARK: A signature as a three-part gesture

/// Where the signature's pen-down path is cut into three parts of equal length, in writing
/// order, each one part of the gesture. Pen-up travel counts for no length, but a part that
/// spans a pen-up keeps it as a straight line (a part is one stroke).
func signatureCuts(_ signature: TabletSignature) -> [ClosedRange<Int>] {
    let points = signature.points
    var along = [0.0]
    for index in points.indices.dropFirst() {
        let step = signature.strokeStarts.contains(index) ? 0 : hypot(points[index].x - points[index - 1].x,
                                                                         points[index].y - points[index - 1].y)
        along.append(along[index - 1] + step)
    }
    let total = along.last ?? 0, last = points.count - 1
    let first = min(max(along.firstIndex { $0 >= total / 3 } ?? 1, 1), last - 2)
    let second = min(max(along.firstIndex { $0 >= 2 * total / 3 } ?? 2, first + 1), last - 1)
    return [0...first, first...second, second...last]
}

/// The three parts' points (tablet units).
func signatureThirds(_ signature: TabletSignature) -> [[Point]] {
    signatureCuts(signature).map { Array(signature.points[$0]) }
}

/// A part's RMS distance from its centroid along its length.
func partRadius(_ points: [Point]) -> Double {
    let sampled = resampled(points, 32), c = centroid(sampled)
    return rms(sampled.map { hypot($0.x - c.x, $0.y - c.y) })
}

/// Picture pixels per tablet unit at 1×: the median part of the first session's genuine
/// signatures gets the RMS radius of the median $1 stroke drawn at medium speed (41 px, about
/// 4 % of the picture's side), so that both sets ask the same of the matcher's size-scaled rules.
let dollar1MedianRadius = 41.0
func signatureScale(_ set: SignatureSet) -> (pixelsPerUnit: Double, medianRadius: Double) {
    var radii: [Double] = []
    for (_, signatures) in set {
        for number in SVC2004.firstSession {
            if let signature = signatures[number] { radii += signatureThirds(signature).map(partRadius) }
        }
    }
    let radius = median(radii)
    return (radius > 0 ? dollar1MedianRadius / radius : 1, radius)
}

/// The three thirds of `signature` on the picture's spots, each scaled by `pixelsPerUnit` about
/// its own centroid and off its spot by the placement's aim error.
func signatureGesture(_ signature: TabletSignature, pixelsPerUnit: Double, placement: RealPlacement,
                      random: inout Random) -> Gesture {
    var parts: [GesturePart] = []
    for (index, stroke) in signatureThirds(signature).enumerated() {
        let own = pathCentroid(stroke)
        var offset = Point(x: 0, y: 0)
        if case .gaussian(let sigma) = placement.aim {
            offset = Point(x: random.gaussian(sigma * longestSide), y: random.gaussian(sigma * longestSide))
        }
        let spot = realSpots[index], scale = pixelsPerUnit * placement.scale
        var kept: [GesturePoint] = []
        for p in stroke {
            let q = Shapes.clamp(Point(x: spot.x + offset.x + (p.x - own.x) * scale, y: spot.y + offset.y + (p.y - own.y) * scale))
            let point = GesturePoint(x: (q.x * 1000).rounded() / 1000, y: (q.y * 1000).rounded() / 1000)
            if kept.last != point { kept.append(point) }
        }
        if kept.count == 1 { kept.append(kept[0]) }
        parts.append(GesturePart(kind: .path, points: kept))
    }
    return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
}

// MARK: The goal rows

/// Enrolls from the first session's signatures in order (`enrollInOrder`, until the session's
/// ten run out); returns the template and the first signature number not used.
func signatureEnroll(_ signatures: [Int: TabletSignature], pixelsPerUnit: Double, placement: RealPlacement,
                     random: inout Random) -> (template: GestureTemplate?, next: Int, tries: Int, refused: Int) {
    var number = 1
    let enrolled = enrollInOrder {
        guard number <= 10, let signature = signatures[number] else { return nil }
        number += 1
        return signatureGesture(signature, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random)
    }
    return (enrolled.template, number, enrolled.tries, enrolled.refused)
}

/// The median, 75th percentile and worst of per-person refusal rates (percent).
func spread(_ counts: [RealCount]) -> String {
    let rates = counts.filter { $0.n > 0 }.map { 100 * Double($0.refused) / Double($0.n) }.sorted()
    guard let worst = rates.last else { return "no one" }
    func quantile(_ q: Double) -> Double {
        let position = q * Double(rates.count - 1)
        let low = Int(position.rounded(.down)), high = min(rates.count - 1, low + 1)
        return rates[low] + (rates[high] - rates[low]) * (position - Double(low))
    }
    return "median \(fmt(quantile(0.5))) %, 75th percentile \(fmt(quantile(0.75))) %, worst \(fmt(worst)) %"
}

/// The goal rows of issue 35 on the signatures, for one placement.
func signatureEvaluation(_ set: SignatureSet, pixelsPerUnit: Double, placement: RealPlacement, seed: UInt64) {
    var random = Random(seed: seed)
    let people = set.keys.sorted()
    var later = RealCount(), second = RealCount(), forged = RealCount()
    var laterByPerson: [RealCount] = [], secondByPerson: [RealCount] = [], genuineByPerson: [RealCount] = []
    var othersTried = 0, othersAccepted = 0, forgedAccepted = 0
    var never = 0, tries = 0, refusedTries = 0, mostTries = 0
    for person in people {
        guard let signatures = set[person] else { continue }
        let enrolled = signatureEnroll(signatures, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random)
        tries += enrolled.tries
        refusedTries += enrolled.refused
        mostTries = max(mostTries, enrolled.tries)
        guard let template = enrolled.template else {
            never += 1
            continue
        }
        func attempt(_ number: Int, of owner: Int) -> GestureMatchResult? {
            guard let signature = set[owner]?[number] else { return nil }
            return GestureMatcher.verify(template, signatureGesture(signature, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random))
        }
        var mineLater = RealCount(), mineSecond = RealCount()
        for number in enrolled.next..<11 { if let result = attempt(number, of: person) { mineLater.add(result) } }
        for number in SVC2004.secondSession { if let result = attempt(number, of: person) { mineSecond.add(result) } }
        for number in SVC2004.forgeries {
            guard let result = attempt(number, of: person) else { continue }
            forged.add(result)
            if result.passed { forgedAccepted += 1 }
        }
        for other in people where other != person {
            for number in SVC2004.firstSession + SVC2004.secondSession {
                guard let result = attempt(number, of: other) else { continue }
                othersTried += 1
                if result.passed { othersAccepted += 1 }
            }
        }
        later.merge(mineLater)
        second.merge(mineSecond)
        laterByPerson.append(mineLater)
        secondByPerson.append(mineSecond)
        var both = mineLater
        both.merge(mineSecond)
        genuineByPerson.append(both)
    }
    print("### SVC2004: \(placement.aim), drawn \(fmt(placement.scale))×")
    print("")
    print("| row | goal | measured (n; 95 % Wilson interval) | refusals by rule |")
    print("|---|---|---|---|")
    print("| same session, later signatures | FRR ≤ 2 % median person | \(rate(later.refused, later.n)) | \(later.ruleText) |")
    print("| second session, a week or more later | FRR ≤ 5 % | \(rate(second.refused, second.n)) | \(second.ruleText) |")
    print("| per person, same session later | median ≤ 2 %, 75th percentile ≤ 10 % | \(spread(laterByPerson)) |  |")
    print("| per person, second session | | \(spread(secondByPerson)) |  |")
    print("| per person, all genuine after enrollment | median ≤ 2 %, 75th percentile ≤ 10 % | \(spread(genuineByPerson)) |  |")
    print("| skilled forgeries (watched the writing replayed) | FAR ≤ 20 % (video-studier) | \(rate(forgedAccepted, forged.n)) |  |")
    print("| other people's genuine signatures on the same spots | FAR (≤ 20 % for those who know shapes and spots) | \(rate(othersAccepted, othersTried)) |  |")
    print("| enrollment from the first session's ten (three tries at most): tries refused; never enrolled | every owner within 5 tries | \(rate(refusedTries, tries)); \(never) of \(people.count) never; most tries \(mostTries) |  |")
    print("")
}

/// For the libpam replay (scripts/gesture-real.sh): for each of the first ten people, at one
/// placement, `s<N>.enroll` (the drawings the enroller took, as `puff-enroll gesture --stdin`
/// reads them) and `s<N>.attempts` ("pass <wire>" or "fail <wire>": this process's verdict after
/// the wire round trip): the later signatures of the first session, the ten of the second, and
/// five skilled forgeries.
func writeSignatureWire(_ set: SignatureSet, pixelsPerUnit: Double, placement: RealPlacement, to directory: String) {
    var random = Random(seed: baseSeed &+ 2004)
    var summary = 0
    for person in set.keys.sorted().prefix(10) {
        guard let signatures = set[person] else { continue }
        var drawings: [Gesture] = []
        var number = 1, enrolled = false
        // The enroller's own steps on this person's first-session signatures, in order.
        while number <= 10, let signature = signatures[number] {
            drawings.append(signatureGesture(signature, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random))
            number += 1
            guard let step = try? GestureEnroller.next(after: drawings, settings: .standard) else {
                drawings = []
                continue
            }
            if case .done = step {
                enrolled = true
                break
            }
        }
        let lines = drawings.map(wire)
        guard enrolled,
              let parsed = try? lines.map({ line throws(GestureFormatError) in try GestureWire.parse(Array(line.utf8)) }),
              var template = try? GestureEnroller.build(drawings: parsed) else { continue }
        writeFile("\(directory)/s\(person).enroll", lines.joined(separator: "\n") + "\n")
        var text = ""
        for attempt in Array(number...20) + Array(SVC2004.forgeries.prefix(5)) {
            guard let signature = signatures[attempt] else { continue }
            let drawn = signatureGesture(signature, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random)
            guard let entry = replayLine(drawn, against: &template) else { continue }
            text += entry
            summary += 1
        }
        writeFile("\(directory)/s\(person).attempts", text)
    }
    print("wrote \(summary) attempts of SVC2004 signatures for the libpam replay to \(directory)")
}

// MARK: The hand's variation, and a week's drift

/// The parts of each signature resampled to 32 points, in picture pixels at 1×.
func sampledThirds(_ signature: TabletSignature, _ pixelsPerUnit: Double) -> [[Point]] {
    signatureThirds(signature).map { resampled($0, 32).map { Point(x: $0.x * pixelsPerUnit, y: $0.y * pixelsPerUnit) } }
}

/// The mean of centred shapes (same point count).
func meanShape(_ shapes: [[Point]]) -> [Point] {
    var average = [Point](repeating: Point(x: 0, y: 0), count: shapes.first?.count ?? 0)
    for shape in shapes {
        let c = centroid(shape)
        for i in average.indices {
            average[i].x += (shape[i].x - c.x) / Double(shapes.count)
            average[i].y += (shape[i].y - c.y) / Double(shapes.count)
        }
    }
    return average
}

/// RMS per axis between a shape (centred) and a centred reference.
func shapeDistance(_ shape: [Point], _ reference: [Point]) -> Double {
    let c = centroid(shape)
    var d = 0.0
    for (p, q) in zip(shape, reference) { d += (p.x - c.x - q.x) * (p.x - c.x - q.x) + (p.y - c.y - q.y) * (p.y - c.y - q.y) }
    return (d / Double(2 * max(1, shape.count))).squareRoot()
}

/// The variation table (first session) and what the first three signatures tell of the later
/// ones of the same session and of the second session, pooled over people and parts.
func signatureVariation(_ set: SignatureSet, pixelsPerUnit: Double) {
    var sizes: [Double] = [], aims: [Double] = [], ownAims: [Double] = [], shifts: [Double] = []
    var angles: [Double] = [], scales: [Double] = [], residuals: [Double] = [], counts: [Double] = [], durations: [Double] = []
    var session2Angles: [Double] = [], session2Scales: [Double] = []
    // Offsets from the first three's mean: [first three, later seven, second session, forgeries].
    var placed = [[Double]](repeating: [], count: 4), ownPlaced = [[Double]](repeating: [], count: 4)
    var shaped = [[Double]](repeating: [], count: 4)
    var tenShape: [Double] = []
    for person in set.keys.sorted() {
        guard let signatures = set[person] else { continue }
        let numbered = (1...40).compactMap { n in signatures[n].map { (n, sampledThirds($0, pixelsPerUnit)) } }
        let session1 = numbered.filter { $0.0 <= 10 }.map { $0.1 }
        guard session1.count >= 4 else { continue }
        let wholes = session1.map { centroid($0.flatMap { $0 }) }, meanWhole = centroid(wholes)
        for whole in wholes { shifts += [whole.x - meanWhole.x, whole.y - meanWhole.y] }
        for part in 0..<3 {
            let shapes = session1.map { $0[part] }
            let centres = shapes.map(centroid)
            let own = zip(centres, wholes).map { Point(x: $0.x - $1.x, y: $0.y - $1.y) }
            let mc = centroid(centres), mo = centroid(own)
            for c in centres { aims += [c.x - mc.x, c.y - mc.y] }
            for o in own { ownAims += [o.x - mo.x, o.y - mo.y] }
            let average = meanShape(shapes)
            sizes.append(rms(average.map { hypot($0.x, $0.y) }))
            var logs: [Double] = []
            for shape in shapes {
                let fit = similarity(shape, to: average)
                angles.append(fit.angle * 180 / Double.pi)
                logs.append(fit.logScale)
                residuals.append(fit.residual)
                tenShape.append(shapeDistance(shape, average))
            }
            let ml = mean(logs)
            scales += logs.map { $0 - ml }
            // The second session against the first session's mean shape: its rotation and scale.
            for (number, thirds) in numbered where number >= 11 && number <= 20 {
                let fit = similarity(thirds[part], to: average)
                session2Angles.append(fit.angle * 180 / Double.pi)
                session2Scales.append(fit.logScale - ml)
            }
            // What the first three tell of the rest.
            let three = Array(shapes.prefix(3)), threeCentres = Array(centres.prefix(3)), threeOwn = Array(own.prefix(3))
            let m3 = centroid(threeCentres), o3 = centroid(threeOwn), shape3 = meanShape(three)
            for (number, thirds) in numbered {
                let group = number <= 3 ? 0 : number <= 10 ? 1 : number <= 20 ? 2 : 3
                let c = centroid(thirds[part]), whole = centroid(thirds.flatMap { $0 })
                placed[group] += [c.x - m3.x, c.y - m3.y]
                ownPlaced[group] += [c.x - whole.x - o3.x, c.y - whole.y - o3.y]
                shaped[group].append(shapeDistance(thirds[part], shape3))
            }
        }
        for number in SVC2004.firstSession {
            guard let signature = signatures[number] else { continue }
            for cut in signatureCuts(signature) {
                counts.append(Double(cut.count))
                durations.append(signature.times[cut.upperBound] - signature.times[cut.lowerBound])
            }
        }
    }
    // Independent drawings of the measured scatter would lie √(1 + 1/3) σ from a mean of three.
    let expected = (4.0 / 3).squareRoot()
    func factor(_ values: [Double], _ sigma: Double) -> String {
        guard sigma > 0 else { return "–" }
        let hundredths = Int((100 * rms(values) / (expected * sigma)).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }
    let aim = rms(aims), ownAim = rms(ownAims), shape = rms(tenShape)
    print("### SVC2004: the hand's variation (picture pixels at 1×, 10 px = 1 % of the longest side; first session unless said)")
    print("")
    print("| size (RMS radius of a part, median) | aim scatter of a part's centroid, per axis (on the tablet) | a part against its signature's centroid, per axis | the whole signature's shift, per axis | rotation σ | scale σ | point noise after alignment, per axis | shape (RMS to the ten's mean) | points a part (median) | duration a part (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("| \(fmt(median(sizes))) px | \(fmt(aim)) px | \(fmt(ownAim)) px | \(fmt(rms(shifts))) px | \(fmt(rms(angles)))° | \(fmt(100 * rms(scales))) % | \(fmt(rms(residuals))) px | \(fmt(shape)) px | \(fmt(median(counts))) | \(fmt(median(durations))) ms |")
    print("")
    print("What the first three signatures of the first session tell of the rest: RMS offset from the first three's mean, per axis, and the drift factor (offset ÷ the √(4/3) × within-session σ that independent drawings would give):")
    print("")
    print("| drawings | n parts | a part's centroid on the tablet | factor | a part against its signature's centroid | factor | shape (RMS to the first three's mean shape) | factor |")
    print("|---|---|---|---|---|---|---|---|")
    for (group, label) in ["first three (S1–S3)", "later seven, same session (S4–S10)", "second session (S11–S20)", "skilled forgeries (S21–S40)"].enumerated() {
        print("| \(label) | \(shaped[group].count) | \(fmt(rms(placed[group]))) px | \(factor(placed[group], aim)) | \(fmt(rms(ownPlaced[group]))) px | \(factor(ownPlaced[group], ownAim)) | \(fmt(rms(shaped[group]))) px | \(factor(shaped[group], shape)) |")
    }
    print("")
    print("The second session against the first session's mean shape of each part: rotation σ \(fmt(rms(session2Angles)))°, scale σ \(fmt(100 * rms(session2Scales))) % (first session: \(fmt(rms(angles)))°, \(fmt(100 * rms(scales))) %).")
    print("")
}

/// `--svc2004 DIRECTORY`: the variation table, then the goal rows for each placement.
func runSignatures(_ directory: String, scales: [Double], aims: [Aim], people: Int, wireDirectory: String? = nil) {
    let set = loadedOrExit(SVC2004.load(directory), people: people)
    let count = set.values.reduce(0) { $0 + $1.count }
    guard count > 0 else {
        complain("gesture-eval: no SVC2004 signatures (U<person>S<number>.TXT) under \(directory)\n")
        exit(2)
    }
    let (pixelsPerUnit, radius) = signatureScale(set)
    print("## Real drawings: SVC2004 signatures (\(set.count) people, \(count) signatures)")
    print("")
    print("Mapping: each third of a signature's pen-down length is a part; 1× = \(fmt(1000 * pixelsPerUnit)) picture px per 1000 tablet units (the median part's RMS radius, \(fmt(radius)) units, becomes \(fmt(dollar1MedianRadius)) px).")
    print("")
    if let wireDirectory, let scale = scales.first, let aim = aims.first {
        writeSignatureWire(set, pixelsPerUnit: pixelsPerUnit, placement: RealPlacement(scale: scale, aim: aim), to: wireDirectory)
        return
    }
    signatureVariation(set, pixelsPerUnit: pixelsPerUnit)
    for scale in scales {
        for aim in aims {
            // A blank-screen scatter has no meaning for a signature's thirds.
            if case .recorded = aim { continue }
            signatureEvaluation(set, pixelsPerUnit: pixelsPerUnit, placement: RealPlacement(scale: scale, aim: aim), seed: baseSeed)
        }
    }
}
