import ArgumentParser
import Glibc
import PuffClient
import PuffCore
import PuffPlatform

/// `puff-pad draw`: capture one gesture and print it in the wire format.
struct DrawCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "draw",
        abstract: "Draw a gesture on a picture and print it in Puff's wire format on stdout.",
        discussion: """
        The picture fills the terminal (aspect ratio kept). Drag with the left button to draw a \
        path, click to tap; Enter finishes, Backspace removes the last part, Esc cancels. The \
        line printed is ready for `puff-enroll gesture --stdin`; the screen is drawn on \
        /dev/tty, so stdout may be a pipe or a file.
        """
    )

    @Option(help: "The picture to draw on (PNG or JPEG).")
    var picture: String

    @Option(help: "The line shown above the picture.")
    var title = "Draw your gesture on the picture"

    func run() throws {
        let image: PadPicture
        do {
            image = try PadPicture(path: picture)
        } catch {
            Report.warn(error.description)
            throw ExitCode(PadExit.noPicture)
        }
        let session: TerminalSession
        do {
            session = try TerminalSession()
        } catch {
            Report.warn("cannot draw: \(error); enter a passcode instead")
            throw ExitCode(PadExit.unavailable)
        }
        session.enter()
        let pad = GesturePad(session: session, picture: image, title: title)
        let outcome = pad.run()
        session.leave()
        switch outcome {
        case .gesture(let gesture):
            var line = GestureWire.serialize(gesture)
            line.append(UInt8(ascii: "\n"))
            let wrote = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            Wipe.array(&line)
            guard wrote == line.count else { throw ExitCode(PadExit.pamError) }
        case .cancelled, .passcode:
            Report.warn("cancelled")
            throw ExitCode(PadExit.cancelled)
        case .terminated(let signal):
            TerminalRestore.die(of: signal)
        }
    }
}
