import CSodium
import Glibc
import PuffCore

/// Turns a passcode into the stored argon2id string and checks attempts against it.
///
/// The passcode is first reduced with keyed BLAKE2b under the host key, binding the user's
/// name and uid (`prehash`), so the records directory alone does not let anyone guess
/// offline, and a hash copied to another user's record does not verify there.
public struct PasscodeHasher {
    /// Bytes in the host key and in the prehash.
    public static let keyLength = 32

    /// Domain separation for the prehash; a later scheme gets a new tag.
    public static let domain = Array("puff-passcode-v1".utf8)

    /// A salt and an all-zero hash that no input can produce; verifying against it costs
    /// exactly what a real verification costs (`dummyHash(for:)`).
    static let dummySalt = "cHVmZi1kdW1teS1zYWx0IQ"  // base64 of "puff-dummy-salt!"
    static let dummyDigest = String(repeating: "A", count: 43)

    /// The cost for new hashes.
    public let cost: Argon2Parameters

    /// Creates a hasher for the given cost.
    public init(cost: Argon2Parameters) { self.cost = cost }

    /// `BLAKE2b-256(key: hostKey, domain ‖ 0 ‖ uid(be32) ‖ name ‖ 0 ‖ passcode)`, the domain
    /// being "puff-passcode-v1" for the stored hash (the keyring's derivation has its own).
    public func prehash(_ passcode: borrowing SecureBytes, user: UserName, uid: UInt32,
                        hostKey: borrowing SecureBytes, domain: [UInt8] = Self.domain) throws(StoreError) -> SecureBytes {
        let name = Array(user.value.utf8)
        var message = try SecureBytes(count: domain.count + 1 + 4 + name.count + 1 + passcode.count)
        message.withMutableBytes { out in
            var at = 0
            func put(_ bytes: UnsafeRawBufferPointer) {
                guard let base = out.baseAddress, let source = bytes.baseAddress, bytes.count > 0 else { return }
                (base + at).copyMemory(from: source, byteCount: bytes.count)
                at += bytes.count
            }
            domain.withUnsafeBytes { put($0) }
            withUnsafeBytes(of: UInt8(0)) { put($0) }
            withUnsafeBytes(of: uid.bigEndian) { put($0) }
            name.withUnsafeBytes { put($0) }
            withUnsafeBytes(of: UInt8(0)) { put($0) }
            passcode.withBytes { put($0) }
        }
        var digest = try SecureBytes(count: Self.keyLength)
        let status = digest.withMutableBytes { out in
            message.withBytes { input in
                hostKey.withBytes { key -> Int32 in
                    guard let outBase = out.baseAddress, let inBase = input.baseAddress,
                          let keyBase = key.baseAddress else { return -1 }
                    return crypto_generichash(outBase.assumingMemoryBound(to: UInt8.self), out.count,
                                              inBase.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                                              keyBase.assumingMemoryBound(to: UInt8.self), key.count)
                }
            }
        }
        guard status == 0, hostKey.count == Self.keyLength else { throw .crypto("crypto_generichash failed") }
        return digest
    }

    /// A new `$argon2id$…` string for `prehash` at `cost`.
    public func hash(_ prehash: borrowing SecureBytes) throws(StoreError) -> String {
        var out = [CChar](repeating: 0, count: Int(crypto_pwhash_STRBYTES))
        let status = prehash.withBytes { input -> Int32 in
            guard let base = input.baseAddress else { return -1 }
            return crypto_pwhash_str(&out, base.assumingMemoryBound(to: CChar.self), UInt64(input.count),
                                     UInt64(cost.iterations), Int(cost.memoryKiB) * 1024)
        }
        guard status == 0 else { throw .crypto("crypto_pwhash_str failed (out of memory?)") }
        let text = out.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { String(validatingCString: $0) }
        }
        guard let text else { throw .crypto("crypto_pwhash_str wrote an invalid string") }
        return text
    }

    /// Whether `prehash` matches `stored`. The stored string's parameters are checked
    /// against `Argon2Parameters` bounds first, so a forged record cannot make libsodium
    /// allocate terabytes.
    public func verify(_ prehash: borrowing SecureBytes, against stored: String) throws(StoreError) -> Bool {
        let parameters: Argon2Parameters
        do {
            parameters = try Argon2Parameters.parse(stored)
        } catch {
            throw .crypto("stored hash refused: \(error)")
        }
        // libsodium reports an argon2id that could not allocate its memory (RLIMIT_AS, memory
        // pressure) exactly like a mismatch (-1, EINVAL). So the memory is reserved first,
        // as argon2id will: when even that fails, no secret can be compared and the attempt
        // is an error, never a wrong passcode. (A reservation that succeeds and an argon2id
        // that still fails counts as wrong: the safe direction.)
        let bytes = Int(parameters.memoryKiB) * 1024
        let reserved = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if reserved == MAP_FAILED {
            throw .system("argon2id", path: "(\(parameters.memoryKiB) KiB)", Errno(errno == 0 ? ENOMEM : errno))
        }
        munmap(reserved, bytes)
        return prehash.withBytes { input -> Bool in
            guard let base = input.baseAddress else { return false }
            return crypto_pwhash_str_verify(stored, base.assumingMemoryBound(to: CChar.self), UInt64(input.count)) == 0
        }
    }

    /// Whether `stored` was made with another cost than the current one.
    public func needsRehash(_ stored: String) -> Bool {
        crypto_pwhash_str_needs_rehash(stored, UInt64(cost.iterations), Int(cost.memoryKiB) * 1024) != 0
    }

    /// A hash string at the current cost that can never match: used for users without a
    /// record so that they take the same prompt, rounds and time as a wrong passcode.
    public var dummyHash: String {
        "$argon2id$v=19$m=\(cost.memoryKiB),t=\(cost.iterations),p=1$\(Self.dummySalt)$\(Self.dummyDigest)"
    }
}
