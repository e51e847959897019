import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// The login keyring (`keyring = yes`; docs/admin/protection-at-rest.md, "The login keyring"): the
/// system password captured, sealed to the passcode's public key, wherever this stack proved
/// it, and handed on as PAM_AUTHTOK after a passcode success, so pam_gnome_keyring and
/// pam_kwallet5 further down unlock. Capture is best effort (a failure is logged and changes
/// no result); release fails closed (any error hands on nothing).
extension ModuleContext {
    /// Whether the keyring is on for these options; logs why not when it was asked for.
    func keyringEnabled(_ options: PuffOptions) -> Bool {
        guard options.keyring else { return false }
        if let refusal = options.keyringRefusal {
            log(LOG_WARNING, refusal)
            return false
        }
        return true
    }

    /// After a passcode success: the copy opened with the passcode and set as PAM_AUTHTOK,
    /// here (the files store, root), or the one the helper opened and sent after its report
    /// (`released`: tpm mode, su or sudo run by a user, a screen locker). Never before the
    /// verdict, never on a refusal: `conclude` calls it on `.success` only.
    @inline(never)  // off by default: kept out of the login's own path
    func releaseKeyring(_ passcode: borrowing SecureBytes, user: String, forLog: String, work: LoginWork,
                        released: consuming SecureBytes?) {
        guard case .files(let files) = work else {
            // The helper logged why when it released nothing.
            guard let password = released.take() else { return }
            do {
                try setAuthToken(password)
                log(LOG_INFO, "user \(forLog): keyring: the system password is handed on")
            } catch {
                log(LOG_ERR, "user \(forLog): keyring: \(error); nothing handed on")
            }
            return
        }
        guard let account = files.subject.account else { return }
        do {
            switch try files.store.releaseKeyring(passcode, for: account) {
            case .password(let password):
                try setAuthToken(password)
                log(LOG_INFO, "user \(forLog): keyring: the system password is handed on")
            case .noCopy:
                log(LOG_INFO, "user \(forLog): keyring: no copy of the system password is kept yet; the next password login keeps one")
            case .stale:
                log(LOG_INFO, "user \(forLog): keyring: the copy was sealed to an earlier passcode; dropped, the next password login keeps a new one")
            case .keyPairAdded:
                log(LOG_INFO, "user \(forLog): keyring: key pair made for this passcode; the next password login keeps a copy")
            case .changed:
                log(LOG_NOTICE, "user \(forLog): keyring: the passcode changed meanwhile; nothing handed on")
            }
        } catch {
            // Fails closed: PAM_AUTHTOK stays what was typed; the login itself stands.
            log(LOG_ERR, "user \(forLog): keyring: \(error); nothing handed on")
        }
    }

    /// Sets PAM_AUTHTOK to `token` (libpam keeps its own copy and wipes it at pam_end); the
    /// NUL-terminated copy made for it here is wiped when it goes.
    private func setAuthToken(_ token: borrowing SecureBytes) throws(StoreError) {
        var text = try SecureBytes(count: token.count + 1)
        text.withMutableBytes { out in
            token.withBytes { bytes in
                if let base = out.baseAddress, let source = bytes.baseAddress { base.copyMemory(from: source, byteCount: bytes.count) }
            }
        }
        let status = text.withBytes { bytes in pam_set_item(handle, PAM_AUTHTOK, bytes.baseAddress) }
        guard status == PAM_SUCCESS else { throw .crypto("pam_set_item(PAM_AUTHTOK) failed (PAM code \(status))") }
    }

    /// Seals `password`, just proven as `name`'s system password, to their passcode's public
    /// key. Best effort: every outcome is logged (never the password) and none changes the
    /// login. Only where this process may write the store (effective uid root).
    @inline(never)  // two call sites
    func captureKeyring(_ password: borrowing SecureBytes, user name: UserName, options: PuffOptions,
                        session: StoreSession, when: String) {
        let forLog = LogText.escape(name.value)
        guard geteuid() == 0 else {
            if options.debug { log(LOG_DEBUG, "user \(forLog): keyring: not kept (\(when)): no root to write the store") }
            return
        }
        do {
            try Sodium.initialize()
            guard let account = try Account.lookup(name.value), account.name == name else { return }
            switch try FilesStore(options: options, session: session).captureKeyring(password, for: account) {
            case .kept: log(LOG_INFO, "user \(forLog): keyring: the system password is kept, sealed to the passcode (\(when))")
            case .noKeyPair:
                log(LOG_INFO, "user \(forLog): keyring: not kept (\(when)): the passcode has no key pair yet (the next passcode login makes one)")
            case .noPasscode:
                if options.debug { log(LOG_DEBUG, "user \(forLog): keyring: not kept (\(when)): no Puff passcode") }
            }
        } catch {
            log(LOG_WARNING, "user \(forLog): keyring: not kept (\(when)): \(error)")
        }
    }

    /// `pam_sm_chauthtok` (`password optional pam_puff.so`, after the password module): on the
    /// update pass, the new password the module before set as PAM_AUTHTOK is kept as the copy.
    /// It changes nothing itself and never fails the change: always PAM_IGNORE.
    func passwordChanged(arguments: [String]?) -> Int32 {
        guard UInt32(bitPattern: flags) & UInt32(PAM_UPDATE_AUTHTOK) != 0, let arguments else { return PAM_IGNORE }
        let session = StoreSession()
        let options: PuffOptions
        do {
            options = try Configuration.load(arguments: arguments, readingFile: geteuid() == 0, session: session).options
        } catch {
            log(LOG_ERR, "keyring: \(error); the new password is not kept")
            return PAM_IGNORE
        }
        guard keyringEnabled(options) else { return PAM_IGNORE }
        do {
            // Before any secret is copied: libsodium's guarded memory needs it.
            try Sodium.initialize()
        } catch {
            log(LOG_CRIT, "\(error)")
            return PAM_IGNORE
        }
        let (status, rawName) = userName()
        guard status == PAM_SUCCESS, let rawName, let name = UserName(rawName) else { return PAM_IGNORE }
        do {
            guard let token = try storedToken(), token.count > 0 else {
                log(LOG_NOTICE, "user \(LogText.escape(rawName)): keyring: no new password in the stack; the copy is not updated")
                return PAM_IGNORE
            }
            captureKeyring(token, user: name, options: options, session: session, when: "password change")
        } catch {
            log(LOG_WARNING, "user \(LogText.escape(rawName)): keyring: \(error); the new password is not kept")
        }
        return PAM_IGNORE
    }
}
