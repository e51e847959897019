import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test("defaults, then the file, then the arguments")
    func layering() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("puff.conf"), "# test\ndeny = 4\nunlock_time = 10m\nbogus = 1\nconf = /elsewhere\n", mode: 0o644)
        let path = scratch("puff.conf")
        let (options, warnings) = try Configuration.load(arguments: ["conf=" + path, "deny=6", "debug", "mystery", "deny=7"])
        var expected = PuffOptions()
        expected.configFile = path
        expected.lockout.deny = 7
        expected.lockout.delays = [600]
        expected.debug = true
        #expect(options == expected)
        #expect(warnings == [
            "\(path): unknown option 'bogus' ignored",
            "\(path): 'conf' is ignored inside the configuration file",
            "argument: unknown option 'mystery' ignored",
        ])
    }

    @Test("a missing file or directory gives the defaults")
    func missingFile() throws {
        let scratch = try ScratchDirectory()
        for path in [scratch("absent.conf"), scratch("absent/puff.conf")] {
            let (options, warnings) = try Configuration.load(arguments: ["conf=" + path])
            var expected = PuffOptions()
            expected.configFile = path
            #expect(options == expected)
            #expect(warnings == [])
        }
    }

    @Test("an unsafe file fails closed")
    func unsafeFile() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("writable.conf"), "deny=3\n", mode: 0o666)
        try makeFile(scratch("foreign.conf"), "deny=3\n", mode: 0o644)
        try setOwner(scratch("foreign.conf"), 65534)
        try makeSymlink(scratch("writable.conf"), at: scratch("link.conf"))
        try makeDirectory(scratch("open"), mode: 0o777)
        try makeFile(scratch("open/puff.conf"), "deny=3\n", mode: 0o644)
        for name in ["writable.conf", "foreign.conf", "link.conf", "open/puff.conf"] {
            #expect(errorKind { () throws(StoreError) in
                _ = try Configuration.load(arguments: ["conf=" + scratch(name)])
            } == .unsafe, "\(name)")
        }
    }

    @Test("bad values fail closed", arguments: [
        ("deny = lots\n", [String]()), ("", ["deny=lots"]), ("", ["conf=relative.conf"]), ("", ["debug=yes"]),
    ])
    func badValues(file: String, arguments: [String]) throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("puff.conf"), file)
        #expect(errorKind { () throws(StoreError) in
            _ = try Configuration.load(arguments: ["conf=" + scratch("puff.conf")] + arguments)
        } == .configuration)
    }

    @Test("a file that is not UTF-8 fails closed")
    func notUTF8() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("puff.conf"), [0x64, 0x65, 0x62, 0x75, 0x67, 0xff, 0x0a])
        #expect(errorKind { () throws(StoreError) in
            _ = try Configuration.load(arguments: ["conf=" + scratch("puff.conf")])
        } == .configuration)
    }

    @Test("an oversize file is refused")
    func oversize() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("puff.conf"), String(repeating: "# padding\n", count: 7000))
        #expect(errorKind { () throws(StoreError) in
            _ = try Configuration.load(arguments: ["conf=" + scratch("puff.conf")])
        } == .tooLarge)
    }
}

@Suite("Account.lookup")
struct AccountTests {
    @Test("root is uid 0")
    func root() throws {
        #expect(try Account.lookup("root") == Account(name: UserName("root")!, uid: 0))
    }

    @Test("an unknown user is nil")
    func unknown() throws {
        #expect(try Account.lookup("puff-no-such-user") == nil)
    }
}
