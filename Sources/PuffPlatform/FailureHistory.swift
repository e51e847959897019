import Glibc
import PuffCore

/// The latest failures of each user, for `puff-enroll status --user` (like `faillock --user`):
/// when, through which service, from which terminal and remote host. It is informational: the
/// lockout reads only the counters, and a history that cannot be written never changes an
/// outcome.
///
/// One file per user under `state_dir/.history/` (a name no user can have), root 0600, at most
/// `capacity` lines of space-separated escaped fields; writers take the directory's `flock`.
public struct FailureHistory {
    /// One failure.
    public struct Entry: Equatable, Sendable {
        /// Wall-clock seconds.
        public var time: Int64
        /// The PAM service, terminal, remote host and remote user ("" when PAM had none).
        public var service: String, tty: String, rhost: String, ruser: String
        /// The counter's number for the attempt (`Tally.serial`), by which a failure taken back
        /// is removed; 0 in lines written before it was kept.
        public var serial: UInt64

        /// An entry; the texts are escaped when written.
        public init(time: Int64, service: String, tty: String, rhost: String, ruser: String, serial: UInt64 = 0) {
            (self.time, self.service, self.tty, self.rhost, self.ruser, self.serial) = (time, service, tty, rhost, ruser, serial)
        }
    }

    /// The state directory.
    public let stateDirectory: String
    /// How long a writer waits for another.
    public let lockWaitSeconds: Int64
    /// The session given at creation; without one, every call opens the state directory anew (a
    /// long-lived value then sees a directory replaced or made unsafe meanwhile).
    private let given: StoreSession?
    /// What this call holds open.
    var session: StoreSession { given ?? StoreSession() }
    /// Lines kept per user.
    public static let capacity = 10
    static let directoryName = ".history"
    static let maximumSize = 8192

    /// A history under `stateDirectory`.
    public init(stateDirectory: String, lockWaitSeconds: Int64, session: StoreSession? = nil) {
        self.stateDirectory = stateDirectory
        self.lockWaitSeconds = lockWaitSeconds
        self.given = session
    }

    /// Appends `entry` to `name`'s history, dropping the oldest beyond `capacity`. Nothing is
    /// waited for on disk: a crash may lose the entry (or, on some file systems, the file's
    /// lines), never a count.
    @inline(never)
    public func record(_ entry: Entry, for name: UserName) throws(StoreError) {
        try append(entry, to: name.value)
    }

    /// `record` to a history no user has (`.decoy`): the same work for a discreet service's
    /// refusal that counted nothing (`LockoutStore.writeDecoy`).
    public func writeDecoy(_ entry: Entry) throws(StoreError) {
        try append(entry, to: ".decoy")
    }

    private func append(_ entry: Entry, to file: String) throws(StoreError) {
        guard let state = try session.directory(stateDirectory) else {
            throw .system("open", path: stateDirectory, .noEntry)
        }
        let history = try session.subdirectory(Self.directoryName, of: state, creatingWith: 0o700)
        try withLock(history.trusted) { () throws(StoreError) in
            var lines = Self.lines(try history.trusted.readFile(file, .rootPrivate(maximumSize: Self.maximumSize)) ?? [])
            lines.append(Self.line(entry))
            let kept = lines.suffix(Self.capacity).joined(separator: "\n") + "\n"
            try history.trusted.replaceFile(file, with: Array(kept.utf8), mode: 0o600, durability: .unsynced)
        }
    }

    /// Removes the failure numbered `serial` from `name`'s history: `authsucc` took it back
    /// (the system password was typed at Puff's prompt), so it is no failure to list. `false`
    /// when the history has no such line.
    @inline(never)
    public func forget(serial: UInt64, for name: UserName) throws(StoreError) -> Bool {
        guard serial > 0, let state = try session.directory(stateDirectory) else { return false }
        let history = try session.subdirectory(Self.directoryName, of: state, creatingWith: 0o700)
        var removed = false
        try withLock(history.trusted) { () throws(StoreError) in
            guard let bytes = try history.trusted.readFile(name.value, .rootPrivate(maximumSize: Self.maximumSize)) else { return }
            let lines = Self.lines(bytes)
            let kept = lines.filter { Self.entry($0)?.serial != serial }
            guard kept.count != lines.count else { return }
            removed = true
            let text = kept.isEmpty ? "" : kept.joined(separator: "\n") + "\n"
            try history.trusted.replaceFile(name.value, with: Array(text.utf8), mode: 0o600, durability: .unsynced)
        }
        return removed
    }

    /// `name`'s latest failures, oldest first (empty when there is no history).
    public func entries(for name: UserName) throws(StoreError) -> [Entry] {
        guard let history = try session.directory(stateDirectory + "/" + Self.directoryName) else { return [] }
        let bytes = try history.trusted.readFile(name.value, .rootPrivate(maximumSize: Self.maximumSize)) ?? []
        return Self.lines(bytes).compactMap(Self.entry)
    }

    /// Removes `name`'s history; `false` when there was none.
    public func remove(_ name: UserName) throws(StoreError) -> Bool {
        guard let history = try session.directory(stateDirectory + "/" + Self.directoryName) else { return false }
        return try history.trusted.removeFile(name.value)
    }

    private func withLock(_ directory: borrowing TrustedDirectory, _ body: () throws(StoreError) -> Void) throws(StoreError) {
        let locked: Bool
        do {
            locked = try directory.descriptor.lock(exclusive: true, waitingAtMost: lockWaitSeconds)
        } catch {
            throw .system("flock", path: directory.path, error)
        }
        guard locked else { throw .lockTimeout(path: directory.path) }
        // The directory stays open in the session: its lock ends here, not when it closes.
        defer { directory.descriptor.unlock() }
        try body()
    }

    static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).splitBytes(at: UInt8(ascii: "\n")).map(String.init)
    }

    static func line(_ entry: Entry) -> String {
        func field(_ text: String) -> String { text.isEmpty ? "-" : LogText.escapeField(text.utf8, limit: 128) }
        let line = "\(entry.time) \(field(entry.service)) \(field(entry.tty)) \(field(entry.rhost)) \(field(entry.ruser))"
        return entry.serial == 0 ? line : line + " \(entry.serial)"
    }

    static func entry(_ line: String) -> Entry? {
        let fields = line.splitBytes(at: UInt8(ascii: " "), omittingEmptySubsequences: false).map(String.init)
        // Five fields, or six with the attempt's number (written since failures can be taken back).
        guard fields.count == 5 || fields.count == 6, let time = Int64(fields[0]), time >= 0 else { return nil }
        var serial: UInt64 = 0
        if fields.count == 6 {
            guard let number = UInt64(canonicalDecimal: fields[5]) else { return nil }
            serial = number
        }
        func text(_ field: String) -> String { field.sameBytes(as: "-") ? "" : field }
        return Entry(time: time, service: text(fields[1]), tty: text(fields[2]), rhost: text(fields[3]), ruser: text(fields[4]),
                     serial: serial)
    }
}
