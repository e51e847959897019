import ArgumentParser
import Glibc
import PuffClient
import PuffClientPicture
import PuffCore
import PuffFleet
import PuffPlatform

/// `puff-enroll gesture`: enroll a picture gesture (define, then confirm).
struct GestureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gesture",
        abstract: "Enroll a picture gesture: draw it to define it, then to confirm it, then once more.",
        discussion: """
        On a desktop (DISPLAY set) each gesture is drawn in a window on the picture (puff-lock \
        --draw), and the template is then shown with a replay of the drawings (puff-lock --show) \
        and saved only when accepted; on a terminal it is drawn with puff-pad. Otherwise each \
        gesture is one line in Puff's wire format (/usr/share/doc/libpam-puff/gesture-format.md), read from the \
        terminal without echo or, with --stdin, as lines of standard input. The gesture is drawn \
        three times (a confirmation identical to the definition, as a script gives, completes \
        it); the template is the consensus of the drawings, and how much they differ sets how \
        much a login may differ, within fixed bounds. When the three do not agree, one more \
        drawing is asked for before the enrollment is refused. A gesture needs at \
        least three parts (taps, lines, circles); fewer, strokes under 6 % of the picture and \
        parts all in one spot are refused with the reason. The picture (PNG or JPEG) is \
        copied into the store; coordinates are its pixels.
        """
    )

    @OptionGroup var store: StoreOptions

    @Option(help: "The user to enroll (default: the calling user).")
    var user: String?

    @Option(help: "The picture the gesture is drawn on (PNG or JPEG).")
    var picture: String

    @Flag(help: "Read the drawings as lines from standard input (define, confirm, and once more unless the confirmation is the same line).")
    var stdin = false

    @Flag(name: .customLong("print-layout"), help: .hidden)
    var printLayout = false

    func run() throws {
        try Command.run {
            if try Command.isSelfService(user: user, store: store) { return try runForSelf() }
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            let image = try Picture.load(picture)
            let settings = try options.gestureRecognizerSettings()
            let (template, _) = try drawings(width: image.width, height: image.height, settings: settings, third: true)
            let enrolled = Command.store(options)
            try enrolled.storeGesture(template, picture: image.bytes, for: account)
            Command.audit("gesture of user \(account.name) set by uid \(getuidValue())")
            Terminal.say("Gesture for \(account.name) saved (\(template.parts.count) parts, picture \(image.width)x\(image.height)).")
            let stored = try enrolled.status(of: account).record
            if stored?.passcode == nil {
                Report.warn("puff-enroll: note: \(account.name) has no passcode; a passcode fallback is recommended "
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
        let state = try service.query()
        // The picture first: nothing is asked for one that cannot be enrolled.
        let image = try Picture.load(picture)
        let proof = try service.readProof(state, account: account, fromStdin: stdin)
        // A wrong proof is said now, not after the gesture was drawn twice.
        try service.precheck(type: nil, proof: proof)
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
                        try service.change(.enrollGesture, frames: [proofBytes, defineBytes, confirmBytes, pictureBytes])
                    }
                }
            }
        }
        Terminal.say("Gesture for \(account.name) saved (picture \(image.width)x\(image.height)).")
    }

    /// One drawing: in a window on a desktop (`puff-lock --draw`), with puff-pad on a
    /// terminal, typed as text when neither can run, or a line of stdin with `--stdin`.
    /// The flag tells whether it was drawn in a window.
    private func readGesture(_ prompt: String) throws -> (Gesture, Bool) {
        let title = "puff-enroll: " + prompt.dropLast(2) + " on the picture"
        var drawn: Terminal.Read? = nil
        var inWindow = false
        if WindowRunner.applies(fromStdin: stdin) {
            drawn = try WindowRunner.draw(picture: picture, title: title, printLayout: printLayout, shown: &inWindow)
        }
        if !inWindow && PadRunner.applies(fromStdin: stdin) {
            drawn = try PadRunner.draw(picture: picture, title: title)
        }
        let read = try drawn.take() ?? Terminal.readSecret(prompt: prompt, fromStdin: stdin, what: "gesture")
        guard case .secret(let line) = read else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        do {
            return (try line.withBytes { bytes throws(GestureFormatError) in try GestureWire.parse(bytes) }, inWindow)
        } catch {
            throw Failure(ExitCodes.refused, "not a valid gesture: \(error.reason)")
        }
    }

    /// Reads the drawings enrollment asks for (`GestureEnroller.next(after:)`: define, confirm,
    /// once more, and one more when those disagree; `third` false stops after the confirmation,
    /// for the helper, which takes two) and builds the template from them.
    private func drawings(width: Int, height: Int, settings: GestureRecognizerSettings,
                          third: Bool) throws -> (GestureTemplate, [Gesture]) {
        let (first, firstInWindow) = try readGesture("Gesture (define): ")
        guard first.width == width, first.height == height else {
            throw Failure(ExitCodes.refused, "the gesture is for a \(first.width)x\(first.height) picture, but the picture is \(width)x\(height)")
        }
        var drawn = [first]
        var inWindows = firstInWindow
        var built: GestureTemplate?
        while built == nil {
            let step: GestureEnrollmentStep
            do {
                step = try GestureEnroller.next(after: drawn, settings: settings)
            } catch {
                throw refusal(error)
            }
            let prompt: String
            switch step {
            case .done(let template):
                built = template
                continue
            case .confirm:
                prompt = "Gesture (confirm): "
            case .onceMore:
                if third { Terminal.say("Draw the gesture once more: Puff learns it from all three drawings.") }
                prompt = "Gesture (once more): "
            case .oneMore:
                Terminal.say("The drawings differ a lot; draw the gesture one more time.")
                prompt = "Gesture (one more): "
            }
            if !third, drawn.count >= 2 {
                built = try build(drawn, settings: settings)
                continue
            }
            let (again, againInWindow) = try readGesture(prompt)
            drawn.append(again)
            inWindows = inWindows && againInWindow
        }
        guard let template = built else { throw Failure(ExitCodes.refused, "gesture refused") }
        // Drawn on a desktop: the user sees what will be stored, with a replay, and decides.
        if inWindows {
            let decision = try WindowRunner.review(picture: picture, template: template, drawings: drawn,
                                                   title: "puff-enroll: check the gesture before saving",
                                                   printLayout: printLayout)
            guard case .saved = decision else { throw Failure(ExitCodes.refused, "cancelled; nothing was changed") }
        }
        return (template, drawn)
    }

    private func refusal(_ error: GestureEnrollmentError) -> Failure {
        if case .confirmationMismatch(let detail) = error {
            let why = detail.map { " (\($0))" } ?? ""
            return Failure(ExitCodes.refused, "the drawings do not match each other\(why); nothing was changed")
        }
        return Failure(ExitCodes.refused, "gesture refused: \(error)")
    }

    private func build(_ drawn: [Gesture], settings: GestureRecognizerSettings) throws -> GestureTemplate {
        do {
            return try GestureEnroller.build(drawings: drawn, settings: settings)
        } catch {
            throw refusal(error)
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

    @Option(help: "Where to write the SVG: a new file (mode 0600); no symlink is followed on the way.")
    var output: String

    @Flag(help: "Replace an existing regular file at --output (it is removed and created anew, mode 0600).")
    var force = false

    func run() throws {
        try Command.run {
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            guard let (template, picture) = try FilesStore(options: options).openGesture(of: account) else {
                throw Failure(ExitCodes.unknown, "\(account.name) has no gesture enrolled")
            }
            let href = picture.map { "data:\(Picture.mediaType(of: $0));base64," + Base64.encode($0) }
            let svg = Array(GestureSVG.render(template: template, pictureHref: href).utf8)
            let fd = try PrivateOutput.create(output, replacing: force)
            defer { close(fd) }
            let wrote = svg.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard wrote == svg.count else { throw Failure(ExitCodes.storeFailure, "cannot write \(output)") }
            Terminal.say("Wrote \(output).")
        }
    }
}

/// A file root writes for an administrator (the SVG reveals the gesture): created new with mode
/// 0600, never through a symlink — not the last component (`O_EXCL|O_NOFOLLOW`) nor a parent
/// (each directory is opened with `O_NOFOLLOW` from `/` or the working directory) — and never
/// into a file someone prepared (an existing one is refused; with `--force` it is unlinked and
/// created anew, so a descriptor an attacker holds on the old one sees nothing).
enum PrivateOutput {
    static func create(_ path: String, replacing: Bool) throws -> Int32 {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let name = parts.last, name != ".", name != ".." else {
            throw Failure(ExitCodes.refused, "--output must name a file")
        }
        var directory = open(path.hasPrefix("/") ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw Failure(ExitCodes.storeFailure, "cannot open the directory of \(path)") }
        defer { close(directory) }
        for part in parts.dropLast() {
            let next = openat(directory, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                throw Failure(ExitCodes.storeFailure, "cannot write \(path): '\(part)' is not a directory (symlinks are not followed)")
            }
            close(directory)
            directory = next
        }
        if replacing {
            var info = stat()
            if fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
                guard info.st_mode & S_IFMT == S_IFREG else {
                    throw Failure(ExitCodes.storeFailure, "refusing to replace \(path): not a regular file")
                }
                guard unlinkat(directory, name, 0) == 0 else { throw Failure(ExitCodes.storeFailure, "cannot replace \(path)") }
            }
        }
        let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw Failure(ExitCodes.storeFailure, "\(path) exists; choose a new file or pass --force") }
            throw Failure(ExitCodes.storeFailure, "cannot write \(path)")
        }
        guard fchmod(fd, 0o600) == 0 else {
            close(fd)
            throw Failure(ExitCodes.storeFailure, "cannot write \(path)")
        }
        return fd
    }
}

/// A picture file: its bytes and its size, read from its header.
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
        // Decoded whole, as every login screen will (in the client kit's confined child: stb_image
        // never runs in this process, which is root's when an administrator enrolls a user's
        // picture): a truncated or damaged file whose header is fine is refused here, before
        // anything is asked or written, not found undrawable at login.
        let decoded: UserPicture
        do {
            decoded = try UserPicture(bytes: bytes, path: path)
        } catch {
            throw Failure(ExitCodes.refused, "\(path): the picture could not be decoded (truncated or damaged?); "
                          + "nothing was enrolled")
        }
        guard decoded.width == width, decoded.height == height else {
            throw Failure(ExitCodes.refused, "\(path): the picture's header says \(width)x\(height) but it decodes to "
                          + "\(decoded.width)x\(decoded.height); nothing was enrolled")
        }
        return Picture(bytes: bytes, width: width, height: height)
    }

    /// Width and height from the image header, without decoding anything: a PNG's IHDR chunk
    /// (which must come first) or a JPEG's start-of-frame marker. A few lines of bounded
    /// parsing instead of stb_image, so root (enrolling a gesture for a user, with that user's
    /// picture) runs no image decoder at all.
    static func size(of bytes: [UInt8]) -> (Int, Int)? {
        func bigEndian(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, count > 0, at + count <= bytes.count else { return nil }
            return bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
        }
        var size: (Int, Int)?
        switch mediaType(of: bytes) {
        case "image/png":
            // Signature (8), chunk length (4) = 13, "IHDR", width (4), height (4).
            guard bigEndian(8, 4) == 13, bytes.count >= 24, Array(bytes[12..<16]) == Array("IHDR".utf8),
                  let width = bigEndian(16, 4), let height = bigEndian(20, 4) else { return nil }
            size = (width, height)
        case "image/jpeg":
            // Markers after SOI: FF, type, then a big-endian length that includes itself.
            var at = 2
            while size == nil, at + 4 <= bytes.count {
                guard bytes[at] == 0xff else { return nil }
                let marker = bytes[at + 1]
                if marker == 0xff { at += 1; continue }  // fill byte
                if marker == 0xd8 || marker == 0x01 || (0xd0...0xd7).contains(marker) { at += 2; continue }
                guard marker != 0xd9, marker != 0xda, let length = bigEndian(at + 2, 2), length >= 2 else { return nil }
                // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
                if (0xc0...0xcf).contains(marker), ![0xc4, 0xc8, 0xcc].contains(marker) {
                    guard let height = bigEndian(at + 5, 2), let width = bigEndian(at + 7, 2) else { return nil }
                    size = (width, height)
                }
                at += 2 + length
            }
        default:
            return nil
        }
        guard let (width, height) = size, width > 0, height > 0 else { return nil }
        return (width, height)
    }

    /// The media type from the file's signature.
    static func mediaType(of bytes: [UInt8]) -> String {
        if bytes.starts(with: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) { return "image/png" }
        if bytes.starts(with: [0xff, 0xd8, 0xff]) { return "image/jpeg" }
        return "application/octet-stream"
    }
}
