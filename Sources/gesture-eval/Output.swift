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

/// FRR at σ 1 % (vertical, 0…20 %) against FAR (horizontal, 0…80 %): one polyline for the
/// shoulder-surfer and one for the video-studier, the default marked and labelled.
func writeROC(_ curve: [(factor: Double, frr: Double, surfer: Double, video: Double)], to path: String) {
    let width = 640.0, height = 400.0, margin = 70.0, farSpan = 80.0, frrSpan = 20.0
    func x(_ far: Double) -> Double { margin + min(far, farSpan) / farSpan * width }
    func y(_ frr: Double) -> Double { margin + height - min(frr, frrSpan) / frrSpan * height }
    func percent(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
    var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width + 2 * margin + 40))\" height=\"\(Int(height + 2 * margin + 40))\" font-family=\"sans-serif\" font-size=\"13\">\n"
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    svg += "<text x=\"\(margin)\" y=\"30\" font-size=\"16\">Puff gestures v3: FRR at σ 1 % against onlooker FAR, tolerance factor 0.6…1.6</text>\n"
    for tick in stride(from: 0.0, through: farSpan, by: 10) {
        svg += "<line x1=\"\(x(tick))\" y1=\"\(y(0))\" x2=\"\(x(tick))\" y2=\"\(y(frrSpan))\" stroke=\"#ddd\"/>\n"
        svg += "<text x=\"\(x(tick) - 8)\" y=\"\(y(0) + 18)\">\(Int(tick))</text>\n"
    }
    for tick in stride(from: 0.0, through: frrSpan, by: 2) {
        svg += "<line x1=\"\(x(0))\" y1=\"\(y(tick))\" x2=\"\(x(farSpan))\" y2=\"\(y(tick))\" stroke=\"#ddd\"/>\n"
        svg += "<text x=\"\(margin - 28)\" y=\"\(y(tick) + 4)\">\(Int(tick))</text>\n"
    }
    svg += "<rect x=\"\(x(0))\" y=\"\(y(2))\" width=\"\(x(5) - x(0))\" height=\"\(y(0) - y(2))\" fill=\"#dde4f8\" stroke=\"#24c\"/>\n"
    svg += "<rect x=\"\(x(0))\" y=\"\(y(2))\" width=\"\(x(20) - x(0))\" height=\"\(y(0) - y(2))\" fill=\"none\" stroke=\"#c33\" stroke-dasharray=\"5 3\"/>\n"
    svg += "<text x=\"\(margin)\" y=\"\(y(0) + 80)\" fill=\"#555\">goals at σ 1 %: FRR ≤ 2 %, shoulder-surfer FAR ≤ 5 % (blue box), video-studier FAR ≤ 20 % (dashed)</text>\n"
    svg += "<text x=\"\(x(farSpan / 2) - 30)\" y=\"\(y(0) + 42)\">FAR (%)</text>\n"
    svg += "<text x=\"0\" y=\"0\" transform=\"translate(24 \(y(frrSpan / 2) + 50)) rotate(-90)\">FRR at σ 1 % (%)</text>\n"
    let lines: [([(Double, Double, Double)], String, String, Double)] = [
        (curve.map { ($0.factor, $0.frr, $0.surfer) }, "#24c", "shoulder-surfer", -46),
        (curve.map { ($0.factor, $0.frr, $0.video) }, "#c33", "video-studier", -26),
    ]
    for (points, colour, name, labelOffset) in lines {
        svg += "<polyline points=\"" + points.map { "\(x($0.2)),\(y($0.1))" }.joined(separator: " ")
            + "\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
        for (factor, frr, far) in points {
            let isDefault = abs(factor - 1) < 1e-9
            svg += "<circle cx=\"\(x(far))\" cy=\"\(y(frr))\" r=\"\(isDefault ? 6 : 3)\" fill=\"\(colour)\"/>\n"
            if isDefault {
                svg += "<line x1=\"\(x(far))\" y1=\"\(y(frr))\" x2=\"\(x(far) + 12)\" y2=\"\(y(frr) + labelOffset)\" stroke=\"\(colour)\"/>\n"
                svg += "<text x=\"\(x(far) + 14)\" y=\"\(y(frr) + labelOffset - 2)\" fill=\"\(colour)\">\(name), default: FRR \(percent(frr)) %, FAR \(percent(far)) %</text>\n"
            }
        }
    }
    svg += "<text x=\"\(margin)\" y=\"\(y(0) + 62)\" fill=\"#555\">dots: factor 0.6 (top, tightest) … 1.6 (bottom); FAR beyond 80 % drawn on the edge</text>\n"
    svg += "</svg>\n"
    writeFile(path, svg)
}

/// The wire message of `gesture` as text.
func wire(_ gesture: Gesture) -> String {
    String(decoding: GestureWire.serialize(gesture), as: UTF8.self)
}

/// For each gesture: `g<N>.enroll` (the enrollment drawings of one σ 1 % owner, one a line, as
/// puff-enroll gesture --stdin reads them) and `g<N>.attempts` (lines "pass <wire>" or "fail
/// <wire>": the verdict of this process's matcher on the template built from the same
/// drawings, after the same wire round trip). The attempts cycle through a genuine σ 1 %
/// redraw, a shoulder-surfer, a genuine redraw in puff-pad (declaring its cells) and a
/// video-studier declaring the coarsest cells.
func writeWire(to directory: String, gestures: [IdealGesture], attempts: Int) {
    var random = Random(seed: baseSeed &+ 777)
    var summary = 0
    for (index, ideal) in gestures.enumerated() {
        let enrollment = enroll(ideal, owner: owner(sigma1), settings: .standard, random: &random)
        guard enrollment.template != nil else { continue }
        let lines = enrollment.drawings.map(wire)
        guard let parsed = try? lines.map({ line throws(GestureFormatError) in try GestureWire.parse(Array(line.utf8)) }),
              var template = try? GestureEnroller.build(drawings: parsed) else { continue }
        writeFile("\(directory)/g\(index).enroll", lines.joined(separator: "\n") + "\n")
        var text = ""
        for attempt in 0..<attempts {
            var drawing: Gesture
            switch attempt % 4 {
            case 0: drawing = sigma1.draw(ideal, random: &random)
            case 1: drawing = surfer.draw(ideal, random: &random)
            case 2: drawing = Redraw(sigma: 0.01, capture: padCapture).draw(ideal, random: &random)
            default:
                drawing = videoStudier.draw(ideal, random: &random)
                drawing.resolution = coarsest
            }
            guard let entry = replayLine(drawing, against: &template) else { continue }
            text += entry
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
