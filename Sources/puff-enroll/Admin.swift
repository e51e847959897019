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
            let chosen = Command.store(options)
            let names: [UserName]
            if let user {
                names = [try Command.account(user).name]
            } else if let enrolled = try chosen.enrolledNames() {
                names = enrolled
            } else {
                // The directory holds the records: no list of every user, but this host's mode.
                guard !json else {
                    throw Failure(ExitCodes.unknown, "name a user with --user (backend = ldap: the directory holds the records)")
                }
                Terminal.say("The directory holds the records (backend = ldap): name a user with --user.")
                Terminal.say(try TPMCommand.modeLine(options))
                return
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
                let account = try Account.lookup(name.value)
                let status = try account.map { account throws(StoreError) in try chosen.status(of: account) }
                    ?? StoreStatus(record: nil, tally: try LockoutStore(directory: options.stateDirectory,
                                                                        lockWaitSeconds: options.lockWaitSeconds).read(name))
                let record = status.record, tally = status.tally
                if let fleet = status.fleet {
                    if let why = fleet.unreachable {
                        offlineNote = "The directory is unreachable (\(why)): shown are this host's cached copy and its local counter."
                    }
                    cacheLine = fleet.cache.map { cache in
                        "This host has a cached copy of \(name)'s record for offline logins, \(cache.age) s old"
                            + (cache.fresh ? "" : " (beyond ldap_cache_ttl: not used)")
                            + (cache.offlineFailures > 0 ? "; \(cache.offlineFailures) offline failures not yet in the directory." : ".")
                    } ?? (fleet.cacheEnabled ? "This host has no cached copy of \(name)'s record." : nil)
                }
                anyRecord = anyRecord || record != nil
                if let account, status.fleet == nil, user != nil || status.keyringSince != nil {
                    keyringLines.append(try KeyringCommand.line(options, account, record))
                }
                let lock = options.lockout.status(of: tally, now: now, isRoot: account?.uid == 0)
                let acceptance = record.map { options.quickFactor.acceptance(of: $0, tally, bootID: bootID, now: now) }
                if json {
                    var row = jsonRow(name, account, record, tally, lock, acceptance, status.fleet?.lastFailureHost)
                    row = String(row.dropLast()) + ", \"keyring_since\": " + (status.keyringSince.map(String.init) ?? "null") + "}"
                    if let fleet = status.fleet {
                        row = String(row.dropLast()) + ", \"cache\": " + (fleet.cache.map {
                            "{\"age\": \($0.age), \"fresh\": \($0.fresh), \"offline_failures\": \($0.offlineFailures)}"
                        } ?? "null") + ", \"directory_unreachable\": \(fleet.unreachable != nil)}"
                    }
                    rows.append(row)
                } else {
                    cells.append(textRow(name, account, record, tally, lock, acceptance))
                }
                lastCountedBy = status.fleet?.lastFailureHost
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
            // Fleet mode: the directory's counter, so every host is unlocked.
            guard let cleared = try Command.store(options).reset(of: name) else {
                throw Failure(ExitCodes.unknown, "\(name) has nothing enrolled in Puff; nothing to reset")
            }
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
            let store = Command.store(options)
            // Nothing enrolled: nothing to lock, and nothing is written.
            guard let record = try store.status(of: account).record else {
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
            guard try Command.store(options).removeEnrollment(of: valid) else {
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
