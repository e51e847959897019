import PuffCore

/// Fleet mode while the directory is out of reach: with `ldap_cache_ttl` set, a login goes by
/// the copy of the user's record this host cached at its latest successful read of the
/// directory (no older than the TTL) and by this host's own counter, raised to the fleet's
/// failures and lock as cached. Failures counted offline are kept in the cache and added to
/// the directory's counter at this host's next online attempt. Only
/// `StoreError.directoryUnreachable` leads here: a directory that answered (no such entry,
/// locked, refused) is never second-guessed by the cache.
extension Authenticator {
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

    /// `subject(for:)` offline.
    @inline(never)
    func fleetOfflineSubject(_ account: Account, unreachable why: String) throws(StoreError) -> Subject {
        let time = now()
        let entry = try usableCacheEntry(account, unreachable: why, at: time)
        guard entry.record.hasAnyFactor else { return .notEnrolled(reason: "no Puff record in the cached copy") }
        let tally = options.lockout.offlineTally(entry.counter, local: try counters.read(account.name))
        return .enrolled(Enrolled(account: account, record: entry.record, tally: tally,
                                  lock: options.lockout.status(of: tally, now: time, isRoot: account.uid == 0),
                                  acceptance: options.quickFactor.acceptance(of: entry.record, tally, bootID: bootID(), now: time)))
    }

    /// `attempt(_:for:)` offline, in the three steps of the files backend, against the cached
    /// record: (1) under the user's lock, refuse when the offline tally is locked, count the
    /// attempt in the local counter and as an offline failure in the cache; (2) verify
    /// without the lock; (3) on success settle the local counter and forget the offline
    /// failures up to this attempt. Nothing is rehashed or upgraded (the record is the
    /// directory's).
    func fleetOfflineAttempt(_ passcode: borrowing SecureBytes, _ account: Account, asProofForChange: Bool,
                             unreachable why: String, counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        let key = try fleetKey()
        let isRoot = account.uid == 0
        let isGesture = passcode.hasPrefix(GestureWire.prefix)
        let started = now()
        let cache = fleetCache
        let cachePath = cache.path(account.name)
        var fetched: Int64 = 0
        let step = try counters.update(account.name) { tally, save throws(StoreError) -> Counted in
            var entry = try usableCacheEntry(account, unreachable: why, at: started)
            fetched = entry.fetched
            let record = entry.record
            guard record.hasAnyFactor else { return .decided(.notEnrolled) }
            let view = options.lockout.offlineTally(entry.counter, local: tally)
            let status = options.lockout.status(of: view, now: started, isRoot: isRoot)
            guard status == .open else { return .decided(.locked(status)) }
            if let decided = decidedBeforeCounting(record, view, isGesture: isGesture, asProofForChange: asProofForChange,
                                                   at: started) {
                return .decided(decided)
            }
            var template: GestureTemplate?
            if isGesture, let gesture = record.gesture {
                template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key, path: cachePath)
            }
            // The administrator's lock stays the cache's: never written into the local counter.
            var base = view
            base.adminLock = tally.adminLock
            var next = options.lockout.recordingFailure(in: base, now: started)
            if isGesture, next.gestureFailures < UInt32.max { next.gestureFailures += 1 }
            try save(next)
            if entry.offlineFailures < UInt32.max { entry.offlineFailures += 1 }
            try cache.write(entry, for: account.name)
            let before = tally
            tally = next
            return .counted(record: record, before: before, tally: next, template: template)
        }
        let record: UserRecord, before: Tally, counted: Tally, template: GestureTemplate?
        switch step {
        case .decided(let outcome):
            if outcome == .notEnrolled { try runDummyVerification(passcode) }
            return outcome
        case .counted(let read, let found, let tally, let opened):
            (record, before, counted, template) = (read, found, tally, opened)
        }
        let origin = "offline: the directory is unreachable, counted on this host only "
            + "(cached record fetched \(started - fetched) s ago; pushed to the directory when it is back)"
        func failed(_ detail: String) -> Outcome {
            countedFailure = CountedFailure(user: account.name, before: before, after: counted)
            return .failure(failures: counted.failures, lock: options.lockout.status(of: counted, now: started, isRoot: isRoot),
                            detail: origin + (detail.isEmpty ? "" : "; " + detail))
        }
        if isGesture {
            guard let template else { return failed("a gesture was sent but none is enrolled") }
            defer { template.wipeStorage() }
            if let problem = Self.gestureProblem(passcode, template) { return failed(problem) }
        } else {
            guard let stored = record.passcode else { return failed("a passcode was sent but only a gesture is enrolled") }
            let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: key)
            guard try hasher.verify(prehash, against: stored.hash) else { return failed("") }
        }
        return try counters.update(account.name) { tally, save throws(StoreError) -> Outcome in
            guard var current = try cache.read(account) else { return failed("the cached record was removed meanwhile") }
            if isGesture {
                guard current.record.gesture == record.gesture else { return failed("the gesture was changed meanwhile") }
                if current.counter.adminLock {
                    return current.record.passcode == nil ? .locked(.lockedUntilReset) : .passcodeRequired(.administrator)
                }
            } else {
                guard current.record.passcode == record.passcode else { return failed("the passcode was changed meanwhile") }
            }
            try settleCounter(&tally, of: counted.serial, passcodeUsed: !isGesture, at: started, save)
            // The run before this success is over on this host: neither it nor the fleet
            // failures cached before it count offline any more, nor go to the directory.
            current.offlineFailures = min(current.offlineFailures, tally.failures)
            current.counter.failures = 0
            try cache.write(current, for: account.name)
            return .success(rehashed: false)
        }
    }

    /// The `authsucc` take-back of a failure counted offline: one offline failure fewer to
    /// push to the directory (the local counter is taken back by the caller).
    @inline(never)
    func fleetOfflineTakeBack(_ name: UserName) throws(StoreError) {
        guard fleetCacheEnabled, let account = try Account.lookup(name.value) else { return }
        try counters.update(name) { _, _ throws(StoreError) in
            guard var entry = try fleetCache.read(account), entry.offlineFailures > 0 else { return }
            entry.offlineFailures -= 1
            try fleetCache.write(entry, for: name)
        }
    }

    /// What `puff-enroll status` shows while the directory is unreachable: the cached record
    /// and the tally an offline login goes by; `nil` when this host has no cached copy.
    public func fleetOfflineStatus(of account: Account) throws(StoreError) -> (record: UserRecord, tally: Tally)? {
        guard let entry = try fleetCache.read(account) else { return nil }
        return (entry.record, options.lockout.offlineTally(entry.counter, local: try counters.read(account.name)))
    }

    /// What `puff-enroll status` shows of the cache: its age and the offline failures not
    /// yet pushed; `nil` when this host has no cached copy.
    public func fleetCacheStatus(of account: Account) throws(StoreError) -> (age: Int64, fresh: Bool, offlineFailures: UInt32)? {
        guard let entry = try fleetCache.read(account) else { return nil }
        let time = now()
        return (time - entry.fetched, entry.isFresh(now: time, ttl: options.directory.cacheTTL), entry.offlineFailures)
    }
}
