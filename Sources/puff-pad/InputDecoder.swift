/// One thing the user did at the terminal.
enum InputEvent: Equatable {
    /// Left button pressed, moved with the button held, released; zero-based cell coordinates.
    case press(column: Int, row: Int)
    case drag(column: Int, row: Int)
    case release(column: Int, row: Int)
    case enter
    case backspace
    case escape
    case tab
    /// Ctrl-C or Ctrl-D: give up.
    case interrupt
    /// Ctrl-Z: suspend.
    case suspend
    /// A printable ASCII character.
    case character(UInt8)
}

/// Turns terminal input bytes into events: SGR mouse reports (`ESC [ < b ; x ; y M|m`, mode
/// 1006), Enter, Backspace, Tab, Esc, control keys and printable ASCII. Other escape sequences
/// (arrows, function keys, other mouse buttons, the wheel) are read whole and ignored.
struct InputDecoder {
    private var buffer: [UInt8] = []

    /// Whether a lone ESC may still be the start of a sequence (the caller waits briefly, then
    /// calls `flush`).
    var isWaiting: Bool { !buffer.isEmpty }

    /// Longest escape sequence kept; a longer one is garbage and dropped.
    static let maximumSequence = 64

    /// Adds bytes and returns every event they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [InputEvent] {
        buffer += bytes
        var events: [InputEvent] = []
        var index = 0
        while index < buffer.count {
            let byte = buffer[index]
            if byte == 0x1B {
                guard let (event, length) = escapeSequence(at: index) else { break }
                if let event { events.append(event) }
                index += length
                continue
            }
            if let event = Self.key(byte) { events.append(event) }
            index += 1
        }
        buffer.removeFirst(index)
        return events
    }

    /// Called after a silence: a pending lone ESC is the Esc key; a cut-off sequence is dropped.
    mutating func flush() -> [InputEvent] {
        defer { buffer.removeAll() }
        return buffer == [0x1B] ? [.escape] : []
    }

    private static func key(_ byte: UInt8) -> InputEvent? {
        switch byte {
        case 0x0D, 0x0A: .enter
        case 0x7F, 0x08: .backspace
        case 0x09: .tab
        case 0x03, 0x04: .interrupt
        case 0x1A: .suspend
        case 0x20...0x7E: .character(byte)
        default: nil
        }
    }

    /// Decodes the escape sequence starting at `start`: nil when it is not complete yet,
    /// else the event (nil for an ignored sequence) and its length in bytes.
    private func escapeSequence(at start: Int) -> (InputEvent?, Int)? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let second = buffer[start + 1]
        // ESC ESC: the first is the Esc key.
        if second == 0x1B { return (.escape, 1) }
        if second == UInt8(ascii: "O") {
            guard available >= 3 else { return nil }
            return (nil, 3)
        }
        guard second == UInt8(ascii: "[") else { return (nil, 2) }
        // CSI: parameter and intermediate bytes, then one final byte 0x40…0x7E.
        var end = start + 2
        while end < buffer.count, !(0x40...0x7E).contains(buffer[end]) {
            if end - start >= Self.maximumSequence { return (nil, end - start) }
            end += 1
        }
        guard end < buffer.count else { return nil }
        let body = Array(buffer[(start + 2)..<end])
        let length = end - start + 1
        let final = buffer[end]
        guard body.first == UInt8(ascii: "<"), final == UInt8(ascii: "M") || final == UInt8(ascii: "m")
        else { return (nil, length) }
        return (Self.mouse(body.dropFirst(), released: final == UInt8(ascii: "m")), length)
    }

    /// An SGR report `b;x;y`: b's low two bits are the button, 32 means motion, 64 the wheel;
    /// 4, 8 and 16 are Shift, Meta and Ctrl, which do not matter here. x and y count from 1.
    private static func mouse(_ body: ArraySlice<UInt8>, released: Bool) -> InputEvent? {
        let fields = body.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        guard fields.count == 3 else { return nil }
        var values: [Int] = []
        for field in fields {
            guard !field.isEmpty, field.count <= 6 else { return nil }
            var value = 0
            for digit in field {
                guard (0x30...0x39).contains(digit) else { return nil }
                value = value * 10 + Int(digit - 0x30)
            }
            values.append(value)
        }
        let (code, x, y) = (values[0], values[1], values[2])
        guard x >= 1, y >= 1 else { return nil }
        let button = code & 0b11, motion = code & 32 != 0, wheel = code & 64 != 0
        guard !wheel, button == 0 else { return nil }
        let (column, row) = (x - 1, y - 1)
        if released { return .release(column: column, row: row) }
        return motion ? .drag(column: column, row: row) : .press(column: column, row: row)
    }
}
