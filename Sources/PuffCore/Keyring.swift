/// The public half of a passcode's keyring key pair, and how to derive its secret half from
/// the passcode: an argon2id string (`$argon2id$v=19$m=…,t=…,p=1$SALT$PUBLIC`) whose salt is
/// the derivation's own (16 bytes) and whose hash part is the X25519 public key (32 bytes),
/// both base64 without padding. A copy of the system password is sealed to that public key
/// without the passcode; only the passcode (and the store's key) derives the secret key that
/// opens it (docs/admin/protection-at-rest.md, "The login keyring"). Stored in the record as
/// `passcode-keyring`, beside the passcode hash it belongs to.
public struct KeyringLock: Equatable, Sendable {
    /// Base64 characters of the 16-byte salt, without padding.
    public static let saltCharacters = 22
    /// Base64 characters of the 32-byte public key, without padding.
    public static let publicKeyCharacters = 43

    /// The whole string, as stored.
    public let text: String
    /// The derivation's cost (bounds-checked as a stored hash's is).
    public let cost: Argon2Parameters

    /// Parses and checks `text`: an argon2id string within the stored-hash bounds whose salt
    /// and hash parts have exactly the lengths of a keyring salt and public key. `nil` otherwise.
    public init?(_ text: some StringProtocol) {
        guard let cost = try? Argon2Parameters.parse(text) else { return nil }
        let fields = Array(text.utf8).split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        guard fields.count == 6, fields[4].count == Self.saltCharacters, fields[5].count == Self.publicKeyCharacters else {
            return nil
        }
        self.text = String(text)
        self.cost = cost
    }

    /// The salt part (base64, no padding).
    public var salt: Substring { part(4) }
    /// The public key part (base64, no padding).
    public var publicKey: Substring { part(5) }

    private func part(_ index: Int) -> Substring {
        let pieces = text.splitBytes(at: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        return pieces.count == 6 ? pieces[index] : ""
    }

    /// The string for `cost`, `salt` and `publicKey` (both base64 without padding).
    public static func compose(cost: Argon2Parameters, salt: String, publicKey: String) -> KeyringLock? {
        KeyringLock("$argon2id$v=19$m=\(cost.memoryKiB),t=\(cost.iterations),p=1$\(salt)$\(publicKey)")
    }

    /// The same bytes.
    public static func == (left: KeyringLock, right: KeyringLock) -> Bool { left.text.sameBytes(as: right.text) }
}

/// The sealed copy of a user's system password (`keyring/NAME` under the store directory):
/// a `crypto_box_seal` box to the record's `KeyringLock` public key, which only the passcode
/// opens. The file names the public key it was sealed to, so a copy made for an earlier
/// passcode is recognised as stale without trying to open it.
///
///     puff-keyring 1
///     user NAME
///     uid UID
///     captured SECONDS
///     sealed-to PUBLIC      (base64, no padding: the record's keyring public key)
///     copy BOX              (base64, no padding: X25519 key ‖ MAC ‖ ciphertext)
public struct KeyringCopyFile: Equatable, Sendable {
    /// The format version written by this code.
    public static let version = 1
    /// The longest password kept (PAM's own replies are at most 512 bytes).
    public static let maximumPasswordLength = 1024
    /// The box's overhead: an ephemeral public key and a MAC (`crypto_box_SEALBYTES`).
    public static let sealOverhead = 48
    /// Largest file accepted when reading.
    public static let maximumEncodedSize = 4096

    /// The user the copy is for.
    public var user: UserName
    /// Their uid when it was captured.
    public var uid: UInt32
    /// When it was captured (seconds since the epoch).
    public var captured: Int64
    /// The public key it was sealed to (base64, no padding).
    public var sealedTo: String
    /// The box (base64, no padding).
    public var copy: String

    /// Creates a copy's description.
    public init(user: UserName, uid: UInt32, captured: Int64, sealedTo: String, copy: String) {
        (self.user, self.uid, self.captured, self.sealedTo, self.copy) = (user, uid, captured, sealedTo, copy)
    }

    /// The on-disk text.
    public func encoded() -> [UInt8] {
        Array(("puff-keyring \(Self.version)\nuser \(user.value)\nuid \(uid)\ncaptured \(captured)\n"
            + "sealed-to \(sealedTo)\ncopy \(copy)\n").utf8)
    }

    /// Parses `encoded()` output strictly.
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> KeyringCopyFile {
        let fields = try KeyValueText.parse(bytes, header: "puff-keyring \(version)", maximumSize: maximumEncodedSize,
                                            keys: ["user", "uid", "captured", "sealed-to", "copy"], optional: [])
        guard let user = fields["user"].flatMap(UserName.init),
              let uidText = fields["uid"], let uid = UInt32(canonicalDecimal: uidText),
              let capturedText = fields["captured"], capturedText.utf8.count <= 12,
              let captured = Int64(canonicalDecimal: capturedText),
              let sealedTo = fields["sealed-to"], let copy = fields["copy"] else { throw .badValue }
        // The box holds 1 to maximumPasswordLength bytes of password and the seal's overhead;
        // its base64 (no padding) length follows from that.
        let minimum = base64Length(of: sealOverhead + 1), maximum = base64Length(of: sealOverhead + maximumPasswordLength)
        guard sealedTo.utf8.count == KeyringLock.publicKeyCharacters, isBase64NoPadding(sealedTo),
              (minimum...maximum).contains(copy.utf8.count), copy.utf8.count % 4 != 1, isBase64NoPadding(copy) else {
            throw .badValue
        }
        return KeyringCopyFile(user: user, uid: uid, captured: captured, sealedTo: sealedTo, copy: copy)
    }

    /// Base64 characters (no padding) of `count` bytes.
    public static func base64Length(of count: Int) -> Int { (count * 4 + 2) / 3 }

    static func isBase64NoPadding(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }
}
