import Glibc

/// A picture file chosen by the user (puff-pad, puff-lock), read whole before decoding: a
/// regular file reached without following a final symlink, at most `maximumSize` bytes.
/// Not a trusted store file: nothing here is checked for ownership.
public enum PictureFile {
    /// Largest picture file accepted.
    public static let maximumSize = 32 << 20

    /// Why a picture file could not be read; `description` is for the user.
    public struct ReadError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The bytes of `path` (open(2) with O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK, fstat(2), read(2)).
    public static func read(_ path: String) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else { throw ReadError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(description: "\(path) is not a regular file")
        }
        let tooLarge = ReadError(description: "\(path) is larger than 32 MiB")
        guard status.st_size <= maximumSize else { throw tooLarge }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            // Array's closure methods rethrow untyped errors, so the typed read is caught inside.
            let read = chunk.withUnsafeMutableBytes { buffer in try? retryingOnInterrupt { Glibc.read(fd, buffer.baseAddress, buffer.count) } }
            guard let got = read else { throw ReadError(description: "cannot read \(path)") }
            if got == 0 { break }
            bytes += chunk[0..<got]
            // The file may grow after fstat.
            guard bytes.count <= maximumSize else { throw tooLarge }
        }
        return bytes
    }
}
