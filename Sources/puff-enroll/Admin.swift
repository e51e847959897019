import ArgumentParser
import Glibc
import PuffCore
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
                names = [try Command.userName(user)]
            } else if options.directory.isEnabled {
                throw Failure(ExitCodes.unknown, "name a user with --user (backend = ldap: the directory holds the records)")
            } else {
                names = try records.enrolledNames()
            }
            let now = Clock.wallSeconds()
            let bootID = BootID.current()
            var rows: [String] = []
            var anyRecord = false
            for name in names {
                let account = try Account.lookup(name.value)
                var record: UserRecord?
                var tally: Tally
                var countedBy: String?
                if options.directory.isEnabled, let account {
                    // Fleet mode: the directory's record and fleet-wide counter (FleetAuthenticator.swift).
                    let fleet = try Authenticator(options: options).fleetStatus(of: account)
                    record = fleet?.record
                    tally = try fleet?.tally ?? counters.read(name)
                    countedBy = fleet?.lastFailureHost
                } else {
                    record = try account.flatMap { account throws(StoreError) in try records.load(account) }
                    tally = try counters.read(name)
                }
                anyRecord = anyRecord || record != nil
                let status = options.lockout.status(of: tally, now: now, isRoot: account?.uid == 0)
                let acceptance = record.map { options.quickFactor.acceptance(of: $0, tally, bootID: bootID, now: now) }
                rows.append(json ? jsonRow(name, account, record, tally, status, acceptance, countedBy)
                                 : textRow(name, account, record, tally, status, acceptance)
                                   + (countedBy.map { " (last failure counted by \($0))" } ?? ""))
            }
            if json {
                Terminal.say("[" + rows.joined(separator: ",\n ") + "]")
            } else if rows.isEmpty {
                Terminal.say("No user is enrolled.")
            } else {
                Terminal.say("USER             UID  PASSCODE      GESTURE     FAILURES  LOCK                 ACCEPTS")
                for row in rows { Terminal.say(row) }
            }
            if let name = names.first, user != nil, !anyRecord {
                throw Failure(ExitCodes.unknown, "\(name) has nothing enrolled")
            }
        }
    }

    /// An ordinary user's own state, as the helper reports it.
    private func runForSelf() throws {
        let account = try Command.account(nil)
        let report = try SelfService(helper: store.helper).query()
        let enrolled = report.outcome == .state
        let lock: String
        switch report.lock {
        case .open: lock = "-"
        case .locked(let seconds): lock = "locked for \(seconds)s"
        case .lockedUntilReset: lock = "locked until reset"
        }
        let accepts = enrolled ? acceptsText(report.acceptance) : "-"
        if json {
            Terminal.say("[{\"user\": \"\(account.name)\", \"uid\": \(account.uid), \"enrolled\": \(enrolled), "
                         + "\"failures\": \(report.failures), \"locked\": \(report.lock != .open), \"accepts\": \"\(accepts)\"}]")
        } else if !enrolled {
            Terminal.say("\(account.name) has nothing enrolled.")
        } else {
            Terminal.say("\(account.name): failures \(report.failures), lock \(lock); the next login accepts \(accepts).")
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

    /// What the next login accepts, in words.
    private func acceptsText(_ acceptance: Acceptance?) -> String {
        switch acceptance {
        case .none: "-"
        case .passcodeOrGesture: "passcode or gesture"
        case .passcodeOnly(_, nil): "passcode"
        case .passcodeOnly(_, let reason?): "passcode only: \(reason.text)"
        case .gestureOnly: "gesture"
        case .refused: "nothing until reset (locked by an administrator)"
        }
    }

    private func textRow(_ name: UserName, _ account: Account?, _ record: UserRecord?, _ tally: Tally, _ status: LockStatus,
                         _ acceptance: Acceptance?) -> String {
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(1, width - text.count)) }
        return pad(name.value, 17) + pad(account.map { String($0.uid) } ?? "?", 5)
            + pad(record?.passcode?.type.rawValue ?? "-", 14)
            + pad(record?.gesture.map { "\($0.pictureWidth)x\($0.pictureHeight)" } ?? "-", 12)
            + pad(String(tally.failures), 10) + pad(lockText(status, tally), 21) + acceptsText(acceptance)
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
        fields.append("\"last_failure\": " + (tally.lastFailure == 0 ? "null" : String(tally.lastFailure)))
        switch status {
        case .open: fields.append("\"locked\": false")
        case .locked: fields.append("\"locked\": true, \"locked_until\": \(tally.lockedUntil)")
        case .lockedUntilReset: fields.append("\"locked\": true, \"locked_until\": \"reset\"")
        }
        fields.append("\"gesture_failures\": \(tally.gestureFailures)")
        fields.append("\"last_passcode\": " + (tally.passcodeAt == 0 ? "null" : String(tally.passcodeAt)))
        fields.append("\"admin_lock\": \(tally.adminLock)")
        fields.append("\"accepts\": \"\(acceptsText(acceptance))\"")
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
            let name = try Command.userName(user)
            if options.directory.isEnabled {
                // Fleet mode: the directory's counter, so every host is unlocked (FleetAuthenticator.swift).
                let cleared = try Authenticator(options: options).fleetReset(of: name)
                Command.audit("fleet lockout of user \(name) reset by uid \(getuidValue()) on \(fleetHostName(options.directory)) (\(cleared) failures cleared)")
                Terminal.say("Fleet lockout of \(name) reset (\(cleared) failures cleared).")
                return
            }
            let counters = LockoutStore(directory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds)
            let before = try counters.read(name)
            try counters.reset(name)
            Command.audit("lockout of user \(name) reset by uid \(getuidValue()) (\(before.failures) failures cleared)")
            Terminal.say("Lockout of \(name) reset (\(before.failures) failures cleared).")
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
            let name = try Command.userName(user)
            try Authenticator(options: options).requirePasscode(of: name)
            Command.audit("passcode required for user \(name) by uid \(getuidValue()) (puff-enroll lock)")
            Terminal.say("\(name) must use the passcode at the next login.")
        }
    }
}

/// `puff-enroll remove`: delete a user's enrollment.
struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a user's Puff record and counter.")

    @OptionGroup var store: StoreOptions

    @Option(help: "The user (default: the calling user).")
    var user: String?

    func run() throws {
        try Command.run {
            try Command.requireRoot()
            let options = try store.load()
            let valid = try Command.userName(user ?? Command.callerName())
            guard try Authenticator(options: options).removeEnrollment(of: valid) else {
                throw Failure(ExitCodes.unknown, "\(valid) has nothing enrolled")
            }
            Command.audit("enrollment of user \(valid) removed by uid \(getuidValue())")
            Terminal.say("Enrollment of \(valid) removed.")
        }
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
