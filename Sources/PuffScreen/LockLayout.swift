import PuffCore

/// An on-screen button.
package enum LockButton: Equatable {
    case digit(UInt8)
    /// Removes the last passcode character.
    case erase
    /// Removes the last gesture part.
    case undo
    /// Clears the gesture and the passcode.
    case clear
    /// Submits what was drawn or typed (`--show`: saves the gesture).
    case submit
    /// `--show`: refuses the gesture shown.
    case cancel
    /// `--show`: plays the drawings again from the start.
    case replay

    package var label: String {
        switch self {
        case .digit(let digit): String(UnicodeScalar(UInt8(ascii: "0") + digit))
        case .erase: "⌫"
        case .undo: "↶ Undo"
        case .clear: "✕ Clear"
        case .submit: "✓ Unlock"
        case .cancel: "✕ Cancel"
        case .replay: "↻ Replay"
        }
    }
}

/// What the side panel holds.
package enum LockPanel: Equatable {
    /// No panel: only the gesture is accepted.
    case none
    /// A passcode field with a digit keypad.
    case digits
    /// A text field (typed on the keyboard): text passcodes and other modules' prompts.
    case text
}

/// Where everything sits on the primary monitor.
///
/// The top bar holds the account and what is accepted, the line below it the module's
/// messages; the picture fills the rest, scaled to fit with its aspect ratio kept and centred
/// (letterboxed), with the passcode panel on its right and the gesture buttons below it.
package struct LockLayout {
    package static let barHeight = 48.0
    package static let messageHeight = 40.0
    package static let toolbarHeight = 84.0
    package static let panelWidth = 330.0
    package static let margin = 16.0
    package static let keySize = (width: 86.0, height: 62.0)
    package static let keyGap = 12.0

    package let monitor: LockRect
    package let bar: LockRect
    package let message: LockRect
    /// The area the picture is fitted into.
    package let stage: LockRect
    /// The picture as shown (inside `stage`), or nil without a picture.
    package let picture: LockRect?
    /// Screen pixels per picture pixel.
    package let scale: Double
    package let pictureWidth: Int
    package let pictureHeight: Int
    package let panel: LockRect?
    package let field: LockRect?
    package let buttons: [(button: LockButton, rect: LockRect)]
    /// The interface scale (HiDPI): every size above is multiplied by it; text too.
    package let ui: Double

    /// `tools`: the buttons under the picture (`--show` has its own); `ui`: the interface
    /// scale (`interfaceScale`).
    package init(monitor: LockRect, pictureSize: (width: Int, height: Int)?, panel kind: LockPanel, gesture: Bool,
         tools: [LockButton] = [.undo, .clear, .submit], ui: Double = 1) {
        self.monitor = monitor
        self.ui = ui
        let barHeight = Self.barHeight * ui, messageHeight = Self.messageHeight * ui
        let toolbarHeight = Self.toolbarHeight * ui, margin = Self.margin * ui, keyGap = Self.keyGap * ui
        let keySize = (width: Self.keySize.width * ui, height: Self.keySize.height * ui)
        bar = LockRect(x: monitor.x, y: monitor.y, width: monitor.width, height: barHeight)
        message = LockRect(x: monitor.x, y: bar.maxY, width: monitor.width, height: messageHeight)
        let top = message.maxY
        let bottom = monitor.maxY - (gesture ? toolbarHeight : 0)
        let panelWidth = kind == .none ? 0 : min(Self.panelWidth * ui, monitor.width / 2)
        var stage = LockRect(x: monitor.x, y: top, width: monitor.width - panelWidth, height: max(0, bottom - top))
        stage = stage.insetBy(margin)
        if !gesture || pictureSize == nil {
            // Nothing to draw on: the panel takes the middle of the screen.
            stage = LockRect(x: monitor.x, y: top, width: 0, height: 0)
        }
        self.stage = stage
        var buttons: [(LockButton, LockRect)] = []

        if let size = pictureSize, size.width > 0, size.height > 0, gesture {
            let fit = min(stage.width / Double(size.width), stage.height / Double(size.height))
            scale = fit > 0 ? fit : 1
            let shown = (width: Double(size.width) * scale, height: Double(size.height) * scale)
            // Whole screen pixels for the origin, so the picture is drawn sharp.
            picture = LockRect(x: (stage.midX - shown.width / 2).rounded(.down), y: (stage.midY - shown.height / 2).rounded(.down),
                               width: shown.width, height: shown.height)
            pictureWidth = size.width
            pictureHeight = size.height
            let toolbarY = bottom + (toolbarHeight - keySize.height) / 2
            let gaps = Double(tools.count - 1) * keyGap
            // As wide as the stage allows (a narrow monitor beside the panel), 150 at most.
            let toolWidth = min(150 * ui, max(60 * ui, ((stage.width - gaps) / Double(tools.count)).rounded(.down)))
            let totalWidth = Double(tools.count) * toolWidth + gaps
            var x = max(monitor.x, (stage.midX - totalWidth / 2).rounded(.down))
            for tool in tools {
                buttons.append((tool, LockRect(x: x, y: toolbarY, width: toolWidth, height: keySize.height)))
                x += toolWidth + keyGap
            }
        } else {
            picture = nil
            scale = 1
            pictureWidth = 0
            pictureHeight = 0
        }

        if kind != .none {
            let panelRect: LockRect
            if picture != nil {
                panelRect = LockRect(x: monitor.maxX - panelWidth, y: top, width: panelWidth, height: max(0, monitor.maxY - top))
            } else {
                let width = min(Self.panelWidth * ui, monitor.width)
                panelRect = LockRect(x: monitor.midX - width / 2, y: top, width: width, height: max(0, monitor.maxY - top))
            }
            panel = panelRect
            let fieldRect = LockRect(x: panelRect.x + 24 * ui, y: panelRect.y + 40 * ui, width: panelRect.width - 48 * ui, height: 56 * ui)
            field = fieldRect
            if kind == .digits {
                let gridWidth = 3 * keySize.width + 2 * keyGap
                let left = (panelRect.midX - gridWidth / 2).rounded(.down)
                let first = fieldRect.maxY + 32 * ui
                let rows: [[LockButton]] = [
                    [.digit(1), .digit(2), .digit(3)], [.digit(4), .digit(5), .digit(6)],
                    [.digit(7), .digit(8), .digit(9)], [.erase, .digit(0), .submit],
                ]
                for (row, keys) in rows.enumerated() {
                    for (column, key) in keys.enumerated() {
                        buttons.append((key, LockRect(x: left + Double(column) * (keySize.width + keyGap),
                                                      y: first + Double(row) * (keySize.height + keyGap),
                                                      width: keySize.width, height: keySize.height)))
                    }
                }
            } else if picture == nil {
                buttons.append((.submit, LockRect(x: panelRect.midX - 75 * ui, y: fieldRect.maxY + 32 * ui, width: 150 * ui, height: keySize.height)))
            }
        } else {
            panel = nil
            field = nil
        }
        self.buttons = buttons
    }

    /// The interface scale for a monitor: `Xft.dpi` / 96 when the X resources set it, else
    /// from the monitor's height (1 up to 1200 pixels, 1.5 up to 1700, 2 above: a 4K screen
    /// shows what a 1080p one does, twice as sharp), from 1 to 3 in quarter steps.
    package static func interfaceScale(monitorHeight: Double, dpi: Double?) -> Double {
        let raw: Double
        if let dpi, dpi.isFinite, dpi > 0 {
            raw = dpi / 96
        } else {
            raw = monitorHeight > 1700 ? 2 : monitorHeight > 1200 ? 1.5 : 1
        }
        return min(3, max(1, (raw * 4).rounded() / 4))
    }

    /// The button under a window position.
    package func button(at x: Double, _ y: Double) -> LockButton? {
        buttons.first { $0.rect.contains(x, y) }?.button
    }

    /// Whether a window position is on the picture.
    package func isOnPicture(_ x: Double, _ y: Double) -> Bool {
        picture?.contains(x, y) ?? false
    }

    /// The picture point under a window position, moved onto the picture's edge when outside
    /// (a stroke that leaves the picture follows its edge), in thousandths of a pixel as the
    /// wire format keeps them.
    package func picturePoint(_ x: Double, _ y: Double) -> GesturePoint {
        guard let picture else { return GesturePoint(x: 0, y: 0) }
        let px = min(max((x - picture.x) / scale, 0), Double(pictureWidth))
        let py = min(max((y - picture.y) / scale, 0), Double(pictureHeight))
        return GesturePoint(x: (px * 1000).rounded() / 1000, y: (py * 1000).rounded() / 1000)
    }

    /// The window position of a picture point.
    package func screenPoint(_ point: GesturePoint) -> (x: Double, y: Double) {
        guard let picture else { return (0, 0) }
        return (picture.x + point.x * scale, picture.y + point.y * scale)
    }
}
