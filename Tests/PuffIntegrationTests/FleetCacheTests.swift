import Foundation
import Testing

/// Fleet mode's offline cache (`ldap_cache_ttl`) against a real slapd: filled by online
/// logins, used only when the directory is unreachable, with the local counter and lockout
/// offline, offline failures pushed to the directory when it is back, a TTL, the directory's
/// lock state honoured, and a cache file that is not root's and private refused.
@Suite(.serialized)
struct FleetCacheTests {
    static let passcode = "135790"

    /// The cache file of `user` on `host`.
    static func cachePath(_ host: Fixture, _ user: String) -> String { host.state + "/fleet-cache/" + user }

    /// Mode and owner of `path` (lstat), or nil.
    static func modeAndOwner(_ path: String) -> (mode: mode_t, uid: uid_t, isLink: Bool)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & 0o7777, info.st_uid, info.st_mode & S_IFMT == S_IFLNK)
    }

    /// The cache file's `key value` lines.
    static func cacheFields(_ path: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, fields[String(parts[0])] == nil { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// Rewrites the `fetched` time of the cache file (root 0600 kept), as if fetched `age` s ago.
    static func age(_ path: String, by age: Int) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let fetched = try #require(try cacheFields(path)["fetched"])
        let aged = text.replacingOccurrences(of: "fetched \(fetched)\n", with: "fetched \(Int(Date().timeIntervalSince1970) - age)\n")
        try Data(aged.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    @Test func withoutTheCacheNothingIsCachedAndOfflineFailsClosed() throws {
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-nc")
        let (directory, host1, user) = (fleet.directory, fleet.host1, fleet.user)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(!FileManager.default.fileExists(atPath: host1.state + "/fleet-cache"))
        #expect(try host1.status(user)["cache"] is NSNull)
        directory.stop()
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
    }

    @Test func aLaptopLogsInOfflineWithItsLocalCounterAndPushesItsFailuresLater() throws {
        let capture = try #require(SyslogCapture(), "/dev/log is taken by a running syslog daemon")
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-cache", extra: "deny = 3\nldap_cache_ttl = 1d\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        let cache = Self.cachePath(host1, user)
        // Enrolling caches nothing; the first online login does, root 0600 in a root 0700 directory.
        #expect(!FileManager.default.fileExists(atPath: cache))
        #expect(try host1.status(user)["cache"] is NSNull)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        let file = try #require(Self.modeAndOwner(cache))
        #expect(file.mode == 0o600 && file.uid == 0 && !file.isLink)
        let folder = try #require(Self.modeAndOwner(host1.state + "/fleet-cache"))
        #expect(folder.mode == 0o700 && folder.uid == 0)
        let fields = try Self.cacheFields(cache)
        #expect(fields["failures"] == "0" && fields["offline-failures"] == "0" && fields["admin-lock"] == "0", "\(fields)")
        // The record is the directory's, byte for byte: still peppered and sealed under the fleet key.
        let record = try #require(try directory.binaryValue(user, "puffRecord"))
        let cachedRecord = try String(contentsOfFile: cache, encoding: .utf8).components(separatedBy: "\n\n").last ?? ""
        #expect(Data(cachedRecord.utf8) == record, "the cached record differs from puffRecord")
        #expect(cachedRecord.contains("passcode-hash $argon2id$"))
        let cached = try #require(try host1.status(user)["cache"] as? [String: Any])
        #expect((cached["age"] as? Int).map { (0...60).contains($0) } == true && cached["fresh"] as? Bool == true)
        #expect(cached["offline_failures"] as? Int == 0)
        #expect(try host1.status(user)["directory_unreachable"] as? Bool == false)
        let text = try run(Artefacts.enroll, ["status", "--user", user] + host1.storeArguments)
        #expect(text.output.contains("This host has a cached copy of \(user)'s record for offline logins"), "\(text.output)")

        // The directory goes away: the host with a copy logs in, the host without fails closed.
        directory.stop()
        _ = capture.drain()
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
        // Wrong passcodes count in the local counter and lock locally (deny = 3).
        for guess in 1...3 {
            let wrong = try host1.authenticate(user, replies: [String(format: "%06d", 700_000 + guess)])
            #expect(wrong.status == PAMCode.authError, "\(wrong.output)")
        }
        #expect(try Self.cacheFields(cache)["offline-failures"] == "3")
        // As the user's own locker or su sees it (a discreet service shows every account the same).
        let locked = try host1.authenticate(user, replies: [Self.passcode], bySelf: true)
        #expect(locked.status == PAMCode.authError)
        #expect(locked.lines.contains("ERROR Puff: too many failed attempts; try again in 1 minute."), "\(locked.output)")
        #expect(!locked.lines.contains { $0.hasPrefix("PROMPT") })
        // `status` on the laptop shows what an offline login goes by.
        let offlineStatus = try host1.status(user)
        #expect(offlineStatus["directory_unreachable"] as? Bool == true, "\(offlineStatus)")
        #expect(offlineStatus["failures"] as? Int == 3 && offlineStatus["locked"] as? Bool == true, "\(offlineStatus)")
        #expect((offlineStatus["cache"] as? [String: Any])?["offline_failures"] as? Int == 3, "\(offlineStatus)")
        let host2Status = try run(Artefacts.enroll, ["status", "--user", user] + host2.storeArguments)
        #expect(host2Status.status != 0 && host2Status.errors.contains("no cached copy"), "\(host2Status.errors)")
        // The offline failures are in the log, named as such.
        // Fleet mode's store work, and its log lines, are the helper's (service calls).
        let lines = capture.drain().filter { $0.contains("puff-check[") && $0.contains("user \(user)") }
        #expect(lines.filter { $0.contains("authentication failure (") && $0.contains("offline: the directory is unreachable") }.count == 3,
                "\(lines)")

        // Back online: the three offline failures join the fleet's count at host1's next
        // attempt, so they lock the user on every host, as if counted online.
        try directory.start()
        #expect(try directory.failures(user) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authError)
        #expect(try directory.failures(user) == 3)
        #expect(try directory.values(user, "puffLastFailureHost") == ["host1"])
        #expect(try Self.cacheFields(cache)["offline-failures"] == "0")
        #expect(try Self.cacheFields(cache)["failures"] == "3")
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.authError, "locked fleet-wide")
        // An administrator's reset in the directory (on host2) takes effect on host1's next
        // online login.
        #expect(try run(Artefacts.enroll, ["reset", "--user", user] + host2.storeArguments).status == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try Self.cacheFields(cache)["failures"] == "0")
        #expect(try directory.failures(user) == 0)

        // A record removed from the directory takes the cached copy with it at the next
        // online attempt; offline there is then nothing to log in with.
        #expect(try run(Artefacts.enroll, ["remove", "--user", user] + host2.storeArguments).status == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authError)
        #expect(!FileManager.default.fileExists(atPath: cache))
        directory.stop()
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
    }

    /// Issue 32, item 9: a provider stopped with SIGSTOP (its kernel still accepts connections
    /// into the listen queue, and nothing answers) is out of reach, as docs/admin/fleet.md says: both
    /// hosts (ldapi with SASL EXTERNAL, ldaps with a password bind, whose TLS handshake runs out
    /// of time) log in from their cached copies, and a wrong passcode is counted on the host.
    /// A server that answers but fails the handshake (a certificate of another CA) still fails
    /// closed, with a fresh cached copy at hand.
    @Test func aStoppedServerIsOutOfReachAndTheCacheServes() throws {
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-hung", extra: "ldap_cache_ttl = 1d\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        let pidText = try String(contentsOfFile: directory.root + "/slapd.pid", encoding: .utf8)
        let pid = try #require(pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, SIGSTOP) == 0)
        defer { kill(pid, SIGCONT) }
        for host in [host1, host2] {
            let started = Date()
            let login = try host.authenticate(user, replies: [Self.passcode])
            #expect(login.status == PAMCode.success, "\(login.output)")
            #expect(Date().timeIntervalSince(started) < 20)
        }
        #expect(try host2.authenticate(user, replies: ["700001"]).status == PAMCode.authError)
        #expect(try Self.cacheFields(Self.cachePath(host2, user))["offline-failures"] == "1")

        kill(pid, SIGCONT)
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        let otherCA = directory.root + "/other-ca.pem"
        let made = try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                "-days", "1", "-subj", "/CN=Other CA", "-keyout", directory.root + "/other-ca.key",
                                                "-out", otherCA])
        #expect(made.status == 0)
        let conf = try String(contentsOfFile: host2.conf, encoding: .utf8)
        try host2.write(host2.conf, conf.replacingOccurrences(of: "ldap_ca_file = \(directory.caFile)", with: "ldap_ca_file = \(otherCA)"),
                        mode: 0o600)
        #expect(FileManager.default.fileExists(atPath: Self.cachePath(host2, user)))
        #expect(try host2.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
    }

    @Test func anExpiredOrUntrustedCacheFailsClosed() throws {
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-ttl", extra: "ldap_cache_ttl = 1d\n")
        let (directory, host1, user) = (fleet.directory, fleet.host1, fleet.user)
        let cache = Self.cachePath(host1, user)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        directory.stop()
        // Within the TTL it serves; beyond it, or fetched "in the future", it does not.
        try Self.age(cache, by: 86400 - 120)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        try Self.age(cache, by: 86400 + 5)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
        try Self.age(cache, by: -3600)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable)
        try Self.age(cache, by: 10)
        let good = try Data(contentsOf: URL(fileURLWithPath: cache))
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)

        // Not root's, readable by others, a symlink, damaged: refused, never a success.
        func restore() throws {
            unlink(cache)
            try good.write(to: URL(fileURLWithPath: cache))
            chmod(cache, 0o600)
            chown(cache, 0, 0)
        }
        let nobody: uid_t = 65534
        #expect(chown(cache, nobody, 0) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "foreign owner")
        try restore()
        #expect(chmod(cache, 0o644) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "mode 0644")
        try restore()
        let elsewhere = host1.root + "/elsewhere"
        try good.write(to: URL(fileURLWithPath: elsewhere))
        chmod(elsewhere, 0o600)
        unlink(cache)
        #expect(symlink(elsewhere, cache) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "symlink")
        try restore()
        var cut = good
        cut.removeLast(10)
        try cut.write(to: URL(fileURLWithPath: cache))
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "cut short")
        let edited = String(decoding: good, as: UTF8.self).replacingOccurrences(of: "admin-lock 0", with: "admin-lock 7")
        try Data(edited.utf8).write(to: URL(fileURLWithPath: cache))
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "edited")
        // A directory that others can write to is refused as well.
        try restore()
        #expect(chmod(host1.state + "/fleet-cache", 0o777) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authInfoUnavailable, "open directory")
        #expect(chmod(host1.state + "/fleet-cache", 0o700) == 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
    }

    @Test func theDirectorysLockAsLastReadHoldsOffline() throws {
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-lk", extra: "deny = 3\nldap_cache_ttl = 1d\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        let cache = Self.cachePath(host1, user)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.success)
        // Locked through failures on the other host, while host1 is online.
        for guess in 1...3 {
            #expect(try host2.authenticate(user, replies: [String(format: "%06d", 800_000 + guess)]).status == PAMCode.authError)
        }
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authError)
        #expect(try Self.cacheFields(cache)["failures"] == "3")
        directory.stop()
        let offline = try host1.authenticate(user, replies: [Self.passcode], bySelf: true)
        #expect(offline.status == PAMCode.authError, "\(offline.output)")
        #expect(offline.lines.contains { $0.contains("too many failed attempts") }, "\(offline.output)")
        // The local reset on host1 alone does not reach the directory: it is down, so the
        // reset fails and the laptop stays locked.
        #expect(try run(Artefacts.enroll, ["reset", "--user", user] + host1.storeArguments).status != 0)
        #expect(try host1.authenticate(user, replies: [Self.passcode]).status == PAMCode.authError)
    }
}
