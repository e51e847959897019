/// Tpm mode's settings (docs/protection-at-rest.md): where the TPM is and which library talks
/// to it. Whether the store's key is in the TPM is not a setting: the store says so (a sealed
/// `host.key.tpm` in place of `host.key`, written by `puff-enroll tpm enable`).
public struct TPMSettings: Equatable, Sendable {
    /// `tpm_tcti`: the TPM, in the TCTI loader's syntax (`device:/dev/tpmrm0`, the kernel's
    /// resource manager; `swtpm:host=127.0.0.1,port=N` for a simulator). Read at every use;
    /// the sealed object is not bound to it.
    public var tcti = "device:/dev/tpmrm0"
    /// `tpm_library`: the TPM client the helper loads when a sealed key is read
    /// (`puff-tpm.so`, root-owned; default: where the build installs it, set by
    /// `Configuration.load`).
    public var libraryPath = "/usr/local/lib/x86_64-linux-gnu/puff/puff-tpm.so"

    /// The defaults.
    public init() {}

    /// The keys of `apply`.
    enum Key: String {
        case tpm_tcti, tpm_library
    }

    /// Applies one tpm key; `false` when `key` is not one of them. A bad value throws.
    public mutating func apply(_ key: String, _ value: Substring?) throws(OptionError) -> Bool {
        guard let known = Key(rawValue: key) else { return false }
        // Printable ASCII without spaces; the library's path absolute (the TCTI loader itself
        // refuses a TCTI it cannot load, and the TPM is then unavailable).
        guard let value, !value.isEmpty, value.utf8.count <= 1024, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }),
              known == .tpm_tcti || (value.first == "/" && !value.split(separator: "/").contains("..")) else {
            throw OptionError(key: key, reason: known == .tpm_tcti
                ? "needs a TCTI like device:/dev/tpmrm0 (printable ASCII without spaces, at most 1024 bytes)"
                : "must be an absolute path without '..'")
        }
        switch known {
        case .tpm_tcti: tcti = String(value)
        case .tpm_library: libraryPath = String(value)
        }
        return true
    }
}
