import CSodium
import CSpawn
import PuffCore

/// A secret held in locked memory left out of core dumps (`puff_secret_alloc`: a piece of the
/// process's secret pool, or its own `sodium_malloc` with guard pages), wiped and released
/// when it goes out of scope. It cannot be copied.
public struct SecureBytes: ~Copyable {
    /// Its length in bytes.
    public let count: Int
    private let base: UnsafeMutableRawPointer

    /// Allocates `count` zeroed bytes (at least one is allocated).
    public init(count: Int) throws(StoreError) {
        guard count >= 0, count <= 1 << 24, let base = puff_secret_alloc(max(count, 1)) else {
            throw .crypto("cannot allocate locked memory for a secret")
        }
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

    deinit { puff_secret_free(base, max(count, 1)) }

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
