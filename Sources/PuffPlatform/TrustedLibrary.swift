import Glibc
import PuffCore

/// A shared library the module or the helper loads only when a mode needs it (fleet mode's
/// `puff-ldap.so`, tpm mode's `puff-tpm.so`): its directory walked from `/` like every trusted
/// file's (root-owned, no symbolic link), the file opened without following one. The C loader
/// checks that descriptor (regular, root-owned, not group/other-writable) and loads that very
/// file through /proc/self/fd, so it cannot be swapped in between.
package enum TrustedLibrary {
    /// Opens `path` for a loader; the error is the reason, for the caller's message.
    private static func open(_ path: String) throws(LoadFailure) -> FileDescriptor {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash + 1 < bytes.count else {
            throw LoadFailure(reason: "not the path of a file")
        }
        let parent = slash == 0 ? "/" : String(decoding: bytes[..<slash], as: UTF8.self)
        let name = String(decoding: bytes[(slash + 1)...], as: UTF8.self)
        let directory: TrustedDirectory
        do {
            directory = try TrustedDirectory(parent)
        } catch {
            throw LoadFailure(reason: error.description)
        }
        do {
            return try directory.descriptor.open(name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        } catch {
            throw LoadFailure(reason: error == Errno(ELOOP) ? "it is a symbolic link" : "open: \(error)")
        }
    }

    /// Opens `path` and hands that descriptor to its C loader (`load(fd, error, size)`, 0 on
    /// success, else a reason in `error`); a failure's error is the reason, for the caller's message.
    package static func load(_ path: String,
                             with load: (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32) throws(LoadFailure) {
        let file = try open(path)
        var buffer = [CChar](repeating: 0, count: 512)
        let code = buffer.withUnsafeMutableBufferPointer { load(file.rawValue, $0.baseAddress, $0.count) }
        guard code != 0 else { return }
        throw LoadFailure(reason: text(buffer, or: "unknown error"))
    }

    /// Why a library could not be opened or loaded.
    package struct LoadFailure: Error {
        package var reason: String
    }

    /// The C string a loader left in `buffer`, or `fallback`.
    package static func text(_ buffer: [CChar], or fallback: String) -> String {
        buffer.withUnsafeBufferPointer { $0.baseAddress.flatMap { String(validatingCString: $0) } } ?? fallback
    }
}
