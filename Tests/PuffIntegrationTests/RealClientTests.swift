import Foundation
import Testing

// glibc's pseudo-terminal calls, which the Glibc module does not import (they need _XOPEN_SOURCE).
@_silgen_name("posix_openpt") private func posix_openpt(_ flags: Int32) -> Int32
@_silgen_name("grantpt") private func grantpt(_ fd: Int32) -> Int32
@_silgen_name("unlockpt") private func unlockpt(_ fd: Int32) -> Int32
@_silgen_name("ptsname_r") private func ptsname_r(_ fd: Int32, _ buffer: UnsafeMutablePointer<CChar>, _ size: Int) -> Int32

/// Real programs in front of the module: an OpenSSH server (keyboard-interactive through PAM)
/// driven by `ssh` under `sshpass`, and `su` run by an ordinary user. Nothing of the machine's
/// own configuration is touched: sshd runs from a symlink with its own name (Debian's sshd takes
/// its PAM service name from its program name) and its own config, host key and port on
/// 127.0.0.1; `su` reads a Puff service file bind-mounted over /etc/pam.d/su inside a private
/// mount namespace. The accounts, PAM files and processes are removed at the end.
@Suite(.serialized)
struct RealClientTests {
    static let right = "604917"

    /// A long-lived child (sshd, an ssh client) reaped by the test itself, with a bounded wait.
    final class Spawned {
        let pid: pid_t
        private(set) var status: Int32?

        /// Starts `arguments[0]` (an absolute path) with stdin from /dev/null and stdout and
        /// stderr appended to `log`.
        init(_ arguments: [String], log: String) throws {
            pid = try Child(arguments, stdout: .append(log), stderr: .same).start()
        }

        deinit { stop() }

        var isRunning: Bool {
            guard status == nil else { return false }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
            return status == nil
        }

        /// Waits for the child (up to `seconds`, then SIGKILL) and returns its raw wait status.
        @discardableResult
        func wait(atMost seconds: Double = 10) -> Int32 {
            let deadline = Date().addingTimeInterval(seconds)
            while isRunning && Date() < deadline { usleep(20_000) }
            if isRunning {
                kill(pid, SIGKILL)
                var raw: Int32 = 0
                waitpid(pid, &raw, 0)
                status = raw
            }
            return status ?? -1
        }

        /// SIGTERM, then waits (SIGKILL after 5 s).
        func stop() {
            guard isRunning else { return }
            kill(pid, SIGTERM)
            wait(atMost: 5)
        }
    }

    /// A throwaway account with a shell (sshd and su run the user's shell) and the password field
    /// `*` (no password works, and the account is not locked). Deleted on deinit.
    final class ShellUser {
        let name: String
        let uid: UInt32
        let gid: UInt32

        init(_ role: String) throws {
            name = "puff-rc-" + role + "-" + String(UInt32.random(in: 0x100000...0xffffff), radix: 16)
            try Hermetic.addAccount(name, ["--system", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh", "--password", "*"])
            guard let entry = getpwnam(name) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "useradd \(name): no entry"])
            }
            uid = entry.pointee.pw_uid
            gid = entry.pointee.pw_gid
        }

        deinit { Hermetic.removeAccount(name) }
    }

    /// An sshd of its own: `<fixture>/sshd-puff-XXXX` → /usr/sbin/sshd, /etc/pam.d/sshd-puff-XXXX
    /// with the module, a fresh host key, a free port on 127.0.0.1. Stopped and removed on deinit.
    /// `launcher` (absolute path first) runs before sshd and must end by exec'ing its arguments
    /// (for example `unshare` and a shell that mounts a store), so the daemon keeps its pid.
    final class PrivateSSHServer {
        let fixture: Fixture
        let service: String
        let port: Int
        var daemon: Spawned?
        var pamFile: String { "/etc/pam.d/" + service }
        var log: String { (try? String(contentsOfFile: fixture.root + "/sshd.log", encoding: .utf8)) ?? "" }

        /// `authStack`, when given, replaces the single Puff auth line of the service file.
        init(_ fixture: Fixture, moduleArguments: String, launcher: [String] = [], authStack: String? = nil) throws {
            self.fixture = fixture
            service = "sshd-puff-" + String(UInt32.random(in: 0x100000...0xffffff), radix: 16)
            port = try Self.freePort()
            // /run/sshd is the empty privilege-separation directory the package's service
            // creates at start; sshd refuses to run without it. It is left in place.
            mkdir("/run/sshd", 0o755)
            let keygen = try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", fixture.root + "/host_key"])
            guard keygen.status == 0 else { throw CocoaError(.fileWriteUnknown) }
            try fixture.write(fixture.root + "/sshd_config", """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(fixture.root)/host_key
                PidFile \(fixture.root)/sshd.pid
                UsePAM yes
                KbdInteractiveAuthentication yes
                PasswordAuthentication no
                PubkeyAuthentication no
                AuthenticationMethods keyboard-interactive
                PermitRootLogin no
                PrintMotd no
                LoginGraceTime 60

                """, mode: 0o600)
            let auth = authStack ?? "auth required \(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay \(moduleArguments)\n"
            try fixture.write(pamFile, """
                \(auth)account required pam_permit.so
                session required pam_permit.so

                """, mode: 0o644)
            let program = fixture.root + "/" + service
            try FileManager.default.createSymbolicLink(atPath: program, withDestinationPath: "/usr/sbin/sshd")
            let daemon = try Spawned(launcher + [program, "-D", "-e", "-f", fixture.root + "/sshd_config"], log: fixture.root + "/sshd.log")
            self.daemon = daemon
            // Bounded start-up: the port must accept within 15 s.
            let deadline = Date().addingTimeInterval(15)
            while !Self.accepts(port) {
                guard daemon.isRunning, Date() < deadline else {
                    stop()
                    throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "sshd did not start: \(log)"])
                }
                usleep(50_000)
            }
        }

        deinit { stop() }

        func stop() {
            daemon?.stop()
            daemon = nil
            unlink(pamFile)
        }

        static func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { throw CocoaError(.fileWriteUnknown) }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        static func accepts(_ port: Int) -> Bool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }

        /// The client's arguments after `sshpass`: one keyboard-interactive round, no host-key
        /// bookkeeping, no user or system client configuration.
        func clientArguments(_ user: String, command: String) -> [String] {
            ["/usr/bin/ssh", "-F", "/dev/null", "-o", "PreferredAuthentications=keyboard-interactive",
             "-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=10",
             "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null",
             "-o", "LogLevel=ERROR", "-p", String(port), user + "@127.0.0.1", command]
        }

        /// `sshpass` answers the module's prompt ("…asscode…" in the current and the contracted
        /// prompt texts) with `passcode`; bounded to 60 s.
        func login(_ user: String, _ passcode: String, command: String = "echo puff-ssh-ok $(id -un)",
                   prompt: String = "asscode") throws -> Run {
            try run("/usr/bin/timeout", ["60", "/usr/bin/sshpass", "-P", prompt, "-p", passcode]
                    + clientArguments(user, command: command))
        }
    }

    /// The raw failure count in the counter file, read without its lock (status would wait for
    /// an attempt in progress to finish).
    static func rawFailures(_ fixture: Fixture, _ user: String) -> Int? {
        RawCounter.failures(atPath: fixture.state + "/" + user)
    }

    // MARK: OpenSSH

    @Test func sshRightPasscodeLogsInAndWrongIsRefused() throws {
        let user = try ShellUser("ssh")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user.name, Self.right).status == 0)
        let server = try PrivateSSHServer(fixture, moduleArguments: "deny=5")

        let accepted = try server.login(user.name, Self.right)
        #expect(accepted.status == 0, "\(accepted.output)\(accepted.errors)\n\(server.log)")
        #expect(accepted.lines.contains("puff-ssh-ok \(user.name)"), "\(accepted.output)")
        #expect(try fixture.failures(user.name) == 0)

        let refused = try server.login(user.name, "111333")
        #expect(refused.status != 0)
        #expect(!refused.output.contains("puff-ssh-ok"))
        #expect(refused.errors.contains("Permission denied"), "\(refused.errors)")
        #expect(try fixture.failures(user.name) == 1)
        #expect(server.log.contains("Accepted keyboard-interactive/pam for \(user.name)"), "\(server.log)")
    }

    @Test func sshLockoutHoldsAcrossConnections() throws {
        let user = try ShellUser("ssh")
        let fixture = try Fixture()
        #expect(try fixture.enroll(user.name, Self.right).status == 0)
        let server = try PrivateSSHServer(fixture, moduleArguments: "deny=2 unlock_time=0")
        for expected in 1...2 {
            let wrong = try server.login(user.name, "111333")
            #expect(wrong.status != 0)
            #expect(try fixture.failures(user.name) == expected)
        }
        // The third connection, with the right passcode, is refused: the user is locked.
        let locked = try server.login(user.name, Self.right)
        #expect(locked.status != 0, "\(locked.output)")
        #expect(!locked.output.contains("puff-ssh-ok"))
        let status = try fixture.status(user.name)
        #expect(status["failures"] as? Int == 2)
        #expect(status["locked"] as? Bool == true)
        // An administrator's reset lets the right passcode in again.
        #expect(try run(Artefacts.enroll, ["reset", "--user", user.name] + fixture.storeArguments).status == 0)
        let after = try server.login(user.name, Self.right)
        #expect(after.lines.contains("puff-ssh-ok \(user.name)"), "\(after.output)\(after.errors)")
    }

    @Test func sshClientKilledDuringVerificationLeavesTheAttemptCounted() throws {
        let user = try ShellUser("ssh")
        // A slow hash (8 passes over 256 MiB: seconds here) so the client can be killed while
        // the module verifies.
        let fixture = try Fixture(config: "kdf_ops = 8\nkdf_mem_kib = 262144\n")
        #expect(try fixture.enroll(user.name, Self.right).status == 0)
        let server = try PrivateSSHServer(fixture, moduleArguments: "deny=5")

        let started = Date()
        let client = try Spawned(["/usr/bin/sshpass", "-P", "asscode", "-p", "111333"]
                                 + server.clientArguments(user.name, command: "true"), log: fixture.root + "/client.log")
        // The module writes the failure before argon2id starts: wait for it, then kill the client.
        while Self.rawFailures(fixture, user.name) != 1 && client.isRunning && Date().timeIntervalSince(started) < 30 {
            usleep(10_000)
        }
        #expect(client.isRunning, "the client finished before it could be killed")
        #expect(Self.rawFailures(fixture, user.name) == 1)
        // sshpass puts ssh in its own session: kill ssh (its child) and sshpass itself.
        #expect(try run("/usr/bin/pkill", ["-KILL", "-P", String(client.pid)]).status == 0, "ssh was not running")
        kill(client.pid, SIGKILL)
        client.wait()
        // sshd's connection handler outlives the client: the verification is still running
        // (it holds no lock any more, issue 11, so `status` no longer has to wait for it).
        usleep(300_000)
        let daemon = try #require(server.daemon?.pid)
        #expect(try run("/usr/bin/pgrep", ["-P", String(daemon)]).status == 0, "the verification had already ended")
        let killed = Date()
        while try run("/usr/bin/pgrep", ["-P", String(daemon)]).status == 0 && Date().timeIntervalSince(killed) < 60 {
            usleep(100_000)
        }
        #expect(try fixture.failures(user.name) == 1)
        #expect(!server.log.contains("Accepted"), "\(server.log)")
        // The right passcode still logs in and clears the count.
        let after = try server.login(user.name, Self.right)
        #expect(after.lines.contains("puff-ssh-ok \(user.name)"), "\(after.output)\(after.errors)")
        #expect(try fixture.failures(user.name) == 0)
    }

    // MARK: su

    /// Runs `arguments` on a new pseudo-terminal (stdin, stdout and stderr, in a new session),
    /// types `answer` and a newline once the output shows a prompt containing "asscode" (the
    /// module's prompt, current and contracted), and returns the exit status and everything
    /// the terminal showed. Bounded by `seconds`; the child is killed after that.
    static func onTerminal(_ arguments: [String], answer: String, seconds: Double = 60) throws -> (status: Int32, output: String) {
        try onTerminal(arguments, answers: [("asscode", answer)], seconds: seconds)
    }

    /// `onTerminal` answering several prompts in turn: each answer is typed once the output
    /// after the previous answer contains its (lowercase) prompt text.
    static func onTerminal(_ arguments: [String], answers: [(prompt: String, answer: String)],
                           seconds: Double = 60) throws -> (status: Int32, output: String) {
        let master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 128)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, ptsname_r(master, &name, name.count) == 0 else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no pseudo-terminal"])
        }
        defer { close(master) }
        _ = fcntl(master, F_SETFD, FD_CLOEXEC)
        let terminal = String(cString: name)
        // After setsid, opening the terminal makes it the child's controlling terminal.
        let child = try Child(arguments, stdin: .terminal(terminal), stdout: .same, stderr: .same, newSession: true).start()
        var output: [UInt8] = []
        var answered = 0
        var answeredAt = 0
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) >= 0 || errno == EINTR else { break }
            if descriptor.revents == 0 { continue }
            let got = read(master, &buffer, buffer.count)
            if got <= 0 { break }  // EIO: every end of the terminal is closed
            output += buffer[0..<got]
            if answered < answers.count,
               String(decoding: output[answeredAt...], as: UTF8.self).lowercased().contains(answers[answered].prompt) {
                usleep(50_000)
                _ = (answers[answered].answer + "\n").withCString { write(master, $0, strlen($0)) }
                answered += 1
                answeredAt = output.count
            }
        }
        var status: Int32 = 0
        if waitpid(child, &status, WNOHANG) == 0 {
            kill(child, SIGKILL)
            waitpid(child, &status, 0)
        }
        return (status, String(decoding: output, as: UTF8.self))
    }

    /// Runs `su TARGET -c …` as `caller` in a private mount namespace in which /etc/pam.d/su is
    /// the Puff service file, typing `passcode` at the prompt.
    static func su(as caller: ShellUser, to target: ShellUser, _ passcode: String, pamFile: String) throws -> (status: Int32, output: String) {
        try su(as: caller, to: target, answers: [("asscode", passcode)], pamFile: pamFile)
    }

    /// `su` answering several prompts in turn (see `onTerminal(_:answers:seconds:)`).
    static func su(as caller: ShellUser, to target: ShellUser, answers: [(prompt: String, answer: String)],
                   pamFile: String) throws -> (status: Int32, output: String) {
        let script = """
            mount --bind "$1" /etc/pam.d/su || exit 90
            exec setpriv --reuid="$2" --regid="$3" --init-groups -- /usr/bin/su "$4" -c 'echo puff-su-ok $(id -un)'
            """
        return try onTerminal(["/usr/bin/unshare", "--mount", "--propagation", "private", "--",
                               "/bin/sh", "-c", script, "sh", pamFile, String(caller.uid), String(caller.gid), target.name],
                              answers: answers)
    }

    @Test func suByAnOrdinaryUserWithTheTargetsPasscode() throws {
        let caller = try ShellUser("caller")
        let target = try ShellUser("target")
        let fixture = try Fixture(moduleArguments: "deny=5")
        #expect(try fixture.enroll(target.name, Self.right).status == 0)
        let pamFile = fixture.root + "/su"
        try fixture.write(pamFile, """
            auth required \(Artefacts.module) dir=\(fixture.etc) state_dir=\(fixture.state) conf=\(fixture.conf) nodelay deny=5 helper=\(Artefacts.helper)
            account required pam_permit.so
            session required pam_permit.so

            """, mode: 0o644)
        let hostSu = try Data(contentsOf: URL(fileURLWithPath: "/etc/pam.d/su"))

        let accepted = try Self.su(as: caller, to: target, Self.right, pamFile: pamFile)
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.output.lowercased().contains("asscode"), "no Puff prompt: \(accepted.output)")
        // su to another account is discreet: the prompt names no keypad (issue 11, item 9).
        #expect(accepted.output.contains("Puff passcode or gesture: "), "\(accepted.output)")
        #expect(!accepted.output.contains("6 digits"), "\(accepted.output)")
        #expect(accepted.output.contains("puff-su-ok \(target.name)"), "\(accepted.output)")
        #expect(try fixture.failures(target.name) == 0)

        let refused = try Self.su(as: caller, to: target, "111333", pamFile: pamFile)
        #expect(refused.status != 0)
        #expect(!refused.output.contains("puff-su-ok"))
        #expect(refused.output.contains("Authentication failure"), "\(refused.output)")
        #expect(refused.output.contains("Puff: not accepted (a wrong passcode, or too many failed attempts)."), "\(refused.output)")
        #expect(try fixture.failures(target.name) == 1)

        // The machine's own su configuration was never changed, and no mount is left behind.
        #expect(try Data(contentsOf: URL(fileURLWithPath: "/etc/pam.d/su")) == hostSu)
        let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        #expect(!mounts.contains("/etc/pam.d/su"))
    }
}
