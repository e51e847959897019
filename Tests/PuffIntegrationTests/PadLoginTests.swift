import Foundation
import PuffCore
import Testing

/// `puff-pad login` in a real terminal (tmux) through real libpam and build/pam_puff.so, with
/// a test store: the gesture drawn with the mouse on the enrolled picture, the passcode
/// clicked on the keypad.
@Suite(.serialized)
struct PadLoginTests {
    static let passcode = "604917"
    /// The enrolled gesture, as cells of a 100x30 pane: a stroke up the hill, a tap on the sun,
    /// a tap at the bottom right (a version-2 gesture needs three parts).
    static let path = (0...10).map { i in (20 + 3 * i, 24 - i) }
    static let sun = PadGeometry.cell(300, 80)
    static let corner = PadGeometry.cell(330, 240)

    static func wire(path: [(Int, Int)], taps: [(Int, Int)]) -> String {
        func text(_ cell: (Int, Int)) -> String {
            let (x, y) = PadGeometry.pixel(cell)
            return String(format: "%.3f,%.3f", x, y)
        }
        return "puff-gesture:1:400x300:p " + path.map(text).joined(separator: " ")
            + taps.map { ";t " + text($0) }.joined()
    }

    /// The enrolled gesture's wire text.
    static var genuine: String { wire(path: path, taps: [sun, corner]) }

    /// A store with the user's 6-digit passcode and the gesture (enrolled from the same cell
    /// centres the pad sends).
    func enrolledStore(_ user: String) throws -> Fixture {
        let fixture = try Fixture(moduleArguments: "deny=100")
        #expect(try fixture.enroll(user, Self.passcode).status == 0)
        let gesture = Self.genuine
        let enrolled = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", Artefacts.testPicture, "--stdin"]
                               + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        return fixture
    }

    /// `puff-pad login` for `user`. `bySelf`: with the user's uid as the real uid (root stays
    /// the effective one), as a setuid-root pad started by the user would run, so the module
    /// names the keypad and the lock state; otherwise as root's, where the module is discreet
    /// (the same prompt and messages for every account).
    func login(_ fixture: Fixture, _ user: String, bySelf: Bool = true) throws -> TmuxPane {
        let command = [Artefacts.pad, "login", "--user", user, "--dir", fixture.etc, "--pam-confdir", fixture.pamDirectory,
                       "--service", "puff-test", "--attempts", "1"]
        guard bySelf else { return try TmuxPane(command) }
        let uid = try #require(getpwnam(user)).pointee.pw_uid
        return try TmuxPane(["/usr/bin/setpriv", "--ruid=\(uid)"] + command)
    }

    @Test func genuineGestureIsAccepted() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try enrolledStore(user)
        let pane = try login(fixture, user)
        try pane.waitFor("Tab/type: passcode")
        #expect(try pane.capture().contains("or press Tab for the passcode"))
        try pane.stroke(Self.path)
        try pane.tap(Self.sun)
        try pane.tap(Self.corner)
        try pane.waitFor("3 parts")
        try pane.key("Enter")
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("authenticated \(user)"))
        #expect(result.terminalRestored)
        #expect(try fixture.failures(user) == 0)
    }

    @Test func wrongGestureIsRefusedAndCounted() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try enrolledStore(user)
        let pane = try login(fixture, user)
        try pane.waitFor("Tab/type: passcode")
        // The stroke and the sun right, the last tap eight cells (44 px, 11 % of the picture)
        // to the left: one part misplaced on its own is what the place score refuses.
        try pane.stroke(Self.path)
        try pane.tap(Self.sun)
        try pane.tap((Self.corner.0 - 8, Self.corner.1))
        try pane.waitFor("3 parts")
        try pane.key("Enter")
        let result = try pane.finished()
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.errors.contains("Puff: wrong gesture."))
        #expect(result.terminalRestored)
        #expect(try fixture.failures(user) == 1)
    }

    /// After `puff-enroll lock` only the passcode is accepted: the pad shows the module's
    /// reason and a keypad, and the digits clicked on it log in.
    @Test func passcodeRequiredFallsBackToTheKeypad() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try enrolledStore(user)
        #expect(try run(Artefacts.enroll, ["lock", "--user", user] + fixture.storeArguments).status == 0)
        let pane = try login(fixture, user)
        try pane.waitFor("Puff passcode [6 digits]")
        let screen = try pane.capture()
        try pane.saveCapture("pad-passcode-required")
        #expect(screen.contains("Puff: passcode required: an administrator"), "\(screen)")
        #expect(screen.contains("○ ○ ○ ○ ○ ○"))
        for digit in Self.passcode {
            try pane.tap(try keyCell(digit, in: pane))
        }
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("authenticated \(user)"))
        #expect(result.terminalRestored)
        #expect(try fixture.failures(user) == 0)
    }

    /// Tab leaves the picture for the keypad; a typed wrong passcode is refused with the
    /// module's message.
    @Test func tabChoosesThePasscode() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try enrolledStore(user)
        let pane = try login(fixture, user)
        try pane.waitFor("Tab/type: passcode")
        try pane.key("Tab")
        try pane.waitFor("○ ○ ○ ○ ○ ○")
        try pane.type("111333")
        let result = try pane.finished()
        #expect(result.status == 1)
        #expect(result.errors.contains("Puff: wrong passcode."))
        #expect(try fixture.failures(user) == 1)
    }

    /// Issue 32, item 4: a picture in the store that cannot be decoded (cut short after it was
    /// enrolled) is said to be that, not missing; the keypad takes the passcode.
    @Test func anUndecodableStoredPictureIsSaidToBeSo() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try enrolledStore(user)
        let stored = fixture.etc + "/pictures/" + user
        let bytes = try Data(contentsOf: URL(fileURLWithPath: stored))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: stored))
        let pane = try login(fixture, user)
        try pane.waitFor("could not be decoded")
        let screen = try pane.capture()
        #expect(screen.contains("The picture for \(user) in the Puff store could not be decoded"), "\(screen)")
        #expect(!screen.contains("No picture"), "\(screen)")
        try pane.type(Self.passcode)
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
    }

    /// A user with only a passcode gets the keypad directly (no picture to draw on).
    @Test func passcodeOnlyUserGetsTheKeypad() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user, Self.passcode).status == 0)
        let pane = try login(fixture, user)
        try pane.waitFor("○ ○ ○ ○ ○ ○")
        try pane.type(Self.passcode)
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
    }

    /// Run by root for another user the module is discreet (no keypad type in the prompt):
    /// the pad says there is no picture, takes a passcode of any type, and the right one logs in.
    @Test func aDiscreetPromptStillLogsIn() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user, Self.passcode).status == 0)
        let pane = try login(fixture, user, bySelf: false)
        try pane.waitFor("type the passcode")
        try pane.type(Self.passcode)
        try pane.key("Enter")
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("authenticated \(user)"))
    }

    /// `puff-enroll gesture` on a terminal runs the pad for both steps (define, confirm); the
    /// drawn gesture then logs in through libpam.
    @Test func enrollmentDrawsOnThePad() throws {
        let user = try TestUsers.ensure("puff-it-pad")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user, Self.passcode).status == 0)
        let pane = try TmuxPane([Artefacts.enroll, "gesture", "--user", user, "--picture", Artefacts.testPicture]
                                + fixture.storeArguments, stdoutOnTerminal: true)
        for step in ["define", "confirm"] {
            try pane.waitFor("puff-enroll: Gesture (\(step)) on the picture")
            try pane.waitFor("0 parts")
            try pane.stroke(Self.path)
            try pane.tap(Self.sun)
            try pane.tap(Self.corner)
            try pane.waitFor("3 parts")
            try pane.key("Enter")
        }
        let result = try pane.finished()
        #expect(result.status == 0, "\(result.errors)")
        #expect(try pane.capture().contains("Gesture for \(user) saved"))
        #expect(result.terminalRestored)
        let login = try fixture.authenticate(user, replies: [Self.genuine])
        #expect(login.status == PAMCode.success, "\(login.output)")
    }

    /// The centre cell of a keypad key, found on the screen (`│  5  │`).
    func keyCell(_ digit: Character, in pane: TmuxPane) throws -> (Int, Int) {
        for (row, line) in try pane.screen().enumerated() {
            let text = String(line)
            guard let range = text.range(of: "│  \(digit)  │") else { continue }
            return (text.distance(from: text.startIndex, to: range.lowerBound) + 3, row)
        }
        throw PadTestError("no key \(digit) on screen")
    }
}
