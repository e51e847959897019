// A stand-in for Swift's Glibc module in the Embedded Swift build of the PAM module and the
// setuid helper (`make module`, `make helper`). Embedded Swift ships no Glibc overlay, so this
// module, named `Glibc`, re-exports the C headers (CGlibc) and adds the few overlay pieces Puff
// uses, with the overlay's names and types, so the shared sources say `import Glibc` in both
// builds. The full-runtime builds (CLI, pad, tests, fuzzers) never see this file.
@_exported import CGlibc

/// The calling thread's `errno` (a C macro).
public var errno: Int32 {
    get { puff_errno_location().pointee }
    set { puff_errno_location().pointee = newValue }
}

/// `open(2)` without a mode.
public func open(_ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32 {
    puff_open(path, flags, 0)
}

/// `open(2)` with a mode.
public func open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    puff_open(path, flags, mode)
}

/// `openat(2)` with a mode.
public func openat(_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    puff_openat(directory, path, flags, mode)
}

/// `fcntl(2)` without an argument.
public func fcntl(_ descriptor: Int32, _ command: Int32) -> Int32 {
    puff_fcntl(descriptor, command, 0)
}

/// `fcntl(2)` with an integer argument.
public func fcntl(_ descriptor: Int32, _ command: Int32, _ argument: Int32) -> Int32 {
    puff_fcntl(descriptor, command, argument)
}

/// `SIG_IGN` (a C macro casting 1 to a handler).
public var SIG_IGN: __sighandler_t? { puff_sig_ign() }

// The file-type and permission bits as `mode_t`, as the overlay declares them.
public var S_IFMT: mode_t { 0o170000 }
public var S_IFDIR: mode_t { 0o040000 }
public var S_IFREG: mode_t { 0o100000 }
public var S_ISUID: mode_t { 0o004000 }
public var S_ISGID: mode_t { 0o002000 }
public var S_ISVTX: mode_t { 0o001000 }

/// `MAP_FAILED` (a C macro casting -1 to a pointer), with the overlay's type.
public var MAP_FAILED: UnsafeMutableRawPointer! { UnsafeMutableRawPointer(bitPattern: -1) }
