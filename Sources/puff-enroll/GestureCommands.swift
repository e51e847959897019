import ArgumentParser
import CStb
import Glibc
import PuffCore
import PuffPlatform

/// `puff-enroll gesture`: enroll a picture gesture (define, then confirm).
struct GestureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gesture",
        abstract: "Enroll a picture gesture: draw it once to define it, once more to confirm it.",
        discussion: """
        Each gesture is one line in Puff's wire format (docs/gesture-format.md), read from the \
        terminal without echo or, with --stdin, as lines of standard input. The confirmation \
        must verify against the first drawing, exactly as a login would; when the two differ a \
        lot a third drawing is asked for (a third line with --stdin). How far each part of the \
        confirmations lies from the definition is stored as that part's spread. A single tap, a \
        short single stroke and parts all in one spot are refused. The picture (PNG or JPEG) is \
        copied into the store; coordinates are its pixels.
        """
    )

    @OptionGroup var store: StoreOptions

    @Option(help: "The user to enroll (default: the calling user).")
    var user: String?

    @Option(help: "The picture the gesture is drawn on (PNG or JPEG).")
    var picture: String

    @Flag(help: "Read the two gestures as lines from standard input.")
    var stdin = false

    func run() throws {
        try Command.run {
            if try Command.isSelfService(user: user, store: store) { return try runForSelf() }
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            let image = try Picture.load(picture)
            let settings = try options.gestureRecognizerSettings()
            let (template, _) = try drawings(width: image.width, height: image.height, settings: settings, third: true)
            try Authenticator(options: options).storeGesture(template, picture: image.bytes, for: account)
            Command.audit("gesture of user \(account.name) set by uid \(getuidValue())")
            Terminal.say("Gesture for \(account.name) saved (\(template.parts.count) parts, picture \(image.width)x\(image.height)).")
            if try RecordStore(directory: options.recordDirectory).load(account)?.passcode == nil {
                Terminal.warn("puff-enroll: note: \(account.name) has no passcode; a passcode fallback is recommended "
                              + "(puff-enroll passcode). Without one the gesture stays usable after restarts and "
                              + "failures (under the lockout), and 'puff-enroll lock' blocks it until a reset.")
            }
        }
    }

    /// An ordinary user on their own account: the current Puff passcode (or, without one, the
    /// system password) first, then the gesture twice; the helper checks and stores it.
    private func runForSelf() throws {
        let account = try Command.account(nil)
        let service = SelfService(helper: store.helper)
        let report = try service.query()
        let proof = try service.readProof(report, account: account, fromStdin: stdin)
        let image = try Picture.load(picture)
        let settings = try PuffOptions().gestureRecognizerSettings()
        // Checked here for a clear message; the helper checks again with the store's settings.
        // The helper takes two drawings, so no third is asked for here.
        let (_, drawn) = try drawings(width: image.width, height: image.height, settings: settings, third: false)
        let defineWire = GestureWire.serialize(drawn[0])
        let confirmWire = GestureWire.serialize(drawn[1])
        try proof.withBytes { proofBytes in
            try defineWire.withUnsafeBytes { defineBytes in
                try confirmWire.withUnsafeBytes { confirmBytes in
                    try image.bytes.withUnsafeBytes { pictureBytes in
                        try service.enroll("enroll-gesture", frames: [proofBytes, defineBytes, confirmBytes, pictureBytes])
                    }
                }
            }
        }
        Terminal.say("Gesture for \(account.name) saved (picture \(image.width)x\(image.height)).")
    }

    private func readGesture(_ prompt: String) throws -> Gesture {
        // On a terminal the gesture is drawn with puff-pad; typed as text when it cannot run.
        var drawn: Terminal.Read? = nil
        if PadRunner.applies(fromStdin: stdin) {
            drawn = try PadRunner.draw(picture: picture, title: "puff-enroll: " + prompt.dropLast(2) + " on the picture")
        }
        let read = try drawn.take() ?? Terminal.readSecret(prompt: prompt, fromStdin: stdin)
        guard case .secret(let line) = read else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        do {
            return try line.withBytes { bytes throws(GestureFormatError) in try GestureWire.parse(bytes) }
        } catch {
            throw Failure(ExitCodes.refused, "not a valid gesture: \(error)")
        }
    }

    /// Reads the definition and the confirmation (and, when `third` and they differ a lot, a
    /// third drawing) and builds the template from them.
    private func drawings(width: Int, height: Int, settings: GestureRecognizerSettings,
                          third: Bool) throws -> (GestureTemplate, [Gesture]) {
        let first = try readGesture("Gesture (define): ")
        guard first.width == width, first.height == height else {
            throw Failure(ExitCodes.refused, "the gesture is for a \(first.width)x\(first.height) picture, but the picture is \(width)x\(height)")
        }
        var drawn = [first]
        // Strength first, so a weak gesture is refused before it is drawn again.
        _ = try build(drawn, settings: settings)
        drawn.append(try readGesture("Gesture (confirm): "))
        if third, GestureEnroller.differsALot(first, drawn[1], settings: settings) {
            Terminal.say("The two drawings differ a lot; draw the gesture once more.")
            drawn.append(try readGesture("Gesture (once more): "))
        }
        return (try build(drawn, settings: settings), drawn)
    }

    private func build(_ drawn: [Gesture], settings: GestureRecognizerSettings) throws -> GestureTemplate {
        do {
            return try GestureEnroller.build(drawings: drawn, settings: settings)
        } catch .confirmationMismatch(let detail) {
            let why = detail.map { " (\($0))" } ?? ""
            throw Failure(ExitCodes.refused, "the confirmation does not match the first gesture\(why); nothing was changed")
        } catch {
            throw Failure(ExitCodes.refused, "gesture refused: \(error)")
        }
    }
}

/// `puff-enroll show-gesture`: the debug view of an enrolled gesture.
struct ShowGesture: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show-gesture",
        abstract: "Write an SVG of a user's picture with the gesture's raster points, tolerance squares, part numbers and directions (root only).",
        discussion: "The SVG reveals the gesture: it is written with mode 0600 and must be treated like the secret it is."
    )

    @OptionGroup var store: StoreOptions

    @Option(help: "The user whose gesture to show.")
    var user: String

    @Option(help: "Where to write the SVG.")
    var output: String

    func run() throws {
        try Command.run {
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            guard let (template, picture) = try Authenticator(options: options).openGesture(of: account) else {
                throw Failure(ExitCodes.unknown, "\(account.name) has no gesture enrolled")
            }
            let href = picture.map { "data:\(Picture.mediaType(of: $0));base64," + Base64.encode($0) }
            let svg = Array(GestureSVG.render(template: template, pictureHref: href).utf8)
            let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure(ExitCodes.storeFailure, "cannot write \(output)") }
            defer { close(fd) }
            let wrote = svg.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard wrote == svg.count else { throw Failure(ExitCodes.storeFailure, "cannot write \(output)") }
            Terminal.say("Wrote \(output).")
        }
    }
}

/// A picture file: its bytes and its size, read with stb_image.
struct Picture {
    let bytes: [UInt8]
    let width: Int
    let height: Int

    /// Reads `path` (at most the store's picture limit) and decodes its size; PNG and JPEG only.
    static func load(_ path: String) throws -> Picture {
        let bytes: [UInt8]
        do {
            let file = try FileDescriptor.open(path: path, O_RDONLY | O_NOCTTY | O_NONBLOCK)
            guard try file.status().st_mode & S_IFMT == S_IFREG else {
                throw Failure(ExitCodes.refused, "\(path) is not a regular file")
            }
            guard let read = try file.readAll(limit: RecordStore.maximumPictureSize) else {
                throw Failure(ExitCodes.refused, "\(path) is larger than \(RecordStore.maximumPictureSize >> 20) MiB")
            }
            bytes = read
        } catch let error as Errno {
            throw Failure(ExitCodes.storeFailure, "cannot read \(path): \(error)")
        }
        guard mediaType(of: bytes) != "application/octet-stream" else {
            throw Failure(ExitCodes.refused, "\(path) is not a PNG or JPEG picture")
        }
        guard let (width, height) = size(of: bytes) else {
            throw Failure(ExitCodes.refused, "\(path): cannot read the picture's size")
        }
        guard GestureLimits.maximumPictureSide >= max(width, height) else {
            throw Failure(ExitCodes.refused, "\(path): the picture is larger than \(GestureLimits.maximumPictureSide) pixels on a side")
        }
        return Picture(bytes: bytes, width: width, height: height)
    }

    /// Width and height from the image header (`stbi_info_from_memory`), without decoding pixels.
    static func size(of bytes: [UInt8]) -> (Int, Int)? {
        var width: Int32 = 0, height: Int32 = 0, components: Int32 = 0
        guard let length = Int32(exactly: bytes.count) else { return nil }
        let ok = bytes.withUnsafeBufferPointer { buffer in
            stbi_info_from_memory(buffer.baseAddress, length, &width, &height, &components)
        }
        guard ok == 1, width > 0, height > 0 else { return nil }
        return (Int(width), Int(height))
    }

    /// The media type from the file's signature.
    static func mediaType(of bytes: [UInt8]) -> String {
        if bytes.starts(with: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) { return "image/png" }
        if bytes.starts(with: [0xff, 0xd8, 0xff]) { return "image/jpeg" }
        return "application/octet-stream"
    }
}
