import Foundation
import PuffCore
import Testing

/// `puff-pad` on the far end of an SSH connection, with nothing but a terminal at the near end
/// (issue 6): a real `ssh -t` in a tmux pane logs in to a private sshd with the Puff passcode
/// (keyboard-interactive through the module), and the remote shell, running as an ordinary
/// account, runs `puff-pad draw` and then `puff-pad login` (a wrong gesture, then the enrolled
/// one). The mouse reports tmux sends travel through ssh to the remote pseudo-terminal.
/// `PUFF_SHOW_PANE=FILE` saves the drawing screen (text, then with colours) for a look.
///
/// The remote `puff-pad login` is not root, so the module goes through the setuid helper,
/// which reads the fixed store: sshd runs in a private mount namespace where the test store
/// (an `UnprivilegedTests.Stage`) is bind-mounted at /etc/puff and /var/lib/puff, and every
/// session it starts inherits that view. The machine's own store is never touched.
@Suite(.serialized)
struct PadOverSSHTests {
    static let passcode = "604917"

    @Test func drawAndLoginWithAGestureOverSSH() throws {
        let user = try RealClientTests.ShellUser("pad")
        let stage = try UnprivilegedTests.Stage()
        let fixture = stage.fixture
        // The pad (a debug build linking the toolchain's Swift runtime) where the account can run it.
        let pad = stage.bin + "/puff-pad"
        // cp(1), not copyItem: see Stage.copy (ETXTBSY from a write descriptor inherited by a fork).
        #expect(try run("/bin/cp", [Artefacts.pad, pad]).status == 0)
        chmod(pad, 0o755)
        let picture = stage.bin + "/picture.png"
        // Where the remote side leaves the drawn gesture: the account's own directory.
        let out = fixture.root + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        chown(out, user.uid, user.gid)

        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        let gesture = PadLoginTests.genuine
        let enrolled = try run(Artefacts.enroll, ["gesture", "--user", user.name, "--picture", picture, "--stdin"]
                               + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")

        let mountStore = "mount --bind \"$1\" /etc/puff && mount --bind \"$2\" /var/lib/puff && shift 2 && exec \"$@\""
        let server = try RealClientTests.PrivateSSHServer(
            fixture, moduleArguments: "deny=5",
            launcher: ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", mountStore,
                       "sh", fixture.etc, fixture.state])
        // ssh asks this program for the answer to the module's keyboard-interactive prompt (it
        // would ask the terminal otherwise, which the pad is about to use).
        let askpass = fixture.root + "/askpass"
        try fixture.write(askpass, "#!/bin/sh\necho \(Self.passcode)\n", mode: 0o700)

        let q = TmuxPane.quote
        let remote = "\(q(pad)) draw --picture \(q(picture)) > \(q(out + "/gesture")); echo $? > \(q(out + "/draw-status")); "
            + "exec \(q(pad)) login --pam-confdir \(q(fixture.pamDirectory)) --service puff-test --attempts 2"
        var ssh = server.clientArguments(user.name, command: remote)
        ssh.insert("-t", at: 1)
        let started = Date()
        let pane = try TmuxPane(ssh, environment: ["TERM": "xterm-256color", "SSH_ASKPASS": askpass,
                                                   "SSH_ASKPASS_REQUIRE": "force"],
                                stdoutOnTerminal: true)

        // The drawing pad, as PadDrawTests checks it locally: the picture fills columns 14…85.
        try pane.waitFor("Enter: done", timeout: 20)
        // Without COLORTERM (ssh does not pass it) the pad draws in 256 colours, and a flat sky
        // is blank cells on a coloured background: the picture's rows are found by their
        // characters (nothing left of 14 or right of 85, some row spanning both) and its sky by
        // the background colour from column 14 on.
        let rows = try pane.screen()[1...27]
        #expect(rows.allSatisfy { $0.prefix(14).allSatisfy { $0 == " " } && $0.dropFirst(86).allSatisfy { $0 == " " } })
        #expect(rows.contains { $0.count >= 86 && $0[14] != " " && $0[85] != " " }, "\(rows.map { String($0) })")
        let sky = String(try pane.capture(escapes: true).split(separator: "\n", omittingEmptySubsequences: false)[1])
        let skyStart = try Regex("^(\u{1B}\\[[0-9;]*m)* {14}(\u{1B}\\[[0-9;]*m)*\u{1B}\\[48;5;[0-9]+m")
        #expect(sky.contains(skyStart), "row 1: \(sky.debugDescription)")
        let path = PadLoginTests.path, sun = PadLoginTests.sun, corner = PadLoginTests.corner
        try pane.stroke(path)
        try pane.tap(sun)
        try pane.tap(corner)
        try pane.waitFor("3 parts")
        let drawn = try pane.screen()
        #expect(drawn[24][20] == "1")
        #expect(drawn[19][35] == "●" && drawn[14][50] == "●")
        #expect(drawn[sun.1][sun.0] == "◆")
        if let file = ProcessInfo.processInfo.environment["PUFF_SHOW_PANE"] {
            try (pane.capture() + pane.capture(escapes: true)).write(toFile: file, atomically: true, encoding: .utf8)
        }
        try pane.key("Enter")

        // Then the lock screen, on the same connection.
        try pane.waitFor("Tab/type: passcode", timeout: 20)
        #expect(try String(contentsOfFile: out + "/draw-status", encoding: .utf8) == "0\n")
        let line = try String(contentsOfFile: out + "/gesture", encoding: .utf8)
        var attributes = stat()
        #expect(stat(out + "/gesture", &attributes) == 0 && attributes.st_uid == user.uid, "the pad ran as the account")
        let first = try #require(line.split(separator: "\n").first.map(String.init), "the pad printed nothing")
        let parsed = try GestureWire.parse(Array(first.utf8))
        #expect(parsed.width == 400 && parsed.height == 300)
        try #require(parsed.parts.count == 3)
        #expect(parsed.parts[0].kind == .path && parsed.parts[0].points.count == path.count)
        for (point, cell) in zip(parsed.parts[0].points, path) { PadGeometry.expect(point, isCentreOf: cell) }
        #expect(parsed.parts[1].kind == .tap)
        PadGeometry.expect(parsed.parts[1].points[0], isCentreOf: sun)
        #expect(parsed.parts[2].kind == .tap)
        PadGeometry.expect(parsed.parts[2].points[0], isCentreOf: corner)

        // A wrong gesture first (the same shapes eight cells, 44 px or 11 % of the picture, to
        // the right): refused and counted, with the module's message on the next screen; then
        // the genuine one.
        try pane.stroke(path.map { ($0.0 + 8, $0.1) })
        try pane.tap((sun.0 + 8, sun.1))
        try pane.tap((corner.0 + 8, corner.1))
        try pane.waitFor("3 parts")
        try pane.key("Enter")
        try pane.waitFor("Puff: wrong gesture.", timeout: 20)
        try pane.waitFor("0 parts")
        #expect(try fixture.failures(user.name) == 1)
        try pane.stroke(path)
        try pane.tap(sun)
        try pane.tap(corner)
        try pane.waitFor("3 parts")
        try pane.key("Enter")
        let result = try pane.finished(timeout: 20)
        let elapsed = Date().timeIntervalSince(started)
        let screen = try pane.capture()
        #expect(result.status == 0, "\(result.errors)\n\(screen)\n\(server.log)")
        #expect(screen.contains("puff-pad: authenticated \(user.name)"), "\(screen)")
        #expect(result.terminalRestored)
        #expect(try fixture.failures(user.name) == 0)
        #expect(server.log.contains("Accepted keyboard-interactive/pam for \(user.name)"), "\(server.log)")
        #expect(elapsed < 30, "the session took \(elapsed) s")
    }
}
