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
        return try fetch("getpwnam_r") { entry, buffer, size, result in getpwnam_r(name, &entry, buffer, size, &result) }
    }

    /// Looks `uid` up with `getpwuid_r`; `nil` when the database has no such uid.
    public static func lookup(uid: UInt32) throws(StoreError) -> Account? {
        let account = try fetch("getpwuid_r") { entry, buffer, size, result in getpwuid_r(uid, &entry, buffer, size, &result) }
        guard account == nil || account?.uid == uid else {
            throw .configuration("the account database returned another uid")
        }
        return account
    }

    /// One `get*_r` call with a buffer that grows on ERANGE (up to 1 MiB).
    private static func fetch(_ function: String,
                              _ call: (inout passwd, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<passwd>?) -> Int32)
        throws(StoreError) -> Account? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 16 * 1024
        while true {
            // The entry's strings point into this buffer, so it lives until they are read.
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            let status = call(&entry, buffer, size, &result)
            if status == ERANGE && size < 1 << 20 {
                size *= 4
                continue
            }
            guard status == 0 else { throw .system(function, path: "passwd", Errno(status)) }
            guard let found = result?.pointee else { return nil }
            guard let rawName = found.pw_name, let canonical = String(validatingCString: rawName),
                  let valid = UserName(canonical) else {
                throw .configuration("the account database returned an unusable name")
            }
            return Account(name: valid, uid: found.pw_uid)
        }
    }
}
