// Every libc call of Puff goes through this file: one place retries on EINTR, turns -1 into a
// typed `Errno`, and sets O_CLOEXEC (CVE-2019-12210 leaked a descriptor into children).
import Glibc
import PuffCore

/// The one EINTR loop: runs `call` again while it fails with EINTR; any other failure (-1)
/// throws its errno. Every interruptible call below goes through it.
@inline(__always)
func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
    while true {
        let result = call()
        if result != -1 { return result }
        if errno != EINTR { throw Errno.current }
    }
}

/// An owned file descriptor, closed exactly once when it goes out of scope.
public struct FileDescriptor: ~Copyable {
    /// The raw descriptor.
    public let rawValue: Int32

    init(taking rawValue: Int32) { self.rawValue = rawValue }

    deinit { _ = Glibc.close(rawValue) }

    /// `fstat(2)`.
    public func status() throws(Errno) -> stat {
        var info = stat()
        guard fstat(rawValue, &info) == 0 else { throw Errno.current }
        return info
    }

    /// `read(2)` until end of file, refusing more than `limit` bytes.
    /// Returns `nil` when the file holds more than `limit` bytes. `regularFile`: the caller
    /// checked that it is one, whose read returns less than asked only at its end, so a short
    /// read ends it (one call for a small file instead of two).
    @inline(never)
    public func readAll(limit: Int, regularFile: Bool = false) throws(Errno) -> [UInt8]? {
        // The buffer grows with what is read (up to limit + 1 bytes, one more than allowed, to
        // see a file that is too long): zeroing 64 KiB for a 200-byte record was a fifth of
        // the module's instructions in a login.
        var bytes = [UInt8](repeating: 0, count: min(limit + 1, 4096))
        var filled = 0
        while filled <= limit {
            if filled == bytes.count {
                bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit + 1 - bytes.count)))
            }
            let got = try retryingOnInterrupt {
                bytes.withUnsafeMutableBytes { buffer in
                    Glibc.read(rawValue, buffer.baseAddress.map { $0 + filled }, buffer.count - filled)
                }
            }
            if got == 0 { break }
            filled += got
            if regularFile && filled < bytes.count { break }
        }
        guard filled <= limit else { return nil }
        bytes.removeLast(bytes.count - filled)
        return bytes
    }

    /// `read(2)` into `buffer` until it is full or the file ends; returns the byte count.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try Self.read(rawValue, into: buffer)
    }

    /// `read(2)` on a raw descriptor into `buffer` until it is full or the file ends.
    public static func read(_ rawValue: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        var filled = 0
        while filled < buffer.count, let base = buffer.baseAddress {
            let got = try retryingOnInterrupt { Glibc.read(rawValue, base + filled, buffer.count - filled) }
            if got == 0 { break }
            filled += got
        }
        return filled
    }

    /// `write(2)` until every byte is written.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        try Self.writeAll(rawValue, bytes)
    }

    /// `write(2)` until every byte is written, on a raw descriptor the caller keeps open
    /// (the helper's standard output).
    public static func writeAll(_ rawValue: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count, let base = bytes.baseAddress {
            let wrote = try retryingOnInterrupt { write(rawValue, base + done, bytes.count - done) }
            if wrote == 0 { throw Errno(EIO) }
            done += wrote
        }
    }

    /// `send(2)` with `MSG_NOSIGNAL` until every byte is sent, on a socket the caller keeps
    /// open: a peer that is gone gives EPIPE, never a SIGPIPE that would kill the host.
    public static func sendAll(_ socket: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count, let base = bytes.baseAddress {
            let sent = try retryingOnInterrupt { Glibc.send(socket, base + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            if sent == 0 { throw Errno(EIO) }
            done += sent
        }
    }

    /// `pwrite(2)` of the whole buffer at `offset`.
    public func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        try Self.writeAll(rawValue, bytes, at: offset)
    }

    /// `pwrite(2)` of the whole buffer at `offset` on a raw descriptor the caller keeps open.
    public static func writeAll(_ rawValue: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        var done = 0
        while done < bytes.count, let base = bytes.baseAddress {
            let wrote = try retryingOnInterrupt { pwrite(rawValue, base + done, bytes.count - done, off_t(offset + done)) }
            if wrote == 0 { throw Errno(EIO) }
            done += wrote
        }
    }

    /// `pread(2)` of up to `limit` bytes from offset 0.
    public func readPrefix(limit: Int) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: limit)
        var filled = 0
        while filled < limit {
            let got = try retryingOnInterrupt {
                bytes.withUnsafeMutableBytes { buffer in
                    pread(rawValue, buffer.baseAddress.map { $0 + filled }, limit - filled, off_t(filled))
                }
            }
            if got == 0 { break }
            filled += got
        }
        bytes.removeLast(limit - filled)
        return bytes
    }

    /// `fsync(2)`.
    public func sync() throws(Errno) {
        try Self.sync(rawValue)
    }

    /// `fsync(2)` on a raw descriptor the caller keeps open.
    public static func sync(_ rawValue: Int32) throws(Errno) {
        _ = try retryingOnInterrupt { fsync(rawValue) }
    }

    /// `fdatasync(2)` on a raw descriptor the caller keeps open: the data written in place is
    /// on disk (a file whose size did not change needs nothing more).
    public static func dataSync(_ rawValue: Int32) throws(Errno) {
        _ = try retryingOnInterrupt { fdatasync(rawValue) }
    }

    /// `fchmod(2)`.
    public func setMode(_ mode: mode_t) throws(Errno) {
        guard fchmod(rawValue, mode) == 0 else { throw Errno.current }
    }

    /// `flock(2)` with `LOCK_NB`: `true` when the lock was taken, `false` when another
    /// holder has it.
    public func tryLock(exclusive: Bool) throws(Errno) -> Bool {
        do throws(Errno) {
            _ = try retryingOnInterrupt { flock(rawValue, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) }
            return true
        } catch {
            if error.rawValue == EWOULDBLOCK { return false }
            throw error
        }
    }

    /// `flock(2)` with `LOCK_UN`. A lock on a descriptor that stays open (a directory a
    /// `StoreSession` holds) lasts until this call, not until its user returns.
    public func unlock() {
        _ = try? retryingOnInterrupt { flock(rawValue, LOCK_UN) }
    }

    /// Takes `flock(2)`, polling until `seconds` have passed; a bounded wait so one stuck
    /// process cannot hang every later login. Returns `false` on timeout.
    public func lock(exclusive: Bool, waitingAtMost seconds: Int64) throws(Errno) -> Bool {
        let deadline = Clock.monotonicNanoseconds() &+ min(max(seconds, 0), 3600) &* 1_000_000_000
        var pause: Int64 = 1_000_000
        while true {
            if try tryLock(exclusive: exclusive) { return true }
            if Clock.monotonicNanoseconds() >= deadline { return false }
            Clock.sleep(nanoseconds: pause)
            pause = min(pause * 2, 25_000_000)
        }
    }

    /// `openat(2)` relative to this directory, always with `O_CLOEXEC`, retrying on EINTR.
    public func open(_ name: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        FileDescriptor(taking: try retryingOnInterrupt { openat(rawValue, name, flags | O_CLOEXEC, mode) })
    }

    /// An unnamed file in this directory (`openat(2)` with `O_TMPFILE`): if the process dies
    /// before `link(as:)` gives it a name, the kernel frees it and nothing is left behind.
    public func openUnnamed(_ flags: Int32, mode: mode_t) throws(Errno) -> FileDescriptor {
        // glibc's O_TMPFILE is __O_TMPFILE | O_DIRECTORY; the Glibc module does not import it.
        try open(".", flags | 0o20_000_000 | O_DIRECTORY, mode: mode)
    }

    /// Gives the unnamed file `file` the name `name` in this directory (`linkat(2)` with
    /// `AT_EMPTY_PATH`, or through `/proc/self/fd` when that needs a capability we lack).
    public func link(_ file: borrowing FileDescriptor, as name: String) throws(Errno) {
        // AT_EMPTY_PATH (0x1000) is not imported by the Glibc module.
        if linkat(file.rawValue, "", rawValue, name, 0x1000) == 0 { return }
        let first = Errno.current
        guard first.rawValue == EPERM || first.rawValue == ENOENT || first.rawValue == EINVAL else { throw first }
        guard linkat(AT_FDCWD, "/proc/self/fd/\(file.rawValue)", rawValue, name, AT_SYMLINK_FOLLOW) == 0 else {
            throw Errno.current
        }
    }

    /// `fstatat(2)` of `name` in this directory, not following a symlink.
    public func status(of name: String) throws(Errno) -> stat {
        var info = stat()
        guard fstatat(rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { throw Errno.current }
        return info
    }

    /// `renameat(2)` within this directory.
    public func rename(_ from: String, to: String) throws(Errno) {
        guard renameat(rawValue, from, rawValue, to) == 0 else { throw Errno.current }
    }

    /// `unlinkat(2)` of a file in this directory.
    public func unlink(_ name: String) throws(Errno) {
        guard unlinkat(rawValue, name, 0) == 0 else { throw Errno.current }
    }

    /// `mkdirat(2)` in this directory.
    public func makeDirectory(_ name: String, mode: mode_t) throws(Errno) {
        guard mkdirat(rawValue, name, mode) == 0 else { throw Errno.current }
    }

    /// The names in this directory (`fdopendir(3)` on a duplicate, so this descriptor stays open).
    public func entries() throws(Errno) -> [String] {
        let copy = fcntl(rawValue, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw Errno.current }
        guard let stream = fdopendir(copy) else {
            let error = Errno.current
            _ = Glibc.close(copy)
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                guard let base = raw.bindMemory(to: CChar.self).baseAddress else { return nil }
                return String(validatingCString: base)
            }
            if let name, !name.sameBytes(as: "."), !name.sameBytes(as: "..") { names.append(name) }
        }
        return names
    }

    /// `open(2)` of a path the caller chose (an administrator's input file), with `O_CLOEXEC`.
    public static func open(path: String, _ flags: Int32) throws(Errno) -> FileDescriptor {
        FileDescriptor(taking: try retryingOnInterrupt { Glibc.open(path, flags | O_CLOEXEC) })
    }

    /// Opens `/`, the root of every trusted walk.
    public static func openRoot() throws(Errno) -> FileDescriptor {
        FileDescriptor(taking: try retryingOnInterrupt { Glibc.open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
    }
}

/// Clocks, passed explicitly where rules depend on time so tests can inject one.
public enum Clock {
    /// Wall-clock seconds since the epoch (persistent lock times survive a reboot).
    public static func wallSeconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }

    /// Monotonic nanoseconds, for bounded waits.
    public static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }

    /// Sleeps, resuming after signals until the time has passed.
    public static func sleep(nanoseconds: Int64) {
        var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

/// Child processes (the helper, started by the module and `puff-enroll`).
public enum ChildProcess {
    /// `waitpid(2)` for `child`: its raw wait status.
    public static func wait(_ child: pid_t) throws(Errno) -> Int32 {
        var status: Int32 = 0
        _ = try retryingOnInterrupt { waitpid(child, &status, 0) }
        return status
    }

    /// `posix_spawn(3)` of `path` with `arguments` (the first is the child's name), an empty
    /// environment, `input` and `output` as its standard input and output, /dev/null as its
    /// standard error, every signal at its default and none blocked; the child's pid.
    public static func spawn(_ path: String, arguments: [String], input: Int32, output: Int32) throws(Errno) -> pid_t {
        // The posix_spawn family returns its error number rather than setting errno.
        var actions = posix_spawn_file_actions_t()
        let madeActions = posix_spawn_file_actions_init(&actions)
        guard madeActions == 0 else { throw Errno(madeActions) }
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        let madeAttributes = posix_spawnattr_init(&attributes)
        guard madeAttributes == 0 else { throw Errno(madeAttributes) }
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigfillset(&defaults)
        guard posix_spawn_file_actions_adddup2(&actions, input, 0) == 0,
              posix_spawn_file_actions_adddup2(&actions, output, 1) == 0,
              posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) == 0,
              posix_spawnattr_setsigmask(&attributes, &empty) == 0,
              posix_spawnattr_setsigdefault(&attributes, &defaults) == 0,
              posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0
        else { throw Errno(EINVAL) }
        let copies = arguments.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        guard !copies.contains(nil) else { throw Errno(ENOMEM) }
        var argv = copies + [nil]
        var environment: [UnsafeMutablePointer<CChar>?] = [nil]
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, &argv, &environment)
        guard result == 0 else { throw Errno(result) }
        return child
    }

    /// `socketpair(2)` of Unix stream sockets with `SOCK_CLOEXEC`.
    public static func socketPair() throws(Errno) -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw Errno.current
        }
        return (ends[0], ends[1])
    }
}
