import CLDAP
import Glibc
import PuffCore
import PuffPlatform

/// One user's Puff attributes as the directory holds them (`ldap/puff.ldif`).
public struct DirectoryEntry: Sendable {
    /// The entry's DN.
    public var dn: String
    /// Whether the entry has the `puffUser` object class.
    public var isPuffUser: Bool
    /// `puffRecord`: the record, in the format of `/etc/puff/users/NAME`.
    public var record: [UInt8]?
    /// `puffPicture`, when it was asked for.
    public var picture: [UInt8]?
    /// `puffPictureSHA256`.
    public var pictureSHA256: String?
    /// `puffFailures`: the fleet-wide failures in a row.
    public var failures: Int64?
    /// `puffLastFailure`.
    public var lastFailure: Int64?
    /// `puffLastFailureHost`: the host that counted the latest failure.
    public var lastFailureHost: String?
    /// `puffPasscodeAt`.
    public var passcodeAt: Int64?
    /// `puffAdminLock`.
    public var adminLock: Bool
}

/// One change of a directory modify; every Puff attribute is single-valued.
public enum DirectoryChange: Sendable {
    /// Adds `value` to the attribute (fails when present: used for compare-and-swap).
    case add(String, [UInt8])
    /// Deletes the attribute, or only `value` (fails when that value is not the current one).
    case delete(String, [UInt8]?)
    /// Replaces the attribute with `value`; `nil` removes it (no error when absent).
    case replace(String, [UInt8]?)
}

/// A bound connection to the fleet's directory over libldap. Every URI is ldapi://, ldaps://
/// or ldap:// upgraded with StartTLS; certificates are always required and checked against
/// `ldap_ca_file` and the name in the URI. Connecting is bounded by `ldap_network_timeout`,
/// each operation by `ldap_timeout` (sent asynchronously and abandoned when the time is up).
/// The handle is unbound when the connection goes out of scope. A class: one login holds one
/// connection (`DirectoryLink`) and hands it to each step.
public final class DirectoryConnection {
    private let handle: OpaquePointer
    /// Set when an operation found the directory out of reach (a timeout, a lost connection):
    /// the login does not wait on it again.
    public private(set) var lost: String?
    /// The settings it was opened with.
    public let settings: DirectorySettings
    private var timeoutMilliseconds: Int32 { Int32(clamping: settings.operationTimeout * 1000) }

    /// Connects and binds as this host (SASL EXTERNAL, or the bind DN with the password file,
    /// read through `session`, which may already hold its directory).
    public init(_ settings: DirectorySettings, session: StoreSession) throws(StoreError) {
        handle = try Self.connect(settings, session: session)
        self.settings = settings
    }

    /// An open, bound handle; closed again when the bind fails.
    private static func connect(_ settings: DirectorySettings, session: StoreSession) throws(StoreError) -> OpaquePointer {
        guard settings.isEnabled, !settings.uris.isEmpty else { throw .configuration("backend = ldap needs ldap_uri") }
        try loadClient(settings.libraryPath)
        let uriList = settings.uris.joined(separator: " ")
        let timeout = Int32(clamping: settings.operationTimeout * 1000)
        var opened: OpaquePointer?
        let code = uriList.withCString { uri in
            withOptionalCString(settings.caFile) { ca in
                puff_ldap_open(uri, ca, settings.startTLS ? 1 : 0, Int32(clamping: settings.networkTimeout * 1000),
                               timeout, &opened)
            }
        }
        guard code == 0, let handle = opened else { throw error(code, "connect to \(uriList)", handle: nil, settings) }
        let bound: Int32
        switch settings.bind {
        case .external:
            bound = puff_ldap_bind_external(handle, timeout)
        case .simple(let dn, let passwordFile):
            let password: SecureBytes?
            do {
                password = try SecretFile.read(passwordFile, maximumSize: 1024, session: session)
            } catch {
                puff_ldap_close(handle)
                throw error
            }
            guard let password else {
                puff_ldap_close(handle)
                throw .configuration("ldap_bind_pw_file \(passwordFile) is missing")
            }
            bound = password.withBytes { bytes in
                // A final newline (echo > file) is not part of the password.
                var length = bytes.count
                if length > 0, bytes[length - 1] == 0x0A { length -= 1 }
                return dn.withCString { puff_ldap_bind_simple(handle, $0, bytes.baseAddress, length, timeout) }
            }
        }
        guard bound == 0 else {
            let failure = error(bound, "bind to \(uriList)", handle: handle, settings)
            puff_ldap_close(handle)
            throw failure
        }
        return handle
    }

    deinit { puff_ldap_close(handle) }

    /// The entry of user `name` under `ldap_base`, or `nil` when the directory has none.
    /// Several entries with that uid are an error.
    public func readUser(_ name: UserName, picture: Bool = false) throws(StoreError) -> DirectoryEntry? {
        var user = puff_ldap_user()
        var found: Int32 = 0
        let code = settings.base.withCString { base in
            name.value.withCString { uid in
                puff_ldap_read_user(handle, base, uid, picture ? 1 : 0, timeoutMilliseconds, &user, &found)
            }
        }
        defer { puff_ldap_user_free(&user) }
        guard code == 0 else { throw failed(code, "search uid=\(name) under \(settings.base)") }
        guard found == 1, let dnPointer = user.dn, let dn = String(validatingCString: dnPointer) else { return nil }
        func bytes(_ pointer: UnsafeMutablePointer<UInt8>?, _ count: Int) -> [UInt8]? {
            guard let pointer else { return nil }
            return Array(UnsafeBufferPointer(start: pointer, count: count))
        }
        func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
            pointer.flatMap { String(validatingCString: $0) }
        }
        return DirectoryEntry(dn: dn, isPuffUser: user.is_puff_user != 0,
                              record: bytes(user.record, user.record_length),
                              picture: bytes(user.picture, user.picture_length),
                              pictureSHA256: text(user.picture_sha256),
                              failures: user.failures < 0 ? nil : user.failures,
                              lastFailure: user.last_failure < 0 ? nil : user.last_failure,
                              lastFailureHost: text(user.last_failure_host),
                              passcodeAt: user.passcode_at < 0 ? nil : user.passcode_at,
                              adminLock: user.admin_lock != 0)
    }

    /// Counts one failure on the server (Modify-Increment of `puffFailures` with the
    /// post-read control, and `host` and `now` as the latest failure): returns the count this
    /// very increment produced, so simultaneous attempts on several hosts each see their own.
    public func countFailure(dn: String, now: Int64, host: String) throws(StoreError) -> UInt32 {
        var count: Int64 = -1
        let code = dn.withCString { dnText in
            host.withCString { puff_ldap_count_failure(handle, dnText, now, $0, timeoutMilliseconds, &count) }
        }
        guard code == 0 else { throw failed(code, "count a failure on \(dn)") }
        guard let failures = UInt32(exactly: count) else {
            throw .directory("\(dn): puffFailures out of range after the increment")
        }
        return failures
    }

    /// Applies `changes` to `dn` in one atomic Modify.
    public func modify(dn: String, _ changes: [DirectoryChange]) throws(StoreError) {
        guard (1...16).contains(changes.count) else { throw .directory("a modify of \(changes.count) changes") }
        // C strings and values that live across the call.
        var attributes: [UnsafeMutablePointer<CChar>?] = []
        var values: [UnsafeMutableRawPointer?] = []
        defer {
            attributes.forEach { free($0) }
            values.forEach { free($0) }
        }
        var list: [puff_ldap_change] = []
        for change in changes {
            let op: Int32
            let attribute: String
            let value: [UInt8]?
            switch change {
            case .add(let name, let bytes): (op, attribute, value) = (0, name, bytes)
            case .delete(let name, let bytes): (op, attribute, value) = (1, name, bytes)
            case .replace(let name, let bytes): (op, attribute, value) = (2, name, bytes)
            }
            let name = strdup(attribute)
            attributes.append(name)
            var copy: UnsafeMutableRawPointer?
            if let value {
                copy = malloc(max(value.count, 1))
                guard let copy else { throw .system("malloc", path: dn, Errno(ENOMEM)) }
                value.withUnsafeBytes { source in
                    if let base = source.baseAddress { copy.copyMemory(from: base, byteCount: value.count) }
                }
                values.append(copy)
            }
            guard let name else { throw .system("malloc", path: dn, Errno(ENOMEM)) }
            list.append(puff_ldap_change(op: op, attribute: UnsafePointer(name), value: UnsafeRawPointer(copy),
                                         length: value?.count ?? 0))
        }
        let code = dn.withCString { dnText in
            list.withUnsafeBufferPointer { buffer in
                puff_ldap_modify(handle, dnText, buffer.baseAddress, Int32(buffer.count), timeoutMilliseconds)
            }
        }
        guard code == 0 else { throw failed(code, "modify \(dn)") }
    }

    /// Makes libldap available. The module and the helper load it from `ldap_library` on the
    /// first use (Sources/CLDAP/puff_ldap_loader.c): its directory walked from `/` like every
    /// trusted file's (root-owned, no symbolic link), the file opened without following one,
    /// and that descriptor loaded. A build linked with libldap has nothing to do.
    private static func loadClient(_ path: String) throws(StoreError) {
        guard puff_ldap_is_loaded() == 0 else { return }
        func failure(_ reason: String) -> StoreError {
            .directory("the LDAP client library \(path) cannot be loaded: " + LogText.escape(reason, limit: 300))
        }
        do {
            try TrustedLibrary.load(path) { puff_ldap_load($0, $1, $2) }
        } catch {
            throw failure(error.reason)
        }
    }

    /// `error(code, what)`, remembered as `lost` when it means the directory is out of reach.
    private func failed(_ code: Int32, _ what: String) -> StoreError {
        let failure = Self.error(code, what, handle: handle, settings)
        if case .directoryUnreachable(let why) = failure { lost = why }
        return failure
    }

    /// The LDAP result code `code` of `what`, with the server's diagnostic.
    private static func error(_ code: Int32, _ what: String, handle: OpaquePointer?,
                              _ settings: DirectorySettings) -> StoreError {
        var text = puff_ldap_error_text(code).flatMap { String(validatingCString: $0) } ?? "unknown error"
        if let handle {
            var buffer = [CChar](repeating: 0, count: 256)
            puff_ldap_diagnostic(handle, &buffer, buffer.count)
            if let diagnostic = buffer.withUnsafeBufferPointer({ $0.baseAddress.flatMap { String(validatingCString: $0) } }),
               !diagnostic.isEmpty {
                text += " (" + LogText.escape(diagnostic, limit: 200) + ")"
            }
        }
        let message = "\(what): \(text) [LDAP \(code)]"
        guard isUnreachable(code) else { return .directory(message) }
        return confirmedUnreachable(code, message, settings)
    }

    /// libldap's "cannot contact" also covers failures of this host that a local user can
    /// cause (every ephemeral port bound, descriptors or buffers exhausted), and "out of
    /// reach" opens the offline cache. So it stands only when a probe of its own, connecting
    /// to every server address again from a fresh socket, finds each refused, silent or
    /// without a route (issue 27, item 3); a local failure, or a server that accepts the
    /// connection after all, fails closed and never turns to the cache.
    ///
    /// A server whose kernel accepts the connection but which says nothing (stopped, hung,
    /// overloaded: the probe's own connection gets no answer within `ldap_network_timeout`) is
    /// out of reach too, whatever libldap's code (a TLS handshake that ran out of time ends
    /// with "can't contact"), and so is one that let an operation time out (LDAP_TIMEOUT): a
    /// wait that ran out is no local resource failure. Any other failure on a connection to
    /// a server that answers (a TLS handshake or certificate that fails) fails closed.
    private static func confirmedUnreachable(_ code: Int32, _ message: String, _ settings: DirectorySettings) -> StoreError {
        var buffer = [CChar](repeating: 0, count: 256)
        let found = settings.uris.joined(separator: " ").withCString { uris in
            // After LDAP_TIMEOUT the connect alone decides (below); otherwise the server must also answer.
            puff_ldap_probe(uris, Int32(clamping: settings.networkTimeout * 1000), code == -5 ? 0 : 1, &buffer, buffer.count)
        }
        let reason = buffer.withUnsafeBufferPointer { $0.baseAddress.flatMap { String(validatingCString: $0) } } ?? ""
        switch found {
        case Int32(PUFF_LDAP_PROBE_REMOTE):
            return .directoryUnreachable(message)
        case Int32(PUFF_LDAP_PROBE_REACHABLE) where code == -5:
            return .directoryUnreachable(message + " (the server accepts connections but does not answer)")
        case Int32(PUFF_LDAP_PROBE_REACHABLE):
            return .directory(message + "; a server accepts connections, so the directory is not out of reach: failing closed")
        default:
            return .directory(message + "; a local failure, not an unreachable directory ("
                              + LogText.escape(reason, limit: 200) + "): failing closed, the offline cache is not used")
        }
    }

    /// Whether libldap's `code` means no server could be reached or kept (LDAP_SERVER_DOWN,
    /// LDAP_TIMEOUT, LDAP_CONNECT_ERROR: refused, lost, silent, or a TLS handshake or
    /// certificate check that failed), as opposed to a server that answered.
    static func isUnreachable(_ code: Int32) -> Bool {
        code == -1 || code == -5 || code == -11
    }
}

private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// The name this host writes beside the failures it counts: `fleet_host`, else the kernel's.
public func fleetHostName(_ settings: DirectorySettings) -> String {
    if let name = settings.hostName { return name }
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0,
          let name = buffer.withUnsafeBufferPointer({ $0.baseAddress.flatMap { String(validatingCString: $0) } }),
          !name.isEmpty else { return "unknown-host" }
    return name
}
