import CPuffBuild
import ArgumentParser
import Glibc
import PuffClient
import PuffCore

/// `puff-pad`: draw a gesture on a picture in a terminal, or log in through PAM with one.
@main
struct PuffPad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "puff-pad",
        abstract: "Draw Puff gestures on the picture in a terminal; a PAM login that speaks Puff's prompts.",
        discussion: """
        Needs a terminal with xterm mouse reporting (SGR, mode 1006): xterm, VTE terminals, \
        kitty, iTerm2, Windows Terminal, tmux, screen 4.7+..., locally or over SSH. Mouse \
        reports name whole cells; the pad sends the pixel at the centre of each cell. \
        Exit codes: 0 done; 1 authentication failed; 2 cancelled; 64 usage; 66 picture \
        unreadable; 69 no terminal or no mouse support; 70 PAM error.
        """,
        version: String(cString: puff_build_version()),
        subcommands: [DrawCommand.self, LoginCommand.self]
    )

    /// Names the program in its messages (the kit's `Report`), then parses and runs.
    static func main() {
        Report.program = "puff-pad"
        main(nil)
    }
}

/// Exit codes documented in `--help`.
enum PadExit {
    static let authenticationFailed: Int32 = 1
    static let cancelled: Int32 = 2
    static let noPicture: Int32 = 66
    static let unavailable: Int32 = 69
    static let pamError: Int32 = 70
}
