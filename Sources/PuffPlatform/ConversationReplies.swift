import CPAM
import Glibc

/// The reply array of a PAM conversation function, for the clients that answer Puff's prompt
/// (puff-lock, puff-pad): one `pam_response` per message, answers as `malloc`ed copies that
/// libpam frees, and on any failure every answer given so far wiped and freed with the array.
public enum ConversationReplies {
    /// What the client does with one message.
    public enum Answer {
        /// A message shown, nothing to reply.
        case shown
        /// The reply to a prompt (copied; the buffer stays the caller's).
        case secret(SecretBuffer)
        /// The conversation fails with this PAM code.
        case fail(Int32)
    }

    /// Answers the `count` messages at `messages` through `body` (each message's style and its
    /// text, empty when not UTF-8) and stores the array in `responses`; the PAM code.
    public static func answer(count: Int32, messages: UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
                              responses: UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?,
                              _ body: (_ style: Int32, _ text: String) -> Answer) -> Int32 {
        guard count > 0, count <= PAM_MAX_NUM_MSG, let messages, let responses else { return PAM_CONV_ERR }
        guard let replies = calloc(Int(count), MemoryLayout<pam_response>.stride)?
            .bindMemory(to: pam_response.self, capacity: Int(count)) else { return PAM_BUF_ERR }
        func fail(_ code: Int32) -> Int32 {
            for index in 0..<Int(count) {
                if let text = replies[index].resp {
                    explicit_bzero(text, strlen(text))
                    free(text)
                }
            }
            free(replies)
            return code
        }
        for index in 0..<Int(count) {
            guard let message = messages[index]?.pointee else { return fail(PAM_CONV_ERR) }
            let text = message.msg.flatMap { String(validatingCString: $0) } ?? ""
            switch body(message.msg_style, text) {
            case .shown:
                break
            case .secret(let secret):
                guard let copy = secret.mallocCopy() else { return fail(PAM_BUF_ERR) }
                replies[index].resp = copy
            case .fail(let code):
                return fail(code)
            }
        }
        responses.pointee = replies
        return PAM_SUCCESS
    }
}
