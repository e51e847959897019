import ArgumentParser
import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// `puff-pad login`: a terminal lock in the spirit of vlock, speaking Puff's prompt contract.
struct LoginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Authenticate through PAM: draw the gesture on your picture or type your passcode.",
        discussion: """
        Runs pam_authenticate for the user and answers Puff's prompts (docs/prompt-contract.md) \
        with the gesture drawn on the user's picture (DIR/pictures/USER) or a passcode typed on \
        a keypad suited to its type; Tab or typing switches from the picture to the passcode. \
        Prompts of other modules are answered with typed text. Module messages (wrong, locked, \
        passcode required) are shown on the next screen. Without mouse support the passcode is \
        typed on a plain line.
        """
    )

    @Option(help: "The PAM service.")
    var service = "puff-pad"

    @Option(help: "The user to authenticate (default: the calling user).")
    var user: String?

    @Option(help: "The Puff record directory, where pictures/USER is read.")
    var dir = "/etc/puff"

    @Option(name: .customLong("pam-confdir"), help: "Read the PAM service from this directory (pam_start_confdir) instead of /etc/pam.d.")
    var pamConfdir: String?

    @Option(help: "Attempts before giving up (0: until it succeeds or is cancelled).")
    var attempts = 3

    func validate() throws {
        guard attempts >= 0 else { throw ValidationError("--attempts must be 0 or more") }
    }

    func run() throws {
        guard let name = user ?? Self.callingUser() else {
            Report.warn("cannot tell who you are; use --user")
            throw ExitCode(PadExit.pamError)
        }
        let picture = try? PadPicture(path: dir + "/pictures/" + name)
        let conversation = LoginConversation(user: name, picture: picture)
        defer { conversation.finish() }

        var handle: OpaquePointer?
        var callbacks = pam_conv(conv: { count, messages, responses, data in
            guard let data else { return PAM_CONV_ERR }
            return Unmanaged<LoginConversation>.fromOpaque(data).takeUnretainedValue()
                .converse(count: count, messages: messages, responses: responses)
        }, appdata_ptr: Unmanaged.passUnretained(conversation).toOpaque())
        let started = pamConfdir.map { pam_start_confdir(service, name, &callbacks, $0, &handle) }
            ?? pam_start(service, name, &callbacks, &handle)
        guard started == PAM_SUCCESS, let handle else {
            Report.warn("cannot start PAM service \(service) (\(started))")
            throw ExitCode(PadExit.pamError)
        }
        var status = PAM_AUTH_ERR
        var attempt = 0
        while attempts == 0 || attempt < attempts {
            attempt += 1
            status = pam_authenticate(handle, 0)
            // Only a refused answer is worth another try.
            if status != PAM_AUTH_ERR || conversation.stopped != nil { break }
        }
        let text = String(cString: pam_strerror(handle, status))
        pam_end(handle, status)
        conversation.finish()
        if case .terminated(let signal) = conversation.stopped { TerminalRestore.die(of: signal) }
        for message in conversation.transcript { Report.warn(message) }
        if status == PAM_SUCCESS {
            Report.warn("authenticated \(name)")
            return
        }
        if conversation.stopped != nil {
            Report.warn("cancelled")
            throw ExitCode(PadExit.cancelled)
        }
        Report.warn("authentication failed: \(text)")
        throw ExitCode(status == PAM_AUTH_ERR || status == PAM_MAXTRIES || status == PAM_USER_UNKNOWN
                       ? PadExit.authenticationFailed : PadExit.pamError)
    }

    static func callingUser() -> String? {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return nil }
        return String(validatingCString: name)
    }
}

/// The PAM conversation of `puff-pad login`: each prompt becomes a screen.
final class LoginConversation {
    /// Why the user stopped answering.
    enum Stop {
        case cancelled
        case terminated(Int32)
    }

    let user: String
    let picture: PadPicture?
    /// Set when the user cancelled or a signal arrived; the transaction then ends.
    private(set) var stopped: Stop?
    /// The module's messages, in order (repeated on stderr at the end).
    private(set) var transcript: [String] = []
    /// Messages not shown yet.
    private var pending: [String] = []
    private var session: TerminalSession?
    private var mouse = true
    private var plainLineTerminal: Int32 = -1

    init(user: String, picture: PadPicture?) {
        self.user = user
        self.picture = picture
    }

    /// Restores the terminal.
    func finish() {
        session?.leave()
        session = nil
    }

    /// The `pam_conv` callback body.
    func converse(count: Int32, messages: UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
                  responses: UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?) -> Int32 {
        guard stopped == nil else { return PAM_CONV_ERR }
        let code = ConversationReplies.answer(count: count, messages: messages, responses: responses) { style, text in
            switch style {
            case PAM_TEXT_INFO, PAM_ERROR_MSG:
                transcript.append(text)
                pending.append(text)
                return .shown
            case PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON:
                guard let secret = answer(text, echo: style == PAM_PROMPT_ECHO_ON) else { return .fail(PAM_CONV_ERR) }
                return .secret(secret)
            default:
                return .fail(PAM_CONV_ERR)
            }
        }
        if code == PAM_SUCCESS, !pending.isEmpty, stopped == nil, let session {
            // Messages after the last prompt (wrong, locked): shown until the next prompt.
            showStatus(session)
        }
        return code
    }

    /// Gets the answer to one prompt; nil when cancelled.
    private func answer(_ prompt: String, echo: Bool) -> SecretBuffer? {
        let kind: PuffPrompt = echo ? .foreign(prompt) : PuffPrompt(prompt)
        guard let session = terminal() else { return plainAnswer(prompt, kind: kind, echo: echo) }
        let title = "puff-pad: \(user)"
        let message = pending.joined(separator: "\n")
        pending.removeAll()
        switch kind {
        case .foreign:
            let entry = PasscodeEntry(session: session, kind: .text(echo: echo), title: "\(title) | \(prompt)",
                                      message: message, escapeGoesBack: false)
            return finish(entry.run(), pad: nil)
        case .passcodeOnly(let type):
            return passcode(session, type: type, title: title, message: message, pad: nil, first: nil)
        case .passcodeOrGesture, .gestureOnly:
            guard let picture else {
                if case .passcodeOrGesture(let type) = kind {
                    return passcode(session, type: type, title: title,
                                    message: message + (message.isEmpty ? "" : "\n") + "No picture for \(user): type the passcode.",
                                    pad: nil, first: nil)
                }
                transcript.append("No picture for \(user) in the Puff store; the gesture cannot be drawn.")
                stopped = .cancelled
                return nil
            }
            // `.some(nil)`: a passcode of unknown type may be typed too.
            var type: PasscodeType?? = .none
            if case .passcodeOrGesture(let passcodeType) = kind { type = .some(passcodeType) }
            let pad = GesturePad(session: session, picture: picture,
                                 title: "\(title) | Draw your gesture" + (type != nil ? ", or press Tab for the passcode" : ""),
                                 message: message, passcodeAllowed: type != nil)
            return gesture(session, pad: pad, type: type)
        }
    }

    private func gesture(_ session: TerminalSession, pad: GesturePad, type: PasscodeType??) -> SecretBuffer? {
        while true {
            switch pad.run() {
            case .gesture(let gesture):
                var line = GestureWire.serialize(gesture)
                defer { Wipe.array(&line) }
                pad.reset()
                showChecking(session)
                return SecretBuffer(copying: line)
            case .passcode(let first):
                guard let type else { continue }
                let message = pad.message
                if let secret = passcode(session, type: type, title: "puff-pad: \(user)", message: message, pad: pad, first: first) {
                    return secret
                }
                if stopped != nil { return nil }
                pad.passcodeAllowed = true
            case .cancelled:
                stopped = .cancelled
                return nil
            case .terminated(let signal):
                stopped = .terminated(signal)
                return nil
            }
        }
    }

    /// The keypad; nil when cancelled, or when the user went back to the picture (`pad`).
    private func passcode(_ session: TerminalSession, type: PasscodeType?, title: String, message: String,
                          pad: GesturePad?, first: UInt8?) -> SecretBuffer? {
        let label = type.map { " [\($0.keypad)]" } ?? ""
        let entry = PasscodeEntry(session: session, kind: .passcode(type), title: "\(title) | Puff passcode\(label)",
                                  message: message, escapeGoesBack: pad != nil, firstCharacter: first)
        return finish(entry.run(), pad: pad)
    }

    private func finish(_ outcome: PasscodeEntry.Outcome, pad: GesturePad?) -> SecretBuffer? {
        switch outcome {
        case .entered(let secret):
            if let session { showChecking(session) }
            return secret
        case .back:
            return nil
        case .cancelled:
            stopped = .cancelled
            return nil
        case .terminated(let signal):
            stopped = .terminated(signal)
            return nil
        }
    }

    private func showChecking(_ session: TerminalSession) {
        var frame = Frame()
        let size = session.size()
        frame.line("Checking…", row: size.rows - 1, width: size.columns, style: "2")
        frame.send(to: session)
    }

    private func showStatus(_ session: TerminalSession) {
        var frame = Frame()
        let size = session.size()
        frame.line(pending.joined(separator: " "), row: size.rows - 2, width: size.columns, style: "1")
        frame.send(to: session)
    }

    /// The full-screen terminal, opened on first use; nil without mouse support.
    private func terminal() -> TerminalSession? {
        if let session { return session }
        guard mouse else { return nil }
        do {
            let opened = try TerminalSession()
            opened.enter()
            session = opened
            return opened
        } catch {
            mouse = false
            transcript.append("puff-pad: \(error); type the passcode instead")
            pending.append("\(error): type the passcode instead of drawing.")
            return nil
        }
    }

    /// A line on the terminal with echo off (or on), for terminals without mouse support.
    private func plainAnswer(_ prompt: String, kind: PuffPrompt, echo: Bool) -> SecretBuffer? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            transcript.append("there is no terminal to answer on")
            stopped = .cancelled
            return nil
        }
        defer { close(tty) }
        var text = pending.map { $0 + "\n" }.joined()
        pending.removeAll()
        if case .gestureOnly = kind {
            transcript.append("only a gesture is accepted, and this terminal cannot draw it")
            stopped = .cancelled
            return nil
        }
        text += prompt
        _ = text.withCString { write(tty, $0, strlen($0)) }
        var saved = termios()
        _ = tcgetattr(tty, &saved)
        var quiet = saved
        if !echo { quiet.c_lflag &= ~tcflag_t(ECHO) }
        quiet.c_lflag |= tcflag_t(ICANON)
        _ = tcsetattr(tty, TCSAFLUSH, &quiet)
        defer {
            _ = tcsetattr(tty, TCSAFLUSH, &saved)
            if !echo { _ = write(tty, "\n", 1) }
        }
        let secret = SecretBuffer(capacity: 4096)
        while true {
            var byte: UInt8 = 0
            let got = (try? withUnsafeMutableBytes(of: &byte) { buffer throws(Errno) in try FileDescriptor.read(tty, into: buffer) }) ?? -1
            if got <= 0 { stopped = .cancelled; return nil }
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { break }
            guard secret.append(byte) else { break }
        }
        return secret
    }
}
