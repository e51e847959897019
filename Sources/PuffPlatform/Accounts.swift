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
        return try fetch("getpwnam_r", { entry, buffer, size, result in getpwnam_r(name, &entry, buffer, size, &result) },
                         account)
    }

    /// Looks `uid` up with `getpwuid_r`; `nil` when the database has no such uid.
    public static func lookup(uid: UInt32) throws(StoreError) -> Account? {
        try lookup(uid: uid, account)
    }

    /// Looks `uid` up with `getpwuid_r` and hands the entry to `make` while its strings are
    /// valid (for the client kit's `Caller`, which also wants the group and the home); `nil`
    /// when the database has no such uid.
    public static func lookup<Entry>(uid: UInt32, _ make: (passwd) throws(StoreError) -> Entry)
        throws(StoreError) -> Entry? {
        try fetch("getpwuid_r", { entry, buffer, size, result in getpwuid_r(uid, &entry, buffer, size, &result) }) {
            entry throws(StoreError) in
            guard entry.pw_uid == uid else { throw .configuration("the account database returned another uid") }
            return try make(entry)
        }
    }

    /// The account of a database entry; its name must be a name Puff can use.
    private static func account(_ entry: passwd) throws(StoreError) -> Account {
        guard let rawName = entry.pw_name, let canonical = String(validatingCString: rawName),
              let valid = UserName(canonical) else {
            throw .configuration("the account database returned an unusable name")
        }
        return Account(name: valid, uid: entry.pw_uid)
    }

    /// One `get*_r` call with a buffer that grows on ERANGE (up to 1 MiB); `make` reads the
    /// entry before the buffer its strings point into is gone.
    private static func fetch<Entry>(_ function: String,
                                     _ call: (inout passwd, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<passwd>?) -> Int32,
                                     _ make: (passwd) throws(StoreError) -> Entry)
        throws(StoreError) -> Entry? {
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
            return try make(found)
        }
    }
}
