/// The kind of passcode a user chose. It is not secret: it is stored beside the hash and
/// tells a helper which keypad to show.
public enum PasscodeType: String, CaseIterable, Sendable {
    /// Exactly four digits.
    case digits4
    /// Exactly six digits.
    case digits6
    /// Digits only, of any length within `PasscodeRules.numericLength`.
    case numeric
    /// Printable ASCII (space included), within `PasscodeRules.alphanumericLength`.
    case alphanumeric

    /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
    public init?(rawValue: String) { self.init(bytesOf: rawValue) }

    /// Strength order for `min_passcode`: digits4 < digits6 < numeric (at least 6 digits when
    /// it has to meet digits6 or more) < alphanumeric.
    var rank: Int {
        switch self {
        case .digits4: 0
        case .digits6: 1
        case .numeric: 2
        case .alphanumeric: 3
        }
    }

    /// Whether this type is at least as strong as `minimum`.
    public func meets(_ minimum: PasscodeType) -> Bool { rank >= minimum.rank }

    /// The allowed length in bytes.
    public var lengthRange: ClosedRange<Int> {
        switch self {
        case .digits4: 4...4
        case .digits6: 6...6
        case .numeric: PasscodeRules.numericLength
        case .alphanumeric: PasscodeRules.alphanumericLength
        }
    }
}

/// Why a new passcode is refused at enrollment.
public enum PasscodeRuleViolation: Error, Equatable, Sendable {
    /// Shorter or longer than the type allows.
    case wrongLength(allowed: ClosedRange<Int>)
    /// A numeric type containing something other than `0`–`9`.
    case notDigits
    /// A byte outside printable ASCII.
    case notPrintable
    /// Starts with `puff-gesture:`, which is reserved for serialized gestures.
    case reservedPrefix
    /// One of the PINs people choose most often, or a trivial pattern (all one digit,
    /// a run up or down, a repeated pair or triple).
    case tooCommon
    /// Weaker than the administrator's `min_passcode`.
    case belowMinimum(PasscodeType)
    /// Six digits or fewer for root, whose account anyone with `su` can attack.
    case tooWeakForRoot
    /// Fewer than 6 digits chosen by the user themselves while the administrator set no
    /// `min_passcode`: self-service may not weaken a passcode below the default type.
    case belowSelfServiceMinimum

    /// A message for the person enrolling; it never repeats the passcode.
    public var message: String {
        switch self {
        case .wrongLength(let allowed):
            allowed.lowerBound == allowed.upperBound
                ? "the passcode must be exactly \(allowed.lowerBound) characters long"
                : "the passcode must be \(allowed.lowerBound) to \(allowed.upperBound) characters long"
        case .notDigits: "this passcode type allows digits only"
        case .notPrintable: "the passcode may contain printable ASCII characters only"
        case .reservedPrefix: "a passcode may not start with 'puff-gesture:'"
        case .tooCommon: "this passcode is among the most common ones, looks like a date or follows a trivial pattern; choose another"
        case .belowMinimum(let minimum):
            "the administrator requires at least a \(minimum.rawValue) passcode (min_passcode)"
                + (minimum == .digits6 || minimum == .numeric ? " (numeric ones of 6 digits or more)" : "")
        case .tooWeakForRoot:
            "a passcode of 6 digits or fewer is too weak for root (anyone who can run su can guess at it); choose a longer one or pass --allow-weak"
        case .belowSelfServiceMinimum:
            "you may not choose a passcode of fewer than 6 digits yourself; choose --type digits6 or stronger (an administrator can allow 4 digits with min_passcode = digits4)"
        }
    }
}

/// The enrollment rules for new passcodes.
public enum PasscodeRules {
    /// Lengths allowed for `.numeric`.
    public static let numericLength = 4...64
    /// Lengths allowed for `.alphanumeric`.
    public static let alphanumericLength = 6...128
    /// The prefix that marks a serialized gesture in a conversation reply.
    public static let gesturePrefix = Array("puff-gesture:".utf8)

    /// Four-digit PINs that together make up a large share of real PINs; the all-same,
    /// sequential and repeated-pair patterns are caught by `isTrivialPattern`.
    static let commonPINs: Set<String> = [
        "1004", "2000", "2001", "1010", "1122", "1313", "2580", "0852", "1100", "1984",
        "1999", "2468", "1357", "6969", "4545", "0007", "1230", "0911", "1001", "5683",
        "112233", "123123", "159753", "147258", "123321", "696969", "102030", "101010",
    ]

    /// Checks `passcode` against `type`. `allowWeak` lets an administrator accept a
    /// common or trivial PIN on purpose; the other rules always apply.
    /// `minimum` is the administrator's `min_passcode` (never waived); `isRoot` refuses
    /// passcodes of 6 digits or fewer unless `allowWeak`. `selfService`: the user sets their
    /// own passcode (through the helper); without a `minimum` the floor is then 6 digits, so a
    /// user cannot weaken the passcode an administrator gave them, and only an administrator's
    /// explicit `min_passcode = digits4` lets users choose 4 digits.
    public static func violation(of passcode: some Collection<UInt8>, as type: PasscodeType,
                                 allowWeak: Bool = false, minimum: PasscodeType? = nil,
                                 isRoot: Bool = false, selfService: Bool = false) -> PasscodeRuleViolation? {
        if passcode.starts(with: gesturePrefix) { return .reservedPrefix }
        if let minimum {
            if !type.meets(minimum) { return .belowMinimum(minimum) }
            if type == .numeric, minimum.rank >= PasscodeType.digits6.rank, passcode.count < 6 {
                return .belowMinimum(minimum)
            }
        } else if selfService, !type.meets(.digits6) || (type == .numeric && passcode.count < 6) {
            return .belowSelfServiceMinimum
        }
        for byte in passcode where byte < 0x20 || byte > 0x7e { return .notPrintable }
        guard type.lengthRange.contains(passcode.count) else {
            return .wrongLength(allowed: type.lengthRange)
        }
        let digitsOnly = passcode.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        if type != .alphanumeric && !digitsOnly { return .notDigits }
        if !allowWeak && isWeak(Array(passcode), digitsOnly: digitsOnly) { return .tooCommon }
        if isRoot && !allowWeak && digitsOnly && passcode.count <= 6 { return .tooWeakForRoot }
        return nil
    }

    static func isWeak(_ bytes: [UInt8], digitsOnly: Bool) -> Bool {
        guard let first = bytes.first else { return true }
        if bytes.allSatisfy({ $0 == first }) { return true }
        guard digitsOnly else { return false }
        if commonPINs.contains(String(decoding: bytes, as: UTF8.self)) { return true }
        return isTrivialPattern(bytes) || isDateShaped(bytes)
    }

    /// Four digits that read as a date or a year: MMDD, DDMM, MMYY (any year) and YYYY from
    /// 1900 to 2099 — birthdays and years are among the first guesses of anyone who knows
    /// the user. 1,598 of the 10,000 four-digit PINs.
    static func isDateShaped(_ digits: [UInt8]) -> Bool {
        guard digits.count == 4 else { return false }
        let values = digits.map { Int($0) - 0x30 }
        let first = values[0] * 10 + values[1], second = values[2] * 10 + values[3]
        let year = first * 100 + second
        if (1900...2099).contains(year) { return true }
        let days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        func isDay(_ day: Int, ofMonth month: Int) -> Bool { (1...12).contains(month) && (1...days[month - 1]).contains(day) }
        if isDay(second, ofMonth: first) || isDay(first, ofMonth: second) { return true }
        return (1...12).contains(first)  // MMYY
    }

    /// Runs up or down (`1234`, `9876`, `7890`), and short units repeated (`1212`, `123123`).
    static func isTrivialPattern(_ digits: [UInt8]) -> Bool {
        func isRun(step: Int) -> Bool {
            var previous = Int(digits[0])
            for digit in digits.dropFirst() {
                let value = Int(digit)
                guard (previous - 0x30 + step + 10) % 10 == value - 0x30 else { return false }
                previous = value
            }
            return true
        }
        if isRun(step: 1) || isRun(step: -1) { return true }
        for unit in 2...3 where digits.count % unit == 0 && digits.count > unit {
            var repeated = true
            for index in unit..<digits.count where digits[index] != digits[index - unit] {
                repeated = false
                break
            }
            if repeated { return true }
        }
        return false
    }
}
