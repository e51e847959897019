import Glibc
import PuffCore
import PuffPlatform

/// The module's side of `puff-check`, for when it is not root (a screen locker
/// authenticating its own user): the helper does the store work under the same lockout;
/// this side moves the secret and believes only a well-formed report that agrees with the
/// exit status.
struct HelperClient {
    /// The helper executable (module option `helper=`).
    let path: String

    /// The state before the prompt.
    func query() throws(StoreError) -> HelperReport {
        try run("query", sending: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// One attempt with `secret`.
    func verify(_ secret: borrowing SecureBytes) throws(StoreError) -> HelperReport {
        try secret.withBytes { bytes throws(StoreError) in try run("verify", sending: bytes) }
    }

    private func run(_ operation: String, sending secret: UnsafeRawBufferPointer) throws(StoreError) -> HelperReport {
        let (status, output) = try HelperProcess(path: path).run(operation, input: secret.isEmpty ? [] : [secret])
        // Exit 0 and 1 carry a report; anything else means the helper failed closed.
        guard let output, status == 0 || status == 1 else {
            throw .unsafe(path: path, reason: "the helper failed (status \(status)); see its log")
        }
        let report: HelperReport
        do {
            report = try HelperReport.decode(output)
        } catch {
            throw .unsafe(path: path, reason: "the helper's report is malformed")
        }
        // A success report with a refusal status (or the reverse) is not believed.
        if operation == "verify", (report.outcome == .success) != (status == 0) {
            throw .unsafe(path: path, reason: "the helper's status and report disagree")
        }
        return report
    }
}
