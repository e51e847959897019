import Glibc
import PuffCore
import PuffPlatform

/// `puff-lock --draw` and `puff-lock --show`: `puff-enroll gesture` on a desktop draws each
/// gesture in a window on the picture, then shows the template about to be saved, with a
/// replay of the drawings, and saves only when the user accepts it. The terminal pad stays
/// the fallback when there is no display.
enum WindowRunner {
    /// Whether to use windows: `DISPLAY` is set and `--stdin` was not given.
    static func applies(fromStdin: Bool) -> Bool {
        guard !fromStdin, let display = getenv("DISPLAY") else { return false }
        return display.pointee != 0
    }

    private static func arguments(_ tool: String, _ mode: String, picture: String, title: String, printLayout: Bool) -> [String] {
        [tool, mode, "--picture", picture, "--title", title] + (printLayout ? ["--print-layout"] : [])
    }

    /// Draws one gesture in a window. Nil when puff-lock is missing or cannot open the display
    /// (it says why): the caller falls back to the terminal. `shown` tells whether the
    /// window opened (the user drew or cancelled there).
    static func draw(picture: String, title: String, printLayout: Bool, shown: inout Bool) throws -> Terminal.Read? {
        shown = false
        guard let tool = ToolRunner.locate("puff-lock") else { return nil }
        let result = try ToolRunner.run(arguments(tool, "--draw", picture: picture, title: title, printLayout: printLayout),
                                        input: .null, readOutput: true)
        shown = result.status != ToolRunner.unavailable
        return try ToolRunner.drawing(result, tool: "puff-lock")
    }

    /// What the user decided in the review window.
    enum Review {
        case saved
        case cancelled
    }

    /// Shows `template` (its points, tolerance squares, order and directions) with a replay of
    /// `drawings`; the template and the drawings go to puff-lock through a pipe, from wiped
    /// memory.
    static func review(picture: String, template: GestureTemplate, drawings: [Gesture], title: String,
                       printLayout: Bool) throws -> Review {
        guard let tool = ToolRunner.locate("puff-lock") else {
            throw Failure(ExitCodes.storeFailure, "puff-lock is missing: cannot show the gesture for checking; nothing was changed")
        }
        let payload = try reviewInput(template: template, drawings: drawings)
        let status = try payload.withBytes { bytes in
            try ToolRunner.run(arguments(tool, "--show", picture: picture, title: title, printLayout: printLayout),
                               input: .bytes(bytes), readOutput: false).status
        }
        switch status {
        case 0: return .saved
        case ToolRunner.cancelled: return .cancelled
        default:
            throw Failure(ExitCodes.refused, "cannot show the gesture for checking (puff-lock exit \(status)); nothing was changed")
        }
    }

    /// The lines `puff-lock --show` reads: `template WIRE`, `tolerance PIXELS`, `drawing WIRE`
    /// for each drawing in order. Built in wiped memory; the wire texts are wiped in place.
    static func reviewInput(template: GestureTemplate, drawings: [Gesture]) throws -> SecureBytes {
        let stored = Gesture(width: template.width, height: template.height, parts: template.parts)
        let tolerance = template.parameters.tolerance * Double(max(template.width, template.height))
        var pieces: [[UInt8]] = [Array("template ".utf8), GestureWire.serialize(stored), Array("\ntolerance \(tolerance)\n".utf8)]
        for drawing in drawings {
            pieces += [Array("drawing ".utf8), GestureWire.serialize(drawing), [UInt8(ascii: "\n")]]
        }
        defer {
            for index in pieces.indices { Wipe.array(&pieces[index]) }
        }
        var payload = try SecureBytes(count: pieces.reduce(0) { $0 + $1.count })
        payload.withMutableBytes { target in
            var offset = 0
            for piece in pieces {
                for byte in piece {
                    target[offset] = byte
                    offset += 1
                }
            }
        }
        return payload
    }
}
