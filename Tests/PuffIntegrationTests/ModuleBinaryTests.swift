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

    /// Fleet mode's LDAP client (libldap, liblber, and through them SASL, GnuTLS, nettle...)
    /// is loaded from puff-ldap.so only when `backend = ldap` is used: neither the module, which
    /// every sshd, su and login loads, nor the setuid helper needs it, directly or through
    /// another library.
    @Test(arguments: [Artefacts.module, UnprivilegedTests.helperBinary])
    func needsNoLDAPClient(_ binary: String) throws {
        let dynamic = try run("/usr/bin/readelf", ["-d", binary])
        #expect(dynamic.status == 0, "\(dynamic.errors)")
        let needed = dynamic.lines.filter { $0.contains("(NEEDED)") }
        #expect(needed.contains { $0.contains("libc.so") })
        let client = ["libldap", "liblber", "libsasl2", "libgnutls", "libnettle", "libhogweed", "libp11-kit", "libgmp"]
        for library in client {
            #expect(!needed.contains { $0.contains(library) }, "\(binary) needs \(library)")
        }
        // Nor anything it needs (the dynamic loader's own list of what it would load).
        let loaded = try run("/usr/bin/ldd", [binary])
        #expect(loaded.status == 0, "\(loaded.errors)")
        #expect(loaded.output.contains("libsodium"))
        for library in client {
            #expect(!loaded.output.contains(library), "\(binary) loads \(library): \(loaded.output)")
        }
    }

    /// The library it loads instead: libldap's client, exporting only the puff_ldap_* calls.
    @Test func theLDAPClientLibraryExportsOnlyItsEntryPoints() throws {
        let dynamic = try run("/usr/bin/readelf", ["-d", Artefacts.ldapLibrary])
        #expect(dynamic.status == 0, "\(dynamic.errors)")
        #expect(dynamic.lines.contains { $0.contains("(NEEDED)") && $0.contains("libldap") })
        #expect(dynamic.output.contains("SYMBOLIC"))
        let symbols = try run("/usr/bin/nm", ["-D", "--defined-only", "--extern-only", Artefacts.ldapLibrary])
        #expect(symbols.status == 0)
        let names = Set(symbols.lines.compactMap { $0.split(separator: " ").last.map(String.init) })
        #expect(names == ["puff_ldap_abi", "puff_ldap_open", "puff_ldap_bind_external", "puff_ldap_bind_simple",
                          "puff_ldap_close", "puff_ldap_read_user", "puff_ldap_user_free", "puff_ldap_count_failure",
                          "puff_ldap_modify", "puff_ldap_error_text", "puff_ldap_diagnostic", "puff_ldap_probe"])
    }

    /// Tpm mode is the helper's (libtss2 reads TSS2_LOGFILE from the environment, which in su
    /// is the user's): the module has none of its code (PuffTPM, CTPM), and the helper, which
    /// has it, shows that the symbol table would tell.
    @Test func hasNoTPMCodeWhichTheHelperHas() throws {
        func tpmSymbols(_ binary: String) throws -> [String] {
            let table = try run("/usr/bin/nm", ["--defined-only", binary])
            #expect(table.status == 0, "\(table.errors)")
            let markers = ["puff_tpm_", "puff_key_cache_", "Esys_", "Tss2_", "7PuffTPM", "TPMClient", "UnsealedKey"]
            return table.lines.filter { line in markers.contains { line.contains($0) } }
        }
        let module = try tpmSymbols(Artefacts.module)
        #expect(module.isEmpty, "pam_puff.so has tpm mode's code: \(module.prefix(5))")
        let helper = try tpmSymbols(UnprivilegedTests.helperBinary)
        #expect(helper.contains { $0.contains("puff_tpm_") } && helper.contains { $0.contains("7PuffTPM") },
                "the helper's symbol table shows no TPM code: \(helper.prefix(5))")
    }

    @Test func exportsOnlyThePAMEntryPoints() throws {
        // --extern-only: symbols another object could bind to (local dynsym entries cannot).
        let symbols = try run("/usr/bin/nm", ["-D", "--defined-only", "--extern-only", Artefacts.module])
        #expect(symbols.status == 0)
        let names = Set(symbols.lines.compactMap { $0.split(separator: " ").last.map(String.init) })
        #expect(names == ["pam_sm_authenticate", "pam_sm_setcred", "pam_sm_acct_mgmt", "pam_sm_chauthtok"])
    }
}
