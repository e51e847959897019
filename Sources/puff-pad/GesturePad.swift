import Glibc
import PuffCore

/// The drawing screen: the picture, scaled to fit, with the parts drawn so far on top.
///
/// Press, drag and release the left button to draw a path; press and release in one cell to
/// tap. Enter finishes, Backspace removes the last part, Esc (or Ctrl-C) cancels. When a
/// passcode may be typed instead, Tab or any printable key switches to it.
final class GesturePad {
    /// How the screen ended.
    enum Outcome {
        case gesture(Gesture)
        /// The user chose the passcode, possibly by typing its first character.
        case passcode(firstCharacter: UInt8?)
        case cancelled
        case terminated(Int32)
    }

    private let session: TerminalSession
    private let picture: PadPicture
    private let colors: PadPicture.Colors
    /// First row: what to do.
    var title: String
    /// Row above the hints: the latest message (module messages, mistakes).
    var message: String
    /// Whether Tab or typing switches to the passcode.
    var passcodeAllowed: Bool
    /// What the picture shows of the parts (`gesture_trail`): `visible` (`draw`, enrollment)
    /// numbers them and keeps them; `fade` shows the stroke being drawn, in one colour, and
    /// the last part dimmed for `GestureTrail.fadeSeconds`; `hidden` shows nothing on the
    /// picture. The hint line counts the parts in every mode.
    var trail = GestureTrail.visible
    /// When the last finished part is taken off the picture (`fade`), in monotonic seconds.
    private var fadeUntil: Double?

    private(set) var parts: [GesturePart] = []
    private var stroke: [GesturePoint] = []
    private var drawing = false
    /// Whether a press came as a cell report (no position inside the cell): the message then
    /// declares the cell size, so the matcher allows for points up to half a cell off.
    private var cellReports = false
    private var layout: PictureLayout?
    private var picturelines: [String] = []
    private var screen = (columns: 0, rows: 0)

    init(session: TerminalSession, picture: PadPicture, title: String, message: String = "",
         passcodeAllowed: Bool = false) {
        self.session = session
        self.picture = picture
        self.colors = PadPicture.Colors.detect()
        self.title = title
        self.message = message
        self.passcodeAllowed = passcodeAllowed
    }

    /// Shows the screen until the user finishes, cancels or switches to the passcode.
    func run() -> Outcome {
        redraw()
        while true {
            let timeout = fadeUntil.map { Int32(max(0, min(1000, (($0 - Self.now()) * 1000).rounded(.up)))) } ?? -1
            switch session.next(timeout: timeout) {
            case .terminate(let signal): return .terminated(signal)
            case .redraw: redraw()
            case .timeout:
                fadeUntil = nil
                redraw()
            case .input(let event):
                if let outcome = handle(event) { return outcome }
            }
        }
    }

    /// Forgets what was drawn (a new attempt).
    func reset() {
        parts.removeAll()
        stroke.removeAll()
        drawing = false
        cellReports = false
        fadeUntil = nil
    }

    private static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private func handle(_ event: InputEvent) -> Outcome? {
        switch event {
        case .press(let column, let row, let within):
            guard let layout, layout.contains(column: column, row: row) else { return nil }
            guard parts.count < GestureLimits.maximumParts else {
                show("A gesture has at most \(GestureLimits.maximumParts) parts.")
                return nil
            }
            drawing = true
            if within == .centre { cellReports = true }
            stroke = [layout.point(column: column, row: row, within: within)]
            guard trail != .hidden else { return nil }
            var frame = Frame()
            drawStroke(stroke, index: parts.count, kind: .path, into: &frame, labelled: trail == .visible)
            frame.send(to: session)
        case .drag(let column, let row, let within):
            guard drawing, let layout else { return nil }
            extend(to: layout.point(column: column, row: row, within: within))
        case .release(let column, let row, let within):
            guard drawing, let layout else { return nil }
            extend(to: layout.point(column: column, row: row, within: within))
            drawing = false
            // Pixel reports see a tap's tremble: a stroke that never left its first cell is a tap.
            let first = stroke[0]
            let cell = layout.cellSize
            let stayed = stroke.allSatisfy { abs($0.x - first.x) < cell.width && abs($0.y - first.y) < cell.height }
            let part = stayed ? GesturePart(kind: .tap, points: [first]) : GesturePart(kind: .path, points: stroke)
            stroke = []
            parts.append(part)
            var frame = Frame()
            switch trail {
            case .visible: drawStroke(part.points, index: parts.count - 1, kind: part.kind, into: &frame)
            case .fade:
                // Dimmed now, taken off the picture when `fadeUntil` passes (`run`).
                drawStroke(part.points, index: parts.count - 1, kind: part.kind, into: &frame, labelled: false, dimmed: true)
                fadeUntil = Self.now() + GestureTrail.fadeSeconds
            case .hidden: break
            }
            hintLine(into: &frame)
            frame.send(to: session)
        case .enter:
            guard !drawing else { return nil }
            guard !parts.isEmpty else {
                show("Draw on the picture first (or press Esc to cancel).")
                return nil
            }
            let cell = layout.map { GestureResolution(width: $0.cellSize.width, height: $0.cellSize.height) }
            return .gesture(Gesture(width: picture.width, height: picture.height, parts: parts,
                                    resolution: cellReports ? cell.map(Self.wireRounded) : nil))
        case .backspace:
            guard !drawing, !parts.isEmpty else { return nil }
            parts.removeLast()
            redraw()
        case .escape, .interrupt:
            return .cancelled
        case .suspend:
            session.suspend()
            redraw()
        case .tab:
            if passcodeAllowed { return .passcode(firstCharacter: nil) }
        case .character(let byte):
            if passcodeAllowed { return .passcode(firstCharacter: byte) }
        case .pixelReports, .cellPixels:
            break  // answered by the session
        }
        return nil
    }

    /// Adds a point to the stroke being drawn (a report in the same cell adds nothing) and
    /// draws the new segment.
    private func extend(to point: GesturePoint) {
        guard let last = stroke.last, last != point else { return }
        guard stroke.count < GestureLimits.maximumWirePointsPerPart else { return }
        stroke.append(point)
        guard trail != .hidden else { return }
        var frame = Frame()
        drawStroke([last, point], index: parts.count, kind: .path, into: &frame, labelled: trail == .visible && stroke.count == 2)
        frame.send(to: session)
    }

    /// The cell size as the wire format keeps it (thousandths of a pixel), at least one.
    static func wireRounded(_ cell: GestureResolution) -> GestureResolution {
        GestureResolution(width: max(0.001, (cell.width * 1000).rounded() / 1000),
                          height: max(0.001, (cell.height * 1000).rounded() / 1000))
    }

    private func show(_ text: String) {
        message = text
        var frame = Frame()
        messageLine(into: &frame)
        frame.send(to: session)
    }

    /// Draws everything: title, picture, parts, message and hints. Re-renders the picture
    /// only when the window size changed.
    func redraw() {
        let size = session.size()
        let aspect = size.pixelWidth > 0 && size.pixelHeight > 0
            ? (Double(size.pixelWidth) / Double(size.columns)) / (Double(size.pixelHeight) / Double(size.rows))
            : 0.5
        var frame = Frame()
        frame.clear()
        frame.line(title, row: 0, width: size.columns, style: "7")
        if (size.columns, size.rows) != screen {
            screen = (size.columns, size.rows)
            layout = nil
            let areaRows = size.rows - 3
            if areaRows >= 3 && size.columns >= 8 {
                let fit = picture.fit(columns: size.columns, rows: areaRows, cellAspect: aspect)
                let placed = PictureLayout(left: (size.columns - fit.columns) / 2, top: 1 + (areaRows - fit.rows) / 2,
                                           columns: fit.columns, rows: fit.rows,
                                           pictureWidth: picture.width, pictureHeight: picture.height)
                picturelines = picture.render(columns: fit.columns, rows: fit.rows, colors: colors)
                layout = picturelines.count == fit.rows ? placed : nil
            }
        }
        if let layout {
            for (index, line) in picturelines.enumerated() {
                frame.move(column: layout.left, row: layout.top + index)
                frame.raw(line + "\u{1B}[0m")
            }
            switch trail {
            case .visible:
                for (index, part) in parts.enumerated() {
                    drawStroke(part.points, index: index, kind: part.kind, into: &frame)
                }
                if drawing { drawStroke(stroke, index: parts.count, kind: .path, into: &frame) }
            case .fade:
                if fadeUntil != nil, let last = parts.last {
                    drawStroke(last.points, index: parts.count - 1, kind: last.kind, into: &frame, labelled: false, dimmed: true)
                }
                if drawing { drawStroke(stroke, index: parts.count, kind: .path, into: &frame, labelled: false) }
            case .hidden: break
            }
        } else {
            frame.line("The window is too small to show the picture.", row: 1, width: size.columns)
        }
        messageLine(into: &frame)
        hintLine(into: &frame)
        frame.send(to: session)
    }

    private func messageLine(into frame: inout Frame) {
        let size = session.size()
        frame.line(message, row: size.rows - 2, width: size.columns, style: "1")
    }

    private func hintLine(into frame: inout Frame) {
        let size = session.size()
        var hint = "Drag: path  Click: tap  Enter: done  Backspace: undo  Esc: cancel"
        if passcodeAllowed { hint += "  Tab/type: passcode" }
        frame.line("\(parts.count) part\(parts.count == 1 ? "" : "s") | " + hint, row: size.rows - 1,
                   width: size.columns, style: "2")
    }

    /// Draws a part's cells: the line between consecutive points (cells in between filled, so
    /// a fast stroke shows no gaps), its number on its first cell, a diamond for a tap.
    /// Without `visible`, every part has the one colour (`PartStyle.trail`), dimmed once finished.
    private func drawStroke(_ points: [GesturePoint], index: Int, kind: GesturePartKind,
                            into frame: inout Frame, labelled: Bool = true, dimmed: Bool = false) {
        guard let layout, let first = points.first else { return }
        let style = trail == .visible ? PartStyle.style(part: index) : (dimmed ? PartStyle.fading : PartStyle.trail)
        if kind == .tap {
            let cell = layout.cell(of: first)
            frame.put("◆", column: cell.column, row: cell.row, style: style)
            return
        }
        var previous = layout.cell(of: first)
        if points.count == 1 { frame.put("●", column: previous.column, row: previous.row, style: style) }
        for point in points.dropFirst() {
            let next = layout.cell(of: point)
            for cell in Self.cells(from: previous, to: next) {
                frame.put("●", column: cell.column, row: cell.row, style: style)
            }
            previous = next
        }
        if labelled {
            let start = layout.cell(of: first)
            frame.put(PartStyle.label(part: index), column: start.column, row: start.row, style: style)
        }
    }

    /// The cells of a straight line between two cells (Bresenham), both ends included.
    static func cells(from a: (column: Int, row: Int), to b: (column: Int, row: Int)) -> [(column: Int, row: Int)] {
        var (x, y) = a
        let dx = abs(b.column - x), dy = -abs(b.row - y)
        let sx = x < b.column ? 1 : -1, sy = y < b.row ? 1 : -1
        var error = dx + dy
        var result: [(column: Int, row: Int)] = []
        while true {
            result.append((x, y))
            if x == b.column && y == b.row { break }
            let doubled = 2 * error
            if doubled >= dy { error += dy; x += sx }
            if doubled <= dx { error += dx; y += sy }
        }
        return result
    }
}
