import ArgumentParser
import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

/// `puff-enroll status`: what is enrolled and the lockout state.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show enrolled factors, failures and lockout (every enrolled user when --user is omitted).")

    @OptionGroup var store: StoreOptions

    @Option(help: "Show only this user.")
    var user: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        try Command.run {
            if try Command.isSelfService(user: user, store: store) { return try runForSelf() }
            try Command.requireRoot()
            let options = try store.load()
            let records = RecordStore(directory: options.recordDirectory)
            let counters = LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds)
            let names: [UserName]
            if let user {
                names = [try Command.account(user).name]
            } else if options.directory.isEnabled {
                // The directory holds the records: no list of every user, but this host's mode.
                guard !json else {
                    throw Failure(ExitCodes.unknown, "name a user with --user (backend = ldap: the directory holds the records)")
                }
                Terminal.say("The directory holds the records (backend = ldap): name a user with --user.")
                Terminal.say(try TPMCommand.modeLine(options))
                return
            } else {
                names = try records.enrolledNames()
            }
            let now = Clock.wallSeconds()
            let bootID = BootID.current()
            var rows: [String] = []
            var cells: [[String]] = []
            var anyRecord = false
            var lastCountedBy: String?
            var keyringLines: [String] = []
            var cacheLine: String?
            var offlineNote: String?
            for name in names {
                var offline = false
                let account = try Account.lookup(name.value)
                var record: UserRecord?
                var tally: Tally
                var countedBy: String?
                var cache: (age: Int64, fresh: Bool, offlineFailures: UInt32)?
                if options.directory.isEnabled, let account {
                    // Fleet mode: the directory's record and fleet-wide counter (FleetAuthenticator.swift).
                    let authenticator = FleetStore(Authenticator(options: options))
                    let fleet: (record: UserRecord, tally: Tally, lastFailureHost: String?)?
                    do {
                        fleet = try authenticator.status(of: account)
                    } catch StoreError.directoryUnreachable(let why) where options.directory.cacheTTL > 0 {
                        // Offline (a laptop away from the directory): what an offline login goes by.
                        guard let copy = try authenticator.offlineStatus(of: account) else {
                            throw StoreError.directoryUnreachable(why + "; no cached copy of \(name)'s record on this host")
                        }
                        fleet = (copy.record, copy.tally, nil)
                        offline = true
                        offlineNote = "The directory is unreachable (\(why)): shown are this host's cached copy and its local counter."
                    }
                    record = fleet?.record
                    tally = try fleet?.tally ?? counters.read(name)
                    countedBy = fleet?.lastFailureHost
                    // This host's offline copy (FleetOffline.swift).
                    cache = try authenticator.cacheStatus(of: account)
                    cacheLine = cache.map { cache in
                        "This host has a cached copy of \(name)'s record for offline logins, \(cache.age) s old"
                            + (cache.fresh ? "" : " (beyond ldap_cache_ttl: not used)")
                            + (cache.offlineFailures > 0 ? "; \(cache.offlineFailures) offline failures not yet in the directory." : ".")
                    } ?? (options.directory.cacheTTL > 0 ? "This host has no cached copy of \(name)'s record." : nil)
                } else {
                    record = try account.flatMap { account throws(StoreError) in try records.load(account) }
                    tally = try counters.read(name)
                }
                anyRecord = anyRecord || record != nil
                // The keyring's copy (files store only: fleet mode keeps none).
                var keyringSince: Int64?
                if !options.directory.isEnabled, let account {
                    keyringSince = try KeyringStore(directory: options.recordDirectory, session: StoreSession()).copy(of: account)?.captured
                    if user != nil || keyringSince != nil { keyringLines.append(try KeyringCommand.line(options, account, record)) }
                }
                let status = options.lockout.status(of: tally, now: now, isRoot: account?.uid == 0)
                let acceptance = record.map { options.quickFactor.acceptance(of: $0, tally, bootID: bootID, now: now) }
                if json {
                    var row = jsonRow(name, account, record, tally, status, acceptance, countedBy)
                    row = String(row.dropLast()) + ", \"keyring_since\": " + (keyringSince.map(String.init) ?? "null") + "}"
                    if options.directory.isEnabled {
                        row = String(row.dropLast()) + ", \"cache\": " + (cache.map {
                            "{\"age\": \($0.age), \"fresh\": \($0.fresh), \"offline_failures\": \($0.offlineFailures)}"
                        } ?? "null") + ", \"directory_unreachable\": \(offline)}"
                    }
                    rows.append(row)
                } else {
                    cells.append(textRow(name, account, record, tally, status, acceptance))
                }
                lastCountedBy = countedBy
            }
            // One user: also the latest failures, like `faillock --user`.
            let history = FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds)
            let recent = user == nil ? [] : try names.first.map { name throws(StoreError) in try history.entries(for: name) } ?? []
            if json, user != nil, let last = rows.popLast() {
                rows.append(String(last.dropLast()) + ", \"recent_failures\": [" + recent.map(Self.jsonEntry).joined(separator: ", ") + "]}")
            }
            if json {
                Terminal.say("[" + rows.joined(separator: ",\n ") + "]")
            } else if cells.isEmpty {
                Terminal.say("No user is enrolled.")
                Terminal.say(try TPMCommand.modeLine(options))
            } else {
                for line in Self.table([["USER", "UID", "PASSCODE", "GESTURE", "FAILURES", "LOCK", "ACCEPTS"]] + cells) {
                    Terminal.say(line)
                }
                if !recent.isEmpty {
                    Terminal.say("")
                    Terminal.say("Latest failures (oldest first):")
                    let header = [["WHEN", "SERVICE", "TTY", "RHOST", "RUSER"]]
                    let lines = recent.map { [Time.format($0.time), $0.service, $0.tty, $0.rhost, $0.ruser].map { $0.isEmpty ? "-" : $0 } }
                    for line in Self.table(header + lines) { Terminal.say(line) }
                }
                for line in keyringLines { Terminal.say(line) }
                if let lastCountedBy { Terminal.say("The latest fleet failure was counted by \(lastCountedBy).") }
                if user == nil { Terminal.say(try TPMCommand.modeLine(options)) }
                if let cacheLine { Terminal.say(cacheLine) }
                if let offlineNote { Terminal.say(offlineNote) }
            }
            if let name = names.first, user != nil, !anyRecord {
                throw Failure(ExitCodes.unknown, "\(name) has nothing enrolled")
            }
        }
    }

    /// An ordinary user's own state, as the helper reports it.
    private func runForSelf() throws {
        let account = try Command.account(nil)
        let state = try SelfService(helper: store.helper).query()
        let enrolled = state.isEnrolled
        let lock: String
        switch state.lock {
        case .open: lock = "-"
        case .locked(let seconds): lock = "locked for \(seconds)s"
        case .lockedUntilReset: lock = "locked until reset"
        }
        let accepts = enrolled ? acceptsText(state.acceptance, state.lock) : "-"
        if json {
            Terminal.say("[{\"user\": \"\(account.name)\", \"uid\": \(account.uid), \"enrolled\": \(enrolled), "
                         + "\"failures\": \(state.failures), \"locked\": \(state.lock != .open), \"accepts\": \"\(accepts)\"}]")
        } else if !enrolled {
            Terminal.say("\(account.name) has nothing enrolled.")
        } else {
            Terminal.say("\(account.name): failures \(state.failures), lock \(lock); the next login accepts \(accepts).")
        }
        if !enrolled { throw Failure(ExitCodes.unknown, "\(account.name) has nothing enrolled") }
    }

    private func lockText(_ status: LockStatus, _ tally: Tally) -> String {
        switch status {
        case .open: return "-"
        case .lockedUntilReset: return "locked until reset"
        case .locked(let seconds): return "locked for \(seconds)s (until \(Time.format(tally.lockedUntil)))"
        }
    }

    /// What the next login accepts, in words: while locked, nothing (and for how long).
    private func acceptsText(_ acceptance: Acceptance?, _ lock: LockStatus) -> String {
        switch lock {
        case .open: break
        case .lockedUntilReset: return "nothing until reset (locked)"
        case .locked(let seconds):
            let after = acceptsText(acceptance, .open)
            return "nothing for \(seconds)s (locked)" + (after == "-" ? "" : ", then " + after)
        }
        return switch acceptance {
        case .none: "-"
        case .passcodeOrGesture: "passcode or gesture"
        case .passcodeOnly(_, nil): "passcode"
        case .passcodeOnly(_, let reason?): "passcode only: \(reason.text)"
        case .gestureOnly: "gesture"
        case .refused: "nothing until reset (locked by an administrator)"
        }
    }

    private func textRow(_ name: UserName, _ account: Account?, _ record: UserRecord?, _ tally: Tally, _ status: LockStatus,
                         _ acceptance: Acceptance?) -> [String] {
        [name.value, account.map { String($0.uid) } ?? "?", record?.passcode?.type.rawValue ?? "-",
         record?.gesture.map { "\($0.pictureWidth)x\($0.pictureHeight)" } ?? "-",
         tally.isDamaged ? "damaged" : String(tally.failures), lockText(status, tally), acceptsText(acceptance, status)]
    }

    /// One history entry as JSON (its texts are printable ASCII already; quotes and
    /// backslashes are escaped for JSON).
    static func jsonEntry(_ entry: FailureHistory.Entry) -> String {
        func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                if scalar == "\"" || scalar == "\\" { out += "\\" }
                out.unicodeScalars.append(scalar)
            }
            return out + "\""
        }
        return "{\"time\": \(entry.time), \"service\": \(quoted(entry.service)), \"tty\": \(quoted(entry.tty)), "
            + "\"rhost\": \(quoted(entry.rhost)), \"ruser\": \(quoted(entry.ruser))}"
    }

    /// Left-aligned columns as wide as their widest cell, two spaces apart (the last unpadded).
    static func table(_ rows: [[String]]) -> [String] {
        var widths: [Int] = []
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column == widths.count { widths.append(0) }
                widths[column] = max(widths[column], cell.count)
            }
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }.joined()
        }
    }

    private func jsonRow(_ name: UserName, _ account: Account?, _ record: UserRecord?, _ tally: Tally, _ status: LockStatus,
                         _ acceptance: Acceptance?, _ countedBy: String?) -> String {
        var fields = ["\"user\": \"\(name.value)\""]
        fields.append("\"uid\": " + (account.map { String($0.uid) } ?? "null"))
        fields.append("\"passcode\": " + (record?.passcode.map { "\"\($0.type.rawValue)\"" } ?? "null"))
        fields.append("\"gesture\": " + (record?.gesture.map {
            "{\"picture_width\": \($0.pictureWidth), \"picture_height\": \($0.pictureHeight)}"
        } ?? "null"))
        fields.append("\"failures\": \(tally.failures)")
        // A counter that does not parse reads as locked until reset (failures at the maximum).
        if tally.isDamaged { fields.append("\"counter_damaged\": true") }
        fields.append("\"last_failure\": " + (tally.lastFailure == 0 ? "null" : String(tally.lastFailure)))
        switch status {
        case .open: fields.append("\"locked\": false")
        case .locked: fields.append("\"locked\": true, \"locked_until\": \(tally.lockedUntil)")
        case .lockedUntilReset: fields.append("\"locked\": true, \"locked_until\": \"reset\"")
        }
        fields.append("\"gesture_failures\": \(tally.gestureFailures)")
        fields.append("\"last_passcode\": " + (tally.passcodeAt == 0 ? "null" : String(tally.passcodeAt)))
        fields.append("\"admin_lock\": \(tally.adminLock)")
        fields.append("\"accepts\": \"\(acceptsText(acceptance, status))\"")
        if let countedBy { fields.append("\"last_failure_host\": \"\(LogText.escape(countedBy))\"") }
        return "{" + fields.joined(separator: ", ") + "}"
    }
}

/// `puff-enroll reset`: the administrator's lockout reset.
struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Clear a user's failures, lock and administrator's passcode requirement (root only; logged).")

    @OptionGroup var store: StoreOptions

    @Option(help: "The user whose lockout to clear.")
    var user: String

    func run() throws {
        try Command.run {
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            let name = account.name
            if options.directory.isEnabled {
                // Fleet mode: the directory's counter, so every host is unlocked (FleetAuthenticator.swift).
                let cleared = try FleetStore(Authenticator(options: options)).reset(of: name)
                Command.audit("fleet lockout of user \(name) reset by uid \(getuidValue()) on \(fleetHostName(options.directory)) (\(cleared) failures cleared)")
                Audit.administrator("puff-reset", user: name.value, uid: account.uid, succeeded: true)
                Terminal.say("Fleet lockout of \(name) reset (\(cleared) failures cleared).")
                return
            }
            let counters = LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds)
            // No record and no counter: nothing is locked, and nothing is written.
            guard try RecordStore(directory: options.recordDirectory).hasFiles(name) || counters.hasFiles(name) else {
                throw Failure(ExitCodes.unknown, "\(name) has nothing enrolled in Puff; nothing to reset")
            }
            let before = try counters.read(name)
            try counters.reset(name)
            let cleared = before.isDamaged ? "a damaged counter rewritten" : "\(before.failures) failures cleared"
            Command.audit("lockout of user \(name) reset by uid \(getuidValue()) (\(cleared))")
            Audit.administrator("puff-reset", user: name.value, uid: account.uid, succeeded: true)
            Terminal.say("Lockout of \(name) reset (\(cleared)).")
        }
    }
}

/// `puff-enroll lock`: the administrator's "remote lock": the passcode is required at the
/// user's next login, whatever the gesture.
struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Require the passcode at a user's next login (root only; logged).",
        discussion: """
        The gesture is refused until the user logs in with the passcode. A user who has only a \
        gesture enrolled cannot log in with Puff until an administrator runs 'puff-enroll reset'.
        """)

    @OptionGroup var store: StoreOptions

    @Option(help: "The user who must use the passcode next.")
    var user: String

    func run() throws {
        try Command.run {
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            let name = account.name
            let store = Store(options: options, for: .tool(effectiveUID: geteuid()))
            // Nothing enrolled: nothing to lock, and nothing is written.
            guard let record = try store.record(of: account) else {
                throw Failure(ExitCodes.unknown, "\(name) has nothing enrolled in Puff; nothing to lock")
            }
            try store.requirePasscode(of: name)
            Command.audit("passcode required for user \(name) by uid \(getuidValue()) (puff-enroll lock)")
            Audit.administrator("puff-lock", user: name.value, uid: account.uid, succeeded: true)
            if record.passcode == nil {
                Terminal.say("\(name) has no Puff passcode: Puff refuses \(name) until an administrator runs "
                             + "'puff-enroll reset --user \(name)'.")
            } else {
                Terminal.say("\(name) must use the passcode at the next login.")
            }
        }
    }
}

/// `puff-enroll remove`: delete a user's enrollment.
struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a user's Puff record, picture and counter.",
        discussion: """
        An ordinary user may remove their own enrollment: the current Puff passcode (or, with \
        none, the system password) proves who they are, as for a change.
        """)

    @OptionGroup var store: StoreOptions

    @Option(help: "The user (default: the calling user).")
    var user: String?

    @Flag(help: "Read the proof (current passcode or system password) as a line from standard input.")
    var stdin = false

    func run() throws {
        try Command.run {
            if try Command.isSelfService(user: user, store: store) { return try runForSelf() }
            try Command.requireRoot()
            let options = try store.load()
            let valid = try Command.userName(user ?? Command.callerName())
            guard try Store(options: options, for: .tool(effectiveUID: geteuid())).removeEnrollment(of: valid) else {
                throw Failure(ExitCodes.unknown, "\(valid) has nothing enrolled")
            }
            Command.audit("enrollment of user \(valid) removed by uid \(getuidValue())")
            Terminal.say("Enrollment of \(valid) removed.")
        }
    }

    /// An ordinary user's own enrollment, through the helper after the proof.
    private func runForSelf() throws {
        let account = try Command.account(nil)
        let service = SelfService(helper: store.helper)
        let state = try service.query()
        guard state.isEnrolled else { throw Failure(ExitCodes.unknown, "\(account.name) has nothing enrolled") }
        let proof = try service.readProof(state, account: account, fromStdin: stdin)
        try proof.withBytes { bytes in try service.change(.remove, frames: [bytes]) }
        Terminal.say("Enrollment of \(account.name) removed.")
    }
}

/// Local-time formatting for status output.
enum Time {
    static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return String(seconds) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
