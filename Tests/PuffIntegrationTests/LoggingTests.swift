import Foundation
import Testing

/// What the module writes to syslog, captured on a `/dev/log` socket the test owns.
/// (The test machine runs no syslog daemon; when one is running the test cannot take its
/// socket and says so.)
@Suite(.serialized)
struct LoggingTests {
    final class SyslogCapture {
        let fd: Int32
        static let path = "/dev/log"

        init?() {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in Self.path.utf8.enumerated() { raw[index] = byte }
            }
            if access(Self.path, F_OK) == 0 {
                // A socket nobody listens on (left by an earlier run) is replaced; a live
                // syslog daemon's is left alone.
                let probe = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
                let refused = connected != 0 && errno == ECONNREFUSED
                close(probe)
                guard refused else {
                    close(fd)
                    return nil
                }
                unlink(Self.path)
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0 else { close(fd); return nil }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            unlink(Self.path)
        }

        func drain() -> [String] {
            var lines: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let got = recv(fd, &buffer, buffer.count, 0)
                if got <= 0 { break }
                lines.append(String(decoding: buffer[0..<got], as: UTF8.self))
            }
            return lines
        }
    }

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
