import Foundation
import Testing

/// A software TPM (Debian's swtpm) on 127.0.0.1, started by the test with its state in a temp
/// directory and always stopped; its dictionary-attack parameters are set as a provisioned
/// machine's would be (a fresh swtpm locks after three bad authorizations).
final class SoftwareTPM {
    let directory: String
    let port: UInt16
    let pid: pid_t
    /// The TCTI the store names (`tpm_tcti`).
    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// swtpm's log of every command (`logging`), for counting them: `commands()`.
    var log: String { directory + "/log" }

    init(logging: Bool = false) throws {
        var template = Array("\(Artefacts.temporary)/puff-swtpm-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        directory = String(cString: made)
        var started: (UInt16, pid_t)?
        var problem = ""
        for _ in 1...5 where started == nil {
            // libtss2's swtpm TCTI finds the control channel at the server's port + 1.
            let server = try Self.freePort()
            guard server < UInt16.max, Self.isFree(server + 1) else { continue }
            let control = server + 1
            let run = try PuffIntegrationTests.run("/usr/bin/swtpm", [
                "socket", "--tpm2", "--tpmstate", "dir=\(directory)", "--flags", "not-need-init,startup-clear",
                "--server", "type=tcp,port=\(server),bindaddr=127.0.0.1",
                "--ctrl", "type=tcp,port=\(control),bindaddr=127.0.0.1",
                "--daemon", "--pid", "file=\(directory)/pid"] + (logging ? ["--log", "file=\(directory)/log,level=20"] : []))
            problem = run.errors
            guard run.status == 0, let text = try? String(contentsOfFile: directory + "/pid", encoding: .utf8),
                  let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { continue }
            started = (server, pid)
        }
        guard let (server, pid) = started else {
            try? FileManager.default.removeItem(atPath: directory)
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "swtpm did not start: \(problem)"])
        }
        port = server
        self.pid = pid
        let lockout = try tpm2("tpm2_dictionarylockout", ["-s", "-n", "32", "-t", "600", "-l", "600"])
        #expect(lockout.status == 0, "tpm2_dictionarylockout: \(lockout.errors)")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the simulator (its state stays until the object goes).
    func stop() {
        if kill(pid, SIGTERM) == 0 {
            for _ in 0..<200 where kill(pid, 0) == 0 { usleep(10_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
    }

    /// The command codes of the TPM commands swtpm has read since its log was last emptied
    /// (each is logged as `SWTPM_IO_Read: length N` and its bytes: tag, size, code).
    func commands() -> [UInt32] {
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        var codes: [UInt32] = []
        for (index, line) in lines.enumerated() where line.contains("SWTPM_IO_Read: length") && index + 1 < lines.count {
            let bytes = lines[index + 1].split(separator: " ")
            guard bytes.count >= 10, let code = UInt32(bytes[6..<10].joined(), radix: 16) else { continue }
            codes.append(code)
        }
        return codes
    }

    /// Empties swtpm's log.
    func clearLog() {
        _ = truncate(log, 0)
    }

    /// A tpm2-tools command against this TPM.
    func tpm2(_ tool: String, _ arguments: [String]) throws -> Run {
        try PuffIntegrationTests.run("/usr/bin/" + tool, arguments + ["-T", tcti])
    }

    /// TPM2_PT_LOCKOUT_COUNTER: the failed authorizations the dictionary-attack logic counted.
    func lockoutCounter() throws -> Int {
        let variable = try tpm2("tpm2_getcap", ["properties-variable"])
        let line = try #require(variable.lines.first { $0.hasPrefix("TPM2_PT_LOCKOUT_COUNTER:") }, "\(variable.output)")
        let value = line.split(separator: " ").last.map(String.init) ?? ""
        return try #require(Int(value.dropFirst(2), radix: 16), "\(line)")
    }

    /// Whether `port` on 127.0.0.1 can be bound now.
    static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A port on 127.0.0.1 that nothing listens on now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Child.error("socket", errno) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Child.error("bind", errno) }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// Tpm mode (issue 24, docs/admin/protection-at-rest.md): the host key sealed in a TPM, through real
/// libpam, the module, the helper's service calls and the setuid helper, against swtpm.
@Suite(.serialized)
struct TPMTests {
    static let passcode = "604917"

    /// A fixture whose puff.conf names `tpm`.
    static func fixture(_ tpm: SoftwareTPM, extra: String = "") throws -> Fixture {
        try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\n" + config(tpm) + extra)
    }

    static func config(_ tpm: SoftwareTPM, tcti: String? = nil) -> String {
        "tpm_tcti = \(tcti ?? tpm.tcti)\ntpm_library = \(Artefacts.tpmLibrary)\n"
    }

    /// `puff-enroll tpm forget`: the keys unsealed this boot dropped, as a reboot drops them
    /// (a TPM gone, cleared or measuring another PCR 7 is seen from the next unseal on).
    static func forgetUnsealedKeys() throws {
        let forgot = try run(Artefacts.enroll, ["tpm", "forget"])
        #expect(forgot.status == 0, "tpm forget: \(forgot.output) \(forgot.errors)")
    }

    static func tpmCommand(_ fixture: Fixture, _ arguments: [String]) throws -> Run {
        try run(Artefacts.enroll, ["tpm"] + arguments + fixture.storeArguments)
    }

    /// The enrolled files of the store, by name: what must survive every move of the key.
    static func records(_ fixture: Fixture) throws -> [String: Data] {
        var found: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.etc + "/users") {
            found[name] = try Data(contentsOf: URL(fileURLWithPath: fixture.etc + "/users/" + name))
        }
        return found
    }

    @Test func passcodeAndGestureLogInThroughLibpamWithTheKeyInTheTPM() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        try GestureLoginTests().enrolled(fixture, alice)
        #expect(try Self.tpmCommand(fixture, ["status"]).output == "file\n")

        let enable = try Self.tpmCommand(fixture, ["enable"])
        #expect(enable.status == 0, "\(enable.errors)")
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/host.key"))
        #expect(FileManager.default.fileExists(atPath: fixture.etc + "/host.key.tpm"))
        #expect(try Self.tpmCommand(fixture, ["status"]).output == "tpm\n")
        let status = try run(Artefacts.enroll, ["status"] + fixture.storeArguments)
        #expect(status.lines.contains { $0.hasPrefix("Key protection: tpm") }, "\(status.output)")

        let right = try fixture.authenticate(alice, replies: [Self.passcode])
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        let gesture = try fixture.authenticate(alice, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
        #expect(gesture.status == PAMCode.success, "\(gesture.output)")
        let wrong = try fixture.authenticate(alice, replies: ["111333"])
        #expect(wrong.status == PAMCode.authError)
        #expect(try fixture.failures(alice) == 1)
        // Enrolling in tpm mode uses the sealed key (no new clear key appears).
        #expect(try fixture.enroll(alice, "529174").status == 0)
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/host.key"))
        #expect(try fixture.authenticate(alice, replies: ["529174"]).status == PAMCode.success)
    }

    @Test func aWrongPasscodeNeverTouchesTheTPMsDictionaryAttackCounter() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm, extra: "deny = 100\n")
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        let before = try tpm.lockoutCounter()
        for guess in ["111111", "222222", "333333", "444444", "555555"] {
            #expect(try fixture.authenticate(alice, replies: [guess]).status == PAMCode.authError)
        }
        #expect(try fixture.failures(alice) == 5)
        #expect(try tpm.lockoutCounter() == before)
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
        // The probe is live: one bad authorization of a DA-protected NV index moves the counter.
        #expect(try tpm.tpm2("tpm2_nvdefine", ["0x1500016", "-C", "o", "-s", "8", "-a", "authread|authwrite", "-p", "right"]).status == 0)
        #expect(try tpm.tpm2("tpm2_nvread", ["0x1500016", "-P", "wrong", "-s", "8"]).status != 0)
        #expect(try tpm.lockoutCounter() == before + 1)
    }

    @Test func aCopyOfTheStoreBesideAnotherTPMCannotVerifyAnyPasscode() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)

        // The disk copied (cp -a of /etc/puff and /var/lib/puff) to a machine with another TPM,
        // one that even has a storage primary of its own at 0x81000001.
        let other = try SoftwareTPM()
        #expect(try other.tpm2("tpm2_createprimary", ["-C", "o", "-g", "sha256", "-G", "ecc", "-c", other.directory + "/primary.ctx"]).status == 0)
        #expect(try other.tpm2("tpm2_evictcontrol", ["-C", "o", "-c", other.directory + "/primary.ctx", "0x81000001"]).status == 0)
        let copy = try Fixture(config: "kdf_ops = 1\nkdf_mem_kib = 8\n" + Self.config(other))
        for (from, to) in [(fixture.etc, copy.etc), (fixture.state, copy.state)] {
            #expect(try run("/bin/cp", ["-a", from + "/.", to + "/"]).status == 0)
        }
        try copy.write(copy.conf, "kdf_ops = 1\nkdf_mem_kib = 8\n" + Self.config(other), mode: 0o600)
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        for reply in [Self.passcode, "111333", "000000"] {
            let login = try copy.authenticate(alice, replies: [reply])
            #expect(login.status == PAMCode.authInfoUnavailable, "\(reply): \(login.output)")
        }
        let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("TPM: ") }
        #expect(!lines.isEmpty, "no log line names the TPM")
        // Nothing was counted or verified: no guess is spent against the copy.
        #expect(try copy.failures(alice) == 0)
        // The first machine still works.
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
    }

    @Test func aTPMThatIsGoneFailsClosedAndThePasswordFallbackLogsIn() throws {
        let tpm = try SoftwareTPM()
        let user = try PasswordFallbackTests.userWithPassword("tp")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        try fixture.write(fixture.pamDirectory + "/puff-fallback",
                          try PasswordFallbackTests.shippedStack(fixture) + "account required pam_permit.so\n", mode: 0o644)
        #expect(try fixture.authenticate(user.name, replies: [Self.passcode], service: "puff-fallback").lines.last
                == "RESULT 0 Success")

        tpm.stop()
        try Self.forgetUnsealedKeys()  // as the next boot would
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        let alone = try fixture.authenticate(user.name, replies: [Self.passcode])
        #expect(alone.status == PAMCode.authInfoUnavailable, "\(alone.output)")
        let lines = capture.drain()
        #expect(lines.contains { $0.contains("puff-check[") && $0.contains("TPM: cannot reach the TPM at \(tpm.tcti)") },
                "\(lines)")
        // The password typed at Puff's prompt: Puff's line is skipped, pam_unix takes it.
        let fallback = try fixture.authenticate(user.name, replies: [PasswordFallbackTests.password], service: "puff-fallback")
        #expect(fallback.lines.last == "RESULT 0 Success", "\(fallback.output)")
        #expect(try fixture.failures(user.name) == 0)
    }

    @Test func enableDisableRoundTripKeepsEveryRecord() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice"), bob = try TestUsers.ensure("puff-it-bob")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try fixture.enroll(bob, "381946").status == 0)
        try GestureLoginTests().enrolled(fixture, bob)
        let key = try Data(contentsOf: URL(fileURLWithPath: fixture.etc + "/host.key"))
        let records = try Self.records(fixture)
        let backup = fixture.root + "/offline-backup.key"

        func everyoneLogsIn() throws {
            #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
            #expect(try fixture.authenticate(bob, replies: ["381946"]).status == PAMCode.success)
            #expect(try fixture.authenticate(bob, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)]).status == PAMCode.success)
        }
        for round in 1...2 {
            let enable = try Self.tpmCommand(fixture, ["enable"] + (round == 1 ? ["--backup", backup] : []))
            #expect(enable.status == 0, "\(enable.errors)")
            #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/host.key"))
            #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0, "enable twice is no error")
            try everyoneLogsIn()
            let disable = try Self.tpmCommand(fixture, ["disable"])
            #expect(disable.status == 0, "\(disable.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.etc + "/host.key")) == key)
            #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/host.key.tpm"))
            #expect(try Self.tpmCommand(fixture, ["status"]).output == "file\n")
            try everyoneLogsIn()
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: backup)) == key)
        #expect(try Self.records(fixture).keys == records.keys)
        // The object was evicted: nothing of Puff's is left in the TPM.
        let persistent = try tpm.tpm2("tpm2_getcap", ["handles-persistent"])
        #expect(!persistent.output.contains("0x81504601"), "\(persistent.output)")
        // A backup is never put beside the store.
        let refused = try Self.tpmCommand(fixture, ["enable", "--backup", fixture.etc + "/copy.key"])
        #expect(refused.status != 0)
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/copy.key"))
    }

    @Test func aClearedTPMIsRecoveredFromTheOfflineBackup() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        let backup = fixture.root + "/offline-backup.key"
        #expect(try Self.tpmCommand(fixture, ["enable", "--backup", backup]).status == 0)
        #expect(try tpm.tpm2("tpm2_clear", ["-c", "p"]).status == 0)
        try Self.forgetUnsealedKeys()  // as the next boot would
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
        #expect(try Self.tpmCommand(fixture, ["disable"]).status != 0, "the TPM cannot give the key back")
        // A wrong backup is refused; the right one restores file mode.
        try fixture.write(fixture.root + "/wrong.key", String(repeating: "x", count: 32), mode: 0o600)
        #expect(try Self.tpmCommand(fixture, ["disable", "--restore", fixture.root + "/wrong.key"]).status != 0)
        let restored = try Self.tpmCommand(fixture, ["disable", "--restore", backup])
        #expect(restored.status == 0, "\(restored.errors)")
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
        // And into the new TPM again.
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
    }

    @Test func theSameStoreWorksThroughAnotherTCTIToTheSameTPM() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        // Other spellings of the way there (a host name instead of the address, the TCTI's
        // default host): the object is found by its handle and checked by its name and the
        // primary's key, not by the string it was sealed through.
        for tcti in ["swtpm:host=localhost,port=\(tpm.port)", "swtpm:port=\(tpm.port)"] {
            try fixture.write(fixture.conf, "kdf_ops = 1\nkdf_mem_kib = 8\n" + Self.config(tpm, tcti: tcti), mode: 0o600)
            let login = try fixture.authenticate(alice, replies: [Self.passcode])
            #expect(login.status == PAMCode.success, "\(tcti): \(login.output)")
        }
    }

    @Test func pcr7BindingFailsClosedWhenTheBootStateChanges() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable", "--pcr7"]).status == 0)
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try tpm.tpm2("tpm2_pcrextend", ["7:sha256=" + String(repeating: "ab", count: 32)]).status == 0)
        try Self.forgetUnsealedKeys()  // as the next boot would
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
        #expect(capture.drain().contains { $0.contains("PCR 7") }, "no log line names PCR 7")
        #expect(try fixture.failures(alice) == 0)
    }

    @Test func anOrdinaryUserLogsInThroughTheSetuidHelper() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let stage = try UnprivilegedTests.Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\n" + Self.config(tpm))
        #expect(try stage.fixture.enroll(alice, Self.passcode).status == 0)
        try GestureLoginTests().enrolled(stage.fixture, alice)
        #expect(try Self.tpmCommand(stage.fixture, ["enable"]).status == 0)
        let right = try stage.authenticate(as: alice, replies: [Self.passcode])
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        let gesture = try stage.authenticate(as: alice, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
        #expect(gesture.status == PAMCode.success, "\(gesture.output)")
        #expect(try stage.authenticate(as: alice, replies: ["111333"]).status == PAMCode.authError)
        tpm.stop()
        try Self.forgetUnsealedKeys()  // as the next boot would
        let gone = try stage.authenticate(as: alice, replies: [Self.passcode])
        #expect(gone.status == PAMCode.authInfoUnavailable, "\(gone.output)")
    }

    /// One login through the harness traced with strace: its PAM code, the paths opened
    /// (openat, whole: `-y` names the directory a store file is opened in) and the programs
    /// executed, by every process of it.
    static func tracedLogin(_ fixture: Fixture, _ user: String, _ reply: String) throws
        -> (status: Int32, opened: [String], executed: [String]) {
        let trace = fixture.root + "/trace"
        let login = try run("/usr/bin/strace", ["-f", "-qq", "-y", "-e", "trace=openat,execve", "-o", trace, Artefacts.harness,
                                                "--confdir", fixture.pamDirectory, "--service", "puff-test",
                                                "--user", user, "--reply", reply])
        var opened: [String] = [], executed: [String] = []
        for line in try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n") {
            // `openat(5</tmp/x/etc>, "host.key", ...`, `openat(AT_FDCWD</>, "/etc/...", ...`, `execve("/bin/x", ...`
            guard let call = line.range(of: " openat(") ?? line.range(of: " execve(") else { continue }
            let rest = line[call.upperBound...]
            guard let open = rest.range(of: "\""), let close = rest[open.upperBound...].range(of: "\"") else { continue }
            let name = String(rest[open.upperBound..<close.lowerBound])
            if line[call].contains("execve") {
                executed.append(name)
                continue
            }
            var directory = ""
            if let less = rest.range(of: "<"), less.lowerBound < open.lowerBound,
               let greater = rest[less.upperBound...].range(of: ">"), greater.lowerBound < open.lowerBound {
                directory = String(rest[less.upperBound..<greater.lowerBound])
            }
            opened.append(name.hasPrefix("/") || directory.isEmpty ? name : directory + "/" + name)
        }
        return (login.status, opened, executed)
    }

    /// Lean when off (issue 24): a file-mode login asks nothing about tpm mode (no openat of
    /// `host.key.tpm`, no helper); tpm mode is found where the attempt reads `host.key`, and the
    /// attempt, counted once, goes to the helper, for enrolled and unknown accounts alike.
    @Test func fileModeLooksForNoSealedKeyAndTPMModeIsFoundAtTheKeysRead() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice"), nobody = try TestUsers.ensure("puff-it-bob")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        let sealed = fixture.etc + "/host.key.tpm", clear = fixture.etc + "/host.key"
        for (user, reply, code) in [(alice, Self.passcode, PAMCode.success), (alice, "111333", PAMCode.authError),
                                    (nobody, "111333", PAMCode.authError)] {
            let login = try Self.tracedLogin(fixture, user, reply)
            #expect(login.status == code, "\(user) \(reply)")
            // The probe sees the store: the key was read, in this process, and nothing else.
            #expect(login.opened.contains(clear), "\(login.opened)")
            #expect(!login.opened.contains(sealed), "file mode looked for a sealed key: \(user) \(reply)")
            #expect(!login.executed.contains(Artefacts.helper), "file mode started the helper")
        }
        #expect(try fixture.failures(alice) == 1)

        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        for (user, reply, code) in [(alice, Self.passcode, PAMCode.success), (alice, "111333", PAMCode.authError),
                                    (nobody, "111333", PAMCode.authError)] {
            let login = try Self.tracedLogin(fixture, user, reply)
            #expect(login.status == code, "\(user) \(reply)")
            #expect(login.opened.contains(sealed), "\(login.opened)")
            // An account without a record is refused by the helper too (the TPM unseals for
            // it as for everyone): a discreet service's refusals cost the same.
            #expect(login.executed.contains(Artefacts.helper), "tpm mode did not start the helper: \(user) \(reply)")
        }
        // The wrong passcode was counted once (the attempt is handed over before any count).
        #expect(try fixture.failures(alice) == 1)
        // A name that is no user name is no account: refused as not enrolled, as in file mode,
        // without the helper (not PAM_AUTHINFO_UNAVAIL, and no TPM error in the log).
        let invalid = try Self.tracedLogin(fixture, "no/such:name", "111333")
        #expect(invalid.status == PAMCode.authError)
        #expect(!invalid.executed.contains(Artefacts.helper))
    }

    /// The failure handed to the helper is taken back by the `authsucc` line after the password
    /// module (the shipped "Puff, else the password" stack), through the helper too.
    @Test func aPasswordTypedAtPuffsPromptIsTakenBackInTPMMode() throws {
        let tpm = try SoftwareTPM()
        let user = try PasswordFallbackTests.userWithPassword("tq")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        try fixture.write(fixture.pamDirectory + "/puff-fallback",
                          try PasswordFallbackTests.shippedStack(fixture) + "account required pam_permit.so\n", mode: 0o644)
        #expect(try fixture.authenticate(user.name, replies: ["111333"]).status == PAMCode.authError)
        #expect(try fixture.failures(user.name) == 1)
        // Written once, by the helper that counted it (the module writes no history for an
        // attempt it handed over).
        #expect((try fixture.status(user.name)["recent_failures"] as? [[String: Any]])?.count == 1)
        let fallback = try fixture.authenticate(user.name, replies: [PasswordFallbackTests.password], service: "puff-fallback")
        #expect(fallback.lines.last == "RESULT 0 Success", "\(fallback.output)")
        #expect(try fixture.failures(user.name) == 1, "the password's own attempt was taken back, the earlier failure stays")
        #expect(try fixture.authenticate(user.name, replies: [Self.passcode], service: "puff-fallback").lines.last
                == "RESULT 0 Success")
        #expect(try fixture.failures(user.name) == 0)
    }

    /// `keyring = yes` in tpm mode: the copy is kept (sealing needs only the public key); the
    /// module, which has no TPM code, hands the passcode login to the helper, which derives the
    /// key with the unsealed store key, opens the copy and sends the password after its report
    /// (issue 33; before, nothing was released in tpm mode and the passcode went on).
    @Test func inTPMModeTheCopyIsKeptAndTheHelperReleasesIt() throws {
        let tpm = try SoftwareTPM()
        let user = try PasswordFallbackTests.userWithPassword("tk")
        let fixture = try Self.fixture(tpm, extra: "keyring = yes\n")
        #expect(try fixture.enroll(user.name, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        let seen = fixture.root + "/seen"
        try fixture.write(fixture.root + "/probe.sh", "#!/bin/sh\ncat > \"$1\"\n", mode: 0o755)
        try fixture.write(fixture.pamDirectory + "/puff-fallback", try PasswordFallbackTests.shippedStack(fixture)
                          + "auth optional pam_exec.so quiet expose_authtok \(fixture.root)/probe.sh \(seen)\n"
                          + "account required pam_permit.so\n", mode: 0o644)
        let password = try fixture.authenticate(user.name, replies: [PasswordFallbackTests.password], service: "puff-fallback")
        #expect(password.lines.last == "RESULT 0 Success", "\(password.output)")
        let copy = try String(contentsOfFile: fixture.etc + "/keyring/" + user.name, encoding: .utf8)
        #expect(copy.hasPrefix("puff-keyring 1\n") && !copy.contains(PasswordFallbackTests.password))
        try? FileManager.default.removeItem(atPath: seen)
        let passcode = try fixture.authenticate(user.name, replies: [Self.passcode], service: "puff-fallback")
        #expect(passcode.lines.last == "RESULT 0 Success", "\(passcode.output)")
        #expect((try? String(contentsOfFile: seen, encoding: .utf8)) == PasswordFallbackTests.password)
        // A wrong passcode goes on to pam_unix, which refuses it: nothing of the copy.
        try? FileManager.default.removeItem(atPath: seen)
        let wrong = try fixture.authenticate(user.name, replies: ["111333"], service: "puff-fallback")
        #expect(wrong.lines.last == "RESULT 7 Authentication failure", "\(wrong.output)")
        #expect((try? String(contentsOfFile: seen, encoding: .utf8)) != PasswordFallbackTests.password)
    }

    /// The module takes `tpm_*` values as they are and never uses them; the helper checks them
    /// where it talks to the TPM. A bad one fails closed in tpm mode, naming the key, and
    /// changes nothing in file mode, for the module and the helper alike.
    @Test func aBadTPMSettingFailsClosedInTPMModeAndIsUnusedInFileMode() throws {
        let tpm = try SoftwareTPM()
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        let bad = "kdf_ops = 1\nkdf_mem_kib = 8\ntpm_tcti = \(tpm.tcti)\ntpm_library = relative/puff-tpm.so\n"
        try fixture.write(fixture.conf, bad, mode: 0o600)
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status != 0, "enable with a bad tpm_library")
        #expect(FileManager.default.fileExists(atPath: fixture.etc + "/host.key"))

        try fixture.write(fixture.conf, "kdf_ops = 1\nkdf_mem_kib = 8\n" + Self.config(tpm), mode: 0o600)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        try fixture.write(fixture.conf, bad, mode: 0o600)
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        let login = try fixture.authenticate(alice, replies: [Self.passcode])
        #expect(login.status != PAMCode.success && login.status != PAMCode.authError, "\(login.output)")
        #expect(capture.drain().contains { $0.contains("puff-check[") && $0.contains("tpm_library") }, "no log line names tpm_library")
        #expect(try fixture.failures(alice) == 0)
    }

    /// Fleet mode with the fleet key in each host's own TPM (issue 24): `tpm enable` seals the
    /// fleet key, logins go through the helper against real slapd, enrollment uses the sealed
    /// key, and a host whose TPM is gone fails closed while the others go on.
    @Test func aFleetHostKeepsTheFleetKeyInItsTPM() throws {
        let tpm1 = try SoftwareTPM(), tpm2 = try SoftwareTPM()
        let directory = try FleetDirectory()
        let key = newFleetKey()
        let host1 = try fleetHost(directory, name: "host1", key: key, extra: Self.config(tpm1))
        let host2 = try fleetHost(directory, name: "host2", key: key,
                                  bind: .password(host: "host2", uri: directory.ldapsURI, caFile: directory.caFile),
                                  extra: Self.config(tpm2))
        let user = try TestUsers.ensure("puff-it-fleet-t")
        try directory.addUser(user)
        let enrolled = try host1.enroll(user, Self.passcode)
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        #expect(try Self.tpmCommand(host1, ["status"]).output == "file\n")

        let enable = try Self.tpmCommand(host1, ["enable"])
        #expect(enable.status == 0, "\(enable.errors)")
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/fleet.key"))
        #expect(FileManager.default.fileExists(atPath: host1.etc + "/fleet.key.tpm"))
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/host.key"), "a fleet host gets no host key")
        // The mode of a fleet host is its fleet key's (it has no host key), also in plain
        // `status`, which lists no one there (the directory holds the records).
        #expect(try Self.tpmCommand(host1, ["status"]).output == "tpm\n")
        let status = try run(Artefacts.enroll, ["status"] + host1.storeArguments)
        #expect(status.status == 0, "\(status.errors)")
        #expect(status.lines.last?.hasPrefix("Key protection: tpm (the fleet key is sealed in the TPM") == true,
                "\(status.output)")
        #expect(try run(Artefacts.enroll, ["status", "--json"] + host1.storeArguments).status != 0)
        #expect(try tpm1.tpm2("tpm2_getcap", ["handles-persistent"]).output.contains("0x81504602"))

        // Logins on host1 go through the helper, which unseals the fleet key.
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try host1.authenticate(user, replies: ["111333"]).status == PAMCode.authError)
        #expect(try directory.failures(user) == 1)
        // host2, still in file mode, reads the same records with the same key.
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try directory.failures(user) == 0)
        // An enrollment on the tpm-mode host seals the new hash with the sealed key.
        #expect(try host1.enroll(user, "529174").status == 0)
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/fleet.key"))
        #expect(try host2.authenticate(user, replies: ["529174"]).status == PAMCode.success)
        #expect(try Self.tpmCommand(host2, ["enable"]).status == 0)
        #expect(try host2.authenticate(user, replies: ["529174"]).status == PAMCode.success)

        // host1's TPM gone: it fails closed, names the TPM, counts nothing; host2 goes on.
        tpm1.stop()
        try Self.forgetUnsealedKeys()  // as the next boot would
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        #expect(try host1.authenticate(user, replies: ["529174"]).status == PAMCode.authInfoUnavailable)
        #expect(try host1.authenticate(user, replies: ["111333"]).status == PAMCode.authInfoUnavailable)
        #expect(capture.drain().contains { $0.contains("puff-check[") && $0.contains("TPM: cannot reach the TPM") })
        #expect(try directory.failures(user) == 0)
        #expect(try host2.authenticate(user, replies: ["529174"]).status == PAMCode.success)

        // And back out of host2's TPM: the same fleet key in its file again.
        let disable = try Self.tpmCommand(host2, ["disable"])
        #expect(disable.status == 0, "\(disable.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: host2.etc + "/fleet.key")) == key)
        #expect(!FileManager.default.fileExists(atPath: host2.etc + "/fleet.key.tpm"))
        #expect(!(try tpm2.tpm2("tpm2_getcap", ["handles-persistent"]).output.contains("0x81504602")))
        #expect(try host2.authenticate(user, replies: ["529174"]).status == PAMCode.success)
    }

    /// Self-service in tpm mode: an ordinary user enrolls and changes their own passcode and
    /// gesture through the setuid helper, which unseals the key; no clear key ever appears; with
    /// the TPM gone a change fails closed and leaves the record and the counter as they were.
    @Test func anOrdinaryUserEnrollsAndChangesTheirOwnCredentialsInTPMMode() throws {
        let tpm = try SoftwareTPM()
        let stage = try UnprivilegedTests.Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\n" + Self.config(tpm))
        // No key yet: `tpm enable` makes one straight in the TPM.
        let enable = try Self.tpmCommand(stage.fixture, ["enable"])
        #expect(enable.status == 0, "\(enable.errors)")
        let clear = stage.fixture.etc + "/host.key"
        #expect(!FileManager.default.fileExists(atPath: clear))
        let dave = try UnprivilegedTests().userWithPassword(stage)
        func selfEnroll(_ arguments: [String], _ input: String) throws -> Run {
            try stage.runAs(dave, [stage.enroll] + arguments + ["--stdin", "--helper", stage.helper], input: input)
        }
        let first = try selfEnroll(["passcode"], "Sys-pass-4821\n604917\n")
        #expect(first.status == 0, "\(first.output) \(first.errors)")
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.success)
        let changed = try selfEnroll(["passcode"], "604917\n135790\n")
        #expect(changed.status == 0, "\(changed.errors)")
        #expect(try stage.authenticate(as: dave, replies: ["135790"]).status == PAMCode.success)
        #expect(try stage.authenticate(as: dave, replies: ["604917"]).status == PAMCode.authError)
        let gesture = GestureLoginTests.wire(GestureLoginTests.genuine)
        let drawn = try selfEnroll(["gesture", "--picture", stage.bin + "/picture.png"], "135790\n\(gesture)\n\(gesture)\n")
        #expect(drawn.status == 0, "\(drawn.errors)")
        #expect(try stage.authenticate(as: dave, replies: [gesture]).status == PAMCode.success)
        #expect(!FileManager.default.fileExists(atPath: clear), "self-service made a clear key")
        // A root login of the same records (the module with real uid root, as in sshd, hands
        // the attempt to the helper's service call).
        #expect(try stage.authenticate(as: "root", user: dave, replies: ["135790"]).status == PAMCode.success)

        let record = try Data(contentsOf: URL(fileURLWithPath: stage.fixture.etc + "/users/" + dave))
        let failures = try stage.fixture.failures(dave)
        tpm.stop()
        try Self.forgetUnsealedKeys()  // as the next boot would
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        _ = capture.drain()
        let refused = try selfEnroll(["passcode"], "135790\n246801\n")
        #expect(refused.status != 0)
        #expect(capture.drain().contains { $0.contains("puff-check[") && $0.contains("TPM: cannot reach the TPM") },
                "no log line of the helper names the TPM")
        #expect(try Data(contentsOf: URL(fileURLWithPath: stage.fixture.etc + "/users/" + dave)) == record)
        #expect(try stage.fixture.failures(dave) == failures)
        #expect(!FileManager.default.fileExists(atPath: clear))
    }

    /// Issue 36, item 3: a discreet refusal of a name that is no account made the TPM unseal
    /// the key (two commands, counted in swtpm's log) every time, so an unauthenticated sshd
    /// client could keep the TPM busy at will. Now the key is unsealed at most once a boot and
    /// kept in root's kernel keyring: the first read after a boot (here `tpm forget`) costs the
    /// two commands whoever asks, every later refusal and login none, and they still cost the
    /// same argon2id and the same counter write as before (UserEnumerationTests).
    @Test func aRefusalOfAnUnknownNameCostsTheTPMNothingOnceTheKeyIsUnsealed() throws {
        let tpm = try SoftwareTPM(logging: true)
        let alice = try TestUsers.ensure("puff-it-alice")
        let fixture = try Self.fixture(tpm)
        #expect(try fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(fixture, ["enable"]).status == 0)
        try Self.forgetUnsealedKeys()
        let unknown = "puff-it-no-such-account"
        #expect(getpwnam(unknown) == nil)
        var counts: [Int] = []
        for _ in 1...6 {
            tpm.clearLog()
            let refused = try fixture.authenticate(unknown, replies: ["111333"])
            #expect(refused.status == PAMCode.authError, "\(refused.output)")
            counts.append(tpm.commands().count)
        }
        #expect(counts.first == 2, "the first refusal after a boot unseals: \(counts)")
        #expect(counts.dropFirst().allSatisfy { $0 == 0 }, "TPM commands per refusal of an unknown name: \(counts)")
        tpm.clearLog()
        #expect(try fixture.authenticate(alice, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try fixture.authenticate(alice, replies: ["111333"]).status == PAMCode.authError)
        #expect(tpm.commands().isEmpty, "\(tpm.commands())")
        print("TPM commands per refusal of a name that is no account, from a boot on: \(counts)")
    }

    /// Issue 36, item 3, the TPM's sessions: a user who stops their own setuid helper between
    /// TPM2_StartAuthSession and TPM2_Unseal keeps that session loaded, and swtpm has three
    /// (TPM2_PT_HR_LOADED_MIN; one killed there leaks its session for good, swtpm having no
    /// resource manager to flush it). The attacker's stepper (as the user) single-steps
    /// `puff-check login` of their own account right after a boot, with swtpm's log as its
    /// oracle, and parks three copies in that window; then the victim's right passcode, as
    /// sshd runs it, needs a session of its own. Before: the three stopped copies held every
    /// session and the victim's login failed with PAM_AUTHINFO_UNAVAIL. Now the helper makes
    /// itself root through and through before it touches the store or the TPM: the user's
    /// SIGSTOP is refused (EPERM) from then on, and every login goes through.
    @Test func aUserCannotParkTheirOwnHelperInsideATPMSession() throws {
        let tpm = try SoftwareTPM(logging: true)
        chmod(tpm.directory, 0o711)
        let stage = try UnprivilegedTests.Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 50\nmax_failures = 0\n" + Self.config(tpm))
        let alice = try TestUsers.ensure("puff-it-alice"), bob = try TestUsers.ensure("puff-it-bob")
        #expect(try stage.fixture.enroll(alice, Self.passcode).status == 0)
        #expect(try stage.fixture.enroll(bob, Self.passcode).status == 0)
        #expect(try Self.tpmCommand(stage.fixture, ["enable"]).status == 0)
        try Self.forgetUnsealedKeys()
        tpm.clearLog()
        chmod(tpm.log, 0o644)
        let stepper = stage.fixture.root + "/tpm-stepper.py"
        try stage.fixture.write(stepper, Self.sessionStepper, mode: 0o755)
        let report = stage.fixture.root + "/tpm-stepper.txt", done = report + ".done"
        FileManager.default.createFile(atPath: report, contents: nil, attributes: [.posixPermissions: 0o666])
        let spy = try HardeningRound4Tests.start(stage, as: alice, ["/usr/bin/python3", "-u", stepper, stage.helper, tpm.log, report, done])
        var reaped = false
        defer {
            FileManager.default.createFile(atPath: done, contents: nil)
            if !reaped { usleep(500_000); Glibc.kill(spy, SIGKILL); var raw: Int32 = 0; waitpid(spy, &raw, 0) }
        }
        let seen = HardeningRound4Tests.await(report, "ready\n", seconds: 120, process: spy)
        #expect(seen.contains("ready\n"), "\(seen)")
        #expect(!seen.contains("parked"), "the user parked their helper inside a TPM session: \(seen)")
        // As sshd runs it (real uid root): the module hands the attempt to the helper's service call.
        let victim = try stage.authenticate(as: "root", user: bob, replies: [Self.passcode])
        #expect(victim.status == PAMCode.success, "\(victim.output) (\(seen))")
        print("TPM session stepper: \(seen.split(separator: "\n").joined(separator: "; "))")
        HardeningRound4Tests.killStuck(seen)
        FileManager.default.createFile(atPath: done, contents: nil)
        var raw: Int32 = 0
        let deadline = Date().addingTimeInterval(20)
        while !reaped && Date() < deadline {
            let waited = waitpid(spy, &raw, WNOHANG)
            if waited == spy || waited < 0 { reaped = true } else { usleep(10_000) }
        }
    }

    /// The attacker's stepper (python3, as the user): argv helper, swtpm's log, the report, the
    /// file that ends it. Three rounds: `puff-check login` of the user's own account with a
    /// wrong passcode, stopped at once, then stepped (SIGCONT, SIGSTOP) until the log shows more
    /// StartAuthSession (0x176) than Unseal (0x15e) commands since it started (parked, kept
    /// stopped), the copy ends, or a signal is refused.
    static let sessionStepper = #"""
        import os, signal, subprocess, sys, time
        helper, log, report, done = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
        def codes(start):
            with open(log) as f:
                lines = f.read().splitlines()
            found = []
            for i, line in enumerate(lines[start:], start):
                if "SWTPM_IO_Read: length" in line and i + 1 < len(lines):
                    b = lines[i + 1].split()
                    if len(b) >= 10:
                        found.append(int("".join(b[6:10]), 16))
            return found, len(lines)
        def state(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    s = f.read()
                return s[s.rindex(")") + 2]
            except OSError:
                return "X"
        out = open(report, "w")
        parked = []
        for round in range(3):
            _, start = codes(0)
            out.write("round %d from log line %d\n" % (round + 1, start))
            out.flush()
            p = subprocess.Popen([helper, "login"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            steps, outcome = 0, "timed out"
            try:
                os.kill(p.pid, signal.SIGSTOP)
            except PermissionError:
                # On a busy machine the helper may be root through and through already.
                outcome = "its SIGSTOP refused (EPERM) before the first step"
            p.stdin.write(b"6\n111333")
            p.stdin.close()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and outcome == "timed out":
                t = time.monotonic() + 2
                while state(p.pid) not in "tTZX" and time.monotonic() < t:
                    time.sleep(0.0001)
                if state(p.pid) in "ZX":
                    outcome = "ended after %d steps" % steps
                    break
                c, _ = codes(start)
                if c.count(0x176) > c.count(0x15e):
                    outcome = "parked inside a TPM session after %d steps" % steps
                    parked.append(p)
                    break
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGSTOP)
                except PermissionError:
                    outcome = "its SIGSTOP refused (EPERM) after %d steps" % steps
                    break
                steps += 1
            out.write("round %d: %s\n" % (round + 1, outcome))
            out.flush()
            if p not in parked:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except PermissionError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    out.write("stuck pid %d\n" % p.pid)
                    out.flush()
        out.write("ready\n")
        out.flush()
        deadline = time.monotonic() + 120
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in parked:
            p.kill()
            p.wait()
        """#
}
