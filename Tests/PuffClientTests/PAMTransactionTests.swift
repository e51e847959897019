import CPAM
import Foundation
import PuffClient
import PuffPlatform
import Testing

/// The kit's PAM transaction through the real libpam: a private pam.d (pam_start_confdir)
/// whose stack says hello (pam_echo, PAM_TEXT_INFO), asks for the password (pam_exec
/// expose_authtok, PAM_PROMPT_ECHO_OFF) and checks it in a script (pam_deny when it is wrong).
@Suite struct PAMTransactionTests {
    /// Answers every prompt with `reply` (or fails the conversation when nil) and keeps what it saw.
    final class Scripted: PAMConversation {
        let reply: String?
        var seen: [PAMMessage] = []
        var answeredCalls = 0
        init(reply: String?) { self.reply = reply }

        func respond(to message: PAMMessage) -> ConversationReplies.Answer {
            seen.append(message)
            guard case .prompt = message else { return .shown }
            guard let reply else { return .fail(PAM_CONV_ERR) }
            return .secret(SecretBuffer(copying: Array(reply.utf8)))
        }

        func conversationAnswered() { answeredCalls += 1 }
    }

    final class Stack {
        let directory: String
        init() throws {
            directory = NSTemporaryDirectory() + "puff-client-pam-\(getpid())-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            let check = directory + "/check"
            // pam_exec hands the token on stdin, NUL-terminated. Written by a separate shell:
            // a descriptor of ours open for writing could leak into a child another test forks
            // at that moment, and pam_exec's exec of the script would fail with ETXTBSY.
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"", "sh", check,
                                "#!/bin/sh\ntoken=$(tr -d '\\000')\n[ \"$token\" = sesame ]\n"]
            try writer.run()
            writer.waitUntilExit()
            try """
                auth requisite pam_echo.so Hello %u
                auth [success=1 default=ignore] pam_exec.so expose_authtok quiet \(check)
                auth requisite pam_deny.so
                auth required pam_permit.so
                account required pam_permit.so
                """.write(toFile: directory + "/puff-client-test", atomically: true, encoding: .utf8)
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test func theRightAnswerAuthenticatesThroughLibpam() throws {
        let stack = try Stack()
        let conversation = Scripted(reply: "sesame")
        let transaction = try PAMTransaction(service: "puff-client-test", user: "lena", confdir: stack.directory,
                                             conversation: conversation)
        let status = transaction.authenticate()
        #expect(status == PAM_SUCCESS, "\(transaction.describe(status))")
        #expect(conversation.seen.first == .info("Hello lena"))
        #expect(conversation.seen.contains { if case .prompt(_, echo: false) = $0 { true } else { false } })
        #expect(conversation.answeredCalls >= 2)
        #expect(transaction.accountManagement() == PAM_SUCCESS)
        transaction.end(status)
        // Ended: nothing more reaches libpam.
        #expect(transaction.authenticate() == PAM_SYSTEM_ERR)
    }

    @Test func aWrongAnswerIsRefused() throws {
        let stack = try Stack()
        let conversation = Scripted(reply: "sesamf")
        let transaction = try PAMTransaction(service: "puff-client-test", user: "lena", confdir: stack.directory,
                                             conversation: conversation)
        #expect(transaction.authenticate() == PAM_AUTH_ERR)
        // Again in the same transaction: asked again.
        let prompts = conversation.seen.filter { if case .prompt = $0 { true } else { false } }.count
        #expect(transaction.authenticate() == PAM_AUTH_ERR)
        #expect(conversation.seen.filter { if case .prompt = $0 { true } else { false } }.count == prompts + 1)
    }

    @Test func aFailedConversationIsNeverSuccess() throws {
        let stack = try Stack()
        let conversation = Scripted(reply: nil)
        let transaction = try PAMTransaction(service: "puff-client-test", user: "lena", confdir: stack.directory,
                                             conversation: conversation)
        let status = transaction.authenticate()
        #expect(status != PAM_SUCCESS)
        #expect(conversation.seen.contains { if case .prompt = $0 { true } else { false } })
    }

    @Test func aMissingServiceDoesNotStart() throws {
        let stack = try Stack()
        let error = #expect(throws: PAMTransaction.StartError.self) {
            try PAMTransaction(service: "no-such-service", user: "lena", confdir: stack.directory,
                               conversation: Scripted(reply: "sesame"))
        }
        #expect(error?.code != PAM_SUCCESS)
        #expect(error?.description.hasPrefix("cannot start PAM service no-such-service (") == true)
    }
}
