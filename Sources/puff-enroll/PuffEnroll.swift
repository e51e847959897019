import ArgumentParser
import Glibc
import PuffClient
import PuffCore
import PuffFleet
import PuffPlatform
import PuffTPM

/// `puff-enroll`: enroll and change Puff credentials; inspect and reset lockouts.
@main
struct PuffEnroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "puff-enroll",
        abstract: "Enroll Puff passcodes and manage Puff lockouts.",
        discussion: """
        Exit codes: 0 success; 1 the store could not be read or written; 3 refused (passcode \
        rules, confirmation mismatch, wrong current passcode, locked); 4 unknown user or \
        nothing enrolled; 64 usage error; 77 must be run as root.
        """,
        version: BuildInfo.version,
        subcommands: [Passcode.self, GestureCommand.self, ShowGesture.self, Status.self, Lock.self, Reset.self, Remove.self, TPMCommand.self, KeyringCommand.self]
    )

    /// A first word that is no command (`puff-enroll resett --user bob`) is named as such,
    /// with the nearest command, before the parser would report the options after it as
    /// unknown; then parses and runs.
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        if let word = arguments.first, !word.hasPrefix("-") {
            let names = configuration.subcommands.map { $0._commandName } + ["help"]
            if !names.contains(word) {
                Report.warn("puff-enroll: unknown command '\(LogText.escape(word))'"
                    + (CommandSuggestion.nearest(to: word, among: names).map { "; did you mean '\($0)'?" } ?? "")
                    + " (puff-enroll --help lists the commands)")
                Glibc.exit(64)
            }
        }
        main(nil)
    }
}

/// The command a mistyped word most likely meant.
enum CommandSuggestion {
    /// The name in `names` nearest to `word` (edit distance), if it is near enough to be a
    /// typo (at most 2 edits, or a prefix of the name).
    static func nearest(to word: String, among names: [String]) -> String? {
        let typed = Array(word.lowercased().utf8)
        let scored = names.map { name -> (String, Int) in
            let target = Array(name.utf8)
            if target.starts(with: typed) && !typed.isEmpty { return (name, 0) }
            return (name, distance(typed, target))
        }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
        return best.0
    }

    /// Levenshtein distance.
    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Exit codes documented in `--help`.
enum ExitCodes {
    static let storeFailure: Int32 = 1
    static let refused: Int32 = 3
    static let unknown: Int32 = 4
    static let notRoot: Int32 = 77
}

/// The store overrides shared by every subcommand (the module's `dir=`, `state_dir=`, `conf=`).
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("dir"), help: "Record directory (module option dir=).")
    var recordDirectory: String?

    @Option(name: .customLong("state-dir"), help: "Lockout counter directory (module option state_dir=).")
    var stateDirectory: String?

    @Option(name: .customLong("conf"), help: "Configuration file (module option conf=).")
    var configFile: String?

    @Option(help: "The setuid helper used when not run as root (module option helper=).")
    var helper: String = BuildInfo.helperPath

    /// Loads the options exactly as the module does: defaults, the file, then these overrides.
    func load() throws -> PuffOptions {
        var tokens: [String] = []
        if let configFile { tokens.append("conf=" + configFile) }
        if let recordDirectory { tokens.append("dir=" + recordDirectory) }
        if let stateDirectory { tokens.append("state_dir=" + stateDirectory) }
        do {
            let loaded = try Configuration.load(arguments: tokens)
            for warning in loaded.warnings { Report.warn(warning) }
            if let refusal = loaded.options.keyringRefusal { Report.warn(refusal) }
            return loaded.options
        } catch {
            throw Failure(ExitCodes.storeFailure, "\(error)")
        }
    }
}

/// An error that ends the command with a message and a documented exit code.
struct Failure: Error, CustomStringConvertible {
    let code: Int32
    let message: String

    init(_ code: Int32, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}

/// Common steps of every subcommand.
enum Command {
    /// The store a command run as root works in: the files store, or the directory in fleet
    /// mode, as `StoreRoute.choose` decides; every command after this goes through it.
    static func store(_ options: PuffOptions) -> any StoreBackend {
        let files = FilesStore(options: options)
        return StoreRoute.choose(options, for: .tool(effectiveUID: geteuid())) == .directory ? FleetStore(files) : files
    }

    /// Runs `body`, turning failures into a message on stderr and the documented exit code.
    static func run(_ body: () throws -> Void) throws {
        umask(0o077)
        StoreKey.opener = TPMUnsealer()
        do {
            try Sodium.initialize()
            try body()
        } catch let failure as Failure {
            Report.warn("puff-enroll: \(failure.message)")
            throw ExitCode(failure.code)
        } catch let error as StoreError {
            Report.warn("puff-enroll: \(error)")
            throw ExitCode(ExitCodes.storeFailure)
        }
    }

    /// Refuses non-root callers of the administrators' commands.
    static func requireRoot() throws {
        guard geteuid() == 0 else {
            throw Failure(ExitCodes.notRoot,
                          "must be run as root (ordinary users may run passcode, gesture and status for themselves)")
        }
    }

    /// Whether an ordinary user runs a self-service command: then it goes through the helper
    /// and may only name the caller.
    static func isSelfService(user: String?, store: StoreOptions) throws -> Bool {
        guard getuid() != 0 else { return false }
        if let user, user != (try callerName()) {
            throw Failure(ExitCodes.notRoot, "an ordinary user can only enroll themselves")
        }
        try SelfService.requireDefaultStore(store)
        return true
    }

    /// `name` as a `UserName`, or a clear refusal.
    static func userName(_ name: String) throws -> UserName {
        guard let valid = UserName(name) else {
            throw Failure(ExitCodes.unknown, "'\(LogText.escape(name))' is not a valid user name")
        }
        return valid
    }

    /// The account named `user`, or the caller's own account.
    static func account(_ user: String?) throws -> Account {
        let name = try userName(user ?? callerName()).value
        guard let account = try Account.lookup(name) else {
            throw Failure(ExitCodes.unknown, "no such user '\(LogText.escape(name))'")
        }
        return account
    }

    /// The name of the real uid (not $USER: the environment never decides whose record is used).
    static func callerName() throws -> String {
        guard let caller = Caller.current() else {
            throw Failure(ExitCodes.unknown, "cannot find the calling user in the account database")
        }
        return caller.name.value
    }

    /// Writes a line to syslog (LOG_AUTHPRIV), for administrative actions.
    static func audit(_ message: String) {
        openlog("puff-enroll", LOG_PID, LOG_AUTHPRIV)
        message.withCString { text in
            withVaList([text]) { vsyslog(LOG_NOTICE, "%s", $0) }
        }
        closelog()
    }
}
