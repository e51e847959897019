// The ROC curve as SVG, and the wire files for the libpam replay.
import Glibc
import PuffCore
import PuffSimulation

/// Writes `text` to `path`, creating or truncating it.
func writeFile(_ path: String, _ text: String) {
    guard let file = fopen(path, "w") else {
        complain("gesture-eval: cannot write \(path)\n")
        exit(2)
    }
    fputs(text, file)
    fclose(file)
}

/// FRR (vertical) against FAR (horizontal), 0…50 % each, one polyline per matcher, the
/// default of each marked and labelled.
func writeROC(current: [(factor: Double, frr: Double, far: Double)],
              baseline: [(factor: Double, frr: Double, far: Double)], to path: String) {
    let size = 520.0, margin = 60.0, span = 50.0
    func x(_ far: Double) -> Double { margin + min(far, span) / span * size }
    func y(_ frr: Double) -> Double { margin + size - min(frr, span) / span * size }
    func number(_ value: Double) -> String { String(Int((value * 10).rounded()) / 10) }
    func percent(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
    var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(size + 2 * margin + 160))\" height=\"\(Int(size + 2 * margin))\" font-family=\"sans-serif\" font-size=\"13\">\n"
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    svg += "<text x=\"\(margin)\" y=\"30\" font-size=\"16\">Puff gestures: FRR at σ 1 % against shoulder-surf FAR (tolerance swept)</text>\n"
    for tick in stride(from: 0.0, through: span, by: 10) {
        svg += "<line x1=\"\(x(tick))\" y1=\"\(y(0))\" x2=\"\(x(tick))\" y2=\"\(y(span))\" stroke=\"#ddd\"/>\n"
        svg += "<line x1=\"\(x(0))\" y1=\"\(y(tick))\" x2=\"\(x(span))\" y2=\"\(y(tick))\" stroke=\"#ddd\"/>\n"
        svg += "<text x=\"\(x(tick) - 8)\" y=\"\(y(0) + 18)\">\(number(tick))</text>\n"
        svg += "<text x=\"\(margin - 30)\" y=\"\(y(tick) + 4)\">\(number(tick))</text>\n"
    }
    svg += "<rect x=\"\(x(0))\" y=\"\(y(2))\" width=\"\(x(5) - x(0))\" height=\"\(y(0) - y(2))\" fill=\"#2a2\" fill-opacity=\"0.25\"/>\n"
    svg += "<text x=\"\(x(5) + 4)\" y=\"\(y(5))\" fill=\"#2a2\">goal: FRR ≤ 2 %, FAR ≤ 5 % (the green box)</text>\n"
    svg += "<text x=\"\(x(span / 2) - 90)\" y=\"\(y(0) + 40)\">shoulder-surf FAR (%)</text>\n"
    svg += "<text x=\"20\" y=\"\(y(span / 2))\" transform=\"rotate(-90 20 \(y(span / 2)))\">FRR at σ = 1 % (%)</text>\n"
    for (curve, colour, name) in [(baseline, "#c33", "baseline (v1 squares)"), (current, "#24c", "v2 (shift + DTW)")] {
        let points = curve.map { "\(x($0.far)),\(y($0.frr))" }.joined(separator: " ")
        svg += "<polyline points=\"\(points)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
        for point in curve {
            let isDefault = abs(point.factor - 1) < 1e-9
            svg += "<circle cx=\"\(x(point.far))\" cy=\"\(y(point.frr))\" r=\"\(isDefault ? 6 : 3)\" fill=\"\(colour)\"/>\n"
            if isDefault {
                svg += "<text x=\"\(x(point.far) + 9)\" y=\"\(y(point.frr) - 8)\" fill=\"\(colour)\">\(name) default: FRR \(percent(point.frr)) %, FAR \(percent(point.far)) %</text>\n"
            }
        }
    }
    svg += "<text x=\"\(x(span) - 420)\" y=\"\(y(span) + 20)\" fill=\"#555\">dots: tolerance ×0.5…×2.0 (v2), 3…9 % squares (v1); beyond 50 % drawn on the edge</text>\n"
    svg += "</svg>\n"
    writeFile(path, svg)
}

/// The wire message of `gesture` as text.
func wire(_ gesture: Gesture) -> String {
    String(decoding: GestureWire.serialize(gesture), as: UTF8.self)
}

/// For each gesture: `g<N>.enroll` (the enrollment drawings, one a line, as puff-enroll
/// gesture --stdin reads them) and `g<N>.attempts` (lines "pass <wire>" or "fail <wire>":
/// the verdict of this process's matcher on the template built from the same drawings,
/// after the same wire round trip). Half the attempts are genuine σ 1 %, half shoulder-surfers.
func writeWire(to directory: String, attempts: Int) {
    var random = Random(seed: seed &+ 777)
    var summary = 0
    for (index, ideal) in gestures.enumerated() {
        guard let enrolled = enroll(ideal, redraw: sigma1, settings: .standard, random: &random) else { continue }
        let lines = enrolled.drawings.map(wire)
        guard let parsed = try? lines.map({ line throws(GestureFormatError) in try GestureWire.parse(Array(line.utf8)) }),
              let template = try? GestureEnroller.build(drawings: parsed) else { continue }
        writeFile("\(directory)/g\(index).enroll", lines.joined(separator: "\n") + "\n")
        var text = ""
        for attempt in 0..<attempts {
            let drawing = attempt % 2 == 0 ? sigma1.draw(ideal, random: &random)
                : Redraw(sigma: 0.01, misplacement: 0.03).draw(ideal, random: &random)
            let line = wire(drawing)
            guard let back = try? GestureWire.parse(Array(line.utf8)) else { continue }
            text += (GestureMatcher.verify(template, back).passed ? "pass " : "fail ") + line + "\n"
            summary += 1
        }
        writeFile("\(directory)/g\(index).attempts", text)
    }
    print("wrote \(summary) attempts for the libpam replay to \(directory)")
}

/// Writes `message` to standard error.
func complain(_ message: String) {
    var bytes = Array(message.utf8)
    _ = write(2, &bytes, bytes.count)
}
