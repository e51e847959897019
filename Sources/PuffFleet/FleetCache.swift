import Glibc
import PuffCore
import PuffPlatform

/// The offline cache of fleet mode (`ldap_cache_ttl`, off by default): one file per user,
/// `state_dir/fleet-cache/NAME`, root 0600 in a root 0700 directory, read and replaced through
/// the trusted-files layer (no symlink, root-owned, private, one link, size bounded, atomic
/// replace). It is written only after the directory answered with the user's record, and read
/// only when the directory cannot be reached (`StoreError.directoryUnreachable`). A file that
/// is damaged, foreign-owned or not private fails closed like any store error.
struct FleetCache {
    /// The state directory (`state_dir`).
    let stateDirectory: String
    /// What the login (or helper run, or command) holds open: the cache directory is opened
    /// once, through the state directory's descriptor when that is held.
    let session: StoreSession

    static let directoryName = "fleet-cache"

    /// The path of `name`'s cache file, for log lines.
    func path(_ name: UserName) -> String { stateDirectory + "/" + Self.directoryName + "/" + name.value }

    /// `name`'s entry, or `nil` when there is none. The record inside must name `account`.
    func read(_ account: Account) throws(StoreError) -> FleetCacheEntry? {
        guard let cache = try session.directory(stateDirectory + "/" + Self.directoryName) else { return nil }
        guard let bytes = try cache.trusted.readFile(account.name.value, .rootPrivate(maximumSize: FleetCacheEntry.maximumEncodedSize))
        else { return nil }
        let entry: FleetCacheEntry
        do {
            entry = try FleetCacheEntry.decode(bytes)
        } catch {
            throw .format(path: path(account.name), error)
        }
        guard entry.record.user == account.name, entry.record.uid == account.uid else {
            throw .wrongOwner(path: path(account.name))
        }
        return entry
    }

    /// Replaces `name`'s entry (the state directory and the cache directory are created root
    /// 0700 when missing).
    func write(_ entry: FleetCacheEntry, for name: UserName) throws(StoreError) {
        let state = try session.directory(stateDirectory, creatingWith: 0o700)
        try session.subdirectory(Self.directoryName, of: state, creatingWith: 0o700).trusted
            .replaceFile(name.value, with: entry.encoded())
    }

    /// Removes `name`'s entry; `false` when there was none.
    @discardableResult
    func remove(_ name: UserName) throws(StoreError) -> Bool {
        guard let cache = try session.directory(stateDirectory + "/" + Self.directoryName) else { return false }
        return try cache.trusted.removeFile(name.value)
    }
}
