import Foundation
import Glibc
import PuffCore
import Testing

extension Artefacts {
    static var pad: String { binaries + "/puff-pad" }
    static let testPicture = repository.appendingPathComponent("Tests/Fixtures/picture-400x300.png").path
}

/// A program running in a real terminal: a detached tmux session on a private server socket,
/// driven with `send-keys` and read with `capture-pane`. The program runs inside a small shell
/// wrapper that records the terminal settings (`stty -g`) before and after, its exit status,
/// stdout and stderr, then keeps the pane open so the terminal's modes can be inspected.
final class TmuxPane {
    let socket = "puff-test-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    let directory: String
    let columns: Int
    let rows: Int
    private var server: pid_t = 0
    private var socketPath = ""

    /// Starts `command` (words, quoted here) in a `columns` × `rows` pane with the given
    /// environment; stdout goes to a file, or with `stdoutOnTerminal` to the pane. With
    /// `jobControl` the wrapper is bash with `set -m`, like an interactive shell: the program
    /// gets its own foreground process group, so SIGTSTP really stops it; the wrapper then
    /// waits for `resume()` and continues it with `fg`.
    init(_ command: [String], columns: Int = 100, rows: Int = 30,
         environment: [String: String] = ["TERM": "xterm-256color", "COLORTERM": "truecolor"],
         jobControl: Bool = false, stdoutOnTerminal: Bool = false) throws {
        var template = Array("\(Artefacts.temporary)/puff-pad-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        directory = String(cString: made)
        self.columns = columns
        self.rows = rows
        let env = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.quote($0.value))" }.joined(separator: " ")
        let d = Self.quote(directory)
        let script = """
        \(jobControl ? "set -m" : "")
        stty -g > \(d)/stty-before
        env \(env) \(command.map(Self.quote).joined(separator: " ")) \(stdoutOnTerminal ? "" : "> \(d)/stdout") 2> \(d)/stderr
        s=$?
        while [ $s -eq 148 ]; do
            : > \(d)/stopped; read x < \(d)/resume; rm -f \(d)/stopped
            fg > /dev/null; s=$?
        done
        echo $s > \(d)/status.tmp && mv \(d)/status.tmp \(d)/status
        stty -g > \(d)/stty-after
        exec sleep 600
        """
        try script.write(toFile: directory + "/run.sh", atomically: true, encoding: .utf8)
        if jobControl { mkfifo(directory + "/resume", 0o600) }
        let shell = jobControl ? "bash " : "sh "
        // The server runs in the foreground (-D) as our child, so it can be reaped: a daemon
        // would be re-parented to PID 1, which does not reap everywhere. It and the client get
        // stdio on /dev/null and no other descriptor (a pipe of Foundation's left open in
        // the server would never reach end-of-file).
        server = try Self.spawn("/usr/bin/tmux", ["tmux", "-D", "-L", socket, "-f", "/dev/null"])
        let arguments = ["tmux", "-L", socket, "new-session", "-d", "-x", String(columns),
                         "-y", String(rows), shell + Self.quote(directory + "/run.sh")]
        var started = false
        for _ in 0..<100 where !started {
            started = try Self.wait(Self.spawn("/usr/bin/tmux", arguments)) == 0
            if !started { usleep(20_000) }
        }
        guard started else { throw PadTestError("tmux new-session failed") }
        socketPath = try format("#{socket_path}")
    }

    /// Kills what runs in the pane (the server reaps it), then the server, and reaps that.
    deinit {
        if let shell = try? format("#{pane_pid}"), let pid = pid_t(shell) {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(child, SIGKILL) }
            kill(pid, SIGKILL)
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(10_000) }
        }
        _ = try? tmux(["kill-server"])
        kill(server, SIGTERM)
        _ = try? Self.wait(server)
        // A server killed by a signal leaves its socket file behind.
        if socketPath.hasSuffix("/" + socket) { unlink(socketPath) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts a program (`arguments[0]` is its name) with stdin, stdout and stderr on
    /// /dev/null (Child: no other descriptor, no blocked signals); returns its pid.
    static func spawn(_ path: String, _ arguments: [String]) throws -> pid_t {
        try Child([path] + arguments.dropFirst()).start()
    }

    /// Reaps a child; its exit status.
    static func wait(_ pid: pid_t) throws -> Int32 {
        try Child.wait(pid)
    }

    /// With job control: whether the program is stopped (the wrapper saw status 148).
    var isStopped: Bool { FileManager.default.fileExists(atPath: directory + "/stopped") }

    /// With job control: continue the stopped program in the foreground (`fg`).
    func resume() throws {
        let fd = open(directory + "/resume", O_WRONLY)
        guard fd >= 0 else { throw PadTestError("cannot open the resume fifo") }
        _ = Glibc.write(fd, "\n", 1)
        close(fd)
    }

    static func quote(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    @discardableResult
    func tmux(_ arguments: [String]) throws -> Run {
        try run("/usr/bin/tmux", ["-L", socket] + arguments)
    }

    /// The pane's text (`capture-pane -p`), or with colours and attributes (`-e`).
    func capture(escapes: Bool = false) throws -> String {
        try tmux(["capture-pane", "-p"] + (escapes ? ["-e"] : [])).output
    }

    /// Saves the pane's text as build/screenshots/NAME.txt, to be looked at (rendered to an
    /// image with `convert … "label:$(cat FILE)"`, as the lock screen's PNGs are looked at).
    func saveCapture(_ name: String) throws {
        try FileManager.default.createDirectory(atPath: LockScreenTests.screenshots, withIntermediateDirectories: true)
        try capture().write(toFile: LockScreenTests.screenshots + "/" + name + ".txt", atomically: true, encoding: .utf8)
    }

    /// The pane's rows as arrays of characters.
    func screen() throws -> [[Character]] {
        try capture().split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
    }

    /// Waits until the pane shows `text` (up to `timeout` seconds).
    func waitFor(_ text: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try capture().contains(text) { return }
            usleep(20_000)
        }
        throw PadTestError("pane never showed \(text.debugDescription); it shows:\n\(try capture())")
    }

    /// Sends bytes as typed (`send-keys -l`).
    func type(_ text: String) throws {
        try tmux(["send-keys", "-l", text])
    }

    /// Sends named keys (`Enter`, `BSpace`, `Escape`, `Tab`).
    func key(_ name: String) throws {
        try tmux(["send-keys", name])
    }

    /// SGR mouse reports (mode 1006) with zero-based cell coordinates: press, drags, release.
    func stroke(_ cells: [(Int, Int)]) throws {
        guard let first = cells.first, let last = cells.last else { return }
        var text = "\u{1B}[<0;\(first.0 + 1);\(first.1 + 1)M"
        for cell in cells.dropFirst() { text += "\u{1B}[<32;\(cell.0 + 1);\(cell.1 + 1)M" }
        text += "\u{1B}[<0;\(last.0 + 1);\(last.1 + 1)m"
        try type(text)
    }

    /// A click: press and release in one cell.
    func tap(_ cell: (Int, Int)) throws { try stroke([cell]) }

    /// `#{format}` of the pane (for example `#{alternate_on}`, `#{mouse_any_flag}`).
    func format(_ format: String) throws -> String {
        try tmux(["display-message", "-p", format]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The program's pid: the wrapper shell's only child while the program runs.
    func pid() throws -> pid_t {
        let shell = try format("#{pane_pid}")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8),
               let value = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) { return value }
            usleep(20_000)
        }
        throw PadTestError("no pid")
    }

    /// The pane terminal's settings now (`stty -a` on the pane's tty), as the set of flag
    /// words (`icanon`, `-echo` ...).
    func terminalSettings() throws -> Set<String> {
        let text = try run("/usr/bin/stty", ["-a", "-F", try format("#{pane_tty}")]).output
        return Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ";" }).map(String.init))
    }

    /// What the finished program left: exit status, stdout, stderr, and whether the terminal
    /// settings after equal those before.
    struct Finished {
        var status: Int32
        var output: String
        var errors: String
        var terminalRestored: Bool
    }

    /// Waits for the program to exit (up to `timeout` seconds).
    func finished(timeout: Double = 20) throws -> Finished {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = try? String(contentsOfFile: directory + "/status", encoding: .utf8),
               let code = Int32(status.trimmingCharacters(in: .whitespacesAndNewlines)) {
                var after: String?
                while after == nil && Date() < deadline {
                    after = try? String(contentsOfFile: directory + "/stty-after", encoding: .utf8)
                    if after?.hasSuffix("\n") != true { after = nil; usleep(20_000) }
                }
                let before = try String(contentsOfFile: directory + "/stty-before", encoding: .utf8)
                return Finished(status: code,
                                output: (try? String(contentsOfFile: directory + "/stdout", encoding: .utf8)) ?? "",
                                errors: try String(contentsOfFile: directory + "/stderr", encoding: .utf8),
                                terminalRestored: before == after)
            }
            usleep(20_000)
        }
        throw PadTestError("the program did not exit; the pane shows:\n\(try capture())")
    }
}

struct PadTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where the pad puts a 400x300 picture in a 100x30 pane, computed here from first principles:
/// rows 1…27 are free (title above, message and hints below); cells are twice as tall as wide,
/// so 27 rows of a 4:3 picture take 27 × 2 × 4/3 = 72 columns, centred: columns 14…85.
enum PadGeometry {
    static let left = 14, top = 1, columns = 72, rows = 27
    static let cellWidth = 400.0 / 72, cellHeight = 300.0 / 27

    /// The picture pixel the pad must send for a zero-based screen cell: the cell's centre.
    static func pixel(_ cell: (Int, Int)) -> (Double, Double) {
        ((Double(cell.0 - left) + 0.5) * cellWidth, (Double(cell.1 - top) + 0.5) * cellHeight)
    }

    /// The screen cell over a picture pixel.
    static func cell(_ x: Double, _ y: Double) -> (Int, Int) {
        (left + min(Int(x / cellWidth), columns - 1), top + min(Int(y / cellHeight), rows - 1))
    }

    /// Asserts a parsed point is the centre of `cell` (to the wire format's 1/1000 px).
    static func expect(_ point: GesturePoint, isCentreOf cell: (Int, Int), sourceLocation: SourceLocation = #_sourceLocation) {
        let (x, y) = pixel(cell)
        #expect(abs(point.x - x) <= 0.001 && abs(point.y - y) <= 0.001,
                "cell \(cell): got \(point.x),\(point.y), expected \(x),\(y)", sourceLocation: sourceLocation)
    }
}
