import PuffCore
import Testing

@Suite("PasscodeRules")
struct PasscodeRulesTests {
    private func check(_ passcode: String, _ type: PasscodeType, allowWeak: Bool = false) -> PasscodeRuleViolation? {
        PasscodeRules.violation(of: Array(passcode.utf8), as: type, allowWeak: allowWeak)
    }

    @Test("each type's lengths at the bounds", arguments: [
        (PasscodeType.digits4, 3, false), (.digits4, 4, true), (.digits4, 5, false),
        (.digits6, 5, false), (.digits6, 6, true), (.digits6, 7, false),
        (.numeric, 3, false), (.numeric, 4, true), (.numeric, 64, true), (.numeric, 65, false),
        (.alphanumeric, 5, false), (.alphanumeric, 6, true), (.alphanumeric, 128, true), (.alphanumeric, 129, false),
    ])
    func lengthBounds(type: PasscodeType, length: Int, accepted: Bool) {
        // A non-trivial digit sequence of the wanted length: 5839 2716 0493 ...
        let pattern = Array("58392716049".utf8)
        let passcode = (0..<length).map { pattern[$0 % pattern.count] }
        let result = PasscodeRules.violation(of: passcode, as: type)
        if accepted {
            #expect(result == nil)
        } else {
            #expect(result == .wrongLength(allowed: type.lengthRange))
        }
    }

    @Test("the type's length ranges")
    func lengthRanges() {
        #expect(PasscodeType.digits4.lengthRange == 4...4)
        #expect(PasscodeType.digits6.lengthRange == 6...6)
        #expect(PasscodeType.numeric.lengthRange == 4...64)
        #expect(PasscodeType.alphanumeric.lengthRange == 6...128)
    }

    @Test("numeric types refuse anything but digits", arguments: [
        ("58a9", PasscodeType.digits4), ("5 39", .digits4), ("60491x", .digits6), ("+60491", .digits6),
        ("5839.1", .numeric), ("-5839", .numeric),
    ])
    func notDigits(passcode: String, type: PasscodeType) {
        #expect(check(passcode, type) == .notDigits)
    }

    @Test("bytes outside printable ASCII are refused", arguments: [
        [UInt8]("abc\tdefg".utf8), [0x61, 0x62, 0x63, 0x7f, 0x64, 0x65, 0x66], [0x61, 0x62, 0x63, 0x80, 0x64, 0x65, 0x66],
        [UInt8]("pässwort".utf8), [0x61, 0x62, 0x00, 0x63, 0x64, 0x65], [UInt8]("abcdef\n".utf8),
    ])
    func notPrintable(passcode: [UInt8]) {
        #expect(PasscodeRules.violation(of: passcode, as: .alphanumeric) == .notPrintable)
        #expect(PasscodeRules.violation(of: passcode, as: .alphanumeric, allowWeak: true) == .notPrintable)
    }

    @Test("a control byte in a numeric passcode is reported as not printable")
    func controlInDigits() {
        #expect(PasscodeRules.violation(of: [0x35, 0x38, 0x09, 0x39], as: .digits4) == .notPrintable)
    }

    @Test("the gesture prefix is reserved", arguments: [
        ("puff-gesture:abc", PasscodeType.alphanumeric), ("puff-gesture:", .alphanumeric),
        ("puff-gesture:1234", .numeric), ("puff-gesture:x", .digits4),
    ])
    func reservedPrefix(passcode: String, type: PasscodeType) {
        #expect(check(passcode, type) == .reservedPrefix)
        #expect(check(passcode, type, allowWeak: true) == .reservedPrefix)
    }

    @Test("a passcode merely containing the prefix is fine")
    func prefixElsewhere() {
        #expect(check("my puff-gesture: idea", .alphanumeric) == nil)
        #expect(check("puff-gesture", .alphanumeric) == nil)
    }

    @Test("common and trivial PINs are refused unless allowWeak", arguments: [
        ("1234", PasscodeType.digits4), ("0000", .digits4), ("1111", .digits4), ("1212", .digits4),
        ("4321", .digits4), ("7890", .digits4), ("2580", .digits4), ("9876", .digits4),
        ("123456", .digits6), ("121212", .digits6), ("123123", .digits6), ("654321", .digits6), ("000000", .digits6),
        ("1234", .numeric), ("2580", .numeric), ("12345678", .numeric), ("123456", .alphanumeric), ("aaaaaa", .alphanumeric),
    ])
    func tooCommon(passcode: String, type: PasscodeType) {
        #expect(check(passcode, type) == .tooCommon)
        #expect(check(passcode, type, allowWeak: true) == nil)
    }

    @Test("ordinary passcodes are accepted", arguments: [
        ("5839", PasscodeType.digits4), ("604917", .digits6), ("5839", .numeric), ("60491728", .numeric),
        ("correct horse", .alphanumeric), ("Tr0ub4dor&3", .alphanumeric), ("      x", .alphanumeric),
    ])
    func accepted(passcode: String, type: PasscodeType) {
        #expect(check(passcode, type) == nil)
    }

    @Test("self-service may not go below 6 digits unless the administrator set min_passcode")
    func selfServiceFloor() {
        func selfService(_ passcode: String, _ type: PasscodeType, minimum: PasscodeType? = nil) -> PasscodeRuleViolation? {
            PasscodeRules.violation(of: Array(passcode.utf8), as: type, minimum: minimum, selfService: true)
        }
        #expect(selfService("5839", .digits4) == .belowSelfServiceMinimum)
        #expect(selfService("5839", .numeric) == .belowSelfServiceMinimum)
        #expect(selfService("58391", .numeric) == .belowSelfServiceMinimum)
        #expect(selfService("583917", .numeric) == nil)
        #expect(selfService("604917", .digits6) == nil)
        #expect(selfService("Tr0ub4dor&3", .alphanumeric) == nil)
        // The administrator's explicit choice decides, either way.
        #expect(selfService("5839", .digits4, minimum: .digits4) == nil)
        #expect(selfService("5839", .numeric, minimum: .digits4) == nil)
        #expect(selfService("604917", .digits6, minimum: .alphanumeric) == .belowMinimum(.alphanumeric))
        // An administrator enrolling someone is not self-service.
        #expect(check("5839", .digits4) == nil)
        #expect(!PasscodeRuleViolation.belowSelfServiceMinimum.message.contains("5839"))
    }

    @Test("the messages never repeat the passcode and name the lengths")
    func messages() {
        #expect(PasscodeRuleViolation.wrongLength(allowed: 4...4).message == "the passcode must be exactly 4 characters long")
        #expect(PasscodeRuleViolation.wrongLength(allowed: 6...128).message == "the passcode must be 6 to 128 characters long")
    }
}
