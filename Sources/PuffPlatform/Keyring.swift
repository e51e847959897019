import CSodium
import Glibc
import PuffCore

/// The keyring key pair of a passcode (docs/admin/protection-at-rest.md, "The login keyring").
///
///     input  = BLAKE2b-256(key: store key, "puff-keyring-v1" ‖ 0 ‖ uid(be32) ‖ name ‖ 0 ‖ passcode)
///     seed   = argon2id(input, its own 16-byte salt, the cost in the lock), 32 bytes
///     keys   = crypto_box_seed_keypair(seed): only the public key is stored
///
/// Nothing stored is derived from the seed but the public key: the passcode's own argon2id
/// hash has another input (its domain is "puff-passcode-v1") and another salt, so the stored
/// hash says nothing about the secret key, and guessing the passcode against the public key
/// costs one argon2id a guess and needs the store's key, as guessing it against the hash does.
public enum KeyringKeys {
    /// Domain separation for the derivation's input.
    static let domain = Array("puff-keyring-v1".utf8)
    /// Bytes of the derivation's salt.
    static let saltLength = 16

    /// A new key pair for `passcode` at `cost` (a fresh salt); the lock stored in the record.
    public static func make(for passcode: borrowing SecureBytes, account: Account, hostKey: borrowing SecureBytes,
                            cost: Argon2Parameters) throws(StoreError) -> KeyringLock {
        var salt = [UInt8](repeating: 0, count: saltLength)
        salt.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
        var publicKey: [UInt8] = []
        _ = try derive(passcode, account: account, hostKey: hostKey, salt: salt, cost: cost, publicKey: &publicKey)
        guard let lock = KeyringLock.compose(cost: cost, salt: Base64.encode(salt, padded: false),
                                             publicKey: Base64.encode(publicKey, padded: false)) else {
            throw .crypto("keyring: the key pair could not be encoded")
        }
        return lock
    }

    /// The secret key `passcode` derives under `lock`, or `nil` when it derives another public
    /// key (another passcode, user or store key: the copy is not this passcode's to open).
    public static func secretKey(for passcode: borrowing SecureBytes, account: Account, hostKey: borrowing SecureBytes,
                                 lock: KeyringLock) throws(StoreError) -> SecureBytes? {
        guard let salt = Base64.decode(lock.salt, padded: false), salt.count == saltLength,
              let stored = Base64.decode(lock.publicKey, padded: false), stored.count == Int(crypto_box_PUBLICKEYBYTES) else {
            throw .crypto("keyring: the stored key pair does not decode")
        }
        var publicKey: [UInt8] = []
        let secretKey = try derive(passcode, account: account, hostKey: hostKey, salt: salt, cost: lock.cost, publicKey: &publicKey)
        guard publicKey.count == stored.count,
              publicKey.withUnsafeBytes({ mine in stored.withUnsafeBytes { sodium_memcmp(mine.baseAddress, $0.baseAddress, $0.count) } }) == 0
        else { return nil }
        return secretKey
    }

    /// The secret key (wiped memory); the public key (an ordinary array: not secret) in `publicKey`.
    private static func derive(_ passcode: borrowing SecureBytes, account: Account, hostKey: borrowing SecureBytes,
                               salt: [UInt8], cost: Argon2Parameters,
                               publicKey: inout [UInt8]) throws(StoreError) -> SecureBytes {
        let input = try PasscodeHasher(cost: cost).prehash(passcode, user: account.name, uid: account.uid,
                                                           hostKey: hostKey, domain: domain)
        var seed = try SecureBytes(count: Int(crypto_box_SEEDBYTES))
        let hashed = seed.withMutableBytes { out -> Int32 in
            input.withBytes { bytes -> Int32 in
                guard let outBase = out.baseAddress, let inBase = bytes.baseAddress, salt.count == Int(crypto_pwhash_SALTBYTES) else {
                    return -1
                }
                return crypto_pwhash(outBase.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                                     inBase.assumingMemoryBound(to: CChar.self), UInt64(bytes.count), salt,
                                     UInt64(cost.iterations), Int(cost.memoryKiB) * 1024, crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard hashed == 0 else { throw .crypto("keyring: argon2id failed (out of memory?)") }
        publicKey = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        var secretKey = try SecureBytes(count: Int(crypto_box_SECRETKEYBYTES))
        let made = secretKey.withMutableBytes { secret -> Int32 in
            seed.withBytes { seedBytes -> Int32 in
                guard let secretBase = secret.baseAddress, let seedBase = seedBytes.baseAddress else { return -1 }
                return crypto_box_seed_keypair(&publicKey, secretBase.assumingMemoryBound(to: UInt8.self),
                                               seedBase.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard made == 0 else { throw .crypto("keyring: crypto_box_seed_keypair failed") }
        return secretKey
    }
}

/// The sealed copies of the users' system passwords: `keyring/NAME` under the store directory
/// (root 0700, each file root 0600, read with the store's trusted-file rules; `KeyringCopyFile`).
public struct KeyringStore {
    /// The store directory.
    public let directory: String
    private let session: StoreSession

    /// The copies under `directory` (the record directory), reached through `session`.
    public init(directory: String, session: StoreSession) {
        self.directory = directory
        self.session = session
    }

    static let subdirectory = "keyring"

    /// The path of `name`'s copy, for log lines.
    public func copyPath(_ name: UserName) -> String { directory + "/" + Self.subdirectory + "/" + name.value }

    /// Seals `password` to `lock`'s public key and stores it as `account`'s copy, replacing
    /// the one before (atomically). Needs no passcode: the public key is enough.
    public func capture(_ password: borrowing SecureBytes, for account: Account, lock: KeyringLock,
                        at time: Int64) throws(StoreError) {
        guard (1...KeyringCopyFile.maximumPasswordLength).contains(password.count) else {
            throw .crypto("keyring: a password of \(password.count) bytes is not kept (1 to \(KeyringCopyFile.maximumPasswordLength))")
        }
        guard let publicKey = Base64.decode(lock.publicKey, padded: false), publicKey.count == Int(crypto_box_PUBLICKEYBYTES) else {
            throw .crypto("keyring: the stored public key does not decode")
        }
        var box = [UInt8](repeating: 0, count: password.count + Int(crypto_box_sealbytes()))
        let sealed = password.withBytes { plain -> Int32 in
            guard let base = plain.baseAddress else { return -1 }
            return crypto_box_seal(&box, base.assumingMemoryBound(to: UInt8.self), UInt64(plain.count), publicKey)
        }
        guard sealed == 0 else { throw .crypto("keyring: crypto_box_seal failed") }
        let file = KeyringCopyFile(user: account.name, uid: account.uid, captured: time,
                                   sealedTo: String(lock.publicKey), copy: Base64.encode(box, padded: false))
        let root = try RecordStore(directory: directory, session: session).openRoot()
        let copies = try session.subdirectory(Self.subdirectory, of: root, creatingWith: 0o700)
        copies.trusted.removeLeftovers(of: account.name.value)
        // `.ordered`: a crash leaves the old copy or the new one, whole; losing the new one only
        // means the next password login keeps it again (one fsync a login, not two).
        try copies.trusted.replaceFile(account.name.value, with: file.encoded(), durability: .ordered)
    }

    /// `account`'s copy as stored, or `nil` when there is none. A copy naming another user or
    /// uid is refused (`wrongOwner`), as a record is.
    public func copy(of account: Account) throws(StoreError) -> KeyringCopyFile? {
        guard let copies = try session.directory(directory + "/" + Self.subdirectory) else { return nil }
        guard let bytes = try copies.trusted.readFile(account.name.value,
                                                       .rootPrivate(maximumSize: KeyringCopyFile.maximumEncodedSize)) else {
            return nil
        }
        let file: KeyringCopyFile
        do {
            file = try KeyringCopyFile.decode(bytes)
        } catch {
            throw .format(path: copyPath(account.name), error)
        }
        guard file.user == account.name, file.uid == account.uid else { throw .wrongOwner(path: copyPath(account.name)) }
        return file
    }

    /// What opening `account`'s copy came to.
    public enum Opened: ~Copyable {
        /// The password, in wiped memory.
        case password(SecureBytes)
        /// No copy is kept.
        case none
        /// The copy was sealed to another key pair (an earlier passcode): it waits for the next
        /// password login to be captured again.
        case stale
    }

    /// Opens `account`'s copy with `secretKey` (derived from the passcode under `lock`).
    public func open(for account: Account, lock: KeyringLock, secretKey: borrowing SecureBytes) throws(StoreError) -> Opened {
        guard let file = try copy(of: account) else { return .none }
        guard file.sealedTo.sameBytes(as: lock.publicKey) else { return .stale }
        guard let publicKey = Base64.decode(lock.publicKey, padded: false), publicKey.count == Int(crypto_box_PUBLICKEYBYTES),
              let box = Base64.decode(file.copy, padded: false), box.count > Int(crypto_box_sealbytes()) else {
            throw .format(path: copyPath(account.name), .badValue)
        }
        var password = try SecureBytes(count: box.count - Int(crypto_box_sealbytes()))
        let opened = password.withMutableBytes { out -> Int32 in
            secretKey.withBytes { secret -> Int32 in
                guard let outBase = out.baseAddress, let secretBase = secret.baseAddress else { return -1 }
                return crypto_box_seal_open(outBase.assumingMemoryBound(to: UInt8.self), box, UInt64(box.count), publicKey,
                                            secretBase.assumingMemoryBound(to: UInt8.self))
            }
        }
        // Sealed to this public key but not opening: edited or damaged.
        guard opened == 0 else { throw .tampered(path: copyPath(account.name)) }
        // A NUL inside would cut PAM_AUTHTOK short: hand on nothing rather than another password.
        guard !password.withBytes({ $0.contains(0) }) else { throw .format(path: copyPath(account.name), .badValue) }
        return .password(password)
    }

    /// Removes `name`'s copy; `false` when there was none.
    public func forget(_ name: UserName) throws(StoreError) -> Bool {
        guard let copies = try session.directory(directory + "/" + Self.subdirectory) else { return false }
        return try copies.trusted.removeFile(name.value)
    }
}
