import CPuffBuild

/// What the build decided (`make` passes it; a bare `swift build` gets the defaults).
public enum BuildInfo {
    /// The release, for `--version`.
    public static var version: String { String(cString: puff_build_version()) }
    /// The setuid helper's installed path: `$(BINDIR)/puff-check` of the build.
    public static var helperPath: String { String(cString: puff_build_sbindir()) + "/puff-check" }
}
