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
    /// The helper executable.
    let helper: String

    /// Refuses store overrides: an ordinary user cannot choose which store the helper uses.
    static func requireDefaultStore(_ store: StoreOptions) throws {
        guard store.recordDirectory == nil, store.stateDirectory == nil, store.configFile == nil else {
            throw Failure(ExitCodes.notRoot, "only root may choose the store (--dir, --state-dir, --conf)")
        }
    }

    /// The caller's state: what is enrolled, the lock, what the next login accepts.
    func query() throws -> HelperReport {
        let (status, output) = try run("query", frames: [])
        guard status == 0, let report = try? HelperReport.decode(output) else {
            throw Failure(ExitCodes.storeFailure, "the helper \(helper) failed (status \(status)); see the system log")
        }
        return report
    }

    /// Whether the caller has a Puff passcode (then it is the proof; otherwise the system password is).
    static func hasPasscode(_ report: HelperReport) -> Bool {
        guard report.outcome == .state else { return false }
        switch report.acceptance {
        case .passcodeOrGesture, .passcodeOnly: return true
        case .gestureOnly, .refused: return false
        }
    }

    /// Asks for the proof that suits the caller's enrollment.
    func readProof(_ report: HelperReport, account: Account, fromStdin: Bool) throws -> SecureBytes {
        let prompt = Self.hasPasscode(report) ? "Current Puff passcode: " : "System password for \(account.name): "
        guard case .secret(let proof) = try Terminal.readSecret(prompt: prompt, fromStdin: fromStdin) else {
            throw Failure(ExitCodes.refused, "cancelled")
        }
        return proof
    }

    /// Sends an enrollment request; returns normally only when the helper stored it.
    /// `frames` point into the callers' wiped buffers for the secrets.
    func enroll(_ operation: String, frames: [UnsafeRawBufferPointer]) throws {
        let (status, output) = try run(operation, frames: frames)
        let report = try? HelperReport.decode(output)
        switch status {
        case 0 where report?.outcome == .success:
            return
        case 1:
            switch report?.outcome {
            case .locked: throw Failure(ExitCodes.refused, "locked after too many failed attempts; try again later")
            case .passcodeRequired: throw Failure(ExitCodes.refused, "the current Puff passcode is required")
            default: throw Failure(ExitCodes.refused, "the proof of identity is wrong; nothing was changed")
            }
        case 4:
            throw Failure(ExitCodes.refused, "the helper refused the new credential; nothing was changed")
        default:
            throw Failure(ExitCodes.storeFailure, "the helper \(helper) failed (status \(status)); see the system log")
        }
    }

    /// Runs the helper with `operation` and the framed request; its status and stdout.
    private func run(_ operation: String, frames: [UnsafeRawBufferPointer]) throws -> (Int32, [UInt8]) {
        do {
            let (status, output) = try HelperProcess(path: helper).run(operation, input: frames, framed: true)
            return (status, output ?? [])
        } catch {
            throw Failure(ExitCodes.storeFailure, "cannot run the helper \(helper): \(error)")
        }
    }
}
