import Foundation
import Testing

/// The shape of the built `pam_puff.so`: what the host process has to load.
struct ModuleBinaryTests {
    @Test func linksNoSwiftRuntimeAndHasNoToolchainRunpath() throws {
        let dynamic = try run("/usr/bin/readelf", ["-d", Artefacts.module])
        #expect(dynamic.status == 0)
        let needed = dynamic.lines.filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty)
        #expect(!needed.contains { $0.contains("libswift") || $0.contains("libFoundation") || $0.contains("libdispatch") })
        #expect(!dynamic.output.contains("RUNPATH"))
        #expect(!dynamic.output.contains("RPATH"))
        #expect(dynamic.output.contains("NODELETE"))
    }

    /// The module and the setuid helper are built in Embedded Swift: no Swift runtime whose
    /// start-up reads SWIFT_* variables, and nothing else in them that could read the
    /// environment of the host (sshd, sudo) or of the helper's caller.
    @Test(arguments: [Artefacts.module, UnprivilegedTests.helperBinary])
    func importsNothingThatReadsTheEnvironment(_ binary: String) throws {
        let imported = try run("/usr/bin/nm", ["-D", "--undefined-only", binary])
        #expect(imported.status == 0, "\(imported.errors)")
        let names = imported.lines.compactMap { $0.split(separator: " ").last?.split(separator: "@").first.map(String.init) }
        #expect(!names.isEmpty)
        for reader in ["getenv", "secure_getenv", "environ", "__environ", "__libc_secure_getenv"] {
            #expect(!names.contains(reader), "\(binary) imports \(reader)")
        }
        // The runtime's own variable names would be in its strings.
        let text = try String(contentsOfFile: binary, encoding: .isoLatin1)
        #expect(!text.contains("SWIFT_DEBUG") && !text.contains("SWIFT_BACKTRACE"), "\(binary) carries a Swift runtime")
        // Embedded Swift prints this for values it cannot describe: a log line would lose its reason.
        #expect(!text.contains("cannot print value"), "\(binary) interpolates a value it cannot print")
    }

    @Test func exportsOnlyThePAMEntryPoints() throws {
        // --extern-only: symbols another object could bind to (local dynsym entries cannot).
        let symbols = try run("/usr/bin/nm", ["-D", "--defined-only", "--extern-only", Artefacts.module])
        #expect(symbols.status == 0)
        let names = Set(symbols.lines.compactMap { $0.split(separator: " ").last.map(String.init) })
        #expect(names == ["pam_sm_authenticate", "pam_sm_setcred", "pam_sm_acct_mgmt"])
    }
}
