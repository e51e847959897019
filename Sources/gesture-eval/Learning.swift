// `gesture-eval --learning [--dollar1 DIRECTORY | --svc2004 DIRECTORY]`: what learning from successful logins
// (`GestureLearning`, template version 4) does for the owner and for attackers, against the
// same attempts on the template as enrolled. With --dollar1, on the real drawings (the later
// repetitions logged in in order, learning after each success); without, on the calibrated
// simulator (20 successive drifted logins per owner), with the attack rows and what one lucky
// success gives an attacker.
import Glibc
import PuffCore

/// The template after `attempt`, when the matcher accepts it; nil when it refuses.
func learnedTemplate(_ template: GestureTemplate, _ attempt: Gesture) -> GestureTemplate? {
    GestureLearning.accept(attempt, by: template).acceptance.map { GestureLearning.learned(from: $0) }
}

/// The libpam replays' line for `attempt`: "pass <wire>" or "fail <wire>", the matcher's verdict
/// after the wire round trip; `template` becomes what the module stores after it (learned from a
/// success). nil when the wire does not parse back.
func replayLine(_ attempt: Gesture, against template: inout GestureTemplate) -> String? {
    let line = wire(attempt)
    guard let back = try? GestureWire.parse(Array(line.utf8)) else { return nil }
    let passed = GestureMatcher.verify(template, back).passed
    template = learnedTemplate(template, back) ?? template
    return (passed ? "pass " : "fail ") + line + "\n"
}

/// Accepted out of tried, for a rate.
struct Hits {
    var tried = 0
    var accepted = 0
    mutating func add(_ passed: Bool) {
        tried += 1
        if passed { accepted += 1 }
    }
    var refused: Int { tried - accepted }
}

// MARK: Real drawings

/// The real rows with and without learning, for one placement (RealDrawings.swift's mapping).
func realLearningEvaluation(_ set: RealSet, placement: RealPlacement, seed: UInt64) {
    var random = Random(seed: seed)
    let subjects = set.keys.sorted()
    let shapes = (set[subjects.first ?? ""]?["medium"]?.keys.sorted()) ?? []
    let triples = realTriples(shapes)
    var later = (plain: Hits(), learning: Hits())
    var slow = (plain: Hits(), learning: Hits()), fast = (plain: Hits(), learning: Hits())
    var others = (plain: Hits(), learning: Hits())
    var perPerson: [(plain: Hits, learning: Hits)] = []
    var spreadGrowth: [Double] = []
    var shapeGrowth: [Double] = []
    for subject in subjects {
        guard let medium = set[subject]?["medium"] else { continue }
        var mine = (plain: Hits(), learning: Hits())
        for triple in triples {
            let enrolled = realEnroll(medium, shapes: triple, placement: placement, random: &random)
            guard let template = enrolled.template else { continue }
            var learned = template
            // The later repetitions in order; each success is learned from.
            for rep in enrolled.next..<10 {
                guard let attempt = realGesture(medium, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                mine.plain.add(GestureMatcher.verify(template, attempt).passed)
                let passed = GestureMatcher.verify(learned, attempt).passed
                mine.learning.add(passed)
                if passed, let next = learnedTemplate(learned, attempt) { learned = next }
            }
            spreadGrowth.append(learned.settings.placeTolerance / template.settings.placeTolerance)
            for (after, before) in zip(learned.spreads, template.spreads) where before > 0 { shapeGrowth.append(after / before) }
            for (speed, isSlow) in [("slow", true), ("fast", false)] {
                guard let data = set[subject]?[speed] else { continue }
                for rep in 0..<10 {
                    guard let attempt = realGesture(data, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                    let plain = GestureMatcher.verify(template, attempt).passed
                    let learning = GestureMatcher.verify(learned, attempt).passed
                    if isSlow {
                        slow.plain.add(plain)
                        slow.learning.add(learning)
                    } else {
                        fast.plain.add(plain)
                        fast.learning.add(learning)
                    }
                }
            }
            for other in subjects where other != subject {
                guard let theirs = set[other]?["medium"] else { continue }
                for rep in 0..<10 {
                    guard let attempt = realGesture(theirs, shapes: triple, rep: rep, placement: placement, random: &random) else { continue }
                    others.plain.add(GestureMatcher.verify(template, attempt).passed)
                    others.learning.add(GestureMatcher.verify(learned, attempt).passed)
                }
            }
        }
        later.plain.tried += mine.plain.tried
        later.plain.accepted += mine.plain.accepted
        later.learning.tried += mine.learning.tried
        later.learning.accepted += mine.learning.accepted
        perPerson.append(mine)
    }
    func personQuantiles(_ pick: ((plain: Hits, learning: Hits)) -> Hits) -> String {
        let rates = perPerson.map { 100 * Double(pick($0).refused) / Double(max(1, pick($0).tried)) }.sorted()
        guard !rates.isEmpty else { return "—" }
        func quantile(_ q: Double) -> Double {
            let position = q * Double(rates.count - 1)
            let low = Int(position.rounded(.down)), high = min(rates.count - 1, low + 1)
            return rates[low] + (rates[high] - rates[low]) * (position - Double(low))
        }
        return "\(fmt(quantile(0.5))) / \(fmt(quantile(0.75))) / \(fmt(rates.last ?? 0)) %"
    }
    print("### Learning from successes: \(placement.aim), drawn \(fmt(placement.scale))×")
    print("")
    print("| row | as enrolled (version 3) | learning from each success (version 4) |")
    print("|---|---|---|")
    print("| later repetitions in order (FRR) | \(rate(later.plain.refused, later.plain.tried)) | \(rate(later.learning.refused, later.learning.tried)) |")
    print("| per person: median / 75th percentile / worst | \(personQuantiles { $0.plain }) | \(personQuantiles { $0.learning }) |")
    print("| drawn slow, after the later ones (FRR) | \(rate(slow.plain.refused, slow.plain.tried)) | \(rate(slow.learning.refused, slow.learning.tried)) |")
    print("| drawn fast, after the later ones (FRR) | \(rate(fast.plain.refused, fast.plain.tried)) | \(rate(fast.learning.refused, fast.learning.tried)) |")
    print("| others who know the shapes and spots (FAR) | \(rate(others.plain.accepted, others.plain.tried)) | \(rate(others.learning.accepted, others.learning.tried)) |")
    for (name, values) in [("place", spreadGrowth), ("each path's shape", shapeGrowth)] {
        let growth = values.sorted()
        guard !growth.isEmpty else { continue }
        print("| \(name) spread after the later ones, against enrolled: 10th / 50th / 90th percentile | 1 | "
              + "\(fmt(growth[growth.count / 10]))× / \(fmt(growth[growth.count / 2]))× / \(fmt(growth[min(growth.count - 1, growth.count * 9 / 10)]))× |")
    }
    print("")
}

func runRealLearning(_ directory: String, scales: [Double], aims: [Aim]) {
    let set = Dollar1.load(directory)
    guard !set.isEmpty else {
        complain("gesture-eval: no $1 logs under \(directory)\n")
        exit(2)
    }
    print("## Learning from successful logins, real drawings (\(set.count) people)\n")
    for scale in scales {
        for aim in aims {
            realLearningEvaluation(set, placement: RealPlacement(scale: scale, aim: aim), seed: baseSeed)
        }
    }
}

// MARK: The calibrated simulator

/// `gesture` as someone remembers it who saw it once: each part moved by `misplacement` ±
/// a quarter in a direction of its own, the same every time they draw it.
func remembered(_ gesture: IdealGesture, misplacement: Double, random: inout Random) -> IdealGesture {
    var copy = gesture
    for index in copy.parts.indices {
        let angle = random.uniform(0, 2 * Double.pi)
        let distance = abs(misplacement + random.gaussian(misplacement / 4)) * longestSide
        let dx = distance * cos(angle), dy = distance * sin(angle)
        copy.parts[index].points = copy.parts[index].points.map { Point(x: $0.x + dx, y: $0.y + dy) }
    }
    return copy
}

/// One seed's rows: owner FRR over `logins` successive drifted logins with and without
/// learning; the attacks against the template after those logins and as enrolled; and what one
/// lucky success gives an attacker who keeps one memory of the gesture.
func simulatorLearning(seed: UInt64, logins: Int, attackAttempts: Int, luckyTries: Int = 400,
                       luckyFollowUps: Int = 40) -> [String: (Hits, Hits)] {
    var setup = Random(seed: seed)
    let gestures = workloadGestures(random: &setup).accepted
    var random = Random(seed: seed &* 7919 &+ 4040)
    var rows: [String: (Hits, Hits)] = [:]
    func add(_ key: String, _ plain: Bool, _ learning: Bool) {
        var row = rows[key] ?? (Hits(), Hits())
        row.0.add(plain)
        row.1.add(learning)
        rows[key] = row
    }
    for ideal in gestures {
        for _ in 0..<ownersPerGesture {
            let enrollment = enroll(ideal, owner: owner(calibratedEnroll), settings: .standard, random: &random)
            guard let template = enrollment.template else { continue }
            var learned = template
            for _ in 0..<logins {
                let attempt = calibratedLogin.draw(ideal, random: &random)
                let passed = GestureMatcher.verify(learned, attempt).passed
                add("owner", GestureMatcher.verify(template, attempt).passed, passed)
                if passed, let next = learnedTemplate(learned, attempt) { learned = next }
            }
            for _ in 0..<attackAttempts {
                for (key, redraw) in [("surfer", calibratedSurfer), ("video", videoStudier), ("others", otherPerson)] {
                    let attempt = redraw.draw(ideal, random: &random)
                    add(key, GestureMatcher.verify(template, attempt).passed, GestureMatcher.verify(learned, attempt).passed)
                }
            }
            // One lucky success: an onlooker who remembers each part 3 ± 0.75 % off (the same
            // memory every time) tries until the owner's learned template accepts them (up to
            // `luckyTries`), then tries `luckyFollowUps` more: against that template unchanged,
            // against it learned from their one success, and learned from every success of theirs.
            let memory = remembered(ideal, misplacement: 0.03, random: &random)
            var lucky: GestureTemplate?
            for _ in 0..<luckyTries {
                let attempt = calibratedEnroll.draw(memory, random: &random)
                if let next = learnedTemplate(learned, attempt) {
                    lucky = next
                    break
                }
            }
            var key = "no lucky success"
            if let once = lucky {
                key = "after one lucky success"
                var captured = once
                for _ in 0..<luckyFollowUps {
                    let attempt = calibratedEnroll.draw(memory, random: &random)
                    let passed = GestureMatcher.verify(captured, attempt).passed
                    add(key, GestureMatcher.verify(learned, attempt).passed, GestureMatcher.verify(once, attempt).passed)
                    add("learning from each success of theirs", GestureMatcher.verify(learned, attempt).passed, passed)
                    if passed, let next = learnedTemplate(captured, attempt) { captured = next }
                }
                lucky = captured
            } else {
                for _ in 0..<luckyFollowUps {
                    let attempt = calibratedEnroll.draw(memory, random: &random)
                    let passed = GestureMatcher.verify(learned, attempt).passed
                    add(key, passed, passed)
                }
            }
            // The owner after the attacker's successes: their own logins on the captured template.
            if let captured = lucky {
                for _ in 0..<4 {
                    let attempt = calibratedLogin.draw(ideal, random: &random)
                    add("owner after the attacker's success", GestureMatcher.verify(learned, attempt).passed,
                        GestureMatcher.verify(captured, attempt).passed)
                }
            }
        }
    }
    return rows
}

func runSimulatorLearning() {
    let logins = 20, attackAttempts = 8
    print("## Learning from successful logins, calibrated simulator (seeds \(seeds.map(String.init).joined(separator: ", ")))\n")
    print("Each enrolled owner (\(ownersPerGesture) a gesture, \(gestureCount) gestures a seed) logs in \(logins) times in a row with the drifted hand (`calibratedLogin`); attackers try \(attackAttempts) times an owner against the template after those logins.\n")
    print("| row | " + seeds.map { "seed \($0): as enrolled | seed \($0): learning" }.joined(separator: " | ") + " |")
    print("|---|" + seeds.map { _ in "---|---|" }.joined())
    let results = seeds.map { simulatorLearning(seed: $0, logins: logins, attackAttempts: attackAttempts) }
    let labels: [(String, String, Bool)] = [
        ("owner", "owner: \(logins) successive drifted logins (FRR)", true),
        ("surfer", "shoulder-surfer (FAR, goal ≤ 5 %)", false),
        ("video", "video-studier (FAR, goal ≤ 20 %)", false),
        ("others", "someone else who knows the shapes and spots (FAR)", false),
        ("after one lucky success", "an onlooker with one memory (each part 3 ± 0.75 % off), after their first success (in up to 400 tries): their next 40 (FAR; as enrolled: the template before that success)", false),
        ("learning from each success of theirs", "the same, the template also learning from each further success of theirs (FAR)", false),
        ("no lucky success", "the same onlooker, no success in 400 tries: their next 40 (FAR)", false),
        ("owner after the attacker's success", "the owner after the onlooker's successes (FRR)", true),
    ]
    for (key, label, isGenuine) in labels {
        var cells: [String] = []
        for rows in results {
            guard let (plain, learning) = rows[key] else {
                cells += ["—", "—"]
                continue
            }
            for hits in [plain, learning] {
                cells.append(isGenuine ? rate(hits.refused, hits.tried) : rate(hits.accepted, hits.tried))
            }
        }
        print("| \(label) | " + cells.joined(separator: " | ") + " |")
    }
    print("")
}

// MARK: Signatures a week apart (SVC2004)

/// The SVC2004 rows with and without learning, for one placement: the first session's later
/// signatures logged in in order, then the second session's ten (a week or more later) in
/// order, learning after each success; the skilled forgeries and the other people's genuine
/// signatures against the template after all of them.
func signatureLearningEvaluation(_ set: SignatureSet, pixelsPerUnit: Double, placement: RealPlacement, seed: UInt64) {
    var random = Random(seed: seed)
    let people = set.keys.sorted()
    var later = (plain: Hits(), learning: Hits()), second = (plain: Hits(), learning: Hits())
    var forged = (plain: Hits(), learning: Hits()), others = (plain: Hits(), learning: Hits())
    for person in people {
        guard let signatures = set[person] else { continue }
        let enrolled = signatureEnroll(signatures, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random)
        guard let template = enrolled.template else { continue }
        var learned = template
        func drawn(_ number: Int, of owner: Int) -> Gesture? {
            guard let signature = set[owner]?[number] else { return nil }
            return signatureGesture(signature, pixelsPerUnit: pixelsPerUnit, placement: placement, random: &random)
        }
        for number in Array(enrolled.next..<11) + SVC2004.secondSession {
            guard let attempt = drawn(number, of: person) else { continue }
            let plain = GestureMatcher.verify(template, attempt).passed
            let passed = GestureMatcher.verify(learned, attempt).passed
            if number <= 10 {
                later.plain.add(plain)
                later.learning.add(passed)
            } else {
                second.plain.add(plain)
                second.learning.add(passed)
            }
            if passed, let next = learnedTemplate(learned, attempt) { learned = next }
        }
        for number in SVC2004.forgeries {
            guard let attempt = drawn(number, of: person) else { continue }
            forged.plain.add(GestureMatcher.verify(template, attempt).passed)
            forged.learning.add(GestureMatcher.verify(learned, attempt).passed)
        }
        for other in people where other != person {
            for number in SVC2004.firstSession + SVC2004.secondSession {
                guard let attempt = drawn(number, of: other) else { continue }
                others.plain.add(GestureMatcher.verify(template, attempt).passed)
                others.learning.add(GestureMatcher.verify(learned, attempt).passed)
            }
        }
    }
    print("### Learning from successes, SVC2004 signatures: \(placement.aim), drawn \(fmt(placement.scale))×")
    print("")
    print("| row | as enrolled (version 3) | learning from each success (version 4) |")
    print("|---|---|---|")
    print("| same session, later signatures in order (FRR) | \(rate(later.plain.refused, later.plain.tried)) | \(rate(later.learning.refused, later.learning.tried)) |")
    print("| second session, a week or more later, in order after those (FRR) | \(rate(second.plain.refused, second.plain.tried)) | \(rate(second.learning.refused, second.learning.tried)) |")
    print("| skilled forgeries, against the template after all of them (FAR) | \(rate(forged.plain.accepted, forged.plain.tried)) | \(rate(forged.learning.accepted, forged.learning.tried)) |")
    print("| other people's genuine signatures on the same spots (FAR) | \(rate(others.plain.accepted, others.plain.tried)) | \(rate(others.learning.accepted, others.learning.tried)) |")
    print("")
}

func runSignatureLearning(_ directory: String, scales: [Double], aims: [Aim], people: Int) {
    let set = loadedOrExit(SVC2004.load(directory), people: people)
    let (pixelsPerUnit, _) = signatureScale(set)
    print("## Learning from successful logins, SVC2004 signatures (\(set.count) people)\n")
    for scale in scales {
        for aim in aims {
            if case .recorded = aim { continue }
            signatureLearningEvaluation(set, pixelsPerUnit: pixelsPerUnit, placement: RealPlacement(scale: scale, aim: aim),
                                        seed: baseSeed)
        }
    }
}
