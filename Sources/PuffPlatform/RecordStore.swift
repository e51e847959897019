import Glibc
import PuffCore

/// The root-only store of user records and the host key under `dir` (default `/etc/puff`):
///
///     /etc/puff/            root 0700 (or 0755), not group/other-writable
///     /etc/puff/host.key    32 random bytes, root 0600: the pepper, kept apart from the records
///     /etc/puff/host.key.tpm  in its place in tpm mode: the key sealed in the TPM (StoreKey.swift)
///     /etc/puff/puff.conf   optional configuration, root, not group/other-writable
///     /etc/puff/users/NAME  one record per user, root 0600
public struct RecordStore {
    /// The store directory.
    public let directory: String
    /// The session given at creation; without one, every call opens the store's directories anew (a
    /// long-lived value then sees a directory replaced or made unsafe meanwhile).
    private let given: StoreSession?
    /// What this call holds open.
    var session: StoreSession { given ?? StoreSession() }

    /// A store rooted at `directory`, its directories held by `session` when one is given.
    public init(directory: String, session: StoreSession? = nil) {
        self.directory = directory
        self.given = session
    }

    static let usersDirectory = "users"
    /// The world-readable directory of the users' pictures, under the store directory.
    public static let picturesDirectory = "pictures"

    /// The path of `name`'s record, for log lines.
    public func recordPath(_ name: UserName) -> String { directory + "/" + Self.usersDirectory + "/" + name.value }

    /// The name a new picture waits under until its record is saved (a leading `.` can never
    /// be a user name, so it never collides with a picture).
    static func pendingPictureName(_ name: UserName) -> String { ".next-" + name.value }

    /// Pictures are not secret: helpers running as the user read them to draw on, so the
    /// files are 0644 (records stay 0600 in a 0700 directory). `pictures/` is 0711: every
    /// reader opens a picture by its user's name, and no one but root can list the directory,
    /// whose names and times would tell every local user who has a gesture and since when
    /// (issue 36, item 4). One made 0755 by an older version loses its read bits here.
    ///
    /// Stores the picture of a gesture enrollment that is not committed yet: `settlePicture`
    /// moves it into place once the record naming its digest is saved. A process killed in
    /// between leaves the old record with the old picture, or the new record whose picture the
    /// next `settlePicture` (every login runs one) moves into place: never a record beside a
    /// picture it was not drawn on.
    public func stagePicture(_ bytes: [UInt8], for name: UserName) throws(StoreError) {
        let pictures = try openSubdirectory(Self.picturesDirectory, mode: Self.picturesMode)
        try Self.unlistable(pictures.trusted)
        // Temp pictures (up to 32 MiB each) that killed enrollments of older versions left
        // behind; this version's writes are unnamed until they are complete (`O_TMPFILE`).
        pictures.trusted.removeLeftovers(of: Self.pendingPictureName(name))
        pictures.trusted.removeLeftovers(of: name.value)
        try pictures.trusted.replaceFile(Self.pendingPictureName(name), with: bytes, mode: 0o644)
    }

    /// The mode of `pictures/`: searchable, not listable, by anyone but root.
    public static let picturesMode: mode_t = 0o711

    /// Takes the read bits for group and others off `directory` (a `pictures/` made 0755 by a
    /// version before 0711).
    static func unlistable(_ directory: borrowing TrustedDirectory) throws(StoreError) {
        let info: stat
        do {
            info = try directory.descriptor.status()
        } catch {
            throw .system("fstat", path: directory.path, error)
        }
        let mode = info.st_mode & 0o7777
        if mode & 0o044 != 0 { try directory.setMode(mode & ~0o044) }
    }

    /// Finishes a staged picture: moved into place when its digest is `expectedSHA256` (the
    /// record's). One that does not match is left alone (its enrollment never committed, or is
    /// still running; the next enrollment replaces it). Nothing staged costs one openat.
    @inline(never)
    public func settlePicture(for name: UserName, expectedSHA256: String) throws(StoreError) {
        guard let pictures = try session.directory(directory + "/" + Self.picturesDirectory) else { return }
        let pending = Self.pendingPictureName(name)
        guard let bytes = try pictures.trusted.readFile(pending, .rootWritable(maximumSize: Self.maximumPictureSize)) else { return }
        guard SHA256.hex(bytes).sameBytes(as: expectedSHA256) else { return }
        do {
            try pictures.trusted.renameFile(pending, to: name.value)
        } catch {
            // A login and the enrollment itself may both settle; the second finds it done.
            if case .system(_, _, let errno) = error, errno.rawValue == ENOENT { return }
            throw error
        }
    }

    /// The stored picture of `name` (regular, root-owned, not writable by others, ≤ 32 MiB).
    public func loadPicture(_ name: UserName) throws(StoreError) -> [UInt8]? {
        guard let pictures = try session.directory(directory + "/" + Self.picturesDirectory) else { return nil }
        return try pictures.trusted.readFile(name.value, .rootWritable(maximumSize: Self.maximumPictureSize))
    }

    /// Largest picture accepted.
    public static let maximumPictureSize = 32 << 20
    /// The host key's file name (`host.key.tpm` beside it in tpm mode).
    public static let hostKeyName = "host.key"

    /// The user's record, or `nil` only when there is none (ENOENT anywhere on the path).
    /// Any other problem — permissions, I/O, format, a record for another uid — throws.
    public func load(_ account: Account) throws(StoreError) -> UserRecord? {
        guard let users = try session.directory(directory + "/" + Self.usersDirectory) else { return nil }
        let name = account.name.value
        guard let bytes = try users.trusted.readFile(name, .rootPrivate(maximumSize: UserRecord.maximumEncodedSize)) else {
            return nil
        }
        let record: UserRecord
        do {
            record = try UserRecord.decode(bytes)
        } catch {
            throw .format(path: users.path + "/" + name, error)
        }
        guard record.user == account.name, record.uid == account.uid else {
            throw .wrongOwner(path: users.path + "/" + name)
        }
        return record
    }

    /// Writes `record` atomically, creating the directories (root 0700) when needed.
    public func save(_ record: UserRecord) throws(StoreError) {
        let users = try openSubdirectory(Self.usersDirectory)
        users.trusted.removeLeftovers(of: record.user.value)
        try users.trusted.replaceFile(record.user.value, with: record.encoded())
    }

    /// Deletes the user's record; `false` when there was none.
    public func remove(_ name: UserName) throws(StoreError) -> Bool {
        guard let users = try session.directory(directory + "/" + Self.usersDirectory) else { return false }
        return try users.trusted.removeFile(name.value)
    }

    /// Removes `name`'s picture and a staged one; `false` when there was neither.
    public func removePictures(_ name: UserName) throws(StoreError) -> Bool {
        guard let pictures = try session.directory(directory + "/" + Self.picturesDirectory) else { return false }
        let picture = try pictures.trusted.removeFile(name.value)
        let staged = try pictures.trusted.removeFile(Self.pendingPictureName(name))
        return picture || staged
    }

    /// Whether `name` has a record or a picture (staged or settled), without changing either.
    public func hasFiles(_ name: UserName) throws(StoreError) -> Bool {
        for (subdirectory, files) in [(Self.usersDirectory, [name.value]),
                                      (Self.picturesDirectory, [name.value, Self.pendingPictureName(name)])] {
            guard let directory = try session.directory(self.directory + "/" + subdirectory) else { continue }
            for file in files {
                do {
                    _ = try directory.trusted.descriptor.status(of: file)
                    return true
                } catch {
                    guard error == .noEntry else { throw .system("fstatat", path: directory.path + "/" + file, error) }
                }
            }
        }
        return false
    }

    /// The names that have a record (temp files and anything that is not a user name are skipped).
    public func enrolledNames() throws(StoreError) -> [UserName] {
        guard let users = try session.directory(directory + "/" + Self.usersDirectory) else { return [] }
        do {
            return try users.trusted.descriptor.entries().compactMap(UserName.init).sorted { $0.value < $1.value }
        } catch {
            throw .system("readdir", path: users.path, error)
        }
    }

    /// The host key, or `nil` when it does not exist yet: from `host.key`, or unsealed by the
    /// TPM `tpm` names in tpm mode (StoreKey.swift, the one place the key is read).
    @inline(never)
    public func loadHostKey(tpm: TPMSettings) throws(StoreError) -> SecureBytes? {
        guard let root = try session.directory(directory) else { return nil }
        return try StoreKey.read(Self.hostKeyName, in: root.trusted, tpm: tpm)
    }

    /// The host key, created (32 random bytes, root 0600) if it does not exist (in tpm mode it
    /// exists: sealed). Creation is serialised with `flock` on the store directory, so two
    /// enrollments at once cannot each write a different key.
    public func loadOrCreateHostKey(tpm: TPMSettings) throws(StoreError) -> SecureBytes {
        let root = try openRoot()
        if let key = try StoreKey.read(Self.hostKeyName, in: root.trusted, tpm: tpm) { return key }
        let locked: Bool
        do {
            locked = try root.trusted.descriptor.lock(exclusive: true, waitingAtMost: 30)
        } catch {
            throw .system("flock", path: directory, error)
        }
        guard locked else { throw .lockTimeout(path: directory) }
        defer { root.trusted.descriptor.unlock() }
        if let key = try StoreKey.read(Self.hostKeyName, in: root.trusted, tpm: tpm) { return key }
        var key = try SecureBytes(count: PasscodeHasher.keyLength)
        Sodium.fillRandom(&key)
        try key.withBytes { bytes throws(StoreError) in
            try root.trusted.replaceFile(Self.hostKeyName, with: bytes)
        }
        return key
    }

    /// The store directory, created when missing.
    public func openRoot() throws(StoreError) -> StoreSession.Directory {
        // 0755 so helpers can reach pictures/; host.key (0600) and users/ (0700) stay private.
        try session.directory(directory, creatingWith: 0o755)
    }

    /// `users` or `pictures`, created (with the store) when missing.
    private func openSubdirectory(_ name: String, mode: mode_t = 0o700) throws(StoreError) -> StoreSession.Directory {
        try session.subdirectory(name, of: try openRoot(), creatingWith: mode)
    }
}
