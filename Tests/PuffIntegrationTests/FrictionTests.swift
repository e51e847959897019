import Foundation
import Testing

/// Issue 32: what an administrator and a user meet in a day of use, through the real binaries:
/// commands for accounts without a record write nothing and say so, a picture that cannot be
/// shown is refused at enrollment, and every bad input gets its answer in words.
@Suite(.serialized)
struct FrictionTests {
    static let passcode = "604917"

    /// Every path under `directory` with its size and mode, sorted.
    static func tree(_ directory: String) -> [String] {
        let paths = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String]) ?? []
        return paths.sorted().map { path in
            var info = stat()
            lstat(directory + "/" + path, &info)
            return "\(path) \(info.st_size) \(String(info.st_mode, radix: 8))"
        }
    }

    // MARK: Item 5: reset, lock and remove of an account without a record

    @Test func resetLockAndRemoveOfAnAccountWithoutARecordWriteNothing() throws {
        let enrolled = try TestUsers.ensure("puff-it-alice")
        let withoutRecord = try TestUsers.ensure("puff-it-norecord")
        let fixture = try Fixture()
        #expect(try fixture.enroll(enrolled, Self.passcode).status == 0)
        let before = Self.tree(fixture.root)

        let reset = try run(Artefacts.enroll, ["reset", "--user", withoutRecord] + fixture.storeArguments)
        #expect(reset.status == 4, "\(reset.output)\(reset.errors)")
        #expect(reset.errors.contains("\(withoutRecord) has nothing enrolled in Puff; nothing to reset"), "\(reset.errors)")
        #expect(!reset.output.contains("reset ("), "\(reset.output)")
        let lock = try run(Artefacts.enroll, ["lock", "--user", withoutRecord] + fixture.storeArguments)
        #expect(lock.status == 4, "\(lock.output)\(lock.errors)")
        #expect(lock.errors.contains("\(withoutRecord) has nothing enrolled in Puff; nothing to lock"), "\(lock.errors)")
        #expect(!lock.output.contains("must use the passcode"), "\(lock.output)")
        for name in [withoutRecord, "puff-it-typo"] {
            let remove = try run(Artefacts.enroll, ["remove", "--user", name] + fixture.storeArguments)
            #expect(remove.status == 4, "\(remove.output)\(remove.errors)")
            #expect(remove.errors.contains("\(name) has nothing enrolled"), "\(remove.errors)")
        }
        #expect(Self.tree(fixture.root) == before)

        // Removing an enrollment takes the counter's lock file with it, and a later attempt
        // (which makes a new one) still counts.
        #expect(try fixture.authenticate(enrolled, replies: ["111111"]).status == PAMCode.authError)
        #expect(FileManager.default.fileExists(atPath: fixture.state + "/.\(enrolled).lock"))
        let remove = try run(Artefacts.enroll, ["remove", "--user", enrolled] + fixture.storeArguments)
        #expect(remove.status == 0, "\(remove.errors)")
        #expect(!FileManager.default.fileExists(atPath: fixture.state + "/.\(enrolled).lock"))
        #expect(!FileManager.default.fileExists(atPath: fixture.state + "/\(enrolled)"))
        #expect(try fixture.enroll(enrolled, Self.passcode).status == 0)
        #expect(try fixture.authenticate(enrolled, replies: ["111111"]).status == PAMCode.authError)
        #expect(try fixture.failures(enrolled) == 1)
        #expect(try fixture.authenticate(enrolled, replies: [Self.passcode]).status == PAMCode.success)
    }

    /// Removals racing attempts on the same user: the lock file is unlinked under its lock, and
    /// an attempt that waited on the old file starts again on the new one, so no counter is
    /// written back after a removal took it (every attempt ends in a PAM code; the store ends
    /// either without the user or with a counter an attempt wrote after the last removal).
    @Test func removalsRacingAttemptsKeepTheCounterLockSound() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture()
        for _ in 0..<6 {
            #expect(try fixture.enroll(user, Self.passcode).status == 0)
            let group = DispatchGroup()
            let codes = FleetTests.Codes()
            let removal = ["remove", "--user", user] + fixture.storeArguments, confdir = fixture.pamDirectory
            for index in 0..<6 {
                group.enter()
                DispatchQueue.global().async {
                    defer { group.leave() }
                    if index == 3 {
                        _ = try? run(Artefacts.enroll, removal)
                    } else {
                        codes.append(FleetTests.login(confdir, user, "11111\(index)"))
                    }
                }
            }
            group.wait()
            #expect(codes.all.allSatisfy { $0 == PAMCode.authError || $0 == PAMCode.ignore }, "\(codes.all)")
            // The record is gone: no attempt wrote the counter back after the removal.
            #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/users/\(user)"))
            #expect(!FileManager.default.fileExists(atPath: fixture.state + "/\(user)"))
            _ = try? run(Artefacts.enroll, ["remove", "--user", user] + fixture.storeArguments)
            #expect(!FileManager.default.fileExists(atPath: fixture.state + "/.\(user).lock"))
            #expect(!FileManager.default.fileExists(atPath: fixture.state + "/\(user)"))
        }
    }

    // MARK: Item 4: a picture that cannot be shown is refused at enrollment

    /// A JPEG of the test picture (ImageMagick), and the same cut at 60 %: its header and
    /// size are intact, its picture data is not.
    static func jpegs(in directory: String) throws -> (whole: String, truncated: String) {
        let whole = directory + "/picture.jpg", truncated = directory + "/truncated.jpg"
        let made = try run("/usr/bin/convert", [Artefacts.testPicture, "-quality", "90", whole])
        #expect(made.status == 0, "convert: \(made.errors)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: truncated))
        chmod(whole, 0o644)
        chmod(truncated, 0o644)
        return (whole, truncated)
    }

    @Test func aTruncatedJPEGIsRefusedAtEnrollmentAndNothingIsWritten() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user, Self.passcode).status == 0)
        let pictures = try Self.jpegs(in: fixture.root)
        let gesture = PadLoginTests.genuine
        let before = Self.tree(fixture.etc) + Self.tree(fixture.state)
        let refused = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", pictures.truncated, "--stdin"]
                              + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(refused.status == 3, "\(refused.output)\(refused.errors)")
        #expect(refused.errors.contains("the picture could not be decoded"), "\(refused.errors)")
        #expect(Self.tree(fixture.etc) + Self.tree(fixture.state) == before)
        // The whole JPEG is enrolled.
        let enrolled = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", pictures.whole, "--stdin"]
                               + fixture.storeArguments, input: gesture + "\n" + gesture + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
    }

    // MARK: Item 8: words

    @Test func badInputIsAnsweredInWords() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 2\nunlock_time = 10m\n")
        #expect(try fixture.enroll(user, Self.passcode).status == 0)

        // A line that is not a gesture: what is wrong, not the error's case name.
        let notGesture = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", Artefacts.testPicture, "--stdin"]
                                 + fixture.storeArguments, input: "604917\n")
        #expect(notGesture.status == 3)
        #expect(notGesture.errors.contains("does not start with 'puff-gesture:'"), "\(notGesture.errors)")
        #expect(!notGesture.errors.contains("notAGesture"), "\(notGesture.errors)")

        // No terminal for a gesture names the gesture (setsid: no controlling terminal, no DISPLAY).
        let noTerminal = try run("/usr/bin/setsid", ["-w", Artefacts.enroll, "gesture", "--user", user, "--picture",
                                                     Artefacts.testPicture] + fixture.storeArguments,
                                 environment: ["DISPLAY": "", "TERM": "dumb"])
        #expect(noTerminal.errors.contains("no terminal to read the gesture from"), "\(noTerminal.errors)")

        // The end of standard input is said as such, not as a passcode of the wrong length.
        let ended = try run(Artefacts.enroll, ["passcode", "--user", user, "--stdin"] + fixture.storeArguments, input: "")
        #expect(ended.status == 3)
        #expect(ended.errors.contains("standard input ended before the new passcode was read"), "\(ended.errors)")
        #expect(!ended.errors.contains("characters long"), "\(ended.errors)")

        // A misspelt command is named, with the one meant.
        let misspelt = try run(Artefacts.enroll, ["resett", "--user", user] + fixture.storeArguments)
        #expect(misspelt.status == 64)
        #expect(misspelt.errors.contains("unknown command 'resett'; did you mean 'reset'?"), "\(misspelt.errors)")
        #expect(!misspelt.errors.contains("Unknown option"), "\(misspelt.errors)")

        // A system error in words, with its name kept for a search (a picture that is not there).
        let missing = try run(Artefacts.enroll, ["gesture", "--user", user, "--picture", fixture.root + "/missing.png", "--stdin"]
                              + fixture.storeArguments, input: "")
        #expect(missing.status == 1)
        #expect(missing.errors.contains("missing.png: no such file or directory (ENOENT)"), "\(missing.errors)")

        // While locked, status says that nothing is accepted, and for how long.
        for guess in ["111111", "222222"] {
            #expect(try fixture.authenticate(user, replies: [guess]).status == PAMCode.authError)
        }
        let status = try run(Artefacts.enroll, ["status", "--user", user] + fixture.storeArguments)
        let row = status.lines.first { $0.hasPrefix(user) } ?? ""
        #expect(row.contains("locked for") && row.contains("nothing for") && row.contains("(locked), then passcode"), "\(status.output)")
        #expect(!row.hasSuffix("  passcode"), "\(status.output)")

        // The helper says what it is when asked, and when run by hand with no operation.
        let help = try run(Artefacts.helper, ["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("not meant to be run") && help.output.contains("Usage: puff-check OPERATION"), "\(help.output)")
        let bare = try run(Artefacts.helper, [])
        #expect(bare.status == 2)
        #expect(bare.errors.contains("not meant to be run by hand"), "\(bare.errors)")
    }
}
