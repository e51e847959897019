// Times GestureMatcher.verify against a realistic template for growing attempts, to show
// that the cost is linear in the number of input points. Build with `swift build -c release`
// and run `.build/release/gesture-bench`.
import PuffCore
import PuffSimulation

/// `count` points along a circle of radius 180 centred at (300, 350), clockwise, closed.
func circle(_ count: Int) -> [GesturePoint] {
    (0..<count).map { index in
        let angle = 2 * Double.pi * Double(index) / Double(count - 1)
        return GesturePoint(x: 300 + 180 * Trig.sin(angle + Double.pi / 2), y: 350 + 180 * Trig.sin(angle))
    }
}

/// `count` points along the polyline (550, 680) → (950, 680) → (950, 250).
func corner(_ count: Int) -> [GesturePoint] {
    (0..<count).map { index in
        let t = Double(index) / Double(count - 1) * 830
        return t <= 400 ? GesturePoint(x: 550 + t, y: 680) : GesturePoint(x: 950, y: 680 - (t - 400))
    }
}

func jittered(_ points: [GesturePoint], _ random: inout SplitMix64) -> [GesturePoint] {
    points.map { GesturePoint(x: $0.x + random.uniform(-5, 5), y: $0.y + random.uniform(-5, 5)) }
}

func gesture(circlePoints: Int, cornerPoints: Int, jitter random: inout SplitMix64) -> Gesture {
    Gesture(width: 1000, height: 750, parts: [
        GesturePart(kind: .path, points: jittered(circle(circlePoints), &random)),
        GesturePart(kind: .tap, points: [GesturePoint(x: 700, y: 150)]),
        GesturePart(kind: .path, points: jittered(corner(cornerPoints), &random)),
    ])
}

/// Milliseconds per call of `body`, averaged over enough calls to last about half a second.
func millisecondsPerCall(_ body: () -> Bool) -> (Double, Bool) {
    let clock = ContinuousClock()
    var passed = body()
    var calls = 0
    let start = clock.now
    var elapsed = Duration.zero
    while elapsed < .milliseconds(500) || calls < 3 {
        passed = body() && passed
        calls += 1
        elapsed = clock.now - start
    }
    let (seconds, attoseconds) = elapsed.components
    let milliseconds = Double(seconds) * 1000 + Double(attoseconds) / 1e15
    return (milliseconds / Double(calls), passed)
}

/// Three decimals, without libm.
func format(_ milliseconds: Double) -> String {
    let thousandths = Int(milliseconds * 1000 + 0.5)
    let fraction = String(thousandths % 1000)
    return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

var random = SplitMix64(seed: 1)
let enrollment = gesture(circlePoints: 120, cornerPoints: 90, jitter: &random)
let confirmation = gesture(circlePoints: 140, cornerPoints: 100, jitter: &random)
let templates: [(String, GestureTemplate)]
do {
    let consensus = try GestureEnroller.build(drawings: [enrollment, confirmation])
    templates = [
        ("version 1 (raster squares, the old matcher)", try GestureEnroller.build(from: enrollment)),
        ("version 2 (common shift, place score, DTW)",
         try GestureTemplate(width: consensus.width, height: consensus.height, settings: .standard,
                             parts: consensus.parts, spreads: consensus.parts.map { _ in 0 })),
        ("version 3 (consensus, learned spreads, one score)", consensus),
    ]
} catch {
    fatalError("enrollment failed: \(error)")
}

// The worst case an attacker can send to version 1: long segments that interpolate to just
// under the cap; version 2 resamples the raw points, so its worst case is the most raw points.
let zigzag = (0..<6200).map { GesturePoint(x: $0 % 2 == 0 ? 0 : 1000, y: $0 % 2 == 0 ? 0 : 750) }
func withPath(_ points: [GesturePoint]) -> Gesture {
    Gesture(width: 1000, height: 750, parts: [
        GesturePart(kind: .path, points: points),
        GesturePart(kind: .tap, points: [GesturePoint(x: 700, y: 150)]),
        GesturePart(kind: .path, points: corner(90)),
    ])
}
let manyPoints = (0..<1_000_000).map { GesturePoint(x: Double($0 % 1000), y: Double(($0 / 1000) % 750)) }

for (name, template) in templates {
    print("\n\(name): \(template.parts.map(\.points.count)) stored points, \(template.encode().count) bytes encoded")
    for total in [1_000, 10_000, 100_000] {
        // Split the input between the two paths in proportion to their lengths (1131 : 830).
        let circlePoints = (total - 1) * 1131 / 1961
        let attempt = gesture(circlePoints: circlePoints, cornerPoints: total - 1 - circlePoints, jitter: &random)
        let (milliseconds, passed) = millisecondsPerCall { GestureMatcher.verify(template, attempt).passed }
        print("  genuine attempt, \(total) input points: \(format(milliseconds)) ms per verify, passed: \(passed)")
    }
    for (label, attempt) in [("6,200-point zigzag (≈ 1.04 M interpolated points in v1)", withPath(zigzag)),
                             ("12,400-point zigzag (over v1's interpolation cap)", withPath(zigzag + zigzag)),
                             ("1,000,000 raw points in one part", withPath(manyPoints))] {
        let (milliseconds, _) = millisecondsPerCall { GestureMatcher.verify(template, attempt).passed }
        print("  \(label): \(format(milliseconds)) ms per verify, failure: \(String(describing: GestureMatcher.verify(template, attempt).failure))")
    }
    // The part count must not show in the time: attempts of 1, 3 and 16 taps.
    var line = "  taps only, 1 / 3 / 16 parts (wrong count except 3):"
    for count in [1, 3, 16] {
        let attempt = Gesture(width: 1000, height: 750, parts: (0..<count).map { index in
            GesturePart(kind: .tap, points: [GesturePoint(x: 50 + 50 * Double(index), y: 300)])
        })
        let (milliseconds, _) = millisecondsPerCall { GestureMatcher.verify(template, attempt).passed }
        line += " \(format(milliseconds)) ms"
    }
    print(line)
}
