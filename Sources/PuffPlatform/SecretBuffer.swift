import Glibc

/// A passcode or a serialized gesture on its way into the PAM reply: fixed capacity, never
/// reallocated (so no stray copy is left behind), locked in memory when possible, wiped with
/// `explicit_bzero` when released.
public final class SecretBuffer {
    public let capacity: Int
    public private(set) var count = 0
    private let storage: UnsafeMutablePointer<UInt8>

    public init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0, count: capacity)
        _ = mlock(storage, capacity)
    }

    /// A buffer holding `bytes` (wiped by the caller afterwards).
    public convenience init(copying bytes: [UInt8]) {
        self.init(capacity: max(1, bytes.count))
        for byte in bytes { _ = append(byte) }
    }

    deinit {
        explicit_bzero(storage, capacity)
        _ = munlock(storage, capacity)
        storage.deallocate()
    }

    /// Adds a byte; false when full.
    public func append(_ byte: UInt8) -> Bool {
        guard count < capacity else { return false }
        storage[count] = byte
        count += 1
        return true
    }

    /// Removes the last byte.
    public func removeLast() {
        guard count > 0 else { return }
        count -= 1
        storage[count] = 0
    }

    /// Wipes everything.
    public func removeAll() {
        explicit_bzero(storage, capacity)
        count = 0
    }

    /// Calls `body` with the bytes (valid only during the call; do not copy them out).
    public func withUnsafeBytes<Result, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Result)
        throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// Whether every byte satisfies `predicate`.
    public func allSatisfy(_ predicate: (UInt8) -> Bool) -> Bool {
        UnsafeBufferPointer(start: storage, count: count).allSatisfy(predicate)
    }

    /// A `malloc`ed NUL-terminated copy for a `pam_response` (libpam frees it; Puff's module
    /// wipes it first). Nil when out of memory.
    public func mallocCopy() -> UnsafeMutablePointer<CChar>? {
        guard let copy = malloc(count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
        for index in 0..<count { copy[index] = CChar(bitPattern: storage[index]) }
        copy[count] = 0
        return copy
    }
}
