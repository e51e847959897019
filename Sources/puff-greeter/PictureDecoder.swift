import CLightDM
import CStb
import Glibc
import PuffPlatform
import PuffScreen

/// The user's picture, decoded where a crafted file cannot reach the login screen.
///
/// Pictures are chosen by their users (`puff-enroll gesture --picture`), and the greeter that
/// shows them is the one process every user types their passcode into. So stb_image never
/// runs in it: the greeter reads the file (no symlink followed, at most 32 MiB), runs itself
/// again as a child (`--decode-picture`) that gets the bytes on standard input and, before
/// decoding, closes every other descriptor, caps its memory and CPU time, and confines itself
/// with a seccomp filter to read, write, memory and exit. The child answers with the size and
/// the RGBA pixels, which the greeter checks against the limits before using them.
enum PictureDecoder {
    static let childArgument = "--decode-picture"
    /// The child's address space cap: the largest picture's pixels (64 MP × 4 bytes) twice over,
    /// and the file.
    static let childMemory = 640 << 20
    static let childSeconds = 20

    /// The picture at `path`, or nil (no file, not a picture, too large, the decoder failed).
    static func load(_ path: String) -> LockPicture? {
        guard let bytes = try? LockPicture.read(path) else { return nil }
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
            Report.warn("\(path) is not a PNG or JPEG picture")
            return nil
        }
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        guard puff_pipe_cloexec(&input) == 0 else { return nil }
        guard puff_pipe_cloexec(&output) == 0 else {
            close(input[0]); close(input[1])
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        let arguments = ["puff-greeter", childArgument].map { $0.withCString { strdup($0) } }
        defer { arguments.forEach { free($0) } }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments + [nil]
        var environment: [UnsafeMutablePointer<CChar>?] = [nil]
        var child: pid_t = 0
        let spawned = posix_spawn(&child, "/proc/self/exe", &actions, nil, &argv, &environment)
        close(input[0])
        close(output[1])
        guard spawned == 0 else {
            close(input[1]); close(output[0])
            Report.warn("cannot start the picture decoder")
            return nil
        }
        defer {
            close(output[0])
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        let sent = bytes.withUnsafeBytes { writeAll(input[1], $0) }
        close(input[1])
        guard sent else { return nil }
        var header: (UInt32, UInt32) = (0, 0)
        let gotHeader = withUnsafeMutableBytes(of: &header) { readAll(output[0], $0) }
        let width = Int(UInt32(littleEndian: header.0)), height = Int(UInt32(littleEndian: header.1))
        guard gotHeader, width > 0, height > 0, width <= 100_000, height <= 100_000,
              width * height <= LockPicture.maximumPixels else {
            Report.warn("\(path): the picture could not be decoded")
            return nil
        }
        let pixels = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 * width * height, alignment: 8)
        defer { pixels.deallocate() }
        guard readAll(output[0], pixels) else {
            Report.warn("\(path): the decoder stopped early")
            return nil
        }
        return try? LockPicture(rgba: UnsafeRawBufferPointer(pixels), width: width, height: height, path: path)
    }

    /// The child: bytes on standard input, size and RGBA pixels on standard output. Exit 0
    /// when a picture was written.
    static func runChild() -> Int32 {
        // Nothing but its pipes: no X connection, no LightDM pipes, no logs.
        guard puff_decoder_isolate(3, UInt(childMemory), UInt(childSeconds)) == 0 else { return 3 }
        let capacity = PictureFile.maximumSize + 1
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        var length = 0
        while length < capacity {
            let got = read(0, input.baseAddress! + length, capacity - length)
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            length += got
        }
        guard length > 0, length <= PictureFile.maximumSize, let count = Int32(exactly: length) else { return 2 }
        guard puff_confine_decoder() == 0 else { return 3 }
        var w: Int32 = 0, h: Int32 = 0, components: Int32 = 0
        let base = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard stbi_info_from_memory(base, count, &w, &h, &components) == 1, w > 0, h > 0,
              Int(w) <= 100_000, Int(h) <= 100_000, Int(w) * Int(h) <= LockPicture.maximumPixels,
              let decoded = stbi_load_from_memory(base, count, &w, &h, &components, 4) else { return 1 }
        var header = (UInt32(w).littleEndian, UInt32(h).littleEndian)
        let wroteHeader = withUnsafeBytes(of: &header) { writeAll(1, $0) }
        guard wroteHeader, writeAll(1, UnsafeRawBufferPointer(start: decoded, count: 4 * Int(w) * Int(h))) else { return 1 }
        return 0
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let base = bytes.baseAddress else { return false }
            let wrote = write(fd, base + offset, bytes.count - offset)
            if wrote < 0 && errno == EINTR { continue }
            if wrote <= 0 { return false }
            offset += wrote
        }
        return true
    }

    private static func readAll(_ fd: Int32, _ bytes: UnsafeMutableRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let base = bytes.baseAddress else { return false }
            let got = read(fd, base + offset, bytes.count - offset)
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { return false }
            offset += got
        }
        return true
    }
}
