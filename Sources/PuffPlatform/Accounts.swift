import Glibc
import PuffCore

/// A local account as the account database (NSS) knows it.
public struct Account: Equatable, Sendable {
    /// The canonical login name from the database, used to key records and counters so
    /// that case variants of one name (some NSS backends accept them) share one counter.
    public var name: UserName
    /// The uid.
    public var uid: UInt32

    /// Creates an account value.
    public init(name: UserName, uid: UInt32) {
        self.name = name
        self.uid = uid
    }

    /// Looks `name` up with `getpwnam_r` (thread-safe, unlike `getpwnam`).
    /// Returns `nil` when the database has no such user; throws on lookup errors and when
    /// the database's canonical name is not a name Puff can use.
    public static func lookup(_ name: String) throws(StoreError) -> Account? {
        // A NUL would cut the C string short and look up another name.
        guard !name.utf8.contains(0) else { return nil }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 16 * 1024
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let status = getpwnam_r(name, &entry, &buffer, size, &result)
            if status == ERANGE && size < 1 << 20 {
                size *= 4
                continue
            }
            guard status == 0 else { throw .system("getpwnam_r", path: "passwd", Errno(status)) }
            guard let found = result?.pointee else { return nil }
            guard let rawName = found.pw_name, let canonical = String(validatingCString: rawName),
                  let valid = UserName(canonical) else {
                throw .configuration("the account database returned an unusable name")
            }
            return Account(name: valid, uid: found.pw_uid)
        }
    }

    /// Looks `uid` up with `getpwuid_r`; `nil` when the database has no such uid.
    public static func lookup(uid: UInt32) throws(StoreError) -> Account? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 16 * 1024
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let status = getpwuid_r(uid, &entry, &buffer, size, &result)
            if status == ERANGE && size < 1 << 20 {
                size *= 4
                continue
            }
            guard status == 0 else { throw .system("getpwuid_r", path: "passwd", Errno(status)) }
            guard let found = result?.pointee else { return nil }
            guard found.pw_uid == uid, let rawName = found.pw_name, let canonical = String(validatingCString: rawName),
                  let valid = UserName(canonical) else {
                throw .configuration("the account database returned an unusable name")
            }
            return Account(name: valid, uid: uid)
        }
    }
}
