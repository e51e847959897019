import Foundation
import Testing

/// What the module writes to syslog, captured with `SyslogCapture` (Support.swift).
@Suite(.serialized)
struct LoggingTests {
    @Test func failuresLockoutsAndRefusedFilesAreLoggedWithoutSecrets() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=2 unlock_time=0")
        try fixture.enroll(user, "604917")
        _ = capture.drain()

        try fixture.authenticate(user, replies: ["583920"])
        try fixture.authenticate(user, replies: ["583921"])
        try fixture.authenticate(user, replies: ["604917"])
        let lockLines = capture.drain()
        #expect(lockLines.contains { $0.contains("pam_puff") && $0.contains("user puff-it-alice: authentication failure (1 in a row)") })
        #expect(lockLines.contains { $0.contains("user puff-it-alice: locked until an administrator resets it") })
        #expect(lockLines.contains { $0.contains("attempt refused, locked until an administrator resets it") })
        for secret in ["583920", "583921", "604917"] {
            #expect(!lockLines.contains { $0.contains(secret) })
        }
        // LOG_AUTHPRIV (10) with LOG_NOTICE (5): <85>.
        #expect(lockLines.contains { $0.hasPrefix("<85>") })

        chmod(fixture.etc + "/users/" + user, 0o644)
        try fixture.authenticate(user, replies: ["604917"])
        let refused = capture.drain()
        #expect(refused.contains { $0.contains("refusing \(fixture.etc)/users/\(user): mode 644 too open") })

        // A user name with control characters is escaped, not written raw.
        try fixture.authenticate("evil\nname", replies: ["604917"])
        let escaped = capture.drain()
        #expect(escaped.contains { $0.contains("user evil\\x0aname: authentication failure") })
    }
}
