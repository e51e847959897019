import Glibc
import PuffCore
import PuffPlatform
import Synchronization

/// A setup step of a test failed (not the code under test).
struct SetupError: Error, CustomStringConvertible {
    var what: String
    var code: Int32 = errno
    var description: String { "\(what): errno \(code)" }
}

/// A fresh root 0700 directory under `/tmp`, removed with everything in it when the value ends.
struct ScratchDirectory: ~Copyable {
    /// Its absolute path.
    let path: String

    init() throws {
        var template = Array("/tmp/puff-unit-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw SetupError(what: "mkdtemp")
        }
        let made = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard chmod(made, 0o700) == 0 else {
            removeTree(made)
            throw SetupError(what: "chmod \(made)")
        }
        path = made
    }

    /// `path/name`.
    func callAsFunction(_ name: String) -> String { path + "/" + name }

    deinit { removeTree(path) }
}

/// Removes `path` and everything below it without following symlinks.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        _ = chmod(path, 0o700)
        for name in (try? directoryNames(path)) ?? [] { removeTree(path + "/" + name) }
        _ = rmdir(path)
    } else {
        _ = unlink(path)
    }
}

/// Writes `bytes` to a new or truncated file and sets its mode exactly (whatever the umask).
func makeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw SetupError(what: "open \(path)") }
    defer { close(fd) }
    let wrote = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard wrote == bytes.count else { throw SetupError(what: "write \(path)") }
    guard fchmod(fd, mode) == 0 else { throw SetupError(what: "fchmod \(path)") }
}

func makeFile(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
    try makeFile(path, Array(text.utf8), mode: mode)
}

func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
    guard mkdir(path, 0o700) == 0 else { throw SetupError(what: "mkdir \(path)") }
    try setMode(path, mode)
}

func setMode(_ path: String, _ mode: mode_t) throws {
    guard chmod(path, mode) == 0 else { throw SetupError(what: "chmod \(path)") }
}

func setOwner(_ path: String, _ uid: uid_t) throws {
    guard lchown(path, uid, uid) == 0 else { throw SetupError(what: "chown \(path)") }
}

func makeSymlink(_ target: String, at path: String) throws {
    guard symlink(target, path) == 0 else { throw SetupError(what: "symlink \(path)") }
}

/// The whole content of a file, read without any of the code under test.
func contents(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { throw SetupError(what: "open \(path)") }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard got >= 0 else { throw SetupError(what: "read \(path)") }
        if got == 0 { return result }
        result += chunk[..<got]
    }
}

/// `lstat` of `path`.
func fileStatus(_ path: String) throws -> stat {
    var info = stat()
    guard lstat(path, &info) == 0 else { throw SetupError(what: "lstat \(path)") }
    return info
}

/// The names in a directory, without `.` and `..`.
func directoryNames(_ path: String) throws -> [String] {
    guard let stream = opendir(path) else { throw SetupError(what: "opendir \(path)") }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// A copy of `text` in wiped memory.
func secret(_ text: String) throws -> SecureBytes {
    try secret(Array(text.utf8))
}

func secret(_ bytes: [UInt8]) throws -> SecureBytes {
    var out = try SecureBytes(count: bytes.count)
    out.withMutableBytes { destination in
        bytes.withUnsafeBytes { destination.copyMemory(from: $0) }
    }
    return out
}

/// The bytes of a secure buffer, for comparisons in tests.
func plain(_ bytes: borrowing SecureBytes) -> [UInt8] {
    bytes.withBytes { Array($0) }
}

/// A 32-byte host key filled with `byte`.
func hostKey(_ byte: UInt8) throws -> SecureBytes {
    try secret([UInt8](repeating: byte, count: PasscodeHasher.keyLength))
}

/// Runs `body` for `count` real threads at once (not the cooperative pool) and waits for all.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Work {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
    var threads: [pthread_t] = []
    for index in 0..<count {
        let work = Unmanaged.passRetained(Work { body(index) }).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<Work>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, work)
        precondition(status == 0, "pthread_create failed")
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
}

/// Problems reported from worker threads.
final class Problems: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ problem: String) { list.withLock { $0.append(problem) } }
    var all: [String] { list.withLock { $0 } }
}

/// A coarse classification of `StoreError`, ignoring paths and messages.
enum ErrorKind: Equatable {
    case system(Int32), unsafe, tooLarge, format(RecordFormatError), lockTimeout, wrongOwner, crypto, configuration, tampered, directory,
         directoryUnreachable, tpm
}

extension StoreError {
    var kind: ErrorKind {
        switch self {
        case .system(_, _, let errno): .system(errno.rawValue)
        case .unsafe: .unsafe
        case .tooLarge: .tooLarge
        case .format(_, let problem): .format(problem)
        case .lockTimeout: .lockTimeout
        case .wrongOwner: .wrongOwner
        case .crypto: .crypto
        case .configuration: .configuration
        case .tampered: .tampered
        case .directory: .directory
        case .directoryUnreachable: .directoryUnreachable
        case .tpm: .tpm
        }
    }
}

/// The kind of error `body` throws, or `nil` when it succeeds.
func errorKind(_ body: () throws(StoreError) -> Void) -> ErrorKind? {
    do {
        try body()
        return nil
    } catch {
        return error.kind
    }
}

/// A mutable clock for `FilesStore`.
final class TestClock: Sendable {
    private let seconds: Atomic<Int64>
    init(_ start: Int64) { seconds = Atomic(start) }
    var now: Int64 { seconds.load(ordering: .sequentiallyConsistent) }
    func advance(by delta: Int64) { seconds.add(delta, ordering: .sequentiallyConsistent) }
}
