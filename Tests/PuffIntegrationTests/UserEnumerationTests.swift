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

    /// Issue 11, item 9: a root-run service whose caller is not the user (sshd, login, su to
    /// another account) shows every account name the same prompt, messages and rounds —
    /// enrolled with any passcode type, with a gesture or only a gesture, locked for a while or
    /// until a reset, with the passcode required now, a counter that does not parse, no record
    /// or no account — for a passcode and for a gesture reply. The user's own su or sudo
    /// (`bySelf`) still names the keypad and the lock.
    @Test("a discreet service tells no account from another, whatever its type and state")
    func aDiscreetServiceTellsNoAccountFromAnother() throws {
        let fixture = try Fixture(moduleArguments: "deny=3 delays=10m")
        let gestures = GestureLoginTests()
        let fourDigits = try TestUsers.ensure("puff-it-alice")
        try fixture.enroll(fourDigits, "1590", type: "digits4")
        let both = try TestUsers.ensure("puff-it-bob")
        try fixture.enroll(both, "604917")
        try gestures.enrolled(fixture, both)
        let gestureOnly = try TestUsers.ensure("puff-it-carol")
        try gestures.enrolled(fixture, gestureOnly)
        let locked = try TestUsers.ensure("puff-it-dave")
        try fixture.enroll(locked, "604917", type: "alphanumeric")
        for _ in 1...3 { try fixture.authenticate(locked, replies: ["wrong one"]) }
        #expect(try fixture.status(locked)["locked"] as? Bool == true)
        let passcodeRequired = try TestUsers.ensure("puff-it-erin")
        try fixture.enroll(passcodeRequired, "604917")
        try gestures.enrolled(fixture, passcodeRequired)
        let untilReset = try TestUsers.ensure("puff-it-frank")
        try gestures.enrolled(fixture, untilReset)
        for user in [passcodeRequired, untilReset] {
            #expect(try run(Artefacts.enroll, ["lock", "--user", user] + fixture.storeArguments).status == 0)
        }
        let damaged = try TestUsers.ensure("puff-it-grace")
        try fixture.enroll(damaged, "604917")
        try fixture.write(fixture.state + "/" + damaged, "failures lots\n", mode: 0o600)
        let noRecord = try TestUsers.ensure("puff-it-heidi")
        let noAccount = "puff-it-no-such-account"
        #expect(getpwnam(noAccount) == nil)
        let accounts = [fourDigits, both, gestureOnly, locked, passcodeRequired, untilReset, damaged, noRecord, noAccount]

        let wrongGesture = "puff-gesture:1:400x300:t 2,2"
        for (reply, message) in [("111111", Discreet.passcodeRefused), (wrongGesture, Discreet.gestureRefused)] {
            let expected = [Discreet.prompt, message, "RESULT \(PAMCode.authError) Authentication failure"]
            var rounds: Set<String> = []
            for user in accounts {
                let seen = try transcript(fixture, user, reply: reply)
                #expect(seen.lines == expected, "\(user): \(seen.lines)")
                rounds.insert(seen.rounds ?? "none")
            }
            #expect(rounds.count == 1, "rounds differ: \(rounds)")
        }
        // The same accounts through the user's own su or sudo: the keypad and the state show.
        let own = try fixture.authenticate(fourDigits, replies: ["1111"], bySelf: true)
        #expect(own.lines.first == "PROMPT echo-off Puff passcode [4 digits]: ", "\(own.lines)")
        let ownLocked = try fixture.authenticate(locked, replies: ["604917"], bySelf: true)
        #expect(ownLocked.lines.first == "ERROR Puff: too many failed attempts; try again in 10 minutes.", "\(ownLocked.lines)")
        let ownRequired = try fixture.authenticate(passcodeRequired, replies: [wrongGesture], bySelf: true)
        #expect(ownRequired.lines.first == "INFO Puff: passcode required: an administrator asked for the passcode.",
                "\(ownRequired.lines)")
    }

    /// Issue 26: `tell_state` lists the services (a login screen) that name the keypad and tell
    /// the lock although the caller is not the user, and it is honoured only in a process whose
    /// real and effective uid are root, which chose the service name. Here puff.conf lists
    /// `lightdm` and `su`: root's lightdm is told; a service not listed (sshd) is not; the same
    /// names reached any other way are not — su run by an ordinary user (the real `su`, whose
    /// real uid is the user's), the harness with another user's real uid (setuid-root
    /// programs), and an unprivileged program that calls pam_start with the listed name (it
    /// goes through the setuid helper, which serves only its caller's account).
    @Test("tell_state tells the state only to a root process in a listed service")
    func tellStateIsHonouredOnlyForARootProcessInAListedService() throws {
        let config = "kdf_ops = 1\nkdf_mem_kib = 8\ntell_state = lightdm,su\n"
        let fixture = try Fixture(config: config, moduleArguments: "deny=3 delays=10m")
        for name in ["lightdm", "su", "sshd"] { try fixture.service("deny=3 delays=10m", name: name) }
        let fourDigits = try TestUsers.ensure("puff-it-alice")
        try fixture.enroll(fourDigits, "1590", type: "digits4")
        let locked = try TestUsers.ensure("puff-it-dave")
        try fixture.enroll(locked, "604917")
        for _ in 1...3 { try fixture.authenticate(locked, replies: ["111111"]) }
        #expect(try fixture.status(locked)["locked"] as? Bool == true)
        let lockNotice = "ERROR Puff: too many failed attempts; try again in 10 minutes."
        let refused = "RESULT \(PAMCode.authError) Authentication failure"

        // Root through and through, in a listed service: the keypad and the lock are told.
        let told = try fixture.authenticate(fourDigits, replies: ["1111"], service: "lightdm")
        #expect(told.lines == ["PROMPT echo-off Puff passcode [4 digits]: ", "ERROR Puff: wrong passcode.", refused], "\(told.lines)")
        let toldLocked = try fixture.authenticate(locked, replies: ["604917"], service: "lightdm")
        #expect(toldLocked.lines == [lockNotice, refused], "\(toldLocked.lines)")
        #expect(try fixture.failures(fourDigits) == 1)

        // Root, a service not listed: discreet.
        let discreet = [Discreet.prompt, Discreet.passcodeRefused, refused]
        for user in [fourDigits, locked] {
            let seen = try fixture.authenticate(user, replies: ["111111"], service: "sshd")
            #expect(seen.lines == discreet, "sshd \(user): \(seen.lines)")
        }
        // Listed, but run with an ordinary user's real uid (a setuid-root program): discreet.
        let caller = try TestUsers.ensure("puff-it-erin")
        let callerUID = try #require(getpwnam(caller)).pointee.pw_uid
        for service in ["lightdm", "su"] {
            for user in [fourDigits, locked] {
                let seen = try fixture.authenticate(user, replies: ["111111"], extra: ["--caller", String(callerUID)], service: service)
                #expect(seen.lines == discreet, "\(service) as uid \(callerUID), \(user): \(seen.lines)")
            }
        }

        // The real su, run by an ordinary user, with `su` listed: discreet for the locked
        // account as for any other.
        let suCaller = try RealClientTests.ShellUser("caller")
        let target = try RealClientTests.ShellUser("target")
        #expect(try fixture.enroll(target.name, "1590", type: "digits4").status == 0)
        for _ in 1...3 { try fixture.authenticate(target.name, replies: ["1111"]) }
        let pamFile = try HardeningTests.suService(fixture, extra: "deny=3 delays=10m")
        let su = try HardeningTests.su(as: suCaller, to: target, "1590", pamFile: pamFile)
        #expect(su.output.contains("Puff passcode or gesture: "), "\(su.output)")
        #expect(su.output.contains("Puff: not accepted (a wrong passcode, or too many failed attempts)."), "\(su.output)")
        #expect(!su.output.contains("4 digits") && !su.output.contains("minutes"), "\(su.output)")
        #expect(!su.output.contains("puff-su-ok"), "\(su.output)")

        // An unprivileged program calling pam_start("lightdm", another user): refused before
        // any prompt, nothing said (the setuid helper serves only the caller's own account).
        let stage = try UnprivilegedTests.Stage(config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\ndelays = 10m\ntell_state = lightdm\n")
        try stage.fixture.write(stage.fixture.pamDirectory + "/lightdm",
                                "auth required \(stage.bin)/pam_puff.so nodelay helper=\(stage.helper)\naccount required pam_permit.so\n",
                                mode: 0o644)
        #expect(try stage.fixture.enroll(locked, "604917").status == 0)
        for _ in 1...3 { try stage.fixture.authenticate(locked, replies: ["111111"]) }
        let probe = try stage.runAs(caller, [stage.harness, "--confdir", stage.fixture.pamDirectory, "--service", "lightdm",
                                             "--user", locked, "--reply", "604917"])
        #expect(probe.lines == [refused], "\(probe.lines) \(probe.errors)")
        // The same program asking for its own account through that service is told (it is the user).
        #expect(try stage.fixture.enroll(caller, "1590", type: "digits4").status == 0)
        let own = try stage.runAs(caller, [stage.harness, "--confdir", stage.fixture.pamDirectory, "--service", "lightdm",
                                           "--user", caller, "--reply", "1590"])
        #expect(own.lines.first == "PROMPT echo-off Puff passcode [4 digits]: ", "\(own.lines) \(own.errors)")
    }

    /// Issue 27, item 2: in a discreet service every refusal does the same work, whatever the
    /// account, its state and the reply's kind — one argon2id at the configured cost (seen as
    /// its 64 MiB allocation) and the same number of fsyncs, counted or not — through the
    /// harness as sshd runs it (real uid root: the files store in the module) and as `su` run
    /// by another user runs it (real uid that user's: the root-started helper's service call).
    /// The time itself is measured by `make timing`, not asserted here.
    @Test("a discreet refusal costs one argon2id and the same fsyncs for every account and reply kind")
    func aDiscreetRefusalCostsTheSameWork() throws {
        // The default argon2id cost (64 MiB), so each run shows as one large allocation.
        let fixture = try Fixture(config: "", moduleArguments: "deny=1000000 max_failures=0 gesture_tries=0")
        let gestures = GestureLoginTests()
        let enrolled = try TestUsers.ensure("puff-it-alice")
        try fixture.enroll(enrolled, "604917")
        try gestures.enrolled(fixture, enrolled)
        let noRecord = try TestUsers.ensure("puff-it-bob")
        let noAccount = "puff-it-no-such-account"
        let locked = try TestUsers.ensure("puff-it-carol")
        try fixture.enroll(locked, "604917")
        let now = Int(Date().timeIntervalSince1970)
        try fixture.write(fixture.state + "/" + locked, """
            puff-tally 3
            failures 5
            last-failure \(now)
            locked-until \(now + 31_536_000)
            gesture-failures 0
            passcode-at \(now)
            passcode-boot -
            admin-lock 0
            serial 5
            cleared-serial 0

            """, mode: 0o600)
        let required = try TestUsers.ensure("puff-it-dave")
        try fixture.enroll(required, "604917")
        try gestures.enrolled(fixture, required)
        #expect(try run(Artefacts.enroll, ["lock", "--user", required] + fixture.storeArguments).status == 0)
        let caller = try TestUsers.ensure("puff-it-erin")
        let callerUID = try #require(getpwnam(caller)).pointee.pw_uid

        /// fsync calls and argon2id-sized allocations of one attempt, followed into every child.
        func work(_ user: String, _ reply: String, asCaller: Bool) throws -> (fsyncs: Int, kdf: Int, result: String?) {
            let trace = fixture.root + "/trace-" + String(UInt32.random(in: 0...UInt32.max))
            var arguments = ["-f", "-qq", "-e", "trace=fsync,fdatasync,mmap", "-o", trace, Artefacts.harness,
                             "--confdir", fixture.pamDirectory, "--service", "puff-test", "--user", user, "--reply", reply]
            if asCaller { arguments += ["--caller", String(callerUID)] }
            let attempt = try run("/usr/bin/strace", arguments)
            let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
            // libsodium's argon2id maps its 64 MiB with MAP_POPULATE (PasscodeHasher's reservation
            // before it does not populate): one such mapping per argon2id run.
            let kdf = lines.filter { line in
                guard line.contains("mmap(NULL, "), line.contains("MAP_POPULATE"), let size = line.split(separator: ",").dropFirst().first
                    .flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else { return false }
                return size >= 64 << 20
            }.count
            return (lines.filter { $0.contains("fsync(") || $0.contains("fdatasync(") }.count, kdf,
                    attempt.lines.last { $0.hasPrefix("RESULT") })
        }
        let wrongGesture = "puff-gesture:1:400x300:t 2,2"
        for asCaller in [false, true] {
            var seen: [String: (fsyncs: Int, kdf: Int, result: String?)] = [:]
            for (kind, reply) in [("passcode", "111111"), ("gesture", wrongGesture)] {
                for user in [enrolled, noRecord, noAccount, locked, required] {
                    seen["\(kind) \(user)"] = try work(user, reply, asCaller: asCaller)
                }
            }
            let reference = try #require(seen["passcode \(enrolled)"])
            #expect(reference.fsyncs > 0, "the counted failure wrote nothing durably")
            for (name, cost) in seen {
                #expect(cost.result == "RESULT \(PAMCode.authError) Authentication failure", "\(name): \(cost)")
                #expect(cost.kdf == 1, "\(asCaller ? "su" : "sshd") \(name): \(cost.kdf) argon2id runs")
                #expect(cost.fsyncs == reference.fsyncs,
                        "\(asCaller ? "su" : "sshd") \(name): \(cost.fsyncs) fsyncs, the enrolled passcode case \(reference.fsyncs)")
            }
        }
        // Counted or not, as before: the enrolled account's refusals count, the others do not.
        #expect(try fixture.failures(enrolled) == 4)
        #expect(try fixture.failures(required) == 2, "only the passcode replies to the passcode-required account count")
    }
}
