import CLockX
import CPAM
import Glibc
import PuffClient
import PuffCore
import PuffPlatform

/// The lock screen: answers the PAM conversation's prompts with what the user draws on the
/// picture or types, and shows the module's messages.
///
/// It runs no PAM itself: `converse` is the body of a `pam_conv` callback (puff-lock), and a
/// program that gets its prompts elsewhere (a LightDM greeter) calls `show(message:isError:)`
/// and `answer(_:echo:)` with them instead.
///
/// Each prompt runs the event loop until the user submits (Enter or ✓); nothing is ever
/// submitted by itself except a fixed-length passcode at its last digit. A drawn gesture and
/// a typed passcode never coexist: starting one wipes the other.
package final class LockSession: PAMConversation {
    package let display: any LockScreenDisplay
    package let user: String
    package let picture: LockPicture?
    /// The store holds a picture for the user that could not be decoded (said so, not "no picture").
    package var pictureUndecodable = false
    package let printLayout: Bool
    /// The bar's title.
    package let title: String
    /// `--draw`: Esc on an empty picture, or closing the window, cancels.
    private let cancellable: Bool
    package private(set) var cancelled = false
    private let renderer: LockRenderer
    private let strokes = StrokeBuffer()
    private var field = SecretBuffer(capacity: 512)
    /// The module's messages not yet answered by a submission.
    private var messages: [LockScene.Message] = []
    /// Whether a prompt was answered, and how many messages came, since `startAttempt()`.
    package private(set) var answeredPrompt = false
    package private(set) var messagesThisAttempt = 0
    /// The longest gesture answer the caller can pass on (puff-greeter: LightDM's message
    /// buffer); a drawing is then sent compacted to fit (`GestureCompaction`). nil: as drawn.
    package var gestureBudget: Int?
    /// The submit button's label (puff-greeter: `✓ Log in`); nil: puff-lock's.
    package var submitLabel: String?
    /// The colours (LockTheme.desktopPreference() or an option).
    package var theme: LockTheme {
        get { renderer.theme }
        set { renderer.theme = newValue }
    }
    /// The screen as it was before it was covered, shown blurred behind everything (nil: an
    /// opaque background).
    package var backdrop: Pixmap? {
        get { renderer.backdrop }
        set { renderer.backdrop = newValue }
    }
    /// Whether the bar shows the time and the date (redrawn at each minute).
    package var showsClock = false
    /// What the picture shows of the strokes while they are drawn (`gesture_trail`; the
    /// caller reads it from puff.conf). `visible` by default: `--draw` (enrollment) shows all.
    package var trail = GestureTrail.visible
    /// When the last shake started (a wrong entry), or nil.
    private var shakeStart: Double?
    static let shakeSeconds = 0.45

    /// `title`: the bar's title (default `Locked: USER`); `cancellable`: whether Esc on an empty
    /// screen or closing the window cancels a prompt (default: when a title is given, as for
    /// `--draw`).
    package init(display: any LockScreenDisplay, user: String, picture: LockPicture?, printLayout: Bool,
                 title: String? = nil, cancellable: Bool? = nil) {
        self.display = display
        self.user = user
        self.title = title ?? "Locked: \(user)"
        self.cancellable = cancellable ?? (title != nil)
        self.picture = picture
        self.printLayout = printLayout
        renderer = display.makeRenderer()
    }

    /// What the current screen asks for.
    private struct Request {
        var prompt: PuffPrompt
        var echo: Bool
        var gesture: Bool
        var panel: LockPanel
        var passcodeType: PasscodeType?
        var barText: String
        var fieldLabel: String
    }

    private func request(for text: String, echo: Bool) -> Request {
        let prompt = echo ? PuffPrompt.foreign(text) : PuffPrompt(text)
        let gesture = prompt.acceptsGesture && picture != nil
        var passcodeType: PasscodeType?
        var panel = LockPanel.none
        var bar = ""
        func words(_ type: PasscodeType?) -> String {
            switch type {
            case .digits4: " (4 digits)"
            case .digits6: " (6 digits)"
            case .numeric: " (digits)"
            case .alphanumeric, nil: ""
            }
        }
        switch prompt {
        case .passcodeOrGesture(let type), .passcodeOnly(let type):
            passcodeType = type
            panel = type == nil || type == .alphanumeric ? .text : .digits
            bar = gesture ? "Draw your gesture or type your passcode\(words(type))" : "Type your passcode\(words(type))"
        case .gestureOnly:
            bar = cancellable ? "Draw your gesture: Enter when done, Esc to cancel" : "Draw your gesture"
        case .foreign(let text):
            panel = .text
            bar = String(text.reversed().drop { $0 == " " || $0 == ":" }.reversed())
        }
        let label: String
        if case .foreign(let text) = prompt { label = text } else { label = "Passcode" + words(passcodeType) }
        return Request(prompt: prompt, echo: echo, gesture: gesture, panel: panel, passcodeType: passcodeType,
                       barText: bar, fieldLabel: label)
    }

    // MARK: The conversation

    /// One message of the conversation (PAM's through `PAMTransaction` in puff-lock, LightDM's
    /// relay of it in the greeter): messages are kept for the screen (and written to stderr,
    /// where a session log keeps them), prompts are answered on the screen.
    package func respond(to message: PAMMessage) -> ConversationReplies.Answer {
        switch message {
        case .info(let text):
            Report.warn(text)
            show(message: text, isError: false)
            return .shown
        case .error(let text):
            Report.warn(text)
            show(message: text, isError: true)
            return .shown
        case .prompt(let text, let echo):
            guard let secret = answer(text, echo: echo) else { return .fail(PAM_CONV_ERR) }
            return .secret(secret)
        }
    }

    /// Keeps a module's message (PAM_TEXT_INFO, PAM_ERROR_MSG) for the screen, until the next
    /// submission; drawn with the next prompt or `acknowledge()`.
    package func show(message text: String, isError: Bool) {
        messagesThisAttempt += 1
        let shown = Self.shown(text)
        // The lock that a wrong answer started is said again by the next attempt, which asks
        // nothing ("Wrong passcode. Too many failed attempts; …", then "Too many failed
        // attempts; …"): once on the screen is enough.
        guard !messages.contains(where: { $0.text.hasSuffix(shown) }) else { return }
        messages.append(.init(text: shown, isError: isError))
    }

    /// A module message as shown: without Puff's `Puff: ` prefix, starting with a capital.
    package static func shown(_ text: String) -> String {
        var body = Substring(text)
        if body.hasPrefix("Puff: ") { body = body.dropFirst("Puff: ".count) }
        guard let first = body.first else { return "" }
        return first.uppercased() + body.dropFirst()
    }

    /// Called before each `pam_authenticate`.
    package func startAttempt() {
        answeredPrompt = false
        messagesThisAttempt = 0
    }

    /// Adds a message of the locker's own (PAM errors).
    package func note(_ text: String) {
        guard messages.last?.text != text else { return }
        messages.append(.init(text: text, isError: true))
    }

    // MARK: Screens

    /// Shows the messages gathered so far and waits for a key or a click: after an attempt
    /// that asked nothing (a locked account, an unavailable service), the next one starts only
    /// when the user asks for it, so PAM is never called in a loop.
    /// `prompt` and `hint`: the bar's text and the line under the messages (puff-greeter goes
    /// back to its user list, not to another attempt).
    package func acknowledge(prompt: String = "Locked", hint: String = "Press a key or click to try again.") {
        func scene() -> LockScene {
            var scene = LockScene(title: title, prompt: prompt, messages: messages)
            scene.hint = hint
            scene.centred = true
            scene.clock = clock()
            return scene
        }
        func layout() -> LockLayout {
            let monitor = display.primaryMonitor()
            return LockLayout(monitor: monitor, pictureSize: nil, panel: .none, gesture: false, ui: interfaceScale(monitor))
        }
        renderer.draw(scene(), layout: layout(), picture: nil, strokes: strokes)
        display.idle()
        announce(layout())
        while true {
            guard let event = display.nextEvent(timeout: nextFrame()) else {
                renderer.draw(scene(), layout: layout(), picture: nil, strokes: strokes)
                continue
            }
            switch event {
            case .redraw:
                renderer.draw(scene(), layout: layout(), picture: nil, strokes: strokes)
            case .screensChanged:
                display.busy(.layout)
                renderer.draw(scene(), layout: layout(), picture: nil, strokes: strokes)
            case .pointerDown, .enter, .escape, .backspace:
                messages.removeAll()
                return
            case .text(var typed):
                typed.wipe()
                messages.removeAll()
                return
            case .pointerMove, .pointerUp, .close:
                continue
            }
        }
    }

    private func layout(request: Request) -> LockLayout {
        let monitor = display.primaryMonitor()
        return LockLayout(monitor: monitor, pictureSize: picture.map { ($0.width, $0.height) },
                          panel: request.panel, gesture: request.gesture, ui: interfaceScale(monitor))
    }

    private func interfaceScale(_ monitor: LockRect) -> Double {
        LockLayout.interfaceScale(monitorHeight: monitor.height, dpi: display.resourceDPI())
    }

    /// The time and the date in the user's locale (`LC_TIME`), or nil without the clock.
    private func clock() -> (time: String, date: String)? {
        guard showsClock else { return nil }
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return nil }
        func format(_ pattern: String) -> String {
            var buffer = [CChar](repeating: 0, count: 128)
            let length = strftime(&buffer, buffer.count, pattern, &parts)
            return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return (format("%H:%M"), format("%A %e %B").replacingDoubleSpaces())
    }

    /// The shake's offset now (0 when none runs): a damped sway of 14 pixels (at scale 1).
    private func shakeOffset(ui: Double) -> Double {
        guard let shakeStart else { return 0 }
        let elapsed = monotonicSeconds() - shakeStart
        guard elapsed < Self.shakeSeconds else {
            self.shakeStart = nil
            return 0
        }
        return 14 * ui * sin(elapsed * 2 * Double.pi * 6.5) * (1 - elapsed / Self.shakeSeconds)
    }

    /// How long the event loop may wait before the screen changes by itself: the next frame
    /// of a shake, the next minute of the clock, or forever.
    private func nextFrame() -> Double? {
        if shakeStart != nil { return 1.0 / 60 }
        // A fading stroke is redrawn until it is gone (a frame past the end draws it at 0).
        if trail == .fade && strokes.endedWithin(GestureTrail.fadeSeconds + 0.1, of: monotonicSeconds()) { return 1.0 / 30 }
        guard showsClock else { return nil }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return 60 - Double(now.tv_sec % 60) - Double(now.tv_nsec) / 1e9 + 0.05
    }

    /// With `--print-layout`, where the picture and the buttons are (for scripts and tests;
    /// positions only, never what was typed or drawn).
    private func announce(_ layout: LockLayout) {
        guard printLayout else { return }
        var text = ""
        if let rect = layout.picture {
            text += "puff-lock: picture \(rect.x) \(rect.y) \(layout.scale) \(layout.pictureWidth) \(layout.pictureHeight)\n"
        } else {
            text += "puff-lock: picture none\n"
        }
        Report.raw(text + Self.buttonLines(layout) + "puff-lock: screen ready\n")
    }

    /// `--print-layout`'s lines for the buttons: `puff-lock: button NAME X Y` (their centres).
    package static func buttonLines(_ layout: LockLayout) -> String {
        var text = ""
        for (button, rect) in layout.buttons {
            let name: String
            switch button {
            case .digit(let digit): name = "digit\(digit)"
            case .erase: name = "erase"
            case .undo: name = "undo"
            case .clear: name = "clear"
            case .submit: name = "submit"
            case .cancel: name = "cancel"
            case .replay: name = "replay"
            }
            text += "puff-lock: button \(name) \(rect.midX) \(rect.midY)\n"
        }
        return text
    }

    /// Runs the screen for one prompt (`text` as PAM or LightDM gives it; `echo` for a visible
    /// answer) until the user submits; nil when cancelled (a cancellable session) or when the
    /// prompt cannot be answered. Marks the prompt answered for `answeredPrompt`. (When the X
    /// connection is lost, Xlib's I/O error handler ends the process: nothing is answered.)
    package func answer(_ text: String, echo: Bool) -> SecretBuffer? {
        answeredPrompt = true
        return screen(for: text, echo: echo)
    }

    private func screen(for text: String, echo: Bool) -> SecretBuffer? {
        var request = self.request(for: text, echo: echo)
        // The discreet prompt (no keypad named) says nothing about the account: no picture is
        // then no error, only a passcode screen.
        if request.prompt.acceptsGesture && picture == nil && request.prompt != .passcodeOrGesture(nil) {
            let why = pictureUndecodable ? "The picture for \(user) in the Puff store could not be decoded"
                                         : "No picture for \(user) in the Puff store"
            messages.append(.init(text: why + ": the gesture cannot be drawn.", isError: true))
            Report.warn(why)
            if case .gestureOnly = request.prompt {
                // Nothing can be answered here; an empty reply is refused by the module and never counted.
                request.panel = .none
            }
        }
        var layout = self.layout(request: request)
        // A wrong entry (an error message before this prompt) shakes the field; input is
        // taken as usual meanwhile.
        if messages.contains(where: \.isError) { shakeStart = monotonicSeconds() }
        let fieldLength: Int? = switch request.passcodeType {
        case .digits4: 4
        case .digits6: 6
        default: nil
        }
        let maximum = request.passcodeType?.lengthRange.upperBound ?? field.capacity
        func scene() -> LockScene {
            var scene = LockScene(title: title, prompt: request.barText, messages: messages)
            scene.panel = request.panel
            if let submitLabel { scene.submitLabel = submitLabel } else if cancellable { scene.submitLabel = "✓ Done" }
            scene.fieldLength = fieldLength
            scene.fieldCount = characterCount()
            scene.fieldLabel = request.fieldLabel
            scene.fieldActive = field.count > 0 || !request.gesture
            if request.echo { scene.fieldText = field.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
            if request.gesture && !strokes.isEmpty && request.panel != .none { scene.hint = "Enter unlocks with the gesture." }
            scene.clock = clock()
            scene.shake = shakeOffset(ui: layout.ui)
            scene.trail = trail
            scene.now = monotonicSeconds()
            return scene
        }
        func redraw() { renderer.draw(scene(), layout: layout, picture: picture, strokes: strokes) }
        redraw()
        // Drawn: back in the event loop before saying so (the parent's watchdog then allows
        // this process only a short silence again).
        display.idle()
        announce(layout)

        /// The submission, or nil when there is nothing to submit yet.
        func submit() -> SecretBuffer? {
            if field.count > 0 || (request.panel == .text && !request.prompt.acceptsGesture) {
                if case .foreign = request.prompt {} else if field.count == 0 { return nil }
                let secret = field
                field = SecretBuffer(capacity: 512)
                strokes.removeAll()
                return secret
            }
            guard request.gesture else { return nil }
            let width = picture?.width ?? 0, height = picture?.height ?? 0
            let encoded = gestureBudget.map { strokes.compactSerialized(width: width, height: height, budget: $0) }
                ?? strokes.serialized(width: width, height: height)
            guard let secret = encoded else {
                if gestureBudget != nil && !strokes.isEmpty {
                    note("The drawing is too long to send here: draw it again with fewer points.")
                }
                return nil
            }
            strokes.removeAll()
            return secret
        }
        func type(_ byte: UInt8) -> SecretBuffer? {
            guard request.panel != .none else { return nil }
            if request.panel == .digits || request.passcodeType == .numeric {
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            }
            if request.passcodeType == .alphanumeric {
                guard byte >= 0x20 && byte <= 0x7E else { return nil }
            }
            guard field.count < maximum, field.append(byte) else { return nil }
            // Typing switches to the passcode: the drawing is wiped.
            if !strokes.isEmpty { strokes.removeAll() }
            if let fieldLength, field.count == fieldLength { return submit() }
            return nil
        }

        while true {
            guard let event = display.nextEvent(timeout: nextFrame()) else {
                // A frame of the shake, or the next minute.
                redraw()
                continue
            }
            var submitted: SecretBuffer?
            switch event {
            case .redraw:
                break
            case .screensChanged:
                // This frame scales the picture again, at the new size: drawn now, while the
                // parent allows for it.
                display.busy(.layout)
                layout = self.layout(request: request)
                redraw()
                announce(layout)
            case .pointerDown(let x, let y):
                if let button = layout.button(at: x, y) {
                    switch button {
                    case .digit(let digit): submitted = type(UInt8(ascii: "0") + digit)
                    case .erase: removeLastCharacter()
                    case .undo: strokes.removeLast()
                    case .clear:
                        strokes.removeAll()
                        field.removeAll()
                    case .submit: submitted = submit()
                    case .cancel, .replay: break
                    }
                } else if request.gesture && layout.isOnPicture(x, y) {
                    // Drawing switches to the gesture: the passcode is wiped.
                    field.removeAll()
                    if !strokes.begin(layout.picturePoint(x, y), screenX: x, screenY: y) {
                        note("A gesture has at most \(GestureLimits.maximumParts) parts.")
                    }
                }
            case .pointerMove(let x, let y):
                if strokes.isDrawing { strokes.extend(layout.picturePoint(x, y), screenX: x, screenY: y) }
            case .pointerUp(let x, let y):
                if strokes.isDrawing { strokes.end(layout.picturePoint(x, y), screenX: x, screenY: y) }
            case .enter:
                submitted = submit()
            case .backspace:
                if field.count > 0 { removeLastCharacter() } else { strokes.removeLast() }
            case .escape:
                if cancellable && field.count == 0 && strokes.isEmpty {
                    cancelled = true
                    return nil
                }
                field.removeAll()
                strokes.removeAll()
            case .close:
                if cancellable {
                    strokes.removeAll()
                    cancelled = true
                    return nil
                }
            case .text(var typed):
                for index in 0..<typed.count where submitted == nil {
                    submitted = type(typed[index])
                }
                typed.wipe()
            }
            if let submitted {
                messages.removeAll()
                var checking = scene()
                checking.hint = cancellable && submitLabel == nil ? "" : "Checking…"
                renderer.draw(checking, layout: layout, picture: picture, strokes: strokes)
                display.sync()
                display.busy()
                return submitted
            }
            // Events still waiting are drawn with the next frame (`hasQueuedEvents` counts only
            // those `nextEvent` returns, so a frame is never skipped for a dropped one).
            if !display.hasQueuedEvents { redraw() }
        }
    }

    /// `--draw`: one gesture drawn on the picture, in the wire format; nil when cancelled.
    package func drawGesture() -> SecretBuffer? {
        screen(for: "Puff gesture: ", echo: false)
    }

    /// Characters in the field (UTF-8 lead bytes), for the dots.
    private func characterCount() -> Int {
        field.withUnsafeBytes { bytes in bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) } }
    }

    /// Removes the last character (all the bytes of a UTF-8 sequence).
    private func removeLastCharacter() {
        while field.count > 0 {
            let last = field.withUnsafeBytes { $0[$0.count - 1] }
            field.removeLast()
            if last & 0xC0 != 0x80 { break }
        }
    }
}

extension String {
    /// With runs of spaces made one (`%e` pads single-digit days with a space).
    func replacingDoubleSpaces() -> String {
        var result = ""
        for character in self where !(character == " " && result.last == " ") { result.append(character) }
        return result
    }
}
