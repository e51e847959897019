import Foundation
import Testing

/// A private OpenLDAP server for the fleet tests, made and started by Tests/LDAP/slapd.sh in a
/// fresh temp dir (own cn=config with the puff schema, ldapi socket, ldaps on 127.0.0.1 with a
/// test CA, ldap:// for StartTLS); stopped and removed with the object.
final class FleetDirectory {
    let root: String
    let port: Int
    static let scriptPath = Artefacts.repository.appendingPathComponent("Tests/LDAP/slapd.sh").path
    static let base = "ou=people,dc=puff,dc=test"

    /// libldap's form of the socket path: the slashes percent-encoded.
    var ldapiURI: String { "ldapi://" + (root + "/ldapi").replacingOccurrences(of: "/", with: "%2F") }
    var ldapsURI: String { "ldaps://127.0.0.1:\(port)" }
    var startTLSURI: String { "ldap://127.0.0.1:\(port + 1)" }
    var caFile: String { root + "/ca.pem" }
    private let mode: String?
    /// What runs slapd.sh (and so slapd): e.g. `nsenter --net=…` for a server in a private
    /// network namespace. Its ldapi socket is a file, reachable from anywhere.
    private let launcher: [String]

    /// A provider, or with `consumerOf` a syncrepl consumer of that server (same test CA).
    convenience init(consumerOf provider: FleetDirectory? = nil) throws {
        try self.init(port: try Self.freePortPair(), mode: provider.map { String($0.port) }, caFrom: provider)
    }

    /// A provider started by `launcher` on `port` (and `port` + 1).
    convenience init(launcher: [String], port: Int) throws {
        try self.init(port: port, mode: nil, caFrom: nil, launcher: launcher)
    }

    /// Server `id` (1 or 2) of a multi-provider pair with the server on `peerPort`; server 2
    /// takes server 1's test CA.
    convenience init(port: Int, peerPort: Int, id: Int, caFrom other: FleetDirectory?) throws {
        try self.init(port: port, mode: "peer:\(peerPort):\(id)", caFrom: other)
    }

    private init(port: Int, mode: String?, caFrom provider: FleetDirectory?, launcher: [String] = []) throws {
        var template = Array("\(Artefacts.temporary)/puff-ldap-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
        self.port = port
        self.mode = mode
        self.launcher = launcher
        if let provider {
            for name in ["ca.pem", "ca.key"] {
                try FileManager.default.copyItem(atPath: provider.root + "/" + name, toPath: root + "/" + name)
            }
        }
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Starts (or restarts, with its data) the server.
    func start() throws {
        let status = Self.script(["start", root, String(port)] + (mode.map { [$0] } ?? []), log: root + "/script.log",
                                 launcher: launcher)
        guard status == 0 else {
            let log = (try? String(contentsOfFile: root + "/script.log", encoding: .utf8)) ?? ""
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "slapd.sh start: \(status): \(log)"])
        }
    }

    /// Stops the server (its data stays).
    func stop() {
        _ = Self.script(["stop", root], log: root + "/script.log")
    }

    /// Runs Tests/LDAP/slapd.sh (Child: slapd detaches and keeps what it inherits, so it must
    /// inherit nothing but its log). Output goes to `log`. The exit status, or -1.
    static func script(_ arguments: [String], log: String, launcher: [String] = []) -> Int32 {
        (try? Child(launcher + ["/bin/bash", scriptPath] + arguments, stdout: .append(log), stderr: .same).run()) ?? -1
    }

    /// `ldapadd`/`ldapmodify` as root over the socket (SASL EXTERNAL: manage rights).
    @discardableResult
    func modify(_ ldif: String, add: Bool = false) throws -> Run {
        try run("/usr/bin/ldapmodify", ["-Q", "-Y", "EXTERNAL", "-H", ldapiURI] + (add ? ["-a"] : []), input: ldif)
    }

    /// Adds a user entry (objectClass account) for `name`, the kind of entry an organisation
    /// already has for its accounts.
    func addUser(_ name: String) throws {
        let result = try modify("dn: uid=\(name),\(Self.base)\nobjectClass: account\nuid: \(name)\n", add: true)
        #expect(result.status == 0, "ldapadd: \(result.errors)")
    }

    /// The values of `attribute` in `name`'s entry, as ldapsearch prints them.
    func values(_ name: String, _ attribute: String) throws -> [String] {
        let result = try run("/usr/bin/ldapsearch", ["-Q", "-LLL", "-o", "ldif-wrap=no", "-Y", "EXTERNAL", "-H", ldapiURI,
                                                     "-b", Self.base, "(uid=\(name))", attribute])
        let prefix = attribute + ": "
        return result.lines.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// The value of a binary attribute (ldapsearch prints it base64-encoded), or nil.
    func binaryValue(_ name: String, _ attribute: String) throws -> Data? {
        let result = try run("/usr/bin/ldapsearch", ["-Q", "-LLL", "-o", "ldif-wrap=no", "-Y", "EXTERNAL", "-H", ldapiURI,
                                                     "-b", Self.base, "(uid=\(name))", attribute])
        let prefix = attribute + ":: "
        return result.lines.first { $0.hasPrefix(prefix) }.flatMap { Data(base64Encoded: String($0.dropFirst(prefix.count))) }
    }

    /// `puffFailures` of `name`, or nil.
    func failures(_ name: String) throws -> Int? {
        try values(name, "puffFailures").first.flatMap { Int($0) }
    }

    /// Two consecutive free TCP ports on 127.0.0.1 (ldaps, then plain LDAP for StartTLS).
    static func freePortPair() throws -> Int {
        for _ in 0..<50 {
            let candidate = Int.random(in: 20000...60000)
            if portIsFree(candidate), portIsFree(candidate + 1) { return candidate }
        }
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "no free port pair"])
    }

    static func portIsFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// How a simulated host reaches the directory.
enum FleetBind {
    /// Root over the ldapi socket, SASL EXTERNAL.
    case socket
    /// `cn=NAME,ou=hosts` with its password file, over `uri` (ldaps or StartTLS) and the test CA.
    case password(host: String, uri: String, caFile: String)
}

/// One host of the fleet: its own Puff store, state and PAM service (a `Fixture`), the shared
/// fleet key, and `backend = ldap` against the test directory.
func fleetHost(_ directory: FleetDirectory, name: String, key: Data, bind: FleetBind = .socket,
               extra: String = "") throws -> Fixture {
    let fixture = try Fixture()
    var config = "kdf_ops = 1\nkdf_mem_kib = 8\nbackend = ldap\nldap_base = \(FleetDirectory.base)\n"
        + "fleet_key = \(fixture.etc)/fleet.key\nfleet_host = \(name)\nldap_timeout = 5\nldap_network_timeout = 2\n"
        + "ldap_library = \(Artefacts.ldapLibrary)\n"
    switch bind {
    case .socket:
        config += "ldap_uri = \(directory.ldapiURI)\n"
    case .password(let host, let uri, let caFile):
        config += "ldap_uri = \(uri)\nldap_ca_file = \(caFile)\nldap_bind_dn = cn=\(host),ou=hosts,dc=puff,dc=test\n"
            + "ldap_bind_pw_file = \(fixture.etc)/ldap.secret\n"
        try fixture.write(fixture.etc + "/ldap.secret", "\(host)-secret\n", mode: 0o600)
    }
    try fixture.write(fixture.conf, config + extra, mode: 0o600)
    try key.write(to: URL(fileURLWithPath: fixture.etc + "/fleet.key"))
    chmod(fixture.etc + "/fleet.key", 0o600)
    return fixture
}

/// 32 random bytes: a fleet key.
func newFleetKey() -> Data {
    Data((0..<32).map { _ in UInt8.random(in: 0...255) })
}

/// A TCP server on 127.0.0.1 that accepts connections and never says a word (a hung
/// directory); closed with the object.
final class SilentServer {
    let port: Int
    private let fd: Int32
    private let held = Held()

    /// The connections the server holds open, shared with its accepting thread.
    private final class Held: @unchecked Sendable {
        let lock = NSLock()
        var sockets: [Int32] = []
        var closed = false
    }

    init() throws {
        var chosen = 0
        var listening: Int32 = -1
        for _ in 0..<50 {
            let candidate = Int.random(in: 20000...60000)
            let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(candidate).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0, listen(socketFD, 16) == 0 {
                chosen = candidate
                listening = socketFD
                break
            }
            close(socketFD)
        }
        guard listening >= 0 else { throw CocoaError(.fileWriteUnknown) }
        port = chosen
        fd = listening
        let held = self.held, server = listening
        Thread {
            while true {
                let client = accept(server, nil, nil)
                held.lock.lock()
                let closed = held.closed
                if client >= 0 { if closed { close(client) } else { held.sockets.append(client) } }
                held.lock.unlock()
                if closed || client < 0 { return }
            }
        }.start()
    }

    deinit {
        held.lock.lock()
        held.closed = true
        held.sockets.forEach { close($0) }
        held.sockets = []
        held.lock.unlock()
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
