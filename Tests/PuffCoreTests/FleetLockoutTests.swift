import Foundation
import PuffCore
import Testing

@Suite("Fleet lockout and directory options")
struct FleetLockoutTests {
    let policy = LockoutPolicy()  // deny 5; 1, 5, 15, 15, 60 minutes; until reset from the 10th

    @Test("the lock after the n-th failure follows the local policy's steps")
    func lockEnds() {
        #expect(policy.lockEnd(afterFailures: 0, at: 1000) == 0)
        #expect(policy.lockEnd(afterFailures: 4, at: 1000) == 0)
        #expect(policy.lockEnd(afterFailures: 5, at: 1000) == 1060)
        #expect(policy.lockEnd(afterFailures: 6, at: 1000) == 1300)
        #expect(policy.lockEnd(afterFailures: 9, at: 1000) == 4600)
        #expect(policy.lockEnd(afterFailures: 10, at: 1000) == Tally.untilReset)
        var noCeiling = policy
        noCeiling.maxFailures = 0
        #expect(noCeiling.lockEnd(afterFailures: 500, at: 1000) == 4600)
        // The same as counting the failures one by one locally.
        var tally = Tally()
        for failure in 1...12 {
            tally = policy.recordingFailure(in: tally, now: 1000)
            #expect(tally.lockedUntil == policy.lockEnd(afterFailures: UInt32(failure), at: 1000), "failure \(failure)")
        }
        var adminOnly = policy
        adminOnly.delays = [0]
        #expect(adminOnly.lockEnd(afterFailures: 5, at: 1000) == Tally.untilReset)
        var off = policy
        off.deny = 0
        #expect(off.lockEnd(afterFailures: 100, at: 1000) == 0)
        #expect(policy.lockEnd(afterFailures: 5, at: Int64.max - 10) == Tally.untilReset)
    }

    @Test("the tally takes the count and lock from the fleet and the quick-factor state from the host")
    func fleetTally() {
        var local = Tally()
        local.failures = 2
        local.gestureFailures = 3
        local.passcodeAt = 77
        local.passcodeBoot = "0123456789abcdef0123456789abcdef"
        let tally = policy.fleetTally(FleetCounter(failures: 6, lastFailure: 1000, adminLock: true), local: local)
        #expect(tally.failures == 6)
        #expect(tally.lastFailure == 1000)
        #expect(tally.lockedUntil == 1300)
        #expect(tally.adminLock)
        #expect(tally.gestureFailures == 3)
        #expect(tally.passcodeAt == 77)
        #expect(policy.status(of: tally, now: 1299, isRoot: false) == .locked(secondsLeft: 1))
        #expect(policy.status(of: tally, now: 1300, isRoot: false) == .open)
    }

    @Test("beyond deny, only an attempt nobody overtook is verified")
    func mayVerify() {
        for counted in UInt32(1)...5 {
            #expect(policy.fleetMayVerify(before: 0, counted: counted, isRoot: false))
        }
        #expect(policy.fleetMayVerify(before: 5, counted: 6, isRoot: false))
        #expect(!policy.fleetMayVerify(before: 4, counted: 6, isRoot: false))
        #expect(!policy.fleetMayVerify(before: 0, counted: 7, isRoot: false))
        #expect(!policy.fleetMayVerify(before: UInt32.max, counted: UInt32.max, isRoot: false))
        var rootExempt = policy
        rootExempt.evenDenyRoot = false
        #expect(rootExempt.fleetMayVerify(before: 0, counted: 9, isRoot: true))
        #expect(!policy.fleetMayVerify(before: 0, counted: 9, isRoot: true))
    }

    @Test("fail_interval forgets a fleet run after the quiet time following its lock")
    func runExpiry() {
        var quiet = policy
        quiet.failInterval = 900
        let counter = FleetCounter(failures: 5, lastFailure: 1000, adminLock: false)  // locked until 1060
        #expect(!policy.fleetRunExpired(counter, now: 100_000))
        #expect(!quiet.fleetRunExpired(counter, now: 1960))
        #expect(quiet.fleetRunExpired(counter, now: 1961))
        #expect(!quiet.fleetRunExpired(FleetCounter(failures: 0, lastFailure: 0, adminLock: false), now: 100_000))
    }

    private func apply(_ tokens: [String]) throws(OptionError) -> PuffOptions {
        var options = PuffOptions()
        for token in tokens { _ = try OptionParser.apply(token, to: &options, from: .configFile) }
        return options
    }

    @Test("the directory keys go through the one option parser")
    func options() throws {
        let options = try apply(["backend=ldap", "ldap_uri=ldaps://a.example:636,ldaps://b.example",
                                 "ldap_base=ou=people,dc=example,dc=org", "ldap_bind_dn=cn=h1,ou=hosts,dc=example,dc=org",
                                 "ldap_bind_pw_file=/etc/puff/ldap.secret", "ldap_ca_file=/etc/ssl/ca.pem",
                                 "ldap_timeout=3", "ldap_network_timeout=2s", "fleet_key=/etc/puff/fleet.key", "fleet_host=h1"])
        let directory = options.directory
        #expect(directory.isEnabled)
        #expect(directory.uris == ["ldaps://a.example:636", "ldaps://b.example"])
        #expect(!directory.startTLS)
        #expect(directory.base == "ou=people,dc=example,dc=org")
        #expect(directory.bind == .simple(dn: "cn=h1,ou=hosts,dc=example,dc=org", passwordFile: "/etc/puff/ldap.secret"))
        #expect(directory.operationTimeout == 3 && directory.networkTimeout == 2)
        #expect(directory.hostName == "h1")
        try directory.validate()
        #expect(try apply(["ldap_uri=ldap://a.example"]).directory.startTLS)
        #expect(try apply(["backend=ldap", "ldap_uri=ldapi:///", "ldap_base=dc=x"]).directory.bind == .external)
        #expect(PuffOptions().directory.backend == .files)
    }

    @Test("bad directory values are refused and change nothing")
    func badOptions() {
        for token in ["backend=sql", "ldap_uri=http://x", "ldap_uri=ldap://a,ldaps://b", "ldap_uri=", "ldap_uri=ldaps://a b",
                      "ldap_bind_pw_file=relative", "ldap_ca_file=/etc/../x", "ldap_timeout=0", "ldap_timeout=121",
                      "ldap_network_timeout=1d", "fleet_key=", "fleet_host=a\u{1}b", "ldap_base",
                      "ldap_cache_ttl=91d", "ldap_cache_ttl=-1", "ldap_cache_ttl=3w", "ldap_cache_ttl="] {
            var options = PuffOptions()
            #expect(throws: OptionError.self, "\(token)") { _ = try OptionParser.apply(token, to: &options, from: .configFile) }
            #expect(options == PuffOptions(), "\(token)")
        }
        #expect(throws: OptionError.self) { try apply(["backend=ldap"]).directory.validate() }
        #expect(throws: OptionError.self) { try apply(["backend=ldap", "ldap_uri=ldapi:///"]).directory.validate() }
        #expect(throws: OptionError.self) {
            try apply(["backend=ldap", "ldap_uri=ldapi:///", "ldap_base=dc=x", "ldap_bind_dn=cn=h"]).directory.validate()
        }
    }

    @Test("ldap_cache_ttl: off by default, a duration of at most 90 days")
    func cacheTTL() throws {
        #expect(PuffOptions().directory.cacheTTL == 0)
        #expect(try apply(["ldap_cache_ttl=3d"]).directory.cacheTTL == 3 * 86400)
        #expect(try apply(["ldap_cache_ttl=90d"]).directory.cacheTTL == 90 * 86400)
        #expect(try apply(["ldap_cache_ttl=12h"]).directory.cacheTTL == 12 * 3600)
        #expect(try apply(["ldap_cache_ttl=3d", "ldap_cache_ttl=0"]).directory.cacheTTL == 0)
    }

    @Test("a cache entry round-trips, and damaged ones are refused")
    func cacheEntryFormat() throws {
        let name = try #require(UserName("alice"))
        let record = UserRecord(user: name, uid: 1001,
                                passcode: StoredPasscode(type: .digits6,
                                                         hash: "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"))
        let entry = FleetCacheEntry(record: record, fetched: 1_700_000_000,
                                    counter: FleetCounter(failures: 3, lastFailure: 1_699_999_990, adminLock: true),
                                    offlineFailures: 2)
        let bytes = entry.encoded()
        #expect(try FleetCacheEntry.decode(bytes) == entry)
        let text = String(decoding: bytes, as: UTF8.self)
        func damaged(_ change: (String) -> String) -> [UInt8] { Array(change(text).utf8) }
        let cases: [[UInt8]] = [
            [],
            Array(bytes.prefix(bytes.count - 1)),                                        // cut
            damaged { $0.replacingOccurrences(of: "puff-fleet-cache 1", with: "puff-fleet-cache 2") },
            damaged { $0.replacingOccurrences(of: "admin-lock 1", with: "admin-lock 2") },
            damaged { $0.replacingOccurrences(of: "failures 3\n", with: "failures 4294967296\n") },
            damaged { $0.replacingOccurrences(of: "fetched 1700000000", with: "fetched 01700000000") },
            damaged { $0.replacingOccurrences(of: "\n\npuff-record", with: "\npuff-record") }, // no blank line
            damaged { $0.replacingOccurrences(of: "offline-failures 2\n", with: "") },
            damaged { $0 + "extra line\n" },
        ]
        for (index, bad) in cases.enumerated() {
            #expect(throws: RecordFormatError.self, "case \(index)") { _ = try FleetCacheEntry.decode(bad) }
        }
        #expect(entry.isFresh(now: 1_700_000_000 + 86400, ttl: 86400))
        #expect(!entry.isFresh(now: 1_700_000_000 + 86401, ttl: 86400))
        #expect(!entry.isFresh(now: 1_699_999_999, ttl: 86400), "fetched in the future: the clock went back")
        #expect(!entry.isFresh(now: 1_700_000_000, ttl: 0), "ttl 0: the cache is off")
    }

    @Test("offline, the local counter is raised to the cached fleet count and lock")
    func offlineTally() {
        var local = Tally()
        local.failures = 1
        local.lastFailure = 500
        local.gestureFailures = 1
        // The fleet had 4 failures at 900: the next one locks (deny 5) and the run continues.
        let cached = FleetCounter(failures: 4, lastFailure: 900, adminLock: false)
        let view = policy.offlineTally(cached, local: local)
        #expect(view.failures == 4 && view.lastFailure == 900 && view.lockedUntil == 0 && view.gestureFailures == 1)
        #expect(policy.recordingFailure(in: view, now: 1000).lockedUntil == 1060)
        // A fleet locked at the time of the read stays locked offline; a local lock stays too.
        let locked = policy.offlineTally(FleetCounter(failures: 5, lastFailure: 900, adminLock: false), local: local)
        #expect(policy.status(of: locked, now: 950, isRoot: false) == .locked(secondsLeft: 10))
        var localLock = local
        localLock.failures = 7
        localLock.lockedUntil = 5000
        #expect(policy.offlineTally(cached, local: localLock).failures == 7)
        #expect(policy.offlineTally(cached, local: localLock).lockedUntil == 5000)
        // An administrator's lock comes from either.
        #expect(policy.offlineTally(FleetCounter(failures: 0, lastFailure: 0, adminLock: true), local: local).adminLock)
        #expect(!policy.offlineTally(FleetCounter(failures: 0, lastFailure: 0, adminLock: false), local: local).adminLock)
    }
}
