import Foundation
import Testing

// The bad-input catalog, second half: a damaged or planted store, bad module arguments and
// configuration, and a poisoned environment. See BadInputCatalogTests.swift for the bench.

extension LoggingTests {
    @Suite struct BadStoreCatalog {
        let alicePasscode = CatalogBench.alicePasscode

        /// What a module that followed a planted symlink and wrote (a rehash, a counter)
        /// would change in /etc/shadow: root's entry, or Puff text in the file. Other users'
        /// entries are left out: suites running in parallel create test users and set
        /// their passwords.
        static func shadowState() -> String {
            let text = String(decoding: FileManager.default.contents(atPath: "/etc/shadow") ?? Data(), as: UTF8.self)
            let rootEntry = text.split(separator: "\n").first { $0.hasPrefix("root:") } ?? ""
            return "\(rootEntry) puff-text:\(text.contains("puff-record") || text.contains("puff-tally"))"
        }

        /// A store problem: the right and a wrong passcode both fail closed with `code` (never
        /// success or ignore, even with `nullok`), `log` names the problem, nothing leaks,
        /// nothing is counted, /etc/shadow is untouched, and once `restore` undoes the damage
        /// the store is exactly as before and the right passcode works.
        func expectFailClosed(code: Int32 = PAMCode.authInfoUnavailable, arguments: String = "deny=100 nullok",
                              log: (CatalogBench) -> String,
                              sabotage: (CatalogBench, String) throws -> Void,
                              restore: (CatalogBench, String) throws -> Void,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
            let bench = try CatalogBench(arguments: arguments)
            let alice = try bench.enrollAlice(andBob: true)
            let secrets = bench.secrets()
            let before = bench.snapshot()
            let shadow = Self.shadowState()
            try sabotage(bench, alice)
            let started = Date()
            let right = try bench.attempt(alice, replies: [alicePasscode])
            let wrong = try bench.attempt(alice, replies: ["111333"])
            let elapsed = Date().timeIntervalSince(started)
            for attempt in [right, wrong] {
                #expect(attempt.status == code, "\(attempt)", sourceLocation: sourceLocation)
                #expect(attempt.logs(log(bench)), "expected «\(log(bench))» in \(attempt)", sourceLocation: sourceLocation)
                bench.expectNoLeak(attempt, secrets, sourceLocation: sourceLocation)
            }
            // Refused before any argon2id run or wait: quick, whatever the store claims.
            #expect(elapsed < 5, "took \(elapsed) s", sourceLocation: sourceLocation)
            try restore(bench, alice)
            #expect(bench.snapshot() == before, "the store changed", sourceLocation: sourceLocation)
            #expect(Self.shadowState() == shadow, "/etc/shadow changed", sourceLocation: sourceLocation)
            #expect(try bench.fixture.failures(alice) == 0, sourceLocation: sourceLocation)
            let after = try bench.attempt(alice, replies: [alicePasscode])
            #expect(after.status == PAMCode.success, "\(after)", sourceLocation: sourceLocation)
        }

        // Helpers that build sabotages and their undo.

        static func read(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

        /// Puts `make` in place of the record and restores the original bytes afterwards.
        func replacingRecord(log: @escaping (CatalogBench, String) -> String,
                             code: Int32 = PAMCode.authInfoUnavailable,
                             sourceLocation: SourceLocation = #_sourceLocation,
                             _ make: @escaping (CatalogBench, String, Data) throws -> Void) throws {
            var original = Data()
            var user = ""
            try expectFailClosed(code: code, log: { log($0, user) }, sabotage: { bench, alice in
                user = alice
                let path = bench.record(alice)
                original = try Self.read(path)
                try FileManager.default.removeItem(atPath: path)
                try make(bench, path, original)
            }, restore: { bench, alice in
                let path = bench.record(alice)
                var info = stat()
                if lstat(path, &info) == 0 {
                    if info.st_mode & S_IFMT == S_IFDIR { rmdir(path) } else { unlink(path) }
                }
                try bench.fixture.write(path, "", mode: 0o600)
                try original.write(to: URL(fileURLWithPath: path))
            }, sourceLocation: sourceLocation)
        }

        /// Rewrites the record's text with `edit`.
        func editingRecord(log: @escaping (CatalogBench, String) -> String,
                           sourceLocation: SourceLocation = #_sourceLocation,
                           _ edit: @escaping (String) -> String) throws {
            try replacingRecord(log: log, sourceLocation: sourceLocation) { bench, path, original in
                try bench.fixture.write(path, edit(String(decoding: original, as: UTF8.self)), mode: 0o600)
            }
        }

        static func refusing(_ reason: String) -> (CatalogBench, String) -> String {
            { bench, user in "user \(user): refusing \(bench.record(user)): \(reason); failing closed" }
        }

        // MARK: the record

        @Test func recordIsASymlinkToShadow() throws {
            try replacingRecord(log: Self.refusing("symlink")) { _, path, _ in
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/etc/shadow")
            }
        }

        @Test func recordIsASymlinkToAnotherUsersRecord() throws {
            try replacingRecord(log: Self.refusing("symlink")) { _, path, _ in
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "puff-it-bob")
            }
        }

        @Test func recordIsAHardLinkToAnotherUsersRecord() throws {
            try replacingRecord(log: Self.refusing("has more than one link")) { bench, path, _ in
                #expect(link(bench.record("puff-it-bob"), path) == 0)
            }
        }

        @Test func recordIsAFIFO() throws {
            // O_NONBLOCK: a FIFO nobody writes to must not hang the login (the harness is bounded).
            try replacingRecord(log: Self.refusing("not a regular file")) { _, path, _ in
                #expect(mkfifo(path, 0o600) == 0)
            }
        }

        @Test func recordIsADirectory() throws {
            try replacingRecord(log: Self.refusing("not a regular file")) { _, path, _ in
                #expect(mkdir(path, 0o700) == 0)
            }
        }

        @Test func recordIsEmpty() throws {
            try editingRecord(log: Self.refusing("malformed (badText)")) { _ in "" }
        }

        @Test func recordIsOversize() throws {
            // One byte over the 64 KiB cap, and well-formed up to the cap: refused for its size.
            try editingRecord(log: Self.refusing("larger than allowed")) { text in
                text + "#" + String(repeating: "x", count: 64 * 1024 - text.utf8.count - 1) + "\n"
            }
        }

        @Test func recordIsTruncated() throws {
            try editingRecord(log: Self.refusing("malformed (badText)")) { text in String(text.prefix(text.count - 20)) }
        }

        @Test func recordHasAnUnknownVersion() throws {
            try editingRecord(log: Self.refusing("malformed (badHeader)")) { text in
                text.replacingOccurrences(of: "puff-record 1\n", with: "puff-record 2\n")
            }
        }

        struct AbsurdCost: Sendable, CustomTestStringConvertible {
            var name: String
            var costs: String
            var testDescription: String { name }
        }

        @Test(arguments: [
            AbsurdCost(name: "4 TiB of memory", costs: "m=4294967295,t=1,p=1"),
            AbsurdCost(name: "4 billion passes", costs: "m=8,t=4294967295,p=1"),
            AbsurdCost(name: "1 GiB + 1 KiB of memory", costs: "m=1048577,t=1,p=1"),
            AbsurdCost(name: "255 lanes", costs: "m=8,t=1,p=255"),
            AbsurdCost(name: "a cost beyond 32 bits", costs: "m=99999999999,t=1,p=1"),
        ])
        func hashWithAbsurdArgon2Parameters(_ cost: AbsurdCost) throws {
            // Refused by the record parser before libsodium sees it (the bench checks < 5 s).
            try editingRecord(log: Self.refusing("malformed (badValue)")) { text in
                text.replacingOccurrences(of: "$m=8,t=1,p=1$", with: "$" + cost.costs + "$")
            }
        }

        @Test func recordForAnotherUid() throws {
            // The account was deleted and created again with another uid: the old record is not its.
            try editingRecord(log: Self.refusing("it belongs to another user or uid")) { text in
                text.split(separator: "\n").map { line in
                    guard line.hasPrefix("uid "), let uid = UInt32(line.dropFirst(4)) else { return String(line) }
                    return "uid \(uid + 1)"
                }.joined(separator: "\n") + "\n"
            }
        }

        @Test func recordWithCRLFLineEnds() throws {
            try editingRecord(log: Self.refusing("malformed (badText)")) { text in text.replacingOccurrences(of: "\n", with: "\r\n") }
        }

        @Test func recordWithADuplicatedKey() throws {
            // A second passcode-hash line: which one would count? Neither.
            try editingRecord(log: Self.refusing("malformed (duplicateKey)")) { text in
                let hash = text.split(separator: "\n").first { $0.hasPrefix("passcode-hash ") } ?? ""
                return text + hash + "\n"
            }
        }

        @Test func recordWithAnUnknownKey() throws {
            try editingRecord(log: Self.refusing("malformed (unknownKey)")) { text in text + "nullok yes\n" }
        }

        @Test func recordNotOwnedByRoot() throws {
            let bob = try TestUsers.ensure("puff-it-bob")
            let uid = try #require(getpwnam(bob)).pointee.pw_uid
            try expectFailClosed(log: { "refusing \($0.record("puff-it-alice")): not owned by root" },
                                 sabotage: { bench, alice in chown(bench.record(alice), uid, 0) },
                                 restore: { bench, alice in chown(bench.record(alice), 0, 0) })
        }

        @Test func recordReadableByGroup() throws {
            try expectFailClosed(log: { "refusing \($0.record("puff-it-alice")): mode 640 too open" },
                                 sabotage: { bench, alice in chmod(bench.record(alice), 0o640) },
                                 restore: { bench, alice in chmod(bench.record(alice), 0o600) })
        }

        @Test func recordCopiedFromAnotherUser() throws {
            try replacingRecord(log: Self.refusing("it belongs to another user or uid")) { bench, path, _ in
                try bench.fixture.write(path, "", mode: 0o600)
                try Self.read(bench.record("puff-it-bob")).write(to: URL(fileURLWithPath: path))
            }
        }

        // MARK: the directories

        @Test func usersDirectoryIsASymlink() throws {
            try expectFailClosed(log: { "refusing \($0.recordDirectory): not a directory (symlink?)" },
                                 sabotage: { bench, _ in
                                     try FileManager.default.moveItem(atPath: bench.recordDirectory, toPath: bench.fixture.etc + "/real-users")
                                     try FileManager.default.createSymbolicLink(atPath: bench.recordDirectory, withDestinationPath: "real-users")
                                 },
                                 restore: { bench, _ in
                                     unlink(bench.recordDirectory)
                                     try FileManager.default.moveItem(atPath: bench.fixture.etc + "/real-users", toPath: bench.recordDirectory)
                                 })
        }

        @Test func usersDirectoryIsAFile() throws {
            try expectFailClosed(log: { "refusing \($0.recordDirectory): not a directory (symlink?)" },
                                 sabotage: { bench, _ in
                                     try FileManager.default.moveItem(atPath: bench.recordDirectory, toPath: bench.fixture.etc + "/real-users")
                                     try bench.fixture.write(bench.recordDirectory, "puff-it-alice\n", mode: 0o600)
                                 },
                                 restore: { bench, _ in
                                     unlink(bench.recordDirectory)
                                     try FileManager.default.moveItem(atPath: bench.fixture.etc + "/real-users", toPath: bench.recordDirectory)
                                 })
        }

        @Test func storeDirectoryMissingMeansNobodyIsEnrolled() throws {
            // Only "no such file" means "not enrolled": a store that does not exist enrolls nobody.
            // The user gets the usual prompt and PAM_AUTH_ERR, or PAM_IGNORE with nullok (the
            // stack's next module decides), and nothing is created.
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            try FileManager.default.moveItem(atPath: bench.fixture.etc + "/users", toPath: bench.fixture.root + "/users-away")
            try FileManager.default.moveItem(atPath: bench.fixture.etc + "/host.key", toPath: bench.fixture.root + "/key-away")
            try bench.setArguments("deny=100 dir=\(bench.fixture.root)/no-such-store")
            let attempt = try bench.attempt(alice, replies: [alicePasscode])
            #expect(attempt.status == PAMCode.authError, "\(attempt)")
            #expect(attempt.prompts == 1)
            #expect(attempt.logs("user \(alice): authentication failure"), "\(attempt)")
            #expect(!FileManager.default.fileExists(atPath: bench.fixture.root + "/no-such-store"))
            // With nullok, in a stack where an ignore falls through to pam_permit.
            try bench.fixture.write(bench.fixture.pamDirectory + "/" + bench.service, """
                auth [ignore=ignore success=1 default=die] \(Artefacts.module) dir=\(bench.fixture.root)/no-such-store state_dir=\(bench.fixture.state) conf=\(bench.fixture.conf) nodelay nullok
                auth [success=done default=die] pam_permit.so
                auth requisite pam_deny.so

                """, mode: 0o644)
            let ignored = try bench.attempt(alice, replies: [alicePasscode])
            #expect(ignored.status == PAMCode.success, "ignore falls through to pam_permit: \(ignored)")
            #expect(ignored.prompts == 0)
            #expect(try bench.fixture.failures(alice) == 0)
        }

        @Test func stateDirectoryMissingIsCreated() throws {
            // A fresh machine has no counters yet: the directory is created root 0700.
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            try FileManager.default.removeItem(atPath: bench.fixture.state)
            let wrong = try bench.attempt(alice, replies: ["111333"])
            #expect(wrong.status == PAMCode.authError, "\(wrong)")
            var info = stat()
            #expect(lstat(bench.fixture.state, &info) == 0)
            #expect(info.st_mode & 0o7777 == 0o700 && info.st_uid == 0)
            #expect(try bench.fixture.failures(alice) == 1)
            #expect(try bench.attempt(alice, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func usersDirectoryGroupWritable() throws {
            try expectFailClosed(log: { "refusing \($0.recordDirectory): writable by group or others" },
                                 sabotage: { bench, _ in chmod(bench.recordDirectory, 0o770) },
                                 restore: { bench, _ in chmod(bench.recordDirectory, 0o700) })
        }

        @Test func usersDirectoryWorldWritableEvenSticky() throws {
            try expectFailClosed(log: { "refusing \($0.recordDirectory): writable by group or others" },
                                 sabotage: { bench, _ in chmod(bench.recordDirectory, 0o1777) },
                                 restore: { bench, _ in chmod(bench.recordDirectory, 0o700) })
        }

        @Test func usersDirectoryNotOwnedByRoot() throws {
            let uid = try #require(getpwnam(try TestUsers.ensure("puff-it-bob"))).pointee.pw_uid
            try expectFailClosed(log: { "refusing \($0.recordDirectory): not owned by root" },
                                 sabotage: { bench, _ in chown(bench.recordDirectory, uid, 0) },
                                 restore: { bench, _ in chown(bench.recordDirectory, 0, 0) })
        }

        @Test func storeRootNotOwnedByRoot() throws {
            let uid = try #require(getpwnam(try TestUsers.ensure("puff-it-bob"))).pointee.pw_uid
            try expectFailClosed(log: { "refusing \($0.fixture.etc): not owned by root" },
                                 sabotage: { bench, _ in chown(bench.fixture.etc, uid, 0) },
                                 restore: { bench, _ in chown(bench.fixture.etc, 0, 0) })
        }

        @Test func stateDirectoryWorldWritable() throws {
            try expectFailClosed(log: { "refusing \($0.fixture.state): writable by group or others" },
                                 sabotage: { bench, _ in chmod(bench.fixture.state, 0o777) },
                                 restore: { bench, _ in chmod(bench.fixture.state, 0o700) })
        }

        @Test func counterIsASymlinkToShadow() throws {
            try expectFailClosed(log: { "refusing \($0.fixture.state)/puff-it-alice: symlink" },
                                 sabotage: { bench, alice in
                                     let counter = bench.fixture.state + "/" + alice
                                     unlink(counter)
                                     try FileManager.default.createSymbolicLink(atPath: counter, withDestinationPath: "/etc/shadow")
                                 },
                                 restore: { bench, alice in
                                     let counter = bench.fixture.state + "/" + alice
                                     unlink(counter)
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                 })
        }

        // A counter that does not parse locks the account until an administrator's reset
        // (issue 11: it used to be PAM_AUTHINFO_UNAVAIL, and the reset refused the file).
        @Test func counterIsGarbage() throws {
            try expectFailClosed(code: PAMCode.authError, log: { _ in "the counter file does not parse" },
                                 sabotage: { bench, alice in
                                     try bench.fixture.write(bench.fixture.state + "/" + alice, "failures lots\n", mode: 0o600)
                                 },
                                 restore: { bench, alice in
                                     unlink(bench.fixture.state + "/" + alice)
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                 })
        }

        @Test func counterIsAFIFO() throws {
            try expectFailClosed(log: { "refusing \($0.fixture.state)/puff-it-alice: not a regular file" },
                                 sabotage: { bench, alice in
                                     unlink(bench.fixture.state + "/" + alice)
                                     #expect(mkfifo(bench.fixture.state + "/" + alice, 0o600) == 0)
                                 },
                                 restore: { bench, alice in
                                     unlink(bench.fixture.state + "/" + alice)
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                 })
        }

        @Test func counterOversize() throws {
            // Counters are at most 1024 bytes (two slots); a larger file is not one of ours.
            try expectFailClosed(log: { "refusing \($0.fixture.state)/puff-it-alice: larger than allowed" },
                                 sabotage: { bench, alice in
                                     try bench.fixture.write(bench.fixture.state + "/" + alice, String(repeating: "\n", count: 1025), mode: 0o600)
                                 },
                                 restore: { bench, alice in
                                     unlink(bench.fixture.state + "/" + alice)
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                 })
        }

        @Test func counterNotOwnedByRoot() throws {
            let uid = try #require(getpwnam(try TestUsers.ensure("puff-it-bob"))).pointee.pw_uid
            try expectFailClosed(log: { "refusing \($0.fixture.state)/puff-it-alice: not owned by root" },
                                 sabotage: { bench, alice in
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                     chown(bench.fixture.state + "/" + alice, uid, 0)
                                 },
                                 restore: { bench, alice in chown(bench.fixture.state + "/" + alice, 0, 0) })
        }

        /// Issue 27, item 5: a counter written before `max_failures` existed, 500 failures and
        /// its timed lock long over, is locked until a reset: the right passcode is refused
        /// unverified and uncounted (it used to get one more verified guess).
        @Test func counterAboveTheCapWithAnExpiredLock() throws {
            try expectFailClosed(code: PAMCode.authError, arguments: "deny=5 nullok",
                                 log: { _ in "attempt refused, locked until an administrator resets it" },
                                 sabotage: { bench, alice in
                                     try bench.fixture.write(bench.fixture.state + "/" + alice,
                                                             HardeningTests.counter(failures: 500).replacingOccurrences(
                                                                 of: "locked-until 0", with: "locked-until 1700003600"),
                                                             mode: 0o600)
                                 },
                                 restore: { bench, alice in
                                     #expect(RealClientTests.rawFailures(bench.fixture, alice) == 500, "counted while locked")
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                     unlink(bench.fixture.state + "/" + alice)
                                 })
        }

        @Test func counterOfAnUnknownVersion() throws {
            try expectFailClosed(code: PAMCode.authError, log: { _ in "the counter file does not parse" },
                                 sabotage: { bench, alice in
                                     try bench.fixture.write(bench.fixture.state + "/" + alice, "puff-tally 9\nfailures 0\n", mode: 0o600)
                                 },
                                 restore: { bench, alice in
                                     unlink(bench.fixture.state + "/" + alice)
                                     let reset = try run(Artefacts.enroll, ["reset", "--user", alice] + bench.fixture.storeArguments)
                                     #expect(reset.status == 0)
                                 })
        }

        // MARK: the host key

        func hostKeyCase(log: String, _ make: @escaping (String) throws -> Void) throws {
            var original = Data()
            try expectFailClosed(log: { "refusing \($0.fixture.etc)/host.key: \(log); failing closed" },
                                 sabotage: { bench, _ in
                                     let path = bench.fixture.etc + "/host.key"
                                     original = try Self.read(path)
                                     unlink(path)
                                     try make(path)
                                 },
                                 restore: { bench, _ in
                                     let path = bench.fixture.etc + "/host.key"
                                     if rmdir(path) != 0 { unlink(path) }
                                     try bench.fixture.write(path, "", mode: 0o600)
                                     try original.write(to: URL(fileURLWithPath: path))
                                 })
        }

        @Test func hostKeyMissing() throws {
            try hostKeyCase(log: "missing while records exist") { _ in }
        }

        @Test func hostKeyShort() throws {
            try hostKeyCase(log: "not a 32-byte key") { path in
                try Data(repeating: 0x41, count: 16).write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
            }
        }

        @Test func hostKeyLong() throws {
            try hostKeyCase(log: "larger than allowed") { path in
                try Data(repeating: 0x41, count: 33).write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
            }
        }

        @Test func hostKeyWorldReadable() throws {
            var original = Data()
            try expectFailClosed(log: { "refusing \($0.fixture.etc)/host.key: mode 644 too open" },
                                 sabotage: { bench, _ in
                                     original = try Self.read(bench.fixture.etc + "/host.key")
                                     chmod(bench.fixture.etc + "/host.key", 0o644)
                                 },
                                 restore: { bench, _ in
                                     chmod(bench.fixture.etc + "/host.key", 0o600)
                                     let key = try Self.read(bench.fixture.etc + "/host.key")
                                     #expect(key == original)
                                 })
        }

        @Test func hostKeyIsADirectory() throws {
            try hostKeyCase(log: "not a regular file") { path in #expect(mkdir(path, 0o700) == 0) }
        }

        @Test func hostKeyHardLinked() throws {
            // A second name for the key (somewhere an attacker could read it later) is refused.
            try expectFailClosed(log: { "refusing \($0.fixture.etc)/host.key: has more than one link; failing closed" },
                                 sabotage: { bench, _ in #expect(link(bench.fixture.etc + "/host.key", bench.fixture.etc + "/key-copy") == 0) },
                                 restore: { bench, _ in unlink(bench.fixture.etc + "/key-copy") })
        }

        @Test func hostKeyIsASymlink() throws {
            try hostKeyCase(log: "symlink") { path in
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/etc/shadow")
            }
        }

        // MARK: sealed templates

        func gestureBench() throws -> (CatalogBench, String, String) {
            let bench = try CatalogBench()
            let alice = try TestUsers.ensure("puff-it-alice")
            let bob = try TestUsers.ensure("puff-it-bob")
            try GestureLoginTests().enrolled(bench.fixture, alice)
            try GestureLoginTests().enrolled(bench.fixture, bob)
            return (bench, alice, bob)
        }

        /// The template of `record` replaced by `template`.
        static func withTemplate(_ record: String, _ template: String) -> String {
            record.split(separator: "\n").map { $0.hasPrefix("gesture-template ") ? "gesture-template " + template : String($0) }
                .joined(separator: "\n") + "\n"
        }

        static func template(of record: String) throws -> String {
            let line = try #require(record.split(separator: "\n").first { $0.hasPrefix("gesture-template ") })
            return String(line.dropFirst("gesture-template ".count))
        }

        func expectTemplateRefused(_ bench: CatalogBench, _ user: String, original: String) throws {
            let secrets = bench.secrets()
            let genuine = GestureLoginTests.wire(GestureLoginTests.genuine)
            let attempt = try bench.attempt(user, replies: [genuine])
            #expect(attempt.status == PAMCode.authInfoUnavailable, "\(attempt)")
            #expect(attempt.logs("user \(user): refusing \(bench.record(user)): the sealed gesture template does not open"), "\(attempt)")
            bench.expectNoLeak(attempt, secrets)
            #expect(try bench.fixture.failures(user) == 0)
            try bench.fixture.write(bench.record(user), original, mode: 0o600)
            #expect(try bench.attempt(user, replies: [genuine]).status == PAMCode.success)
        }

        @Test func tamperedSealedTemplate() throws {
            let (bench, alice, _) = try gestureBench()
            let original = try String(contentsOfFile: bench.record(alice), encoding: .utf8)
            var template = Array(try Self.template(of: original).utf8)
            // One bit of the ciphertext (past the 24-byte nonce), still valid base64.
            template[50] = template[50] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            try bench.fixture.write(bench.record(alice), Self.withTemplate(original, String(decoding: template, as: UTF8.self)), mode: 0o600)
            try expectTemplateRefused(bench, alice, original: original)
        }

        @Test func tamperedTemplateLeavesThePasscodeWorking() throws {
            // The template is opened only when a gesture is sent: the other factor still works.
            let (bench, alice, _) = try gestureBench()
            #expect(try bench.fixture.enroll(alice, alicePasscode).status == 0)
            let original = try String(contentsOfFile: bench.record(alice), encoding: .utf8)
            var template = Array(try Self.template(of: original).utf8)
            template[50] = template[50] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            try bench.fixture.write(bench.record(alice), Self.withTemplate(original, String(decoding: template, as: UTF8.self)), mode: 0o600)
            let passcode = try bench.attempt(alice, replies: [alicePasscode])
            #expect(passcode.status == PAMCode.success, "\(passcode)")
            let gesture = try bench.attempt(alice, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
            #expect(gesture.status == PAMCode.authInfoUnavailable, "\(gesture)")
        }

        @Test func templateCopiedFromAnotherUser() throws {
            let (bench, alice, bob) = try gestureBench()
            let original = try String(contentsOfFile: bench.record(alice), encoding: .utf8)
            let bobs = try Self.template(of: try String(contentsOfFile: bench.record(bob), encoding: .utf8))
            #expect(bobs != (try Self.template(of: original)))
            try bench.fixture.write(bench.record(alice), Self.withTemplate(original, bobs), mode: 0o600)
            try expectTemplateRefused(bench, alice, original: original)
        }

        // MARK: stale temp files

        @Test func staleTempFilesAreNeverRead() throws {
            // What a crash between create and rename leaves: a dot-named temp file. It is
            // neither read as a record nor removed by a login; the real record is used.
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            let temp = bench.recordDirectory + "/." + alice + ".tmp-0123456789abcdef"
            try bench.fixture.write(temp, "puff-record 1\nuser puff-it-alice\nuid 0\n", mode: 0o600)
            try bench.fixture.write(bench.fixture.etc + "/.host.key.tmp-0123456789abcdef", String(repeating: "k", count: 32), mode: 0o600)
            let before = bench.snapshot()
            let wrong = try bench.attempt(alice, replies: ["111333"])
            #expect(wrong.status == PAMCode.authError, "\(wrong)")
            #expect(wrong.logs("user \(alice): authentication failure (1 in a row)"), "\(wrong)")
            let right = try bench.attempt(alice, replies: [alicePasscode])
            #expect(right.status == PAMCode.success, "\(right)")
            #expect(right.logs("user \(alice): passcode accepted"), "\(right)")
            #expect(bench.snapshot() == before)
            // A name that would be a temp file is never a user name, so it cannot be asked for.
            let asked = try bench.attempt("." + alice + ".tmp-0123456789abcdef", replies: [alicePasscode])
            #expect(asked.status == PAMCode.authError, "\(asked)")
        }

        // MARK: configuration file

        @Test func configurationFileWorldWritable() throws {
            try expectFailClosed(log: { "refusing \($0.fixture.conf): mode 666 too open" },
                                 sabotage: { bench, _ in chmod(bench.fixture.conf, 0o666) },
                                 restore: { bench, _ in chmod(bench.fixture.conf, 0o600) })
        }

        @Test func configurationFileIsASymlink() throws {
            var original = Data()
            try expectFailClosed(log: { "refusing \($0.fixture.conf): symlink" },
                                 sabotage: { bench, _ in
                                     original = try Self.read(bench.fixture.conf)
                                     unlink(bench.fixture.conf)
                                     try FileManager.default.createSymbolicLink(atPath: bench.fixture.conf, withDestinationPath: "/etc/shadow")
                                 },
                                 restore: { bench, _ in
                                     unlink(bench.fixture.conf)
                                     try bench.fixture.write(bench.fixture.conf, String(decoding: original, as: UTF8.self), mode: 0o600)
                                 })
        }

        @Test func configurationFileNotUTF8() throws {
            var original = Data()
            try expectFailClosed(code: PAMCode.serviceError, log: { "configuration: \($0.fixture.conf): not valid UTF-8; failing closed" },
                                 sabotage: { bench, _ in
                                     original = try Self.read(bench.fixture.conf)
                                     try (original + Data([0x64, 0x65, 0x6e, 0x79, 0x3d, 0xff, 0x0a])).write(to: URL(fileURLWithPath: bench.fixture.conf))
                                 },
                                 restore: { bench, _ in try original.write(to: URL(fileURLWithPath: bench.fixture.conf)) })
        }

        // MARK: module arguments

        @Test func unknownArgumentIsLoggedAndIgnored() throws {
            // By design (pam_faillock does the same): the module works, and the log says what it ignored.
            let bench = try CatalogBench(arguments: "deny=100 frobnicate=1 nulok")
            let alice = try bench.enrollAlice()
            let wrong = try bench.attempt(alice, replies: ["111333"])
            #expect(wrong.status == PAMCode.authError, "\(wrong)")
            #expect(wrong.logs("argument: unknown option 'frobnicate' ignored"), "\(wrong)")
            #expect(wrong.logs("argument: unknown option 'nulok' ignored"), "\(wrong)")
            #expect(try bench.fixture.failures(alice) == 1)
            // The typo `nulok` did not turn into nullok: a user without a record is still refused.
            let bob = try TestUsers.ensure("puff-it-bob")
            #expect(try bench.attempt(bob, replies: ["111333"]).status == PAMCode.authError)
            #expect(try bench.attempt(alice, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func duplicatedArgumentLastOneWins() throws {
            // Like pam_faillock, later settings override earlier ones (the file, then each argument in order).
            let bench = try CatalogBench(arguments: "deny=1 deny=3 unlock_time=0",
                                         config: "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 1\n")
            let alice = try bench.enrollAlice()
            for count in 1...2 {
                let wrong = try bench.attempt(alice, replies: ["111333"])
                #expect(wrong.logs("user \(alice): authentication failure (\(count) in a row)"), "\(wrong)")
                #expect(!wrong.logs("locked"), "\(wrong)")
            }
            let third = try bench.attempt(alice, replies: ["111333"])
            #expect(third.logs("user \(alice): locked until an administrator resets it"), "\(third)")
            #expect(try bench.attempt(alice, replies: [alicePasscode]).status == PAMCode.authError)
            #expect(try bench.fixture.failures(alice) == 3)
        }

        struct BadArgument: Sendable, CustomTestStringConvertible {
            var argument: String
            var logged: String
            /// False for checks made on the options as a whole, logged without the word "argument".
            var fromArgument = true
            var testDescription: String { argument }
        }

        static let integer = "must be an integer in"
        @Test(arguments: [
            BadArgument(argument: "deny=1000001", logged: "deny: \(integer) 0...1000000"),
            BadArgument(argument: "deny=-1", logged: "deny: \(integer) 0...1000000"),
            BadArgument(argument: "deny=99999999999999999999", logged: "deny: \(integer) 0...1000000"),
            BadArgument(argument: "deny=", logged: "deny: \(integer) 0...1000000"),
            BadArgument(argument: "kdf_ops=0", logged: "kdf_ops: \(integer) 1...16"),
            BadArgument(argument: "kdf_ops=17", logged: "kdf_ops: \(integer) 1...16"),
            BadArgument(argument: "kdf_mem_kib=7", logged: "kdf_mem_kib: \(integer) 8...1048576"),
            BadArgument(argument: "kdf_mem_kib=4294967296", logged: "kdf_mem_kib: \(integer) 8...1048576"),
            BadArgument(argument: "lock_wait=0", logged: "lock_wait: \(integer) 1...600"),
            BadArgument(argument: "unlock_time=366d", logged: "unlock_time: must be a duration"),
            BadArgument(argument: "fail_interval=9223372036854775807s", logged: "fail_interval: must be a duration"),
            BadArgument(argument: "delays=60,,300", logged: "delays: must be a comma-separated list of durations"),
            BadArgument(argument: "delays=" + Array(repeating: "1m", count: 33).joined(separator: ","),
                        logged: "delays: must list 1 to 32 durations"),
            BadArgument(argument: "gesture_overflow=99", logged: "gesture_overflow: must be a percentage in 100.0...1000.0"),
            BadArgument(argument: "gesture_tolerance=1 gesture_raster=20", logged: "gesture_*: the gesture parameters do not fit together",
                        fromArgument: false),
            BadArgument(argument: "nodelay=yes", logged: "nodelay: takes no value"),
            BadArgument(argument: "dir=relative/path", logged: "dir: must be an absolute path without '..'"),
            BadArgument(argument: "state_dir=/tmp/../etc", logged: "state_dir: must be an absolute path without '..'"),
            BadArgument(argument: "passcode_interval=2w", logged: "passcode_interval: must be a duration"),
            // Issue 27: the options pam_puff(8) and puff.conf(5) now document.
            BadArgument(argument: "nullok_prompt=yes", logged: "nullok_prompt: takes no value"),
            BadArgument(argument: "max_failures=1000001", logged: "max_failures: \(integer) 0...1000000"),
            BadArgument(argument: "min_passcode=digits5", logged: "min_passcode: must be digits4, digits6, numeric or alphanumeric"),
            BadArgument(argument: "root_exempt=1", logged: "root_exempt: takes no value"),
            // Issue 26: the services told the state at a login screen.
            BadArgument(argument: "tell_state=../lightdm", logged: "tell_state: must list 1 to 16 PAM service names"),
            BadArgument(argument: "tell_state=lightdm,", logged: "tell_state: must list 1 to 16 PAM service names"),
            // Issue 33: the login keyring.
            BadArgument(argument: "keyring=maybe", logged: "keyring: must be yes or no"),
        ])
        func outOfRangeArgument(_ bad: BadArgument) throws {
            // After `nullok`: a bad value must not leave the module ignoring anyone.
            let bench = try CatalogBench(arguments: "deny=100 nullok " + bad.argument)
            let alice = try TestUsers.ensure("puff-it-alice")
            #expect(try bench.fixture.enroll(alice, alicePasscode).status == 0)
            for user in [alice, try TestUsers.ensure("puff-it-bob")] {
                let attempt = try bench.attempt(user, replies: [alicePasscode])
                #expect(attempt.status == PAMCode.serviceError, "\(attempt)")
                #expect(attempt.prompts == 0, "\(attempt)")
                #expect(attempt.logs("configuration: " + (bad.fromArgument ? "argument " : "") + bad.logged), "\(attempt)")
                #expect(attempt.logs("; failing closed"), "\(attempt)")
            }
            #expect(try bench.fixture.failures(alice) == 0)
            try bench.setArguments("deny=100")
            #expect(try bench.attempt(alice, replies: [alicePasscode]).status == PAMCode.success)
        }

        @Test func argumentNotUTF8() throws {
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            let service = bench.fixture.pamDirectory + "/" + bench.service
            var line = Data("auth required \(Artefacts.module) dir=\(bench.fixture.etc) state_dir=\(bench.fixture.state) conf=\(bench.fixture.conf) nodelay nullok prompt=".utf8)
            line += Data([0xc3, 0x28, 0x0a])
            try line.write(to: URL(fileURLWithPath: service))
            let attempt = try bench.attempt(alice, replies: [alicePasscode])
            #expect(attempt.status == PAMCode.serviceError, "\(attempt)")
            #expect(attempt.prompts == 0)
            #expect(attempt.logs("module arguments are not valid UTF-8 or exceed the limits"), "\(attempt)")
        }

        @Test func tooManyArguments() throws {
            let bench = try CatalogBench(arguments: "nullok " + Array(repeating: "debug", count: 64).joined(separator: " "))
            let alice = try bench.enrollAlice()
            let attempt = try bench.attempt(alice, replies: [alicePasscode])
            #expect(attempt.status == PAMCode.serviceError, "\(attempt)")
            #expect(attempt.logs("module arguments are not valid UTF-8 or exceed the limits"), "\(attempt)")
            #expect(try bench.fixture.failures(alice) == 0)
        }

        // MARK: environment

        /// Every path the harness and the module open, as strace sees it (`-y` resolves the
        /// directory descriptor of each `openat`, so relative opens are compared by full path).
        static func openedPaths(_ bench: CatalogBench, user: String, environment: [String]) throws -> (Set<String>, Run) {
            let trace = bench.fixture.root + "/trace-\(environment.count)"
            let result = try run("/usr/bin/env", ["-i"] + environment + [
                "/usr/bin/strace", "-f", "-qq", "-y", "-e", "trace=openat,open", "-o", trace,
                Artefacts.harness, "--confdir", bench.fixture.pamDirectory, "--service", bench.service,
                "--user", user, "--reply", CatalogBench.alicePasscode])
            let text = try String(contentsOfFile: trace, encoding: .utf8)
            var paths = Set<String>()
            for line in text.split(separator: "\n") {
                guard let open = line.range(of: "open") else { continue }
                let call = line[open.lowerBound...]
                // openat(3</dir>, "name", ...) or openat(AT_FDCWD, "/path", ...) or open("/path", ...)
                guard let firstQuote = call.firstIndex(of: "\"") else { continue }
                let afterQuote = call[call.index(after: firstQuote)...]
                guard let closing = afterQuote.firstIndex(of: "\"") else { continue }
                let name = String(afterQuote[..<closing])
                var directory = ""
                if let lt = call.firstIndex(of: "<"), lt < firstQuote, let gt = call[lt...].firstIndex(of: ">"), gt < firstQuote {
                    directory = String(call[call.index(after: lt)..<gt]) + "/"
                }
                paths.insert(name.hasPrefix("/") ? name : directory + name)
            }
            return (paths, result)
        }

        @Test func poisonedEnvironmentOpensTheSameFiles() throws {
            let bench = try CatalogBench()
            let alice = try bench.enrollAlice()
            let poison = bench.fixture.root + "/poison"
            for directory in ["home/.config/puff", "xdg-config/puff", "xdg-data", "xdg-runtime", "xdg-cache", "xdg-state", "tmp"] {
                try FileManager.default.createDirectory(atPath: poison + "/" + directory, withIntermediateDirectories: true)
            }
            try bench.fixture.write(poison + "/xdg-config/puff/puff.conf", "nullok\ndeny = 0\n", mode: 0o600)
            try bench.fixture.write(poison + "/home/.config/puff/puff.conf", "nullok\n", mode: 0o600)
            let clean = ["PATH=/usr/bin:/bin"]
            let poisoned = clean + [
                "HOME=\(poison)/home", "XDG_CONFIG_HOME=\(poison)/xdg-config", "XDG_DATA_HOME=\(poison)/xdg-data",
                "XDG_RUNTIME_DIR=\(poison)/xdg-runtime", "XDG_CACHE_HOME=\(poison)/xdg-cache", "XDG_STATE_HOME=\(poison)/xdg-state",
                "XDG_CONFIG_DIRS=\(poison)/xdg-config", "XDG_DATA_DIRS=\(poison)/xdg-data",
                "TMPDIR=\(poison)/tmp", "LANG=de_DE.UTF-8", "LC_ALL=fr_FR.UTF-8", "LANGUAGE=de", "LC_MESSAGES=de_DE.UTF-8",
                "NLSPATH=\(poison)/%N", "LOCPATH=\(poison)", "USER=root", "LOGNAME=root",
            ]
            let (reference, referenceRun) = try Self.openedPaths(bench, user: alice, environment: clean)
            let (traced, tracedRun) = try Self.openedPaths(bench, user: alice, environment: poisoned)
            #expect(referenceRun.status == PAMCode.success, "\(referenceRun.output)\(referenceRun.errors)")
            #expect(tracedRun.status == PAMCode.success, "\(tracedRun.output)\(tracedRun.errors)")
            // The trace saw the module at work: the record, the host key and the counter.
            #expect(reference.contains(bench.record(alice)), "\(reference.sorted())")
            #expect(reference.contains(bench.fixture.etc + "/host.key"))
            #expect(reference.contains(bench.fixture.state + "/" + alice))
            #expect(traced == reference, "only clean: \(reference.subtracting(traced).sorted()); only poisoned: \(traced.subtracting(reference).sorted())")
            #expect(!traced.contains { $0.contains(poison) })
            #expect(try bench.fixture.failures(alice) == 0)
        }
    }
}
