import PuffCore

/// The login keyring's part of the files store (`keyring = yes`; docs/admin/protection-at-rest.md,
/// "The login keyring"): the copy captured after the system password was proven, released
/// after a passcode success, dropped when the passcode changes or goes.

/// What capturing the system password came to.
public enum KeyringCapture: Equatable, Sendable {
    /// Sealed and stored.
    case kept
    /// The record has no keyring key pair yet (the next passcode login or change makes it).
    case noKeyPair
    /// No Puff passcode is enrolled (or fleet mode, which keeps none): nothing can open a copy.
    case noPasscode
}

/// What a passcode success came to for the keyring.
public enum KeyringRelease: ~Copyable {
    /// The system password, in wiped memory, to hand on.
    case password(SecureBytes)
    /// No copy is kept yet (the next password login keeps one).
    case noCopy
    /// The copy was sealed to an earlier passcode's key pair: dropped; the next password
    /// login keeps a new one.
    case stale
    /// The record had no key pair: one was made for this passcode (nothing to release yet).
    case keyPairAdded
    /// The passcode changed meanwhile (or fleet mode, which keeps none): nothing released.
    case changed
}

extension FilesStore {
    /// The copies beside the records.
    public var keyringCopies: KeyringStore { KeyringStore(directory: options.recordDirectory, session: session) }

    /// Seals `password` (just proven as `account`'s system password) to the public key of the
    /// record's passcode and stores it. Needs neither the passcode nor the store's key.
    @inline(never)
    public func captureKeyring(_ password: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringCapture {
        guard let record = try records.load(account), let passcode = record.passcode else { return .noPasscode }
        guard let lock = passcode.keyring else { return .noKeyPair }
        try keyringCopies.capture(password, for: account, lock: lock, at: now())
        return .kept
    }

    /// After `passcode` verified for `account`: derives the secret key and opens the copy,
    /// or, when the record has no key pair yet, makes one (the passcode is known now). One
    /// argon2id at the cost the key pair was made with.
    @inline(never)
    public func releaseKeyring(_ passcode: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringRelease {
        guard let record = try records.load(account), let stored = record.passcode else { return .changed }
        let key = try hostKey()
        guard let lock = stored.keyring else {
            let made = try KeyringKeys.make(for: passcode, account: account, hostKey: key, cost: options.kdf)
            let added = try counters.update(account.name) { _, _ throws(StoreError) -> Bool in
                // Under the user's lock, as every record change: only onto the passcode that verified.
                guard var current = try records.load(account), var now = current.passcode, now == stored else { return false }
                now.keyring = made
                current.passcode = now
                try records.save(current)
                // A copy left from an earlier key pair can never open.
                _ = try keyringCopies.forget(account.name)
                return true
            }
            return added ? .keyPairAdded : .changed
        }
        guard let secretKey = try KeyringKeys.secretKey(for: passcode, account: account, hostKey: key, lock: lock) else {
            // The passcode verified against the hash but derives another key pair: the record
            // was edited. Nothing is released.
            throw .tampered(path: records.recordPath(account.name))
        }
        switch try keyringCopies.open(for: account, lock: lock, secretKey: secretKey) {
        case .password(let password): return .password(password)
        case .none: return .noCopy
        case .stale:
            _ = try keyringCopies.forget(account.name)
            return .stale
        }
    }
}
