/// Fleet mode's offline cache (`ldap_cache_ttl`): one user's record as the directory last
/// gave it, with the fleet counter read beside it, kept on this host so a laptop can log in
/// while the directory is out of reach. Pure format and arithmetic; the file I/O is
/// `FleetCache` in PuffPlatform.
///
/// The file is the key/value text of the other stores, a blank line, then the record exactly
/// as `puffRecord` held it (peppered and sealed under the fleet key, never decrypted here).
public struct FleetCacheEntry: Equatable, Sendable {
    /// The record, as in the directory.
    public var record: UserRecord
    /// When the directory was read (wall-clock seconds).
    public var fetched: Int64
    /// The fleet counter read with the record.
    public var counter: FleetCounter
    /// Failures this host counted while the directory was out of reach and has not pushed to
    /// the directory yet (it adds them to `puffFailures` at its next online attempt).
    public var offlineFailures: UInt32

    /// An entry.
    public init(record: UserRecord, fetched: Int64, counter: FleetCounter, offlineFailures: UInt32 = 0) {
        self.record = record
        self.fetched = fetched
        self.counter = counter
        self.offlineFailures = offlineFailures
    }

    static let header = "puff-fleet-cache 1"
    static let metaSize = 512

    /// Largest file accepted.
    public static let maximumEncodedSize = metaSize + 2 + UserRecord.maximumEncodedSize

    /// The file's bytes.
    public func encoded() -> [UInt8] {
        let meta = "\(Self.header)\nfetched \(fetched)\nfailures \(counter.failures)\n"
            + "last-failure \(counter.lastFailure)\nadmin-lock \(counter.adminLock ? 1 : 0)\n"
            + "offline-failures \(offlineFailures)\n\n"
        return Array(meta.utf8) + record.encoded()
    }

    /// Parses `encoded()` output strictly: every key once, numbers in range, the record whole.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> FleetCacheEntry {
        let all = Array(bytes)
        guard all.count <= maximumEncodedSize else { throw .tooLarge }
        var split: Int?
        for index in 0..<min(all.count, metaSize) where index + 1 < all.count {
            if all[index] == UInt8(ascii: "\n"), all[index + 1] == UInt8(ascii: "\n") {
                split = index
                break
            }
        }
        guard let split else { throw .badText }
        let fields = try KeyValueText.parse(all[...split], header: header, maximumSize: metaSize,
                                            keys: ["fetched", "failures", "last-failure", "admin-lock", "offline-failures"],
                                            optional: [])
        func number(_ key: String) throws(RecordFormatError) -> Int64 {
            guard let text = fields[key], text.utf8.count <= 12, let value = Int64(canonicalDecimal: text) else { throw .badValue }
            return value
        }
        func count(_ key: String) throws(RecordFormatError) -> UInt32 {
            guard let value = UInt32(exactly: try number(key)) else { throw .badValue }
            return value
        }
        let adminLock = try number("admin-lock")
        guard adminLock == 0 || adminLock == 1 else { throw .badValue }
        let record = try UserRecord.decode(all[(split + 2)...])
        return FleetCacheEntry(record: record, fetched: try number("fetched"),
                               counter: FleetCounter(failures: try count("failures"), lastFailure: try number("last-failure"),
                                                     adminLock: adminLock == 1),
                               offlineFailures: try count("offline-failures"))
    }

    /// Whether the entry may serve an attempt at `now` under `ttl` seconds: fetched no longer
    /// ago than `ttl` and not in the future (a clock set back does not stretch its life).
    public func isFresh(now: Int64, ttl: Int64) -> Bool {
        ttl > 0 && fetched <= now && now - fetched <= ttl
    }
}

extension LockoutPolicy {
    /// The tally an offline attempt goes by: this host's counter, raised to the fleet's
    /// failures and lock as the cache recorded them (an offline run starts where the fleet
    /// was), with an administrator's lock from either. The failures and lock are the part
    /// written back to the local counter; the administrator's lock is not (a reset in the
    /// directory must lift it at the next online login).
    public func offlineTally(_ cached: FleetCounter, local: Tally) -> Tally {
        var tally = local
        if cached.failures > tally.failures {
            tally.failures = cached.failures
            tally.lastFailure = max(tally.lastFailure, cached.lastFailure)
        }
        tally.lockedUntil = max(tally.lockedUntil, lockEnd(afterFailures: cached.failures, at: cached.lastFailure))
        tally.adminLock = local.adminLock || cached.adminLock
        return tally
    }
}
