/// Where in its cell a mouse report fell: 0…1 from the cell's left and top edges. Cell
/// reports know only the cell, so they point at its centre.
struct CellOffset: Equatable {
    var x: Double
    var y: Double
    static let centre = CellOffset(x: 0.5, y: 0.5)
}

/// One thing the user did at the terminal.
enum InputEvent: Equatable {
    /// Left button pressed, moved with the button held, released; zero-based cell coordinates
    /// and, with pixel reports, the position inside the cell.
    case press(column: Int, row: Int, within: CellOffset)
    case drag(column: Int, row: Int, within: CellOffset)
    case release(column: Int, row: Int, within: CellOffset)
    /// The terminal's answer to the query for SGR-Pixels mouse reports (mode 1016): whether
    /// it knows the mode.
    case pixelReports(supported: Bool)
    /// The terminal's answer to the cell-size query (`CSI 16 t`): a cell in pixels.
    case cellPixels(width: Int, height: Int)
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
/// 1006, in cells; or in pixels once `cellSize` is set, mode 1016), the answers to the mode
/// 1016 query (`ESC [ ? 1016 ; Ps $ y`) and to the cell-size query (`ESC [ 6 ; h ; w t`),
/// Enter, Backspace, Tab, Esc, control keys and printable ASCII. Other escape sequences
/// (arrows, function keys, other mouse buttons, the wheel) are read whole and ignored.
struct InputDecoder {
    private var buffer: [UInt8] = []
    /// A cell's size in pixels while the terminal sends pixel reports (mode 1016); nil for
    /// cell reports.
    var cellSize: (width: Int, height: Int)?

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
        if final == UInt8(ascii: "y"), body.first == UInt8(ascii: "?"), body.last == UInt8(ascii: "$"),
           let values = Self.numbers(body.dropFirst().dropLast()), values.count == 2, values[0] == 1016 {
            // DECRPM: 1 set, 2 reset, 3 permanently set (can be used); 0 unknown, 4 permanently reset.
            return (.pixelReports(supported: (1...3).contains(values[1])), length)
        }
        if final == UInt8(ascii: "t"), let values = Self.numbers(body[...]), values.count == 3, values[0] == 6 {
            guard values[1] > 0, values[2] > 0 else { return (nil, length) }
            return (.cellPixels(width: values[2], height: values[1]), length)
        }
        guard body.first == UInt8(ascii: "<"), final == UInt8(ascii: "M") || final == UInt8(ascii: "m")
        else { return (nil, length) }
        return (mouse(body.dropFirst(), released: final == UInt8(ascii: "m")), length)
    }

    /// Semicolon-separated decimal numbers of at most six digits each; nil otherwise.
    private static func numbers(_ body: ArraySlice<UInt8>) -> [Int]? {
        var values: [Int] = []
        for field in body.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false) {
            guard !field.isEmpty, field.count <= 6 else { return nil }
            var value = 0
            for digit in field {
                guard (0x30...0x39).contains(digit) else { return nil }
                value = value * 10 + Int(digit - 0x30)
            }
            values.append(value)
        }
        return values
    }

    /// An SGR report `b;x;y`: b's low two bits are the button, 32 means motion, 64 the wheel;
    /// 4, 8 and 16 are Shift, Meta and Ctrl, which do not matter here. x and y count from 1,
    /// in cells, or in pixels (from the window's top-left pixel) while `cellSize` is set.
    private func mouse(_ body: ArraySlice<UInt8>, released: Bool) -> InputEvent? {
        guard let values = Self.numbers(body), values.count == 3 else { return nil }
        let (code, x, y) = (values[0], values[1], values[2])
        guard x >= 1, y >= 1 else { return nil }
        let button = code & 0b11, motion = code & 32 != 0, wheel = code & 64 != 0
        guard !wheel, button == 0 else { return nil }
        var (column, row) = (x - 1, y - 1)
        var within = CellOffset.centre
        if let cellSize, cellSize.width > 0, cellSize.height > 0 {
            // Pixel x - 1 lies in cell (x - 1) / width, at the centre of its own pixel.
            column = (x - 1) / cellSize.width
            row = (y - 1) / cellSize.height
            within = CellOffset(x: (Double((x - 1) % cellSize.width) + 0.5) / Double(cellSize.width),
                                y: (Double((y - 1) % cellSize.height) + 0.5) / Double(cellSize.height))
        }
        if released { return .release(column: column, row: row, within: within) }
        return motion ? .drag(column: column, row: row, within: within) : .press(column: column, row: row, within: within)
    }
}
