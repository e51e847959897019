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

    /// Runs the helper with `operation`, writes the frames to its stdin, returns its status and stdout.
    private func run(_ operation: String, frames: [UnsafeRawBufferPointer]) throws -> (Int32, [UInt8]) {
        signal(SIGPIPE, SIG_IGN)
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw Failure(ExitCodes.storeFailure, "pipe failed") }
        for descriptor in [input[1], output[0]] { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("puff-check"), strdup(operation), nil]
        defer { argv.forEach { free($0) } }
        var envp: [UnsafeMutablePointer<CChar>?] = [nil]
        var child: pid_t = 0
        let spawned = posix_spawn(&child, helper, &actions, nil, &argv, &envp)
        close(input[0])
        close(output[1])
        guard spawned == 0 else {
            close(input[1])
            close(output[0])
            throw Failure(ExitCodes.storeFailure, "cannot run the helper \(helper): \(Errno(spawned))")
        }
        for frame in frames { send(frame, to: input[1]) }
        close(input[1])
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while result.count <= HelperReport.maximumSize {
            let got = read(output[0], &chunk, chunk.count)
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            result += chunk.prefix(got)
        }
        close(output[0])
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return (status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), result)
    }

    /// The length line, then the bytes (a closed pipe just ends the writing: the helper then
    /// refuses the request).
    private func send(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) {
        Array("\(bytes.count)\n".utf8).withUnsafeBytes { writeAll($0, descriptor) }
        writeAll(bytes, descriptor)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer, _ descriptor: Int32) {
        var done = 0
        while done < bytes.count, let base = bytes.baseAddress {
            let wrote = write(descriptor, base + done, bytes.count - done)
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { return }
            done += wrote
        }
    }
}
