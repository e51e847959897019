// `make gesture-eval`: the workload table of issue 13 through the real matcher, the baseline
// (version-1 templates, today's square counting) next to version 2, and an ROC curve as SVG.
//
//     gesture-eval [--attempts N] [--seed N] [--svg FILE] [--wire DIRECTORY --wire-attempts N]
//
// The seed is 13 unless --seed is given (another seed shows how much the figures move).
//
// With --wire, it also writes, for each of the ten gestures, the enrollment drawings and a
// set of attempts in Puff's wire format with the matcher's verdict, for scripts/gesture-eval.sh
// to replay through libpam.
import Glibc
import PuffCore
import PuffSimulation

var attemptsPerRow = 500
var svgPath = "build/gesture-roc.svg"
var wireDirectory: String?
var wireAttempts = 20
nonisolated(unsafe) var seed: UInt64 = 13
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--attempts": attemptsPerRow = Int(arguments.next() ?? "") ?? attemptsPerRow
    case "--svg": svgPath = arguments.next() ?? svgPath
    case "--wire": wireDirectory = arguments.next()
    case "--wire-attempts": wireAttempts = Int(arguments.next() ?? "") ?? wireAttempts
    case "--seed": seed = UInt64(arguments.next() ?? "") ?? seed
    default:
        complain("usage: gesture-eval [--attempts N] [--seed N] [--svg FILE] [--wire DIRECTORY --wire-attempts N]\n")
        exit(2)
    }
}

nonisolated(unsafe) var currentLabel = ""
var setupRandom = Random(seed: seed)
let (gestures, refusedGestures) = workloadGestures(random: &setupRandom)
let enrollmentsPerGesture = 5

/// One enrolled gesture under test: the baseline (version 1) and the version-2 template.
struct Enrolled {
    var ideal: IdealGesture
    var baseline: GestureTemplate
    var current: GestureTemplate
    var drawings: [Gesture]
}

/// Enrolls `ideal` as a user of consistency `redraw` would: the exact definition, a
/// confirmation redrawn until it matches (at most 10 tries) and a third drawing when the
/// two differ a lot; nil when the confirmation never matched.
func enroll(_ ideal: IdealGesture, redraw: Redraw, settings: GestureRecognizerSettings,
            baselineParameters: GestureParameters = .standard, random: inout Random) -> Enrolled? {
    let definition = exactDrawing(ideal)
    guard let baseline = try? GestureEnroller.build(from: definition, parameters: baselineParameters) else {
        complain("gesture-eval: \(ideal.name): the baseline enroller refused the definition\n")
        return nil
    }
    for _ in 0..<10 {
        var drawings = [definition, redraw.draw(ideal, random: &random)]
        if GestureEnroller.differsALot(drawings[0], drawings[1], settings: settings) {
            drawings.append(redraw.draw(ideal, random: &random))
        }
        if let current = try? GestureEnroller.build(drawings: drawings, settings: settings) {
            return Enrolled(ideal: ideal, baseline: baseline, current: current, drawings: drawings)
        }
    }
    return nil
}

/// Share of attempts accepted by each matcher.
struct Tally {
    var attempts = 0
    var baselineAccepted = 0
    var currentAccepted = 0
    var enrollmentFailures = 0
    var currentRules: [String: Int] = [:]
    /// Attempts and v2 acceptances by the gesture's part count.
    var byParts: [Int: (attempts: Int, accepted: Int)] = [:]

    func percent(_ count: Int) -> Double { attempts == 0 ? 0 : 100 * Double(count) / Double(attempts) }
}

/// Runs `attemptsPerRow` attempts: for each gesture, `enrollmentsPerGesture` enrollments by a
/// user drawing like `enrollAs`, each tried with an equal share of `attack` attempts.
let explored: GestureRecognizerSettings = {
    guard let place = getenv("EVAL_PLACE").flatMap({ Double(String(cString: $0)) }),
          let shift = getenv("EVAL_SHIFT").flatMap({ Double(String(cString: $0)) }) else { return .standard }
    return (try? GestureRecognizerSettings(placeTolerance: place, shapeTolerance: 0.03, shiftLimit: shift, overflow: 2)) ?? .standard
}()

func run(enrollAs: Redraw, settings: GestureRecognizerSettings = explored,
         baselineParameters: GestureParameters = .standard, attempts: Int, rowSeed: UInt64,
         attack: (IdealGesture, inout Random) -> Gesture) -> Tally {
    var random = Random(seed: seed &* 1_000_003 &+ rowSeed)
    var tally = Tally()
    let perEnrollment = max(1, attempts / (gestures.count * enrollmentsPerGesture))
    for ideal in gestures {
        for _ in 0..<enrollmentsPerGesture {
            guard let enrolled = enroll(ideal, redraw: enrollAs, settings: settings,
                                        baselineParameters: baselineParameters, random: &random) else {
                tally.enrollmentFailures += 1
                continue
            }
            for _ in 0..<perEnrollment {
                let attempt = attack(ideal, &random)
                tally.attempts += 1
                tally.byParts[ideal.parts.count, default: (0, 0)].attempts += 1
                if GestureMatcher.verify(enrolled.baseline, attempt).passed { tally.baselineAccepted += 1 }
                let result = GestureMatcher.verify(enrolled.current, attempt)
                if result.passed {
                    tally.currentAccepted += 1
                    tally.byParts[ideal.parts.count, default: (0, 0)].accepted += 1
                    if getenv("EVAL_VERBOSE") != nil { complain("accepted: \(currentLabel) | \(ideal.name) parts \(ideal.parts.count)\n") }
                } else {
                    let key = result.detail.map { $0.rule.rawValue } ?? String(describing: result.failure)
                    tally.currentRules[key, default: 0] += 1
                }
            }
        }
    }
    return tally
}

struct Row {
    var label: String
    var isGenuine: Bool
    var goal: String
    var enrollAs: Redraw
    var attack: (IdealGesture, inout Random) -> Gesture
}

let sigma1 = Redraw(sigma: 0.01)
let padCapture = Capture.cells(columns: 100, rows: 27)
let rows: [Row] = [
    Row(label: "genuine redraw, σ = 0.5 %", isGenuine: true, goal: "0 %", enrollAs: Redraw(sigma: 0.005)) {
        Redraw(sigma: 0.005).draw($0, random: &$1) },
    Row(label: "genuine redraw, σ = 1.0 %", isGenuine: true, goal: "≤ 2 %", enrollAs: sigma1) {
        sigma1.draw($0, random: &$1) },
    Row(label: "genuine redraw, σ = 1.5 %", isGenuine: true, goal: "≤ 10 %", enrollAs: Redraw(sigma: 0.015)) {
        Redraw(sigma: 0.015).draw($0, random: &$1) },
    Row(label: "genuine σ 1 %, puff-pad cells (100×30 terminal)", isGenuine: true, goal: "≤ 5 %",
        enrollAs: Redraw(sigma: 0.01, capture: padCapture)) {
        Redraw(sigma: 0.01, capture: padCapture).draw($0, random: &$1) },
    Row(label: "genuine σ 1 %, ¼-size window, whole pixels", isGenuine: true, goal: "≤ 2 %",
        enrollAs: Redraw(sigma: 0.01, capture: .shrunk(factor: 0.25))) {
        Redraw(sigma: 0.01, capture: .shrunk(factor: 0.25)).draw($0, random: &$1) },
    Row(label: "genuine σ 1 %, stroke 10 % faster or slower", isGenuine: true, goal: "≤ 2 %", enrollAs: sigma1) {
        Redraw(sigma: 0.01, speed: $1.below(2) == 0 ? 0.9 : 1.1).draw($0, random: &$1) },
    Row(label: "scribble over the whole picture", isGenuine: false, goal: "0 %", enrollAs: sigma1) {
        Attacks.scribbleEverywhere($0, random: &$1) },
    Row(label: "scribble over the right area", isGenuine: false, goal: "0 %", enrollAs: sigma1) {
        Attacks.scribbleOverArea($0, random: &$1) },
    Row(label: "right shapes drawn backwards", isGenuine: false, goal: "≤ 1 %", enrollAs: sigma1) {
        Redraw(sigma: 0.01, reversed: true).draw($0, random: &$1) },
    Row(label: "random plausible gesture of the same kinds", isGenuine: false, goal: "0 %", enrollAs: sigma1) {
        Attacks.randomPlausible($0, random: &$1) },
    Row(label: "points-of-interest guess (kinds known)", isGenuine: false, goal: "0 %", enrollAs: sigma1) {
        Attacks.pointsOfInterest($0, random: &$1) },
    Row(label: "shoulder-surfer: positions off ~3 %", isGenuine: false, goal: "≤ 5 %", enrollAs: sigma1) {
        Redraw(sigma: 0.01, misplacement: 0.03).draw($0, random: &$1) },
]

func format(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) %"
}

print("Puff gesture evaluation: \(gestures.count) gestures on a 1000×750 picture, seed \(seed), \(attemptsPerRow) attempts a row")
print("(\(enrollmentsPerGesture) enrollments per gesture and row; baseline = version-1 template, today's matcher;")
print(" v2 = version-2 template with the default settings; the definition is the exact gesture)")
let generated = gestures.count + refusedGestures.count
print("enrollment refused \(refusedGestures.count) of the \(generated) gestures generated (\(format(100 * Double(refusedGestures.count) / Double(max(1, generated))))), replaced by the next ones:")
for (gesture, error) in refusedGestures { print("  \(gesture.name) (\(gesture.parts.count) parts): \(error)") }
print("parts of the ten kept: " + gestures.map { String($0.parts.count) }.joined(separator: ", ") + "\n")
print("| workload | baseline (v1) | v2 | goal | v2 refusals by rule |")
print("|---|---|---|---|---|")
var allMet = true
var breakdowns: [String] = []
for (index, row) in rows.enumerated() {
    currentLabel = row.label
    let tally = run(enrollAs: row.enrollAs, attempts: attemptsPerRow, rowSeed: UInt64(index + 1), attack: row.attack)
    let measure = row.isGenuine ? "FRR" : "FAR"
    let baseline = row.isGenuine ? tally.percent(tally.attempts - tally.baselineAccepted) : tally.percent(tally.baselineAccepted)
    let current = row.isGenuine ? tally.percent(tally.attempts - tally.currentAccepted) : tally.percent(tally.currentAccepted)
    let limit = Double(row.goal.filter { $0.isNumber || $0 == "." }) ?? 0
    let met = current <= limit
    allMet = allMet && met && tally.enrollmentFailures == 0
    let rules = tally.currentRules.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    let enrollNote = tally.enrollmentFailures > 0 ? " (\(tally.enrollmentFailures) enrollments failed)" : ""
    if !row.isGenuine, tally.currentAccepted > 0 {
        let parts = tally.byParts.sorted { $0.key < $1.key }.map { count, value in
            "\(count) parts \(format(100 * Double(value.accepted) / Double(max(1, value.attempts)))) (\(value.accepted)/\(value.attempts))"
        }
        breakdowns.append("  \(row.label): v2 FAR by part count: " + parts.joined(separator: ", "))
    }
    print("| \(row.label) (n=\(tally.attempts))\(enrollNote) | \(measure) \(format(baseline)) | \(measure) \(format(current))\(met ? "" : " ✗") | \(row.goal) | \(rules) |")
}
if !breakdowns.isEmpty { print(""); breakdowns.forEach { print($0) } }
print("\nevery goal met by v2: \(allMet ? "yes" : "NO")")

// ROC: FRR at σ 1 % against the shoulder-surfer's FAR, over the tolerance factor (v2) and
// the tolerance square (baseline).
currentLabel = "ROC"
let rocAttempts = max(100, attemptsPerRow / 2)
var currentCurve: [(factor: Double, frr: Double, far: Double)] = []
for step in 0...15 {
    let factor = 0.5 + 0.1 * Double(step)
    guard let settings = GestureRecognizerSettings.scaled(by: factor) else { continue }
    let genuine = run(enrollAs: sigma1, settings: settings, attempts: rocAttempts, rowSeed: 101) { sigma1.draw($0, random: &$1) }
    let surfer = run(enrollAs: sigma1, settings: settings, attempts: rocAttempts, rowSeed: 102) {
        Redraw(sigma: 0.01, misplacement: 0.03).draw($0, random: &$1) }
    currentCurve.append((factor, genuine.percent(genuine.attempts - genuine.currentAccepted), surfer.percent(surfer.currentAccepted)))
}
var baselineCurve: [(factor: Double, frr: Double, far: Double)] = []
for step in 0...12 {
    let tolerance = 0.03 + 0.005 * Double(step)
    guard let parameters = try? GestureParameters(tolerance: tolerance) else { continue }
    let genuine = run(enrollAs: sigma1, baselineParameters: parameters, attempts: rocAttempts, rowSeed: 101) { sigma1.draw($0, random: &$1) }
    let surfer = run(enrollAs: sigma1, baselineParameters: parameters, attempts: rocAttempts, rowSeed: 102) {
        Redraw(sigma: 0.01, misplacement: 0.03).draw($0, random: &$1) }
    baselineCurve.append((tolerance / 0.045, genuine.percent(genuine.attempts - genuine.baselineAccepted), surfer.percent(surfer.baselineAccepted)))
}
print("\nROC (\(rocAttempts) attempts a point): tolerance factor → FRR at σ 1 %, shoulder-surf FAR")
print("  v2 (factor × defaults; 1.0 is the default, option gesture_tolerance = 4.5 × factor):")
for point in currentCurve {
    print("    factor \(format(point.factor * 100).dropLast(2))%  FRR \(format(point.frr))  FAR \(format(point.far))\(abs(point.factor - 1) < 1e-9 ? "   ← default" : "")")
}
print("  baseline (tolerance square, 4.5 % = 100 % is the default):")
for point in baselineCurve {
    print("    square \(format(point.factor * 4.5).dropLast(2))% FRR \(format(point.frr))  FAR \(format(point.far))\(abs(point.factor - 1) < 1e-9 ? "   ← default" : "")")
}
writeROC(current: currentCurve, baseline: baselineCurve, to: svgPath)
print("\nROC curve written to \(svgPath)")

if let wireDirectory {
    writeWire(to: wireDirectory, attempts: wireAttempts)
}
exit(allMet ? 0 : 1)
