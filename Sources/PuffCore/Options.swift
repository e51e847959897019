/// Every setting of the module and of `puff-enroll`, with its default.
///
/// The same grammar serves the module arguments in a PAM service file and the lines of
/// `puff.conf`: defaults first, then the file, then the arguments (pam_faillock's order).
public struct PuffOptions: Equatable, Sendable {
    /// Directory of the user records, the host key and `puff.conf`.
    public var recordDirectory = "/etc/puff"
    /// Directory of the persistent lockout counters.
    public var stateDirectory = "/var/lib/puff"
    /// The configuration file read before the module arguments.
    public var configFile = "/etc/puff/puff.conf"
    /// The setuid helper the module runs when it is not root (`make install` puts it there).
    public var helperPath = "/usr/local/sbin/puff-check"
    /// Return PAM_IGNORE (without prompting) for a user who has no Puff record.
    public var nullOK = false
    /// `nullok_prompt`: `nullok`, except in a discreet service (the caller is not the user),
    /// where an account without a record (or a name that is no account) is asked the same
    /// prompt as everyone, its reply is handed on as PAM_AUTHTOK for the password module
    /// (`try_first_pass`), nothing is counted, and then PAM_IGNORE. There the module also says
    /// nothing after a reply it does not accept, for every account alike: the next module
    /// decides and reports. The shipped "Puff, else the password" stack uses it so every
    /// account gets the same first prompt and a user without Puff types the password once.
    public var nullOKPrompt = false
    /// `tell_state`: PAM services that name the keypad and tell the lock state (the prompt
    /// with its TYPE, the lock and "passcode required" notices) although the caller is not
    /// the user: a display manager's login screen, which shows every user's picture anyway.
    /// Honoured only in a process whose real and effective uid are root (the caller is root,
    /// which chose the service name); su, sudo and anything an ordinary user starts stay
    /// discreet whatever is listed. Empty (the default): every such service is discreet.
    public var tellStateServices: [String] = []
    /// Log detail about each decision (never a secret).
    public var debug = false
    /// Tell the user nothing beyond the prompt (no lockout or error messages).
    public var silent = false
    /// Do not ask libpam for the usual delay after a failure.
    public var noDelay = false
    /// Use a token set by an earlier module in the stack, prompting only when there is none.
    public var tryFirstPass = false
    /// Use a token set by an earlier module in the stack, failing when there is none.
    public var useFirstPass = false
    /// This line runs after the password succeeded (pam_faillock's `authsucc`): it takes back
    /// the failure this transaction's earlier Puff line counted when the password that
    /// succeeded is the text typed at Puff's prompt. It prompts for nothing and decides nothing.
    public var authSucc = false
    /// `keyring = yes`: keep a copy of the system password sealed to the passcode
    /// (docs/admin/protection-at-rest.md, "The login keyring") and, after a passcode login, hand it
    /// on as PAM_AUTHTOK so pam_gnome_keyring and pam_kwallet5 further down unlock. Off by
    /// default; refused in fleet mode (`keyringRefusal`).
    public var keyring = false
    /// The lockout policy.
    public var lockout = LockoutPolicy()
    /// When the gesture is trusted and when the passcode is required instead.
    public var quickFactor = QuickFactorPolicy()
    /// The weakest passcode type accepted, at enrollment and at login (a record of a weaker
    /// type enrolled earlier is refused unverified and not counted, except as the proof for
    /// changing it); `nil` accepts all types from an administrator, and at least 6 digits
    /// from a user setting their own passcode.
    public var minimumPasscode: PasscodeType?
    /// How long an attempt waits for another attempt on the same user to finish, in seconds.
    public var lockWaitSeconds: Int64 = 30
    /// argon2id cost for new hashes.
    public var kdf = Argon2Parameters(memoryKiB: 65536, iterations: 1)
    /// Gesture raster square, in percent of the picture's longest side (used at enrollment;
    /// a template keeps the parameters it was built with).
    public var gestureRasterPercent = 3.0
    /// Gesture tolerance square, in percent of the longest side.
    public var gestureTolerancePercent = 4.5
    /// Share of a path's stored points that must be hit, in percent.
    public var gestureHitRatioPercent = 70.0
    /// Largest attempt raster size allowed, in percent of the stored one (anti-scribble).
    public var gestureOverflowPercent = 140.0
    /// What puff-lock, puff-greeter and puff-pad show of a gesture while it is drawn (the
    /// module only accepts the key).
    public var gestureTrail = GestureTrail.fade
    /// Fleet mode: records and the fleet-wide counter in an LDAP directory (DirectoryOptions.swift).
    public var directory = DirectorySettings()
    /// Tpm mode: where the TPM that keeps the store's key is (TPMSettings.swift).
    public var tpm = TPMSettings()

    /// The gesture parameters the four percentages describe, or the reason they cannot work together.
    public func gestureParameters() throws(OptionError) -> GestureParameters {
        do {
            return try GestureParameters(raster: gestureRasterPercent / 100, tolerance: gestureTolerancePercent / 100,
                                         minimumHitRatio: gestureHitRatioPercent / 100,
                                         overflow: gestureOverflowPercent / 100)
        } catch {
            throw OptionError(key: "gesture_*", reason: "the gesture parameters do not fit together (\(error))")
        }
    }

    /// The version-2 recognizer settings for new enrollments: the defaults with their
    /// distances scaled by `gesture_tolerance` / 4.5 (the default 4.5 % keeps them).
    public func gestureRecognizerSettings() throws(OptionError) -> GestureRecognizerSettings {
        guard let settings = GestureRecognizerSettings.scaled(by: gestureTolerancePercent / 4.5) else {
            throw OptionError(key: "gesture_tolerance", reason: "the gesture tolerance is out of range")
        }
        return settings
    }

    /// Why `keyring = yes` is not honoured with these options, or `nil`: in fleet mode a
    /// directory password opens every host, so one host's copy would be the fleet's.
    public var keyringRefusal: String? {
        guard keyring, directory.isEnabled else { return nil }
        return "keyring = yes is refused in fleet mode (a directory password opens every host); no password is kept or released"
    }

    /// The defaults.
    public init() {}
}

/// A value that cannot be used: the module fails closed on these.
public struct OptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key concerned.
    public var key: String
    /// What is wrong, without echoing the value (it could be anything).
    public var reason: String

    /// Creates an error.
    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    /// "key: reason".
    public var description: String { "\(key): \(reason)" }
}

/// Parses `key=value` and flag tokens into `PuffOptions`.
public enum OptionParser {
    /// Where a token came from; `conf=` is only meaningful as a module argument.
    public enum Source: Sendable {
        /// A module argument or a `puff-enroll` option.
        case argument
        /// A line of `puff.conf`.
        case configFile
    }

    /// The keys of `apply` (fleet mode's are DirectorySettings's).
    enum Key: String, CaseIterable {
        case dir, state_dir, conf, helper, nullok, nullok_prompt, tell_state, debug, silent, nodelay, try_first_pass, use_first_pass, authsucc
        case keyring
        case even_deny_root, root_exempt, max_failures, min_passcode, deny, fail_interval, unlock_time, delays
        case gesture_tries, passcode_interval, gesture_after_reboot, lock_wait, gesture_raster, gesture_tolerance
        case gesture_hit_ratio, gesture_overflow, gesture_trail, kdf_ops, kdf_mem_kib

        /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
        init?(rawValue: String) { self.init(bytesOf: rawValue) }
    }

    /// Applies one token. Unknown keys are returned as warnings (the caller logs them);
    /// a known key with a bad value throws, and the caller fails closed.
    public static func apply(_ token: String, to options: inout PuffOptions,
                             from source: Source) throws(OptionError) -> String? {
        let key: Substring
        let value: Substring?
        if let equals = token.utf8.firstIndex(of: UInt8(ascii: "=")) {
            key = token[..<equals]
            value = token[token.utf8.index(after: equals)...]
        } else {
            key = token[...]
            value = nil
        }
        let name = String(key)

        func flag() throws(OptionError) -> Bool {
            guard value == nil else { throw OptionError(key: name, reason: "takes no value") }
            return true
        }
        func text() throws(OptionError) -> Substring {
            guard let value else { throw OptionError(key: name, reason: "needs a value") }
            return value
        }
        func path() throws(OptionError) -> String {
            let raw = try text()
            guard Self.isAbsolutePathWithoutParent(raw), raw.utf8.count < 4096, !raw.utf8.contains(0) else {
                throw OptionError(key: name, reason: "must be an absolute path without '..'")
            }
            return String(raw)
        }
        func integer(_ range: ClosedRange<Int64>) throws(OptionError) -> Int64 {
            guard let parsed = Self.integer(try text()), range.contains(parsed) else {
                throw OptionError(key: name, reason: "must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return parsed
        }
        // The range is also given as text: interpolating a Double would link the floating-point
        // formatter (6 KB) into the module for this one message.
        func percent(_ range: ClosedRange<Double>, _ spelled: String) throws(OptionError) -> Double {
            guard let value = Self.decimal(try text()), range.contains(value) else {
                throw OptionError(key: name, reason: "must be a percentage in " + spelled)
            }
            return value
        }
        func duration() throws(OptionError) -> Int64 {
            guard let seconds = Self.duration(try text()) else {
                throw OptionError(key: name, reason: "must be a duration like 90, 90s, 5m, 2h or 1d (at most 365d)")
            }
            return seconds
        }

        guard let known = Key(rawValue: name) else {
            // Fleet mode's keys (DirectoryOptions.swift).
            if try options.directory.apply(name, value) { return nil }
            // Tpm mode's keys (TPMSettings.swift).
            if try options.tpm.apply(name, value) { return nil }
            return "unknown option '\(LogText.escape(name))' ignored"
        }
        // The key is matched once, by the enum's own table, and the switch is over its cases.
        switch known {
        case .dir: options.recordDirectory = try path()
        case .state_dir: options.stateDirectory = try path()
        case .conf:
            guard source == .argument else { return "'conf' is ignored inside the configuration file" }
            options.configFile = try path()
        case .helper: options.helperPath = try path()
        case .nullok: options.nullOK = try flag()
        case .nullok_prompt:
            options.nullOKPrompt = try flag()
            options.nullOK = true
        case .tell_state:
            // Lowercase only: libpam lowercases the service name (pam_start, pam_set_item), so
            // an entry with a capital would never match.
            let services = try text().splitBytes(at: UInt8(ascii: ","), omittingEmptySubsequences: false)
            guard services.count <= 16, services.allSatisfy({ (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy(Self.isServiceNameByte) }) else {
                throw OptionError(key: name, reason: "must list 1 to 16 PAM service names (lowercase letters, digits, '.', '_', '+', '-')")
            }
            options.tellStateServices = services.map(String.init)
        case .debug: options.debug = try flag()
        case .silent: options.silent = try flag()
        case .nodelay: options.noDelay = try flag()
        case .try_first_pass: options.tryFirstPass = try flag()
        case .use_first_pass: options.useFirstPass = try flag()
        case .authsucc:
            // Only a service line can know it sits after the password; in the file it would
            // turn every Puff line into one.
            guard source == .argument else { return "'authsucc' is ignored inside the configuration file" }
            options.authSucc = try flag()
        case .keyring:
            // `keyring`, `keyring=yes` or `keyring=no`.
            switch value {
            case nil: options.keyring = true
            case let given? where given.sameBytes(as: "yes"): options.keyring = true
            case let given? where given.sameBytes(as: "no"): options.keyring = false
            default: throw OptionError(key: name, reason: "must be yes or no")
            }
        case .even_deny_root: options.lockout.evenDenyRoot = try flag()
        case .root_exempt: options.lockout.evenDenyRoot = !(try flag())
        case .max_failures: options.lockout.maxFailures = UInt32(try integer(0...1_000_000))
        case .min_passcode:
            guard let type = PasscodeType(rawValue: String(try text())) else {
                throw OptionError(key: name, reason: "must be digits4, digits6, numeric or alphanumeric")
            }
            options.minimumPasscode = type
        case .deny: options.lockout.deny = UInt32(try integer(0...1_000_000))
        case .fail_interval: options.lockout.failInterval = try duration()
        case .unlock_time: options.lockout.delays = [try duration()]
        case .delays:
            let items = try text().splitBytes(at: UInt8(ascii: ","), omittingEmptySubsequences: false)
            var delays: [Int64] = []
            for item in items {
                guard let seconds = Self.duration(item) else {
                    throw OptionError(key: name, reason: "must be a comma-separated list of durations")
                }
                delays.append(seconds)
            }
            guard (1...32).contains(delays.count) else {
                throw OptionError(key: name, reason: "must list 1 to 32 durations")
            }
            options.lockout.delays = delays
        case .gesture_tries: options.quickFactor.gestureTries = UInt32(try integer(0...1_000_000))
        case .passcode_interval: options.quickFactor.passcodeInterval = try duration()
        case .gesture_after_reboot: options.quickFactor.passcodeAfterReboot = !(try flag())
        case .lock_wait: options.lockWaitSeconds = try integer(1...600)
        case .gesture_raster: options.gestureRasterPercent = try percent(0.5...25, "0.5...25.0")
        case .gesture_tolerance: options.gestureTolerancePercent = try percent(0.5...100, "0.5...100.0")
        case .gesture_hit_ratio: options.gestureHitRatioPercent = try percent(1...100, "1.0...100.0")
        case .gesture_overflow: options.gestureOverflowPercent = try percent(100...1000, "100.0...1000.0")
        case .gesture_trail:
            guard let trail = GestureTrail(rawValue: String(try text())) else {
                throw OptionError(key: name, reason: "must be fade, hidden or visible")
            }
            options.gestureTrail = trail
        case .kdf_ops:
            options.kdf.iterations = UInt32(try integer(Int64(Argon2Parameters.iterationRange.lowerBound)...Int64(Argon2Parameters.iterationRange.upperBound)))
        case .kdf_mem_kib:
            options.kdf.memoryKiB = UInt32(try integer(Int64(Argon2Parameters.memoryKiBRange.lowerBound)...Int64(Argon2Parameters.memoryKiBRange.upperBound)))
        }
        return nil
    }

    /// Splits `puff.conf` into tokens: one `key = value` or `flag` a line, `#` starts a
    /// comment line, blank lines are skipped, spaces around `=` are dropped. Lines may end in
    /// LF or CRLF (the split is on bytes, not characters: to Swift `"\r\n"` is one character).
    public static func tokens(ofConfigFile text: String) -> [String] {
        // Byte by byte: every separator and blank here is ASCII, and an ASCII byte never occurs
        // inside the UTF-8 encoding of another scalar, so this cuts exactly where the scalars
        // would, without building substrings scalar by scalar (that was half of what
        // `puff-check query` executed).
        var tokens: [String] = []
        for rawLine in Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            let line = trimmed(rawLine)
            if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
            if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                tokens.append(String(decoding: trimmed(line[..<equals]), as: UTF8.self) + "="
                              + String(decoding: trimmed(line[line.index(after: equals)...]), as: UTF8.self))
            } else {
                tokens.append(String(decoding: line, as: UTF8.self))
            }
        }
        return tokens
    }

    /// `bytes` without leading and trailing spaces, tabs and carriage returns.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0d }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) }) else { return [] }
        return bytes[first...last]
    }

    /// A byte of a PAM service name as `tell_state` accepts it.
    static func isServiceNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// A non-negative decimal integer of at most 12 digits.
    static func integer(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 12 else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + Int64(byte - 0x30)
        }
        return value
    }

    /// A non-negative decimal with at most 3 fraction digits (`4.5`), as a `Double`.
    static func decimal(_ text: Substring) -> Double? {
        let dot = text.utf8.firstIndex(of: UInt8(ascii: "."))
        guard let whole = integer(text[..<(dot ?? text.endIndex)]), whole <= 1_000_000 else { return nil }
        guard let dot else { return Double(whole) }
        let digits = text[text.utf8.index(after: dot)...]
        guard (1...3).contains(digits.utf8.count), let fraction = integer(digits) else { return nil }
        var scale = 1.0
        for _ in 0..<digits.utf8.count { scale *= 10 }
        return Double(whole) + Double(fraction) / scale
    }

    /// Whether `path` starts with "/" and has no ".." component, cut at every "/" byte as the
    /// kernel cuts it (a `Character` split would not cut at a "/" followed by a combining mark,
    /// and would let "/etc/../\u{301}x" through).
    static func isAbsolutePathWithoutParent(_ path: Substring) -> Bool {
        path.utf8.first == UInt8(ascii: "/")
            && !path.splitBytes(at: UInt8(ascii: "/")).contains { $0.sameBytes(as: "..") }
    }

    /// Seconds from `90`, `90s`, `5m`, `2h` or `1d`; at most 365 days.
    static func duration(_ text: Substring) -> Int64? {
        // The unit is one ASCII letter, so its last byte is the whole of it; none means seconds.
        let unit: Int64? = switch text.utf8.last {
        case UInt8(ascii: "s"): 1
        case UInt8(ascii: "m"): 60
        case UInt8(ascii: "h"): 3600
        case UInt8(ascii: "d"): 86400
        default: nil
        }
        let digits = unit == nil ? text : text[..<text.utf8.index(before: text.endIndex)]
        guard let count = integer(digits) else { return nil }
        let seconds = count.multipliedReportingOverflow(by: unit ?? 1)
        guard !seconds.overflow, seconds.partialValue <= 365 * 86400 else { return nil }
        return seconds.partialValue
    }
}
