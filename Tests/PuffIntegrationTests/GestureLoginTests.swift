import Foundation
import Testing

/// Picture gestures through real libpam: enrolled with `puff-enroll gesture`, answered as a
/// serialized gesture in the conversation.
@Suite(.serialized)
struct GestureLoginTests {
    static let picture = Artefacts.repository.appendingPathComponent("Tests/Fixtures/picture-400x300.png").path

    /// A small deterministic PRNG (SplitMix64) for jitter.
    struct Jitter {
        var state: UInt64
        mutating func next(_ amplitude: Double) -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return (Double(z >> 11) / Double(1 << 53) * 2 - 1) * amplitude
        }
    }

    typealias Part = (kind: Character, points: [(Double, Double)])

    /// The enrolled gesture on the 400x300 picture: a stroke up the hill, a loop around the
    /// sun (drawn counter-clockwise), a tap on the sun.
    static var genuine: [Part] {
        let stroke = stride(from: 0.0, through: 1.0, by: 0.02).map { t in (40 + 180 * t, 260 - 170 * t) }
        let loop = stride(from: 0.0, through: 2 * Double.pi, by: Double.pi / 24).map { a in
            (300 + 55 * cos(a), 80 - 55 * sin(a))
        }
        return [("p", stroke), ("p", loop), ("t", [(300, 80)])]
    }

    static func wire(_ parts: [Part], width: Int = 400, height: Int = 300,
                     transform: (Double, Double) -> (Double, Double) = { ($0, $1) }) -> String {
        func number(_ value: Double) -> String {
            let clamped = (value * 10).rounded() / 10
            return clamped == clamped.rounded() ? String(Int(clamped)) : String(clamped)
        }
        let body = parts.map { part in
            String(part.kind) + " " + part.points.map { point in
                let (x, y) = transform(point.0, point.1)
                return number(min(max(x, 0), Double(width))) + "," + number(min(max(y, 0), Double(height)))
            }.joined(separator: " ")
        }
        return "puff-gesture:1:\(width)x\(height):" + body.joined(separator: ";")
    }

    func enrolled(_ fixture: Fixture, _ user: String, picture: String = GestureLoginTests.picture,
                  gesture: String = GestureLoginTests.wire(GestureLoginTests.genuine)) throws {
        let result = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", picture, "--stdin"]
                             + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(result.status == 0, "\(result.errors)")
    }

    @Test func genuineGestureWithJitterIsAccepted() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=100")
        try enrolled(fixture, user)
        for seed in UInt64(1)...5 {
            var jitter = Jitter(state: seed)
            let attempt = Self.wire(Self.genuine) { x, y in (x + jitter.next(3), y + jitter.next(3)) }
            let result = try fixture.authenticate(user, replies: [attempt])
            #expect(result.status == PAMCode.success, "seed \(seed): \(result.output)")
        }
        #expect(try fixture.failures(user) == 0)
    }

    @Test func wrongGesturesAreRefusedAndCounted() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=100")
        try enrolled(fixture, user)
        // Version 2 forgives a common shift of a few percent (a redraw that moved as a whole)
        // but not 40 px (10 % of the picture), nor one part moved 30 px on its own.
        let shifted = Self.wire(Self.genuine) { x, y in (x + 40, y) }
        var tapMoved = Self.genuine
        tapMoved[2].points = [(330, 80)]
        let onePartMoved = Self.wire(tapMoved)
        // Backwards: every part reversed.
        let backwards = Self.wire(Self.genuine.map { ($0.kind, Array($0.points.reversed())) })
        // A scribble over the whole picture in each path part (hits everything, far too many points).
        let rows = stride(from: 0.0, through: 300.0, by: 8.0).flatMap { y in [(0.0, y), (400.0, y)] }
        let scribble = Self.wire([("p", rows), ("p", rows), ("t", [(300, 80)])])
        // Parts out of order, a missing part, and a gesture for another picture size.
        let reordered = Self.wire([Self.genuine[1], Self.genuine[0], Self.genuine[2]])
        let missing = Self.wire(Array(Self.genuine.prefix(2)))
        let otherSize = Self.wire(Self.genuine, width: 800, height: 600)
        let malformed = "puff-gesture:1:400x300:p 1,1;;t 2,2"
        let outside = "puff-gesture:1:400x300:t 401,2"
        let attempts = [shifted, onePartMoved, backwards, scribble, reordered, missing, otherSize, malformed, outside]
        for (index, attempt) in attempts.enumerated() {
            let result = try fixture.authenticate(user, replies: [attempt])
            #expect(result.status == PAMCode.authError, "attempt \(index)")
            #expect(result.lines.contains(Discreet.gestureRefused), "attempt \(index): \(result.lines)")
        }
        #expect(try fixture.failures(user) == attempts.count)
        // The genuine gesture still works and clears the counter.
        #expect(try fixture.authenticate(user, replies: [Self.wire(Self.genuine)]).status == PAMCode.success)
        #expect(try fixture.failures(user) == 0)
    }

    @Test func anotherUsersGestureAndPictureDoNotWork() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let bob = try TestUsers.ensure("puff-it-bob")
        let fixture = try Fixture(moduleArguments: "deny=100")
        try enrolled(fixture, alice)
        // Bob's picture is 600x450: the test picture scaled (enrollment decodes it whole).
        let bobPicture = fixture.root + "/bob.png"
        let scaled = try run("/usr/bin/convert", [Self.picture, "-resize", "600x450!", bobPicture])
        #expect(scaled.status == 0, "convert: \(scaled.errors)")
        chmod(bobPicture, 0o644)
        let bobGesture = Self.wire(Self.genuine.map { ($0.kind, $0.points.map { ($0.0 * 1.5, $0.1 * 1.5) }) },
                                   width: 600, height: 450)
        try enrolled(fixture, bob, picture: bobPicture, gesture: bobGesture)
        #expect(try fixture.authenticate(bob, replies: [bobGesture]).status == PAMCode.success)
        #expect(try fixture.authenticate(alice, replies: [bobGesture]).status == PAMCode.authError)
        #expect(try fixture.authenticate(bob, replies: [Self.wire(Self.genuine)]).status == PAMCode.authError)
        // A gesture for a user who has only a passcode is a counted failure, not an error.
        let carol = try TestUsers.ensure("puff-it-carol")
        try fixture.enroll(carol, "604917")
        #expect(try fixture.authenticate(carol, replies: [Self.wire(Self.genuine)]).status == PAMCode.authError)
        #expect(try fixture.failures(carol) == 1)
    }

    @Test func sealedTemplateFailsClosedWhenTamperedCopiedOrKeyChanged() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let bob = try TestUsers.ensure("puff-it-bob")
        let fixture = try Fixture(moduleArguments: "deny=100")
        try enrolled(fixture, alice)
        try enrolled(fixture, bob)
        let genuine = Self.wire(Self.genuine)
        let aliceRecord = fixture.etc + "/users/" + alice
        let bobRecord = fixture.etc + "/users/" + bob
        let original = try String(contentsOfFile: aliceRecord, encoding: .utf8)
        #expect(!original.contains("300,80"))  // the template is not stored in the clear

        // One byte of the sealed template changed.
        var lines = original.split(separator: "\n").map(String.init)
        let index = try #require(lines.firstIndex { $0.hasPrefix("gesture-template ") })
        var bytes = Array(lines[index].utf8)
        bytes[40] = bytes[40] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        lines[index] = String(decoding: bytes, as: UTF8.self)
        try fixture.write(aliceRecord, lines.joined(separator: "\n") + "\n", mode: 0o600)
        #expect(try fixture.authenticate(alice, replies: [genuine]).status == PAMCode.authInfoUnavailable)

        // Alice's sealed template copied into Bob's record.
        try fixture.write(aliceRecord, original, mode: 0o600)
        let bobLines = try String(contentsOfFile: bobRecord, encoding: .utf8).split(separator: "\n").map(String.init)
        let aliceTemplate = try #require(original.split(separator: "\n").first { $0.hasPrefix("gesture-template ") })
        let copied = bobLines.map { $0.hasPrefix("gesture-template ") ? String(aliceTemplate) : $0 }
        #expect(copied != bobLines)
        try fixture.write(bobRecord, copied.joined(separator: "\n") + "\n", mode: 0o600)
        #expect(try fixture.authenticate(bob, replies: [genuine]).status == PAMCode.authInfoUnavailable)
        #expect(try fixture.authenticate(alice, replies: [genuine]).status == PAMCode.success)

        // A truncated record.
        try fixture.write(aliceRecord, String(original.prefix(original.count / 2)), mode: 0o600)
        #expect(try fixture.authenticate(alice, replies: [genuine]).status == PAMCode.authInfoUnavailable)

        // Another host key.
        try fixture.write(aliceRecord, original, mode: 0o600)
        try Data((0..<32).map { UInt8($0) }).write(to: URL(fileURLWithPath: fixture.etc + "/host.key"))
        #expect(try fixture.authenticate(alice, replies: [genuine]).status == PAMCode.authInfoUnavailable)
        // None of these failures counted against the user.
        #expect(try fixture.failures(alice) == 0)
    }

    @Test func enrollmentRefusesAMismatchedConfirmationAndDegenerateGestures() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture()
        let genuine = Self.wire(Self.genuine)
        let shifted = Self.wire(Self.genuine) { x, y in (x + 30, y) }
        // Define, confirm, once more, one more: no three of them agree.
        let mismatch = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", Self.picture, "--stdin"]
                               + fixture.storeArguments, input: [genuine, shifted, genuine, shifted].joined(separator: "\n") + "\n")
        #expect(mismatch.status == 3)
        #expect(mismatch.errors.contains("the drawings do not match each other (whole gesture: shift)"), "\(mismatch.errors)")
        #expect(mismatch.output.contains("The drawings differ a lot; draw the gesture one more time."), "\(mismatch.output)")
        let tap = "puff-gesture:1:400x300:t 10,10"
        let tooSimple = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", Self.picture, "--stdin"]
                                + fixture.storeArguments, input: tap + "\n" + tap + "\n")
        #expect(tooSimple.status == 3)
        let wrongSize = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", Self.picture, "--stdin"]
                                + fixture.storeArguments, input: Self.wire(Self.genuine, width: 800, height: 600) + "\n")
        #expect(wrongSize.status == 3)
        #expect(wrongSize.errors.contains("but the picture is 400x300"))
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/users/" + user))
    }

    @Test func pictureIsReadableByOthersButRecordsAreNot() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture()
        try enrolled(fixture, user)
        let attributes = { (path: String) throws -> Int in
            try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        #expect(try attributes(fixture.etc + "/pictures") == 0o711)
        #expect(try attributes(fixture.etc + "/pictures/" + user) == 0o644)
        #expect(try attributes(fixture.etc + "/users") == 0o700)
        #expect(try attributes(fixture.etc + "/users/" + user) == 0o600)
        let stored = try Data(contentsOf: URL(fileURLWithPath: fixture.etc + "/pictures/" + user))
        #expect(stored == (try Data(contentsOf: URL(fileURLWithPath: Self.picture))))
        // The debug view: an SVG (0600) with the picture embedded and one numbered label per part.
        let svgPath = fixture.root + "/view.svg"
        let shown = try run(Artefacts.enroll, ["show-gesture", "--user", user, "--output", svgPath] + fixture.storeArguments)
        #expect(shown.status == 0, "\(shown.errors)")
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        #expect(svg.contains("data:image/png;base64,"))
        #expect(try attributes(svgPath) == 0o600)
    }

    @Test func jpegPicturesAndConfiguredToleranceWork() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        // A wider tolerance from puff.conf: 10 % of 400 px = 40 px, so a 15 px shift passes.
        let fixture = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\ngesture_tolerance = 10\n")
        try enrolled(fixture, user)
        let shifted = Self.wire(Self.genuine) { x, y in (x + 15, y) }
        #expect(try fixture.authenticate(user, replies: [shifted]).status == PAMCode.success)
        // A JPEG's size is read from its SOF header (here 640x480).
        let jpeg = fixture.root + "/picture.jpg"
        let header: [UInt8] = [0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80, 0x03,
                               0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xd9]
        try Data(header).write(to: URL(fileURLWithPath: jpeg))
        let gesture = Self.wire(Self.genuine, width: 640, height: 480)
        try enrolled(fixture, user, picture: jpeg, gesture: gesture)
        #expect(try fixture.status(user)["gesture"] as? [String: Int] == ["picture_width": 640, "picture_height": 480])
        #expect(try fixture.authenticate(user, replies: [gesture]).status == PAMCode.success)
        // Not a picture at all.
        let text = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", fixture.conf, "--stdin"]
                           + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(text.status == 3)
        #expect(text.errors.contains("is not a PNG or JPEG picture"))
    }

    /// The 8-byte signature, an IHDR chunk and IEND: enough for a size read.
    static func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
        func be(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
        let ihdr = be(width) + be(height) + [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + be(13) + Array("IHDR".utf8) + ihdr + [0, 0, 0, 0]
            + be(0) + Array("IEND".utf8) + [0, 0, 0, 0]
    }
}
