import ArgumentParser
import Glibc
import PuffCore
import PuffPlatform
import PuffTPM

/// `puff-enroll tpm enable|disable|status|forget`: the store's key kept by the TPM (tpm mode) or in a
/// root-only file (file mode). docs/admin/protection-at-rest.md.
struct TPMCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tpm",
        abstract: "Keep the host key (and the fleet key) in the TPM, or move it back to a file (root only).",
        discussion: """
        The same key moves, so every enrollment keeps working. The TPM is the one puff.conf's \
        tpm_tcti names (default device:/dev/tpmrm0).
        """,
        subcommands: [Enable.self, Disable.self, Show.self, Forget.self])

    /// The keys a store has: the host key, and the fleet key where its file (or sealed file) is.
    struct Key {
        var label: String
        var path: String
        var handle: UInt32
        var create: Bool
    }

    static func keys(_ options: PuffOptions) -> [Key] {
        let hostKey = options.recordDirectory + "/" + RecordStore.hostKeyName
        // The host key is made here only where it is the store's key (not on a fleet host).
        return [Key(label: "host key", path: hostKey, handle: TPMClient.hostKeyHandle,
                    create: Command.store(options).recordKeyPath == hostKey),
                Key(label: "fleet key", path: options.directory.fleetKeyPath, handle: TPMClient.fleetKeyHandle, create: false)]
    }

    /// The key's directory (nil when it does not exist) handed to `body` with the key's name.
    static func withDirectory<Result>(of key: Key, session: StoreSession,
                                      _ body: (borrowing TrustedDirectory, String) throws -> Result) throws -> Result? {
        guard let (directory, name) = try session.parent(of: key.path) else { return nil }
        return try body(directory.trusted, name)
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal the key in the TPM and remove the clear copy.",
            discussion: """
            The key is sealed in a persistent TPM object (noDA: a wrong passcode never counts \
            against the TPM's dictionary-attack lockout) under the storage primary at \
            0x81000001, at handle 0x81504601 (the fleet key at 0x81504602). Without a backup, a \
            cleared or replaced TPM takes every enrollment with it: keep one offline with --backup.
            """)

        @OptionGroup var store: StoreOptions

        @Flag(help: "Bind the key to PCR 7 (the Secure Boot state) as it reads now.")
        var pcr7 = false

        @Option(help: "Also write the host key to this new file (0600) before the clear copy goes: an offline backup. Not under /etc or /var/lib.")
        var backup: String?

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let options = try store.load()
                if let backup { try TPMCommand.checkBackupPath(backup, options) }
                let session = StoreSession()
                for key in TPMCommand.keys(options) {
                    let outcome = try TPMCommand.withDirectory(of: key, session: session) { directory, name in
                        try KeyMove.enable(name, in: directory, handle: key.handle, pcr7: pcr7, create: key.create,
                                           tpm: options.tpm) { (secret: borrowing SecureBytes) throws(StoreError) in
                            guard let backup, key.handle == TPMClient.hostKeyHandle else { return }
                            try TPMCommand.writeBackup(secret, to: backup)
                        }
                    } ?? .absent
                    switch outcome {
                    case .moved:
                        Command.audit("\(key.label) \(key.path) sealed in the TPM by uid \(getuid()) (puff-enroll tpm enable)")
                        Terminal.say("The \(key.label) is sealed in the TPM; \(key.path) is removed.")
                    case .already:
                        Terminal.say("The \(key.label) is already sealed in the TPM.")
                    case .absent:
                        if key.create { Terminal.say("There is no \(key.label) to seal.") }
                    }
                }
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the key out of the TPM into its root-only file again.",
            discussion: """
            With --restore, the key comes from a backup made by 'tpm enable --backup' instead of \
            the TPM: the way back after the TPM was cleared or replaced.
            """)

        @OptionGroup var store: StoreOptions

        @Option(help: "Take the host key from this backup instead of the TPM (it must be the key that was sealed).")
        var restore: String?

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let options = try store.load()
                let session = StoreSession()
                for key in TPMCommand.keys(options) {
                    let outcome = try TPMCommand.withDirectory(of: key, session: session) { directory, name in
                        try KeyMove.disable(name, in: directory, tpm: options.tpm) { () throws(StoreError) -> SecureBytes? in
                            guard let restore, key.handle == TPMClient.hostKeyHandle else { return nil }
                            return try TPMCommand.readBackup(restore)
                        }
                    } ?? .absent
                    // The key is in its file again: no copy of it stays in the keyring.
                    if outcome == .moved { _ = try? UnsealedKey.forget() }
                    switch outcome {
                    case .moved:
                        Command.audit("\(key.label) \(key.path) moved out of the TPM by uid \(getuid()) (puff-enroll tpm disable)")
                        Terminal.say("The \(key.label) is in \(key.path) again; the TPM's copy is removed.")
                    case .already:
                        Terminal.say("The \(key.label) is already in \(key.path).")
                    case .absent:
                        break
                    }
                }
            }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop the unsealed key this boot's logins share; the next login unseals it again.",
            discussion: """
            The TPM unseals the key at most once a boot: the helper keeps it in root's \
            persistent kernel keyring until the next boot. Forget it after clearing the TPM or \
            changing what PCR 7 measures, to see at once what the next boot will see.
            """)

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let count = try UnsealedKey.forget()
                Terminal.say("Forgot \(count) unsealed key\(count == 1 ? "" : "s").")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Print the mode: tpm, file, or none (no key yet); in fleet mode, the fleet key's.")

        @OptionGroup var store: StoreOptions

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let options = try store.load()
                let location = try TPMCommand.location(TPMCommand.recordKey(options), options)
                Terminal.say(location == .tpm ? "tpm" : location == .file ? "file" : "none")
            }
        }
    }

    /// Where `key` is.
    static func location(_ key: Key, _ options: PuffOptions) throws -> StoreKey.Location {
        try withDirectory(of: key, session: StoreSession()) { directory, name in
            try StoreKey.location(name, in: directory)
        } ?? .none
    }

    /// The key the records are peppered and sealed with, whose place is the mode: the host
    /// key, or in fleet mode the fleet key (a fleet host has no host key).
    static func recordKey(_ options: PuffOptions) -> Key {
        let keys = keys(options), path = Command.store(options).recordKeyPath
        return keys.first { $0.path == path } ?? keys[0]
    }

    /// The line `puff-enroll status` ends with.
    static func modeLine(_ options: PuffOptions) throws -> String {
        let key = recordKey(options)
        switch try location(key, options) {
        case .tpm: return "Key protection: tpm (the \(key.label) is sealed in the TPM, \(options.tpm.tcti))."
        case .file: return "Key protection: file (\(key.path))."
        case .none: return "Key protection: none yet (no \(key.label))."
        }
    }

    /// A backup goes where the administrator says, never where the store's copies would sit.
    static func checkBackupPath(_ path: String, _ options: PuffOptions) throws {
        let directories = ["/etc", "/var/lib", options.recordDirectory, options.stateDirectory]
        guard path.hasPrefix("/"), !path.split(separator: "/").contains("..") else {
            throw Failure(64, "--backup needs an absolute path without '..'")
        }
        for directory in directories where path == directory || path.hasPrefix(directory + "/") {
            throw Failure(64, "--backup \(path): a backup beside the store is no backup (not under \(directory))")
        }
    }

    static func writeBackup(_ key: borrowing SecureBytes, to path: String) throws(StoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else { throw .system("create", path: path, Errno(errno)) }
        defer { close(fd) }
        let written = key.withBytes { bytes in write(fd, bytes.baseAddress, bytes.count) }
        guard written == key.count, fsync(fd) == 0 else {
            let error = Errno(errno)
            unlink(path)
            throw .system("write", path: path, error)
        }
    }

    static func readBackup(_ path: String) throws(StoreError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw .system("open", path: path, Errno(errno)) }
        defer { close(fd) }
        var key = try SecureBytes(count: PasscodeHasher.keyLength + 1)
        let count = key.withMutableBytes { bytes in read(fd, bytes.baseAddress, bytes.count) }
        guard count == PasscodeHasher.keyLength else {
            throw .unsafe(path: path, reason: "not a \(PasscodeHasher.keyLength)-byte key backup")
        }
        return try key.prefix(count)
    }
}
