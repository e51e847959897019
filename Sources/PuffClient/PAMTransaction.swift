import CPAM
import Glibc
import PuffPlatform

/// One message of a PAM conversation, as a client shows or answers it. The LightDM greeter,
/// which relays the daemon's PAM conversation, uses the same kinds.
public enum PAMMessage: Equatable {
    /// A question: `echo` false for secrets (PAM_PROMPT_ECHO_OFF), true otherwise (PAM_PROMPT_ECHO_ON).
    case prompt(String, echo: Bool)
    /// PAM_TEXT_INFO.
    case info(String)
    /// PAM_ERROR_MSG.
    case error(String)
}

/// What answers a PAM transaction's conversation: puff-pad's terminal screens, the lock screen.
public protocol PAMConversation: AnyObject {
    /// The answer to one message: `.shown` for info and error, `.secret` for a prompt (copied;
    /// the buffer stays the caller's and wipes itself), `.fail(code)` to fail the whole call.
    func respond(to message: PAMMessage) -> ConversationReplies.Answer
    /// Called after every message of one conversation call was answered.
    func conversationAnswered()
}

extension PAMConversation {
    /// Nothing to do by default.
    public func conversationAnswered() {}
}

/// A PAM transaction started by a client with a Swift conversation: `pam_start` (or
/// `pam_start_confdir` for a private pam.d), then `pam_authenticate`, `pam_acct_mgmt`,
/// `pam_setcred` as the program needs, and `pam_end` exactly once (at `end` or when the
/// transaction goes away). Answers are handed to libpam as `malloc`ed copies through
/// `ConversationReplies`, which wipes them on failure; libpam's modules wipe and free them.
public final class PAMTransaction {
    /// pam_start failed.
    public struct StartError: Error, CustomStringConvertible {
        /// The PAM code pam_start returned.
        public let code: Int32
        public let service: String
        public var description: String { "cannot start PAM service \(service) (\(code))" }
    }

    /// The conversation, kept alive as long as libpam may call it.
    private final class Box {
        let conversation: any PAMConversation
        init(_ conversation: any PAMConversation) { self.conversation = conversation }

    /// The `pam_conv` callback body: each message to the conversation, the reply array built
    /// (and wiped on failure) by `ConversationReplies`.
    func converse(_ count: Int32, _ messages: UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
                  _ responses: UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?) -> Int32 {
        let code = ConversationReplies.answer(count: count, messages: messages, responses: responses) { style, text in
            switch style {
            case PAM_PROMPT_ECHO_OFF: return conversation.respond(to: .prompt(text, echo: false))
            case PAM_PROMPT_ECHO_ON: return conversation.respond(to: .prompt(text, echo: true))
            case PAM_TEXT_INFO: return conversation.respond(to: .info(text))
            case PAM_ERROR_MSG: return conversation.respond(to: .error(text))
            default: return .fail(PAM_CONV_ERR)
            }
        }
        if code == PAM_SUCCESS { conversation.conversationAnswered() }
        return code
    }
    }

    private let handle: OpaquePointer
    private let box: Box
    private var ended = false

    /// Starts `service` for `user` with `conversation`; the service file is read from
    /// `confdir` instead of /etc/pam.d when one is given.
    public init(service: String, user: String, confdir: String? = nil, conversation: any PAMConversation) throws(StartError) {
        let box = Box(conversation)
        var callbacks = pam_conv(conv: { count, messages, responses, data in
            guard let data else { return PAM_CONV_ERR }
            return Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().converse(count, messages, responses)
        }, appdata_ptr: Unmanaged.passUnretained(box).toOpaque())
        var handle: OpaquePointer?
        // libpam copies `callbacks`; `box` lives as long as the transaction.
        let started = confdir.map { pam_start_confdir(service, user, &callbacks, $0, &handle) }
            ?? pam_start(service, user, &callbacks, &handle)
        guard started == PAM_SUCCESS, let handle else {
            if let handle { pam_end(handle, started) }
            throw StartError(code: started, service: service)
        }
        self.handle = handle
        self.box = box
    }

    deinit { end(PAM_ABORT) }

    /// `pam_authenticate(3)`: its PAM code.
    public func authenticate(flags: Int32 = 0) -> Int32 {
        ended ? PAM_SYSTEM_ERR : pam_authenticate(handle, flags)
    }

    /// `pam_acct_mgmt(3)`: its PAM code.
    public func accountManagement(flags: Int32 = 0) -> Int32 {
        ended ? PAM_SYSTEM_ERR : pam_acct_mgmt(handle, flags)
    }

    /// `pam_setcred(3)` with `flags` (PAM_ESTABLISH_CRED, PAM_REFRESH_CRED, …): its PAM code.
    public func setCredentials(_ flags: Int32) -> Int32 {
        ended ? PAM_SYSTEM_ERR : pam_setcred(handle, flags)
    }

    /// `pam_strerror(3)` of `status`.
    public func describe(_ status: Int32) -> String {
        String(validatingCString: pam_strerror(handle, status)) ?? "error \(status)"
    }

    /// `pam_end(3)` with the last status; later calls do nothing.
    public func end(_ status: Int32) {
        guard !ended else { return }
        ended = true
        pam_end(handle, status)
    }
}
