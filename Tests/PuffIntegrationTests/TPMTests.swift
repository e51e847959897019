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

    init() throws {
        var template = Array("/tmp/puff-swtpm-XXXXXX".utf8CString)
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
                "--daemon", "--pid", "file=\(directory)/pid"])
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

    deinit { stop() }

    /// Stops the simulator (its state stays until the object goes).
    func stop() {
        if kill(pid, SIGTERM) == 0 {
            for _ in 0..<200 where kill(pid, 0) == 0 { usleep(10_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
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

/// Tpm mode (issue 24, docs/protection-at-rest.md): the host key sealed in a TPM, through real
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
        let gone = try stage.authenticate(as: alice, replies: [Self.passcode])
        #expect(gone.status == PAMCode.authInfoUnavailable, "\(gone.output)")
    }
}
