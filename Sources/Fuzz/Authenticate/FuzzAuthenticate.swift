import FuzzSupport
import Glibc
import PuffCore
import PuffPlatform

// A whole authentication (`FilesStore.subject` then `attempt`) against a real store made
// once in a temp directory: records, host key and counters on disk, the minimum argon2id
// cost. Input: one byte choosing the user, then the secret exactly as a conversation reply
// would carry it (a passcode, or a `puff-gesture:` message).
//
//   selector % 4 = 0  root: passcode 604917 and the fixed gesture
//                  1  daemon: the fixed gesture only
//                  2  bin: an account without a record
//                  3  puff-fuzz-no-such-user: no account at all
//
// For every input: nothing traps or throws; the verdict equals the pure one (the passcode
// compared byte for byte, the gesture parsed and matched against the same template); a
// failure counts exactly one attempt; users without a record are never enrolled. A counter
// left non-zero is reset before the next attempt, so inputs never meet a lock and each one
// starts from the same state.

let passcode = Array("604917".utf8)
let gestureMessage = Array("puff-gesture:1:1000x750:p 100,120 300,140 500,200;t 500,400;p 800,100 800,600".utf8)
let userNames = ["root", "daemon", "bin", "puff-fuzz-no-such-user"]

/// The store, enrolled once per process and removed at exit.
final class FuzzStore: @unchecked Sendable {
    let directory: String
    let authenticator: FilesStore
    let counters: LockoutStore
    let template: GestureTemplate

    init?() {
        guard (try? Sodium.initialize()) != nil else { return nil }
        // scripts/fuzz.sh points this at a directory it removes (tmpfs, so fsync is cheap).
        let parent = getenv("PUFF_FUZZ_TMPDIR").flatMap { String(validatingCString: $0) } ?? "/tmp"
        var pattern = Array((parent + "/puff-fuzz-auth-XXXXXX").utf8CString)
        guard let made = pattern.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }),
              let path = String(validatingCString: made) else { return nil }
        directory = path
        var options = PuffOptions()
        options.recordDirectory = path + "/etc"
        options.stateDirectory = path + "/state"
        options.kdf = Argon2Parameters(memoryKiB: 8, iterations: 1)
        options.lockout.deny = 5
        options.lockout.delays = [60]
        options.lockout.evenDenyRoot = true
        authenticator = FilesStore(options: options)
        counters = LockoutStore(directory: options.stateDirectory, lockWaitSeconds: 5)
        guard let gesture = try? GestureWire.parse(gestureMessage),
              let template = try? GestureEnroller.build(drawings: [gesture, gesture]),
              let root = try? Account.lookup("root"), let daemon = try? Account.lookup("daemon"),
              let secret = secure(passcode) else { return nil }
        self.template = template
        do throws(StoreError) {
            try authenticator.storePasscode(secret, type: .digits6, for: root)
            try authenticator.storeGesture(template, picture: Array("not a picture".utf8), for: root)
            try authenticator.storeGesture(template, picture: Array("not a picture".utf8), for: daemon)
        } catch {
            Fuzz.printError("fuzz-authenticate: enrollment failed: \(error)")
            return nil
        }
    }

    /// The verdict the pure code gives for `secret` and user `index`.
    func expectedSuccess(_ secret: UnsafeBufferPointer<UInt8>, user index: Int) -> Bool {
        if secret.starts(with: GestureWire.prefix) {
            guard index <= 1, let attempt = try? GestureWire.parse(UnsafeRawBufferPointer(secret)),
                  (try? attempt.requireSize(width: template.width, height: template.height)) != nil else { return false }
            return GestureMatcher.verify(template, attempt).passed
        }
        return index == 0 && secret.elementsEqual(passcode)
    }
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

let store: FuzzStore? = {
    let made = FuzzStore()
    if made != nil { atexit { removeStore() } }
    return made
}()

func removeStore() {
    guard let store else { return }
    // Only what FuzzStore made: two levels of directories below the temp dir.
    for sub in ["etc/users", "etc/pictures", "etc", "state"] {
        let path = store.directory + "/" + sub
        for file in Fuzz.regularFiles(in: path) { unlink(file) }
    }
    for sub in ["etc/users", "etc/pictures", "etc", "state", ""] { rmdir(store.directory + "/" + sub) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAuthenticate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let store else {
        Fuzz.require(false, "the store could not be set up (run as root)")
        return 0
    }
    let input = Fuzz.input(data, size)
    guard let selector = input.first else { return 0 }
    let index = Int(selector % 4)
    let secretBytes = UnsafeBufferPointer(rebasing: input.dropFirst())
    guard let secret = try? SecureBytes(copying: UnsafeRawBufferPointer(secretBytes)) else { return 0 }
    let expected = store.expectedSuccess(secretBytes, user: index)
    do throws(StoreError) {
        let subject = try store.authenticator.subject(for: userNames[index])
        if case .enrolled(let enrolled) = subject, enrolled.tally.clearingFailures() != enrolled.tally {
            try store.counters.reset(enrolled.account.name)
        }
        let fresh = try store.authenticator.subject(for: userNames[index])
        let outcome = try store.authenticator.attempt(secret, for: fresh)
        switch (index, outcome) {
        case (0...1, .success(let rehashed)):
            // A gesture's success stores the template learned from it: put the enrolled one
            // back, so the pure check's template stays the store's.
            let isGesture = secretBytes.starts(with: GestureWire.prefix)
            Fuzz.require(expected && rehashed == isGesture, "accepted a secret the pure check refuses (user \(index))")
            if isGesture, case .enrolled(let enrolled) = fresh {
                try store.authenticator.storeGesture(store.template, picture: Array("not a picture".utf8), for: enrolled.account)
            }
        case (0...1, .failure(let failures, let lock, _)):
            Fuzz.require(!expected, "refused a secret the pure check accepts (user \(index))")
            Fuzz.require(failures == 1 && lock == .open, "a failure from a clean counter left \(failures), \(lock)")
        case (2...3, .notEnrolled):
            break
        default:
            Fuzz.require(false, "unexpected outcome \(outcome) for user \(index)")
        }
    } catch {
        Fuzz.require(false, "the authentication threw \(error)")
    }
    return 0
}

#if !PUFF_FUZZ
@main
enum Replay {
    static func main() { Fuzz.replay(fuzzAuthenticate) }
}
#endif
