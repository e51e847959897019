import Foundation
import PuffCore
import Testing

/// `puff-pad draw` in a real terminal (tmux): mouse reports in, the wire-format gesture out.
@Suite(.serialized)
struct PadDrawTests {
    static let hints = "Enter: done"

    func drawPane(environment: [String: String]? = nil) throws -> TmuxPane {
        let command = [Artefacts.pad, "draw", "--picture", Artefacts.testPicture]
        let pane = try environment.map { try TmuxPane(command, environment: $0) } ?? TmuxPane(command)
        try pane.waitFor(Self.hints)
        return pane
    }

    func parse(_ output: String) throws -> Gesture {
        let line = try #require(output.split(separator: "\n").first.map(String.init), "no output")
        return try GestureWire.parse(Array(line.utf8))
    }

    /// A stroke up the hill, a tap on the sun; the picture and the strokes are on screen.
    @Test func pathAndTapAreSentAsCellCentres() throws {
        let pane = try drawPane()
        // The picture fills columns 14…85 of row 1 and no more.
        let first = try pane.screen()[1]
        #expect(first.prefix(14).allSatisfy { $0 == " " } && first.count >= 86 && first[14] != " " && first[85] != " ",
                "row 1: \(String(first))")

        let path = (0...10).map { i in (20 + 3 * i, 24 - i) }
        try pane.stroke(path)
        let sun = PadGeometry.cell(300, 80)
        try pane.tap(sun)
        try pane.waitFor("2 parts")
        let screen = try pane.screen()
        // The path's cells carry its number at the start and dots along the way; the tap a diamond.
        #expect(screen[24][20] == "1")
        #expect(screen[19][35] == "●" && screen[14][50] == "●")
        #expect(screen[sun.1][sun.0] == "◆")
        let coloured = try pane.capture(escapes: true)
        #expect(coloured.contains("48;2;"), "the picture is drawn with truecolour backgrounds")

        try pane.key("Enter")
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.terminalRestored)
        #expect(try pane.format("#{alternate_on}#{mouse_any_flag}#{mouse_sgr_flag}#{cursor_flag}") == "0001")

        let gesture = try parse(result.output)
        #expect(gesture.width == 400 && gesture.height == 300)
        try #require(gesture.parts.count == 2)
        #expect(gesture.parts[0].kind == .path)
        #expect(gesture.parts[0].points.count == path.count)
        for (point, cell) in zip(gesture.parts[0].points, path) { PadGeometry.expect(point, isCentreOf: cell) }
        #expect(gesture.parts[1].kind == .tap)
        PadGeometry.expect(gesture.parts[1].points[0], isCentreOf: sun)
        // Cell precision: each coordinate is within half a cell of the pixel aimed at.
        #expect(abs(gesture.parts[1].points[0].x - 300) <= PadGeometry.cellWidth / 2 + 0.001)
        #expect(abs(gesture.parts[1].points[0].y - 80) <= PadGeometry.cellHeight / 2 + 0.001)
    }

    /// Backspace removes the last part; repeated reports in one cell add one point; a press
    /// off the picture does nothing; a drag that leaves the picture follows its edge.
    @Test func backspaceUndoesAndEdgesClamp() throws {
        let pane = try drawPane()
        try pane.tap((30, 10))
        try pane.tap((60, 5))
        try pane.waitFor("2 parts")
        try pane.key("BSpace")
        try pane.waitFor("1 part |")
        #expect(try pane.screen()[5][60] != "◆")
        try pane.tap((5, 5))             // left of the picture: ignored
        try pane.stroke([(80, 20), (80, 20), (84, 20), (95, 20), (95, 29)])
        try pane.waitFor("2 parts")
        try pane.key("Enter")
        let result = try pane.finished()
        #expect(result.status == 0 && result.terminalRestored, "\(result.errors)")
        let gesture = try parse(result.output)
        try #require(gesture.parts.count == 2)
        #expect(gesture.parts[0].kind == .tap)
        PadGeometry.expect(gesture.parts[0].points[0], isCentreOf: (30, 10))
        #expect(gesture.parts[1].kind == .path)
        let expected = [(80, 20), (84, 20), (85, 20), (85, 27)]
        #expect(gesture.parts[1].points.count == expected.count)
        for (point, cell) in zip(gesture.parts[1].points, expected) { PadGeometry.expect(point, isCentreOf: cell) }
    }

    @Test func escapeCancelsWithNothingOnStdout() throws {
        let pane = try drawPane()
        try pane.tap((30, 10))
        try pane.waitFor("1 part |")
        try pane.key("Escape")
        let result = try pane.finished()
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        #expect(result.terminalRestored)
        #expect(try pane.format("#{alternate_on}#{mouse_any_flag}") == "00")
    }

    /// SIGTSTP gives the terminal back while stopped and takes it again when continued by
    /// the shell; SIGTERM restores it and ends the program by the signal.
    @Test func signalsRestoreTheTerminal() throws {
        let pane = try TmuxPane([Artefacts.pad, "draw", "--picture", Artefacts.testPicture], jobControl: true)
        try pane.waitFor(Self.hints)
        let pid = try pane.pid()
        try pane.tap((30, 10))
        try pane.waitFor("1 part |")
        #expect(try pane.format("#{alternate_on}#{mouse_any_flag}#{mouse_sgr_flag}") == "111")
        #expect(try pane.terminalSettings().contains("-icanon"))
        kill(pid, SIGTSTP)
        try wait { pane.isStopped }
        #expect(try pane.format("#{alternate_on}#{mouse_any_flag}#{mouse_sgr_flag}#{cursor_flag}") == "0001")
        let stopped = try pane.terminalSettings()
        #expect(["icanon", "echo", "isig", "icrnl", "opost"].allSatisfy(stopped.contains), "\(stopped)")
        try pane.resume()
        try wait { try pane.format("#{alternate_on}#{mouse_any_flag}") == "11" }
        try pane.waitFor("1 part |")    // redrawn, the part kept
        #expect(try pane.terminalSettings().contains("-icanon"))
        kill(pid, SIGTERM)
        let result = try pane.finished()
        #expect(result.status == 128 + SIGTERM)
        #expect(result.output.isEmpty)
        #expect(result.terminalRestored)
        #expect(try pane.format("#{alternate_on}#{mouse_any_flag}#{cursor_flag}") == "001")
    }

    /// SIGHUP (the SSH connection dropped) and SIGINT end the program by the signal, with the
    /// terminal restored.
    @Test func hangupAndInterruptRestoreTheTerminal() throws {
        for signal in [SIGHUP, SIGINT] {
            let pane = try drawPane()
            let pid = try pane.pid()
            try pane.tap((30, 10))
            try pane.waitFor("1 part |")
            kill(pid, signal)
            let result = try pane.finished()
            #expect(result.status == 128 + signal)
            #expect(result.terminalRestored)
            #expect(try pane.format("#{alternate_on}#{mouse_any_flag}") == "00")
        }
    }

    @Test func dumbTerminalSaysSoAndOffersThePasscode() throws {
        let pane = try TmuxPane([Artefacts.pad, "draw", "--picture", Artefacts.testPicture], environment: ["TERM": "dumb"])
        let result = try pane.finished()
        #expect(result.status == 69)
        #expect(result.errors.contains("no mouse support") && result.errors.contains("passcode"))
        #expect(result.output.isEmpty)
        #expect(result.terminalRestored)
    }

    /// Runs `puff-pad draw` under Tests/Pad/pixel-terminal.py, a pseudo-terminal of 100 × 30
    /// cells of 10 × 20 pixels that plays the terminal's side of the SGR-Pixels handshake
    /// (`supported`) or does not know the mode; `reports` are the bytes after `ESC [ <`.
    func pixelTerminal(supported: Bool, reports: [String], parts: String) throws -> (events: [String], gesture: Gesture?) {
        var template = Array("\(Artefacts.temporary)/puff-pixel-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw PadTestError("mkdtemp failed") }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = Artefacts.repository.appendingPathComponent("Tests/Pad/pixel-terminal.py").path
        let result = try run("/usr/bin/python3", [script, directory + "/out", "100", "30", "10", "20",
                                                  supported ? "supported" : "unsupported", "--",
                                                  Artefacts.pad, "draw", "--picture", Artefacts.testPicture],
                             input: (reports + ["parts: " + parts]).joined(separator: "\n") + "\n", seconds: 60)
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let wire = lines.first { $0.hasPrefix("output: ") }.map { String($0.dropFirst("output: ".count)) }
        return (lines.filter { !$0.hasPrefix("output: ") }, try wire.map { try GestureWire.parse(Array($0.utf8)) })
    }

    /// The window pixel (counted from 1, as reports count) that a terminal with 10 × 20-pixel
    /// cells reports for picture pixel (x, y), and the picture point the pad must send for it:
    /// the centre of that window pixel, within a tenth of a cell of (x, y).
    static func pixelReport(_ x: Double, _ y: Double) -> (report: (Int, Int), point: (Double, Double)) {
        let cellX = x / PadGeometry.cellWidth, cellY = y / PadGeometry.cellHeight
        let column = Int(cellX), row = Int(cellY)
        let insideX = Int((cellX - Double(column)) * 10), insideY = Int((cellY - Double(row)) * 20)
        let report = ((PadGeometry.left + column) * 10 + insideX + 1, (PadGeometry.top + row) * 20 + insideY + 1)
        let point = ((Double(column) + (Double(insideX) + 0.5) / 10) * PadGeometry.cellWidth,
                     (Double(row) + (Double(insideY) + 0.5) / 20) * PadGeometry.cellHeight)
        return (report, point)
    }

    /// A terminal that knows SGR-Pixels (mode 1016): the pad asks whether it knows the mode,
    /// then its cell size, switches the mode on only after both answers, and sends the picture
    /// point under the reported pixel — not the cell's centre — for a stroke and a tap; on
    /// exit it switches the mode off again.
    @Test func pixelReportsArePixelPrecise() throws {
        // A stroke up the hill and a tap beside the sun, each point off its cell's centre.
        let stroke = [(41.3, 259.2), (80.9, 226.4), (120.8, 190.4), (171.2, 141.7), (219.6, 91.7)].map(Self.pixelReport)
        let tap = Self.pixelReport(302.2, 84.9)
        var reports = ["0;\(stroke[0].report.0);\(stroke[0].report.1)M"]
        reports += stroke.dropFirst().map { "32;\($0.report.0);\($0.report.1)M" }
        reports.append("0;\(stroke[4].report.0);\(stroke[4].report.1)m")
        reports += ["0;\(tap.report.0);\(tap.report.1)M", "0;\(tap.report.0);\(tap.report.1)m"]
        let (events, drawn) = try pixelTerminal(supported: true, reports: reports, parts: "2 parts")
        #expect(events == ["asked mode", "asked cell size", "mode on", "mode off", "status 0"], "\(events)")
        let gesture = try #require(drawn, "no gesture on stdout: \(events)")
        try #require(gesture.parts.count == 2)
        #expect(gesture.parts[0].kind == .path && gesture.parts[1].kind == .tap)
        try #require(gesture.parts[0].points.count == stroke.count)
        for (point, expected) in zip(gesture.parts[0].points + gesture.parts[1].points, stroke + [tap]) {
            // To the wire format's thousandth of a pixel.
            #expect(abs(point.x - expected.point.0) <= 0.001 && abs(point.y - expected.point.1) <= 0.001,
                    "got \(point.x),\(point.y), expected \(expected.point)")
        }
        // Within a tenth of a cell of what was aimed at (cell reports are off by up to half a
        // cell), and not the cell's centre.
        let tapPoint = gesture.parts[1].points[0]
        #expect(abs(tapPoint.x - 302.2) <= PadGeometry.cellWidth / 10 && abs(tapPoint.y - 84.9) <= PadGeometry.cellHeight / 20)
        let centre = PadGeometry.pixel(PadGeometry.cell(302.2, 84.9))
        #expect(abs(tapPoint.x - centre.0) > 1 || abs(tapPoint.y - centre.1) > 1, "the tap was sent as its cell's centre")
    }

    /// A terminal that does not know mode 1016: the pad asks once, never switches the mode on,
    /// and reads the reports as cells (each point its cell's centre).
    @Test func withoutPixelReportsCellsAreUsed() throws {
        let cells = [(30, 10), (60, 5)]
        let reports = cells.flatMap { ["0;\($0.0 + 1);\($0.1 + 1)M", "0;\($0.0 + 1);\($0.1 + 1)m"] }
        let (events, drawn) = try pixelTerminal(supported: false, reports: reports, parts: "2 parts")
        #expect(events == ["asked mode", "mode off", "status 0"], "\(events)")
        let gesture = try #require(drawn, "no gesture on stdout: \(events)")
        try #require(gesture.parts.count == 2)
        for (part, cell) in zip(gesture.parts, cells) { PadGeometry.expect(part.points[0], isCentreOf: cell) }
    }

    func wait(timeout: Double = 5, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            usleep(20_000)
        }
        throw PadTestError("condition not met in \(timeout) s")
    }
}
