import Foundation
import Testing

/// Issue 27, item 3: a local user must not be able to take a fleet host offline. The attack as
/// it was run: an ordinary user binds every port of the ephemeral range, the helper's
/// connection to the directory fails ("Can't contact LDAP server"), that used to read as
/// *unreachable*, and `su VICTIM` was served from the host's cached record — guesses verified,
/// the right passcode logging in — while the directory had VICTIM locked until a reset.
///
/// The whole host lives in a private network namespace (a `sleep` holds it; every command
/// enters it with nsenter): loopback up, `ip_local_port_range` narrowed to 16 ports so the
/// attacker needs 16 sockets rather than 28,232, slapd listening on 127.0.0.1 there. The
/// attacker is an ordinary account running a plain Python script, then `su` on a terminal.
@Suite(.serialized)
struct FleetLocalFailureTests {
    static let passcode = "135790"
    static let ephemeral = 40000...40015

    /// A network namespace held by a sleeping process; killed and reaped on release.
    final class NetworkNamespace {
        let holder: RealClientTests.Spawned
        var enter: [String] { ["/usr/bin/nsenter", "--net=/proc/\(holder.pid)/ns/net", "--"] }

        init(log: String) throws {
            let range = "\(FleetLocalFailureTests.ephemeral.lowerBound) \(FleetLocalFailureTests.ephemeral.upperBound)"
            holder = try RealClientTests.Spawned(["/usr/bin/unshare", "--net", "--", "/bin/sh", "-c",
                                                  "ip link set lo up && sysctl -qw net.ipv4.ip_local_port_range='\(range)' "
                                                  + "&& touch \"$0\" && exec sleep 600", log + ".ready"], log: log)
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: log + ".ready") {
                guard holder.isRunning, Date() < deadline else {
                    throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the namespace did not start"])
                }
                usleep(20_000)
            }
        }

        deinit { holder.stop() }

        /// Runs `arguments` inside the namespace.
        func inside(_ arguments: [String], input: String? = nil) throws -> Run {
            try run(enter[0], Array(enter.dropFirst()) + arguments, input: input)
        }
    }

    /// An ordinary user's process that binds every port of the ephemeral range (no privilege
    /// needed) and holds them until it is killed.
    final class PortHog {
        let process: RealClientTests.Spawned

        init(_ namespace: NetworkNamespace, as user: RealClientTests.ShellUser, log: String) throws {
            let script = """
                import socket, sys, time
                held = []
                for port in range(\(FleetLocalFailureTests.ephemeral.lowerBound), \(FleetLocalFailureTests.ephemeral.upperBound + 1)):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    try:
                        s.bind(("0.0.0.0", port))
                        held.append(s)
                    except OSError as error:
                        print("port", port, error, flush=True)
                print("holding", len(held), flush=True)
                time.sleep(600)
                """
            process = try RealClientTests.Spawned(namespace.enter + ["/usr/bin/setpriv", "--reuid=\(user.uid)",
                                                  "--regid=\(user.gid)", "--init-groups", "--", "/usr/bin/python3", "-c", script],
                                                  log: log)
            let deadline = Date().addingTimeInterval(10)
            while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("holding") {
                guard process.isRunning, Date() < deadline else {
                    throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the port hog did not start"])
                }
                usleep(20_000)
            }
        }

        deinit { process.stop() }
    }

    @Test func aLocalUserHoldingEveryEphemeralPortDoesNotOpenTheOfflineCache() throws {
        let caller = try RealClientTests.ShellUser("caller")
        let victim = try RealClientTests.ShellUser("victim")
        let scratch = try Fixture()
        let namespace = try NetworkNamespace(log: scratch.root + "/netns.log")
        // slapd in the namespace, on ports below the narrowed ephemeral range.
        let port = 30000 + 2 * Int.random(in: 0...4000)
        let directory = try FleetDirectory(launcher: namespace.enter, port: port)
        try directory.addUser(victim.name)
        let host = try fleetHost(directory, name: "host1", key: newFleetKey(),
                                 bind: .password(host: "host1", uri: directory.ldapsURI, caFile: directory.caFile),
                                 extra: "ldap_cache_ttl = 1d\n")
        let enrolled = try namespace.inside([Artefacts.enroll, "passcode", "--user", victim.name, "--type", "digits6", "--stdin"]
                                         + host.storeArguments, input: Self.passcode + "\n")
        #expect(enrolled.status == 0, "\(enrolled.output) \(enrolled.errors)")
        let pamFile = host.root + "/su"
        try host.write(pamFile, """
            auth required \(Artefacts.module) dir=\(host.etc) state_dir=\(host.state) conf=\(host.conf) nodelay helper=\(Artefacts.helper)
            account required pam_permit.so
            session required pam_permit.so

            """, mode: 0o644)
        func su(_ answer: String) throws -> (status: Int32, output: String) {
            try RealClientTests.onTerminal(namespace.enter + HardeningTests.suArguments(as: caller, to: victim, pamFile: pamFile),
                                           answer: answer, seconds: 40)
        }

        // Online: the right passcode logs in, and the host caches the record (failures 0).
        let online = try su(Self.passcode)
        #expect(online.output.contains("puff-su-ok \(victim.name)"), "\(online.output)")
        #expect(FileManager.default.fileExists(atPath: FleetCacheTests.cachePath(host, victim.name)))

        // The directory locks the victim until a reset (as ten failures on other hosts
        // would); this host has not seen it yet.
        let now = Int(Date().timeIntervalSince1970)
        let locked = try directory.modify("""
            dn: uid=\(victim.name),\(FleetDirectory.base)
            changetype: modify
            replace: puffFailures
            puffFailures: 10
            -
            replace: puffLastFailure
            puffLastFailure: \(now)

            """)
        #expect(locked.status == 0, "\(locked.errors)")

        // The attack: every ephemeral port bound by an ordinary user, then su VICTIM with the
        // right passcode. It must fail closed, never verify from the cache.
        do {
            let hog = try PortHog(namespace, as: caller, log: scratch.root + "/hog.log")
            let log = (try? String(contentsOfFile: scratch.root + "/hog.log", encoding: .utf8)) ?? ""
            #expect(log.contains("holding \(Self.ephemeral.count)"), "\(log)")
            let attacked = try su(Self.passcode)
            #expect(!attacked.output.contains("puff-su-ok"), "served from the cache while the ports were taken: \(attacked.output)")
            #expect(attacked.status != 0)
            withExtendedLifetime(hog) {}
        }
        #expect(try directory.failures(victim.name) == 10)

        // The ports free again, the directory answers: locked, and the cache learns it.
        let refused = try su(Self.passcode)
        #expect(!refused.output.contains("puff-su-ok"), "\(refused.output)")
        #expect(try FleetCacheTests.cacheFields(FleetCacheTests.cachePath(host, victim.name))["failures"] == "10")
        // A real outage (slapd stopped: connection refused) does open the cache, and the
        // cache honours the last lock the directory showed.
        directory.stop()
        let offline = try su(Self.passcode)
        #expect(!offline.output.contains("puff-su-ok"), "\(offline.output)")
        let status = try host.status(victim.name)
        #expect(status["directory_unreachable"] as? Bool == true, "\(status)")
        #expect(status["locked_until"] as? String == "reset", "\(status)")
    }

    /// The same outage with an unlocked cached copy: the cache serves (so the refusal above is
    /// the lock's and the local failure's doing, not a cache that never works here).
    @Test func aStoppedDirectoryStillOpensTheCacheInTheNamespace() throws {
        let caller = try RealClientTests.ShellUser("caller")
        let victim = try RealClientTests.ShellUser("victim")
        let scratch = try Fixture()
        let namespace = try NetworkNamespace(log: scratch.root + "/netns.log")
        let directory = try FleetDirectory(launcher: namespace.enter, port: 30000 + 2 * Int.random(in: 0...4000))
        try directory.addUser(victim.name)
        let host = try fleetHost(directory, name: "host1", key: newFleetKey(),
                                 bind: .password(host: "host1", uri: directory.ldapsURI, caFile: directory.caFile),
                                 extra: "ldap_cache_ttl = 1d\n")
        let enrolled = try namespace.inside([Artefacts.enroll, "passcode", "--user", victim.name, "--type", "digits6", "--stdin"]
                                         + host.storeArguments, input: Self.passcode + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        let pamFile = host.root + "/su"
        try host.write(pamFile, """
            auth required \(Artefacts.module) dir=\(host.etc) state_dir=\(host.state) conf=\(host.conf) nodelay helper=\(Artefacts.helper)
            account required pam_permit.so
            session required pam_permit.so

            """, mode: 0o644)
        func su(_ answer: String) throws -> (status: Int32, output: String) {
            try RealClientTests.onTerminal(namespace.enter + HardeningTests.suArguments(as: caller, to: victim, pamFile: pamFile),
                                           answer: answer, seconds: 40)
        }
        #expect(try su(Self.passcode).output.contains("puff-su-ok \(victim.name)"))
        directory.stop()
        let offline = try su(Self.passcode)
        #expect(offline.output.contains("puff-su-ok \(victim.name)"), "\(offline.output)")
    }
}
