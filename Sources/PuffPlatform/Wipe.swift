import Glibc

/// Zeroing of memory that held a secret, with `explicit_bzero` (which the compiler may not drop
/// as a dead store): the one spelling for the module, the helper and the tools.
public enum Wipe {
    /// Zeroes `bytes` in place (nothing to do for an empty buffer).
    public static func bytes(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        explicit_bzero(base, bytes.count)
    }

    /// Zeroes the array's storage in place. The array must own its storage alone (a local
    /// value does): a shared one would be copied first and the copy zeroed instead.
    public static func array<Element>(_ array: inout [Element]) {
        array.withUnsafeMutableBytes { bytes($0) }
    }
}
