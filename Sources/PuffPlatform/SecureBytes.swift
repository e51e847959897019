import CSodium
import PuffCore

/// A secret held in memory from `sodium_malloc` (guard pages, locked where possible),
/// zeroed and freed by `sodium_free` when it goes out of scope. It cannot be copied.
public struct SecureBytes: ~Copyable {
    /// Its length in bytes.
    public let count: Int
    private let base: UnsafeMutableRawPointer

    /// Allocates `count` zeroed bytes (at least one is allocated).
    public init(count: Int) throws(StoreError) {
        guard count >= 0, count <= 1 << 24, let base = sodium_malloc(max(count, 1)) else {
            throw .crypto("sodium_malloc failed")
        }
        sodium_memzero(base, max(count, 1))
        self.base = base
        self.count = count
    }

    /// Copies `bytes` into a new secure buffer.
    public init(copying bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try self.init(count: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: bytes.count)
        }
    }

    deinit { sodium_free(base) }

    /// Reads the bytes.
    public func withBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Writes the bytes.
    public mutating func withMutableBytes<Result, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// Constant-time equality (`sodium_memcmp`).
    public func constantTimeEquals(_ other: borrowing SecureBytes) -> Bool {
        guard count == other.count else { return false }
        return other.withBytes { sodium_memcmp(base, $0.baseAddress, count) == 0 }
    }

    /// True when the bytes start with `prefix` (constant time over the prefix length).
    public func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard count >= prefix.count else { return false }
        return prefix.withUnsafeBytes { sodium_memcmp(base, $0.baseAddress, prefix.count) == 0 }
    }

    /// A copy of the first `length` bytes.
    public func prefix(_ length: Int) throws(StoreError) -> SecureBytes {
        try SecureBytes(copying: UnsafeRawBufferPointer(start: base, count: min(length, count)))
    }
}
