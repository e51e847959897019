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
public struct FleetStore: StoreBackend {
    /// This host's files store: the local counter, the clock, the session.
    public var files: FilesStore
    /// The login's one connection, opened at its first use.
    let link = DirectoryLink()

    /// The fleet store beside `files`, this host's store under the same options and session.
    public init(_ files: FilesStore) { self.files = files }

    public var options: PuffOptions { files.options }
    public var session: StoreSession { files.session }
    public var evenRefusals: Bool {
        get { files.evenRefusals }
        set { files.evenRefusals = newValue }
    }
    var counters: LockoutStore { files.counters }
    var hasher: PasscodeHasher { PasscodeHasher(cost: options.kdf) }
    func now() -> Int64 { files.now() }
    func bootID() -> String? { session.bootID() }

    /// The login's connection (opened now, or the one it holds); a directory found out of reach
    /// once is out of reach for the rest of the login, without another wait.
    func directory() throws(StoreError) -> DirectoryConnection {
        try link.open(options.directory, session: session)
    }

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

    public func subject(for userName: String) throws(StoreError) -> Subject {
        try files.resolve(userName) { account throws(StoreError) in try subject(of: account) }
    }

    @inline(never)
    public func subject(of account: Account) throws(StoreError) -> Subject {
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
        link.read = (account.name, found.entry, found.record)
        if fleetCacheEnabled {
            // A login refused here (locked) never reaches the attempt: the lock must reach the
            // offline copy all the same.
            try counters.update(account.name) { _, _ throws(StoreError) in
                try refreshFleetCache(account, record: found.record, counter: counter)
            }
        }
        let tally = options.lockout.fleetTally(counter, local: try counters.read(account.name))
        return .enrolled(.init(account: account, record: found.record, tally: tally, options: options, bootID: bootID(), now: now()))
    }

    /// The engine (`AttemptEngine`) counting in the directory (`DirectoryCounter`), or, when
    /// the directory is out of reach before anything was counted, on this host against the
    /// cached record (`OfflineCounter`). A directory lost after the first read fails closed.
    @inline(never)
    public func attempt(_ secret: borrowing SecureBytes, for subject: Subject, asProofForChange: Bool = false,
                        counted countedFailure: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
        countedFailure = nil
        guard case .enrolled(let enrolled) = subject else {
            return try files.attempt(secret, for: subject, asProofForChange: asProofForChange, counted: &countedFailure)
        }
        let account = enrolled.account
        let engine = files.engine
        let counter: DirectoryCounter
        do throws(StoreError) {
            // The entry as read before the prompt (what other hosts counted since, the
            // increment's post-read shows; what they changed, the settle reads again).
            let connection = try directory()
            var firstRead: (entry: DirectoryEntry, record: UserRecord)?
            if let read = link.read, read.name == account.name {
                firstRead = (read.entry, read.record)
            } else {
                firstRead = try fleetRecord(connection, account)
            }
            counter = DirectoryCounter(store: self, connection: connection, account: account, firstRead: firstRead)
        } catch .directoryUnreachable(let why) {
            return try engine.run(secret, OfflineCounter(store: self, account: account, unreachable: why), key: try fleetKey(),
                                  for: account, asProofForChange: asProofForChange, counted: &countedFailure)
        }
        do throws(StoreError) {
            return try engine.run(secret, counter, key: try fleetKey(), for: account, asProofForChange: asProofForChange,
                                  counted: &countedFailure)
        } catch .directoryUnreachable(let lost) {
            throw .directory(lost + " (during the attempt)")
        }
    }

    /// The `authsucc` take-back: one failure off the directory's count (or off the offline
    /// failures to push) and the local counter's taken back.
    public func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool {
        let inDirectory = failure.countedInDirectory ? try takeBackInDirectory(failure.user) : false
        if !failure.countedInDirectory { try offlineTakeBack(failure.user) }
        return try files.takeBack(failure) || inDirectory
    }

    /// One failure removed from the fleet counter (never below 0), with a compare-and-swap so a
    /// failure another host counted meanwhile is not lost; `false` when there was none.
    @inline(never)
    func takeBackInDirectory(_ name: UserName) throws(StoreError) -> Bool {
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

    /// Hashed with the fleet key and written to the entry.
    public func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError) {
        let key = try fleetKey()
        let prehash = try hasher.prehash(passcode, user: account.name, uid: account.uid, hostKey: key)
        let hash = try hasher.hash(prehash)
        let time = now()
        try fleetUpdateRecord(account, extra: Array(Self.passcodeSuccess(at: time).dropFirst())) { record in
            record.passcode = StoredPasscode(type: type, hash: hash)
        }
        try counters.update(account.name) { tally, save throws(StoreError) in
            tally = tally.passcodeUsed(at: time, boot: bootID())
            try save(tally)
        }
    }

    /// Sealed with the fleet key; the picture goes into the entry.
    public func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError) {
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

    /// `puffAdminLock` set, for every host.
    public func requirePasscode(of name: UserName) throws(StoreError) {
        let connection = try directory()
        let entry = try fleetEntry(connection, name)
        try connection.modify(dn: entry.dn, [.replace("puffAdminLock", Array("TRUE".utf8))])
    }

    /// The fleet's failures and lock cleared (every host is unlocked at its next attempt) and
    /// this host's counter reset too.
    public func reset(of name: UserName) throws(StoreError) -> String? {
        let connection = try directory()
        let entry = try fleetEntry(connection, name)
        let cleared = try Self.fleetCounter(entry).failures
        try connection.modify(dn: entry.dn, [.replace("puffFailures", Self.digits(0)), .replace("puffAdminLock", nil)])
        try counters.reset(name)
        // The cached copy held the old lock state; the next online login caches it again.
        try fleetCache.remove(name)
        return "\(cleared) fleet failures cleared on \(fleetHostName(options.directory))"
    }

    /// The Puff attributes and object class removed.
    public func removeEnrollment(of name: UserName) throws(StoreError) -> Bool {
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

    /// The record, the tally this host goes by and the host that counted the latest failure;
    /// while the directory is out of reach, this host's cached copy.
    public func status(of account: Account) throws(StoreError) -> StoreStatus {
        let local = try counters.read(account.name)
        var fleet = StoreStatus.Fleet(lastFailureHost: nil, unreachable: nil, cache: try cacheStatus(of: account),
                                      cacheEnabled: fleetCacheEnabled)
        do throws(StoreError) {
            guard let found = try fleetRecord(try directory(), account) else { return StoreStatus(record: nil, tally: local, fleet: fleet) }
            fleet.lastFailureHost = found.entry.lastFailureHost
            return StoreStatus(record: found.record, tally: options.lockout.fleetTally(try Self.fleetCounter(found.entry), local: local),
                               fleet: fleet)
        } catch .directoryUnreachable(let why) {
            // Offline (a laptop away from the directory): what an offline login goes by.
            guard fleetCacheEnabled else { throw .directoryUnreachable(why) }
            guard let cached = try offlineStatus(of: account) else {
                throw .directoryUnreachable(why + "; no cached copy of \(account.name)'s record on this host")
            }
            fleet.unreachable = why
            return StoreStatus(record: cached.record, tally: cached.tally, fleet: fleet)
        }
    }

    /// The directory holds the records: no list of every user.
    public func enrolledNames() throws(StoreError) -> [UserName]? { nil }

    /// A fleet host has no host key: the fleet key peppers and seals every record.
    public var recordKeyPath: String { options.directory.fleetKeyPath }

    /// Counted on this host's counter: the system password is this host's to check.
    public func countedAttempt(for account: Account, _ check: () throws(StoreError) -> Bool) throws(StoreError) -> AttemptOutcome {
        try files.countedAttempt(for: account, check)
    }

    /// Fleet mode keeps no copy of the system password: a directory password opens every host.
    public func captureKeyring(_ password: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringCapture {
        .noPasscode
    }

    public func releaseKeyring(_ passcode: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringRelease {
        .changed
    }
}
