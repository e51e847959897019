import Glibc

/// glibc's `close_range` (2.34 and later), which the Glibc module does not import.
@_silgen_name("close_range")
private func closeRange(_ first: UInt32, _ last: UInt32, _ flags: Int32) -> Int32

/// The first thing `puff-check` does, before it reads anything: a setuid program inherits
/// its caller's environment, descriptors, signal dispositions and umask, and trusts none.
enum Hardening {
    /// Signals that could stop the helper between counting an attempt and verifying it, or
    /// between writing a record and syncing it. SIGKILL cannot be ignored; the counter is
    /// written before the verification, so a killed attempt still counts.
    static let ignoredSignals: [Int32] = [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU,
                                          SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXFSZ]

    /// Clears the environment, makes 0–2 valid and closes every other descriptor, ignores
    /// the interrupting signals and forces the umask. `false` when that cannot be done.
    static func apply() -> Bool {
        guard clearenv() == 0 else { return false }
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 {
            // A closed standard descriptor would let the next open() take its number, and
            // a report could then land in a store file.
            let null = open("/dev/null", O_RDWR | O_NOCTTY)
            guard null == descriptor else { return false }
        }
        if closeRange(3, UInt32.max, 0) != 0 {
            for descriptor: Int32 in 3..<4096 { close(descriptor) }
        }
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&ignore.sa_mask)
        for signal in ignoredSignals {
            guard sigaction(signal, &ignore, nil) == 0 else { return false }
        }
        var none = sigset_t()
        sigemptyset(&none)
        guard sigprocmask(SIG_SETMASK, &none, nil) == 0 else { return false }
        umask(0o077)
        return true
    }
}
