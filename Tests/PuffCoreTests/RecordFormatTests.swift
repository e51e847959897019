import PuffCore
import Testing

/// Text helpers for building on-disk records by hand.
private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private let validHash = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"

@Suite("Tally encoding")
struct TallyFormatTests {
    @Test("round trips", arguments: [
        Tally(),
        Tally(failures: 1, lastFailure: 1_700_000_000, lockedUntil: 0),
        Tally(failures: 7, lastFailure: 1_700_000_000, lockedUntil: 1_700_000_900),
        Tally(failures: UInt32.max, lastFailure: Int64.max, lockedUntil: Tally.untilReset),
    ])
    func roundTrip(tally: Tally) throws {
        #expect(try Tally.decode(tally.encoded()) == tally)
    }

    @Test("the exact encoding")
    func exactEncoding() throws {
        let text = String(decoding: Tally(failures: 3, lastFailure: 100, lockedUntil: 160).encoded(), as: UTF8.self)
        #expect(text == "puff-tally 3\nfailures 3\nlast-failure 100\nlocked-until 160\n"
            + "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 0\nserial 0\ncleared-serial 0\n")
        var full = Tally(failures: 1)
        full.gestureFailures = 2
        full.passcodeAt = 1_700_000_000
        full.passcodeBoot = "0123456789abcdef0123456789abcdef"
        full.adminLock = true
        full.serial = 7
        full.clearedSerial = 5
        #expect(String(decoding: full.encoded(), as: UTF8.self) == "puff-tally 3\nfailures 1\nlast-failure 0\n"
            + "locked-until 0\ngesture-failures 2\npasscode-at 1700000000\n"
            + "passcode-boot 0123456789abcdef0123456789abcdef\nadmin-lock 1\nserial 7\ncleared-serial 5\n")
        #expect(try Tally.decode(full.encoded()) == full)
    }

    @Test("a version 4 slot: the version 3 fields, then the generation; read back strictly")
    func slotEncoding() throws {
        var tally = Tally(failures: 2, lastFailure: 100, lockedUntil: 0)
        tally.serial = 9
        tally.clearedSerial = 7
        let text = String(decoding: tally.encodedSlot(generation: 42), as: UTF8.self)
        #expect(text == "puff-tally 4\nfailures 2\nlast-failure 100\nlocked-until 0\n"
            + "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 0\nserial 9\ncleared-serial 7\ngeneration 42\n")
        let decoded = try Tally.decodeSlot(tally.encodedSlot(generation: 42))
        #expect(decoded.0 == tally && decoded.generation == 42)
        // The longest slot text fits a sector with its check line (39 bytes) to spare.
        var longest = Tally(failures: UInt32.max, lastFailure: Int64.max, lockedUntil: Int64.max)
        longest.gestureFailures = UInt32.max
        longest.passcodeAt = Int64.max
        longest.passcodeBoot = "0123456789abcdef0123456789abcdef"
        longest.serial = UInt64.max
        longest.clearedSerial = UInt64.max
        #expect(longest.encodedSlot(generation: UInt64.max).count + 39 <= 512)
        for bad in ["generation 01\n", "generation -1\n", "generation\n", ""] {
            let body = String(text.dropLast("generation 42\n".count)) + bad
            #expect(throws: RecordFormatError.self) { try Tally.decodeSlot(Array(body.utf8)) }
        }
        #expect(throws: RecordFormatError.badHeader) { try Tally.decodeSlot(tally.encoded()) }
        #expect(throws: RecordFormatError.badHeader) { try Tally.decode(tally.encodedSlot(generation: 1)) }
    }

    @Test("a version 1 file (counters only) reads as a tally whose passcode was never used")
    func version1() throws {
        let tally = try Tally.decode(bytes("puff-tally 1\nfailures 3\nlast-failure 100\nlocked-until 160\n"))
        #expect(tally == Tally(failures: 3, lastFailure: 100, lockedUntil: 160))
        #expect(tally.passcodeAt == 0 && tally.passcodeBoot.isEmpty && !tally.adminLock)
        // A version 1 header with version 2 keys is refused, and the other way round.
        #expect(throws: RecordFormatError.unknownKey) {
            try Tally.decode(bytes("puff-tally 1\nfailures 3\nlast-failure 100\nlocked-until 160\nadmin-lock 0\n"))
        }
        #expect(throws: RecordFormatError.missingKey) {
            try Tally.decode(bytes("puff-tally 2\nfailures 3\nlast-failure 100\nlocked-until 160\n"))
        }
    }

    @Test("a version 2 file reads with no attempt numbers; version 3 refuses cleared-serial above serial")
    func version3() throws {
        let two = try Tally.decode(bytes("puff-tally 2\nfailures 3\nlast-failure 100\nlocked-until 160\n"
            + "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 0\n"))
        #expect(two.failures == 3 && two.serial == 0 && two.clearedSerial == 0)
        #expect(throws: RecordFormatError.badValue) {
            try Tally.decode(bytes("puff-tally 3\nfailures 3\nlast-failure 100\nlocked-until 160\n"
                + "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 0\nserial 1\ncleared-serial 2\n"))
        }
    }

    @Test("version 2 values are checked", arguments: [
        "gesture-failures -1\npasscode-at 0\npasscode-boot -\nadmin-lock 0\n",
        "gesture-failures 0\npasscode-at -1\npasscode-boot -\nadmin-lock 0\n",
        "gesture-failures 0\npasscode-at 0\npasscode-boot 0123\nadmin-lock 0\n",
        "gesture-failures 0\npasscode-at 0\npasscode-boot 0123456789ABCDEF0123456789ABCDEF\nadmin-lock 0\n",
        "gesture-failures 0\npasscode-at 0\npasscode-boot \nadmin-lock 0\n",
        "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 2\n",
        "gesture-failures 0\npasscode-at 0\npasscode-boot -\nadmin-lock 01\n",
    ])
    func version2Values(tail: String) {
        #expect(throws: RecordFormatError.badValue) {
            try Tally.decode(bytes("puff-tally 2\nfailures 0\nlast-failure 0\nlocked-until 0\n" + tail))
        }
    }

    @Test("an ArraySlice decodes too")
    func slice() throws {
        let padded = Tally(failures: 2).encoded() + [0, 0]
        #expect(try Tally.decode(padded.dropLast(2)) == Tally(failures: 2))
    }

    @Test("rejections", arguments: [
        ("puff-tally 4\nfailures 1\nlast-failure 0\nlocked-until 0\n", RecordFormatError.badHeader),
        ("puff-tally 3\nfailures 1\nlast-failure 0\nlocked-until 0\n", .missingKey),
        ("failures 1\nlast-failure 0\nlocked-until 0\n", .badHeader),
        ("puff-tally 1 \nfailures 1\nlast-failure 0\nlocked-until 0\n", .badHeader),
        ("\n", .badHeader),
        ("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0\nextra 1\n", .unknownKey),
        ("puff-tally 1\nFailures 1\nlast-failure 0\nlocked-until 0\n", .unknownKey),
        ("puff-tally 1\nfailures 1\nfailures 2\nlast-failure 0\nlocked-until 0\n", .duplicateKey),
        ("puff-tally 1\nfailures 1\nlast-failure 0\n", .missingKey),
        ("puff-tally 1\n", .missingKey),
        ("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0", .badText),
        ("", .badText),
        ("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0\n\n", .badText),
        ("puff-tally 1\nfailures\t1\nlast-failure 0\nlocked-until 0\n", .badText),
        ("puff-tally 1\r\nfailures 1\r\nlast-failure 0\r\nlocked-until 0\r\n", .badText),
        ("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until 0\u{e9}\n", .badText),
        ("puff-tally 1\nfailures1\nlast-failure 0\nlocked-until 0\n", .badText),
        ("puff-tally 1\nfailures -1\nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 4294967296\nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 1\nlast-failure -1\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 1\nlast-failure 0\nlocked-until -5\n", .badValue),
        ("puff-tally 1\nfailures 1\nlast-failure 9223372036854775808\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures +1\nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 1\nlast-failure -0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 01\nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures \nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 1 \nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures 0x1\nlast-failure 0\nlocked-until 0\n", .badValue),
        ("puff-tally 1\nfailures  1\nlast-failure 0\nlocked-until 0\n", .badValue),
    ])
    func rejections(text: String, expected: RecordFormatError) {
        #expect(throws: expected) { try Tally.decode(bytes(text)) }
    }

    @Test("a NUL byte is not text")
    func nul() {
        var encoded = Tally(failures: 1).encoded()
        encoded.insert(0, at: 3)
        #expect(throws: RecordFormatError.badText) { try Tally.decode(encoded) }
    }

    @Test("oversize input is refused before it is parsed")
    func oversize() throws {
        let padding = String(repeating: "x", count: 1024)
        #expect(throws: RecordFormatError.tooLarge) { try Tally.decode(bytes("puff-tally 1\n" + padding + "\n")) }
        #expect(throws: RecordFormatError.tooLarge) { try Tally.decode([UInt8](repeating: 0, count: 1025)) }
        // The limit itself is accepted by the size check.
        #expect(throws: RecordFormatError.badText) { try Tally.decode([UInt8](repeating: 0x41, count: 1024)) }
    }
}

@Suite("UserRecord encoding")
struct UserRecordFormatTests {
    private static func record(_ name: String, uid: UInt32, _ passcode: StoredPasscode?) -> UserRecord? {
        UserName(name).map { UserRecord(user: $0, uid: uid, passcode: passcode) }
    }

    @Test("round trips")
    func roundTrips() throws {
        let records = try [
            #require(Self.record("alice", uid: 1000, StoredPasscode(type: .digits6, hash: validHash))),
            #require(Self.record("root", uid: 0, StoredPasscode(type: .alphanumeric, hash: validHash))),
            #require(Self.record("svc_1", uid: UInt32.max, StoredPasscode(type: .numeric, hash: validHash))),
            #require(Self.record("first.last", uid: 4242, nil)),
        ]
        for record in records {
            #expect(try UserRecord.decode(record.encoded()) == record)
        }
    }

    @Test("every passcode type round trips", arguments: PasscodeType.allCases)
    func typesRoundTrip(type: PasscodeType) throws {
        let record = try #require(Self.record("bob", uid: 1001, StoredPasscode(type: type, hash: validHash)))
        #expect(try UserRecord.decode(record.encoded()).passcode?.type == type)
    }

    @Test("the exact encoding")
    func exactEncoding() throws {
        let record = try #require(Self.record("alice", uid: 1000, StoredPasscode(type: .digits4, hash: validHash)))
        #expect(String(decoding: record.encoded(), as: UTF8.self)
            == "puff-record 1\nuser alice\nuid 1000\npasscode-type digits4\npasscode-hash \(validHash)\n")
        let empty = try #require(Self.record("alice", uid: 1000, nil))
        #expect(String(decoding: empty.encoded(), as: UTF8.self) == "puff-record 1\nuser alice\nuid 1000\n")
    }

    @Test("keys may come in any order")
    func order() throws {
        let text = "puff-record 1\npasscode-hash \(validHash)\nuid 7\npasscode-type numeric\nuser carol\n"
        let record = try UserRecord.decode(bytes(text))
        #expect(record == Self.record("carol", uid: 7, StoredPasscode(type: .numeric, hash: validHash)))
    }

    static let good = "user alice\nuid 1000\npasscode-type digits6\npasscode-hash \(validHash)\n"

    @Test("rejections", arguments: [
        ("puff-record 2\n" + good, RecordFormatError.badHeader),
        ("puff-tally 1\n" + good, .badHeader),
        (good, .badHeader),
        ("puff-record 1\n" + good + "shell /bin/sh\n", .unknownKey),
        ("puff-record 1\n" + good + "uid 1000\n", .duplicateKey),
        ("puff-record 1\n" + good + "user alice\n", .duplicateKey),
        ("puff-record 1\nuid 1000\n", .missingKey),
        ("puff-record 1\nuser alice\n", .missingKey),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\n", .missingKey),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-hash \(validHash)\n", .missingKey),
        ("puff-record 1\n" + String(good.dropLast()), .badText),
        ("puff-record 1\n" + good.replacingOccurrences(of: "uid 1000", with: "uid\t1000"), .badText),
        ("puff-record 1\nuser al\u{7f}ice\nuid 1000\n", .badText),
        ("puff-record 1\nuser alicé\nuid 1000\n", .badText),
        ("puff-record 1\nuser alice\nuid 1000\n\n", .badText),
        ("puff-record 1\nuser alice\nuid -1\n", .badValue),
        ("puff-record 1\nuser alice\nuid 4294967296\n", .badValue),
        ("puff-record 1\nuser alice\nuid +1000\n", .badValue),
        ("puff-record 1\nuser alice\nuid 01000\n", .badValue),
        ("puff-record 1\nuser alice\nuid 00\n", .badValue),
        ("puff-record 1\nuser alice\nuid \n", .badValue),
        ("puff-record 1\nuser alice\nuid 1e3\n", .badValue),
        ("puff-record 1\nuser alice\nuid  1000\n", .badValue),
        ("puff-record 1\nuser ../etc\nuid 1000\n", .badValue),
        ("puff-record 1\nuser alice bob\nuid 1000\n", .badValue),
        ("puff-record 1\nuser \nuid 1000\n", .badValue),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-type pin\npasscode-hash \(validHash)\n", .badValue),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\npasscode-hash $2b$12$abc\n", .badValue),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\npasscode-hash "
            + validHash.replacingOccurrences(of: "m=65536", with: "m=4294967295") + "\n", .badValue),
        ("puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\npasscode-hash "
            + validHash.replacingOccurrences(of: "t=2", with: "t=1000") + "\n", .badValue),
    ])
    func rejections(text: String, expected: RecordFormatError) {
        #expect(throws: expected) { try UserRecord.decode(bytes(text)) }
    }

    @Test("oversize records are refused")
    func oversize() {
        let long = "puff-record 1\n" + Self.good + String(repeating: "#", count: 64 * 1024) + "\n"
        #expect(throws: RecordFormatError.tooLarge) { try UserRecord.decode(bytes(long)) }
        #expect(UserRecord.maximumEncodedSize == 65536)
    }
}

private extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

@Suite("Keyring fields")
struct KeyringFormatTests {
    static let lock = "$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$" + String(repeating: "A", count: 42) + "E"
    static let hash = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"

    @Test("a record's passcode-keyring line round trips and needs a passcode")
    func recordField() throws {
        let text = "puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\npasscode-hash \(Self.hash)\npasscode-keyring \(Self.lock)\n"
        let record = try UserRecord.decode(Array(text.utf8))
        #expect(record.passcode?.keyring?.text == Self.lock)
        #expect(String(decoding: record.encoded(), as: UTF8.self) == text)
        // Without a passcode, or a lock of the wrong shape: refused.
        #expect(throws: RecordFormatError.missingKey) {
            try UserRecord.decode(Array("puff-record 1\nuser alice\nuid 1000\npasscode-keyring \(Self.lock)\n".utf8))
        }
        for bad in [Self.lock + "A", "$argon2id$v=19$m=8,t=99,p=1$c29tZXNhbHRzb21lc2FsdA$" + String(repeating: "A", count: 43), "x"] {
            let line = "puff-record 1\nuser alice\nuid 1000\npasscode-type digits6\npasscode-hash \(Self.hash)\npasscode-keyring \(bad)\n"
            #expect(throws: RecordFormatError.badValue) { try UserRecord.decode(Array(line.utf8)) }
        }
    }

    @Test("the copy file parses strictly")
    func copyFile() throws {
        let box = String(repeating: "B", count: KeyringCopyFile.base64Length(of: 48 + 13))
        let file = KeyringCopyFile(user: try #require(UserName("alice")), uid: 1000, captured: 1_700_000_000,
                                   sealedTo: String(repeating: "A", count: 43), copy: box)
        #expect(try KeyringCopyFile.decode(file.encoded()) == file)
        var tooShort = file
        tooShort.copy = "BBBB"
        var padded = file
        padded.copy = box + "="
        var wrongKey = file
        wrongKey.sealedTo = String(repeating: "A", count: 44)
        for bad in [tooShort, padded, wrongKey] {
            #expect(throws: RecordFormatError.badValue) { try KeyringCopyFile.decode(bad.encoded()) }
        }
        #expect(throws: RecordFormatError.badHeader) { try KeyringCopyFile.decode(Array("puff-keyring 2\n".utf8)) }
    }

    @Test("keyring takes yes, no or nothing; fleet mode refuses it")
    func option() throws {
        var options = PuffOptions()
        #expect(!options.keyring)
        _ = try OptionParser.apply("keyring=yes", to: &options, from: .configFile)
        #expect(options.keyring && options.keyringRefusal == nil)
        _ = try OptionParser.apply("keyring=no", to: &options, from: .configFile)
        #expect(!options.keyring)
        _ = try OptionParser.apply("keyring", to: &options, from: .argument)
        #expect(options.keyring)
        #expect(throws: OptionError.self) { _ = try OptionParser.apply("keyring=1", to: &options, from: .configFile) }
        _ = try OptionParser.apply("backend=ldap", to: &options, from: .configFile)
        #expect(options.keyringRefusal != nil)
    }
}
