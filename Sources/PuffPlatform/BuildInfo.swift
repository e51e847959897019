import CPuffBuild

/// What the build decided (`make` passes it; a bare `swift build` gets the defaults).
public enum BuildInfo {
    /// The release, for `--version`.
    public static var version: String { String(cString: puff_build_version()) }
    /// The setuid helper's installed path: `$(BINDIR)/puff-check` of the build.
    public static var helperPath: String { String(cString: puff_build_sbindir()) + "/puff-check" }
    /// Fleet mode's LDAP client: `$(LIBDIR)/puff/puff-ldap.so` of the build (`ldap_library`).
    public static var ldapLibraryPath: String { String(cString: puff_build_ldap_library()) }
    /// Tpm mode's TPM client: `$(LIBDIR)/puff/puff-tpm.so` of the build (`tpm_library`).
    public static var tpmLibraryPath: String { String(cString: puff_build_tpm_library()) }
}
