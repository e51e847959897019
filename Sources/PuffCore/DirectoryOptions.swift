/// Fleet mode: where the records and the one fleet-wide counter live when `backend = ldap`.
///
/// The keys share the one grammar of `puff.conf` and the module arguments (`OptionParser`);
/// `OptionParser.apply` hands every key it does not know to `apply(_:_:)` here.
public struct DirectorySettings: Equatable, Sendable {
    /// Where records and counters live.
    public enum Backend: String, CaseIterable, Equatable, Sendable {
        /// `/etc/puff` and `/var/lib/puff` on this host (the default).
        case files
        /// An LDAP directory shared by the fleet; the local counter is kept too.
        case ldap

        /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
        public init?(rawValue: String) { self.init(bytesOf: rawValue) }
    }

    /// How the host authenticates to the directory.
    public enum Bind: Equatable, Sendable {
        /// SASL EXTERNAL: the peer credentials of an `ldapi://` socket (root), or a TLS client
        /// certificate.
        case external
        /// A simple bind as `dn` with the password in a root-only file.
        case simple(dn: String, passwordFile: String)
    }

    /// `backend`.
    public var backend = Backend.files
    /// `ldap_uri`: servers tried in order, comma-separated; `ldapi://`, `ldaps://`, or
    /// `ldap://` (always upgraded with StartTLS, which must succeed).
    public var uris: [String] = []
    /// `ldap_base`: where users are searched (subtree) by `uid`.
    public var base = ""
    /// `ldap_bind_dn`.
    public var bindDN: String?
    /// `ldap_bind_pw_file`: root 0600, the password alone (a final newline is ignored).
    public var bindPasswordFile: String?
    /// `ldap_ca_file`: the CA certificates that sign the servers' (default: the system store).
    public var caFile: String?
    /// `ldap_network_timeout`: seconds allowed to connect (and for the TLS handshake).
    public var networkTimeout: Int64 = 3
    /// `ldap_timeout`: seconds allowed for each operation (bind, search, modify).
    public var operationTimeout: Int64 = 5
    /// `fleet_key`: the 32-byte key, installed on every host of the fleet like a keytab, that
    /// peppers passcode hashes and seals gesture templates in the directory's records.
    public var fleetKeyPath = "/etc/puff/fleet.key"
    /// `fleet_host`: the name written beside each failure this host counts (default: the
    /// kernel's host name).
    public var hostName: String?
    /// `ldap_cache_ttl`: how long a cached copy of a user's record may serve logins while the
    /// directory is unreachable (a laptop off the network); 0, the default, keeps no cache.
    /// At most 90 days.
    public var cacheTTL: Int64 = 0
    /// `ldap_library`: the LDAP client the module and the helper load when fleet mode is used
    /// (`puff-ldap.so`, root-owned; default: where the build installs it, set by
    /// `Configuration.load`).
    public var libraryPath = "/usr/local/lib/x86_64-linux-gnu/puff/puff-ldap.so"

    /// The longest `ldap_cache_ttl` accepted.
    public static let maximumCacheTTL: Int64 = 90 * 86400

    /// The defaults (`backend = files`).
    public init() {}

    /// Whether fleet mode is on.
    public var isEnabled: Bool { backend == .ldap }

    /// Whether every URI needs StartTLS (`ldap://`).
    public var startTLS: Bool { uris.first?.hasBytePrefix("ldap://") ?? false }

    /// The bind the settings describe.
    public var bind: Bind {
        if let bindDN, let bindPasswordFile { return .simple(dn: bindDN, passwordFile: bindPasswordFile) }
        return .external
    }

    /// The keys of `apply`.
    enum Key: String, CaseIterable {
        case backend, ldap_uri, ldap_base, ldap_bind_dn, ldap_bind_pw_file, ldap_ca_file, ldap_network_timeout
        case ldap_timeout, fleet_key, fleet_host, ldap_library, ldap_cache_ttl

        /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
        init?(rawValue: String) { self.init(bytesOf: rawValue) }
    }

    /// Applies one fleet key; `false` when `key` is not one of them. A bad value throws.
    public mutating func apply(_ key: String, _ value: Substring?) throws(OptionError) -> Bool {
        func text(_ limit: Int = 1024) throws(OptionError) -> String {
            guard let value, !value.isEmpty, value.utf8.count <= limit,
                  value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw OptionError(key: key, reason: "needs a value of printable ASCII without spaces (at most \(limit) bytes)")
            }
            return String(value)
        }
        func path() throws(OptionError) -> String {
            let raw = try text(4095)
            guard OptionParser.isAbsolutePathWithoutParent(raw[...]) else {
                throw OptionError(key: key, reason: "must be an absolute path without '..'")
            }
            return raw
        }
        func seconds() throws(OptionError) -> Int64 {
            guard let parsed = OptionParser.duration(try text(16)[...]), (1...120).contains(parsed) else {
                throw OptionError(key: key, reason: "must be a duration of 1 to 120 seconds")
            }
            return parsed
        }
        guard let known = Key(rawValue: key) else { return false }
        switch known {
        case .backend:
            guard let chosen = Backend(rawValue: try text(16)) else {
                throw OptionError(key: key, reason: "must be 'files' or 'ldap'")
            }
            backend = chosen
        case .ldap_uri:
            let list = try text().splitBytes(at: UInt8(ascii: ",")).map(String.init)
            guard (1...8).contains(list.count) else { throw OptionError(key: key, reason: "must list 1 to 8 URIs") }
            // Each URI's scheme: the bytes before its first ':', which must begin "://".
            var schemes: [Substring] = []
            for uri in list {
                guard let colon = uri.utf8.firstIndex(of: UInt8(ascii: ":")), uri[colon...].hasBytePrefix("://"),
                      case let scheme = uri[..<colon],
                      scheme.sameBytes(as: "ldapi") || scheme.sameBytes(as: "ldaps") || scheme.sameBytes(as: "ldap") else {
                    throw OptionError(key: key, reason: "only ldapi://, ldaps:// and ldap:// (with StartTLS) URIs are accepted")
                }
                schemes.append(scheme)
            }
            guard schemes.allSatisfy({ $0.sameBytes(as: "ldap") }) || !schemes.contains(where: { $0.sameBytes(as: "ldap") }) else {
                throw OptionError(key: key, reason: "ldap:// (StartTLS) cannot be mixed with ldapi:// or ldaps:// URIs")
            }
            uris = list
        case .ldap_base: base = try text()
        case .ldap_bind_dn: bindDN = try text()
        case .ldap_bind_pw_file: bindPasswordFile = try path()
        case .ldap_ca_file: caFile = try path()
        case .ldap_network_timeout: networkTimeout = try seconds()
        case .ldap_timeout: operationTimeout = try seconds()
        case .fleet_key: fleetKeyPath = try path()
        case .fleet_host: hostName = try text(255)
        case .ldap_library: libraryPath = try path()
        case .ldap_cache_ttl:
            guard let parsed = OptionParser.duration(try text(16)[...]), (0...Self.maximumCacheTTL).contains(parsed) else {
                throw OptionError(key: key, reason: "must be 0 (no cache) or a duration of at most 90 days, like 3d")
            }
            cacheTTL = parsed
        }
        return true
    }

    /// Checks what single keys cannot: with `backend = ldap`, a URI and a base are set, and a
    /// bind DN comes with its password file.
    public func validate() throws(OptionError) {
        guard isEnabled else { return }
        guard !uris.isEmpty else { throw OptionError(key: "ldap_uri", reason: "is required with backend = ldap") }
        guard !base.isEmpty else { throw OptionError(key: "ldap_base", reason: "is required with backend = ldap") }
        guard (bindDN == nil) == (bindPasswordFile == nil) else {
            throw OptionError(key: "ldap_bind_dn", reason: "ldap_bind_dn and ldap_bind_pw_file go together")
        }
    }
}
