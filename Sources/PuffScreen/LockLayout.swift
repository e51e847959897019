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

    /// `tools`: the buttons under the picture (`--show` has its own).
    package init(monitor: LockRect, pictureSize: (width: Int, height: Int)?, panel kind: LockPanel, gesture: Bool,
         tools: [LockButton] = [.undo, .clear, .submit]) {
        self.monitor = monitor
        bar = LockRect(x: monitor.x, y: monitor.y, width: monitor.width, height: Self.barHeight)
        message = LockRect(x: monitor.x, y: bar.maxY, width: monitor.width, height: Self.messageHeight)
        let top = message.maxY
        let bottom = monitor.maxY - (gesture ? Self.toolbarHeight : 0)
        let panelWidth = kind == .none ? 0 : min(Self.panelWidth, monitor.width / 2)
        var stage = LockRect(x: monitor.x, y: top, width: monitor.width - panelWidth, height: max(0, bottom - top))
        stage = stage.insetBy(Self.margin)
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
            let toolbarY = bottom + (Self.toolbarHeight - Self.keySize.height) / 2
            let gaps = Double(tools.count - 1) * Self.keyGap
            // As wide as the stage allows (a narrow monitor beside the panel), 150 at most.
            let toolWidth = min(150, max(60, ((stage.width - gaps) / Double(tools.count)).rounded(.down)))
            let totalWidth = Double(tools.count) * toolWidth + gaps
            var x = max(monitor.x, (stage.midX - totalWidth / 2).rounded(.down))
            for tool in tools {
                buttons.append((tool, LockRect(x: x, y: toolbarY, width: toolWidth, height: Self.keySize.height)))
                x += toolWidth + Self.keyGap
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
                let width = min(Self.panelWidth, monitor.width)
                panelRect = LockRect(x: monitor.midX - width / 2, y: top, width: width, height: max(0, monitor.maxY - top))
            }
            panel = panelRect
            let fieldRect = LockRect(x: panelRect.x + 24, y: panelRect.y + 40, width: panelRect.width - 48, height: 56)
            field = fieldRect
            if kind == .digits {
                let gridWidth = 3 * Self.keySize.width + 2 * Self.keyGap
                let left = (panelRect.midX - gridWidth / 2).rounded(.down)
                let first = fieldRect.maxY + 32
                let rows: [[LockButton]] = [
                    [.digit(1), .digit(2), .digit(3)], [.digit(4), .digit(5), .digit(6)],
                    [.digit(7), .digit(8), .digit(9)], [.erase, .digit(0), .submit],
                ]
                for (row, keys) in rows.enumerated() {
                    for (column, key) in keys.enumerated() {
                        buttons.append((key, LockRect(x: left + Double(column) * (Self.keySize.width + Self.keyGap),
                                                      y: first + Double(row) * (Self.keySize.height + Self.keyGap),
                                                      width: Self.keySize.width, height: Self.keySize.height)))
                    }
                }
            } else if picture == nil {
                buttons.append((.submit, LockRect(x: panelRect.midX - 75, y: fieldRect.maxY + 32, width: 150, height: Self.keySize.height)))
            }
        } else {
            panel = nil
            field = nil
        }
        self.buttons = buttons
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
