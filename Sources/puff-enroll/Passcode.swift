import ArgumentParser
import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

extension PasscodeType: ExpressibleByArgument {}

/// `puff-enroll passcode`: set or change a passcode.
struct Passcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set or change a user's passcode.",
        discussion: """
        The new passcode is read twice without echo from the terminal, or once from standard \
        input with --stdin. Changing an existing passcode asks for the current one, except when \
        root changes another user's. Types: digits4, digits6, numeric (4-64 digits), \
        alphanumeric (6-128 printable ASCII characters).
        """
    )

    @OptionGroup var store: StoreOptions

    @Option(help: "The user to enroll (default: the calling user).")
    var user: String?

    @Option(help: "Passcode type: digits4, digits6, numeric or alphanumeric (default: the current type, else digits6).")
    var type: PasscodeType?

    @Flag(help: "Read the passcode (and the current one first, when asked) as lines from standard input.")
    var stdin = false

    @Flag(help: "Accept a common, date-shaped or trivial PIN such as 1234, or a PIN of 6 digits or fewer for root (administrators only, on purpose; min_passcode still applies).")
    var allowWeak = false

    func run() throws {
        try Command.run {
            if try Command.isSelfService(user: user, store: store) { return try runForSelf() }
            try Command.requireRoot()
            let options = try store.load()
            let account = try Command.account(user)
            let authenticator = Command.store(options)
            let existing = try authenticator.status(of: account).record
            let actingOnOther = account.uid != getuidValue()
            if let stored = existing?.passcode, !actingOnOther {
                try confirmCurrent(authenticator, account: account, type: stored.type)
            }
            let chosenType = type ?? existing?.passcode?.type ?? .digits6
            let newPasscode = try readNew(type: chosenType, minimum: options.minimumPasscode, isRoot: account.uid == 0)
            try authenticator.storePasscode(newPasscode, type: chosenType, for: account)
            Command.audit("passcode of user \(account.name) set (type \(chosenType.rawValue)) by uid \(getuidValue())")
            Terminal.say("Passcode for \(account.name) saved (type \(chosenType.rawValue)).")
        }
    }

    private func confirmCurrent(_ authenticator: any StoreBackend, account: Account, type: PasscodeType) throws {
        guard case .secret(let current) = try Terminal.readSecret(prompt: "Current passcode: ", fromStdin: stdin, what: "current passcode") else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        let subject = try authenticator.subject(for: account.name.value)
        // The check counts like a login: a wrong current passcode is a failed attempt.
        switch try authenticator.attempt(current, for: subject, asProofForChange: true) {
        case .success: return
        case .locked: throw Failure(ExitCodes.refused, "locked after too many failed attempts; ask an administrator")
        case .failure, .notEnrolled, .passcodeRequired: throw Failure(ExitCodes.refused, "the current passcode is wrong")
        }
    }

    /// An ordinary user on their own account, through the helper.
    private func runForSelf() throws {
        // What can be checked is checked before anything is asked: the flags, the type against
        // the policy (the helper's), the proof, and only then the new passcode (issue 32, item 7).
        guard !allowWeak else { throw Failure(ExitCodes.notRoot, "--allow-weak is for administrators") }
        let account = try Command.account(nil)
        let service = SelfService(helper: store.helper)
        let state = try service.query()
        var current: PasscodeType?
        switch state.acceptance {
        case .passcodeOrGesture(let type), .passcodeOnly(let type, _): current = state.hasPasscode ? type : nil
        case .gestureOnly, .refused: current = nil
        }
        let chosenType = type ?? current ?? .digits6
        try service.precheck(type: chosenType)
        let proof = try service.readProof(state, account: account, fromStdin: stdin)
        try service.precheck(type: chosenType, proof: proof)
        let newPasscode = try readNew(type: chosenType, minimum: nil, isRoot: account.uid == 0)
        let typeName = Array(chosenType.rawValue.utf8)
        // Only the helper knows min_passcode; below 6 digits its refusal is most likely this rule.
        let belowFloor = newPasscode.withBytes { PasscodeRules.violation(of: $0, as: chosenType, selfService: true) }
        let likelyRule = belowFloor == .belowSelfServiceMinimum ? belowFloor?.message : nil
        try proof.withBytes { proofBytes in
            try newPasscode.withBytes { newBytes in
                try typeName.withUnsafeBytes { typeBytes in
                    try service.change(.enrollPasscode, frames: [proofBytes, typeBytes, newBytes], likelyRule: likelyRule)
                }
            }
        }
        Terminal.say("Passcode for \(account.name) saved (type \(chosenType.rawValue)).")
    }

    private func readNew(type: PasscodeType, minimum: PasscodeType?, isRoot: Bool) throws -> SecureBytes {
        guard case .secret(let first) = try Terminal.readSecret(prompt: "New passcode (\(type.rawValue)): ", fromStdin: stdin, what: "new passcode") else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        if let violation = first.withBytes({ PasscodeRules.violation(of: $0, as: type, allowWeak: allowWeak, minimum: minimum, isRoot: isRoot) }) {
            throw Failure(ExitCodes.refused, violation.message)
        }
        if !stdin {
            guard case .secret(let second) = try Terminal.readSecret(prompt: "Repeat new passcode: ", fromStdin: false) else {
                throw Failure(ExitCodes.refused, "cancelled")
            }
            guard first.constantTimeEquals(second) else {
                throw Failure(ExitCodes.refused, "the two passcodes differ; nothing was changed")
            }
        }
        return first
    }
}

/// `getuid()` as the store's uid type.
func getuidValue() -> UInt32 { getuid() }
