import Glibc
import PuffCore

/// The root-only store of user records and the host key under `dir` (default `/etc/puff`):
///
///     /etc/puff/            root 0700 (or 0755), not group/other-writable
///     /etc/puff/host.key    32 random bytes, root 0600: the pepper, kept apart from the records
///     /etc/puff/puff.conf   optional configuration, root, not group/other-writable
///     /etc/puff/users/NAME  one record per user, root 0600
public struct RecordStore: Sendable {
    /// The store directory.
    public let directory: String

    /// A store rooted at `directory`.
    public init(directory: String) { self.directory = directory }

    static let usersDirectory = "users"
    static let picturesDirectory = "pictures"

    /// The path of `name`'s record, for log lines.
    public func recordPath(_ name: UserName) -> String { directory + "/" + Self.usersDirectory + "/" + name.value }

    /// The name a new picture waits under until its record is saved (a leading `.` can never
    /// be a user name, so it never collides with a picture).
    static func pendingPictureName(_ name: UserName) -> String { ".next-" + name.value }

    /// Pictures are not secret: helpers running as the user read them to draw on, so
    /// `pictures/` is 0755 and the files 0644 (records stay 0600 in a 0700 directory).
    ///
    /// Stores the picture of a gesture enrollment that is not committed yet: `settlePicture`
    /// moves it into place once the record naming its digest is saved. A process killed in
    /// between leaves the old record with the old picture, or the new record whose picture the
    /// next `settlePicture` (every login runs one) moves into place: never a record beside a
    /// picture it was not drawn on.
    public func stagePicture(_ bytes: [UInt8], for name: UserName) throws(StoreError) {
        let root = try openRoot(create: true)
        let pictures = try root.subdirectory(Self.picturesDirectory, create: true, mode: 0o755)
        // Temp pictures (up to 32 MiB each) that killed enrollments of older versions left
        // behind; this version's writes are unnamed until they are complete (`O_TMPFILE`).
        pictures.removeLeftovers(of: Self.pendingPictureName(name))
        pictures.removeLeftovers(of: name.value)
        try pictures.replaceFile(Self.pendingPictureName(name), with: bytes, mode: 0o644)
    }

    /// Finishes a staged picture: moved into place when its digest is `expectedSHA256` (the
    /// record's). One that does not match is left alone (its enrollment never committed, or is
    /// still running; the next enrollment replaces it). Nothing staged costs one openat.
    public func settlePicture(for name: UserName, expectedSHA256: String) throws(StoreError) {
        let pictures: TrustedDirectory
        do {
            pictures = try TrustedDirectory(directory + "/" + Self.picturesDirectory)
        } catch {
            if TrustedDirectory.isMissing(error) { return }
            throw error
        }
        let pending = Self.pendingPictureName(name)
        guard let bytes = try pictures.readFile(pending, .rootWritable(maximumSize: Self.maximumPictureSize)) else { return }
        guard SHA256.hex(bytes) == expectedSHA256 else { return }
        do {
            try pictures.renameFile(pending, to: name.value)
        } catch {
            // A login and the enrollment itself may both settle; the second finds it done.
            if case .system(_, _, let errno) = error, errno.rawValue == ENOENT { return }
            throw error
        }
    }

    /// The stored picture of `name` (regular, root-owned, not writable by others, ≤ 32 MiB).
    public func loadPicture(_ name: UserName) throws(StoreError) -> [UInt8]? {
        let pictures: TrustedDirectory
        do {
            pictures = try TrustedDirectory(directory + "/" + Self.picturesDirectory)
        } catch {
            if TrustedDirectory.isMissing(error) { return nil }
            throw error
        }
        return try pictures.readFile(name.value, .rootWritable(maximumSize: Self.maximumPictureSize))
    }

    /// Largest picture accepted.
    public static let maximumPictureSize = 32 << 20
    static let hostKeyName = "host.key"

    /// The user's record, or `nil` only when there is none (ENOENT anywhere on the path).
    /// Any other problem — permissions, I/O, format, a record for another uid — throws.
    public func load(_ account: Account) throws(StoreError) -> UserRecord? {
        let users: TrustedDirectory
        do {
            users = try TrustedDirectory(directory + "/" + Self.usersDirectory)
        } catch {
            if TrustedDirectory.isMissing(error) { return nil }
            throw error
        }
        let name = account.name.value
        guard let bytes = try users.readFile(name, .rootPrivate(maximumSize: UserRecord.maximumEncodedSize)) else {
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
        let users = try openUsers(create: true)
        users.removeLeftovers(of: record.user.value)
        try users.replaceFile(record.user.value, with: record.encoded())
    }

    /// Deletes the user's record; `false` when there was none.
    public func remove(_ name: UserName) throws(StoreError) -> Bool {
        let users: TrustedDirectory
        do {
            users = try openUsers(create: false)
        } catch {
            if TrustedDirectory.isMissing(error) { return false }
            throw error
        }
        return try users.removeFile(name.value)
    }

    /// Removes `name`'s picture and a staged one; `false` when there was neither.
    public func removePictures(_ name: UserName) throws(StoreError) -> Bool {
        let pictures: TrustedDirectory
        do {
            pictures = try TrustedDirectory(directory + "/" + Self.picturesDirectory)
        } catch {
            if TrustedDirectory.isMissing(error) { return false }
            throw error
        }
        let picture = try pictures.removeFile(name.value)
        let staged = try pictures.removeFile(Self.pendingPictureName(name))
        return picture || staged
    }

    /// The names that have a record (temp files and anything that is not a user name are skipped).
    public func enrolledNames() throws(StoreError) -> [UserName] {
        let users: TrustedDirectory
        do {
            users = try openUsers(create: false)
        } catch {
            if TrustedDirectory.isMissing(error) { return [] }
            throw error
        }
        do {
            return try users.descriptor.entries().compactMap(UserName.init).sorted { $0.value < $1.value }
        } catch {
            throw .system("readdir", path: users.path, error)
        }
    }

    /// The host key, or `nil` when it does not exist yet.
    public func loadHostKey() throws(StoreError) -> SecureBytes? {
        let root: TrustedDirectory
        do {
            root = try TrustedDirectory(directory)
        } catch {
            if TrustedDirectory.isMissing(error) { return nil }
            throw error
        }
        return try Self.readHostKey(in: root)
    }

    /// The host key, created (32 random bytes, root 0600) if it does not exist. Creation is
    /// serialised with `flock` on the store directory, so two enrollments at once cannot
    /// each write a different key.
    public func loadOrCreateHostKey() throws(StoreError) -> SecureBytes {
        let root = try openRoot(create: true)
        if let key = try Self.readHostKey(in: root) { return key }
        let locked: Bool
        do {
            locked = try root.descriptor.lock(exclusive: true, waitingAtMost: 30)
        } catch {
            throw .system("flock", path: directory, error)
        }
        guard locked else { throw .lockTimeout(path: directory) }
        if let key = try Self.readHostKey(in: root) { return key }
        var key = try SecureBytes(count: PasscodeHasher.keyLength)
        Sodium.fillRandom(&key)
        try key.withBytes { bytes throws(StoreError) in
            try root.replaceFile(Self.hostKeyName, with: bytes)
        }
        return key
    }

    private static func readHostKey(in root: borrowing TrustedDirectory) throws(StoreError) -> SecureBytes? {
        let path = root.path + "/" + hostKeyName
        let file: FileDescriptor
        do {
            file = try root.descriptor.open(hostKeyName, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error == .noEntry { return nil }
            if error.rawValue == ELOOP { throw .unsafe(path: path, reason: "symlink") }
            throw .system("open", path: path, error)
        }
        try TrustedDirectory.checkFile(file, path: path, .rootPrivate(maximumSize: PasscodeHasher.keyLength))
        // Read straight into wiped memory; one extra byte detects a file of the wrong size.
        var key = try SecureBytes(count: PasscodeHasher.keyLength + 1)
        let raw = file.rawValue
        let result: Result<Int, Errno> = key.withMutableBytes { buffer in
            do throws(Errno) {
                return .success(try FileDescriptor.read(raw, into: buffer))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let count) = result else {
            if case .failure(let error) = result { throw .system("read", path: path, error) }
            throw .system("read", path: path, Errno(EIO))
        }
        _ = file.rawValue  // keeps the descriptor open until the read is done
        guard count == PasscodeHasher.keyLength else { throw .unsafe(path: path, reason: "not a \(PasscodeHasher.keyLength)-byte key") }
        return try key.prefix(PasscodeHasher.keyLength)
    }

    private func openRoot(create: Bool) throws(StoreError) -> TrustedDirectory {
        if create {
            // 0755 so helpers can reach pictures/; host.key (0600) and users/ (0700) stay private.
            let made = directory.withCString { mkdir($0, 0o755) }
            if made != 0 && errno != EEXIST { throw .system("mkdir", path: directory, Errno.current) }
            let root = try TrustedDirectory(directory)
            if made == 0 { try root.setMode(0o755) }
            return root
        }
        return try TrustedDirectory(directory)
    }

    private func openUsers(create: Bool) throws(StoreError) -> TrustedDirectory {
        let root = try openRoot(create: create)
        return try root.subdirectory(Self.usersDirectory, create: create)
    }
}
