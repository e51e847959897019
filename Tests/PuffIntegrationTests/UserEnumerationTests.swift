import Foundation
import Testing

/// A wrong passcode must look the same whether the user is enrolled, is an account without a
/// Puff record, or is no account at all: the same messages in the same order and the same
/// number of conversation rounds. (How long each takes is measured by `make timing`, a
/// benchmark, not asserted here.)
@Suite(.serialized)
struct UserEnumerationTests {
    /// What the application saw: every PROMPT/INFO/ERROR/RESULT line, and the round count.
    func transcript(_ fixture: Fixture, _ user: String, reply: String) throws -> (lines: [String], rounds: String?) {
        let run = try fixture.authenticate(user, replies: [reply], extra: ["--time"])
        let rounds = run.lines.first { $0.hasPrefix("TIMING ") }?.split(separator: " ").last.map(String.init)
        return (run.lines.filter { !$0.hasPrefix("TIMING ") }, rounds)
    }

    @Test("enrolled, no record and no account: same prompts, messages, result and rounds")
    func wrongPasscodeLooksTheSame() throws {
        let enrolled = try TestUsers.ensure("puff-it-alice")
        let noRecord = try TestUsers.ensure("puff-it-bob")
        let noAccount = "puff-it-no-such-account"
        #expect(getpwnam(noAccount) == nil)
        let fixture = try Fixture(moduleArguments: "deny=0")
        try fixture.enroll(enrolled, "604917")

        let reference = try transcript(fixture, enrolled, reply: "111111")
        #expect(reference.lines.filter { $0.hasPrefix("PROMPT echo-off ") }.count == 1, "\(reference.lines)")
        #expect(reference.lines.last == "RESULT \(PAMCode.authError) Authentication failure")
        #expect(reference.rounds != nil)
        #expect(try fixture.failures(enrolled) == 1)
        for user in [noRecord, noAccount] {
            let seen = try transcript(fixture, user, reply: "111111")
            #expect(seen.lines == reference.lines, "\(user): \(seen.lines) vs \(reference.lines)")
            #expect(seen.rounds == reference.rounds, "\(user): \(seen.rounds ?? "none") rounds vs \(reference.rounds ?? "none")")
        }
        // A second wrong passcode for the enrolled user still looks like the others.
        #expect(try transcript(fixture, enrolled, reply: "222222") == reference)
    }
}
