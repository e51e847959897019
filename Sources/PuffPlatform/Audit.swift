import CAudit
import Glibc

/// Linux audit records through libaudit, like pam_faillock's `audit` option and faillock(8):
/// the kernel's audit log keeps them apart from syslog. Where the kernel has no audit support
/// (or the process may not write to it, as in some containers) nothing is sent and nothing
/// fails: syslog still has every event.
public enum Audit {
    /// What happened.
    public enum Event: Sendable {
        /// A failure locked the account (`AUDIT_ANOM_LOGIN_FAILURES`, then
        /// `AUDIT_RESP_ACCT_LOCK_TIMED` or `AUDIT_RESP_ACCT_LOCK` until an administrator resets it).
        case locked(untilReset: Bool)
        /// An attempt was refused without a check because the account is locked
        /// (`AUDIT_ANOM_LOGIN_FAILURES`, result failed).
        case refusedWhileLocked
    }

    /// Sends `event` for the account `uid` (the `suid=` field, as pam_faillock's), with the
    /// remote host and terminal PAM knows. Returns whether the kernel took the records.
    @discardableResult
    public static func record(_ event: Event, uid: UInt32, rhost: String?, tty: String?) -> Bool {
        let fd = audit_open()
        guard fd >= 0 else { return false }
        defer { audit_close(fd) }
        let message = "op=pam_puff suid=\(uid) "
        func send(_ type: Int32, _ result: Int32) -> Bool {
            audit_log_user_message(fd, type, message, rhost, nil, tty, result) > 0
        }
        switch event {
        case .locked(let untilReset):
            let first = send(AUDIT_ANOM_LOGIN_FAILURES, 1)
            let second = send(untilReset ? AUDIT_RESP_ACCT_LOCK : AUDIT_RESP_ACCT_LOCK_TIMED, 1)
            return first && second
        case .refusedWhileLocked:
            return send(AUDIT_ANOM_LOGIN_FAILURES, 0)
        }
    }

    /// An administrator's `puff-enroll lock` or `reset` of `user` (`AUDIT_USER_MGMT`, as
    /// faillock(8) sends for `--reset`); `operation` is `puff-lock` or `puff-reset`.
    @discardableResult
    public static func administrator(_ operation: String, user: String, uid: UInt32, succeeded: Bool) -> Bool {
        let fd = audit_open()
        guard fd >= 0 else { return false }
        defer { audit_close(fd) }
        return audit_log_acct_message(fd, AUDIT_USER_MGMT, nil, operation, user, uid, nil, nil, nil, succeeded ? 1 : 0) > 0
    }
}
