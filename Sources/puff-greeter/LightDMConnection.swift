import CLightDM
import Glibc
import PuffPlatform

/// Why the greeter cannot go on; `description` is for its log.
struct GreeterError: Error, CustomStringConvertible {
    let description: String
}

/// What the daemon said during an authentication, in order.
enum DaemonSignal {
    /// A PAM prompt: `secret` for an echo-off prompt.
    case prompt(String, secret: Bool)
    /// A PAM message (info or error).
    case message(String, isError: Bool)
    /// The authentication ended; `lightdm_greeter_get_is_authenticated` says how.
    case complete
}

/// One LightDM session on the machine (a `.desktop` file under xsessions).
struct SessionChoice: Equatable {
    var key: String
    var name: String
}

/// One account LightDM lists.
struct UserChoice: Equatable {
    var name: String
    var displayName: String
}

/// The display manager the greeter answers: LightDM (`LightDMConnection`) or greetd
/// (`GreetdConnection`, `--greetd`). Either runs PAM itself and relays the conversation.
protocol GreeterDaemon: AnyObject {
    /// The longest answer that can be sent (a gesture is compacted to fit).
    var answerBudget: Int { get }
    var users: [UserChoice] { get }
    var sessions: (choices: [SessionChoice], defaultKey: String?) { get }
    var selectedUserHint: String? { get }
    var hostName: String { get }
    var isAuthenticated: Bool { get }
    func authenticate(_ name: String) throws(GreeterError)
    func next() -> DaemonSignal
    func respond(_ answer: SecretBuffer) throws(GreeterError)
    func cancel()
    func startSession(_ session: String?) throws(GreeterError)
    func waitToBeStopped() -> Never
}

extension LightDMConnection: GreeterDaemon {
    var answerBudget: Int { Self.answerBudget }
    var hostName: String { Self.hostName }
}

/// The greeter's link to the LightDM daemon, through liblightdm-gobject-1: the connection,
/// the authentication conversation, and the session start. The library's signals are queued
/// as `DaemonSignal`s and read with `next()`, which runs GLib's default main context until
/// one is there.
final class LightDMConnection {
    /// The longest answer the library can send: it builds each message to the daemon in a
    /// fixed 1,024-byte buffer (MAX_MESSAGE_LENGTH in liblightdm-gobject's greeter.c), of which
    /// an answer leaves 1,024 − 8 (header) − 4 (the count) − 4 (the string's length) = 1,008
    /// bytes; 1,000 keeps a margin.
    static let answerBudget = 1000

    private let greeter: UnsafeMutablePointer<LightDMGreeter>
    private var pending: [DaemonSignal] = []

    init() throws(GreeterError) {
        guard let greeter = lightdm_greeter_new() else { throw GreeterError(description: "cannot create the LightDM greeter object") }
        self.greeter = greeter
        puff_greeter_follow(greeter, { _, text, type, data in
            guard let data else { return }
            let connection = Unmanaged<LightDMConnection>.fromOpaque(data).takeUnretainedValue()
            let shown = text.flatMap { String(validatingCString: $0) } ?? ""
            connection.pending.append(.prompt(shown, secret: type == LIGHTDM_PROMPT_TYPE_SECRET))
        }, { _, text, type, data in
            guard let data else { return }
            let connection = Unmanaged<LightDMConnection>.fromOpaque(data).takeUnretainedValue()
            let shown = text.flatMap { String(validatingCString: $0) } ?? ""
            connection.pending.append(.message(shown, isError: type == LIGHTDM_MESSAGE_TYPE_ERROR))
        }, { _, data in
            guard let data else { return }
            Unmanaged<LightDMConnection>.fromOpaque(data).takeUnretainedValue().pending.append(.complete)
        }, Unmanaged.passUnretained(self).toOpaque())
        var error: UnsafeMutablePointer<GError>?
        guard lightdm_greeter_connect_to_daemon_sync(greeter, &error) != 0 else {
            throw GreeterError(description: "cannot connect to the LightDM daemon: \(Self.take(&error))")
        }
    }

    /// The next signal, waiting for the daemon as long as it takes.
    func next() -> DaemonSignal {
        while pending.isEmpty { _ = g_main_context_iteration(nil, 1) }
        return pending.removeFirst()
    }

    /// Starts authenticating `name` (a new conversation; signals of an earlier one are dropped).
    func authenticate(_ name: String) throws(GreeterError) {
        pending.removeAll()
        var error: UnsafeMutablePointer<GError>?
        guard lightdm_greeter_authenticate(greeter, name, &error) != 0 else {
            throw GreeterError(description: "cannot start the authentication: \(Self.take(&error))")
        }
    }

    /// Answers the current prompt. The text goes through a NUL-terminated copy wiped right
    /// after; liblightdm keeps its own copies (a g_strdup and its message buffer) that it
    /// frees without wiping, outside Puff's reach.
    func respond(_ answer: SecretBuffer) throws(GreeterError) {
        guard answer.count <= Self.answerBudget else { throw GreeterError(description: "the answer is too long for LightDM") }
        guard let text = answer.mallocCopy() else { throw GreeterError(description: "out of memory") }
        defer {
            explicit_bzero(text, answer.count + 1)
            free(text)
        }
        var error: UnsafeMutablePointer<GError>?
        guard lightdm_greeter_respond(greeter, text, &error) != 0 else {
            throw GreeterError(description: "cannot send the answer: \(Self.take(&error))")
        }
    }

    /// Ends the current authentication without an answer.
    func cancel() {
        var error: UnsafeMutablePointer<GError>?
        if lightdm_greeter_cancel_authentication(greeter, &error) == 0 { _ = Self.take(&error) }
        pending.removeAll()
    }

    var isAuthenticated: Bool { lightdm_greeter_get_is_authenticated(greeter) != 0 }

    /// Asks the daemon to start `session` (a key; nil: the default) for the authenticated user.
    func startSession(_ session: String?) throws(GreeterError) {
        var error: UnsafeMutablePointer<GError>?
        let started = session.map { lightdm_greeter_start_session_sync(greeter, $0, &error) }
            ?? lightdm_greeter_start_session_sync(greeter, nil, &error)
        guard started != 0 else { throw GreeterError(description: Self.take(&error)) }
    }

    /// Runs the main loop for good: after a session start the daemon stops the greeter.
    func waitToBeStopped() -> Never {
        while true { _ = g_main_context_iteration(nil, 1) }
    }

    /// The accounts LightDM lists (users.conf's minimum uid, hidden users and shells), unless
    /// the seat hides them (`greeter-hide-users`).
    var users: [UserChoice] {
        guard lightdm_greeter_get_hide_users_hint(greeter) == 0, let list = lightdm_user_list_get_instance() else { return [] }
        var users: [UserChoice] = []
        var node = lightdm_user_list_get_users(list)
        while let current = node {
            if let user = current.pointee.data?.assumingMemoryBound(to: LightDMUser.self),
               let name = lightdm_user_get_name(user).flatMap({ String(validatingCString: $0) }) {
                let shown = lightdm_user_get_display_name(user).flatMap { String(validatingCString: $0) } ?? name
                users.append(UserChoice(name: name, displayName: shown.isEmpty ? name : shown))
            }
            node = current.pointee.next
        }
        return users
    }

    /// The user to select first (`greeter-...` hints: the last one logged in, or a configured one).
    var selectedUserHint: String? {
        lightdm_greeter_get_select_user_hint(greeter).flatMap { String(validatingCString: $0) }
    }

    /// The X sessions LightDM offers, and the default one's key.
    var sessions: (choices: [SessionChoice], defaultKey: String?) {
        var choices: [SessionChoice] = []
        var node = lightdm_get_sessions()
        while let current = node {
            if let session = current.pointee.data?.assumingMemoryBound(to: LightDMSession.self),
               let key = lightdm_session_get_key(session).flatMap({ String(validatingCString: $0) }) {
                let name = lightdm_session_get_name(session).flatMap { String(validatingCString: $0) } ?? key
                choices.append(SessionChoice(key: key, name: name.isEmpty ? key : name))
            }
            node = current.pointee.next
        }
        let hint = lightdm_greeter_get_default_session_hint(greeter).flatMap { String(validatingCString: $0) }
        return (choices, hint)
    }

    /// The machine's name as LightDM reports it.
    static var hostName: String { lightdm_get_hostname().flatMap { String(validatingCString: $0) } ?? "" }

    private static func take(_ error: inout UnsafeMutablePointer<GError>?) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        puff_take_error(&error, &buffer, buffer.count)
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return text.isEmpty ? "unknown error" : text
    }
}
