import Glibc
import PuffCore
import PuffPlatform

/// The passcode screen: a keypad suited to the passcode type, or a text field.
///
/// Digit types show a 3×4 keypad that takes clicks as well as typed digits; a fixed-length type
/// (4 or 6 digits) answers as soon as the last digit is in. Text passcodes and prompts of other
/// modules are typed. Nothing typed is ever shown except for echo-on prompts of other modules.
final class PasscodeEntry {
    enum Outcome {
        case entered(SecretBuffer)
        /// Esc: back to the picture (or cancel when there is none).
        case back
        case cancelled
        case terminated(Int32)
    }

    /// What is being typed.
    enum Kind {
        case passcode(PasscodeType?)
        /// A prompt of another module; `echo` for PAM_PROMPT_ECHO_ON.
        case text(echo: Bool)
    }

    private let session: TerminalSession
    private let kind: Kind
    private let title: String
    var message: String
    private let escapeGoesBack: Bool
    private let secret: SecretBuffer
    private var keypadOrigin: (column: Int, row: Int)?

    /// Keypad keys in reading order; `<` deletes, `>` answers.
    static let keys: [Character] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "<", "0", ">"]
    static let keyWidth = 7, keyHeight = 3

    init(session: TerminalSession, kind: Kind, title: String, message: String, escapeGoesBack: Bool,
         firstCharacter: UInt8? = nil) {
        self.session = session
        self.kind = kind
        self.title = title
        self.message = message
        self.escapeGoesBack = escapeGoesBack
        switch kind {
        case .passcode(let type): secret = SecretBuffer(capacity: type?.lengthRange.upperBound ?? 128)
        case .text: secret = SecretBuffer(capacity: 512)
        }
        if let firstCharacter { _ = accept(firstCharacter) }
    }

    private var digitsOnly: Bool {
        if case .passcode(let type) = kind, let type, type != .alphanumeric { return true }
        return false
    }

    private var fixedLength: Int? {
        if case .passcode(let type) = kind, let type, type.lengthRange.count == 1 { return type.lengthRange.lowerBound }
        return nil
    }

    /// Shows the screen until the user answers, goes back or cancels.
    func run() -> Outcome {
        if let fixedLength, secret.count == fixedLength { return .entered(secret) }
        redraw()
        while true {
            switch session.next() {
            case .terminate(let signal): return .terminated(signal)
            case .redraw: redraw()
            case .timeout: continue
            case .input(let event):
                switch event {
                case .character(let byte):
                    guard accept(byte) else { continue }
                    if let fixedLength, secret.count == fixedLength { return .entered(secret) }
                    redraw()
                case .backspace:
                    secret.removeLast()
                    redraw()
                case .enter:
                    if let outcome = submit() { return outcome }
                case .escape:
                    return escapeGoesBack ? .back : .cancelled
                case .interrupt:
                    return .cancelled
                case .suspend:
                    session.suspend()
                    redraw()
                case .release(let column, let row, _):
                    guard let key = key(at: column, row: row) else { continue }
                    switch key {
                    case "<": secret.removeLast()
                    case ">": if let outcome = submit() { return outcome }
                    default:
                        guard let byte = key.asciiValue, accept(byte) else { continue }
                        if let fixedLength, secret.count == fixedLength { return .entered(secret) }
                    }
                    redraw()
                case .press, .drag, .tab, .pixelReports, .cellPixels:
                    continue
                }
            }
        }
    }

    /// Adds a typed character when the type allows it.
    private func accept(_ byte: UInt8) -> Bool {
        guard byte >= 0x20 && byte <= 0x7E else { return false }
        if digitsOnly && !(byte >= 0x30 && byte <= 0x39) { return false }
        return secret.append(byte)
    }

    private func submit() -> Outcome? {
        if case .passcode(let type) = kind, let type, !type.lengthRange.contains(secret.count) {
            let range = type.lengthRange
            message = range.count == 1 ? "The passcode has \(range.lowerBound) characters."
                : "The passcode has \(range.lowerBound) to \(range.upperBound) characters."
            redraw()
            return nil
        }
        if case .passcode = kind, secret.count == 0 { return nil }
        return .entered(secret)
    }

    /// The keypad key under a cell.
    private func key(at column: Int, row: Int) -> Character? {
        guard digitsOnly, let origin = keypadOrigin else { return nil }
        let c = column - origin.column, r = row - origin.row
        guard c >= 0, r >= 0, c < 3 * Self.keyWidth, r < 4 * Self.keyHeight else { return nil }
        return Self.keys[(r / Self.keyHeight) * 3 + c / Self.keyWidth]
    }

    private func redraw() {
        let size = session.size()
        var frame = Frame()
        frame.clear()
        frame.line(title, row: 0, width: size.columns, style: "7")
        var row = 2
        for line in message.split(separator: "\n") {
            frame.line(String(line), row: row, width: size.columns, style: "1")
            row += 1
        }
        row += 1
        let field: String
        switch kind {
        case .text(echo: true):
            field = ""
        default:
            if let fixedLength {
                field = (0..<fixedLength).map { $0 < secret.count ? "●" : "○" }.joined(separator: " ")
            } else {
                field = String(repeating: "●", count: secret.count) + "_"
            }
        }
        frame.line("  " + (echoedText ?? field), row: row, width: size.columns, style: "1")
        row += 2
        keypadOrigin = nil
        if digitsOnly && row + 4 * Self.keyHeight < size.rows && size.columns >= 3 * Self.keyWidth + 2 {
            let origin = (column: 2, row: row)
            keypadOrigin = origin
            for (index, key) in Self.keys.enumerated() {
                let left = origin.column + (index % 3) * Self.keyWidth
                let top = origin.row + (index / 3) * Self.keyHeight
                let label = key == "<" ? "⌫" : key == ">" ? "OK" : String(key)
                let padded = label.count == 1 ? "  \(label)  " : "  \(label) "
                frame.put("┌─────┐", column: left, row: top)
                frame.put("│" + padded + "│", column: left, row: top + 1, style: "1")
                frame.put("└─────┘", column: left, row: top + 2)
            }
        }
        var hint = "Enter: OK  Backspace: delete  "
        hint += escapeGoesBack ? "Esc: back to the picture" : "Esc: cancel"
        if digitsOnly { hint = "Type or click the digits  " + hint }
        frame.line(hint, row: size.rows - 1, width: size.columns, style: "2")
        frame.send(to: session)
    }

    /// The typed text of an echo-on prompt (another module asking, say, for a user name).
    private var echoedText: String? {
        guard case .text(echo: true) = kind else { return nil }
        var bytes: [UInt8] = []
        if let copy = secret.mallocCopy() {
            var index = 0
            while copy[index] != 0 { bytes.append(UInt8(bitPattern: copy[index])); index += 1 }
            free(copy)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
