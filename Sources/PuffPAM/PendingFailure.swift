import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// A failure the quick-factor line counted in this transaction, kept in PAM data for the
/// `authsucc` line further down the stack. It holds a keyed digest of the text typed at
/// Puff's prompt (a fresh random key per transaction), never the text itself.
///
/// It also holds what reports the failure to fail2ban and the audit trail: the line in
/// pam_unix's shape and the lock's audit records. A refusal that `authsucc` may still take back
/// (the system password typed at Puff's prompt) is no attack, so they are written only once
/// the failure stands: when libpam releases this data without a take-back, that is, when the
/// next `pam_authenticate` on the handle replaces it or at `pam_end` (not in a forked copy
/// that ends with PAM_DATA_SILENT; docs/dev/internals.md, "Taken-back failures").
final class PendingFailure {
    /// The PAM data name; unique to Puff so no other module reads or replaces it.
    static let dataName = "pam_puff:counted-failure"

    /// What the attempt counted and what it must restore.
    let failure: CountedFailure
    /// Where it was counted (the files store here, or the root-started helper's service
    /// call), so where it is taken back too.
    let route: StoreRoute
    private let key: SecureBytes
    private let digest: SecureBytes
    /// Syslog lines (priority, text with its `pam_puff(service:auth): ` prefix) written once
    /// the failure stands.
    var finalLines: [(priority: Int32, text: String)] = []
    /// The audit records sent once the failure stands (the failure locked the account).
    var finalAudit: (event: Audit.Event, uid: UInt32, rhost: String?, tty: String?)?
    /// The text typed at Puff's prompt was the password the stack accepted: nothing to report.
    var excused = false

    init(failure: CountedFailure, secret: borrowing SecureBytes, route: StoreRoute) throws(StoreError) {
        self.route = route
        var key = try SecureBytes(count: Sodium.digestLength)
        Sodium.fillRandom(&key)
        self.digest = try Sodium.keyedDigest(of: secret, key: key)
        self.key = key
        self.failure = failure
    }

    /// Whether `secret` is the text this failure was counted for (constant time).
    func matches(_ secret: borrowing SecureBytes) throws(StoreError) -> Bool {
        let other = try Sodium.keyedDigest(of: secret, key: key)
        return digest.constantTimeEquals(other)
    }

    /// Writes the failure's lines and audit records unless it was excused. libpam's pam_syslog
    /// would name the module it called last (the data is released after the stack, even at
    /// `pam_end`), so the lines carry their own prefix and go to syslog(3) as pam_syslog's do.
    func reportUnlessExcused() {
        guard !excused else { return }
        for line in finalLines {
            line.text.withCString { puff_syslog_text(LOG_AUTHPRIV | line.priority, $0) }
        }
        if let audit = finalAudit { Audit.record(audit.event, uid: audit.uid, rhost: audit.rhost, tty: audit.tty) }
        finalLines = []
        finalAudit = nil
    }
}

extension ModuleContext {
    /// Stores `pending` in the transaction (replacing an earlier one); libpam releases it at
    /// `pam_end` or when it is replaced, and then the failure stands unless it was excused.
    /// `false` when libpam refused it.
    func remember(_ pending: PendingFailure) -> Bool {
        let pointer = Unmanaged.passRetained(pending).toOpaque()
        let status = pam_set_data(handle, PendingFailure.dataName, pointer) { _, data, status in
            guard let data else { return }
            let pending = Unmanaged<PendingFailure>.fromOpaque(data).takeRetainedValue()
            // PAM_DATA_SILENT: a forked copy of the handle ends (su's or login's child); the
            // process that authenticated reports at its own pam_end.
            if status & PAM_DATA_SILENT == 0 { pending.reportUnlessExcused() }
        }
        if status != PAM_SUCCESS { Unmanaged<PendingFailure>.fromOpaque(pointer).release() }
        return status == PAM_SUCCESS
    }

    /// The failure the quick-factor line left in this transaction, if any.
    func pendingFailure() -> PendingFailure? {
        var data: UnsafeRawPointer?
        guard pam_get_data(handle, PendingFailure.dataName, &data) == PAM_SUCCESS, let data else { return nil }
        return Unmanaged<PendingFailure>.fromOpaque(data).takeUnretainedValue()
    }

    /// Drops the stored failure (it was taken back, or must not be taken back twice).
    func forgetPendingFailure() {
        _ = pam_set_data(handle, PendingFailure.dataName, nil, nil)
    }

    /// The `authsucc` line: reached only after the stack's password module succeeded. When the
    /// token that succeeded is the one typed at Puff's prompt for the same user, the failure
    /// Puff counted for it is taken back where it was counted (the route kept with it). It never
    /// prompts and never grants anything.
    func takeBackAfterPasswordSuccess(_ options: PuffOptions, arguments: [String], session: StoreSession) -> ModuleResult {
        guard let pending = pendingFailure() else { return .ignore }
        // Whatever happens below, a failure is taken back at most once.
        defer { forgetPendingFailure() }
        do {
            try Sodium.initialize()
        } catch {
            log(LOG_CRIT, "\(error)")
            return .failure(error)
        }
        let user = LogText.escape(pending.failure.user.value)
        let (userStatus, rawName) = userName()
        guard userStatus == PAM_SUCCESS, rawName.sameBytes(as: pending.failure.user.value) else {
            log(LOG_NOTICE, "user \(user): authsucc: the user changed since Puff's prompt; the Puff failure stays counted")
            return .ignore
        }
        let same: Bool
        do {
            guard let token = try storedToken() else {
                if options.debug { log(LOG_DEBUG, "user \(user): authsucc: no token; the Puff failure stays counted") }
                return .ignore
            }
            same = try pending.matches(token)
            // pam_unix accepted the text typed at Puff's prompt: the system password, proven.
            if same, keyringEnabled(options) {
                captureKeyring(token, user: pending.failure.user, options: options, session: session, when: "password login")
            }
        } catch {
            log(LOG_ERR, "user \(user): authsucc: \(error); the Puff failure stays counted")
            return .failure(error)
        }
        guard same else {
            if options.debug { log(LOG_DEBUG, "user \(user): authsucc: another password succeeded; the Puff failure stays counted") }
            return .ignore
        }
        // The password the stack accepted was typed at Puff's prompt: no attack to report,
        // whether or not the counter can still be lowered below.
        pending.excused = true
        do {
            let taken = pending.route == .rootService
                ? try HelperClient(path: options.helperPath, service: .init(user: pending.failure.user.value, arguments: arguments))
                    .takeBack(pending.failure)
                : try FilesStore(options: options, session: session).takeBack(pending.failure)
            if taken {
                log(LOG_INFO, CountedFailure.takenBackLine(user: user))
                if pending.route != .rootService { forgetInHistory(pending.failure, options, session) }
            }
        } catch {
            log(LOG_ERR, "user \(user): authsucc: \(error); the Puff failure stays counted")
            return .failure(error)
        }
        return .ignore
    }

    /// Removes a taken-back failure from the user's history (the helper does it itself for a
    /// service call); a history that cannot be written is logged and changes nothing.
    private func forgetInHistory(_ failure: CountedFailure, _ options: PuffOptions, _ session: StoreSession) {
        do {
            _ = try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                                   session: session).forget(serial: failure.after.serial, for: failure.user)
        } catch {
            log(LOG_WARNING, "user \(LogText.escape(failure.user.value)): failure history not updated: \(error)")
        }
    }
}
