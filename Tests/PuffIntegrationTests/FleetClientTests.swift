import Foundation
import Testing

/// The other ways into fleet mode against a real slapd: the `authsucc` take-back of the
/// shipped "Puff, else the password" stack, a screen locker running as the user through the
/// setuid helper, and gestures enrolled into the directory.
@Suite(.serialized)
struct FleetClientTests {
    static let passcode = "604917"

    @Test func theSystemPasswordAtPuffsPromptIsTakenBackFromTheFleetCounter() throws {
        let user = try PasswordFallbackTests.userWithPassword("ffb")
        let directory = try FleetDirectory()
        let host = try fleetHost(directory, name: "host1", key: newFleetKey(), extra: "ldap_cache_ttl = 1d\n")
        try directory.addUser(user.name)
        #expect(try host.enroll(user.name, Self.passcode).status == 0)
        try host.write(host.pamDirectory + "/puff-fallback",
                       try PasswordFallbackTests.shippedStack(host) + "account required pam_permit.so\n", mode: 0o644)
        func login(_ reply: String) throws -> String? {
            try host.authenticate(user.name, replies: [reply], service: "puff-fallback").lines.last
        }
        for _ in 1...3 {
            #expect(try login(PasswordFallbackTests.password) == "RESULT 0 Success")
            #expect(try directory.failures(user.name) == 0)
        }
        #expect(try login("not-the-password") == "RESULT 7 Authentication failure")
        #expect(try directory.failures(user.name) == 1)
        #expect(try login(Self.passcode) == "RESULT 0 Success")
        #expect(try directory.failures(user.name) == 0)

        // Offline (the cache is on): the password is taken back from the offline count too,
        // so nothing is pushed to the directory for it later; a wrong one stays counted.
        directory.stop()
        let cache = FleetCacheTests.cachePath(host, user.name)
        #expect(try login(PasswordFallbackTests.password) == "RESULT 0 Success")
        #expect(try FleetCacheTests.cacheFields(cache)["offline-failures"] == "0")
        #expect(try login("not-the-password") == "RESULT 7 Authentication failure")
        #expect(try FleetCacheTests.cacheFields(cache)["offline-failures"] == "1")
        try directory.start()
        #expect(try login(Self.passcode) == "RESULT 0 Success")
        // The pushed offline failure was counted, then cleared by the success that followed.
        #expect(try directory.failures(user.name) == 0)
        #expect(try directory.values(user.name, "puffLastFailureHost") == ["host1"])
    }

    @Test func aScreenLockerChecksItsUserThroughTheHelperAgainstTheDirectory() throws {
        let alice = try TestUsers.ensure("puff-it-alice")
        let directory = try FleetDirectory()
        let key = newFleetKey()
        let enrolling = try fleetHost(directory, name: "host1", key: key)
        try directory.addUser(alice)
        #expect(try enrolling.enroll(alice, Self.passcode).status == 0)
        // The locker's host: puff.conf at /etc/puff as the helper reads it, bound over ldaps
        // as host2 with its password file beside the fleet key.
        let stage = try UnprivilegedTests.Stage(config: """
            kdf_ops = 1
            kdf_mem_kib = 8
            deny = 3
            backend = ldap
            ldap_base = \(FleetDirectory.base)
            ldap_uri = \(directory.ldapsURI)
            ldap_ca_file = \(directory.caFile)
            ldap_bind_dn = cn=host2,ou=hosts,dc=puff,dc=test
            ldap_bind_pw_file = /etc/puff/ldap.secret
            fleet_key = /etc/puff/fleet.key
            fleet_host = locker
            ldap_library = \(Artefacts.ldapLibrary)
            ldap_timeout = 5
            ldap_network_timeout = 2

            """)
        try stage.fixture.write(stage.fixture.etc + "/ldap.secret", "host2-secret\n", mode: 0o600)
        try key.write(to: URL(fileURLWithPath: stage.fixture.etc + "/fleet.key"))
        chmod(stage.fixture.etc + "/fleet.key", 0o600)

        let right = try stage.authenticate(as: alice, replies: [Self.passcode])
        #expect(right.status == PAMCode.success, "\(right.output) \(right.errors)")
        let wrong = try stage.authenticate(as: alice, replies: ["111333"])
        #expect(wrong.status == PAMCode.authError, "\(wrong.output) \(wrong.errors)")
        #expect(wrong.lines.contains("ERROR Puff: wrong passcode."))
        #expect(try directory.failures(alice) == 1)
        #expect(try directory.values(alice, "puffLastFailureHost") == ["locker"])
        // A failure counted on another host is seen by the helper's query.
        #expect(try enrolling.authenticate(alice, replies: ["111334"]).status == PAMCode.authError)
        let query = try stage.runAs(alice, [stage.helper, "query"])
        #expect(query.output.contains("failures 2\n"), "\(query.output)")
        #expect(try stage.authenticate(as: alice, replies: [Self.passcode]).status == PAMCode.success)
        #expect(try directory.failures(alice) == 0)
        // Directory down, no cache: the helper fails closed as the module does.
        directory.stop()
        let down = try stage.authenticate(as: alice, replies: [Self.passcode])
        #expect(down.status == PAMCode.authInfoUnavailable, "\(down.output) \(down.errors)")
    }

    @Test func aGestureEnrolledOnOneHostOpensOnAnotherAndHonoursTheDirectorysLock() throws {
        let fleet = try FleetTests.Fleet(user: "puff-it-fleet-gst", extra: "ldap_cache_ttl = 1d\n")
        let (directory, host1, host2, user) = (fleet.directory, fleet.host1, fleet.host2, fleet.user)
        try GestureLoginTests().enrolled(host1, user)
        // In the directory: the record with the sealed template and the picture with its digest.
        let picture = try Data(contentsOf: URL(fileURLWithPath: GestureLoginTests.picture))
        let digest = try run("/usr/bin/sha256sum", [GestureLoginTests.picture]).output.prefix(64)
        #expect(try directory.values(user, "puffPictureSHA256") == [String(digest)])
        #expect(try directory.binaryValue(user, "puffPicture") == picture, "the picture in the directory differs")
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/users/" + user))
        #expect(!FileManager.default.fileExists(atPath: host1.etc + "/pictures/" + user))

        let genuine = GestureLoginTests.wire(GestureLoginTests.genuine)
        let backwards = GestureLoginTests.wire(GestureLoginTests.genuine.map { ($0.kind, Array($0.points.reversed())) })
        // The gesture is trusted per computer: host2 first needs the passcode once (since boot).
        // (Run as the user's own su or locker would: a discreet service hides the reason.)
        let first = try host2.authenticate(user, replies: [genuine], bySelf: true)
        #expect(first.lines.contains { $0.contains("passcode required: the computer restarted") }, "\(first.output)")
        #expect(try directory.failures(user) == 0, "a gesture refused unread is not counted")
        #expect(try host2.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        #expect(try host2.authenticate(user, replies: [genuine]).status == PAMCode.success)
        let wrong = try host2.authenticate(user, replies: [backwards], bySelf: true)
        #expect(wrong.status == PAMCode.authError)
        #expect(wrong.lines.contains("ERROR Puff: wrong gesture."), "\(wrong.output)")
        #expect(try directory.failures(user) == 1)
        #expect(try host1.authenticate(user, replies: [genuine]).status == PAMCode.success)
        #expect(try directory.failures(user) == 0)

        // `puff-enroll lock` on host2 (the passcode is required): host1's gesture is refused
        // online, and offline from its cached copy too; the passcode opens, offline as well.
        #expect(try run(Artefacts.enroll, ["lock", "--user", user] + host2.storeArguments).status == 0)
        let refused = try host1.authenticate(user, replies: [genuine], bySelf: true)
        #expect(refused.status == PAMCode.authError)
        #expect(refused.lines.contains { $0.contains("passcode required") }, "\(refused.output)")
        #expect(try FleetCacheTests.cacheFields(FleetCacheTests.cachePath(host1, user))["admin-lock"] == "1")
        directory.stop()
        let offline = try host1.authenticate(user, replies: [genuine], bySelf: true)
        #expect(offline.status == PAMCode.authError)
        #expect(offline.lines.contains { $0.contains("passcode required") }, "\(offline.output)")
        #expect(try host1.authenticate(user, replies: ["135790"]).status == PAMCode.success)
        let stillRefused = try host1.authenticate(user, replies: [genuine])
        #expect(stillRefused.status == PAMCode.authError, "the directory's lock is lifted online only")
    }
}
