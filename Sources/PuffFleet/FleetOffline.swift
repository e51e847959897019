import PuffCore
import PuffPlatform

/// Fleet mode while the directory is out of reach: with `ldap_cache_ttl` set, a login goes by
/// the copy of the user's record this host cached at its latest successful read of the
/// directory (no older than the TTL) and by this host's own counter, raised to the fleet's
/// failures and lock as cached. Failures counted offline are kept in the cache and added to
/// the directory's counter at this host's next online attempt. Only
/// `StoreError.directoryUnreachable` leads here: a directory that answered (no such entry,
/// locked, refused) is never second-guessed by the cache.
extension FleetStore {
    /// The offline cache.
    var fleetCache: FleetCache { FleetCache(stateDirectory: options.stateDirectory, session: session) }

    /// Whether `ldap_cache_ttl` is set.
    var fleetCacheEnabled: Bool { options.directory.cacheTTL > 0 }

    /// The cached entry an offline attempt may use, or the unreachable error (extended with
    /// why the cache cannot help) when there is none, it expired, or the cache is off.
    func usableCacheEntry(_ account: Account, unreachable why: String, at time: Int64) throws(StoreError) -> FleetCacheEntry {
        guard fleetCacheEnabled else { throw .directoryUnreachable(why) }
        guard let entry = try fleetCache.read(account) else {
            throw .directoryUnreachable(why + "; no cached record of \(account.name) on this host")
        }
        guard entry.isFresh(now: time, ttl: options.directory.cacheTTL) else {
            throw .directoryUnreachable(why + "; the cached record of \(account.name) was fetched at \(entry.fetched), "
                                        + "beyond ldap_cache_ttl=\(options.directory.cacheTTL)s")
        }
        return entry
    }

    /// Rewrites the cache after the directory answered with `record` and `counter` (inside
    /// the user's counter lock, which serializes every writer of the cache file); `pushed`
    /// offline failures were just added to the directory and leave the cache.
    @inline(never)
    func refreshFleetCache(_ account: Account, record: UserRecord, counter: FleetCounter, pushed: UInt32 = 0) throws(StoreError) {
        let previous = try fleetCache.read(account)
        let pending = previous?.offlineFailures ?? 0
        let time = now()
        // The same state, fetched within the last minute: no write (a login reads the entry
        // two or three times; each write is an fsync).
        if let previous, pushed == 0, previous.record == record, previous.counter == counter,
           previous.fetched <= time, time - previous.fetched < Self.cacheRewriteInterval { return }
        try fleetCache.write(FleetCacheEntry(record: record, fetched: time, counter: counter,
                                             offlineFailures: pending - min(pending, pushed)), for: account.name)
    }

    /// How old an unchanged cached copy may get before a directory read rewrites it (its age
    /// then lags the latest read by less than this).
    static let cacheRewriteInterval: Int64 = 60

    /// The subject offline, from the cached copy.
    @inline(never)
    func offlineSubject(_ account: Account, unreachable why: String) throws(StoreError) -> Subject {
        let time = now()
        let entry = try usableCacheEntry(account, unreachable: why, at: time)
        guard entry.record.hasAnyFactor else { return .notEnrolled(reason: "no Puff record in the cached copy") }
        let tally = options.lockout.offlineTally(entry.counter, local: try counters.read(account.name))
        return .enrolled(.init(account: account, record: entry.record, tally: tally, options: options, bootID: bootID(), now: time))
    }

    /// The `authsucc` take-back of a failure counted offline: one offline failure fewer to
    /// push to the directory (the local counter is taken back by the caller).
    @inline(never)
    func offlineTakeBack(_ name: UserName) throws(StoreError) {
        guard fleetCacheEnabled, let account = try Account.lookup(name.value) else { return }
        try counters.update(name) { _, _ throws(StoreError) in
            guard var entry = try fleetCache.read(account), entry.offlineFailures > 0 else { return }
            entry.offlineFailures -= 1
            try fleetCache.write(entry, for: name)
        }
    }

    /// What `puff-enroll status` shows while the directory is unreachable: the cached record
    /// and the tally an offline login goes by; `nil` when this host has no cached copy.
    public func offlineStatus(of account: Account) throws(StoreError) -> (record: UserRecord, tally: Tally)? {
        guard let entry = try fleetCache.read(account) else { return nil }
        return (entry.record, options.lockout.offlineTally(entry.counter, local: try counters.read(account.name)))
    }

    /// What `puff-enroll status` shows of the cache: its age and the offline failures not
    /// yet pushed; `nil` when this host has no cached copy.
    public func cacheStatus(of account: Account) throws(StoreError) -> (age: Int64, fresh: Bool, offlineFailures: UInt32)? {
        guard let entry = try fleetCache.read(account) else { return nil }
        let time = now()
        return (time - entry.fetched, entry.isFresh(now: time, ttl: options.directory.cacheTTL), entry.offlineFailures)
    }
}

/// Fleet mode offline, for the engine (`AttemptEngine`): against the cached record, the
/// attempt is counted in the local counter (raised to the fleet's failures and lock as cached)
/// and as an offline failure in the cache, to be pushed to the directory at this host's next
/// online attempt. Nothing is rehashed or migrated: the record is the directory's.
struct OfflineCounter: AttemptCounter {
    let store: FleetStore
    let account: Account
    /// Why the directory is out of reach, for the log line and the errors.
    let unreachable: String

    func count(_ rules: AdmissionRules, key: borrowing SecureBytes) throws(StoreError) -> CountStep {
        let cache = store.fleetCache
        let lockout = store.options.lockout
        let time = rules.time
        return try store.counters.update(account.name) { tally, save throws(StoreError) -> CountStep in
            var entry = try store.usableCacheEntry(account, unreachable: unreachable, at: time)
            let record = entry.record
            guard record.hasAnyFactor else { return .decided(.notEnrolled) }
            // The local counter raised to the fleet's failures and lock as cached.
            let view = lockout.offlineTally(entry.counter, local: tally)
            if let refusal = rules.refusal(record, view) { return .decided(refusal) }
            var template: GestureTemplate?
            if rules.isGesture, let gesture = record.gesture {
                template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key, path: cache.path(account.name))
            }
            // The administrator's lock of the view is not written into the local counter.
            var base = view
            base.adminLock = tally.adminLock
            let before = tally
            tally = rules.counting(base)
            try save(tally)
            if entry.offlineFailures < UInt32.max { entry.offlineFailures += 1 }
            try cache.write(entry, for: account.name)
            return .counted(CountedAttempt(record: record, template: template, failures: tally.failures,
                                           lock: rules.lock(after: tally),
                                           failure: .init(user: account.name, before: before, after: tally),
                                           origin: "offline: the directory is unreachable, counted on this host only "
                                               + "(cached record fetched \(time - entry.fetched) s ago; pushed to the directory when it is back)"))
        }
    }

    func settle(_ attempt: CountedAttempt, _ rules: AdmissionRules, passcodeUsed: Bool, upgrade: RecordUpgrade?,
                check: SettleCheck) throws(StoreError) -> AttemptOutcome {
        let cache = store.fleetCache
        return try store.counters.update(account.name) { tally, save throws(StoreError) -> AttemptOutcome in
            let cached = try cache.read(account)
            let settlement = rules.settle(attempt, check, current: cached?.record, adminLock: cached?.counter.adminLock ?? false,
                                          tally: tally, passcodeUsed: passcodeUsed)
            guard case .settled(let next) = settlement, var current = cached else {
                if case .refused(let outcome) = settlement { return outcome }
                return .locked(.lockedUntilReset)
            }
            if let next {
                try save.lowering(next)
                tally = next
            }
            // The run before this success is over on this host: neither it nor the fleet
            // failures cached before it count offline any more, nor go to the directory.
            current.offlineFailures = min(current.offlineFailures, tally.failures)
            current.counter.failures = 0
            try cache.write(current, for: account.name)
            return .success(rehashed: false)
        }
    }

    func takeBack(_ attempt: CountedAttempt) throws(StoreError) {
        let deny = store.options.lockout.deny
        try store.counters.update(account.name) { tally, save throws(StoreError) in
            guard let next = tally.takingBack(serial: attempt.failure.after.serial, deny: deny) else { return }
            try save(next)
            tally = next
        }
        try store.offlineTakeBack(account.name)
    }
}
