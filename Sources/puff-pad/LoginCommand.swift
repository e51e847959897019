import ArgumentParser
import CPAM
import Glibc
import PuffClient
import PuffClientPicture
import PuffCore
import PuffPlatform

/// `puff-pad login`: a terminal lock in the spirit of vlock, speaking Puff's prompt contract.
struct LoginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Authenticate through PAM: draw the gesture on your picture or type your passcode.",
        discussion: """
        Runs pam_authenticate for the user and answers Puff's prompts (the prompt contract: \
        /usr/share/doc/libpam-puff/prompt-contract.md) \
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
        guard let name = user ?? Caller.current()?.name.value else {
            Report.warn("cannot tell who you are; use --user")
            throw ExitCode(PadExit.pamError)
        }
        var picture: PadPicture?
        var undecodable = false
        do {
            picture = try PadPicture(path: UserPicture.path(directory: dir, user: name))
        } catch {
            // Missing (no gesture enrolled, or no access) is not the same as there but undecodable.
            undecodable = error.undecodable
        }
        let (trail, warning) = TrailSetting.load(configFile: dir + "/puff.conf")
        if let warning { Report.warn(warning) }
        let conversation = LoginConversation(user: name, picture: picture, pictureUndecodable: undecodable, trail: trail)
        defer { conversation.finish() }

        let transaction: PAMTransaction
        do {
            transaction = try PAMTransaction(service: service, user: name, confdir: pamConfdir, conversation: conversation)
        } catch {
            Report.warn("\(error)")
            throw ExitCode(PadExit.pamError)
        }
        var status = PAM_AUTH_ERR
        var attempt = 0
        while attempts == 0 || attempt < attempts {
            attempt += 1
            status = transaction.authenticate()
            // Only a refused answer is worth another try.
            if status != PAM_AUTH_ERR || conversation.stopped != nil { break }
        }
        let text = transaction.describe(status)
        transaction.end(status)
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
}

/// The PAM conversation of `puff-pad login`: each prompt becomes a screen.
final class LoginConversation: PAMConversation {
    /// Why the user stopped answering.
    enum Stop {
        case cancelled
        case terminated(Int32)
    }

    let user: String
    let picture: PadPicture?
    /// What the picture shows of the drawing (`gesture_trail` in puff.conf).
    let trail: GestureTrail
    /// Set when the user cancelled or a signal arrived; the transaction then ends.
    private(set) var stopped: Stop?
    /// The module's messages, in order (repeated on stderr at the end).
    private(set) var transcript: [String] = []
    /// Messages not shown yet.
    private var pending: [String] = []
    private var session: TerminalSession?
    private var mouse = true
    private var plainLineTerminal: Int32 = -1

    /// The store holds a picture for the user that could not be decoded.
    let pictureUndecodable: Bool

    init(user: String, picture: PadPicture?, pictureUndecodable: Bool = false, trail: GestureTrail = .fade) {
        self.user = user
        self.picture = picture
        self.pictureUndecodable = pictureUndecodable
        self.trail = trail
    }

    /// Why no picture is shown, as a sentence without its end.
    private var noPicture: String {
        pictureUndecodable ? "The picture for \(user) in the Puff store could not be decoded" : "No picture for \(user) in the Puff store"
    }

    /// Restores the terminal.
    func finish() {
        session?.leave()
        session = nil
    }

    /// One message of the conversation: messages are kept for the next screen, prompts
    /// answered on the terminal.
    func respond(to message: PAMMessage) -> ConversationReplies.Answer {
        guard stopped == nil else { return .fail(PAM_CONV_ERR) }
        switch message {
        case .info(let text), .error(let text):
            transcript.append(text)
            pending.append(text)
            return .shown
        case .prompt(let text, let echo):
            guard let secret = answer(text, echo: echo) else { return .fail(PAM_CONV_ERR) }
            return .secret(secret)
        }
    }

    /// Messages after the last prompt (wrong, locked): shown until the next prompt.
    func conversationAnswered() {
        if !pending.isEmpty, stopped == nil, let session { showStatus(session) }
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
                                    message: message + (message.isEmpty ? "" : "\n") + "\(noPicture): type the passcode.",
                                    pad: nil, first: nil)
                }
                transcript.append("\(noPicture); the gesture cannot be drawn.")
                stopped = .cancelled
                return nil
            }
            // `.some(nil)`: a passcode of unknown type may be typed too.
            var type: PasscodeType?? = .none
            if case .passcodeOrGesture(let passcodeType) = kind { type = .some(passcodeType) }
            let pad = GesturePad(session: session, picture: picture,
                                 title: "\(title) | Draw your gesture" + (type != nil ? ", or press Tab for the passcode" : ""),
                                 message: message, passcodeAllowed: type != nil)
            pad.trail = trail
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
        guard let tty = TerminalInput.openTerminal() else {
            transcript.append("there is no terminal to answer on")
            stopped = .cancelled
            return nil
        }
        defer { close(tty) }
        let text = pending.map { $0 + "\n" }.joined()
        pending.removeAll()
        if case .gestureOnly = kind {
            transcript.append("only a gesture is accepted, and this terminal cannot draw it")
            stopped = .cancelled
            return nil
        }
        switch TerminalInput.readSecret(terminal: tty, prompt: text + prompt, echo: echo, capacity: 4096) {
        case .secret(let secret):
            return secret
        case .cancelled, .readFailed:
            stopped = .cancelled
        case .tooLong:
            transcript.append("the answer is too long")
            stopped = .cancelled
        case .noTerminalMode:
            transcript.append("the terminal cannot be set up for typing the answer")
            stopped = .cancelled
        }
        return nil
    }
}
