/// What a conversation prompt asks for, read by the rules of docs/dev/prompt-contract.md: the
/// parser every helper that answers Puff's prompts shares (`puff-pad login`, `puff-lock`).
public enum PuffPrompt: Equatable, Sendable {
    /// `Puff passcode or gesture [TYPE]: ` (`nil` for a TYPE this pad does not know, or for
    /// `Puff passcode or gesture: ` without a TYPE).
    case passcodeOrGesture(PasscodeType?)
    /// `Puff passcode [TYPE]: `
    case passcodeOnly(PasscodeType?)
    /// `Puff gesture: `
    case gestureOnly
    /// A prompt from another module in the stack: answered with typed text.
    case foreign(String)

    /// Reads a prompt. A prompt is Puff's when it starts with `Puff ` and ends with `: `; a
    /// Puff prompt of an unknown shape offers both the passcode and the gesture.
    public init(_ text: String) {
        guard text.hasPrefix("Puff "), text.hasSuffix(": ") else {
            self = .foreign(text)
            return
        }
        let body = text.dropFirst("Puff ".count).dropLast(": ".count)
        if body == "gesture" {
            self = .gestureOnly
        } else if body == "passcode or gesture" {
            // A root-run service whose caller is not the user names no keypad.
            self = .passcodeOrGesture(nil)
        } else if body.hasPrefix("passcode or gesture [") && body.hasSuffix("]") {
            self = .passcodeOrGesture(Self.type(body.dropFirst("passcode or gesture [".count).dropLast()))
        } else if body.hasPrefix("passcode [") && body.hasSuffix("]") {
            self = .passcodeOnly(Self.type(body.dropFirst("passcode [".count).dropLast()))
        } else {
            self = .passcodeOrGesture(nil)
        }
    }

    private static func type(_ keypad: Substring) -> PasscodeType? {
        PasscodeType.allCases.first { $0.keypad == keypad }
    }

    /// Whether the user may answer with a passcode.
    public var acceptsPasscode: Bool {
        switch self {
        case .passcodeOrGesture, .passcodeOnly: true
        case .gestureOnly, .foreign: false
        }
    }

    /// Whether the user may answer with a gesture.
    public var acceptsGesture: Bool {
        switch self {
        case .passcodeOrGesture, .gestureOnly: true
        case .passcodeOnly, .foreign: false
        }
    }
}

// The texts the module sends, next to the parser that reads them (docs/dev/prompt-contract.md).
extension Acceptance {
    /// The conversation prompt where the caller is the user (their own locker or pad, su or
    /// sudo to themselves).
    public var prompt: String {
        switch self {
        case .passcodeOrGesture(let type): "Puff passcode or gesture [\(type.keypad)]: "
        case .passcodeOnly(let type, _): "Puff passcode [\(type.keypad)]: "
        case .gestureOnly, .refused: "Puff gesture: "
        }
    }

    /// The prompt of a root-run service whose caller is not the user (su to another
    /// account, sshd, login): the same for every account, so it names no keypad.
    public static let discreetPrompt = "Puff passcode or gesture: "
}

extension PasscodeType {
    /// The keypad name in the prompt contract.
    public var keypad: String {
        switch self {
        case .digits4: "4 digits"
        case .digits6: "6 digits"
        case .numeric: "digits"
        case .alphanumeric: "text"
        }
    }
}
