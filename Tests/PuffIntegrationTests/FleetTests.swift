import Foundation
import Testing

/// Fleet mode (`backend = ldap`) against a real slapd started by the test: two (or three)
/// hosts simulated as separate Puff stores, states and PAM services with their own
/// configuration, one directory, one fleet key; logins through real libpam and the module.
@Suite(.serialized)
struct FleetTests {
    /// Directory, fleet key, two hosts (host1 over the ldapi socket with SASL EXTERNAL, host2
    /// over ldaps with its bind DN, password file and the test CA) and an enrolled user.
    struct Fleet {
        let directory: FleetDirectory
        let host1: Fixture
        let host2: Fixture
        let user: String

        init(user name: String, extra: String = "") throws {
            directory = try FleetDirectory()
            let key = newFleetKey()
            host1 = try fleetHost(directory, name: "host1", key: key, extra: extra)
            host2 = try fleetHost(directory, name: "host2", key: key,
                                  bind: .password(host: "host2", uri: directory.ldapsURI, caFile: directory.caFile),
                                  extra: extra)
            user = try TestUsers.ensure(name)
            try directory.addUser(user)
            let enrolled = try host1.enroll(user, "135790")
            #expect(enrolled.status == 0, "enroll: \(enrolled.errors)")
        }
    }

    /// PAM codes collected from several threads.
    final class Codes: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Int32] = []
        func append(_ code: Int32) { lock.lock(); list.append(code); lock.unlock() }
        var all: [Int32] { lock.lock(); defer { lock.unlock() }; return list }
    }

    /// One login through the harness against the PAM service directory `confdir`.
    static func login(_ confdir: String, _ user: String, _ reply: String) -> Int32 {
        (try? run(Artefacts.harness, ["--confdir", confdir, "--service", "puff-test", "--user", user, "--reply", reply]).status) ?? -2
    }

    /// `replies.count` attempts at once, spread over `hosts` in turn; their PAM codes.
    static func parallel(_ hosts: [Fixture], user: String, _ replies: [String]) -> [Int32] {
        let services = hosts.map(\.pamDirectory)
        let codes = Codes()
        DispatchQueue.concurrentPerform(iterations: replies.count) { index in
            codes.append(login(services[index % services.count], user, replies[index]))
        }
        return codes.all
    }

    @Test func enrolledOnceTheUserLogsInOnEveryHost() throws {
        let fleet = try Fleet(user: "puff-it-fleet-a")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        // The record is in the directory, not in the enrolling host's store.
        #expect(try directory.values(user, "objectClass").contains("puffUser"))
        #expect(try directory.failures(user) == 0)
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/users/" + user))

        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        let host3 = try fleetHost(directory, name: "host3", key: try Data(contentsOf: URL(fileURLWithPath: host1.etc + "/fleet.key")),
                                  bind: .password(host: "host1", uri: directory.startTLSURI, caFile: directory.caFile))
        #expect(try host3.authenticate(user, replies: ["135790"]).status == PAMCode.success, "StartTLS")

        // A failure on host2 is counted in the directory and named there; host1 sees it.
        #expect(try host2.authenticate(user, replies: ["000000"]).status == PAMCode.authError)
        #expect(try directory.failures(user) == 1)
        #expect(try directory.values(user, "puffLastFailureHost") == ["host2"])
        let status = try host1.status(user)
        #expect(status["failures"] as? Int == 1)
        #expect(status["last_failure_host"] as? String == "host2")
        // A host with another fleet key cannot use the records: fails closed, never success.
        let stranger = try fleetHost(directory, name: "stranger", key: newFleetKey())
        #expect(try stranger.authenticate(user, replies: ["135790"]).status == PAMCode.authError)
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try directory.failures(user) == 0)
    }

    /// The module holds no directory client: as root in fleet mode it hands the login to the
    /// helper's service calls. su or sudo run by a user (real uid the user's, effective uid
    /// root) works too: the module starts the helper with real uid root, which the service
    /// calls require.
    @Test func theModuleHandsFleetLoginsToTheHelperAlsoUnderSuRunByAUser() throws {
        // The directory's attribute names are in the helper's code, not in the module's.
        let module = try Data(contentsOf: URL(fileURLWithPath: Artefacts.module))
        let helper = try Data(contentsOf: URL(fileURLWithPath: Artefacts.helper))
        for name in ["puffFailures", "puffLastFailureHost"] {
            #expect(module.range(of: Data(name.utf8)) == nil, "\(name) is in the module")
            #expect(helper.range(of: Data(name.utf8)) != nil, "\(name) is not in the helper")
        }
        let fleet = try Fleet(user: "puff-it-fleet-su")
        let (directory, host1, user) = (fleet.directory, fleet.host1, fleet.user)
        let right = try host1.authenticate(user, replies: ["135790"], bySelf: true)
        #expect(right.status == PAMCode.success, "\(right.output)")
        let wrong = try host1.authenticate(user, replies: ["000000"], bySelf: true)
        #expect(wrong.status == PAMCode.authError)
        #expect(wrong.output.contains("ERROR Puff: wrong passcode."), "\(wrong.output)")
        #expect(try directory.failures(user) == 1)
        #expect(try directory.values(user, "puffLastFailureHost") == ["host1"])
        // The right passcode clears it, through the same path.
        #expect(try host1.authenticate(user, replies: ["135790"], bySelf: true).status == PAMCode.success)
        #expect(try directory.failures(user) == 0)

        // su is run in a directory its user chose; libldap reads ./ldaprc when the real and
        // effective uids agree, as they do in the helper started as root. The helper works
        // from /, so such a file cannot make the directory unreachable (here: a source
        // address the host does not have, for host2's ldaps connection).
        let trap = directory.root + "/su-cwd"
        #expect(mkdir(trap, 0o755) == 0)
        try fleet.host2.write(trap + "/ldaprc", "SOCKET_BIND_ADDRESSES 192.0.2.1\n", mode: 0o644)
        let owner = try #require(getpwnam(user)).pointee.pw_uid
        let inTrap = try run("/bin/sh", ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", trap, Artefacts.harness,
                                         "--confdir", fleet.host2.pamDirectory, "--service", "puff-test", "--user", user,
                                         "--reply", "135790", "--caller", String(owner)])
        #expect(inTrap.status == PAMCode.success, "\(inTrap.output)")

        // Root runs only a helper that root owns: a copy owned by nobody fails the login
        // closed before anything is counted.
        let foreign = directory.root + "/foreign-helper"
        try FileManager.default.copyItem(atPath: Artefacts.helper, toPath: foreign)
        #expect(chown(foreign, 65534, 65534) == 0 && chmod(foreign, 0o755) == 0)
        try host1.service("helper=\(foreign)")
        #expect(try host1.authenticate(user, replies: ["000000"]).status == PAMCode.authInfoUnavailable)
        #expect(try directory.failures(user) == 0)
    }

    @Test func parallelFailuresOnTwoHostsAreAllCountedAndLockBoth() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let fleet = try Fleet(user: "puff-it-fleet-b", extra: "deny = 10\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        _ = capture.drain()

        let codes = Self.parallel([host1, host2], user: user, (0..<10).map { String(format: "%06d", 400_000 + $0) })
        #expect(codes == [Int32](repeating: PAMCode.authError, count: 10))
        #expect(try directory.failures(user) == 10)
        // Each attempt saw the count its own increment produced: 1...10, once each.
        // Only this user's lines: other fleet suites log through the same /dev/log meanwhile.
        // Fleet mode's store work, and its log lines, are the helper's (service calls).
        let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("user \(user)") && $0.contains("fleet failure") }
        var counts: [Int] = []
        var hosts = Set<String>()
        for line in lines {
            guard let range = line.range(of: "fleet failure ") else { continue }
            let words = line[range.upperBound...].split(separator: " ")
            if let count = Int(words[0]) { counts.append(count) }
            if words.count > 3 { hosts.insert(String(words[3]).trimmingCharacters(in: CharacterSet(charactersIn: ";\n"))) }
        }
        #expect(counts.sorted() == Array(1...10), "\(lines)")
        #expect(hosts == ["host1", "host2"])

        // Both hosts locked: the right passcode is refused and not counted.
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.authError)
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.authError)
        #expect(try directory.failures(user) == 10)
        #expect(try host2.status(user)["locked"] as? Bool == true)

        // The reset on host2 unlocks host1 too.
        let reset = try run(Artefacts.enroll, ["reset", "--user", user] + host2.storeArguments)
        #expect(reset.status == 0, "\(reset.errors)")
        #expect(try directory.failures(user) == 0)
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.success)
    }

    @Test func theDefaultPolicyVerifiesAtMostFiveGuessesAcrossTheFleet() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let fleet = try Fleet(user: "puff-it-fleet-c")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        _ = capture.drain()
        let codes = Self.parallel([host1, host2], user: user, (0..<12).map { String(format: "%06d", 500_000 + $0) })
        #expect(codes.allSatisfy { $0 == PAMCode.authError })
        // Only this user's lines: other suites log through the same /dev/log meanwhile.
        let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("user \(user)") }
        // A guess was verified when the helper logged a failure ("authentication failure (N in
        // a row)", the attempt's one line); counted-but-unverified and refused attempts are not.
        let verified = lines.filter { $0.contains("authentication failure (") }.count
        #expect(verified == 5, "\(lines)")
        let counted = try #require(try directory.failures(user))
        #expect((5...12).contains(counted))
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.authError)
    }

    /// Issue 22, item 7a: the right passcode on two hosts at the same moment (both log in, no
    /// failure happens) leaves the fleet's count at 0. Before, the settle cleared only when the
    /// count was at least the attempt's own number: the first success wrote 1 over 2, the
    /// second found 1 and wrote nothing (1 in 14 of 16 rounds).
    @Test func simultaneousSuccessesOnTwoHostsLeaveNoFailure() throws {
        let fleet = try Fleet(user: "puff-it-fleet-g")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        var left: [Int] = []
        for _ in 0..<16 {
            let codes = Self.parallel([host1, host2], user: user, ["135790", "135790"])
            #expect(codes == [PAMCode.success, PAMCode.success], "\(codes)")
            left.append(try directory.failures(user) ?? -1)
        }
        #expect(left == [Int](repeating: 0, count: 16), "puffFailures after each round: \(left)")
    }

    /// Issue 22, item 7b: with `ldap_cache_ttl` set and the directory hung (slapd stopped with
    /// SIGSTOP: connections are accepted, nothing is answered), one login opens one connection
    /// and waits at most one `ldap_timeout` before the cached copy is used. Before, the query
    /// and the attempt (two helper runs, and two reads in the second) each waited the full
    /// timeout: three times as long.
    @Test func aHungDirectoryCostsALoginOneTimeout() throws {
        let fleet = try Fleet(user: "puff-it-fleet-h", extra: "ldap_cache_ttl = 1d\nldap_timeout = 3\n")
        let (directory, host1, user) = (fleet.directory, fleet.host1, fleet.user)
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        let pid = try #require(Int32((try String(contentsOfFile: directory.root + "/slapd.pid", encoding: .utf8))
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, SIGSTOP) == 0)
        defer { kill(pid, SIGCONT) }
        for (reply, expected) in [("135790", PAMCode.success), ("000111", PAMCode.authError)] {
            let started = Date()
            let login = try host1.authenticate(user, replies: [reply])
            let took = Date().timeIntervalSince(started)
            #expect(login.status == expected, "\(reply): \(login.output)")
            // One ldap_timeout (3 s) and the work; two would be 6 s.
            #expect(took > 2.5 && took < 5, "\(reply): a login against the hung directory took \(took) s")
            print("hung directory: \(reply == "135790" ? "right" : "wrong") passcode answered in \(Int(took * 1000)) ms (ldap_timeout = 3 s)")
        }
        kill(pid, SIGCONT)
        // The offline failure reaches the directory at the next online login.
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try directory.failures(user) == 0)
    }

    @Test func aStoppedDirectoryFailsClosedAndLosesNothing() throws {
        let fleet = try Fleet(user: "puff-it-fleet-d", extra: "deny = 100\nmax_failures = 0\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        #expect(try host2.authenticate(user, replies: ["000001"]).status == PAMCode.authError)

        // Stopped while attempts run on both hosts: every result is a failure or
        // PAM_AUTHINFO_UNAVAIL, never a success, and every reported failure was counted. The
        // attempts go on until four have started after the stop returned (a fast machine can
        // finish any fixed number before it), at most 400.
        let collected = Codes()
        let stopped = Codes()
        let finished = DispatchSemaphore(value: 0)
        let services = [host1.pamDirectory, host2.pamDirectory]
        let attempts = Thread {
            var afterStop = 0
            for index in 0..<400 where afterStop < 4 {
                if !stopped.all.isEmpty { afterStop += 1 }
                collected.append(Self.login(services[index % 2], user, String(format: "%06d", 600_000 + index)))
            }
            finished.signal()
        }
        attempts.start()
        usleep(400_000)
        directory.stop()
        stopped.append(1)
        finished.wait()
        let codes = collected.all
        #expect(codes.allSatisfy { $0 == PAMCode.authError || $0 == PAMCode.authInfoUnavailable }, "\(codes)")
        #expect(codes.contains(PAMCode.authInfoUnavailable))
        // Directory down: the right passcode is not verified either, on any host.
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        let status = try run(Artefacts.enroll, ["status", "--user", user] + host1.storeArguments)
        #expect(status.status != 0)

        try directory.start()
        let counted = try #require(try directory.failures(user))
        let failed = codes.filter { $0 == PAMCode.authError }.count
        // One attempt may have been counted as the server stopped without its answer arriving.
        #expect(counted >= failed + 1 && counted <= failed + 2, "counted \(counted), failures reported \(failed) + 1")
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
    }

    @Test func aSilentServerOrABadCertificateFailsClosedInBoundedTime() throws {
        let directory = try FleetDirectory()
        let key = newFleetKey()
        let user = try TestUsers.ensure("puff-it-fleet-e")
        try directory.addUser(user)
        let good = try fleetHost(directory, name: "host1", key: key)
        #expect(try good.enroll(user, "135790").status == 0)

        let silent = try SilentServer()
        for uri in ["ldaps://127.0.0.1:\(silent.port)", "ldap://127.0.0.1:\(silent.port)"] {
            let hung = try fleetHost(directory, name: "hung", key: key,
                                     bind: .password(host: "host1", uri: uri, caFile: directory.caFile),
                                     extra: "ldap_timeout = 2\nldap_network_timeout = 1\n")
            let started = Date()
            #expect(try hung.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable, "\(uri)")
            let elapsed = Date().timeIntervalSince(started)
            #expect(elapsed < 8, "\(uri) took \(elapsed) s")
        }

        // Another CA, and a name the certificate does not carry (its only name is IP 127.0.0.1).
        let otherCA = directory.root + "/other-ca.pem"
        let made = try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                "-days", "1", "-subj", "/CN=Other CA", "-keyout", directory.root + "/other-ca.key",
                                                "-out", otherCA])
        #expect(made.status == 0)
        let wrongCA = try fleetHost(directory, name: "wrong-ca", key: key,
                                    bind: .password(host: "host1", uri: directory.ldapsURI, caFile: otherCA))
        #expect(try wrongCA.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        let wrongName = try fleetHost(directory, name: "wrong-name", key: key,
                                      bind: .password(host: "host1", uri: "ldaps://localhost:\(directory.port)", caFile: directory.caFile))
        #expect(try wrongName.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        let wrongPassword = try fleetHost(directory, name: "host2", key: key,
                                          bind: .password(host: "host2", uri: directory.ldapsURI, caFile: directory.caFile))
        try wrongPassword.write(wrongPassword.etc + "/ldap.secret", "not-the-password\n", mode: 0o600)
        #expect(try wrongPassword.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        #expect(try directory.failures(user) == 0)
        #expect(try good.authenticate(user, replies: ["135790"]).status == PAMCode.success)
    }

    /// The module loads its LDAP client (`ldap_library`) only when fleet mode needs it, and only
    /// a regular root-owned file that group and others cannot write, in directories walked
    /// from / like every trusted file's, not through a symbolic link. Anything else fails closed (PAM_AUTHINFO_UNAVAIL) with the reason in the log, and
    /// counts nothing.
    @Test func anLDAPClientThatCannotBeLoadedFailsClosedWithItsReason() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let fleet = try Fleet(user: "puff-it-fleet-lib")
        let (directory, host1, user) = (fleet.directory, fleet.host1, fleet.user)
        let scratch = directory.root + "/libraries"
        #expect(mkdir(scratch, 0o755) == 0)
        let real = try Data(contentsOf: URL(fileURLWithPath: Artefacts.ldapLibrary))
        func copy(_ name: String, mode: mode_t, owner: uid_t = 0) throws -> String {
            let path = scratch + "/" + name
            try real.write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, mode) == 0 && chown(path, owner, 0) == 0)
            return path
        }
        let symlinked = scratch + "/symlinked.so"
        #expect(symlink(Artefacts.ldapLibrary, symlinked) == 0)
        let notELF = scratch + "/not-elf.so"
        try Data("not a shared object\n".utf8).write(to: URL(fileURLWithPath: notELF))
        chmod(notELF, 0o644)
        // A directory that group members could write to: the walk from / refuses it.
        let shared = directory.root + "/shared"
        #expect(mkdir(shared, 0o755) == 0 && chmod(shared, 0o775) == 0)
        try real.write(to: URL(fileURLWithPath: shared + "/good.so"))
        chmod(shared + "/good.so", 0o644)
        let cases: [(path: String, reason: String)] = [
            (scratch + "/missing.so", "open: no such file or directory (ENOENT)"),
            (shared + "/good.so", "refusing \(shared)"),
            ("/proc/self/fd/0", "refusing /proc/self"),
            (symlinked, "symbolic link"),
            (try copy("group-writable.so", mode: 0o664), "not writable by group or others"),
            (try copy("other-writable.so", mode: 0o646), "not writable by group or others"),
            (try copy("not-root.so", mode: 0o644, owner: 65534), "owned by root"),
            (notELF, "cannot be loaded: "),
        ]
        for (path, reason) in cases {
            try host1.write(host1.conf, try String(contentsOfFile: host1.conf, encoding: .utf8)
                            + "ldap_library = \(path)\n", mode: 0o600)
            _ = capture.drain()
            #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable, "\(path)")
            // Fleet mode's store work, and its log lines, are the helper's (service calls).
            let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("the LDAP client library \(path) cannot be loaded: ") }
            #expect(lines.contains { $0.contains(reason) }, "\(path): \(lines)")
        }
        #expect(try directory.failures(user) == 0)
        // The same copy, root-owned and 0644 again, loads.
        let good = try copy("good.so", mode: 0o644)
        try host1.write(host1.conf, try String(contentsOfFile: host1.conf, encoding: .utf8) + "ldap_library = \(good)\n", mode: 0o600)
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
    }

    /// A syncrepl consumer gets the records, but it cannot count: with the provider down the
    /// increment is refused (a referral to the provider), so the login fails closed.
    @Test func aReadOnlyConsumerCannotCountSoLoginsFailClosed() throws {
        let provider = try FleetDirectory()
        let consumer = try FleetDirectory(consumerOf: provider)
        let key = newFleetKey()
        let user = try TestUsers.ensure("puff-it-fleet-f")
        try provider.addUser(user)
        let host1 = try fleetHost(provider, name: "host1", key: key)
        #expect(try host1.enroll(user, "135790").status == 0)
        var replicated = false
        for _ in 0..<100 where !replicated {
            replicated = try consumer.values(user, "puffFailures") == ["0"]
            if !replicated { usleep(100_000) }
        }
        #expect(replicated, "the consumer did not receive the record within 10 s")

        let host2 = try fleetHost(provider, name: "host2", key: key,
                                  bind: .password(host: "host2", uri: provider.ldapsURI + "," + consumer.ldapsURI,
                                                  caFile: provider.caFile))
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        provider.stop()
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.authInfoUnavailable)
        #expect(try consumer.failures(user) == 0)
    }

    /// Two providers replicating to each other (multi-provider syncrepl): with the first one
    /// down, the second serves logins and counts; the first catches up when it returns.
    @Test func aSecondProviderServesLoginsWhenTheFirstIsDown() throws {
        let portA = try FleetDirectory.freePortPair()
        var portB = try FleetDirectory.freePortPair()
        while abs(portB - portA) < 2 { portB = try FleetDirectory.freePortPair() }
        let first = try FleetDirectory(port: portA, peerPort: portB, id: 1, caFrom: nil)
        let second = try FleetDirectory(port: portB, peerPort: portA, id: 2, caFrom: first)
        let key = newFleetKey()
        let user = try TestUsers.ensure("puff-it-fleet-g")
        try first.addUser(user)
        let host1 = try fleetHost(first, name: "host1", key: key)
        #expect(try host1.enroll(user, "135790").status == 0)
        func waitFor(_ server: FleetDirectory, failures: Int) throws -> Bool {
            for _ in 0..<100 {
                if try server.failures(user) == failures { return true }
                usleep(100_000)
            }
            return false
        }
        #expect(try waitFor(second, failures: 0), "the second provider did not receive the record within 10 s")

        let host2 = try fleetHost(first, name: "host2", key: key,
                                  bind: .password(host: "host2", uri: first.ldapsURI + "," + second.ldapsURI,
                                                  caFile: first.caFile))
        first.stop()
        #expect(try host2.authenticate(user, replies: ["000000"]).status == PAMCode.authError)
        #expect(try second.failures(user) == 1)
        #expect(try second.values(user, "puffLastFailureHost") == ["host2"])
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: ["000001"]).status == PAMCode.authError)
        #expect(try second.failures(user) == 1)

        try first.start()
        #expect(try waitFor(first, failures: 1), "the first provider did not catch up within 10 s")
        #expect(try first.values(user, "puffLastFailureHost") == ["host2"])
    }
}
