import Glibc
import PuffCore
import PuffPlatform

/// `puff-enroll` run by an ordinary user on their own account: the store is root-only, so
/// every read and write goes through the setuid helper `puff-check`, which proves the
/// caller and serves only the caller's real uid. This side reads the terminal, checks the
/// new credential for a clear message, and frames the request.
///
/// Why a helper and not a setuid `puff-enroll`: the helper is a few hundred lines with no
/// argument parser, no Foundation, no image decoder and no terminal code, and its only
/// input is a framed request on stdin; a setuid `puff-enroll` would run all of that as root.
struct SelfService {
    /// The helper's one client (shared with the module).
    let client: HelperClient

    /// The service through the helper executable at `helper`.
    init(helper: String) { client = HelperClient(path: helper) }

    /// Refuses store overrides: an ordinary user cannot choose which store the helper uses.
    static func requireDefaultStore(_ store: StoreOptions) throws {
        guard store.recordDirectory == nil, store.stateDirectory == nil, store.configFile == nil else {
            throw Failure(ExitCodes.notRoot, "only root may choose the store (--dir, --state-dir, --conf)")
        }
    }

    /// The caller's state: whether anything is enrolled, the lock, what the next login accepts.
    func query() throws -> CredentialState {
        do {
            return try client.query()
        } catch {
            throw Failure(ExitCodes.storeFailure, "\(error)")
        }
    }

    /// Asks for the proof that suits the caller's enrollment: the Puff passcode when one is
    /// enrolled, otherwise the system password.
    func readProof(_ state: CredentialState, account: Account, fromStdin: Bool) throws -> SecureBytes {
        let prompt = state.hasPasscode ? "Current Puff passcode: " : "System password for \(account.name): "
        guard case .secret(let proof) = try Terminal.readSecret(prompt: prompt, fromStdin: fromStdin,
                                                                what: state.hasPasscode ? "current Puff passcode" : "system password") else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        return proof
    }

    /// Asks the helper what the change will check, before the rest of it is typed: the
    /// passcode `type` against the policy (before any proof), then the proof when given.
    /// Returns normally when they pass.
    func precheck(type: PasscodeType?) throws {
        let result: HelperClient.ChangeResult
        do {
            result = try client.precheck(type: type, proof: nil)
        } catch {
            throw Failure(ExitCodes.storeFailure, "\(error)")
        }
        try say(result, type: type)
    }

    /// `precheck(type:)` with the proof, checked as the change will check it.
    func precheck(type: PasscodeType?, proof: borrowing SecureBytes) throws {
        let result: HelperClient.ChangeResult
        do {
            result = try proof.withBytes { bytes throws(StoreError) in try client.precheck(type: type, proof: bytes) }
        } catch {
            throw Failure(ExitCodes.storeFailure, "\(error)")
        }
        try say(result, type: type)
    }

    private func say(_ result: HelperClient.ChangeResult, type: PasscodeType?) throws {
        switch result {
        case .done:
            return
        case .rulesBroken:
            // Only the type was checked. Below 6 digits the self-service floor is the likely rule
            // (the helper alone knows min_passcode).
            if let type, !type.meets(.digits6) {
                throw Failure(ExitCodes.refused, PasscodeRuleViolation.belowSelfServiceMinimum.message + "; nothing was changed")
            }
            throw Failure(ExitCodes.refused, "a \(type?.rawValue ?? "") passcode is below what the administrator requires "
                          + "(min_passcode); choose a stronger --type; nothing was changed")
        case .refused(.locked):
            throw Failure(ExitCodes.refused, "locked after too many failed attempts; try again later")
        case .refused(.passcodeRequired):
            throw Failure(ExitCodes.refused, "the current Puff passcode is required")
        case .refused:
            throw Failure(ExitCodes.refused, "the proof of identity is wrong; nothing was changed")
        }
    }

    /// Sends an enrollment or removal request; returns normally only when the helper did it.
    /// `frames` point into the callers' wiped buffers for the secrets. `likelyRule`, when
    /// given, is what the user is told if the helper refuses the new credential (the helper
    /// logs its reason but does not send it).
    func change(_ operation: HelperOperation, frames: [UnsafeRawBufferPointer], likelyRule: String? = nil) throws {
        let result: HelperClient.ChangeResult
        do {
            result = try client.change(operation, frames: frames)
        } catch {
            throw Failure(ExitCodes.storeFailure, "\(error)")
        }
        switch result {
        case .done:
            return
        case .refused(.locked):
            throw Failure(ExitCodes.refused, "locked after too many failed attempts; try again later")
        case .refused(.passcodeRequired):
            throw Failure(ExitCodes.refused, "the current Puff passcode is required")
        case .refused:
            throw Failure(ExitCodes.refused, "the proof of identity is wrong; nothing was changed")
        case .rulesBroken:
            throw Failure(ExitCodes.refused, (likelyRule.map { $0 + "; " } ?? "the helper refused the new credential; ")
                          + "nothing was changed")
        }
    }
}
