import Foundation
import CPictureDecoder
import PuffClientPicture
import PuffPlatform
import Testing

/// The kit's one picture decoder: stb_image only in a confined child (this test binary links
/// the kit, so `/proc/self/exe --puff-decode-picture` is its decoder too), and its answer
/// checked as untrusted data.
@Suite struct UserPictureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/picture-400x300.png").path

    /// A private scratch directory, removed afterwards.
    final class Scratch {
        let path: String
        init() throws {
            path = NSTemporaryDirectory() + "puff-client-\(getpid())-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        }
        func file(_ name: String, _ bytes: [UInt8], mode: Int = 0o644) throws -> String {
            let file = path + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
            return file
        }
        /// An executable script written by a separate shell: a file this process held open
        /// for writing could leak into a child another test forks at that moment, and
        /// executing it would then fail with ETXTBSY.
        func script(_ name: String, _ text: String) throws -> String {
            let file = path + "/" + name
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"", "sh", file, text]
            try writer.run()
            writer.waitUntilExit()
            guard writer.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
            return file
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A PNG signature and an IHDR chunk claiming `width` × `height` (stb_image reads the size
    /// from it before anything else), then garbage.
    static func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
        func be(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + Array("IHDR".utf8) + be(width) + be(height)
            + [8, 6, 0, 0, 0] + [0, 0, 0, 0] + [UInt8](repeating: 0x41, count: 64)
    }

    /// This test binary (it links the kit, so it is a decoder too).
    static func ownExecutable() throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    @Test func thePathIsTheStoresPicturesDirectory() {
        #expect(UserPicture.path(directory: "/etc/puff", user: "lena") == "/etc/puff/pictures/lena")
    }

    @Test func theDecodersInputLimitIsTheStoresPictureLimit() {
        #expect(Int(PUFF_DECODER_MAX_INPUT) == PictureFile.maximumSize)
    }

    @Test func aRealPictureIsDecodedInTheChild() throws {
        let picture = try UserPicture(path: Self.fixture)
        #expect(picture.width == 400 && picture.height == 300)
        let (count, first) = picture.withRGBA { ($0.count, Array($0.prefix(4))) }
        #expect(count == 400 * 300 * 4)
        // The fixture's top-left pixel, as stb_image decodes it.
        #expect(first == [0x78, 0xAA, 0xEB, 0xFF])
    }

    @Test func aPictureClaimingTooManyPixelsIsRefusedAndTheCallerGoesOn() throws {
        let scratch = try Scratch()
        for (width, height) in [(100_000, 100_000), (100_001, 1), (8193, 8193)] as [(UInt32, UInt32)] {
            let path = try scratch.file("huge", Self.pngHeader(width: width, height: height))
            #expect(throws: UserPicture.LoadError.self) { try UserPicture(path: path) }
        }
        // A truncated picture of an acceptable size: stb_image fails in the child.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.fixture)))
        let truncated = try scratch.file("truncated", Array(bytes.prefix(bytes.count / 3)))
        #expect(throws: UserPicture.LoadError.self) { try UserPicture(path: truncated) }
        // The caller survived all of it and still decodes.
        #expect(try UserPicture(path: Self.fixture).width == 400)
    }

    @Test func otherFilesAreRefusedBeforeAnyDecoderRuns() throws {
        let scratch = try Scratch()
        let text = try scratch.file("text", Array("not a picture".utf8))
        #expect(throws: UserPicture.LoadError.self) { try UserPicture(path: text) }
        let large = try scratch.file("large", [0x89, 0x50, 0x4E, 0x47] + [UInt8](repeating: 0, count: 32 << 20))
        #expect(throws: UserPicture.LoadError.self) { try UserPicture(path: large) }
        let link = scratch.path + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Self.fixture)
        #expect(throws: UserPicture.LoadError.self) { try UserPicture(path: link) }
    }

    /// A false decoder (a shell script) that answers what `answer` prints and exits as it says.
    func answer(_ script: String) throws -> Result<(Int, Int), UserPicture.LoadError> {
        let scratch = try Scratch()
        let decoder = try scratch.script("decoder", "#!/bin/sh\ncat >/dev/null\n\(script)\n")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.fixture)))
        do {
            let picture = try UserPicture(bytes: bytes, path: "fixture", decoder: decoder)
            return .success((picture.width, picture.height))
        } catch {
            return .failure(error)
        }
    }

    @Test func anHonestAnswerIsTakenSoTheRefusalsBelowAreAboutTheLies() throws {
        // 1 × 1, four bytes, exit 0.
        let result = try answer(#"printf '\001\000\000\000\001\000\000\000\377\000\000\377'"#)
        #expect(try result.get() == (1, 1))
    }

    @Test func aDecoderThatLiesAboutTheSizeIsRefused() throws {
        // 16 × 16 promised, 100 bytes sent.
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\020\000\000\000\020\000\000\000'; head -c 100 /dev/zero"#).get()
        }
        // 1 × 1 promised, eight bytes sent.
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\001\000\000\000\001\000\000\000'; head -c 8 /dev/zero"#).get()
        }
        // A width over the limit (200000 × 1).
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\100\015\003\000\001\000\000\000'; head -c 800000 /dev/zero"#).get()
        }
        // A size whose byte count overflows a naive multiplication (0xFFFFFFFF × 0xFFFFFFFF).
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\377\377\377\377\377\377\377\377'"#).get()
        }
        // Half a header.
        #expect(throws: UserPicture.LoadError.self) { try answer(#"printf '\001\000'"#).get() }
    }

    @Test func aDecoderThatFailsOrCrashesIsRefused() throws {
        // A right answer, then a failing exit status.
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\001\000\000\000\001\000\000\000\377\000\000\377'; exit 1"#).get()
        }
        // Killed by a signal after a right answer.
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\001\000\000\000\001\000\000\000\377\000\000\377'; kill -SEGV $$"#).get()
        }
        // An answer that never ends: refused when the promised bytes are followed by more, and
        // the child is killed rather than waited for.
        #expect(throws: UserPicture.LoadError.self) {
            try answer(#"printf '\001\000\000\000\001\000\000\000'; cat /dev/zero"#).get()
        }
    }

    /// The real decoder child, seen from outside: as root it runs as nobody with capped
    /// memory, CPU time and core size and only descriptors 0-2, and it installs its seccomp
    /// filter before decoding (strace sees the prctl succeed).
    @Test func theDecoderChildIsConfined() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.ownExecutable())
        process.arguments = ["--puff-decode-picture"]
        process.environment = [:]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
        // It waits for its input: look at it meanwhile, once it has set itself up (the limits
        // come after the descriptors are closed, the change of user after the limits).
        let proc = "/proc/\(process.processIdentifier)"
        var status = "", limits = ""
        func ready() -> Bool {
            limits.split(separator: "\n").contains { $0.hasPrefix("Max address space") && $0.contains("671088640") }
                && (getuid() != 0 || status.contains("Uid:\t65534"))
        }
        for _ in 0..<250 where !ready() {
            usleep(20_000)
            limits = (try? String(contentsOfFile: proc + "/limits", encoding: .utf8)) ?? ""
            status = (try? String(contentsOfFile: proc + "/status", encoding: .utf8)) ?? ""
        }
        #expect(ready(), "the decoder child never capped its memory\(getuid() == 0 ? " or became nobody" : "")")
        if getuid() == 0 {
            #expect(status.contains("Uid:\t65534\t65534\t65534\t65534"))
            #expect(status.contains("Gid:\t65534\t65534\t65534\t65534"))
            #expect(status.split(separator: "\n").contains { $0.hasPrefix("Groups:") && $0.dropFirst(7).allSatisfy(\.isWhitespace) })
        }
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max cpu time") && $0.contains(" 20 ") })
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max core file size") && $0.contains(" 0 ") })
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: proc + "/fd").sorted()
        #expect(descriptors == ["0", "1", "2"])
    }

    @Test func theDecoderChildInstallsItsSeccompFilterBeforeDecoding() throws {
        let strace = "/usr/bin/strace"
        try #require(FileManager.default.isExecutableFile(atPath: strace), "strace is in DEBIAN_DEPS")
        let scratch = try Scratch()
        let trace = scratch.path + "/trace"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strace)
        process.arguments = ["-qq", "-e", "trace=prctl,seccomp,openat", "-o", trace,
                             try Self.ownExecutable(), "--puff-decode-picture"]
        process.environment = [:]
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: Self.fixture))
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let answer = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(answer.count == 8 + 400 * 300 * 4)
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        let filter = lines.firstIndex { $0.contains("PR_SET_SECCOMP") && $0.hasSuffix("= 0") }
        #expect(filter != nil)
        // Nothing is opened once the filter is in place.
        if let filter { #expect(!lines[(filter + 1)...].contains { $0.hasPrefix("openat") }) }
    }
}
