import PuffCore
import PuffPlatform

/// Fleet mode (`backend = ldap`): the user's record and the fleet-wide failure counter live in
/// the directory entry; the local counter under `state_dir` is still written on every attempt
/// (failures, gesture failures, the latest passcode success on this host), but the lock is
/// decided by the fleet's count, so a reset on any host unlocks every host.
///
/// Every attempt is counted in the directory (one atomic Modify-Increment with the post-read
/// control) before the secret is checked; when the directory cannot be reached, cannot count,
/// or answers with something unusable, the attempt is not verified and the error fails closed
/// (PAM_AUTHINFO_UNAVAIL). Records are peppered and sealed with the fleet key, not the host key.
///
/// Its own target (PuffFleet), linked by the helper and `puff-enroll` only: the module cannot
/// import it, so it cannot link the directory client or libldap by construction. One login
/// holds one `FleetStore` and so opens at most one connection (`DirectoryLink`).
public struct FleetStore {
    /// The files store's authenticator: the local counter, the clock, the session.
    public let authenticator: Authenticator
    /// The login's one connection, opened at its first use.
    let link = DirectoryLink()

    /// The fleet store over `authenticator`'s options and session.
    public init(_ authenticator: Authenticator) { self.authenticator = authenticator }

    var options: PuffOptions { authenticator.options }
    var session: StoreSession { authenticator.session }
    var counters: LockoutStore { authenticator.counters }
    var hasher: PasscodeHasher { authenticator.hasher }
    func now() -> Int64 { authenticator.now() }
    func bootID() -> String? { authenticator.bootID() }

    /// The login's connection (opened now, or the one it holds); a directory found out of reach
    /// once is out of reach for the rest of the login, without another wait.
    func directory() throws(StoreError) -> DirectoryConnection {
        try link.open(options.directory, session: session)
    }

    typealias Subject = Authenticator.Subject
    typealias Outcome = Authenticator.Outcome
    typealias CountedFailure = Authenticator.CountedFailure
    /// The fleet key (`fleet_key`).
    func fleetKey() throws(StoreError) -> SecureBytes {
        try SecretFile.fleetKey(options.directory.fleetKeyPath, session: session, tpm: options.tpm)
    }

    /// The user's directory entry and its record, checked against the account; `nil` when the
    /// directory has no Puff record for the user.
    func fleetRecord(_ connection: DirectoryConnection, _ account: Account,
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
    func subject(of account: Account) throws(StoreError) -> Subject {
        let found: (entry: DirectoryEntry, record: UserRecord)?
        do {
            found = try fleetRecord(try directory(), account)
        } catch .directoryUnreachable(let why) {
            return try offlineSubject(account, unreachable: why)  // FleetOffline.swift
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
        return .enrolled(.init(account: account, record: found.record, tally: tally,
                               lock: options.lockout.status(of: tally, now: time, isRoot: account.uid == 0),
                               acceptance: options.quickFactor.acceptance(of: found.record, tally, bootID: bootID(), now: time)))
    }

    /// `attempt(_:for:)` in fleet mode, for an enrolled account: the engine
    /// (`Authenticator.run`) counting in the directory (`DirectoryCounter`), or, when the
    /// directory is out of reach before anything was counted, on this host against the cached
    /// record (`OfflineCounter`). A directory lost after the first read fails closed.
    @inline(never)
    func attempt(_ secret: borrowing SecureBytes, _ account: Account, asProofForChange: Bool,
                 counted countedFailure: inout CountedFailure?) throws(StoreError) -> Outcome {
        countedFailure = nil
        let isGesture = secret.hasPrefix(GestureWire.prefix)
        let counter: DirectoryCounter
        do throws(StoreError) {
            // Read again: an enrollment or a reset on another host may have changed it.
            let connection = try directory()
            counter = DirectoryCounter(store: self, connection: connection, account: account,
                                       firstRead: try fleetRecord(connection, account), isGesture: isGesture)
        } catch .directoryUnreachable(let why) {
            return try authenticator.run(secret, OfflineCounter(store: self, account: account, unreachable: why, isGesture: isGesture),
                                         for: account, asProofForChange: asProofForChange, counted: &countedFailure)
        }
        do throws(StoreError) {
            return try authenticator.run(secret, counter, for: account, asProofForChange: asProofForChange, counted: &countedFailure)
        } catch .directoryUnreachable(let lost) {
            throw .directory(lost + " (during the attempt)")
        }
    }

    /// The `authsucc` take-back in fleet mode: one failure removed from the fleet counter
    /// (never below 0), with a compare-and-swap so a failure another host counted meanwhile is
    /// not lost; `false` when there was nothing to take back.
    @inline(never)
    func takeBack(_ name: UserName) throws(StoreError) -> Bool {
        let connection = try directory()
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
        let connection = try directory()
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
    func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError) {
        let key = try fleetKey()
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: key)
        let hash = try hasher.hash(prehash)
        let time = now()
        try fleetUpdateRecord(account, extra: Array(Self.passcodeSuccess(at: time).dropFirst())) { record in
            record.passcode = StoredPasscode(type: type, hash: hash)
        }
        try counters.update(account.name) { tally, save throws(StoreError) in
            tally = Authenticator.passcodeUsed(tally, at: time, boot: bootID())
            try save(tally)
        }
    }

    /// `storeGesture` in fleet mode: sealed with the fleet key; the picture goes into the entry.
    func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
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
    private func fleetEntry(_ connection: DirectoryConnection, _ name: UserName) throws(StoreError) -> DirectoryEntry {
        guard let entry = try connection.readUser(name), entry.isPuffUser else {
            throw .directory("\(name) has no Puff record in the directory")
        }
        return entry
    }

    /// `requirePasscode` in fleet mode: `puffAdminLock` set, for every host.
    func requirePasscode(of name: UserName) throws(StoreError) {
        let connection = try directory()
        let entry = try fleetEntry(connection, name)
        try connection.modify(dn: entry.dn, [.replace("puffAdminLock", Array("TRUE".utf8))])
    }

    /// The administrator's reset in fleet mode: the fleet's failures and lock cleared (every
    /// host is unlocked at its next attempt) and this host's counter reset too. Returns the
    /// fleet failures that were cleared.
    public func reset(of name: UserName) throws(StoreError) -> UInt32 {
        let connection = try directory()
        let entry = try fleetEntry(connection, name)
        let cleared = try Self.fleetCounter(entry).failures
        try connection.modify(dn: entry.dn, [.replace("puffFailures", Self.digits(0)), .replace("puffAdminLock", nil)])
        try counters.reset(name)
        // The cached copy held the old lock state; the next online login caches it again.
        try fleetCache.remove(name)
        return cleared
    }

    /// `removeEnrollment` in fleet mode: the Puff attributes and object class removed.
    func removeEnrollment(of name: UserName) throws(StoreError) -> Bool {
        let connection = try directory()
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
    public func status(of account: Account) throws(StoreError)
        -> (record: UserRecord, tally: Tally, lastFailureHost: String?)? {
        let connection = try directory()
        guard let found = try fleetRecord(connection, account) else { return nil }
        let local = try counters.read(account.name)
        return (found.record, options.lockout.fleetTally(try Self.fleetCounter(found.entry), local: local),
                found.entry.lastFailureHost)
    }
}
