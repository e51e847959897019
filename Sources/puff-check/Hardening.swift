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

    /// Resource limits a caller could set to sabotage the helper, the values it runs with
    /// instead, and the least it accepts to run with at all. A small RLIMIT_FSIZE cut the
    /// counter write short (rolling the count back); RLIMIT_AS made argon2id fail on the right
    /// passcode; RLIMIT_CPU could kill it between counting and verifying; a core file of a
    /// process holding secrets is never wanted; a small RLIMIT_NOFILE failed the directory's
    /// socket, which reads as "unreachable" (fleet mode's offline cache). Setuid root may raise a hard limit only with
    /// CAP_SYS_RESOURCE (some containers drop it): then the soft limit is raised to the hard
    /// one, and a hard limit below the minimum makes the helper refuse to run, before it reads
    /// or counts anything.
    static let limits: [(resource: Int32, value: rlim_t, minimum: rlim_t)] = [
        (Int32(RLIMIT_FSIZE.rawValue), rlim_t.max, 64 * 1024 * 1024),
        (Int32(RLIMIT_CPU.rawValue), rlim_t.max, 60),
        (Int32(RLIMIT_AS.rawValue), rlim_t.max, 0),
        (Int32(RLIMIT_DATA.rawValue), rlim_t.max, 0),
        (Int32(RLIMIT_CORE.rawValue), 0, 0),
        (Int32(RLIMIT_STACK.rawValue), 8 * 1024 * 1024, 1024 * 1024),
        (Int32(RLIMIT_NOFILE.rawValue), 1024, 64),
    ]

    /// Sets the limits above; `false` when one stays below its minimum.
    static func resetLimits() -> Bool {
        for (resource, value, minimum) in limits {
            let which = __rlimit_resource_t(UInt32(resource))
            var wanted = rlimit(rlim_cur: value, rlim_max: value)
            if setrlimit(which, &wanted) == 0 { continue }
            var current = rlimit()
            guard getrlimit(which, &current) == 0 else { return false }
            // No CAP_SYS_RESOURCE: as far as the hard limit allows.
            current.rlim_cur = min(value, current.rlim_max)
            guard setrlimit(which, &current) == 0, current.rlim_cur >= minimum else { return false }
        }
        return true
    }

    /// Clears the environment, sets the resource limits, makes 0–2 valid and closes every
    /// other descriptor, ignores the interrupting signals and forces the umask. `false` when
    /// that cannot be done.
    static func apply() -> Bool {
        guard clearenv() == 0 else { return false }
        guard resetLimits() else { return false }
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
