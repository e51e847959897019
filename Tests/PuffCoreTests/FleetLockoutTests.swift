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
                      "ldap_network_timeout=1d", "fleet_key=", "fleet_host=a\u{1}b", "ldap_base"] {
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
}
