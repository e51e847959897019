/// A user's stored passcode: its type (not secret) and its argon2id hash string.
public struct StoredPasscode: Equatable, Sendable {
    /// Which keypad a helper should show.
    public var type: PasscodeType
    /// The `$argon2id$…` string of the pre-hashed passcode.
    public var hash: String
    /// The keyring key pair's public half and derivation (`keyring = yes`), made when the
    /// passcode is set or at a passcode login; `nil` for a passcode set without it.
    public var keyring: KeyringLock?

    /// Creates a stored passcode.
    public init(type: PasscodeType, hash: String, keyring: KeyringLock? = nil) {
        self.type = type
        self.hash = hash
        self.keyring = keyring
    }

    /// The same type and the same hash bytes (ByteText.swift), and the same keyring lock.
    public static func == (left: StoredPasscode, right: StoredPasscode) -> Bool {
        left.type == right.type && left.hash.sameBytes(as: right.hash) && left.keyring == right.keyring
    }
}

/// A user's picture gesture: the picture it was drawn on (its size and SHA-256, binding the
/// copy under `pictures/`) and the template, sealed with XChaCha20-Poly1305 by the platform
/// layer. The template is never stored in the clear.
public struct StoredGesture: Equatable, Sendable {
    /// Picture width in pixels, the unit of every gesture coordinate.
    public var pictureWidth: Int
    /// Picture height in pixels.
    public var pictureHeight: Int
    /// SHA-256 of the picture file, 64 lowercase hex digits.
    public var pictureSHA256: String
    /// Base64 of nonce ‖ ciphertext of the encoded `GestureTemplate`.
    public var sealedTemplate: String

    /// Creates a stored gesture.
    public init(pictureWidth: Int, pictureHeight: Int, pictureSHA256: String, sealedTemplate: String) {
        self.pictureWidth = pictureWidth
        self.pictureHeight = pictureHeight
        self.pictureSHA256 = pictureSHA256
        self.sealedTemplate = sealedTemplate
    }

    /// The same picture size, and the same digest and sealed template bytes (ByteText.swift).
    public static func == (left: StoredGesture, right: StoredGesture) -> Bool {
        left.pictureWidth == right.pictureWidth && left.pictureHeight == right.pictureHeight
            && left.pictureSHA256.sameBytes(as: right.pictureSHA256) && left.sealedTemplate.sameBytes(as: right.sealedTemplate)
    }

    /// True when the fields have the shapes the record format allows.
    var isWellFormed: Bool {
        let hex = pictureSHA256.utf8
        let base64 = sealedTemplate.utf8
        return (1...GestureLimits.maximumPictureSide).contains(pictureWidth)
            && (1...GestureLimits.maximumPictureSide).contains(pictureHeight)
            && hex.count == 64 && hex.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
            && !base64.isEmpty && base64.count <= 60_000
            && base64.allSatisfy { ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a)
                || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/")
                || $0 == UInt8(ascii: "=") }
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
    /// The picture gesture, if one is enrolled.
    public var gesture: StoredGesture?

    /// Creates a record.
    public init(user: UserName, uid: UInt32, passcode: StoredPasscode?, gesture: StoredGesture? = nil) {
        self.user = user
        self.uid = uid
        self.passcode = passcode
        self.gesture = gesture
    }

    /// True when at least one factor is enrolled.
    public var hasAnyFactor: Bool { passcode != nil || gesture != nil }

    /// The on-disk text.
    public func encoded() -> [UInt8] {
        var text = "puff-record \(Self.version)\nuser \(user.value)\nuid \(uid)\n"
        if let passcode {
            text += "passcode-type \(passcode.type.rawValue)\npasscode-hash \(passcode.hash)\n"
            if let keyring = passcode.keyring { text += "passcode-keyring \(keyring.text)\n" }
        }
        if let gesture {
            text += "gesture-picture \(gesture.pictureWidth)x\(gesture.pictureHeight)\n"
            text += "gesture-picture-sha256 \(gesture.pictureSHA256)\n"
            text += "gesture-template \(gesture.sealedTemplate)\n"
        }
        return Array(text.utf8)
    }

    /// Parses `encoded()` output strictly; the hash's cost parameters are bounds-checked.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> UserRecord {
        let fields = try KeyValueText.parse(bytes, header: "puff-record \(version)",
                                            maximumSize: maximumEncodedSize,
                                            keys: ["user", "uid"],
                                            optional: ["passcode-type", "passcode-hash", "passcode-keyring", "gesture-picture",
                                                       "gesture-picture-sha256", "gesture-template"])
        guard let name = fields["user"].flatMap(UserName.init),
              let uidText = fields["uid"], let uid = UInt32(canonicalDecimal: uidText) else {
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
        if let keyring = fields["passcode-keyring"] {
            // A keyring lock belongs to a passcode.
            guard passcode != nil, let lock = KeyringLock(keyring) else { throw passcode == nil ? .missingKey : .badValue }
            passcode?.keyring = lock
        }
        var gesture: StoredGesture?
        switch (fields["gesture-picture"], fields["gesture-picture-sha256"], fields["gesture-template"]) {
        case (nil, nil, nil): gesture = nil
        case (let size?, let digest?, let sealed?):
            let sides = size.splitBytes(at: UInt8(ascii: "x"), omittingEmptySubsequences: false)
            guard sides.count == 2, let width = Int(canonicalDecimal: sides[0]), let height = Int(canonicalDecimal: sides[1]) else {
                throw .badValue
            }
            let stored = StoredGesture(pictureWidth: width, pictureHeight: height,
                                       pictureSHA256: digest, sealedTemplate: sealed)
            guard stored.isWellFormed else { throw .badValue }
            gesture = stored
        default: throw .missingKey
        }
        return UserRecord(user: name, uid: uid, passcode: passcode, gesture: gesture)
    }
}
