import PuffCore
import PuffPlatform

/// The login's one connection to the directory: opened at its first use and handed to every
/// later step, so one login opens one connection. Once the directory was found out of reach
/// (at the connect or by an operation), every later use says so at once: one login waits at
/// most one `ldap_timeout` before the offline cache is used.
final class DirectoryLink {
    private var connection: DirectoryConnection?
    private var unreachable: String?
    /// The user's entry as the login read it before the prompt: the attempt goes by it, so a
    /// login reads the entry once (the count's post-read and the settle's compare-and-swap
    /// catch what other hosts changed since).
    var read: (name: UserName, entry: DirectoryEntry, record: UserRecord)?

    /// The connection, opened now or held; `directoryUnreachable` once it was found out of reach.
    func open(_ settings: DirectorySettings, session: StoreSession) throws(StoreError) -> DirectoryConnection {
        if let why = unreachable ?? connection?.lost { throw .directoryUnreachable(why) }
        if let connection { return connection }
        do {
            let opened = try DirectoryConnection(settings, session: session)
            connection = opened
            return opened
        } catch .directoryUnreachable(let why) {
            unreachable = why
            throw .directoryUnreachable(why)
        }
    }
}

/// Fleet mode online, for the engine (`AttemptEngine`): an attempt is counted in the
/// directory (one Modify-Increment whose post-read count numbers it in the fleet's run) and
/// in the local counter; the lock is the fleet's.
struct DirectoryCounter: AttemptCounter {
    let store: FleetStore
    let connection: DirectoryConnection
    let account: Account
    /// The entry and record as read just before the attempt (nil: no Puff record).
    let firstRead: (entry: DirectoryEntry, record: UserRecord)?

    private var options: PuffOptions { store.options }

    func count(_ rules: AdmissionRules, key: borrowing SecureBytes) throws(StoreError) -> CountStep {
        let host = fleetHostName(options.directory)
        let time = rules.time
        guard let first = firstRead, first.record.hasAnyFactor else {
            // The directory says there is no record: a cached copy must not outlive it.
            if store.fleetCacheEnabled { try store.fleetCache.remove(account.name) }
            return .decided(.notEnrolled)
        }
        // Failures counted while the directory was out of reach join the fleet's count first.
        // (Two attempts at once may both push them: an over-count, the safe side.)
        var read = firstRead
        var pushed: UInt32 = 0
        if store.fleetCacheEnabled, let pending = try store.fleetCache.read(account)?.offlineFailures, pending > 0 {
            for _ in 0..<min(pending, 64) {
                _ = try connection.countFailure(dn: first.entry.dn, now: time, host: host)
                pushed += 1
            }
            read = try store.fleetRecord(connection, account)
        }
        guard let (entry, record) = read, record.hasAnyFactor else { return .decided(.notEnrolled) }
        var fleet = try FleetStore.fleetCounter(entry)
        if store.fleetCacheEnabled {
            let counter = fleet
            try store.counters.update(account.name) { _, _ throws(StoreError) in
                try store.refreshFleetCache(account, record: record, counter: counter, pushed: pushed)
            }
        }
        if options.lockout.fleetRunExpired(fleet, now: time) {
            // fail_interval: the run is forgotten only if nobody counted since the read
            // (deleting the value read fails when it changed: a compare-and-swap).
            do {
                try connection.modify(dn: entry.dn, [.delete("puffFailures", FleetStore.digits(Int64(fleet.failures))),
                                                     .add("puffFailures", FleetStore.digits(0))])
                fleet.failures = 0
            } catch {
                // Another host counted meanwhile: keep the run (the safe side).
            }
        }
        let view = options.lockout.fleetTally(fleet, local: try store.counters.read(account.name))
        if let refusal = rules.refusal(record, view) { return .decided(refusal) }
        // Opened before counting: a store problem must not cost an attempt.
        var template: GestureTemplate?
        if rules.isGesture, let gesture = record.gesture {
            template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: key, path: entry.dn)
        }
        // Counted in the directory first; an attempt it cannot count is never verified.
        let fleetCount = try connection.countFailure(dn: entry.dn, now: time, host: host)
        let (localBefore, localAfter) = try store.counters.update(account.name) { tally, save throws(StoreError) -> (Tally, Tally) in
            let before = tally
            tally = rules.counting(before)
            try save(tally)
            return (before, tally)
        }
        let after = options.lockout.fleetTally(FleetCounter(failures: fleetCount, lastFailure: time, adminLock: fleet.adminLock),
                                               local: localAfter)
        return .counted(CountedAttempt(record: record, template: template, failures: fleetCount, lock: rules.lock(after: after),
                                       failure: .init(user: account.name, before: localBefore, after: localAfter,
                                                      countedInDirectory: true),
                                       origin: "fleet failure \(fleetCount) counted by \(host)",
                                       mayVerify: options.lockout.fleetMayVerify(before: fleet.failures, counted: fleetCount,
                                                                                 isRoot: rules.isRoot),
                                       directoryCount: fleetCount))
    }

    /// The record must still hold the secret that verified; the directory's count loses the
    /// failures up to and including this attempt's number with a compare-and-swap, so those
    /// other hosts counted since stay; a passcode success also lifts an administrator's lock
    /// and stores a rehash, a gesture's success a migrated template; the local counter is
    /// settled as in the files store.
    func settle(_ attempt: CountedAttempt, _ rules: AdmissionRules, passcodeUsed: Bool, upgrade: RecordUpgrade?,
                check: SettleCheck) throws(StoreError) -> AttemptOutcome {
        let time = rules.time
        var settled = false
        var latest: (record: UserRecord, counter: FleetCounter)?
        for _ in 0..<4 where !settled {
            let found = try store.fleetRecord(connection, account)
            if let refused = rules.refusal(of: attempt, check, current: found?.record,
                                           adminLock: found?.entry.adminLock ?? false) { return refused }
            guard let found else { return .locked(.lockedUntilReset) }
            var counter = try FleetStore.fleetCounter(found.entry)
            let current = counter.failures
            var record = found.record
            var changes: [DirectoryChange] = []
            // This attempt's increment made the count `directoryCount`: that many failures of the
            // run are this success's to clear. A count below it means another success (or a
            // reset) cleared part of the run since, this attempt's own failure among them, so
            // what is left of the run up to this attempt is cleared: two right passcodes on two
            // hosts at once leave 0 (the first writes 1 over 2, the second 0 over 1).
            let left = current >= attempt.directoryCount ? current - attempt.directoryCount : 0
            if left != current {
                changes += [.delete("puffFailures", FleetStore.digits(Int64(current))),
                            .add("puffFailures", FleetStore.digits(Int64(left)))]
                counter.failures = left
            }
            if passcodeUsed {
                changes += Array(FleetStore.passcodeSuccess(at: time).dropFirst())
                counter.adminLock = false
            }
            switch upgrade {
            case .passcode(let stored)?:
                record.passcode = stored
                changes.append(.replace("puffRecord", record.encoded()))
            case .gesture(let sealed)?:
                if var gesture = record.gesture {
                    gesture.sealedTemplate = sealed
                    record.gesture = gesture
                    changes.append(.replace("puffRecord", record.encoded()))
                }
            case nil:
                break
            }
            if changes.isEmpty {
                latest = (found.record, counter)
                break
            }
            do throws(StoreError) {
                try connection.modify(dn: found.entry.dn, changes)
                settled = true
                latest = (record, counter)
            } catch .directoryUnreachable(let why) {
                throw .directoryUnreachable(why)
            } catch {
                // Another host counted between the read and the swap: read again.
            }
        }
        try store.counters.update(account.name) { tally, save throws(StoreError) in
            if let next = rules.settled(tally, serial: attempt.failure.after.serial, passcodeUsed: passcodeUsed) {
                try save.lowering(next)
                tally = next
            }
            // The state this success left in the directory, for logins while it is out of reach.
            if store.fleetCacheEnabled, let latest {
                try store.refreshFleetCache(account, record: latest.record, counter: latest.counter)
            }
        }
        return .success(rehashed: settled && upgrade != nil)
    }

    /// One failure off the directory's count and the local attempt taken back.
    func takeBack(_ attempt: CountedAttempt) throws(StoreError) {
        _ = try store.takeBackInDirectory(account.name)
        let deny = options.lockout.deny
        try store.counters.update(account.name) { tally, save throws(StoreError) in
            guard let next = tally.takingBack(serial: attempt.failure.after.serial, deny: deny) else { return }
            try save(next)
            tally = next
        }
    }
}
