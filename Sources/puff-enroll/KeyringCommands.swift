import ArgumentParser
import Glibc
import PuffCore
import PuffPlatform

/// `puff-enroll keyring status|forget`: the copy of a user's system password that a passcode
/// login hands on to the login keyring (`keyring = yes`; docs/admin/protection-at-rest.md).
struct KeyringCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keyring",
        abstract: "Show or drop the sealed copy of a user's system password (root only).",
        discussion: """
        With keyring = yes in puff.conf, the system password proven at a login or a password \
        change is kept sealed to the user's Puff passcode, and a passcode login hands it on to \
        pam_gnome_keyring and pam_kwallet5. Only the passcode (with the store's key) opens it.
        """,
        subcommands: [Forget.self, Show.self])

    /// One line about `account`'s copy, for `status` and `keyring status`.
    static func line(_ options: PuffOptions, _ account: Account, _ record: UserRecord?) throws -> String {
        let copies = KeyringStore(directory: options.recordDirectory, session: StoreSession())
        let name = account.name.value
        guard let copy = try copies.copy(of: account) else {
            return "Keyring: no copy of \(name)'s system password is kept" + (options.keyring ? "." : " (keyring is off).")
        }
        let current = record?.passcode?.keyring.map { copy.sealedTo.sameBytes(as: $0.publicKey) } ?? false
        return "Keyring: \(name)'s system password is kept, sealed to the passcode, since \(Time.format(copy.captured))"
            + (current ? "." : " (stale: sealed to an earlier passcode; the next password login replaces it).")
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Whether a copy is kept, and since when.")

        @OptionGroup var store: StoreOptions

        @Option(help: "The user (default: the calling user).")
        var user: String?

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let options = try store.load()
                let account = try Command.account(user)
                let record = try RecordStore(directory: options.recordDirectory).load(account)
                Terminal.say(try KeyringCommand.line(options, account, record))
            }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop the user's copy (the next password login keeps a new one while keyring = yes).")

        @OptionGroup var store: StoreOptions

        @Option(help: "The user (default: the calling user).")
        var user: String?

        func run() throws {
            try Command.run {
                try Command.requireRoot()
                let options = try store.load()
                let name = try Command.userName(user ?? Command.callerName())
                let forgotten = try KeyringStore(directory: options.recordDirectory, session: StoreSession()).forget(name)
                guard forgotten else { throw Failure(ExitCodes.unknown, "no copy of \(name)'s system password is kept") }
                Command.audit("keyring copy of user \(name) dropped by uid \(getuidValue())")
                Terminal.say("The copy of \(name)'s system password is dropped.")
            }
        }
    }
}
