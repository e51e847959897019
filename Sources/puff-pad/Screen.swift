/// A frame of terminal output built in memory and written in one go, so a redraw never shows
/// half-drawn states. Coordinates are zero-based cells.
struct Frame {
    private(set) var text = ""

    /// Moves the cursor.
    mutating func move(column: Int, row: Int) {
        text += "\u{1B}[\(row + 1);\(column + 1)H"
    }

    /// Clears the whole screen.
    mutating func clear() { text += "\u{1B}[0m\u{1B}[2J" }

    /// Writes `line` at the start of `row`, cut to `width` characters, with `style` (SGR
    /// parameters such as "7" or "1;93"), and clears the rest of the row.
    mutating func line(_ line: String, row: Int, width: Int, style: String = "0") {
        move(column: 0, row: row)
        text += "\u{1B}[0m\u{1B}[2K\u{1B}[\(style)m" + Self.cut(line, to: width) + "\u{1B}[0m"
    }

    /// Writes `string` at a position with `style`.
    mutating func put(_ string: String, column: Int, row: Int, style: String = "0") {
        move(column: column, row: row)
        text += "\u{1B}[0m\u{1B}[\(style)m" + string + "\u{1B}[0m"
    }

    /// Appends raw output (already positioned).
    mutating func raw(_ string: String) { text += string }

    /// The first `width` characters of `string` (the pad's texts are one cell per character).
    static func cut(_ string: String, to width: Int) -> String {
        string.count <= width ? string : String(string.prefix(max(0, width)))
    }

    /// Sends the frame.
    func send(to session: TerminalSession) { session.write(text) }
}

/// The colours of successive gesture parts (bright ANSI colours on black, readable on any
/// picture and in 16-colour terminals).
enum PartStyle {
    static let colors = ["93", "96", "95", "92", "91", "94"]

    static func style(part index: Int) -> String {
        "1;40;" + colors[index % colors.count]
    }

    /// `gesture_trail = fade`: the stroke being drawn (bright white), and a finished one
    /// fading (dim grey), the same for every part.
    static let trail = "1;40;97"
    static let fading = "2;40;37"

    /// The label shown where part `index` starts: 1…9, then A…G (at most 16 parts).
    static func label(part index: Int) -> String {
        let labels = Array("123456789ABCDEFG")
        return index < labels.count ? String(labels[index]) : "+"
    }
}
