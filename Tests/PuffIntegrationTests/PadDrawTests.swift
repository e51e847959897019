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

    func wait(timeout: Double = 5, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            usleep(20_000)
        }
        throw PadTestError("condition not met in \(timeout) s")
    }
}
