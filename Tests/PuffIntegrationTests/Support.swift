import Foundation
import Testing

/// PAM return codes as Linux-PAM defines them (pam/_pam_types.h).
enum PAMCode {
    static let success: Int32 = 0
    static let serviceError: Int32 = 3
    static let systemError: Int32 = 4
    static let authError: Int32 = 7
    static let authInfoUnavailable: Int32 = 9
    static let conversationError: Int32 = 19
    static let ignore: Int32 = 25
}

/// Where the built artefacts are: `make test` exports PUFF_MODULE, PUFF_LDAP_LIBRARY and PUFF_BIN; a bare
/// `swift test` falls back to the usual build locations.
enum Artefacts {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static var module: String {
        ProcessInfo.processInfo.environment["PUFF_MODULE"] ?? repository.appendingPathComponent("build/pam_puff.so").path
    }
    static var binaries: String {
        ProcessInfo.processInfo.environment["PUFF_BIN"] ?? repository.appendingPathComponent(".build/debug").path
    }
    /// Fleet mode's LDAP client, which the module and the helper load (`ldap_library`).
    static var ldapLibrary: String {
        ProcessInfo.processInfo.environment["PUFF_LDAP_LIBRARY"] ?? repository.appendingPathComponent("build/puff-ldap.so").path
    }
    /// Tpm mode's TPM client, which the helper loads (`tpm_library`).
    static var tpmLibrary: String {
        ProcessInfo.processInfo.environment["PUFF_TPM_LIBRARY"] ?? repository.appendingPathComponent("build/puff-tpm.so").path
    }
    static var harness: String { binaries + "/puff-pam-harness" }
    static var enroll: String { binaries + "/puff-enroll" }
    /// The helper as `make helper` builds it (`make test` exports PUFF_HELPER).
    static var helper: String {
        ProcessInfo.processInfo.environment["PUFF_HELPER"] ?? repository.appendingPathComponent("build/puff-check").path
    }
    /// Where the tests make their temp directories: the run's own directory (PUFF_TEST_TMPDIR,
    /// set by scripts/hermetic.sh, which fails the run when anything is left in it), else /tmp.
    static var temporary: String {
        ProcessInfo.processInfo.environment["PUFF_TEST_TMPDIR"] ?? "/tmp"
    }
}

/// What a discreet service (a root-run one whose caller is not the user: sshd, login, su to
/// another account) shows every account: one prompt, and one message per kind of reply.
enum Discreet {
    static let prompt = "PROMPT echo-off Puff passcode or gesture: "
    static let passcodeRefused = "ERROR Puff: not accepted (a wrong passcode, or too many failed attempts)."
    static let gestureRefused = "ERROR Puff: not accepted (a wrong gesture, too many failed attempts, or only the passcode is accepted now)."
}

/// What a finished process left.
struct Run {
    var status: Int32
    var output: String
    var errors: String
    var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// A throwaway Puff installation: a record directory, a state directory and a PAM service
/// directory in a fresh temp dir, with the minimum argon2id cost so tests are fast.
final class Fixture {
    let root: String
    var etc: String { root + "/etc" }
    var state: String { root + "/state" }
    var pamDirectory: String { root + "/pam.d" }
    var conf: String { etc + "/puff.conf" }

    init(config: String = "kdf_ops = 1\nkdf_mem_kib = 8\n", moduleArguments: String = "") throws {
        var template = Array("\(Artefacts.temporary)/puff-it-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
        for directory in [etc, state, pamDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        chmod(root, 0o755)
        try write(conf, config, mode: 0o600)
        try service(moduleArguments)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes the `puff-test` service file with the module by absolute path.
    func service(_ extra: String, name: String = "puff-test", control: String = "required") throws {
        // helper=: fleet mode runs in the helper's service calls.
        let line = "auth \(control) \(Artefacts.module) dir=\(etc) state_dir=\(state) conf=\(conf) nodelay "
            + "helper=\(Artefacts.helper) \(extra)\n"
            + "account required \(Artefacts.module)\n"
        try write(pamDirectory + "/" + name, line, mode: 0o644)
    }

    func write(_ path: String, _ text: String, mode: Int) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode_t(mode))
    }

    var storeArguments: [String] { ["--dir", etc, "--state-dir", state, "--conf", conf] }

    /// Enrolls through the real `puff-enroll --stdin`.
    @discardableResult
    func enroll(_ user: String, _ passcode: String, type: String = "digits6", extra: [String] = []) throws -> Run {
        try run(Artefacts.enroll, ["passcode", "--user", user, "--type", type, "--stdin"] + extra + storeArguments,
                input: passcode + "\n")
    }

    /// One `pam_authenticate` through real libpam with a scripted conversation. By default the
    /// real uid is root's, as in sshd or login (a discreet service: the same prompt and
    /// messages for every account); `bySelf` makes it the user's own, as in su or sudo to
    /// oneself, where the keypad and the lock state are shown.
    @discardableResult
    func authenticate(_ user: String, replies: [String] = [], extra: [String] = [], service: String = "puff-test",
                      bySelf: Bool = false) throws -> Run {
        var arguments = ["--confdir", pamDirectory, "--service", service, "--user", user]
        for reply in replies { arguments += ["--reply", reply] }
        if bySelf, let entry = getpwnam(user) { arguments += ["--caller", String(entry.pointee.pw_uid)] }
        return try run(Artefacts.harness, arguments + extra)
    }

    /// `puff-enroll status --json --user U`, parsed.
    func status(_ user: String) throws -> [String: Any] {
        let result = try run(Artefacts.enroll, ["status", "--json", "--user", user] + storeArguments)
        let parsed = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]]
        return try #require(parsed?.first, "status output: \(result.output) \(result.errors)")
    }

    func failures(_ user: String) throws -> Int {
        try #require(try status(user)["failures"] as? Int)
    }
}

/// The suite's accounts, passwords and PAM services exist only in the private copy of /etc that
/// `make test` runs it in (scripts/hermetic.sh: copy-on-write overlays of /etc, /var/lib and
/// /var/log in a private mount namespace). Adding an account anywhere else would leave it on
/// the machine, so that is refused, loudly.
enum Hermetic {
    /// Throws unless this process runs inside scripts/hermetic.sh's namespace, checked in the
    /// mount table itself (an environment variable alone could be inherited by mistake).
    static func requirePrivateEtc() throws {
        let mounts = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER
        let privateEtc = mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == "/etc", let dash = fields.firstIndex(of: "-"),
                  dash + 2 < fields.count else { return false }
            return fields[dash + 1] == "overlay" && fields[dash + 2] == "puff-etc"
        }
        guard privateEtc, ProcessInfo.processInfo.environment["PUFF_HERMETIC"] == "1" else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey:
                "refusing to add an account to this machine's /etc: run the suite with `make test` (scripts/hermetic.sh)"])
        }
    }

    /// Held for writing while `useradd`/`userdel` rewrite the suite's /etc/passwd and
    /// /etc/shadow, for reading while a test's namespace has a file bind-mounted over one of
    /// them: those tools replace the files by rename, and a rename in the suite's /etc detaches
    /// a bind mount made on the old file in a child namespace (UnprivilegedTests caught it).
    static let systemFiles = ReadWriteLock()

    /// Runs `useradd` with `arguments` (retried briefly: useradd refuses while another holds
    /// the passwd lock) inside the private /etc.
    static func addAccount(_ name: String, _ arguments: [String]) throws {
        try requirePrivateEtc()
        systemFiles.lockForWriting()
        defer { systemFiles.unlock() }
        var result = Run(status: 1, output: "", errors: "")
        for _ in 0..<20 {
            result = try run("/usr/sbin/useradd", arguments + [name])
            if result.status == 0 || getpwnam(name) != nil { return }
            usleep(200_000)
        }
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "useradd \(name): \(result.errors)"])
    }

    /// Sets `name`'s password with `chpasswd` inside the private /etc, under the same lock as
    /// `addAccount`: chpasswd replaces /etc/shadow by rename, which would detach a stage's bind
    /// mount of its own shadow copy (UnprivilegedTests.Stage.runAs) made meanwhile.
    static func setPassword(_ name: String, _ password: String) throws -> Run {
        try requirePrivateEtc()
        systemFiles.lockForWriting()
        defer { systemFiles.unlock() }
        return try run("/usr/sbin/chpasswd", [], input: "\(name):\(password)\n")
    }

    /// Removes an account the suite added (the private /etc vanishes with the run anyway; a
    /// test that is done with an account says so).
    static func removeAccount(_ name: String) {
        systemFiles.lockForWriting()
        defer { systemFiles.unlock() }
        for _ in 0..<20 {
            if (try? run("/usr/sbin/userdel", [name]))?.status == 0 || getpwnam(name) == nil { return }
            usleep(200_000)
        }
    }
}

/// A pthread reader-writer lock shared by the tests of one run.
final class ReadWriteLock: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(lock, nil) }
    func lockForReading() { pthread_rwlock_rdlock(lock) }
    func lockForWriting() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}

/// Ordinary accounts for the tests, made in the suite's private /etc on first use and shared
/// by the tests of one run.
enum TestUsers {
    static func ensure(_ name: String) throws -> String {
        if getpwnam(name) == nil {
            try Hermetic.addAccount(name, ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin"])
        }
        return name
    }
}

/// What the module writes to syslog, captured on a `/dev/log` socket the test binds (the test
/// machine runs no syslog daemon).
///
/// A reader thread empties the socket all the time: the kernel queues only a few datagrams
/// per socket (`net.unix.max_dgram_qlen`, 10 by default), and every process that logs blocks
/// while the queue is full, including the one the test is waiting for. Only one capture can
/// own `/dev/log`; a new one waits for another test (or another test run on the machine) to
/// release it, and gives up (`nil`) when a live syslog daemon keeps it.
final class SyslogCapture: @unchecked Sendable {
    static let path = "/dev/log"

    private final class Buffer: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        var stop = false
        let finished = DispatchSemaphore(value: 0)
    }

    let fd: Int32
    private let buffer = Buffer()

    init?(waitingAtMost seconds: Double = 180) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in Self.path.utf8.enumerated() { raw[index] = byte }
        }
        func call(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        let deadline = Date().addingTimeInterval(seconds)
        var bound: Int32 = -1
        while bound < 0 {
            let socketFD = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            guard socketFD >= 0 else { return nil }
            if access(Self.path, F_OK) == 0 {
                // A socket nobody listens on (left by an earlier run) is replaced; one that is
                // live belongs to another capture (wait) or a syslog daemon (wait, then give up).
                let probe = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
                let connected = call { connect(probe, $0, $1) }
                let refused = connected != 0 && errno == ECONNREFUSED
                close(probe)
                if refused { unlink(Self.path) }
            }
            if call({ bind(socketFD, $0, $1) }) == 0 {
                bound = socketFD
            } else {
                close(socketFD)
                guard Date() < deadline else { return nil }
                usleep(100_000)
            }
        }
        fd = bound
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let buffer = self.buffer, fd = self.fd
        let reader = Thread {
            var bytes = [UInt8](repeating: 0, count: 8192)
            while true {
                let got = recv(fd, &bytes, bytes.count, 0)
                buffer.lock.lock()
                if got > 0 { buffer.lines.append(String(decoding: bytes[0..<got], as: UTF8.self)) }
                let stop = buffer.stop
                buffer.lock.unlock()
                if stop && got <= 0 { break }
            }
            buffer.finished.signal()
        }
        reader.start()
    }

    deinit {
        buffer.lock.lock()
        buffer.stop = true
        buffer.lock.unlock()
        buffer.finished.wait()
        unlink(Self.path)
        close(fd)
    }

    /// The lines received so far (and not yet returned), once the socket's queue is empty.
    func drain() -> [String] {
        var available: Int32 = 1
        var quietChecks = 0
        let deadline = Date().addingTimeInterval(2)
        while quietChecks < 2 && Date() < deadline {
            usleep(20_000)
            available = 0
            _ = ioctl(fd, UInt(FIONREAD), &available)
            quietChecks = available == 0 ? quietChecks + 1 : 0
        }
        buffer.lock.lock()
        defer { buffer.lock.unlock() }
        let lines = buffer.lines
        buffer.lines = []
        return lines
    }
}
