import CLockX
import Glibc
import PuffCore

/// Everything on the lock screen at one moment.
package struct LockScene {
    /// A line of the module's messages; errors are shown in red, information in amber.
    package struct Message {
        package var text: String
        package var isError: Bool

        package init(text: String, isError: Bool) {
            self.text = text
            self.isError = isError
        }
    }

    /// The left of the bar: `Locked: USER`, or the drawing window's title.
    package var title: String
    /// What is accepted, in words (from the prompt contract), or another module's prompt.
    package var prompt: String
    package var messages: [Message] = []
    /// A line under the messages: "Checking…", "Press a key or click to try again".
    package var hint: String = ""
    package var panel: LockPanel = .none
    /// How many characters are in the field (shown as dots).
    package var fieldCount = 0
    /// For fixed-length passcodes: the number of boxes.
    package var fieldLength: Int?
    /// Echo-on prompts of other modules show what is typed.
    package var fieldText: String?
    /// A label above the field.
    package var fieldLabel = ""
    /// Whether the field (rather than the picture) takes typed text now.
    package var fieldActive = false
    /// The wide submit button's label.
    package var submitLabel = "✓ Unlock"
    /// Nothing to answer (a locked account): the messages go large in the middle.
    package var centred = false
    /// `--show`: the template drawn over the picture, under the replayed strokes.
    package var template: TemplateOverlay?
    /// The time and the date, drawn in the middle of the bar (nil: no clock).
    package var clock: (time: String, date: String)?
    /// How far the field and the message line are moved sideways now (the shake after a
    /// wrong entry), in screen pixels.
    package var shake = 0.0
    /// What the picture shows of the strokes (`gesture_trail`); `visible` draws them all,
    /// numbered, with arrows (enrollment, the review).
    package var trail = GestureTrail.visible
    /// `monotonicSeconds()` of this frame, for a fading trail.
    package var now = 0.0

    /// Boxes in the middle of the screen, each a line of text with a detail beside it
    /// (puff-greeter's user list and session choice); empty on the lock screen.
    package var rows: [Row] = []

    package struct Row {
        package var label: String
        package var detail: String
        package var rect: LockRect
        package var selected: Bool

        package init(label: String, detail: String, rect: LockRect, selected: Bool) {
            self.label = label
            self.detail = detail
            self.rect = rect
            self.selected = selected
        }
    }

    package init(title: String, prompt: String, messages: [Message] = []) {
        self.title = title
        self.prompt = prompt
        self.messages = messages
    }
}

/// What `show-gesture` draws, for the review window: per part its kept points in order, the
/// tolerance square centred on each, the direction from point to point, and the part number.
package struct TemplateOverlay {
    /// The template's parts, in picture pixels.
    package var parts: [GesturePart]
    /// Side of a tolerance square, in picture pixels.
    package var toleranceSide: Double

    package init(parts: [GesturePart], toleranceSide: Double) {
        self.parts = parts
        self.toleranceSide = toleranceSide
    }
}

/// Draws the lock screen with cairo into an off-screen pixmap, then copies it to the window
/// in one request (no flicker). The picture is scaled once per layout and cached.
package final class LockRenderer {
    /// X11: the window drawn into; nil on Wayland.
    private let display: LockDisplay?
    /// Wayland: the frames drawn into (puff-lock's child, puff-greeter's window); nil on X11.
    private let frames: (any FrameTarget)?
    private var pixmap: Pixmap = 0
    private var surface: OpaquePointer?
    private var size = (width: 0, height: 0)
    private var scaledPicture: OpaquePointer?
    private var scaledFor: LockRect?
    private let gc: GC?
    /// The colours.
    package var theme = LockTheme.dark
    /// A pixmap of the screen as it was before it was covered (`--translucent`): shown
    /// blurred and veiled instead of the plain background. nil: opaque.
    package var backdrop: Pixmap?
    private var blurred: OpaquePointer?
    private var blurredFor = (width: 0, height: 0)
    /// The interface scale of the layout being drawn (HiDPI).
    private var ui = 1.0

    /// Colours of the parts, in drawing order (then repeated).
    package static let partColors: [(Double, Double, Double)] = [
        (1.00, 0.27, 0.23), (0.20, 0.60, 1.00), (0.20, 0.85, 0.35), (1.00, 0.75, 0.10),
        (0.80, 0.35, 1.00), (0.10, 0.90, 0.90), (1.00, 0.45, 0.75), (0.95, 0.95, 0.95),
    ]

    package init(display: LockDisplay) {
        self.display = display
        frames = nil
        gc = XCreateGC(display.display, display.window, 0, nil)
    }

    /// Draws into Wayland frames (puff-lock's child, puff-greeter's window).
    package init(frames: any FrameTarget) {
        display = nil
        self.frames = frames
        gc = nil
    }

    deinit {
        if let blurred { cairo_surface_destroy(blurred) }
        if let scaledPicture { cairo_surface_destroy(scaledPicture) }
        if let surface { cairo_surface_destroy(surface) }
        if let display {
            if pixmap != 0 { XFreePixmap(display.display, pixmap) }
            if let gc { XFreeGC(display.display, gc) }
        }
    }

    private func ensureBuffer() -> OpaquePointer? {
        if let frames {
            let canvas = frames.canvas()
            size = (frames.width, frames.height)
            return canvas
        }
        guard let display else { return nil }
        let wanted = (display.width, display.height)
        if surface != nil && size == wanted { return surface }
        if let surface { cairo_surface_destroy(surface) }
        if pixmap != 0 { XFreePixmap(display.display, pixmap) }
        size = wanted
        pixmap = XCreatePixmap(display.display, display.window, UInt32(max(1, size.width)), UInt32(max(1, size.height)),
                               UInt32(display.depth))
        surface = cairo_xlib_surface_create(display.display, pixmap, display.visual, Int32(size.width), Int32(size.height))
        return surface
    }

    /// Draws the whole scene and shows it.
    package func draw(_ scene: LockScene, layout: LockLayout, picture: LockPicture?, strokes: StrokeBuffer) {
        guard let surface = ensureBuffer(), let cr = cairo_create(surface) else { return }
        defer { cairo_destroy(cr) }
        ui = layout.ui
        drawBackground(cr)
        drawBar(cr, scene, layout)
        cairo_save(cr)
        cairo_translate(cr, scene.shake, 0)
        drawMessages(cr, scene, layout)
        cairo_restore(cr)
        if let picture, let rect = layout.picture {
            drawPicture(cr, picture, rect)
            if let template = scene.template {
                // Dim the picture a little so the template and the replay stand out.
                cairo_set_source_rgba(cr, 0, 0, 0, 0.35)
                cairo_rectangle(cr, rect.x, rect.y, rect.width, rect.height)
                cairo_fill(cr)
                drawTemplate(cr, template, layout)
            }
            switch scene.trail {
            case .visible: drawStrokes(cr, strokes, layout, labels: scene.template == nil)
            case .fade, .hidden: drawTrail(cr, strokes, layout, scene.trail, now: scene.now)
            }
            setColour(cr, theme.frame)
            cairo_set_line_width(cr, 1)
            cairo_rectangle(cr, rect.x - 0.5, rect.y - 0.5, rect.width + 1, rect.height + 1)
            cairo_stroke(cr)
        }
        drawPanel(cr, scene, layout)
        drawRows(cr, scene)
        for (button, rect) in layout.buttons { drawButton(cr, button, rect, scene: scene, strokes: strokes) }
        cairo_surface_flush(surface)
        if let frames {
            frames.present()
        } else if let display, let gc {
            XCopyArea(display.display, pixmap, display.window, gc, 0, 0, UInt32(size.width), UInt32(size.height), 0, 0)
            XFlush(display.display)
        }
    }

    private func setColour(_ cr: OpaquePointer, _ colour: LockTheme.Colour) {
        cairo_set_source_rgb(cr, colour.red, colour.green, colour.blue)
    }

    /// The plain background, or the screen as it was, blurred (scaled down 16 times and up
    /// again, smoothly) and veiled in the theme's colour.
    private func drawBackground(_ cr: OpaquePointer) {
        setColour(cr, theme.background)
        cairo_paint(cr)
        guard let backdrop, let display else { return }
        if blurred == nil || blurredFor != size {
            if let blurred { cairo_surface_destroy(blurred) }
            blurred = nil
            let factor = 24.0
            let small = (width: Int32(max(1, Double(size.width) / factor)), height: Int32(max(1, Double(size.height) / factor)))
            guard let source = cairo_xlib_surface_create(display.display, backdrop, display.visual, Int32(size.width), Int32(size.height)),
                  let reduced = cairo_image_surface_create(CAIRO_FORMAT_RGB24, small.width, small.height) else { return }
            defer {
                cairo_surface_destroy(source)
                cairo_surface_destroy(reduced)
            }
            if let scr = cairo_create(reduced) {
                cairo_scale(scr, Double(small.width) / Double(size.width), Double(small.height) / Double(size.height))
                cairo_set_source_surface(scr, source, 0, 0)
                cairo_pattern_set_filter(cairo_get_source(scr), CAIRO_FILTER_GOOD)
                cairo_paint(scr)
                cairo_destroy(scr)
            }
            guard let target = cairo_image_surface_create(CAIRO_FORMAT_RGB24, Int32(size.width), Int32(size.height)),
                  let tcr = cairo_create(target) else { return }
            cairo_scale(tcr, Double(size.width) / Double(small.width), Double(size.height) / Double(small.height))
            cairo_set_source_surface(tcr, reduced, 0, 0)
            cairo_pattern_set_filter(cairo_get_source(tcr), CAIRO_FILTER_BILINEAR)
            cairo_paint(tcr)
            cairo_destroy(tcr)
            blurred = target
            blurredFor = size
        }
        guard let blurred else { return }
        cairo_set_source_surface(cr, blurred, 0, 0)
        cairo_paint(cr)
        cairo_set_source_rgba(cr, theme.veil.red, theme.veil.green, theme.veil.blue, theme.veilAlpha)
        cairo_paint(cr)
    }

    private func drawBar(_ cr: OpaquePointer, _ scene: LockScene, _ layout: LockLayout) {
        let bar = layout.bar
        let inset = 20 * ui
        setColour(cr, theme.bar)
        cairo_rectangle(cr, bar.x, bar.y, bar.width, bar.height)
        cairo_fill(cr)
        let titleWidth = textWidth(cr, scene.title, size: 18, bold: true)
        text(cr, scene.title, x: bar.x + inset, y: bar.midY, size: 18, bold: true, color: theme.title)
        var promptLeft = bar.x + inset + titleWidth + 40 * ui
        if let clock = scene.clock {
            // The time, then the date (on screens wide enough to keep the prompt whole),
            // together centred in the bar (moved right of a long title).
            let date = bar.width >= 1200 * ui ? clock.date : ""
            let timeWidth = textWidth(cr, clock.time, size: 22, bold: true)
            let dateWidth = textWidth(cr, date, size: 15)
            let block = timeWidth + 12 * ui + dateWidth
            let left = max(bar.midX - block / 2, promptLeft)
            text(cr, clock.time, x: left, y: bar.midY, size: 22, bold: true, color: theme.clock)
            text(cr, date, x: left + timeWidth + 12 * ui, y: bar.midY, size: 15, color: theme.prompt)
            promptLeft = left + block + 28 * ui
        }
        // The prompt shrinks (then is cut short) to fit beside the title on narrow monitors.
        let room = bar.maxX - inset - promptLeft
        var size = 17.0
        while size > 11 && textWidth(cr, scene.prompt, size: size) > room { size -= 1 }
        var prompt = scene.prompt
        while prompt.count > 1 && textWidth(cr, prompt + "…", size: size) > room { prompt.removeLast() }
        if prompt != scene.prompt { prompt += "…" }
        text(cr, prompt, x: bar.maxX - inset, y: bar.midY, size: size, color: theme.prompt, align: 1)
    }

    private func drawMessages(_ cr: OpaquePointer, _ scene: LockScene, _ layout: LockLayout) {
        if scene.centred {
            var y = layout.monitor.midY - 20 * ui * Double(scene.messages.count)
            for message in scene.messages {
                let color = message.isError ? theme.error : theme.info
                // Shrunk to a tenth of the monitor's width short of its edges: a lock notice
                // with the reply's verdict before it ran edge to edge on a 1024 px screen.
                var size = 26.0
                while size > 14 && textWidth(cr, message.text, size: size, bold: true) > layout.monitor.width * 0.9 { size -= 1 }
                text(cr, message.text, x: layout.monitor.midX, y: y, size: size, bold: true, color: color, align: 0.5)
                y += 44 * ui
            }
            text(cr, scene.hint, x: layout.monitor.midX, y: y + 16 * ui, size: 18, color: theme.hint, align: 0.5)
            return
        }
        let line = layout.message
        var pieces: [(String, LockTheme.Colour)] = scene.messages.map {
            ($0.text, $0.isError ? theme.error : theme.info)
        }
        if !scene.hint.isEmpty { pieces.append((scene.hint, theme.hint)) }
        var joined = pieces.map(\.0).joined(separator: "   ")
        guard !joined.isEmpty else { return }
        // One line, centred; each piece in its colour. On a narrow monitor the line shrinks,
        // then the hint goes (the module's messages stay whole).
        var size = 17.0
        while size > 11 && textWidth(cr, joined, size: size, bold: true) > line.width - 40 { size -= 1 }
        if textWidth(cr, joined, size: size, bold: true) > line.width - 40, !scene.hint.isEmpty, pieces.count > 1 {
            pieces.removeLast()
            joined = pieces.map(\.0).joined(separator: "   ")
        }
        let total = textWidth(cr, joined, size: size, bold: true)
        var x = line.midX - total / 2
        for (index, piece) in pieces.enumerated() {
            let shown = index < pieces.count - 1 ? piece.0 + "   " : piece.0
            text(cr, shown, x: x, y: line.midY, size: size, bold: true, color: piece.1)
            x += textWidth(cr, shown, size: size, bold: true)
        }
    }

    private func drawPicture(_ cr: OpaquePointer, _ picture: LockPicture, _ rect: LockRect) {
        if scaledFor != rect {
            if let scaledPicture { cairo_surface_destroy(scaledPicture) }
            scaledPicture = nil
            let width = Int32(max(1, rect.width.rounded(.up))), height = Int32(max(1, rect.height.rounded(.up)))
            if let target = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height), let scr = cairo_create(target) {
                cairo_scale(scr, rect.width / Double(picture.width), rect.height / Double(picture.height))
                cairo_set_source_surface(scr, picture.surface, 0, 0)
                cairo_pattern_set_filter(cairo_get_source(scr), CAIRO_FILTER_GOOD)
                cairo_paint(scr)
                cairo_destroy(scr)
                scaledPicture = target
                scaledFor = rect
            }
        }
        guard let scaledPicture else { return }
        cairo_set_source_surface(cr, scaledPicture, rect.x, rect.y)
        cairo_paint(cr)
    }

    /// The template: tolerance squares (translucent), the kept points joined in order with an
    /// arrow head every few points and at the end (the direction), dots, and the part number.
    private func drawTemplate(_ cr: OpaquePointer, _ template: TemplateOverlay, _ layout: LockLayout) {
        let half = template.toleranceSide * layout.scale / 2
        for (index, part) in template.parts.enumerated() {
            let color = Self.partColors[index % Self.partColors.count]
            let points = part.points.map { layout.screenPoint($0) }
            guard let first = points.first else { continue }
            for point in points {
                cairo_new_path(cr)
                cairo_rectangle(cr, point.x - half, point.y - half, 2 * half, 2 * half)
                cairo_set_source_rgba(cr, color.0, color.1, color.2, 0.10)
                cairo_fill_preserve(cr)
                cairo_set_source_rgba(cr, color.0, color.1, color.2, 0.45)
                cairo_set_line_width(cr, 1)
                cairo_stroke(cr)
            }
            cairo_set_source_rgb(cr, color.0, color.1, color.2)
            if points.count > 1 {
                cairo_new_path(cr)
                cairo_move_to(cr, first.x, first.y)
                for point in points.dropFirst() { cairo_line_to(cr, point.x, point.y) }
                cairo_set_line_width(cr, 2)
                cairo_stroke(cr)
                for index in 1..<points.count where index % 4 == 0 || index == points.count - 1 {
                    arrowHead(cr, from: points[index - 1], to: points[index], size: 11)
                }
            }
            for point in points {
                cairo_new_path(cr)
                cairo_arc(cr, point.x, point.y, part.kind == .tap ? 6 : 3, 0, 2 * Double.pi)
                cairo_fill(cr)
            }
            let label = (x: first.x - 18, y: first.y - 18)
            cairo_new_path(cr)
            cairo_arc(cr, label.x, label.y, 12, 0, 2 * Double.pi)
            cairo_set_source_rgb(cr, color.0, color.1, color.2)
            cairo_fill(cr)
            text(cr, String(index + 1), x: label.x, y: label.y, size: 14, bold: true, color: (0.05, 0.05, 0.05), align: 0.5)
        }
    }

    /// A filled arrow head at `to`, pointing away from `from` (nothing when they coincide).
    private func arrowHead(_ cr: OpaquePointer, from: (x: Double, y: Double), to: (x: Double, y: Double), size: Double) {
        guard hypot(to.x - from.x, to.y - from.y) > 0.01 else { return }
        let angle = atan2(to.y - from.y, to.x - from.x)
        cairo_new_path(cr)
        cairo_move_to(cr, to.x, to.y)
        cairo_line_to(cr, to.x - size * cos(angle - 0.45), to.y - size * sin(angle - 0.45))
        cairo_line_to(cr, to.x - size * cos(angle + 0.45), to.y - size * sin(angle + 0.45))
        cairo_close_path(cr)
        cairo_fill(cr)
    }

    /// The strokes; `labels`: the part numbers beside them (the review window numbers the
    /// template's parts instead).
    private func drawStrokes(_ cr: OpaquePointer, _ strokes: StrokeBuffer, _ layout: LockLayout, labels: Bool = true) {
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        let parts = strokes.visibleParts
        for (index, part) in parts.enumerated() {
            let color = Self.partColors[index % Self.partColors.count]
            let first = layout.screenPoint(strokes.point(part, 0))
            // Text leaves a current point behind; an arc would join it with a line.
            cairo_new_path(cr)
            if part.kind == .tap || part.count == 1 {
                cairo_arc(cr, first.x, first.y, 9 * ui, 0, 2 * Double.pi)
                cairo_set_source_rgba(cr, 0, 0, 0, 0.55)
                cairo_set_line_width(cr, 3 * ui)
                cairo_stroke_preserve(cr)
                cairo_set_source_rgb(cr, color.0, color.1, color.2)
                cairo_fill(cr)
            } else {
                for (width, outline) in [(7.0, true), (4.0, false)] {
                    cairo_move_to(cr, first.x, first.y)
                    for point in 1..<part.count {
                        let screen = layout.screenPoint(strokes.point(part, point))
                        cairo_line_to(cr, screen.x, screen.y)
                    }
                    cairo_set_line_width(cr, width * ui)
                    if outline { cairo_set_source_rgba(cr, 0, 0, 0, 0.55) } else { cairo_set_source_rgb(cr, color.0, color.1, color.2) }
                    cairo_stroke(cr)
                }
                // The direction: an arrow head at the end.
                if part.count >= 2 {
                    let end = layout.screenPoint(strokes.point(part, part.count - 1))
                    var back = part.count - 2
                    var before = layout.screenPoint(strokes.point(part, back))
                    while back > 0 && hypot(end.x - before.x, end.y - before.y) < 12 {
                        back -= 1
                        before = layout.screenPoint(strokes.point(part, back))
                    }
                    let angle = atan2(end.y - before.y, end.x - before.x)
                    cairo_move_to(cr, end.x, end.y)
                    let head = 16 * ui
                    cairo_line_to(cr, end.x - head * cos(angle - 0.45), end.y - head * sin(angle - 0.45))
                    cairo_line_to(cr, end.x - head * cos(angle + 0.45), end.y - head * sin(angle + 0.45))
                    cairo_close_path(cr)
                    cairo_set_source_rgb(cr, color.0, color.1, color.2)
                    cairo_fill(cr)
                }
            }
            guard labels else { continue }
            // The part's number beside where it starts.
            let label = (x: first.x + 16 * ui, y: first.y - 16 * ui)
            cairo_new_path(cr)
            cairo_arc(cr, label.x, label.y, 12 * ui, 0, 2 * Double.pi)
            cairo_set_source_rgb(cr, color.0, color.1, color.2)
            cairo_fill_preserve(cr)
            cairo_set_source_rgba(cr, 0, 0, 0, 0.6)
            cairo_set_line_width(cr, 1.5)
            cairo_stroke(cr)
            text(cr, String(index + 1), x: label.x, y: label.y, size: 14, bold: true, color: (0.05, 0.05, 0.05), align: 0.5)
        }
    }

    /// `gesture_trail` `fade` or `hidden`: the strokes in one colour, without numbers or
    /// arrows, each fading out after it ends (`fade`) or not drawn at all (`hidden`); then the
    /// count of parts drawn, in the picture's top left corner.
    private func drawTrail(_ cr: OpaquePointer, _ strokes: StrokeBuffer, _ layout: LockLayout, _ trail: GestureTrail, now: Double) {
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        let ink = (0.95, 0.95, 0.95)
        for part in strokes.visibleParts {
            let alpha = trail.opacity(age: part.endedAt.map { now - $0 })
            guard alpha > 0 else { continue }
            let first = layout.screenPoint(strokes.point(part, 0))
            cairo_new_path(cr)
            if part.kind == .tap || part.count == 1 {
                cairo_arc(cr, first.x, first.y, 9 * ui, 0, 2 * Double.pi)
                cairo_set_source_rgba(cr, 0, 0, 0, 0.55 * alpha)
                cairo_set_line_width(cr, 3 * ui)
                cairo_stroke_preserve(cr)
                cairo_set_source_rgba(cr, ink.0, ink.1, ink.2, alpha)
                cairo_fill(cr)
                continue
            }
            for (width, outline) in [(7.0, true), (4.0, false)] {
                cairo_move_to(cr, first.x, first.y)
                for point in 1..<part.count {
                    let screen = layout.screenPoint(strokes.point(part, point))
                    cairo_line_to(cr, screen.x, screen.y)
                }
                cairo_set_line_width(cr, width * ui)
                if outline {
                    cairo_set_source_rgba(cr, 0, 0, 0, 0.55 * alpha)
                } else {
                    cairo_set_source_rgba(cr, ink.0, ink.1, ink.2, alpha)
                }
                cairo_stroke(cr)
            }
        }
        let count = strokes.parts.count
        guard count > 0, let rect = layout.picture else { return }
        let label = count == 1 ? "1 part" : "\(count) parts"
        let width = textWidth(cr, label, size: 15, bold: true) + 24 * ui
        let badge = LockRect(x: rect.x + 10 * ui, y: rect.y + 10 * ui, width: width, height: 30 * ui)
        roundedRectangle(cr, badge, radius: 8 * ui)
        cairo_set_source_rgba(cr, 0, 0, 0, 0.6)
        cairo_fill(cr)
        text(cr, label, x: badge.midX, y: badge.midY, size: 15, bold: true, color: (1, 1, 1), align: 0.5)
    }

    private func drawPanel(_ cr: OpaquePointer, _ scene: LockScene, _ layout: LockLayout) {
        guard let panel = layout.panel, let field = layout.field else { return }
        if backdrop != nil {
            cairo_set_source_rgba(cr, theme.panel.red, theme.panel.green, theme.panel.blue, 0.82)
        } else {
            setColour(cr, theme.panel)
        }
        cairo_rectangle(cr, panel.x, panel.y, panel.width, panel.height)
        cairo_fill(cr)
        // The shake moves the field and what is in it.
        cairo_save(cr)
        defer { cairo_restore(cr) }
        cairo_translate(cr, scene.shake, 0)
        text(cr, scene.fieldLabel, x: field.x, y: field.y - 16 * ui, size: 15, color: theme.label)
        roundedRectangle(cr, field, radius: 8 * ui)
        setColour(cr, theme.field)
        cairo_fill_preserve(cr)
        setColour(cr, scene.fieldActive ? theme.fieldBorderActive : theme.fieldBorder)
        cairo_set_line_width(cr, 2 * ui)
        cairo_stroke(cr)
        if let visible = scene.fieldText {
            text(cr, visible, x: field.x + 14 * ui, y: field.midY, size: 20, color: theme.fieldText)
        } else if let length = scene.fieldLength {
            // One box per digit, filled as they are typed.
            let gap = 10.0 * ui
            let box = min(36 * ui, (field.width - 28 * ui - gap * Double(length - 1)) / Double(length))
            var x = field.midX - (Double(length) * box + Double(length - 1) * gap) / 2
            for index in 0..<length {
                cairo_new_path(cr)
                cairo_arc(cr, x + box / 2, field.midY, box / 4, 0, 2 * Double.pi)
                if index < scene.fieldCount {
                    setColour(cr, theme.fieldText)
                    cairo_fill(cr)
                } else {
                    setColour(cr, theme.dotEmpty)
                    cairo_set_line_width(cr, 2 * ui)
                    cairo_stroke(cr)
                }
                x += box + gap
            }
        } else {
            var x = field.x + 22 * ui
            for _ in 0..<min(scene.fieldCount, Int((field.width - 30 * ui) / (18 * ui))) {
                cairo_new_path(cr)
                cairo_arc(cr, x, field.midY, 6 * ui, 0, 2 * Double.pi)
                setColour(cr, theme.fieldText)
                cairo_fill(cr)
                x += 18 * ui
            }
        }
    }

    private func drawButton(_ cr: OpaquePointer, _ button: LockButton, _ rect: LockRect, scene: LockScene, strokes: StrokeBuffer) {
        roundedRectangle(cr, rect, radius: 10 * ui)
        switch button {
        case .submit: setColour(cr, theme.submitKey)
        case .cancel: setColour(cr, theme.cancelKey)
        case .digit: setColour(cr, theme.digitKey)
        default: setColour(cr, theme.otherKey)
        }
        cairo_fill(cr)
        // Keypad-sized buttons show the symbol only.
        var label = button == .submit ? (rect.width < 120 * ui ? "✓" : scene.submitLabel) : button.label
        if rect.width < 120 * ui, let symbol = label.split(separator: " ").first { label = String(symbol) }
        let size = label.count == 1 ? 26.0 : 19.0
        cairo_new_path(cr)
        let onColour = button == .submit || button == .cancel
        text(cr, label, x: rect.midX, y: rect.midY, size: size, bold: true, color: onColour ? (1, 1, 1) : theme.keyText, align: 0.5)
    }

    private func drawRows(_ cr: OpaquePointer, _ scene: LockScene) {
        for row in scene.rows {
            roundedRectangle(cr, row.rect, radius: 8 * ui)
            setColour(cr, row.selected ? theme.fieldBorderActive : theme.otherKey)
            cairo_fill(cr)
            text(cr, row.label, x: row.rect.x + 18 * ui, y: row.rect.midY, size: 19, bold: true,
                 color: row.selected ? (1, 1, 1) : theme.keyText)
            text(cr, row.detail, x: row.rect.maxX - 18 * ui, y: row.rect.midY, size: 15,
                 color: row.selected ? (1, 1, 1) : theme.label, align: 1)
        }
    }

    private func roundedRectangle(_ cr: OpaquePointer, _ rect: LockRect, radius: Double) {
        cairo_new_path(cr)
        cairo_arc(cr, rect.maxX - radius, rect.y + radius, radius, -Double.pi / 2, 0)
        cairo_arc(cr, rect.maxX - radius, rect.maxY - radius, radius, 0, Double.pi / 2)
        cairo_arc(cr, rect.x + radius, rect.maxY - radius, radius, Double.pi / 2, Double.pi)
        cairo_arc(cr, rect.x + radius, rect.y + radius, radius, Double.pi, 1.5 * Double.pi)
        cairo_close_path(cr)
    }

    private func selectFont(_ cr: OpaquePointer, size: Double, bold: Bool) {
        cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL)
        // Sizes are given at scale 1; the layout's interface scale (HiDPI) multiplies them.
        cairo_set_font_size(cr, size * ui)
    }

    private func textWidth(_ cr: OpaquePointer, _ string: String, size: Double, bold: Bool = false) -> Double {
        selectFont(cr, size: size, bold: bold)
        var extents = cairo_text_extents_t()
        cairo_text_extents(cr, string, &extents)
        return extents.x_advance
    }

    /// Draws `string` vertically centred on `y`; `align` 0 puts its left edge at `x`, 0.5 its
    /// centre, 1 its right edge.
    private func text(_ cr: OpaquePointer, _ string: String, x: Double, y: Double, size: Double, bold: Bool = false,
                      color: LockTheme.Colour, align: Double = 0) {
        selectFont(cr, size: size, bold: bold)
        var extents = cairo_text_extents_t()
        cairo_text_extents(cr, string, &extents)
        var fontExtents = cairo_font_extents_t()
        cairo_font_extents(cr, &fontExtents)
        cairo_move_to(cr, x - extents.x_advance * align, y + (fontExtents.ascent - fontExtents.descent) / 2)
        cairo_set_source_rgb(cr, color.0, color.1, color.2)
        cairo_show_text(cr, string)
    }
}
