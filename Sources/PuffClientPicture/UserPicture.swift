import CPictureDecoder
import Glibc
import PuffPlatform

/// A user's picture, decoded to RGBA pixels where a crafted file cannot reach the program
/// that shows it.
///
/// Pictures are chosen by their users (`puff-enroll gesture --picture`), and the programs that
/// show them are the ones people type their passcodes into, puff-pad sometimes as root. So
/// stb_image never runs in them: the file is read here (no symlink followed, at most
/// `PictureFile.maximumSize`), and a fresh copy of the running program (`/proc/self/exe`, an
/// empty environment, standard error on /dev/null) started with the one argument
/// `PUFF_DECODER_ARGUMENT` decodes it. That child is entered by a constructor before `main`
/// (Sources/CPictureDecoder/decoder.c), so every program that links the kit has it and none can
/// parse an argument first. The child closes every other descriptor, caps its memory and CPU
/// time, gives up root for `nobody`, and confines itself with seccomp to read, write, memory
/// and exit before decoding. Its answer is untrusted: the size must be within the limits, the
/// pixels exactly width × height × 4 bytes followed by the end of the stream, and the exit
/// status 0; anything else is "cannot be decoded", and the child is killed.
///
/// Re-executing rather than forking keeps the child free of the parent's threads, locks and
/// memory (the greeter runs GLib threads; a forked child would also hold a copy of everything
/// the parent had read, a typed passcode included).
public final class UserPicture {
    /// Why a picture cannot be shown.
    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
        /// The file is there and was read, but holds no picture the decoder can show
        /// (truncated, damaged, or not PNG or JPEG): not the same as a missing picture.
        public var undecodable = false
    }

    /// Largest decoded picture: 64 megapixels (256 MiB of RGBA).
    public static let maximumPixels = Int(PUFF_DECODER_MAX_PIXELS)
    /// Longest side in pixels.
    public static let maximumSide = Int(PUFF_DECODER_MAX_SIDE)

    /// The width and height in pixels.
    public let width: Int
    public let height: Int
    /// width × height × 4 bytes: red, green, blue, alpha (not premultiplied), rows top to bottom.
    private let pixels: UnsafeMutableRawBufferPointer

    /// Where the store keeps `user`'s picture: `DIRECTORY/pictures/USER`.
    public static func path(directory: String, user: String) -> String {
        directory + "/" + RecordStore.picturesDirectory + "/" + user
    }

    /// Whether `width` × `height` is a picture the kit accepts.
    public static func acceptable(width: Int, height: Int) -> Bool {
        width > 0 && height > 0 && width <= maximumSide && height <= maximumSide && width * height <= maximumPixels
    }

    /// Reads `path` (a regular file, not followed through a symlink) and decodes it in the
    /// confined child.
    public convenience init(path: String) throws(LoadError) {
        let bytes: [UInt8]
        do {
            bytes = try PictureFile.read(path)
        } catch {
            throw LoadError(description: error.description)
        }
        try self.init(bytes: bytes, path: path)
    }

    /// Decodes the bytes of a PNG or JPEG file read from `path` (named in errors) in the
    /// confined child; `decoder` is the program started for it (tests give a false one).
    package init(bytes: [UInt8], path: String, decoder: String = "/proc/self/exe") throws(LoadError) {
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
            throw LoadError(description: "\(path) is not a PNG or JPEG picture", undecodable: true)
        }
        guard bytes.count <= Int(PUFF_DECODER_MAX_INPUT),
              let (width, height, pixels) = Self.decodeConfined(bytes, decoder: decoder) else {
            throw LoadError(description: "\(path): the picture could not be decoded (truncated or damaged)", undecodable: true)
        }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    deinit {
        // The picture is not secret, but the pixels are large: give them back at once.
        pixels.deallocate()
    }

    /// The RGBA pixels (width × height × 4 bytes, rows top to bottom).
    public func withRGBA<Result, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Result) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(pixels))
    }

    /// Starts the decoder, hands it `bytes`, and reads back its answer as untrusted data.
    private static func decodeConfined(_ bytes: [UInt8], decoder: String)
        -> (Int, Int, UnsafeMutableRawBufferPointer)? {
        guard let (toChild, childInput) = try? ChildProcess.socketPair() else { return nil }
        guard let (fromChild, childOutput) = try? ChildProcess.socketPair() else {
            close(toChild); close(childInput)
            return nil
        }
        let started = try? ChildProcess.spawn(decoder, arguments: [decoder, PUFF_DECODER_ARGUMENT],
                                              input: childInput, output: childOutput)
        close(childInput)
        close(childOutput)
        guard let child = started else {
            close(toChild); close(fromChild)
            return nil
        }
        // MSG_NOSIGNAL: a child that died early gives EPIPE, not a SIGPIPE that ends the caller.
        let sent = bytes.withUnsafeBytes { buffer in (try? FileDescriptor.sendAll(toChild, buffer)) != nil }
        close(toChild)
        let answer = sent ? readAnswer(fromChild) : nil
        // A child that lied or stalls is not waited for politely.
        if answer == nil { kill(child, SIGKILL) }
        close(fromChild)
        let status = (try? ChildProcess.wait(child)) ?? -1
        guard let answer, status == 0 else {
            answer?.2.deallocate()
            return nil
        }
        return answer
    }

    /// The size (checked against the limits), exactly width × height × 4 bytes of pixels, and
    /// then the end of the stream; nil for anything else.
    private static func readAnswer(_ fd: Int32) -> (Int, Int, UnsafeMutableRawBufferPointer)? {
        var header = (UInt32(0), UInt32(0))
        let headerBytes = (try? withUnsafeMutableBytes(of: &header) { buffer throws(Errno) in
            try FileDescriptor.read(fd, into: buffer)
        }) ?? 0
        let width = Int(UInt32(littleEndian: header.0)), height = Int(UInt32(littleEndian: header.1))
        guard headerBytes == 8, acceptable(width: width, height: height) else { return nil }
        let pixels = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 * width * height, alignment: 16)
        let got = (try? FileDescriptor.read(fd, into: pixels)) ?? -1
        var extra: UInt8 = 0
        let more = (try? withUnsafeMutableBytes(of: &extra) { buffer throws(Errno) in
            try FileDescriptor.read(fd, into: buffer)
        }) ?? -1
        guard got == pixels.count, more == 0 else {
            pixels.deallocate()
            return nil
        }
        return (width, height, pixels)
    }
}
