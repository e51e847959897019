/// A user's stored passcode: its type (not secret) and its argon2id hash string.
public struct StoredPasscode: Equatable, Sendable {
    /// Which keypad a helper should show.
    public var type: PasscodeType
    /// The `$argon2id$…` string of the pre-hashed passcode.
    public var hash: String

    /// Creates a stored passcode.
    public init(type: PasscodeType, hash: String) {
        self.type = type
        self.hash = hash
    }
}

/// The per-user record under the record directory (`/etc/puff/<user>`).
public struct UserRecord: Equatable, Sendable {
    /// The format version written by this code.
    public static let version = 1
    /// Largest record accepted when reading.
    public static let maximumEncodedSize = 64 * 1024

    /// The login name the record belongs to.
    public var user: UserName
    /// The uid it was enrolled for; a mismatch with the account database fails closed.
    public var uid: UInt32
    /// The passcode, if one is enrolled.
    public var passcode: StoredPasscode?

    /// Creates a record.
    public init(user: UserName, uid: UInt32, passcode: StoredPasscode?) {
        self.user = user
        self.uid = uid
        self.passcode = passcode
    }

    /// The on-disk text.
    public func encoded() -> [UInt8] {
        var text = "puff-record \(Self.version)\nuser \(user.value)\nuid \(uid)\n"
        if let passcode {
            text += "passcode-type \(passcode.type.rawValue)\npasscode-hash \(passcode.hash)\n"
        }
        return Array(text.utf8)
    }

    /// Parses `encoded()` output strictly; the hash's cost parameters are bounds-checked.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> UserRecord {
        let fields = try KeyValueText.parse(bytes, header: "puff-record \(version)",
                                            maximumSize: maximumEncodedSize,
                                            keys: ["user", "uid"],
                                            optional: ["passcode-type", "passcode-hash"])
        guard let name = fields["user"].flatMap(UserName.init),
              let uidText = fields["uid"], let uid = UInt32(uidText), String(uid) == uidText else {
            throw .badValue
        }
        var passcode: StoredPasscode?
        switch (fields["passcode-type"], fields["passcode-hash"]) {
        case (nil, nil): passcode = nil
        case (let type?, let hash?):
            guard let type = PasscodeType(rawValue: type) else { throw .badValue }
            do {
                _ = try Argon2Parameters.parse(hash)
            } catch {
                throw .badValue
            }
            passcode = StoredPasscode(type: type, hash: hash)
        default: throw .missingKey
        }
        return UserRecord(user: name, uid: uid, passcode: passcode)
    }
}
