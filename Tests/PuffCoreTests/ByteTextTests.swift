import PuffCore
import Testing

/// Text compared as bytes (Sources/PuffCore/ByteText.swift), against Swift's own `==`, which
/// follows Unicode canonical equivalence.
@Suite("ByteText")
struct ByteTextTests {
    /// Pairs Swift's `==` calls equal although their bytes differ.
    static let equivalentPairs: [(String, String)] = [
        ("caf\u{E9}", "cafe\u{301}"),  // composed é, and e with a combining acute accent
        ("Kim", "\u{212A}im"),  // the Kelvin sign decomposes to "K"
        ("a;b", "a\u{37E}b"),  // the Greek question mark decomposes to ";"
    ]

    @Test("canonically equivalent strings are not the same bytes")
    func equivalentIsNotSame() {
        for (left, right) in Self.equivalentPairs {
            #expect(left == right, "the premise: Swift's == calls them equal")
            #expect(!left.sameBytes(as: right))
            #expect(!right.sameBytes(as: left))
            #expect(!left[...].sameBytes(as: right))
            #expect(!Optional(left).sameBytes(as: right))
            #expect(!right.hasBytePrefix(left))
            #expect(left.sameBytes(as: left) && right.sameBytes(as: String(right)))
        }
    }

    @Test("equal bytes, prefixes and literals")
    func sameBytes() {
        #expect("puff".sameBytes(as: "puff"))
        #expect("".sameBytes(as: ""))
        #expect(!"puff".sameBytes(as: "puf"))
        #expect(!"puf".sameBytes(as: "puff"))
        let literal: StaticString = "passcode-required"
        #expect("passcode-required".sameBytes(as: literal))
        #expect(!"passcode-require".sameBytes(as: literal))
        #expect("x".sameBytes(as: "x" as StaticString))  // a one-scalar literal is stored as a scalar
        #expect("\u{E9}".sameBytes(as: "\u{E9}" as StaticString) && !"e\u{301}".sameBytes(as: "\u{E9}" as StaticString))
        #expect("ldap://host".hasBytePrefix("ldap://"))
        #expect(!"ldaps://host".hasBytePrefix("ldap://"))
        #expect("abc".hasBytePrefix(""))
        #expect(Optional<String>.none.sameBytes(as: nil))
        #expect(!Optional("a").sameBytes(as: nil) && !Optional<String>.none.sameBytes(as: "a"))
    }

    @Test("a split cuts at every separator byte, also before a combining mark")
    func split() {
        // As Characters, "/\u{301}" is one character that is not "/", so it does not cut there.
        #expect("a/\u{301}b".split(separator: "/").count == 1)
        #expect("a/\u{301}b".splitBytes(at: UInt8(ascii: "/")) == ["a", "\u{301}b"])
        #expect("/a//b/".splitBytes(at: UInt8(ascii: "/")) == ["a", "b"])
        #expect("/a//b/".splitBytes(at: UInt8(ascii: "/"), omittingEmptySubsequences: false) == ["", "a", "", "b", ""])
        #expect("".splitBytes(at: UInt8(ascii: ","), omittingEmptySubsequences: false) == [""])
        #expect("caf\u{E9},x"[...].splitBytes(at: UInt8(ascii: ",")) == ["caf\u{E9}", "x"])
    }

    @Test("enums of keys and wire words match their names by bytes")
    func enumsMatchByBytes() {
        #expect(PasscodeType(rawValue: "digits6") == .digits6)
        #expect(PasscodeType(rawValue: "digits6\u{301}") == nil)
        #expect(PasscodeType(rawValue: "Digits6") == nil)
        #expect(HelperReport.Outcome(rawValue: "not-enrolled") == .notEnrolled)
        #expect(HelperOperation(rawValue: "service-take-back") == .serviceTakeBack)
        #expect(HelperOperation(rawValue: "query ") == nil)
        #expect(DirectorySettings.Backend(rawValue: "ldap") == .ldap)
        for type in PasscodeType.allCases { #expect(PasscodeType(rawValue: type.rawValue) == type) }
        for outcome in HelperReport.Outcome.allCases { #expect(HelperReport.Outcome(rawValue: outcome.rawValue) == outcome) }
        for operation in HelperOperation.allCases { #expect(HelperOperation(rawValue: operation.rawValue) == operation) }
    }

    @Test("user names, stored factors and tallies compare their text by bytes")
    func valuesCompareByBytes() {
        #expect(UserName("alice") == UserName("alice"))
        #expect(UserName("alice") != UserName("alicf"))
        #expect(Set([UserName("alice")!, UserName("alice")!, UserName("bob")!]).count == 2)
        let hash = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g"
        #expect(StoredPasscode(type: .digits6, hash: hash) == StoredPasscode(type: .digits6, hash: hash))
        #expect(StoredPasscode(type: .digits6, hash: hash) != StoredPasscode(type: .digits4, hash: hash))
        #expect(StoredPasscode(type: .digits6, hash: hash) != StoredPasscode(type: .digits6, hash: hash + "x"))
        var tally = Tally(failures: 2)
        var other = tally
        #expect(tally == other)
        tally.passcodeBoot = "caf\u{E9}"
        other.passcodeBoot = "cafe\u{301}"
        #expect(tally != other)
        other.passcodeBoot = "caf\u{E9}"
        #expect(tally == other)
        other.serial = 1
        #expect(tally != other)
    }

    @Test("canonical decimals: what String(value) writes, nothing else, within the type")
    func canonicalDecimals() {
        #expect(UInt32(canonicalDecimal: "0") == 0)
        #expect(UInt32(canonicalDecimal: "4294967295") == UInt32.max)
        #expect(UInt64(canonicalDecimal: "18446744073709551615") == UInt64.max)
        #expect(Int64(canonicalDecimal: "9223372036854775807") == Int64.max)
        for bad in ["", "01", "00", "+1", "-1", "-0", " 1", "1 ", "1x", "4294967296", "\u{0661}", "1\u{301}"] {
            #expect(UInt32(canonicalDecimal: bad) == nil, "\(bad)")
        }
        #expect(Int64(canonicalDecimal: "9223372036854775808") == nil)
        // The same answer as the check it replaced, String(T(text)) == text, on every short text
        // of digits and a sign.
        let alphabet = ["0", "1", "9", "+", "-"]
        var texts = [""]
        for _ in 0..<3 { texts = texts + texts.flatMap { prefix in alphabet.map { prefix + $0 } } }
        for text in Set(texts) {
            let old = UInt8(text).flatMap { String($0) == text ? $0 : nil }
            #expect(UInt8(canonicalDecimal: text) == old, "\(text)")
        }
    }

    @Test("Tally's written-out == looks at every stored field (a new field must be added to it)")
    func tallyEqualityCoversEveryField() {
        let base = Tally(failures: 2, lastFailure: 10, lockedUntil: 20)
        let changes: [(String, (inout Tally) -> Void)] = [
            ("failures", { $0.failures += 1 }), ("lastFailure", { $0.lastFailure += 1 }),
            ("lockedUntil", { $0.lockedUntil += 1 }), ("gestureFailures", { $0.gestureFailures += 1 }),
            ("passcodeAt", { $0.passcodeAt += 1 }), ("passcodeBoot", { $0.passcodeBoot = "x" }),
            ("adminLock", { $0.adminLock.toggle() }), ("serial", { $0.serial += 1 }),
            ("clearedSerial", { $0.clearedSerial += 1 }), ("isDamaged", { $0.isDamaged.toggle() }),
        ]
        for (name, change) in changes {
            var other = base
            change(&other)
            #expect(base != other, "\(name)")
        }
        let stored = Mirror(reflecting: base).children.compactMap(\.label)
        #expect(Set(stored) == Set(changes.map(\.0)), "Tally's fields: \(stored)")
    }
}
