// The drawing model of issue 13: ideal gestures on a 1000 × 750 picture, genuine redraws
// with shift, rotation, scale, aim, jitter, speed and trimming, and the attackers' drawings.
// Everything comes from one seeded generator, so a run is reproducible.
import Glibc
import PuffCore
import PuffSimulation

/// The simulation's generator (PuffSimulation).
typealias Random = SplitMix64

/// A point in picture pixels.
struct Point {
    var x: Double
    var y: Double
}

/// One part of an ideal gesture: a tap, or a dense polyline (points ≈ 1 px apart).
struct IdealPart {
    var isTap: Bool
    var points: [Point]

    var centre: Point {
        let n = Double(points.count)
        return Point(x: points.reduce(0) { $0 + $1.x } / n, y: points.reduce(0) { $0 + $1.y } / n)
    }
}

/// An ideal gesture: what the user means to draw.
struct IdealGesture {
    var name: String
    var parts: [IdealPart]
}

/// Picture size of the workload.
let pictureWidth = 1000.0
let pictureHeight = 750.0
let longestSide = 1000.0

/// Salient spots of the imaginary picture (faces, eyes, corners of objects): users draw on
/// them, and the points-of-interest attacker guesses them.
let salientSpots: [Point] = [
    Point(x: 180, y: 160), Point(x: 420, y: 120), Point(x: 760, y: 170), Point(x: 880, y: 380),
    Point(x: 640, y: 330), Point(x: 300, y: 380), Point(x: 140, y: 560), Point(x: 470, y: 600),
    Point(x: 780, y: 610), Point(x: 560, y: 470), Point(x: 250, y: 270), Point(x: 900, y: 160),
]

enum Shapes {
    /// A dense polyline through `corners`.
    static func polyline(_ corners: [Point]) -> [Point] {
        var output: [Point] = []
        for (a, b) in zip(corners, corners.dropFirst()) {
            let length = ((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot()
            let steps = max(1, Int(length))
            for step in 0..<steps {
                let t = Double(step) / Double(steps)
                output.append(Point(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t))
            }
        }
        if let last = corners.last { output.append(last) }
        return output
    }

    static func line(from a: Point, to b: Point) -> [Point] { polyline([a, b]) }

    /// A circle (or ellipse) from angle `start`, clockwise when `clockwise`, closed.
    static func circle(centre: Point, rx: Double, ry: Double, start: Double, clockwise: Bool) -> [Point] {
        let count = 120
        let corners = (0...count).map { index -> Point in
            let angle = start + (clockwise ? 1 : -1) * 2 * Double.pi * Double(index) / Double(count)
            return Point(x: centre.x + rx * cos(angle), y: centre.y + ry * sin(angle))
        }
        return polyline(corners)
    }

    /// An irregular closed outline around `centre` (an object's contour).
    static func outline(centre: Point, radius: Double, random: inout Random) -> [Point] {
        let count = 9
        let start = random.uniform(0, 2 * Double.pi)
        var corners = (0..<count).map { index -> Point in
            let angle = start + 2 * Double.pi * Double(index) / Double(count)
            let r = radius * random.uniform(0.7, 1.2)
            return Point(x: centre.x + r * cos(angle), y: centre.y + 0.8 * r * sin(angle))
        }
        corners.append(corners[0])
        return polyline(corners)
    }

    /// A squiggle: a sine wave along a line.
    static func squiggle(from a: Point, length: Double, angle: Double, waves: Double, amplitude: Double) -> [Point] {
        let count = 160
        let corners = (0...count).map { index -> Point in
            let t = Double(index) / Double(count)
            let along = t * length
            let across = amplitude * sin(2 * Double.pi * waves * t)
            return Point(x: a.x + along * cos(angle) - across * sin(angle),
                         y: a.y + along * sin(angle) + across * cos(angle))
        }
        return polyline(corners)
    }

    /// A random path part of a random kind around `centre`.
    static func randomPath(around centre: Point, random: inout Random) -> [Point] {
        switch random.below(5) {
        case 0:
            let angle = random.uniform(0, 2 * Double.pi)
            let half = random.uniform(60, 200)
            return line(from: Point(x: centre.x - half * cos(angle), y: centre.y - half * sin(angle)),
                        to: Point(x: centre.x + half * cos(angle), y: centre.y + half * sin(angle)))
        case 1:
            let r = random.uniform(40, 120)
            return circle(centre: centre, rx: r, ry: r * random.uniform(0.8, 1.1),
                          start: random.uniform(0, 2 * Double.pi), clockwise: random.below(2) == 0)
        case 2:
            return outline(centre: centre, radius: random.uniform(50, 130), random: &random)
        case 3:
            // Out and back along one line (a stroke underlining something twice), the way back
            // a few pixels beside the way out: its reverse is the same stroke.
            let angle = random.uniform(0, 2 * Double.pi)
            let half = random.uniform(60, 200)
            let aside = random.uniform(-12, 12)
            let start = Point(x: centre.x - half * cos(angle), y: centre.y - half * sin(angle))
            let end = Point(x: centre.x + half * cos(angle), y: centre.y + half * sin(angle))
            return polyline([start, end, Point(x: start.x - aside * sin(angle), y: start.y + aside * cos(angle))])
        default:
            let angle = random.uniform(0, 2 * Double.pi)
            let length = random.uniform(150, 300)
            return squiggle(from: Point(x: centre.x - length / 2 * cos(angle), y: centre.y - length / 2 * sin(angle)),
                            length: length, angle: angle, waves: random.uniform(1.5, 3), amplitude: random.uniform(15, 35))
        }
    }

    static func clamp(_ p: Point) -> Point {
        Point(x: min(max(p.x, 0), pictureWidth), y: min(max(p.y, 0), pictureHeight))
    }

    static func clampAll(_ points: [Point]) -> [Point] { points.map(clamp) }
}

/// The nine gestures of the workload, and the candidates the enroller refused on the way.
/// Candidates are generated as issue 13 describes (two fixed gestures, then random mixes of
/// 3…4 parts, as version 2's enrollment requires at least three); a candidate whose exact
/// drawing the real enroller refuses (`GestureEnroller.build(drawings:)`: all in one spot, a
/// stroke too short) is set aside and the next one is drawn from the same stream.
func workloadGestures(random: inout Random) -> (accepted: [IdealGesture], refused: [(IdealGesture, GestureEnrollmentError)]) {
    var gestures: [IdealGesture] = []
    var refused: [(IdealGesture, GestureEnrollmentError)] = []
    func offer(_ gesture: IdealGesture) {
        let exact = exactDrawing(gesture)
        do {
            _ = try GestureEnroller.build(drawings: [exact, exact])
            gestures.append(gesture)
        } catch {
            refused.append((gesture, error))
        }
    }
    // Outline + tap + line.
    offer(IdealGesture(name: "outline+tap+line", parts: [
        IdealPart(isTap: false, points: Shapes.outline(centre: salientSpots[0], radius: 90, random: &random)),
        IdealPart(isTap: true, points: [salientSpots[4]]),
        IdealPart(isTap: false, points: Shapes.line(from: Point(x: 560, y: 600), to: Point(x: 900, y: 520))),
    ]))
    // Line + circle + tap.
    offer(IdealGesture(name: "line+circle+tap", parts: [
        IdealPart(isTap: false, points: Shapes.line(from: Point(x: 120, y: 620), to: Point(x: 420, y: 380))),
        IdealPart(isTap: false, points: Shapes.circle(centre: salientSpots[2], rx: 80, ry: 70, start: -Double.pi / 2, clockwise: true)),
        IdealPart(isTap: true, points: [salientSpots[9]]),
    ]))
    // Random mixes of taps, lines, circles and squiggles on salient spots, 3…4 parts, at
    // least one path, spots distinct.
    while gestures.count < gestureCount {
        let partCount = 3 + random.below(2)
        var spots = Array(salientSpots.indices)
        var parts: [IdealPart] = []
        for index in 0..<partCount {
            let spot = salientSpots[spots.remove(at: random.below(spots.count))]
            let tap = index > 0 && random.below(3) == 0
            if tap {
                parts.append(IdealPart(isTap: true, points: [spot]))
            } else {
                parts.append(IdealPart(isTap: false, points: Shapes.clampAll(Shapes.randomPath(around: spot, random: &random))))
            }
        }
        offer(IdealGesture(name: "mix \(gestures.count + refused.count - 1)", parts: parts))
    }
    return (gestures, refused)
}

/// Gestures in the workload.
let gestureCount = 9

/// How an attempt is captured.
enum Capture {
    /// Picture pixels, as drawn.
    case exact
    /// puff-pad: the picture covers `columns` × `rows` terminal cells; a report names a cell,
    /// the pad sends the cell's centre and drops a report in the cell of the previous one, a
    /// press and release in one cell is a tap, and the message declares the cell size.
    case cells(columns: Int, rows: Int)
    /// Drawn on the picture shown at `factor` of its size, whole pixels there, scaled back.
    case shrunk(factor: Double)
}

/// A redraw, following issue 13's model (docs/dev/gesture-format.md, "The model"): the whole
/// gesture shifted `shiftSigma` per axis; each part re-aimed σ/2 per axis, rotated about its
/// own centre by `rotationDegrees` and scaled by `scaleSigma` (one draw for the whole
/// gesture); path points jittered σ/3; sampled at a random speed; up to `trim` cut off each
/// end. Every drawing of an owner (definition, confirmations, logins) is one of these.
struct Redraw {
    var sigma: Double          // fraction of the longest side
    var speed = 1.0            // gap multiplier (1.1: 10 % faster, 0.9: slower)
    var capture = Capture.exact
    var reversed = false
    /// Shoulder-surfer: each part misplaced on its own by about this fraction (0: none).
    var misplacement = 0.0
    /// Whole-gesture shift per axis (nil: σ).
    var shiftSigma: Double? = nil
    /// Rotation, σ in degrees.
    var rotationDegrees = 2.0
    /// Scale, σ as a fraction.
    var scaleSigma = 0.03
    /// Most cut off each end of a path, as a fraction of its points.
    var trim = 0.05
    /// The resolution the message declares, whatever the capture (an attacker's claim).
    var declared: GestureResolution? = nil
    /// Each part's own aim error per axis (nil: σ/2), and the point jitter (nil: σ/3).
    var aimSigma: Double? = nil
    var jitterSigma: Double? = nil
    /// Rotation and scale drawn for each part on its own (the calibrated hand: each part is
    /// drawn as a separate stroke) rather than once for the gesture.
    var perPart = false

    func draw(_ gesture: IdealGesture, random: inout Random) -> Gesture {
        let s = sigma * longestSide
        let shiftS = (shiftSigma ?? sigma) * longestSide
        let shift = Point(x: random.gaussian(shiftS), y: random.gaussian(shiftS))
        var rotation = random.gaussian(rotationDegrees * Double.pi / 180)
        var scale = 1 + random.gaussian(scaleSigma)
        let aimS = aimSigma.map { $0 * longestSide } ?? s / 2
        var parts: [GesturePart] = []
        for ideal in gesture.parts {
            if perPart {
                rotation = random.gaussian(rotationDegrees * Double.pi / 180)
                scale = 1 + random.gaussian(scaleSigma)
            }
            var aim = Point(x: random.gaussian(aimS), y: random.gaussian(aimS))
            if misplacement > 0 {
                let angle = random.uniform(0, 2 * Double.pi)
                let distance = abs(misplacement + random.gaussian(misplacement / 4)) * longestSide
                aim.x += distance * cos(angle)
                aim.y += distance * sin(angle)
            }
            let centre = ideal.centre
            func place(_ p: Point) -> Point {
                let dx = (p.x - centre.x) * scale
                let dy = (p.y - centre.y) * scale
                return Point(x: centre.x + dx * cos(rotation) - dy * sin(rotation) + shift.x + aim.x,
                             y: centre.y + dx * sin(rotation) + dy * cos(rotation) + shift.y + aim.y)
            }
            if ideal.isTap {
                let p: GesturePoint = capturePoint(Shapes.clamp(place(ideal.points[0])))
                parts.append(GesturePart(kind: .tap, points: [p]))
                continue
            }
            var points = ideal.points.map(place)
            if reversed { points.reverse() }
            // Up to `trim` cut off each end.
            let n = points.count
            let head = Int(Double(n) * random.uniform(0, trim))
            let tail = Int(Double(n) * random.uniform(0, trim))
            points = Array(points[head..<max(head + 2, n - tail)])
            // Sampled at a random speed: gaps of 0.3…2.5 × 6 px along the stroke.
            let gap = random.uniform(0.3, 2.5) * 6 * speed
            var sampled: [Point] = [points[0]]
            var travelled = 0.0
            for (a, b) in zip(points, points.dropFirst()) {
                travelled += ((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot()
                if travelled >= gap {
                    sampled.append(b)
                    travelled = 0
                }
            }
            if travelled > 0, let last = points.last { sampled.append(last) }
            let jitter = jitterSigma.map { $0 * longestSide } ?? s / 3
            var captured: [Point] = []
            for p in sampled {
                let q: Point = capture(Shapes.clamp(Point(x: p.x + random.gaussian(jitter), y: p.y + random.gaussian(jitter))))
                if let last = captured.last, last.x == q.x, last.y == q.y, case .cells = self.capture { continue }
                captured.append(q)
            }
            if case .cells = self.capture, captured.count < 2 {
                // The pad: a press and release in one cell is a tap.
                parts.append(GesturePart(kind: .tap, points: [GesturePoint(x: captured[0].x, y: captured[0].y)]))
                continue
            }
            if captured.count < 2 { captured.append(captured[0]) }
            parts.append(GesturePart(kind: .path, points: captured.map { GesturePoint(x: $0.x, y: $0.y) }))
        }
        var resolution = declared
        if case .cells(let columns, let rows) = capture {
            resolution = GestureResolution(width: pictureWidth / Double(columns), height: pictureHeight / Double(rows))
        }
        return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts, resolution: resolution)
    }

    private func capture(_ p: Point) -> Point {
        switch capture {
        case .exact:
            return p
        case .cells(let columns, let rows):
            let w = pictureWidth / Double(columns)
            let h = pictureHeight / Double(rows)
            let column = min(Double(columns - 1), (p.x / w).rounded(.down))
            let row = min(Double(rows - 1), (p.y / h).rounded(.down))
            return Point(x: (column + 0.5) * w, y: (row + 0.5) * h)
        case .shrunk(let factor):
            return Shapes.clamp(Point(x: (p.x * factor).rounded() / factor, y: (p.y * factor).rounded() / factor))
        }
    }

    private func capturePoint(_ p: Point) -> GesturePoint {
        let q: Point = capture(p)
        return GesturePoint(x: q.x, y: q.y)
    }
}

/// The ideal gesture drawn once, exactly (the definition drawing of the simulation).
func exactDrawing(_ gesture: IdealGesture) -> Gesture {
    Redraw(sigma: 0).draw(gesture, random: &exactRandom)
}

nonisolated(unsafe) var exactRandom = Random(seed: 1)

/// Attackers who do not know the gesture's places.
enum Attacks {
    /// A zigzag over the box `low`…`high`, `sweeps` lines.
    static func zigzag(low: Point, high: Point, sweeps: Int) -> [GesturePoint] {
        var corners: [Point] = []
        for index in 0...sweeps {
            let y = low.y + (high.y - low.y) * Double(index) / Double(sweeps)
            corners.append(Point(x: index % 2 == 0 ? low.x : high.x, y: y))
            corners.append(Point(x: index % 2 == 0 ? high.x : low.x, y: y))
        }
        return Shapes.polyline(corners).enumerated().filter { $0.offset % 6 == 0 }.map { GesturePoint(x: $0.element.x, y: $0.element.y) }
    }

    /// Every path a scribble over the whole picture; taps at random.
    static func scribbleEverywhere(_ gesture: IdealGesture, random: inout Random) -> Gesture {
        let parts = gesture.parts.map { part -> GesturePart in
            if part.isTap {
                return GesturePart(kind: .tap, points: [GesturePoint(x: random.uniform(0, pictureWidth), y: random.uniform(0, pictureHeight))])
            }
            return GesturePart(kind: .path, points: zigzag(low: Point(x: 0, y: 0), high: Point(x: pictureWidth, y: pictureHeight),
                                                           sweeps: 10 + random.below(20)))
        }
        return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
    }

    /// Every path a scribble over its own area (its box and 5 % around); taps exact.
    static func scribbleOverArea(_ gesture: IdealGesture, random: inout Random) -> Gesture {
        let parts = gesture.parts.map { part -> GesturePart in
            if part.isTap { return GesturePart(kind: .tap, points: [GesturePoint(x: part.points[0].x, y: part.points[0].y)]) }
            let margin = 0.05 * longestSide
            let low = Shapes.clamp(Point(x: part.points.map(\.x).min()! - margin, y: part.points.map(\.y).min()! - margin))
            let high = Shapes.clamp(Point(x: part.points.map(\.x).max()! + margin, y: part.points.map(\.y).max()! + margin))
            return GesturePart(kind: .path, points: zigzag(low: low, high: high, sweeps: 4 + random.below(12)))
        }
        return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
    }

    /// Same kinds, random places and shapes.
    static func randomPlausible(_ gesture: IdealGesture, random: inout Random) -> Gesture {
        let parts = gesture.parts.map { part -> GesturePart in
            let centre = Point(x: random.uniform(100, pictureWidth - 100), y: random.uniform(100, pictureHeight - 100))
            if part.isTap { return GesturePart(kind: .tap, points: [GesturePoint(x: centre.x, y: centre.y)]) }
            return GesturePart(kind: .path, points: Shapes.clampAll(Shapes.randomPath(around: centre, random: &random))
                .enumerated().filter { $0.offset % 6 == 0 }.map { GesturePoint(x: $0.element.x, y: $0.element.y) })
        }
        return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
    }

    /// Kinds known; each part on a salient spot, drawn as a random shape there.
    static func pointsOfInterest(_ gesture: IdealGesture, random: inout Random) -> Gesture {
        let parts = gesture.parts.map { part -> GesturePart in
            let spot = salientSpots[random.below(salientSpots.count)]
            if part.isTap { return GesturePart(kind: .tap, points: [GesturePoint(x: spot.x, y: spot.y)]) }
            return GesturePart(kind: .path, points: Shapes.clampAll(Shapes.randomPath(around: spot, random: &random))
                .enumerated().filter { $0.offset % 6 == 0 }.map { GesturePoint(x: $0.element.x, y: $0.element.y) })
        }
        return Gesture(width: Int(pictureWidth), height: Int(pictureHeight), parts: parts)
    }
}

/// `gesture` as puff-pad sends it from a terminal whose picture covers `columns` × `rows`
/// cells: every point becomes its cell's centre, a report in the previous one's cell is
/// dropped, a stroke that never leaves its cell is a tap, and the cell is declared.
func throughPad(_ gesture: Gesture, columns: Int = 72, rows: Int = 27) -> Gesture {
    let w = Double(gesture.width) / Double(columns), h = Double(gesture.height) / Double(rows)
    func centre(_ p: GesturePoint) -> GesturePoint {
        let column = min(Double(columns - 1), (p.x / w).rounded(.down))
        let row = min(Double(rows - 1), (p.y / h).rounded(.down))
        return GesturePoint(x: ((column + 0.5) * w * 1000).rounded() / 1000, y: ((row + 0.5) * h * 1000).rounded() / 1000)
    }
    var copy = gesture
    copy.parts = gesture.parts.map { part in
        var kept: [GesturePoint] = []
        for point in part.points.map(centre) where kept.last != point { kept.append(point) }
        if part.kind == .tap || kept.count < 2 { return GesturePart(kind: .tap, points: [kept[0]]) }
        return GesturePart(kind: .path, points: kept)
    }
    copy.resolution = GestureResolution(width: w, height: h)
    return copy
}
