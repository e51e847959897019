import PuffCore

/// The engine's one way to the store's key (the host key; the fleet key is
/// `FleetAuthenticator.fleetKey()`): from `host.key` in file mode, unsealed by the TPM in tpm
/// mode (StoreKey.swift, docs/protection-at-rest.md).
extension Authenticator {
    /// The host key, or `nil` when none exists yet.
    func hostKey() throws(StoreError) -> SecureBytes? {
        try records.loadHostKey(tpm: options.tpm)
    }

    /// The host key, created in file mode when none exists yet (the first enrollment).
    func hostKeyCreatingIfMissing() throws(StoreError) -> SecureBytes {
        try records.loadOrCreateHostKey(tpm: options.tpm)
    }
}
