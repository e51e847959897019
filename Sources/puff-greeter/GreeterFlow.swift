import Glibc
import PuffClient
import PuffClientPicture
import PuffCore
import PuffPlatform
import PuffScreen

/// The greeter's screens in order: the user list, then that user's conversation (the
/// picture and keypad, or a text field for any other prompt), then the session.
///
/// One loop reads LightDM's signals (`LightDMConnection.next()` runs GLib's main context)
/// and hands each prompt and message to `LockSession.respond(to:)` (the client kit's `PAMMessage` kinds), which runs the X event loop until the user
/// submits — the way puff-lock answers PAM's conversation. After a failure the same user is
/// asked again (the module's message on the next screen, counted by the module as anywhere
/// else); Esc on an empty screen goes back to the user list.
final class GreeterFlow {
    let display: any GreeterScreen
    let connection: any GreeterDaemon
    let directory: String
    let printLayout: Bool
    let chooser: UserChooser

    init(display: any GreeterScreen, connection: any GreeterDaemon, directory: String, printLayout: Bool) {
        self.display = display
        self.connection = connection
        self.directory = directory
        self.printLayout = printLayout
        let sessions = connection.sessions
        chooser = UserChooser(display: display, users: connection.users, sessions: sessions.choices,
                              defaultSession: sessions.defaultKey, selectedUser: connection.selectedUserHint,
                              host: connection.hostName, printLayout: printLayout)
    }

    func run() -> Never {
        while true {
            let name = chooser.choose()
            if authenticate(name) {
                do {
                    try connection.startSession(chooser.sessionKey)
                    Report.warn("session started for \(LogText.escape(name))")
                    connection.waitToBeStopped()
                } catch {
                    Report.warn("cannot start the session: \(error)")
                    chooser.messages = [.init(text: "The session could not be started: \(error.description)", isError: true)]
                }
            }
        }
    }

    /// The picture `name` enrolled, if any (each picture in the store's pictures/ is readable by name; a name
    /// that is not a valid user name is never made into a path).
    /// Decoded in the client kit's confined child (`UserPicture`), never in the greeter.
    private func picture(for name: String) -> (LockPicture?, undecodable: Bool) {
        guard let user = UserName(name) else { return (nil, false) }
        let path = UserPicture.path(directory: directory, user: user.value)
        do {
            return (try LockPicture(path: path), false)
        } catch {
            Report.warn("\(error)")
            return (nil, error.undecodable)
        }
    }

    /// Runs `name`'s conversation until LightDM authenticates them (true), or the user goes
    /// back to the list (false).
    private func authenticate(_ name: String) -> Bool {
        let shownName = chooser.users.first { $0.name == name }?.displayName ?? name
        let host = connection.hostName
        let (shown, undecodable) = picture(for: name)
        let session = LockSession(display: display, user: name, picture: shown, printLayout: printLayout,
                                  title: host.isEmpty ? shownName : "\(shownName) · \(host)", cancellable: true)
        session.pictureUndecodable = undecodable
        session.gestureBudget = connection.answerBudget
        session.submitLabel = "✓ Log in"
        session.showsClock = true
        let (trail, warning) = TrailSetting.load(configFile: directory + "/puff.conf")
        if let warning { Report.warn(warning) }
        session.trail = trail
        do {
            try connection.authenticate(name)
        } catch {
            Report.warn("\(error)")
            chooser.messages = [.init(text: "LightDM refused to authenticate \(name).", isError: true)]
            return false
        }
        session.startAttempt()
        while true {
            switch connection.next() {
            case .message(let text, let isError):
                _ = session.respond(to: isError ? .error(text) : .info(text))
            case .prompt(let text, let secret):
                guard case .secret(let answer) = session.respond(to: .prompt(text, echo: !secret)) else {
                    connection.cancel()
                    return false
                }
                do {
                    try connection.respond(answer)
                } catch {
                    Report.warn("\(error)")
                    connection.cancel()
                    chooser.messages = [.init(text: "The answer could not be sent to LightDM.", isError: true)]
                    return false
                }
            case .complete:
                if connection.isAuthenticated { return true }
                if !session.answeredPrompt {
                    // Nothing was asked (an account that may not log in now): the messages
                    // stay until a key or a click, then the list again.
                    if session.messagesThisAttempt == 0 { session.note("Authentication failed.") }
                    session.acknowledge(prompt: "Cannot log in now", hint: "Press a key or click to go back to the users.")
                    return false
                }
                // Modules other than Puff (pam_unix) say nothing when the answer is wrong.
                if session.messagesThisAttempt == 0 { session.note("Authentication failed.") }
                session.startAttempt()
                do {
                    try connection.authenticate(name)
                } catch {
                    Report.warn("\(error)")
                    return false
                }
            }
        }
    }
}
