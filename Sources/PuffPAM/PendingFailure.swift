import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// A failure the quick-factor line counted in this transaction, kept in PAM data for the
/// `authsucc` line further down the stack. It holds a keyed digest of the text typed at
/// Puff's prompt (a fresh random key per transaction), never the text itself.
final class PendingFailure {
    /// The PAM data name; unique to Puff so no other module reads or replaces it.
    static let dataName = "pam_puff:counted-failure"

    /// What the attempt counted and what it must restore.
    let failure: Authenticator.CountedFailure
    /// Where it was counted (the files store here, or the root-started helper's service
    /// call), so where it is taken back too.
    let route: StoreRoute
    private let key: SecureBytes
    private let digest: SecureBytes

    init(failure: Authenticator.CountedFailure, secret: borrowing SecureBytes, route: StoreRoute) throws(StoreError) {
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
}

extension ModuleContext {
    /// Stores `pending` in the transaction (replacing an earlier one); libpam releases it at
    /// `pam_end` or when it is replaced. `false` when libpam refused it.
    func remember(_ pending: PendingFailure) -> Bool {
        let pointer = Unmanaged.passRetained(pending).toOpaque()
        let status = pam_set_data(handle, PendingFailure.dataName, pointer) { _, data, _ in
            guard let data else { return }
            Unmanaged<PendingFailure>.fromOpaque(data).release()
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
        do {
            let taken = pending.route == .rootService
                ? try HelperClient(path: options.helperPath, service: .init(user: pending.failure.user.value, arguments: arguments))
                    .takeBack(pending.failure)
                : try Authenticator(options: options, session: session).takeBack(pending.failure)
            if taken {
                log(LOG_INFO, Authenticator.CountedFailure.takenBackLine(user: user))
            }
        } catch {
            log(LOG_ERR, "user \(user): authsucc: \(error); the Puff failure stays counted")
            return .failure(error)
        }
        return .ignore
    }
}
