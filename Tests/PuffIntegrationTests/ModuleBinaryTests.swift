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

    @Test func exportsOnlyThePAMEntryPoints() throws {
        // --extern-only: symbols another object could bind to (local dynsym entries cannot).
        let symbols = try run("/usr/bin/nm", ["-D", "--defined-only", "--extern-only", Artefacts.module])
        #expect(symbols.status == 0)
        let names = Set(symbols.lines.compactMap { $0.split(separator: " ").last.map(String.init) })
        #expect(names == ["pam_sm_authenticate", "pam_sm_setcred", "pam_sm_acct_mgmt"])
    }
}
