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

    /// The `authenticate` action: the user, where the store work runs, the state before the
    /// prompt, the reply, one attempt, its outcome.
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
        let route = StoreRoute.choose(directory: options.directory.isEnabled,
                                      for: .module(effectiveUID: geteuid(), realUID: getuid()))
        let login = Login(user: rawName ?? "", forLog: LogText.escape(rawName ?? "(invalid)"), options: options,
                          route: route,
                          // A root-run service whose caller is not the user (su to another
                          // account, sshd, login): the same prompt and messages for every
                          // account name (issue 11, item 9). The keypad and lock hints stay
                          // where the caller is the user (their locker or pad, su to themselves)
                          // and in the services root listed in `tell_state` (a login screen).
                          discreet: geteuid() == 0 && !callerIsUser(rawName) && !tellsState(options))
        if login.route == .ownHelper, let refused = refuseAnotherUser(login, rawName) { return refused }
        var backend: Backend
        do {
            backend = try Backend.prepare(login.route, options, userName: login.user, arguments: arguments,
                                          origin: serviceOrigin(), discreet: login.discreet, session: session)
        } catch {
            log(LOG_ERR, "user \(login.forLog): \(error); failing closed")
            return .failure(error)
        }
        if let decided = decideBeforePrompt(login, backend) { return decided }
        // One prompt from the contract and one round, for every user, enrolled or not.
        let secret: SecureBytes
        switch obtainSecret(options, prompt: login.discreet ? Acceptance.discreetPrompt : backend.state.acceptance.prompt) {
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
        let outcome: Authenticator.Outcome
        var counted: Authenticator.CountedFailure?
        do {
            outcome = try attempt(secret, login, &backend, &counted, arguments: arguments)
        } catch {
            log(LOG_ERR, "user \(login.forLog): \(error); failing closed")
            return .failure(error)
        }
        var pending: PendingFailure?
        if let counted { pending = keepForTakeBack(counted, secret, login, session) }
        return conclude(outcome, login, backend, secret, pending: pending)
    }

    /// One attempt through `backend`. Tpm mode is found here, at no cost to file mode: the
    /// first step of every attempt in the files store is reading `host.key`, and the module's
    /// `StoreKey.read` answers `.tpm` when there is none but a sealed `host.key.tpm` (the
    /// module has no TPM code: libtss2 reads TSS2_LOGFILE from the environment, which in su is
    /// the user's; docs/admin/protection-at-rest.md). Nothing is counted or written before that read,
    /// so the attempt starts again in the helper started with real uid root, which unseals.
    /// The state before the prompt was the files store's own, as in file mode.
    private func attempt(_ secret: borrowing SecureBytes, _ login: Login, _ backend: inout Backend,
                         _ counted: inout Authenticator.CountedFailure?,
                         arguments: [String]) throws(StoreError) -> Authenticator.Outcome {
        // A loop rather than a second call: `Backend.attempt` is inlined once. The backend
        // that answered is the caller's from then on (its released password, its account).
        while true {
            do {
                return try backend.attempt(secret, counted: &counted)
            } catch {
                guard case .tpm = error, case .local = backend else { throw error }
            }
            // A name that is no user name is no account (`Backend.prepare` keeps it in this
            // process in every route): refused as not enrolled, without the helper or the TPM.
            guard UserName(login.user) != nil else { return .notEnrolled }
            login.route = .rootService
            // `Backend.prepare`'s `.rootService` backend, built here (smaller than a second
            // inlined `prepare`).
            backend = .service(try HelperBackend(HelperClient(path: login.options.helperPath, service: .init(
                user: login.user, arguments: arguments, origin: serviceOrigin()))))
        }
    }

    /// Where a service call's login comes from, for the helper's log and history.
    @inline(never)  // two call sites
    private func serviceOrigin() -> [String] {
        [rawItem(PAM_SERVICE), rawItem(PAM_TTY), rawItem(PAM_RHOST), rawItem(PAM_RUSER)]
    }

    /// What one login knows once the user and the route are decided (a class: passed to each
    /// step by reference, not copied with its options).
    private final class Login {
        /// The user name, raw, as the application gave it ("" when it was not usable).
        let user: String
        /// The user name escaped for a log line.
        let forLog: String
        let options: PuffOptions
        /// Where the store work runs (`StoreRoute.choose`; `.rootService` once an attempt
        /// found the host key sealed in the TPM).
        var route: StoreRoute
        /// Every account name gets the same prompt and messages.
        let discreet: Bool
        /// `nullok_prompt` in a discreet service: an account without a record is prompted like
        /// every other, so the first prompt names no one (issue 27, item 4); its reply goes on
        /// to the password module as PAM_AUTHTOK, uncounted, and nothing is said after a
        /// refused reply, for any account (the password module decides).
        var promptsEveryAccount: Bool { discreet && options.nullOKPrompt }

        init(user: String, forLog: String, options: PuffOptions, route: StoreRoute, discreet: Bool) {
            (self.user, self.forLog, self.options, self.route, self.discreet) = (user, forLog, options, route, discreet)
        }
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
    private func decideBeforePrompt(_ login: Login, _ backend: Backend) -> ModuleResult? {
        let preflight = backend.state
        if let reason = preflight.notEnrolledReason {
            guard login.options.nullOK, !login.promptsEveryAccount else { return nil }
            if login.options.debug { log(LOG_DEBUG, "user \(login.forLog): \(reason); ignored (nullok)") }
            return .ignore
        }
        guard !login.discreet else { return nil }
        if preflight.lock != .open {
            refuseLocked(preflight.lock, login, backend)
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
    private func refuseLocked(_ status: LockStatus, _ login: Login, _ backend: Backend) {
        let damaged = backend.state.counterDamaged ? " (the counter file does not parse; puff-enroll reset rewrites it)" : ""
        log(LOG_NOTICE, "user \(login.forLog): attempt refused, \(describe(status))\(damaged); \(attemptContext())")
        audit(.refusedWhileLocked, backend)
    }

    /// A counted failure, kept for the `authsucc` line after the password module (if that
    /// module accepts this same text as the system password, the failure is taken back), and
    /// added to the failure history when this process did the store work (a service call's
    /// helper wrote it itself: this process, which the user may stop, takes no lock of the store).
    /// Returns the kept failure, which reports the failure once it stands (`nil`: not kept, so
    /// it is reported now).
    @inline(__always)
    private func keepForTakeBack(_ counted: Authenticator.CountedFailure, _ secret: borrowing SecureBytes, _ login: Login,
                                 _ session: StoreSession) -> PendingFailure? {
        if login.route != .rootService { recordInHistory(counted, login.options, session) }
        do {
            let pending = try PendingFailure(failure: counted, secret: secret, route: login.route)
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
    private func conclude(_ outcome: Authenticator.Outcome, _ login: Login, _ backend: Backend,
                          _ secret: borrowing SecureBytes, pending kept: PendingFailure?) -> ModuleResult {
        let pending = getuid() == 0 ? kept : nil
        let isGesture = secret.hasPrefix(GestureWire.prefix)
        let noun = isGesture ? "gesture" : "passcode"
        let silent = login.options.silent
        func tell(_ message: String) {
            complain(login.discreet ? Self.discreetRefusal(gesture: isGesture) : message, silent: silent || login.promptsEveryAccount)
        }
        // A helper wrote the attempt's line itself: one line per attempt.
        let attemptLine = login.route == .files ? outcome.logLine(user: login.forLog, kind: noun) : nil
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
            // The verdict is in: only now, and only for a passcode, the keyring's copy.
            // Through a helper, the helper read `keyring` in puff.conf and released the copy itself.
            if !isGesture, login.route != .files || keyringEnabled(login.options) {
                releaseKeyring(secret, user: login.user, forLog: login.forLog, backend: backend)
            }
            return .success
        case .notEnrolled:
            if login.promptsEveryAccount {
                // Not a Puff failure: the reply is the password module's to check.
                log(LOG_INFO, "user \(login.forLog): no Puff record; the reply is handed on (nullok_prompt), not counted")
                return .ignore
            }
            if let reason = backend.state.notEnrolledReason, login.options.debug { log(LOG_DEBUG, "user \(login.forLog): \(reason)") }
            logAuthenticationFailure(user: login.user.isEmpty ? "(invalid)" : login.user)
            log(LOG_NOTICE, "user \(login.forLog): authentication failure")
            tell("Puff: wrong \(noun).")
        case .failure(_, let lock, _) where lock == .open:
            tell("Puff: wrong \(noun).")
        case .failure(_, let lock, _):
            let line = "user \(login.forLog): \(describe(lock))"
            if let pending {
                pending.finalLines.append((LOG_WARNING, finalLinePrefix() + line))
                pending.finalAudit = auditRecord(.locked(untilReset: lock == .lockedUntilReset), backend)
            } else {
                log(LOG_WARNING, line)
                audit(.locked(untilReset: lock == .lockedUntilReset), backend)
            }
            tell("Puff: wrong \(noun). " + lockMessage(lock, prefix: false))
        case .locked(let status):
            refuseLocked(status, login, backend)
            // Discreet: the store work evened this refusal's cost out already (a dummy argon2id
            // and a decoy write: Authenticator.evenRefusals).
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
    private func recordInHistory(_ counted: Authenticator.CountedFailure, _ options: PuffOptions, _ session: StoreSession) {
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
    private func audit(_ event: Audit.Event, _ backend: Backend) {
        guard let record = auditRecord(event, backend) else { return }
        Audit.record(record.event, uid: record.uid, rhost: record.rhost, tty: record.tty)
    }

    /// What `audit` sends, to send later (`nil`: no account to name).
    private func auditRecord(_ event: Audit.Event, _ backend: Backend)
        -> (event: Audit.Event, uid: UInt32, rhost: String?, tty: String?)? {
        guard let uid = backend.auditUID else { return nil }
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
