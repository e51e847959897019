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
                 .directoryUnreachable: PAM_AUTHINFO_UNAVAIL
            }
        }
    }

    /// The whole authentication, as one function of the module's inputs.
    func authenticate(arguments: [String]?) -> ModuleResult {
        // The take-back line runs in every login of a stack that has it: with nothing to take
        // back it returns before any work.
        if let arguments, arguments.contains("authsucc") { return takeBackAfterPasswordSuccess(arguments: arguments) }
        do {
            try Sodium.initialize()
        } catch {
            log(LOG_CRIT, "\(error)")
            return .failure(error)
        }
        guard let arguments else {
            log(LOG_ERR, "module arguments are not valid UTF-8 or exceed the limits")
            return .badArguments
        }
        // A failure left by an earlier pam_authenticate on this handle is not this one's.
        forgetPendingFailure()
        // Not root (a screen locker checking its own user): the setuid helper does the store
        // work, under puff.conf's settings.
        let unprivileged = geteuid() != 0
        // Every directory this call reads or writes (the configuration's, the store's, the
        // state directory) is walked and checked once, and held until the call returns.
        let session = StoreSession()
        let options: PuffOptions
        do {
            let loaded = try Configuration.load(arguments: arguments, readingFile: !unprivileged, session: session)
            options = loaded.options
            for warning in loaded.warnings { log(LOG_WARNING, warning) }
        } catch {
            log(LOG_ERR, "\(error); failing closed")
            return .failure(error)
        }
        if !options.noDelay { requestFailureDelay() }
        let silent = options.silent

        let (userStatus, rawName) = userName()
        guard userStatus == PAM_SUCCESS else {
            log(LOG_NOTICE, "could not obtain the user name (PAM code \(userStatus))")
            return .userNameUnavailable(userStatus)
        }
        let userForLog = LogText.escape(rawName ?? "(invalid)")
        if unprivileged {
            // The helper checks the real uid's account only; asking for anyone else is refused
            // here, before any prompt.
            let own = (try? Account.lookup(uid: getuid()))??.name.value
            guard let rawName, rawName == own else {
                log(LOG_NOTICE, "user \(userForLog): refused, an unprivileged caller (uid \(getuid())) can only authenticate itself")
                return .denied
            }
        }
        // A root-run service where the caller is not the user (su to another account, sshd,
        // login): the prompt and every message are the same for every account name, enrolled
        // with any type, not enrolled or no account at all, locked or not (issue 11, item 9).
        // The keypad and lock hints stay where the caller is the user: their own screen
        // locker or pad (the helper path), su or sudo to themselves.
        let discreet = !unprivileged && !callerIsUser(rawName)
        // Where the store work runs, decided once for this call.
        let route = StoreRoute.choose(directory: options.directory.isEnabled,
                                      for: .module(effectiveUID: geteuid(), realUID: getuid()))
        let backend: Backend
        do {
            backend = try Backend.prepare(route, options, userName: rawName ?? "", arguments: arguments,
                                          origin: [rawItem(PAM_SERVICE), rawItem(PAM_TTY), rawItem(PAM_RHOST), rawItem(PAM_RUSER)],
                                          session: session)
        } catch {
            log(LOG_ERR, "user \(userForLog): \(error); failing closed")
            return .failure(error)
        }

        let preflight = backend.state
        let acceptance = preflight.acceptance
        let damaged = preflight.counterDamaged ? " (the counter file does not parse; puff-enroll reset rewrites it)" : ""
        if let reason = preflight.notEnrolledReason {
            if options.nullOK {
                if options.debug { log(LOG_DEBUG, "user \(userForLog): \(reason); ignored (nullok)") }
                return .ignore
            }
        } else if !discreet {
            let status = preflight.lock
            if status != .open {
                log(LOG_NOTICE, "user \(userForLog): attempt refused, \(describe(status))\(damaged); \(attemptContext())")
                audit(.refusedWhileLocked, backend)
                complain(lockMessage(status), silent: silent)
                return .denied
            }
            switch acceptance {
            case .refused:
                log(LOG_NOTICE, "user \(userForLog): attempt refused, gesture-only user locked by an administrator")
                complain(lockMessage(.lockedUntilReset), silent: silent)
                return .denied
            case .passcodeOnly(_, let reason?):
                if options.debug { log(LOG_DEBUG, "user \(userForLog): passcode required: \(reason.text)") }
                inform("Puff: passcode required: \(reason.text).", silent: silent)
            case .passcodeOnly(_, nil), .passcodeOrGesture, .gestureOnly:
                break
            }
        }

        // One prompt from the contract and one round, for every user, enrolled or not.
        let secret: SecureBytes
        switch obtainSecret(options, prompt: discreet ? Acceptance.discreetPrompt : acceptance.prompt) {
        case .secret(let bytes):
            secret = bytes
        case .empty:
            log(LOG_NOTICE, "user \(userForLog): empty reply; not counted")
            return .denied
        case .tooLong:
            log(LOG_NOTICE, "user \(userForLog): reply longer than \(Self.maximumReplyLength) bytes; not counted")
            complain(discreet ? Self.discreetRefusal("passcode") : "Puff: wrong passcode.", silent: silent)
            return .denied
        case .failed(let code):
            log(LOG_NOTICE, "user \(userForLog): conversation failed (PAM code \(code)); not counted")
            return code == PAM_BUF_ERR ? .failure(.crypto("out of secure memory")) : .conversationError
        }

        let noun = secret.hasPrefix(GestureWire.prefix) ? "gesture" : "passcode"
        let outcome: Authenticator.Outcome
        var counted: Authenticator.CountedFailure?
        do {
            outcome = try backend.attempt(secret, counted: &counted)
        } catch {
            log(LOG_ERR, "user \(userForLog): \(error); failing closed")
            return .failure(error)
        }
        /// The message after the reply: the outcome's own, or in a discreet service the one
        /// every account gets for this kind of reply.
        func tell(_ message: String) {
            complain(discreet ? Self.discreetRefusal(noun) : message, silent: silent)
        }
        switch outcome {
        case .success(let rehashed):
            log(LOG_INFO, "user \(userForLog): \(noun) accepted\(rehashed ? "; hash upgraded to the current cost" : "")")
            return .success
        case .notEnrolled:
            if let reason = preflight.notEnrolledReason, options.debug {
                log(LOG_DEBUG, "user \(userForLog): \(reason)")
            }
            logAuthenticationFailure(user: rawName ?? "(invalid)")
            log(LOG_NOTICE, "user \(userForLog): authentication failure")
            tell("Puff: wrong \(noun).")
            return .denied
        case .failure(let failures, let lock, let detail):
            // For an `authsucc` line after the password module: if that module accepts this
            // same text as the system password, the failure is taken back.
            if let counted {
                // A service call's helper wrote the history itself: this process, which the
                // user may stop (su run by them), takes no lock of the store.
                if route != .rootService { recordInHistory(counted, options, session) }
                do {
                    if !remember(try PendingFailure(failure: counted, secret: secret, route: route)) {
                        log(LOG_WARNING, "user \(userForLog): could not keep the failure for authsucc")
                    }
                } catch {
                    log(LOG_WARNING, "user \(userForLog): \(error); the failure cannot be taken back by authsucc")
                }
            }
            logAuthenticationFailure(user: rawName ?? "(invalid)")
            log(LOG_NOTICE, "user \(userForLog): authentication failure (\(failures) in a row)\(detail.isEmpty ? "" : "; " + detail)")
            if lock == .open {
                tell("Puff: wrong \(noun).")
            } else {
                log(LOG_WARNING, "user \(userForLog): \(describe(lock))")
                audit(.locked(untilReset: lock == .lockedUntilReset), backend)
                tell("Puff: wrong \(noun). " + lockMessage(lock, prefix: false))
            }
            return .denied
        case .locked(let status):
            log(LOG_NOTICE, "user \(userForLog): attempt refused, \(describe(status))\(damaged); \(attemptContext())")
            audit(.refusedWhileLocked, backend)
            // Discreet: as long as a wrong passcode takes, so the time does not tell either.
            if discreet { backend.runDummyVerification(secret) }
            tell(lockMessage(status))
            return .denied
        case .passcodeRequired(let reason):
            log(LOG_NOTICE, "user \(userForLog): gesture refused unread, passcode required: \(reason.text)")
            tell("Puff: passcode required: \(reason.text).")
            return .denied
        }
    }

    /// Whether the real uid is the user's own and not root (su or sudo to oneself): then the
    /// caller may see the user's keypad and lock state. sshd and login run with uid 0.
    private func callerIsUser(_ rawName: String?) -> Bool {
        let uid = getuid()
        guard uid != 0, let rawName, let account = (try? Account.lookup(uid: uid)) ?? nil else { return false }
        return account.name.value == rawName
    }

    /// The one failure message of a discreet service, by the kind of reply only.
    static func discreetRefusal(_ noun: String) -> String {
        noun == "gesture"
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
                                         tty: rawItem(PAM_TTY), rhost: rawItem(PAM_RHOST), ruser: rawItem(PAM_RUSER))
        do {
            try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                               session: session).record(entry, for: counted.user)
        } catch {
            log(LOG_WARNING, "user \(LogText.escape(counted.user.value)): failure history not written: \(error)")
        }
    }

    /// An audit record for `backend`'s account, with this transaction's remote host and tty.
    private func audit(_ event: Audit.Event, _ backend: Backend) {
        guard let uid = backend.auditUID else { return }
        let rhost = logField(PAM_RHOST), tty = logField(PAM_TTY)
        Audit.record(event, uid: uid, rhost: rhost.isEmpty ? nil : rhost, tty: tty.isEmpty ? nil : tty)
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
