import CHelperStart
import CPAM
import Glibc
import PuffPlatform

/// The caller's system password, checked through the `puff-enroll` PAM service (normally
/// pam_unix): how an ordinary user without a Puff passcode proves who they are before their
/// first enrollment. The conversation answers one hidden prompt with the proof and refuses
/// anything else.
enum SystemPassword {
    static let service = "puff-enroll"

    private final class Answer {
        let text: UnsafeMutablePointer<CChar>
        var used = false
        init(_ text: UnsafeMutablePointer<CChar>) { self.text = text }
    }

    /// Whether `proof` is `user`'s password and the account may be used now.
    static func verify(user: String, proof: borrowing SecureBytes) -> Bool {
        guard !proof.withBytes({ $0.contains(0) }) else { return false }
        // A C string for libpam, wiped before it is freed.
        guard let text = malloc(proof.count + 1)?.assumingMemoryBound(to: CChar.self) else { return false }
        defer {
            explicit_bzero(text, proof.count + 1)
            free(text)
        }
        proof.withBytes { bytes in
            if let base = bytes.baseAddress { memcpy(text, base, bytes.count) }
        }
        text[proof.count] = 0
        let answer = Answer(text)
        let context = Unmanaged.passRetained(answer)
        defer { context.release() }

        var conversation = pam_conv(conv: { count, messages, responses, data in
            guard count == 1, let messages, let responses, let data, let message = messages[0] else { return PAM_CONV_ERR }
            let answer = Unmanaged<Answer>.fromOpaque(data).takeUnretainedValue()
            guard message.pointee.msg_style == PAM_PROMPT_ECHO_OFF, !answer.used else { return PAM_CONV_ERR }
            guard let reply = calloc(1, MemoryLayout<pam_response>.size)?.assumingMemoryBound(to: pam_response.self),
                  let copy = strdup(answer.text) else { return PAM_BUF_ERR }
            answer.used = true
            reply.pointee.resp = copy
            reply.pointee.resp_retcode = 0
            responses.pointee = reply
            return PAM_SUCCESS
        }, appdata_ptr: context.toOpaque())

        // libpam is opened here, on first use (CHelperStart/system_password.c).
        let status = withUnsafePointer(to: &conversation) { puff_helper_check_password(service, user, $0) }
        return status == PAM_SUCCESS
    }
}
