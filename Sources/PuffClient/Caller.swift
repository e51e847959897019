import Glibc
import PuffCore
import PuffPlatform

/// Who is calling: the account of the process's real uid, from the account database
/// (`getpwuid_r`). Never `$USER` or `$HOME`: the environment does not decide whose record,
/// picture or passcode is used.
public struct Caller: Equatable, Sendable {
    /// The uid and the primary gid.
    public let uid: UInt32
    public let gid: UInt32
    /// The canonical login name.
    public let name: UserName
    /// The home directory, as the database says (empty when it says nothing usable).
    public let home: String

    /// The account of `getuid()`; nil when the database has no entry for it or cannot be read.
    public static func current() -> Caller? {
        lookup(uid: getuid())
    }

    /// The account of `uid`; nil when the database has no entry for it, cannot be read, or
    /// gives a name Puff cannot use.
    public static func lookup(uid: UInt32) -> Caller? {
        let found = try? Account.lookup(uid: uid) { entry throws(StoreError) -> Caller in
            guard let raw = entry.pw_name, let text = String(validatingCString: raw), let name = UserName(text) else {
                throw .configuration("the account database returned an unusable name")
            }
            let home = entry.pw_dir.flatMap { String(validatingCString: $0) } ?? ""
            return Caller(uid: entry.pw_uid, gid: entry.pw_gid, name: name, home: home)
        }
        return found ?? nil
    }
}
