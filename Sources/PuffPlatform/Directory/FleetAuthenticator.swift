import PuffCore

/// Fleet mode (`backend = ldap`): the user's record and the fleet-wide failure counter live in
/// the directory entry; the local counter under `state_dir` is still written on every attempt
/// (failures, gesture failures, the latest passcode success on this host), but the lock is
/// decided by the fleet's count, so a reset on any host unlocks every host.
///
/// Every attempt is counted in the directory (one atomic Modify-Increment with the post-read
/// control) before the secret is checked; when the directory cannot be reached, cannot count,
/// or answers with something unusable, the attempt is not verified and the error fails closed
/// (PAM_AUTHINFO_UNAVAIL). Records are peppered and sealed with the fleet key, not the host key.
extension Authenticator {
    /// The fleet key (`fleet_key`).
    func fleetKey() throws(StoreError) -> SecureBytes {
        try SecretFile.fleetKey(options.directory.fleetKeyPath, session: session, tpm: options.tpm)
    }

    /// The user's directory entry and its record, checked against the account; `nil` when the
    /// directory has no Puff record for the user.
    func fleetRecord(_ connection: borrowing DirectoryConnection, _ account: Account,
                     picture: Bool = false) throws(StoreError) -> (entry: DirectoryEntry, record: UserRecord)? {
        guard let entry = try connection.readUser(account.name, picture: picture), entry.isPuffUser,
              let bytes = entry.record else { return nil }
        let record: UserRecord
        do {
            record = try UserRecord.decode(bytes)
        } catch {
            throw .directory("\(entry.dn): puffRecord is malformed (\(error))")
        }
        guard record.user == account.name, record.uid == account.uid else {
            throw .directory("\(entry.dn): puffRecord belongs to another user or uid")
        }
        return (entry, record)
    }

    /// The fleet counter of `entry`; a missing or negative `puffFailures` is an error (it is
    /// created with the record, and an increment of an absent attribute would fail).
    static func fleetCounter(_ entry: DirectoryEntry) throws(StoreError) -> FleetCounter {
        guard let failures = entry.failures, let count = UInt32(exactly: failures) else {
            throw .directory("\(entry.dn): puffFailures is missing or out of range")
        }
        return FleetCounter(failures: count, lastFailure: max(0, entry.lastFailure ?? 0), adminLock: entry.adminLock)
    }

    /// `subject(for:)` in fleet mode.
    @inline(never)
    func fleetSubject(_ account: Account) throws(StoreError) -> Subject {
        let found: (entry: DirectoryEntry, record: UserRecord)?
        do {
            let connection = try DirectoryConnection(options.directory, session: session)
            found = try fleetRecord(connection, account)
        } catch .directoryUnreachable(let why) {
            return try fleetOfflineSubject(account, unreachable: why)  // FleetOffline.swift
        }
        guard let found, found.record.hasAnyFactor else {
            if fleetCacheEnabled { try fleetCache.remove(account.name) }
            return .notEnrolled(reason: "no Puff record in the directory")
        }
        let counter = try Self.fleetCounter(found.entry)
        if fleetCacheEnabled {
            // A login refused here (locked) never reaches the attempt: the lock must reach the
            // offline copy all the same.
            try counters.update(account.name) { _, _ throws(StoreError) in
                try refreshFleetCache(account, record: found.record, counter: counter)
            }
        }
        let local = try counters.read(account.name)
        let tally = options.lockout.fleetTally(counter, local: local)
        let time = now()
        return .enrolled(Enrolled(account: account, record: found.record, tally: tally,
                                  lock: options.lockout.status(of: tally, now: time, isRoot: account.uid == 0),
                                  acceptance: options.quickFactor.acceptance(of: found.record, tally, bootID: bootID(), now: time)))
    }

    /// `attempt(_:for:)` in fleet mode, for an enrolled account, in the three steps of the
    /// files backend: (1) count the attempt in the directory (the post-read count is its
    /// number in the run) and in the local counter, holding the local lock only for a read and
    /// a write; (2) verify without any lock; (3) on success, clear in the directory the failures
    /// counted up to this attempt (later ones stay) and settle the local counter.
    @inline(never)
    func fleetAttempt(_ passcode: borrowing SecureBytes, _ account: Account, asProofForChange: Bool,
                      counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        let key = try fleetKey()
        // Step 1. Read again: an enrollment or a reset on another host may have changed it.
        // Only a directory out of reach before anything was counted falls back to the cache;
        // one lost later fails closed.
        do throws(StoreError) {
            let connection = try DirectoryConnection(options.directory, session: session)
            let read = try fleetRecord(connection, account)
            do throws(StoreError) {
                return try fleetOnlineAttempt(passcode, account, asProofForChange: asProofForChange, key: key,
                                              connection, read, counted: &countedFailure)
            } catch .directoryUnreachable(let lost) {
                throw .directory(lost + " (during the attempt)")
            }
        } catch .directoryUnreachable(let why) {
            return try fleetOfflineAttempt(passcode, account, asProofForChange: asProofForChange,  // FleetOffline.swift
                                           unreachable: why, counted: &countedFailure)
        }
    }

    /// `fleetAttempt` once the directory answered the first read (`read`).
    private func fleetOnlineAttempt(_ passcode: borrowing SecureBytes, _ account: Account, asProofForChange: Bool,
                                    key: borrowing SecureBytes, _ connection: borrowing DirectoryConnection,
                                    _ firstRead: (entry: DirectoryEntry, record: UserRecord)?,
                                    counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        let host = fleetHostName(options.directory)
        let isRoot = account.uid == 0
        let isGesture = passcode.hasPrefix(GestureWire.prefix)
        let started = now()
        var read = firstRead
        guard let first = read, first.record.hasAnyFactor else {
            // The directory says there is no record: a cached copy must not outlive it.
            if fleetCacheEnabled { try fleetCache.remove(account.name) }
            try runDummyVerification(passcode)
            return .notEnrolled
        }
        // Failures counted while the directory was out of reach join the fleet's count first.
        // (Two attempts at once may both push them: an over-count, the safe side.)
        var pushed: UInt32 = 0
        if fleetCacheEnabled, let pending = try fleetCache.read(account)?.offlineFailures, pending > 0 {
            for _ in 0..<min(pending, 64) {
                _ = try connection.countFailure(dn: first.entry.dn, now: started, host: host)
                pushed += 1
            }
            read = try fleetRecord(connection, account)
        }
        guard let found = read, found.record.hasAnyFactor else {
            try runDummyVerification(passcode)
            return .notEnrolled
        }
        let (entry, record) = found
        var fleet = try Self.fleetCounter(entry)
        if fleetCacheEnabled {
            let counter = fleet
            try counters.update(account.name) { _, _ throws(StoreError) in
                try refreshFleetCache(account, record: record, counter: counter, pushed: pushed)
            }
        }
        if options.lockout.fleetRunExpired(fleet, now: started) {
            // fail_interval: the run is forgotten only if nobody counted since the read
            // (deleting the value read fails when it changed: a compare-and-swap).
            do {
                try connection.modify(dn: entry.dn, [.delete("puffFailures", Self.digits(Int64(fleet.failures))),
                                                     .add("puffFailures", Self.digits(0))])
                fleet.failures = 0
            } catch {
                // Another host counted meanwhile: keep the run (the safe side).
            }
        }
        let before = options.lockout.fleetTally(fleet, local: try counters.read(account.name))
        let status = options.lockout.status(of: before, now: started, isRoot: isRoot)
        guard status == .open else { return .locked(status) }
        if let decided = decidedBeforeCounting(record, before, isGesture: isGesture, asProofForChange: asProofForChange,
                                               at: started) {
            return decided
        }
        // Open the template before counting: a record problem must not cost an attempt.
        var template: GestureTemplate?
        if isGesture, let gesture = record.gesture {
            template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key, path: entry.dn)
        }
        // Counted in the directory first; an attempt it cannot count is never verified.
        let counted = try connection.countFailure(dn: entry.dn, now: started, host: host)
        let (localBefore, localCounted) = try counters.update(account.name) { tally, save throws(StoreError) -> (Tally, Tally) in
            var next = options.lockout.recordingFailure(in: tally, now: started)
            if isGesture, next.gestureFailures < UInt32.max { next.gestureFailures += 1 }
            try save(next)
            let previous = tally
            tally = next
            return (previous, next)
        }
        let after = options.lockout.fleetTally(FleetCounter(failures: counted, lastFailure: started,
                                                            adminLock: fleet.adminLock), local: localCounted)
        let lock = options.lockout.status(of: after, now: started, isRoot: isRoot)
        let origin = "fleet failure \(counted) counted by \(host)"
        func failed(_ detail: String) -> Outcome {
            countedFailure = CountedFailure(user: account.name, before: localBefore, after: localCounted,
                                            countedInDirectory: true)
            return .failure(failures: counted, lock: lock, detail: origin + (detail.isEmpty ? "" : "; " + detail))
        }
        guard options.lockout.fleetMayVerify(before: fleet.failures, counted: counted, isRoot: isRoot) else {
            if lock == .open { return failed("not verified: another host counted at the same time") }
            return .locked(lock)
        }
        // Step 2, without any lock.
        if isGesture {
            guard let template else { return failed("a gesture was sent but none is enrolled") }
            defer { template.wipeStorage() }
            if let problem = Self.gestureProblem(passcode, template) { return failed(problem) }
            return try fleetSettleSuccess(connection, account, verified: record, counted: counted,
                                          localSerial: localCounted.serial, passcode: nil, upgradedHash: nil,
                                          at: started, failed: failed)
        }
        guard let stored = record.passcode else { return failed("a passcode was sent but only a gesture is enrolled") }
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: key)
        guard try hasher.verify(prehash, against: stored.hash) else { return failed("") }
        let upgradedHash = hasher.needsRehash(stored.hash) ? try hasher.hash(prehash) : nil
        return try fleetSettleSuccess(connection, account, verified: record, counted: counted,
                                      localSerial: localCounted.serial, passcode: stored, upgradedHash: upgradedHash,
                                      at: started, failed: failed)
    }

    /// Step 3 of `fleetAttempt`: the record must still hold the secret that verified; the
    /// directory's count loses the failures up to and including this attempt's number
    /// (`counted`) with a compare-and-swap, so failures other hosts counted since stay; a
    /// passcode success also lifts an administrator's lock; the local counter is settled
    /// as in the files backend.
    private func fleetSettleSuccess(_ connection: borrowing DirectoryConnection, _ account: Account,
                                    verified record: UserRecord, counted: UInt32, localSerial: UInt64,
                                    passcode: StoredPasscode?, upgradedHash: String?, at started: Int64,
                                    failed: (String) -> Outcome) throws(StoreError) -> Outcome {
        var settled = false
        var latest: (record: UserRecord, counter: FleetCounter)?
        for _ in 0..<4 where !settled {
            guard let found = try fleetRecord(connection, account) else { return failed("the record was removed meanwhile") }
            if let passcode {
                guard found.record.passcode == passcode else { return failed("the passcode was changed meanwhile") }
            } else {
                guard found.record.gesture == record.gesture else { return failed("the gesture was changed meanwhile") }
                if found.entry.adminLock {
                    return found.record.passcode == nil ? .locked(.lockedUntilReset) : .passcodeRequired(.administrator)
                }
            }
            var counter = try Self.fleetCounter(found.entry)
            let now = counter.failures
            var record = found.record
            var changes: [DirectoryChange] = []
            if now >= counted, now > 0 {
                changes += [.delete("puffFailures", Self.digits(Int64(now))),
                            .add("puffFailures", Self.digits(Int64(now - counted)))]
                counter.failures = now - counted
            }
            if passcode != nil {
                changes += Array(Self.passcodeSuccess(at: started).dropFirst())
                counter.adminLock = false
            }
            if let passcode, let upgradedHash {
                record.passcode = StoredPasscode(type: passcode.type, hash: upgradedHash)
                changes.append(.replace("puffRecord", record.encoded()))
            }
            if changes.isEmpty {
                latest = (found.record, counter)
                break
            }
            do {
                try connection.modify(dn: found.entry.dn, changes)
                settled = true
                latest = (record, counter)
            } catch {
                // Another host counted between the read and the swap: read again.
            }
        }
        try counters.update(account.name) { tally, save throws(StoreError) in
            try settleCounter(&tally, of: localSerial, passcodeUsed: passcode != nil, at: started, save)
            // The state this success left in the directory, for logins while it is out of reach.
            if fleetCacheEnabled, let latest {
                try refreshFleetCache(account, record: latest.record, counter: latest.counter)
            }
        }
        return .success(rehashed: settled && upgradedHash != nil)
    }

    /// The `authsucc` take-back in fleet mode: one failure removed from the fleet counter
    /// (never below 0), with a compare-and-swap so a failure another host counted meanwhile is
    /// not lost; `false` when there was nothing to take back.
    @inline(never)
    func fleetTakeBack(_ name: UserName) throws(StoreError) -> Bool {
        let connection = try DirectoryConnection(options.directory, session: session)
        for _ in 0..<4 {
            let entry = try fleetEntry(connection, name)
            let failures = try Self.fleetCounter(entry).failures
            guard failures > 0 else { return false }
            do {
                try connection.modify(dn: entry.dn, [.delete("puffFailures", Self.digits(Int64(failures))),
                                                     .add("puffFailures", Self.digits(Int64(failures) - 1))])
                return true
            } catch {
                continue  // another host changed the count between the read and the swap
            }
        }
        throw .directory("\(name): the fleet counter kept changing; the failure was not taken back")
    }

    /// The changes of a passcode success (or a passcode enrollment) at `time`: failures
    /// cleared, an administrator's lock lifted, the time kept.
    static func passcodeSuccess(at time: Int64) -> [DirectoryChange] {
        [.replace("puffFailures", digits(0)), .replace("puffAdminLock", nil), .replace("puffPasscodeAt", digits(time))]
    }

    /// A decimal integer attribute value.
    static func digits(_ value: Int64) -> [UInt8] { Array(String(value).utf8) }

    /// Writes `change` into `account`'s Puff record in the directory (created, with its
    /// counter at 0, when the entry has none yet), with `extra` changes in the same Modify.
    /// The user's entry must already exist under `ldap_base`.
    private func fleetUpdateRecord(_ account: Account, extra: [DirectoryChange],
                                   _ change: (inout UserRecord) -> Void) throws(StoreError) {
        let connection = try DirectoryConnection(options.directory, session: session)
        guard let entry = try connection.readUser(account.name) else {
            throw .directory("no entry with uid=\(account.name) under \(options.directory.base): create the user's entry first")
        }
        var record = try fleetRecord(connection, account)?.record
            ?? UserRecord(user: account.name, uid: account.uid, passcode: nil)
        change(&record)
        var changes: [DirectoryChange] = []
        if !entry.isPuffUser { changes.append(.add("objectClass", Array("puffUser".utf8))) }
        changes.append(.replace("puffRecord", record.encoded()))
        if entry.failures == nil { changes.append(.replace("puffFailures", Self.digits(0))) }
        try connection.modify(dn: entry.dn, changes + extra)
    }

    /// `storePasscode` in fleet mode: hashed with the fleet key and written to the entry.
    func fleetStorePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError) {
        let key = try fleetKey()
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: key)
        let hash = try hasher.hash(prehash)
        let time = now()
        try fleetUpdateRecord(account, extra: Array(Self.passcodeSuccess(at: time).dropFirst())) { record in
            record.passcode = StoredPasscode(type: type, hash: hash)
        }
        try counters.update(account.name) { tally, save throws(StoreError) in
            tally = Self.passcodeUsed(tally, at: time, boot: bootID())
            try save(tally)
        }
    }

    /// `storeGesture` in fleet mode: sealed with the fleet key; the picture goes into the entry.
    func fleetStoreGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
        let key = try fleetKey()
        let sealed = try GestureSealing.seal(template, for: account, hostKey: key)
        let digest = SHA256.hex(picture)
        try fleetUpdateRecord(account, extra: [.replace("puffPicture", picture),
                                               .replace("puffPictureSHA256", Array(digest.utf8))]) { record in
            record.gesture = StoredGesture(pictureWidth: template.width, pictureHeight: template.height,
                                           pictureSHA256: digest, sealedTemplate: sealed)
        }
    }

    /// The entry of `name` with a Puff record, or an error saying there is none.
    @inline(never)
    private func fleetEntry(_ connection: borrowing DirectoryConnection, _ name: UserName) throws(StoreError) -> DirectoryEntry {
        guard let entry = try connection.readUser(name), entry.isPuffUser else {
            throw .directory("\(name) has no Puff record in the directory")
        }
        return entry
    }

    /// `requirePasscode` in fleet mode: `puffAdminLock` set, for every host.
    func fleetRequirePasscode(of name: UserName) throws(StoreError) {
        let connection = try DirectoryConnection(options.directory, session: session)
        let entry = try fleetEntry(connection, name)
        try connection.modify(dn: entry.dn, [.replace("puffAdminLock", Array("TRUE".utf8))])
    }

    /// The administrator's reset in fleet mode: the fleet's failures and lock cleared (every
    /// host is unlocked at its next attempt) and this host's counter reset too. Returns the
    /// fleet failures that were cleared.
    public func fleetReset(of name: UserName) throws(StoreError) -> UInt32 {
        let connection = try DirectoryConnection(options.directory, session: session)
        let entry = try fleetEntry(connection, name)
        let cleared = try Self.fleetCounter(entry).failures
        try connection.modify(dn: entry.dn, [.replace("puffFailures", Self.digits(0)), .replace("puffAdminLock", nil)])
        try counters.reset(name)
        // The cached copy held the old lock state; the next online login caches it again.
        try fleetCache.remove(name)
        return cleared
    }

    /// `removeEnrollment` in fleet mode: the Puff attributes and object class removed.
    func fleetRemoveEnrollment(of name: UserName) throws(StoreError) -> Bool {
        let connection = try DirectoryConnection(options.directory, session: session)
        guard let entry = try connection.readUser(name), entry.isPuffUser else {
            _ = try fleetCache.remove(name)
            return false
        }
        let attributes = ["puffRecord", "puffPicture", "puffPictureSHA256", "puffFailures", "puffLastFailure",
                          "puffLastFailureHost", "puffAdminLock", "puffPasscodeAt"]
        try connection.modify(dn: entry.dn, [.delete("objectClass", Array("puffUser".utf8))]
                                            + attributes.map { .replace($0, nil) })
        try counters.update(name) { tally, save throws(StoreError) in
            tally = Tally()
            try save(tally)
            try fleetCache.remove(name)
        }
        return true
    }

    /// What `puff-enroll status` shows in fleet mode: the record, the tally this host goes
    /// by, and the host that counted the latest failure.
    public func fleetStatus(of account: Account) throws(StoreError)
        -> (record: UserRecord, tally: Tally, lastFailureHost: String?)? {
        let connection = try DirectoryConnection(options.directory, session: session)
        guard let found = try fleetRecord(connection, account) else { return nil }
        let local = try counters.read(account.name)
        return (found.record, options.lockout.fleetTally(try Self.fleetCounter(found.entry), local: local),
                found.entry.lastFailureHost)
    }
}
