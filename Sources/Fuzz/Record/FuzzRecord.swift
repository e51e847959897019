import Glibc
import FuzzSupport
import PuffCore
import PuffPlatform

// The user record decoder, as the module meets a record file, then the sealed gesture
// template inside it opened with a fixed host key. For every input: decoding never traps;
// an accepted record re-encodes to a record that decodes to the same value; an accepted
// passcode hash passes the argon2 parameter bounds; a sealed template either opens (for the
// record's own user and uid) or is refused as tampered, never anything else, and an opened
// template can be matched without trapping.

/// The host key the seed records were sealed under (32 bytes of 0x5a).
func fixedHostKey() -> SecureBytes? {
    guard var key = try? SecureBytes(count: PasscodeHasher.keyLength) else { return nil }
    _ = key.withMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0x5a) }
    return key
}

/// A copy of `bytes` in wiped memory.
func secure(_ bytes: [UInt8]) -> SecureBytes? {
    guard var out = try? SecureBytes(count: bytes.count) else { return nil }
    out.withMutableBytes { destination in
        bytes.withUnsafeBytes { source in
            if let base = destination.baseAddress, let from = source.baseAddress {
                base.copyMemory(from: from, byteCount: source.count)
            }
        }
    }
    return out
}

let sodiumReady: Bool = (try? Sodium.initialize()) != nil

let attempt = try? GestureWire.parse(Array("puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600".utf8))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.require(sodiumReady, "sodium_init failed")
    let input = Fuzz.input(data, size)
    // The keyring's copy file (keyring/NAME): decoding never traps, an accepted file
    // re-encodes to itself, and its box is of a length a sealed password can have.
    if let copy = try? KeyringCopyFile.decode(input) {
        Fuzz.require((try? KeyringCopyFile.decode(copy.encoded())) == copy, "a keyring copy does not re-encode")
        Fuzz.require(copy.sealedTo.utf8.count == KeyringLock.publicKeyCharacters, "a keyring copy sealed to a key of another length")
        if let box = Base64.decode(copy.copy, padded: false) {
            Fuzz.require(box.count > KeyringCopyFile.sealOverhead
                         && box.count <= KeyringCopyFile.sealOverhead + KeyringCopyFile.maximumPasswordLength,
                         "a keyring copy whose box cannot hold a password")
        }
        return 0
    }
    guard let record = try? UserRecord.decode(input) else { return 0 }
    if let lock = record.passcode?.keyring {
        // The record's keyring lock: bounded cost, a salt and a public key of their lengths.
        Fuzz.require(lock.salt.utf8.count == KeyringLock.saltCharacters && lock.publicKey.utf8.count == KeyringLock.publicKeyCharacters,
                     "a keyring lock of the wrong shape was accepted")
        Fuzz.require(Argon2Parameters.memoryKiBRange.contains(lock.cost.memoryKiB), "a keyring cost outside the bounds")
    }
    Fuzz.require((try? UserRecord.decode(record.encoded())) == record, "encoded() does not decode to the same record")
    if let passcode = record.passcode {
        Fuzz.require((try? Argon2Parameters.parse(passcode.hash)) != nil, "a hash outside the bounds was accepted")
    }
    guard let gesture = record.gesture, let hostKey = fixedHostKey() else { return 0 }
    let account = Account(name: record.user, uid: record.uid)
    do throws(StoreError) {
        let template = try GestureSealing.open(gesture.sealedTemplate, for: account, hostKey: hostKey, path: "fuzz")
        if var attempt {
            attempt.width = template.width
            attempt.height = template.height
            let result = GestureMatcher.verify(template, attempt)
            Fuzz.require(result.passed == (result.failure == nil), "passed and failure disagree")
        }
    } catch {
        if case .tampered = error { return 0 }
        Fuzz.require(false, "opening a sealed template failed with \(error), not .tampered")
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() {
        // `fuzz-record --write-seeds DIR`: records made by the real hasher and sealer.
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--write-seeds" {
            writeSeeds(to: arguments[2])
            return
        }
        Fuzz.replay(fuzzRecord)
    }

    static func writeSeeds(to directory: String) {
        Fuzz.require(sodiumReady, "sodium_init failed")
        guard let hostKey = fixedHostKey(), let root = UserName("root"), let alice = UserName("alice"),
              let gesture = try? GestureWire.parse(Array("puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600".utf8)),
              let template = try? GestureEnroller.build(from: gesture) else {
            Fuzz.require(false, "seed setup failed")
            return
        }
        let hasher = PasscodeHasher(cost: Argon2Parameters(memoryKiB: 8, iterations: 1))
        func hash(_ text: String, _ account: Account) -> String {
            guard let secret = secure(Array(text.utf8)),
                  let prehash = try? hasher.prehash(secret, user: account.name, uid: account.uid, hostKey: hostKey),
                  let hash = try? hasher.hash(prehash) else {
                Fuzz.require(false, "hashing a seed failed")
                return ""
            }
            return hash
        }
        func sealed(_ account: Account) -> StoredGesture {
            guard let sealed = try? GestureSealing.seal(template, for: account, hostKey: hostKey) else {
                Fuzz.require(false, "sealing a seed failed")
                return StoredGesture(pictureWidth: 1, pictureHeight: 1, pictureSHA256: "", sealedTemplate: "")
            }
            return StoredGesture(pictureWidth: 1000, pictureHeight: 750,
                                 pictureSHA256: String(repeating: "ab", count: 32), sealedTemplate: sealed)
        }
        let rootAccount = Account(name: root, uid: 0)
        let aliceAccount = Account(name: alice, uid: 1000)
        let records: [(String, UserRecord)] = [
            ("passcode", UserRecord(user: root, uid: 0, passcode: StoredPasscode(type: .digits6, hash: hash("604917", rootAccount)))),
            ("gesture", UserRecord(user: root, uid: 0, passcode: nil, gesture: sealed(rootAccount))),
            ("both", UserRecord(user: alice, uid: 1000,
                                passcode: StoredPasscode(type: .alphanumeric, hash: hash("correct horse", aliceAccount)),
                                gesture: sealed(aliceAccount))),
            ("empty", UserRecord(user: alice, uid: 1000, passcode: nil)),
        ]
        for (name, record) in records {
            Fuzz.writeFile(directory + "/" + name, record.encoded())
        }
        // A record with a keyring key pair, and a copy sealed to it, made by the real code.
        guard let passcode = secure(Array("604917".utf8)), let password = secure(Array("Sys-Pass-4217".utf8)),
              let lock = try? KeyringKeys.make(for: passcode, account: rootAccount, hostKey: hostKey,
                                               cost: Argon2Parameters(memoryKiB: 8, iterations: 1)) else {
            Fuzz.require(false, "making a keyring seed failed")
            return
        }
        let keyring = UserRecord(user: root, uid: 0, passcode: StoredPasscode(type: .digits6, hash: hash("604917", rootAccount),
                                                                              keyring: lock))
        Fuzz.writeFile(directory + "/keyring-record", keyring.encoded())
        let scratch = "/tmp/puff-fuzz-seed-\(getpid())"
        mkdir(scratch, 0o700)
        let store = KeyringStore(directory: scratch, session: StoreSession())
        guard (try? store.capture(password, for: rootAccount, lock: lock, at: 1_700_000_000)) != nil,
              let copy = try? store.copy(of: rootAccount) else {
            Fuzz.require(false, "sealing a keyring seed failed")
            return
        }
        Fuzz.writeFile(directory + "/keyring-copy", copy.encoded())
        _ = try? store.forget(root)
        rmdir(scratch + "/keyring")
        rmdir(scratch)
    }
}
#endif
