import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// Everything `pam_sm_authenticate` can come to; `pamCode(for:)` maps it in one place.
enum ModuleResult: Equatable {
    /// The passcode verified.
    case success
    /// Wrong passcode, locked, not enrolled without `nullok`, empty reply.
    case denied
    /// Not enrolled and `nullok` is set.
    case ignore
    /// The application's conversation failed.
    case conversationError
    /// The user name could not be obtained.
    case userNameUnavailable(Int32)
    /// A store, configuration or crypto problem: fail closed.
    case failure(StoreError)
    /// Bad module arguments.
    case badArguments
}

extension ModuleContext {
    /// The only place where a result becomes a PAM code. No error maps to success or ignore.
    func pamCode(for result: ModuleResult) -> Int32 {
        switch result {
        case .success: PAM_SUCCESS
        case .denied: PAM_AUTH_ERR
        case .ignore: PAM_IGNORE
        case .conversationError: PAM_CONV_ERR
        case .userNameUnavailable(let code): code == PAM_CONV_AGAIN ? PAM_INCOMPLETE : (code == PAM_SUCCESS ? PAM_AUTH_ERR : code)
        case .badArguments: PAM_SERVICE_ERR
        case .failure(let error):
            switch error {
            case .configuration: PAM_SERVICE_ERR
            case .crypto: PAM_SYSTEM_ERR
            case .system(_, _, let errno) where errno.rawValue == ENOMEM: PAM_BUF_ERR
            case .system, .unsafe, .tooLarge, .format, .lockTimeout, .wrongOwner, .tampered, .directory,
                 .directoryUnreachable, .tpm: PAM_AUTHINFO_UNAVAIL
            }
        }
    }

    /// What this line of the stack does, from its parsed arguments (pam_faillock's `preauth`,
    /// `authfail`, `authsucc`): authenticate, or take back after the password succeeded.
    enum Action {
        case authenticate
        case takeBack

        init(_ options: PuffOptions) { self = options.authSucc ? .takeBack : .authenticate }
    }

    /// The whole of `pam_sm_authenticate`, as one function of the module's inputs, in
    /// pam_faillock's shape: the arguments parsed once, one switch on the action.
    func authenticate(arguments: [String]?) -> ModuleResult {
        guard let arguments else {
            log(LOG_ERR, "module arguments are not valid UTF-8 or exceed the limits")
            return .badArguments
        }
        // Every directory this call reads or writes (the configuration's, the store's, the
        // state directory) is walked and checked once, and held until the call returns.
        let session = StoreSession()
        let options: PuffOptions
        do {
            // Not root (a screen locker checking its own user): the file is the helper's to read.
            let loaded = try Configuration.load(arguments: arguments, readingFile: geteuid() == 0, session: session)
            options = loaded.options
            for warning in loaded.warnings { log(LOG_WARNING, warning) }
        } catch {
            log(LOG_ERR, "\(error); failing closed")
            return .failure(error)
        }
        switch Action(options) {
        case .takeBack: return takeBackAfterPasswordSuccess(options, arguments: arguments, session: session)
        case .authenticate: return authenticateUser(options, arguments: arguments, session: session)
        }
    }

    /// The `authenticate` action: the user, the route, the state before the prompt, the reply,
    /// one attempt, its outcome.
    private func authenticateUser(_ options: PuffOptions, arguments: [String], session: StoreSession) -> ModuleResult {
        do {
            try Sodium.initialize()
        } catch {
            log(LOG_CRIT, "\(error)")
            return .failure(error)
        }
        // A failure left by an earlier pam_authenticate on this handle is not this one's.
        forgetPendingFailure()
        if !options.noDelay { requestFailureDelay() }
        let (userStatus, rawName) = userName()
        guard userStatus == PAM_SUCCESS else {
            log(LOG_NOTICE, "could not obtain the user name (PAM code \(userStatus))")
            return .userNameUnavailable(userStatus)
        }
        let login = Login(user: rawName ?? "", forLog: LogText.escape(rawName ?? "(invalid)"), options: options,
                          // A root-run service whose caller is not the user (su to another
                          // account, sshd, login): the same prompt and messages for every
                          // account name. The keypad and lock hints stay where the caller is
                          // the user and in the services root listed in `tell_state`.
                          discreet: geteuid() == 0 && !callerIsUser(rawName) && !tellsState(options))
        let work: LoginWork
        do {
            // The route, decided once, before the prompt; tpm mode included.
            // Tpm mode: the module has no TPM code, so the root-started helper unseals.
            var sealedKey = false
            if geteuid() == 0, getuid() == 0, let store = try session.directory(options.recordDirectory) {
                sealedKey = try StoreKey.location(RecordStore.hostKeyName, in: store.trusted) == .tpm
            }
            let route = StoreRoute.choose(options, for: .module(effectiveUID: geteuid(), realUID: getuid(), sealedKey: sealedKey))
            if route == .ownHelper, let refused = refuseAnotherUser(login, rawName) { return refused }
            if route == .rootService { login.origin = serviceOrigin() }
            work = try LoginWork(route, login, sealedKey: sealedKey, arguments: arguments, session: session)
        } catch {
            log(LOG_ERR, "user \(login.forLog): \(error); failing closed")
            return .failure(error)
        }
        if let decided = decideBeforePrompt(login, work) { return decided }
        // One prompt from the contract and one round, for every user, enrolled or not.
        let secret: SecureBytes
        switch obtainSecret(options, prompt: login.discreet ? Acceptance.discreetPrompt : work.state.acceptance.prompt) {
        case .secret(let bytes):
            secret = bytes
        case .empty:
            log(LOG_NOTICE, "user \(login.forLog): empty reply; not counted")
            return .denied
        case .tooLong:
            log(LOG_NOTICE, "user \(login.forLog): reply longer than \(Self.maximumReplyLength) bytes; not counted")
            complain(login.discreet ? Self.discreetRefusal(gesture: false) : "Puff: wrong passcode.",
                     silent: options.silent || login.promptsEveryAccount)
            return .denied
        case .failed(let code):
            log(LOG_NOTICE, "user \(login.forLog): conversation failed (PAM code \(code)); not counted")
            return code == PAM_BUF_ERR ? .failure(.crypto("out of secure memory")) : .conversationError
        }
        let outcome: AttemptOutcome
        var counted: CountedFailure?
        var released: SecureBytes?
        do {
            outcome = try work.attempt(secret, counted: &counted, released: &released)
        } catch {
            log(LOG_ERR, "user \(login.forLog): \(error); failing closed")
            return .failure(error)
        }
        var pending: PendingFailure?
        if let counted { pending = keepForTakeBack(counted, secret, login, work, session) }
        return conclude(outcome, login, work, secret, pending: pending, released: released.take())
    }

    /// The store work of one login, where the route put it: the files store in this process
    /// (sshd, login), the setuid helper for the caller's own account (a screen locker), or the
    /// helper started with real uid root for a named user (su or sudo run by a user, fleet
    /// mode, tpm mode).
    enum LoginWork {
        case files(FilesLogin)
        /// The helper's one run for this login; `service`: started with real uid root for a named user.
        case helper(HelperClient.Login, service: Bool)

        /// Reads the state before the prompt on `route`.
        init(_ route: StoreRoute, _ login: Login, sealedKey: Bool, arguments: [String], session: StoreSession) throws(StoreError) {
            var files = FilesStore(options: login.options, session: session)
            files.evenRefusals = login.discreet
            files.keyIsSealedAway = sealedKey
            switch route {
            case .ownHelper:
                self = .helper(try HelperClient(path: login.options.helperPath).login(), service: false)
            case .rootService where UserName(login.user) != nil:
                self = .helper(try HelperClient(path: login.options.helperPath, service: .init(
                    user: login.user, arguments: arguments, origin: login.origin)).login(), service: true)
            case .files, .rootService:
                // A name that is no user name is refused as not enrolled, without a helper.
                self = .files(FilesLogin(files, try files.subject(for: login.user)))
            case .directory:
                throw .configuration("backend = ldap is served by the helper")
            }
        }

        var state: CredentialState {
            switch self {
            case .files(let files): files.subject.state
            case .helper(let login, _): login.state
            }
        }

        /// Whether this process did the store work (so it writes the failure history itself).
        var isLocal: Bool {
            if case .files = self { return true }
            return false
        }

        /// The route a counted failure is taken back on.
        var route: StoreRoute {
            switch self {
            case .files: .files
            case .helper(_, let service): service ? .rootService : .ownHelper
            }
        }

        /// The one attempt; `counted` is the failure it counted that `authsucc` may take back
        /// (none through the caller's own helper: it has no `authsucc` line); `released` the
        /// system password the helper opened after a passcode success (`keyring = yes`).
        func attempt(_ secret: borrowing SecureBytes, counted: inout CountedFailure?,
                     released: inout SecureBytes?) throws(StoreError) -> AttemptOutcome {
            counted = nil
            switch self {
            case .files(let files): return try files.store.attempt(secret, for: files.subject, counted: &counted)
            case .helper(let login, _): return try login.verify(secret, counted: &counted, released: &released)
            }
        }

        /// The uid attempts are for, for audit records; `nil` when no enrolled account was resolved.
        func auditUID(_ login: Login) -> UInt32? {
            switch self {
            case .files(let files): files.subject.account?.uid
            case .helper(_, service: false): getuid()
            case .helper(let helper, service: true):
                helper.state.isEnrolled ? ((try? Account.lookup(login.user)) ?? nil)?.uid : nil
            }
        }
    }

    /// The files store and the subject it read before the prompt (a class: the enum above
    /// then holds one reference, not two large values).
    final class FilesLogin {
        let store: FilesStore
        let subject: Subject

        init(_ store: FilesStore, _ subject: Subject) { (self.store, self.subject) = (store, subject) }
    }

    /// What one login knows once the user is known (a class: passed to each step by
    /// reference, not copied with its options).
    final class Login {
        /// The user name, raw, as the application gave it ("" when it was not usable).
        let user: String
        /// The user name escaped for a log line.
        let forLog: String
        let options: PuffOptions
        /// Every account name gets the same prompt and messages.
        let discreet: Bool
        /// Where the login comes from (service, tty, rhost, ruser), for a service call's history.
        var origin: [String] = []
        /// `nullok_prompt` in a discreet service: an account without a record is prompted like
        /// every other, so the first prompt names no one; its reply goes on to the password
        /// module as PAM_AUTHTOK, uncounted, and nothing is said after a refused reply.
        var promptsEveryAccount: Bool { discreet && options.nullOKPrompt }

        init(user: String, forLog: String, options: PuffOptions, discreet: Bool) {
            (self.user, self.forLog, self.options, self.discreet) = (user, forLog, options, discreet)
        }
    }

    /// Where a service call's login comes from, for the helper's log and history.
    private func serviceOrigin() -> [String] {
        [rawItem(PAM_SERVICE), rawItem(PAM_TTY), rawItem(PAM_RHOST), rawItem(PAM_RUSER)]
    }

    /// Without root the helper checks the real uid's account only: asking for anyone else is
    /// refused here, before any prompt.
    @inline(__always)
    private func refuseAnotherUser(_ login: Login, _ rawName: String?) -> ModuleResult? {
        // By bytes: a name canonically equivalent to the caller's but spelled otherwise is
        // another name to libpam and NSS (ByteText.swift).
        let own = (try? Account.lookup(uid: getuid()))??.name.value
        guard let rawName, let own, rawName.sameBytes(as: own) else {
            log(LOG_NOTICE, "user \(login.forLog): refused, an unprivileged caller (uid \(getuid())) can only authenticate itself")
            return .denied
        }
        return nil
    }

    /// The decision before the prompt, from the state the store read: not enrolled (ignored
    /// with `nullok`), and where the caller may know it, locked or refused, or a notice that
    /// only the passcode is accepted now. `nil`: prompt.
    @inline(__always)
    private func decideBeforePrompt(_ login: Login, _ work: LoginWork) -> ModuleResult? {
        let preflight = work.state
        if let reason = preflight.notEnrolledReason {
            guard login.options.nullOK, !login.promptsEveryAccount else { return nil }
            if login.options.debug { log(LOG_DEBUG, "user \(login.forLog): \(reason); ignored (nullok)") }
            return .ignore
        }
        guard !login.discreet else { return nil }
        if preflight.lock != .open {
            refuseLocked(preflight.lock, login, work)
            complain(lockMessage(preflight.lock), silent: login.options.silent)
            return .denied
        }
        switch preflight.acceptance {
        case .refused:
            log(LOG_NOTICE, "user \(login.forLog): attempt refused, gesture-only user locked by an administrator")
            complain(lockMessage(.lockedUntilReset), silent: login.options.silent)
            return .denied
        case .passcodeOnly(_, let reason?):
            if login.options.debug { log(LOG_DEBUG, "user \(login.forLog): passcode required: \(reason.text)") }
            inform("Puff: passcode required: \(reason.text).", silent: login.options.silent)
        case .passcodeOnly(_, nil), .passcodeOrGesture, .gestureOnly:
            break
        }
        return nil
    }

    /// The log line and audit record of an attempt refused because the user is locked.
    private func refuseLocked(_ status: LockStatus, _ login: Login, _ work: LoginWork) {
        let damaged = work.state.counterDamaged ? " (the counter file does not parse; puff-enroll reset rewrites it)" : ""
        log(LOG_NOTICE, "user \(login.forLog): attempt refused, \(describe(status))\(damaged); \(attemptContext())")
        audit(.refusedWhileLocked, work, login)
    }

    /// A counted failure, kept for the `authsucc` line after the password module (if that
    /// module accepts this same text as the system password, the failure is taken back), and
    /// added to the failure history when this process did the store work (a service call's
    /// helper wrote it itself: this process, which the user may stop, takes no lock of the store).
    /// Returns the kept failure, which reports the failure once it stands (`nil`: not kept, so
    /// it is reported now).
    @inline(__always)
    private func keepForTakeBack(_ counted: CountedFailure, _ secret: borrowing SecureBytes, _ login: Login,
                                 _ work: LoginWork, _ session: StoreSession) -> PendingFailure? {
        if work.isLocal { recordInHistory(counted, login.options, session) }
        do {
            let pending = try PendingFailure(failure: counted, secret: secret, route: work.route)
            if remember(pending) { return pending }
            log(LOG_WARNING, "user \(login.forLog): could not keep the failure for authsucc")
        } catch {
            log(LOG_WARNING, "user \(login.forLog): \(error); the failure cannot be taken back by authsucc")
        }
        return nil
    }

    /// The outcome of the attempt: its one log line, the message after the reply (in a discreet
    /// service the one every account gets for this kind of reply), the audit record, the result.
    /// A failure `pending` may still see taken back is logged as a refusal now; its line for
    /// fail2ban and its audit records wait in `pending` until the failure stands. Only in a
    /// process whose real uid is root (sshd, login): su or sudo run by a user could be killed
    /// by that user before `pam_end`, and a line or an audit record that waits for it would
    /// then never be written, so there they are written at once, as before.
    @inline(__always)
    private func conclude(_ outcome: AttemptOutcome, _ login: Login, _ work: LoginWork,
                          _ secret: borrowing SecureBytes, pending kept: PendingFailure?,
                          released: consuming SecureBytes?) -> ModuleResult {
        let pending = getuid() == 0 ? kept : nil
        let isGesture = secret.hasPrefix(GestureWire.prefix)
        let noun = isGesture ? "gesture" : "passcode"
        let silent = login.options.silent
        func tell(_ message: String) {
            complain(login.discreet ? Self.discreetRefusal(gesture: isGesture) : message, silent: silent || login.promptsEveryAccount)
        }
        // A helper wrote the attempt's line itself: one line per attempt.
        let attemptLine = work.isLocal ? outcome.logLine(user: login.forLog, kind: noun) : nil
        if case .failure(let failures, _, _) = outcome, let pending {
            let prefix = finalLinePrefix()
            pending.finalLines.append((LOG_NOTICE, prefix + authenticationFailureLine(user: login.user.isEmpty ? "(invalid)" : login.user)))
            if let line = attemptLine { pending.finalLines.append((line.priority, prefix + line.text)) }
            log(LOG_INFO, "user \(login.forLog): \(noun) not accepted (\(failures) in a row); a failure once the stack ends, "
                + "unless authsucc finds the password module accepted the same text")
        } else {
            if case .failure = outcome { logAuthenticationFailure(user: login.user.isEmpty ? "(invalid)" : login.user) }
            if let line = attemptLine { log(line.priority, line.text) }
        }
        switch outcome {
        case .success:
            // The verdict is in: only now, and only for a passcode, the keyring's copy. Through a
            // helper, the helper read `keyring` in puff.conf and released the copy itself.
            if !isGesture, !work.isLocal || keyringEnabled(login.options) {
                releaseKeyring(secret, user: login.user, forLog: login.forLog, work: work, released: released.take())
            }
            return .success
        case .notEnrolled:
            if login.promptsEveryAccount {
                // Not a Puff failure: the reply is the password module's to check.
                log(LOG_INFO, "user \(login.forLog): no Puff record; the reply is handed on (nullok_prompt), not counted")
                return .ignore
            }
            if let reason = work.state.notEnrolledReason, login.options.debug { log(LOG_DEBUG, "user \(login.forLog): \(reason)") }
            logAuthenticationFailure(user: login.user.isEmpty ? "(invalid)" : login.user)
            log(LOG_NOTICE, "user \(login.forLog): authentication failure")
            tell("Puff: wrong \(noun).")
        case .failure(_, let lock, _) where lock == .open:
            tell("Puff: wrong \(noun).")
        case .failure(_, let lock, _):
            let line = "user \(login.forLog): \(describe(lock))"
            if let pending {
                pending.finalLines.append((LOG_WARNING, finalLinePrefix() + line))
                pending.finalAudit = auditRecord(.locked(untilReset: lock == .lockedUntilReset), work, login)
            } else {
                log(LOG_WARNING, line)
                audit(.locked(untilReset: lock == .lockedUntilReset), work, login)
            }
            tell("Puff: wrong \(noun). " + lockMessage(lock, prefix: false))
        case .locked(let status):
            refuseLocked(status, login, work)
            // Discreet: the store work evened this refusal's cost out already (a dummy argon2id
            // and a decoy write: FilesStore.evenRefusals).
            tell(lockMessage(status))
        case .passcodeRequired(let reason):
            tell("Puff: passcode required: \(reason.text).")
        }
        return .denied
    }

    /// Whether the real uid is the user's own and not root (su or sudo to oneself): then the
    /// caller may see the user's keypad and lock state. sshd and login run with uid 0.
    private func callerIsUser(_ rawName: String?) -> Bool {
        let uid = getuid()
        guard uid != 0, let rawName, let account = (try? Account.lookup(uid: uid)) ?? nil else { return false }
        return account.name.value.sameBytes(as: rawName)
    }

    /// Whether the administrator listed this service in `tell_state` and the process is root's
    /// through and through, so that root chose the service name: su or sudo run by a user keeps
    /// the user's real uid, and a program the user starts without them has no root at all.
    private func tellsState(_ options: PuffOptions) -> Bool {
        getuid() == 0 && geteuid() == 0 && !options.tellStateServices.isEmpty
            && options.tellStateServices.contains { $0.sameBytes(as: rawItem(PAM_SERVICE)) }
    }

    /// The one failure message of a discreet service, by the kind of reply only.
    static func discreetRefusal(gesture: Bool) -> String {
        gesture
            ? "Puff: not accepted (a wrong gesture, too many failed attempts, or only the passcode is accepted now)."
            : "Puff: not accepted (a wrong passcode, or too many failed attempts)."
    }

    private func obtainSecret(_ options: PuffOptions, prompt: String) -> Reply {
        if options.useFirstPass || options.tryFirstPass {
            do {
                if let token = try storedToken(), token.count > 0 { return .secret(token) }
            } catch {
                return .failed(PAM_BUF_ERR)
            }
            if options.useFirstPass { return .empty }
        }
        return promptSecret(prompt)
    }

    /// Adds the failure to the user's history (`puff-enroll status --user`); a history that
    /// cannot be written is logged and changes nothing.
    private func recordInHistory(_ counted: CountedFailure, _ options: PuffOptions, _ session: StoreSession) {
        let entry = FailureHistory.Entry(time: counted.after.lastFailure, service: rawItem(PAM_SERVICE),
                                         tty: rawItem(PAM_TTY), rhost: rawItem(PAM_RHOST), ruser: rawItem(PAM_RUSER),
                                         serial: counted.after.serial)
        do {
            try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                               session: session).record(entry, for: counted.user)
        } catch {
            log(LOG_WARNING, "user \(LogText.escape(counted.user.value)): failure history not written: \(error)")
        }
    }

    /// An audit record for `backend`'s account, with this transaction's remote host and tty.
    private func audit(_ event: Audit.Event, _ work: LoginWork, _ login: Login) {
        guard let record = auditRecord(event, work, login) else { return }
        Audit.record(record.event, uid: record.uid, rhost: record.rhost, tty: record.tty)
    }

    /// What `audit` sends, to send later (`nil`: no account to name).
    private func auditRecord(_ event: Audit.Event, _ work: LoginWork, _ login: Login)
        -> (event: Audit.Event, uid: UInt32, rhost: String?, tty: String?)? {
        guard let uid = work.auditUID(login) else { return nil }
        let rhost = logField(PAM_RHOST), tty = logField(PAM_TTY)
        return (event, uid, rhost.isEmpty ? nil : rhost, tty.isEmpty ? nil : tty)
    }

    /// pam_syslog's prefix for this module and service, for a line written after the stack.
    private func finalLinePrefix() -> String {
        "pam_puff(\(logField(PAM_SERVICE)):auth): "
    }

    private func describe(_ status: LockStatus) -> String {
        switch status {
        case .open: "not locked"
        case .locked(let seconds): "locked for \(seconds) more seconds"
        case .lockedUntilReset: "locked until an administrator resets it"
        }
    }

    /// What the user is told about a lock (the remaining time, rounded up to minutes).
    func lockMessage(_ status: LockStatus, prefix: Bool = true) -> String {
        let start = prefix ? "Puff: too" : "Too"
        switch status {
        case .open: return ""
        case .locked(let seconds):
            let minutes = seconds / 60 + (seconds % 60 == 0 ? 0 : 1)
            return "\(start) many failed attempts; try again in \(minutes) minute\(minutes == 1 ? "" : "s")."
        case .lockedUntilReset:
            return "\(start) many failed attempts; locked until an administrator resets it."
        }
    }
}
