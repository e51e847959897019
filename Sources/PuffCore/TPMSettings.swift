/// Tpm mode's settings (docs/admin/protection-at-rest.md): where the TPM is and which library talks
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
    enum Key: String, CaseIterable {
        case tpm_tcti, tpm_library

        /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
        init?(rawValue: String) { self.init(bytesOf: rawValue) }
    }

    /// Takes one tpm key's value as it is; `false` when `key` is not one of them. Only a
    /// missing value throws here: the rest is checked by `validate()` where the values are used
    /// (`TPMClient`, in the helper and `puff-enroll`). The module never uses them (its tpm-mode
    /// attempts go to the helper, which reads `puff.conf` itself), so it carries no more of tpm
    /// mode than knowing its keys, and a bad value fails closed at the first use of the TPM.
    public mutating func apply(_ key: String, _ value: Substring?) throws(OptionError) -> Bool {
        guard let known = Key(rawValue: key) else { return false }
        guard let value else { throw OptionError(key: key, reason: "needs a value") }
        switch known {
        case .tpm_tcti: tcti = String(value)
        case .tpm_library: libraryPath = String(value)
        }
        return true
    }

    /// Checks the values: the TCTI printable ASCII without spaces, at most 1024 bytes (the
    /// TCTI loader itself refuses one it cannot load, and the TPM is then unavailable); the
    /// library's path absolute, without `..`.
    public func validate() throws(OptionError) {
        guard Self.isPrintableWord(tcti) else {
            throw OptionError(key: Key.tpm_tcti.rawValue,
                              reason: "needs a TCTI like device:/dev/tpmrm0 (printable ASCII without spaces, at most 1024 bytes)")
        }
        guard Self.isPrintableWord(libraryPath), libraryPath.hasPrefix("/"),
              !libraryPath.split(separator: "/").contains("..") else {
            throw OptionError(key: Key.tpm_library.rawValue, reason: "must be an absolute path without '..'")
        }
    }

    private static func isPrintableWord(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 1024 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }
}
