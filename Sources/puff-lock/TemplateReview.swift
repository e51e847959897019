import CLockX
import Glibc
import PuffClient
import PuffCore
import PuffPlatform
import PuffScreen

/// What `puff-lock --show` reads on stdin: the template about to be saved and the drawings it
/// was built from, one per line, never on the command line or in the environment.
///
///     template WIRE        the template's parts (its kept points) in the wire format
///     tolerance PIXELS     the side of a tolerance square, in picture pixels
///     drawing WIRE         each drawing in the order drawn (define, confirm, once more): 1 to 3
///
/// The text is read into a wiped buffer; the parsed points are wiped when the window closes.
struct TemplateReviewInput {
    /// Most bytes read: three drawings and the template at the wire format's limit, and a little.
    static let capacity = 4 * (GestureLimits.maximumWireBytes + 16) + 64

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    var template: Gesture
    var toleranceSide: Double
    var drawings: [Gesture]

    /// Reads stdin to its end (at most `capacity` bytes) and parses it; the picture's size is
    /// checked against every line.
    static func read(from fd: Int32, width: Int, height: Int) throws(ParseError) -> TemplateReviewInput {
        let buffer = SecretBuffer(capacity: capacity)
        var chunk: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        defer { withUnsafeMutableBytes(of: &chunk) { Wipe.bytes($0) } }
        while true {
            let got = withUnsafeMutableBytes(of: &chunk) { raw in Glibc.read(fd, raw.baseAddress, raw.count) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw ParseError(description: "cannot read the template from stdin") }
            if got == 0 { break }
            let fits = withUnsafeBytes(of: chunk) { raw in
                (0..<got).allSatisfy { buffer.append(raw[$0]) }
            }
            guard fits else { throw ParseError(description: "the template on stdin is too long") }
        }
        return try buffer.withUnsafeBytes { (raw) throws(ParseError) -> TemplateReviewInput in
            try parse(raw, width: width, height: height)
        }
    }

    static func parse(_ raw: UnsafeRawBufferPointer, width: Int, height: Int) throws(ParseError) -> TemplateReviewInput {
        var template: Gesture?
        var tolerance: Double?
        var drawings: [Gesture] = []
        var start = 0
        while start < raw.count {
            var end = start
            while end < raw.count && raw[end] != UInt8(ascii: "\n") { end += 1 }
            let line = UnsafeRawBufferPointer(rebasing: raw[start..<end])
            start = end + 1
            guard !line.isEmpty else { continue }
            guard let space = line.firstIndex(of: UInt8(ascii: " ")) else {
                throw ParseError(description: "a line of the template input has no value")
            }
            let keyword = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<space]), as: UTF8.self)
            let value = UnsafeRawBufferPointer(rebasing: line[(space + 1)...])
            switch keyword {
            case "template", "drawing":
                let gesture: Gesture
                do {
                    gesture = try GestureWire.parse(value)
                } catch {
                    throw ParseError(description: "the \(keyword) is not a valid gesture: \(error)")
                }
                guard gesture.width == width, gesture.height == height else {
                    throw ParseError(description: "the \(keyword) is for a \(gesture.width)x\(gesture.height) picture, not \(width)x\(height)")
                }
                if keyword == "template" {
                    guard template == nil else { throw ParseError(description: "two templates") }
                    template = gesture
                } else {
                    drawings.append(gesture)
                }
            case "tolerance":
                guard value.count <= 32, let side = Double(String(decoding: value, as: UTF8.self)), side.isFinite, side > 0,
                      side <= Double(max(width, height)) else {
                    throw ParseError(description: "the tolerance is not a size in pixels")
                }
                tolerance = side
            default:
                throw ParseError(description: "unknown line '\(keyword)' in the template input")
            }
        }
        guard let template, let tolerance else { throw ParseError(description: "the template or its tolerance is missing") }
        guard (1...3).contains(drawings.count) else { throw ParseError(description: "1 to 3 drawings are expected, not \(drawings.count)") }
        return TemplateReviewInput(template: template, toleranceSide: tolerance, drawings: drawings)
    }

    /// Overwrites every point with zeros (the arrays' own storage, before it is released).
    mutating func wipe() {
        template.wipe()
        for index in drawings.indices { drawings[index].wipe() }
    }
}

/// `puff-lock --show`: the template about to be saved, drawn as `show-gesture` draws it, with
/// the drawings replayed over it one after the other, until the user saves (Enter, ✓ Save) or
/// cancels (Esc, ✕ Cancel, closing the window).
final class TemplateReview {
    private let display: LockDisplay
    private let picture: LockPicture
    /// Owned here alone (handed over with `consume`), so the wipe in `deinit` overwrites the
    /// arrays themselves rather than a copy.
    private var input: TemplateReviewInput
    private let title: String
    private let printLayout: Bool
    private let renderer: LockRenderer
    private let strokes = StrokeBuffer()
    private var startedAt = monotonicSeconds()

    /// Seconds to replay one drawing, the pause after it, and the pause on the template alone.
    static let drawingSeconds = 2.4
    static let pauseSeconds = 0.8
    static let templateSeconds = 1.6

    init(display: LockDisplay, picture: LockPicture, input: TemplateReviewInput, title: String, printLayout: Bool) {
        self.display = display
        self.picture = picture
        self.input = input
        self.title = title
        self.printLayout = printLayout
        renderer = LockRenderer(display: display)
    }

    /// Runs the window; true when the user saves.
    func run() -> Bool {
        var layout = makeLayout()
        announce(layout)
        draw(layout)
        while true {
            guard let event = display.nextEvent(timeout: 0.04) else {
                draw(layout)
                continue
            }
            switch event {
            case .enter:
                return true
            case .escape, .close:
                return false
            case .pointerDown(let x, let y):
                switch layout.button(at: x, y) {
                case .submit: return true
                case .cancel: return false
                case .replay: startedAt = monotonicSeconds()
                default: break
                }
            case .screensChanged:
                layout = makeLayout()
                announce(layout)
            case .text(var typed):
                typed.wipe()
            case .redraw, .pointerMove, .pointerUp, .backspace:
                break
            }
            if !display.hasQueuedEvents { draw(layout) }
        }
    }

    private func makeLayout() -> LockLayout {
        LockLayout(monitor: display.primaryMonitor(), pictureSize: (picture.width, picture.height), panel: .none,
                   gesture: true, tools: [.replay, .cancel, .submit])
    }

    private func announce(_ layout: LockLayout) {
        guard printLayout, let rect = layout.picture else { return }
        Report.raw("puff-lock: picture \(rect.x) \(rect.y) \(layout.scale) \(layout.pictureWidth) \(layout.pictureHeight)\n"
                   + LockSession.buttonLines(layout) + "puff-lock: review ready\n")
    }

    /// The template in words: each part's kind and point count in order, and the tolerance.
    private var summary: String {
        let parts = input.template.parts.enumerated().map { index, part in
            part.kind == .tap ? "\(index + 1) tap" : "\(index + 1) stroke (\(part.points.count) points)"
        }
        let side = (input.toleranceSide * 10).rounded() / 10
        let shown = side == side.rounded() ? String(Int(side)) : String(side)
        return parts.joined(separator: " → ") + " · tolerance squares \(shown) px"
    }

    /// Fills the stroke buffer with the replay at this moment; the line that says what is shown.
    private func replayFrame() -> String {
        let count = input.drawings.count
        let cycle = Double(count) * (Self.drawingSeconds + Self.pauseSeconds) + Self.templateSeconds
        let elapsed = (monotonicSeconds() - startedAt).truncatingRemainder(dividingBy: cycle)
        strokes.removeAll()
        let index = Int(elapsed / (Self.drawingSeconds + Self.pauseSeconds))
        guard index < count else { return "The template alone" }
        let drawing = input.drawings[index]
        let fraction = min(1, (elapsed - Double(index) * (Self.drawingSeconds + Self.pauseSeconds)) / Self.drawingSeconds)
        let total = drawing.parts.reduce(0) { $0 + $1.points.count }
        var left = max(1, Int((fraction * Double(total)).rounded(.up)))
        for part in drawing.parts where left > 0 {
            strokes.appendPart(kind: part.kind, points: part.points.prefix(left))
            left -= part.points.count
        }
        let names = count == 3 ? ["define", "confirm", "once more"] : ["define", "confirm"]
        let name = index < names.count ? " (\(names[index]))" : ""
        return "Replay: drawing \(index + 1) of \(count)\(name)"
    }

    private func draw(_ layout: LockLayout) {
        let replay = replayFrame()
        var scene = LockScene(title: title, prompt: replay + " · Enter saves, Esc cancels",
                              messages: [.init(text: summary, isError: false)])
        scene.submitLabel = "✓ Save"
        scene.template = TemplateOverlay(parts: input.template.parts, toleranceSide: input.toleranceSide)
        renderer.draw(scene, layout: layout, picture: picture, strokes: strokes)
    }

    deinit {
        strokes.removeAll()
        input.wipe()
    }
}
