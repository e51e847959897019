import PuffCore
import Testing

@Suite("OptionParser")
struct OptionParserTests {
    /// Applies `tokens` in order to the defaults.
    private func parse(_ tokens: [String], from source: OptionParser.Source = .argument) throws(OptionError) -> PuffOptions {
        var options = PuffOptions()
        for token in tokens {
            _ = try OptionParser.apply(token, to: &options, from: source)
        }
        return options
    }

    /// The error `token` raises, if any.
    private func failure(_ token: String, from source: OptionParser.Source = .argument) -> OptionError? {
        var options = PuffOptions()
        do {
            _ = try OptionParser.apply(token, to: &options, from: source)
            return nil
        } catch {
            #expect(options == PuffOptions(), "a refused token must not change the options")
            return error
        }
    }

    @Test("tpm mode's keys: taken as they are, checked by validate() where the TPM is used")
    func tpmKeys() throws {
        #expect(PuffOptions().tpm.tcti == "device:/dev/tpmrm0")
        #expect(throws: Never.self) { try PuffOptions().tpm.validate() }
        let options = try parse(["tpm_tcti=swtpm:host=127.0.0.1,port=2321", "tpm_library=/usr/lib/puff/puff-tpm.so"])
        #expect(options.tpm.tcti == "swtpm:host=127.0.0.1,port=2321")
        #expect(options.tpm.libraryPath == "/usr/lib/puff/puff-tpm.so")
        #expect(throws: Never.self) { try options.tpm.validate() }
        var unwarned = PuffOptions()
        #expect(try OptionParser.apply("tpm_tcti=device", to: &unwarned, from: .configFile) == nil)
        // Known keys without a value are refused at once, like every other key's.
        for bare in ["tpm_tcti", "tpm_library"] {
            #expect(failure(bare)?.key == bare)
        }
        // Bad values are known (no warning) and refused by validate(), naming the key.
        for (bad, key) in [("tpm_tcti=", "tpm_tcti"), ("tpm_tcti=cmd:tpm2_send -T x", "tpm_tcti"),
                           ("tpm_tcti=" + String(repeating: "a", count: 1025), "tpm_tcti"),
                           ("tpm_library=puff-tpm.so", "tpm_library"), ("tpm_library=/usr/../tmp/x.so", "tpm_library"),
                           ("tpm_library=", "tpm_library"), ("tpm_library=/usr/lib/puff tpm.so", "tpm_library")] {
            var options = PuffOptions()
            #expect(try OptionParser.apply(bad, to: &options, from: .configFile) == nil, "\(bad)")
            #expect(throws: OptionError.self, "\(bad)") { try options.tpm.validate() }
            do {
                try options.tpm.validate()
            } catch {
                #expect(error.key == key, "\(bad)")
            }
        }
    }

    @Test("the defaults")
    func defaults() {
        let options = PuffOptions()
        #expect(options.recordDirectory == "/etc/puff")
        #expect(options.stateDirectory == "/var/lib/puff")
        #expect(options.configFile == "/etc/puff/puff.conf")
        #expect(options.quickFactor == QuickFactorPolicy())
        #expect(options.quickFactor.gestureTries == 5)
        #expect(options.quickFactor.passcodeInterval == 172_800)
        #expect(options.quickFactor.passcodeAfterReboot)
        #expect(!options.nullOK && !options.debug && !options.silent && !options.noDelay)
        #expect(!options.tryFirstPass && !options.useFirstPass)
        #expect(options.lockout == LockoutPolicy())
        #expect(options.lockout.deny == 5)
        #expect(options.lockout.failInterval == 0)
        #expect(options.lockout.delays == [60, 300, 900, 900, 3600])
        #expect(options.lockout.evenDenyRoot)
        #expect(options.lockout.maxFailures == 10)
        #expect(options.minimumPasscode == nil)
        #expect(options.lockWaitSeconds == 30)
        #expect(options.kdf == Argon2Parameters(memoryKiB: 65536, iterations: 1))
    }

    @Test("every key with a good value")
    func everyKey() throws {
        var expected = PuffOptions()
        expected.recordDirectory = "/srv/puff"
        expected.stateDirectory = "/run/puff-state"
        expected.configFile = "/opt/puff/other.conf"
        expected.quickFactor.gestureTries = 3
        expected.quickFactor.passcodeInterval = 7 * 86400
        expected.quickFactor.passcodeAfterReboot = false
        expected.nullOK = true
        expected.debug = true
        expected.silent = true
        expected.noDelay = true
        expected.tryFirstPass = true
        expected.useFirstPass = true
        expected.lockout.evenDenyRoot = true
        expected.lockout.deny = 3
        expected.lockout.failInterval = 900
        expected.lockout.delays = [120]
        expected.lockout.maxFailures = 0
        expected.minimumPasscode = .digits6
        expected.lockWaitSeconds = 600
        expected.kdf = Argon2Parameters(memoryKiB: 1 << 20, iterations: 16)
        let options = try parse([
            "dir=/srv/puff", "state_dir=/run/puff-state", "conf=/opt/puff/other.conf",
            "gesture_tries=3", "passcode_interval=7d", "gesture_after_reboot",
            "nullok", "debug", "silent", "nodelay", "try_first_pass", "use_first_pass", "even_deny_root",
            "deny=3", "fail_interval=15m", "unlock_time=2m", "lock_wait=600", "kdf_ops=16", "kdf_mem_kib=1048576",
            "max_failures=0", "min_passcode=digits6",
        ])
        #expect(options == expected)
    }

    @Test("root_exempt turns root's lockout off; min_passcode takes a type name only")
    func rootExemptAndMinimum() throws {
        #expect(try !parse(["root_exempt"]).lockout.evenDenyRoot)
        #expect(try parse(["root_exempt", "even_deny_root"]).lockout.evenDenyRoot)
        #expect(try parse(["max_failures=25"]).lockout.maxFailures == 25)
        #expect(failure("min_passcode=6") != nil)
        #expect(failure("min_passcode=") != nil)
        #expect(failure("max_failures=-1") != nil)
        #expect(failure("root_exempt=1") == OptionError(key: "root_exempt", reason: "takes no value"))
    }

    @Test("gesture_trail: fade by default; fade, hidden or visible, spelled exactly; anything else refused with its words")
    func gestureTrail() throws {
        #expect(PuffOptions().gestureTrail == .fade)
        #expect(try parse(["gesture_trail=hidden"]).gestureTrail == .hidden)
        #expect(try parse(["gesture_trail=visible"]).gestureTrail == .visible)
        #expect(try parse(["gesture_trail=visible", "gesture_trail=fade"]).gestureTrail == .fade)
        let words = OptionError(key: "gesture_trail", reason: "must be fade, hidden or visible")
        for bad in ["gesture_trail=Fade", "gesture_trail=", "gesture_trail=none", "gesture_trail=fade ", "gesture_trail=visible\u{301}"] {
            #expect(failure(bad) == words, "\(bad)")
        }
        #expect(failure("gesture_trail") == OptionError(key: "gesture_trail", reason: "needs a value"))
        // A fade lasts half a second: fully drawn at the end, gone at 0.5 s, never negative.
        #expect(GestureTrail.fade.opacity(age: nil) == 1)
        #expect(GestureTrail.fade.opacity(age: 0.25) == 0.5)
        #expect(GestureTrail.fade.opacity(age: 0.5) == 0)
        #expect(GestureTrail.fade.opacity(age: 60) == 0)
        #expect(GestureTrail.hidden.opacity(age: nil) == 0)
        #expect(GestureTrail.visible.opacity(age: 60) == 1)
    }

    @Test("tell_state: a list of PAM service names in lowercase, as libpam has them; empty by default")
    func tellState() throws {
        #expect(PuffOptions().tellStateServices.isEmpty)
        #expect(try parse(["tell_state=lightdm"]).tellStateServices == ["lightdm"])
        #expect(try parse(["tell_state=lightdm,gdm-password,x.y_z+1"]).tellStateServices == ["lightdm", "gdm-password", "x.y_z+1"])
        // The file's line and a later argument: the last one wins, as for every key.
        var options = PuffOptions()
        for token in OptionParser.tokens(ofConfigFile: "tell_state = lightdm, \n") {
            _ = try? OptionParser.apply(token, to: &options, from: .configFile)
        }
        #expect(options.tellStateServices.isEmpty, "a blank item is refused, not kept")
        #expect(try OptionParser.apply("tell_state=lightdm", to: &options, from: .configFile) == nil)
        _ = try OptionParser.apply("tell_state=xdm", to: &options, from: .argument)
        #expect(options.tellStateServices == ["xdm"])
        let reason = "must list 1 to 16 PAM service names (lowercase letters, digits, '.', '_', '+', '-')"
        // A capital would never match: libpam lowercases the service name (pam_start).
        for bad in ["tell_state", "tell_state=", "tell_state=lightdm,", "tell_state=,lightdm", "tell_state=light dm",
                    "tell_state=LightDM", "tell_state=../sshd", "tell_state=pam.d/lightdm", "tell_state=lïghtdm",
                    "tell_state=" + String(repeating: "a", count: 65)] {
            let error = failure(bad)
            #expect(error?.key == "tell_state", "\(bad)")
            if bad != "tell_state" { #expect(error?.reason == reason, "\(bad)") }
        }
        let seventeen = (1...17).map { "s\($0)" }.joined(separator: ",")
        #expect(failure("tell_state=" + seventeen) == OptionError(key: "tell_state", reason: reason))
        #expect(try parse(["tell_state=" + String(repeating: "a", count: 64)]).tellStateServices.count == 1)
        #expect(try parse(["tell_state=" + (1...16).map { "s\($0)" }.joined(separator: ",")]).tellStateServices.count == 16)
    }

    @Test("a known key returns no warning")
    func noWarning() throws {
        var options = PuffOptions()
        #expect(try OptionParser.apply("deny=4", to: &options, from: .configFile) == nil)
        #expect(try OptionParser.apply("debug", to: &options, from: .argument) == nil)
    }

    @Test("flags take no value", arguments: [
        "nullok", "debug", "silent", "nodelay", "try_first_pass", "use_first_pass", "even_deny_root",
        "gesture_after_reboot",
    ])
    func flagWithValue(flag: String) throws {
        #expect(failure(flag + "=1") == OptionError(key: flag, reason: "takes no value"))
        #expect(failure(flag + "=") == OptionError(key: flag, reason: "takes no value"))
        #expect(failure(flag) == nil)
    }

    @Test("value keys need a value", arguments: [
        "dir", "state_dir", "conf", "gesture_tries", "passcode_interval", "deny", "fail_interval", "unlock_time", "delays",
        "lock_wait", "kdf_ops", "kdf_mem_kib",
    ])
    func valueKeyWithoutValue(key: String) {
        #expect(failure(key) == OptionError(key: key, reason: "needs a value"))
    }

    @Test("integers at and beyond their bounds", arguments: [
        ("deny=0", true), ("deny=1000000", true), ("deny=1000001", false), ("deny=-1", false), ("deny=", false),
        ("deny=3x", false), ("deny= 3", false), ("deny=+3", false), ("deny=0x10", false),
        ("deny=9999999999999", false),
        ("lock_wait=1", true), ("lock_wait=600", true), ("lock_wait=0", false), ("lock_wait=601", false),
        ("kdf_ops=1", true), ("kdf_ops=16", true), ("kdf_ops=0", false), ("kdf_ops=17", false),
        ("kdf_mem_kib=8", true), ("kdf_mem_kib=1048576", true), ("kdf_mem_kib=7", false),
        ("kdf_mem_kib=1048577", false), ("kdf_mem_kib=4294967296", false),
    ])
    func integerBounds(token: String, accepted: Bool) {
        #expect((failure(token) == nil) == accepted)
    }

    @Test("integer values land in the right field")
    func integerValues() throws {
        let options = try parse(["deny=0", "lock_wait=1", "kdf_ops=3", "kdf_mem_kib=8"])
        #expect(options.lockout.deny == 0)
        #expect(options.lockWaitSeconds == 1)
        #expect(options.kdf == Argon2Parameters(memoryKiB: 8, iterations: 3))
        #expect(try parse(["deny=007"]).lockout.deny == 7)
    }

    @Test("durations", arguments: [(String, Int64)]([
        ("90", Int64(90)), ("90s", 90), ("5m", 300), ("2h", 7200), ("1d", 86400), ("0", 0), ("0s", 0),
        ("365d", 365 * 86400), ("31536000", 31_536_000), ("8760h", 31_536_000),
    ]))
    func durations(text: String, seconds: Int64) throws {
        #expect(try parse(["fail_interval=" + text]).lockout.failInterval == seconds)
        #expect(try parse(["unlock_time=" + text]).lockout.delays == [seconds])
    }

    @Test("bad durations", arguments: [
        "366d", "31536001", "8761h", "5x", "-1", "", "s", "m", "5 m", "5M", "1.5h", "5ms", "+5", "999999999999d",
        "1000000000000",
    ])
    func badDurations(text: String) {
        #expect(failure("fail_interval=" + text)?.key == "fail_interval")
        #expect(failure("unlock_time=" + text)?.key == "unlock_time")
        #expect(failure("delays=" + text)?.key == "delays")
    }

    @Test("delay lists")
    func delayLists() throws {
        #expect(try parse(["delays=60,300,0"]).lockout.delays == [60, 300, 0])
        #expect(try parse(["delays=1m,5m,15m,1h"]).lockout.delays == [60, 300, 900, 3600])
        #expect(try parse(["delays=0"]).lockout.delays == [0])
        let thirtyTwo = Array(repeating: "1", count: 32).joined(separator: ",")
        #expect(try parse(["delays=" + thirtyTwo]).lockout.delays == Array(repeating: 1, count: 32))
        #expect(failure("delays=" + thirtyTwo + ",1") == OptionError(key: "delays", reason: "must list 1 to 32 durations"))
        for bad in ["delays=", "delays=60,", "delays=,60", "delays=60,,300", "delays=60, 300", "delays=60,366d"] {
            #expect(failure(bad)?.key == "delays", "\(bad)")
        }
    }

    @Test("unlock_time and delays: the later one wins")
    func unlockTimeVersusDelays() throws {
        #expect(try parse(["delays=1,2,3", "unlock_time=10"]).lockout.delays == [10])
        #expect(try parse(["unlock_time=10", "delays=1,2,3"]).lockout.delays == [1, 2, 3])
    }

    @Test("paths must be absolute and free of '..'", arguments: ["dir", "state_dir", "conf"])
    func paths(key: String) throws {
        for good in ["/", "/etc/puff", "/a/..b/c", "/a/b..", "/a/.../b"] {
            #expect(failure("\(key)=\(good)") == nil, "\(good)")
        }
        for bad in ["", "etc/puff", "./puff", "~/puff", "/etc/../tmp", "/..", "/a/b/..", "../x", "/etc/puff\0x",
                    "/" + String(repeating: "a", count: 4095)] {
            #expect(failure("\(key)=\(bad)") == OptionError(key: key, reason: "must be an absolute path without '..'"))
        }
        #expect(failure("\(key)=/" + String(repeating: "a", count: 4094)) == nil)
    }

    @Test("a path is cut at every '/' byte, as the kernel cuts it, and '=' splits before a combining mark")
    func pathsAndTokensAreCutAsBytes() throws {
        // Cut by Characters, "/\u{301}" is one character that is not "/", so ".." hid inside
        // "../\u{301}x" and the path passed the check; the kernel would go up a directory.
        for key in ["dir", "state_dir", "conf", "helper"] {
            #expect(failure("\(key)=/etc/puff/../\u{301}x")?.reason == "must be an absolute path without '..'", "\(key)")
        }
        #expect(try parse(["dir=/etc/caf\u{E9}/\u{301}x"]).recordDirectory == "/etc/caf\u{E9}/\u{301}x")
        // "=" followed by a combining mark is one Character; the key is still "dir", whose value
        // is then no absolute path (as a Character search, the token was an unknown key).
        #expect(failure("dir=\u{301}/etc/puff") == OptionError(key: "dir", reason: "must be an absolute path without '..'"))
    }

    @Test("quick-factor values")
    func quickFactor() throws {
        #expect(try parse(["gesture_tries=0"]).quickFactor.gestureTries == 0)
        #expect(try parse(["passcode_interval=0"]).quickFactor.passcodeInterval == 0)
        #expect(try parse(["passcode_interval=12h"]).quickFactor.passcodeInterval == 43_200)
        #expect(failure("gesture_tries=-1") == OptionError(key: "gesture_tries", reason: "must be an integer in 0...1000000"))
        #expect(failure("passcode_interval=2w")?.key == "passcode_interval")
        #expect(failure("passcode_interval=366d")?.key == "passcode_interval")
    }

    @Test("the old prompt option is unknown now (the prompt follows the contract)")
    func promptIsGone() throws {
        var options = PuffOptions()
        #expect(try OptionParser.apply("prompt=PIN: ", to: &options, from: .argument) == "unknown option 'prompt' ignored")
        #expect(options == PuffOptions())
    }

    @Test("an unknown key returns a warning and changes nothing", arguments: [
        "denny=3", "frobnicate", "Deny=3", "=3", "", "dir\n=/x",
    ])
    func unknownKey(token: String) throws {
        var options = PuffOptions()
        let warning = try OptionParser.apply(token, to: &options, from: .argument)
        #expect(warning != nil)
        #expect(warning?.hasPrefix("unknown option '") == true)
        #expect(warning?.hasSuffix("' ignored") == true)
        #expect(options == PuffOptions())
    }

    @Test("an unknown key's name is escaped in the warning")
    func unknownKeyEscaped() throws {
        var options = PuffOptions()
        let warning = try OptionParser.apply("x\ny=1", to: &options, from: .configFile)
        #expect(warning == "unknown option 'x\\x0ay' ignored")
    }

    @Test("conf= is ignored with a warning inside the configuration file")
    func confInConfigFile() throws {
        var options = PuffOptions()
        let warning = try OptionParser.apply("conf=/tmp/evil.conf", to: &options, from: .configFile)
        #expect(warning == "'conf' is ignored inside the configuration file")
        #expect(options == PuffOptions())
        // Even a bad value is only ignored there.
        #expect(try OptionParser.apply("conf=relative", to: &options, from: .configFile) != nil)
        #expect(options.configFile == "/etc/puff/puff.conf")
    }

    @Test("the later token wins")
    func laterWins() throws {
        let options = try parse(["deny=3", "dir=/a", "deny=7", "gesture_tries=1", "dir=/b", "gesture_tries=2", "kdf_ops=2", "kdf_ops=4"])
        #expect(options.lockout.deny == 7)
        #expect(options.recordDirectory == "/b")
        #expect(options.quickFactor.gestureTries == 2)
        #expect(options.kdf.iterations == 4)
        #expect(options.kdf.memoryKiB == 65536)
    }

    @Test("a bad later token does not undo an earlier good one")
    func badAfterGood() throws {
        var options = PuffOptions()
        _ = try OptionParser.apply("deny=3", to: &options, from: .argument)
        #expect(throws: OptionError.self) { try OptionParser.apply("deny=x", to: &options, from: .argument) }
        #expect(options.lockout.deny == 3)
    }

    @Test("the error description names the key and not the value")
    func errorDescription() {
        let error = failure("deny=secret-ish")
        #expect(error?.description == "deny: must be an integer in 0...1000000")
    }
}

@Suite("OptionParser.tokens(ofConfigFile:)")
struct ConfigFileTokenTests {
    @Test("comments, blank lines and spaces around '='")
    func basics() {
        let text = """
        # Puff configuration
        deny = 3

          unlock_time=5m
        \tsilent\t
            # indented comment
        prompt =  PIN:
        delays= 60,300
        """
        #expect(OptionParser.tokens(ofConfigFile: text) == [
            "deny=3", "unlock_time=5m", "silent", "prompt=PIN:", "delays=60,300",
        ])
    }

    @Test("empty and comment-only files give no tokens", arguments: ["", "\n\n", "# only\n#\n", "   \n\t\n"])
    func empty(text: String) {
        #expect(OptionParser.tokens(ofConfigFile: text).isEmpty)
    }

    @Test("only the first '=' splits; later ones belong to the value")
    func laterEquals() {
        #expect(OptionParser.tokens(ofConfigFile: "prompt = a = b\n") == ["prompt=a = b"])
    }

    @Test("a file without a final newline keeps its last line")
    func noFinalNewline() {
        #expect(OptionParser.tokens(ofConfigFile: "debug\ndeny=2") == ["debug", "deny=2"])
    }

    @Test("tokens apply to options in file order")
    func applyTokens() throws {
        var options = PuffOptions()
        var warnings: [String] = []
        for token in OptionParser.tokens(ofConfigFile: "deny = 2\nbogus\ndeny = 4\nconf = /x\n") {
            if let warning = try OptionParser.apply(token, to: &options, from: .configFile) { warnings.append(warning) }
        }
        #expect(options.lockout.deny == 4)
        #expect(warnings.count == 2)
    }
}

@Suite struct ConfigFileLineEndingTests {
    @Test func crlfLinesAreSplitAndTrimmed() {
        #expect(OptionParser.tokens(ofConfigFile: "# c\r\ndeny = 3\r\n\r\nsilent\r\n") == ["deny=3", "silent"])
        #expect(OptionParser.tokens(ofConfigFile: "even_deny_root\r\ndeny=3\r\n") == ["even_deny_root", "deny=3"])
    }
}

@Suite struct GestureOptionTests {
    @Test func percentagesAreParsedAndValidatedTogether() throws {
        var options = PuffOptions()
        for token in ["gesture_raster=2.5", "gesture_tolerance=10", "gesture_hit_ratio=80", "gesture_overflow=150"] {
            #expect(try OptionParser.apply(token, to: &options, from: .configFile) == nil)
        }
        let parameters = try options.gestureParameters()
        #expect(parameters.raster == 0.025)
        #expect(parameters.tolerance == 0.1)
        #expect(parameters.minimumHitRatio == 0.8)
        #expect(parameters.overflow == 1.5)
        #expect(try PuffOptions().gestureParameters() == .standard)
    }

    @Test(arguments: ["gesture_raster=0", "gesture_raster=30", "gesture_tolerance=4.", "gesture_hit_ratio=101",
                      "gesture_overflow=99", "gesture_raster=3.1415", "gesture_raster=-3", "gesture_raster"])
    func badPercentagesAreRefused(_ token: String) {
        var options = PuffOptions()
        #expect(throws: OptionError.self) { try OptionParser.apply(token, to: &options, from: .argument) }
    }

    @Test func aToleranceSmallerThanTheRasterIsRefusedAsACombination() throws {
        var options = PuffOptions()
        _ = try OptionParser.apply("gesture_tolerance=1", to: &options, from: .argument)
        #expect(throws: OptionError.self) { try options.gestureParameters() }
    }
}
