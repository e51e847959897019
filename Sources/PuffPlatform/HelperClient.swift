import PuffCore

/// The one client of the setuid helper `puff-check`, for the module when it is not root (a
/// screen locker authenticating its own user) and for `puff-enroll` run by an ordinary user.
/// It moves the secret or the framed request and believes only a well-formed report that
/// agrees with the exit status (HelperReportMapping.swift).
public struct HelperClient: Sendable {
    /// The helper executable (module option `helper=`, `puff-enroll --helper`).
    public let path: String

    /// A client of the helper at `path`.
    public init(path: String) { self.path = path }

    /// The caller's state before the prompt.
    public func query() throws(StoreError) -> CredentialState {
        let (status, output) = try HelperProcess(path: path).run(HelperOperation.query.rawValue, input: [])
        return try HelperReport.state(status: status, output: output, helper: path)
    }

    /// One attempt with `secret`.
    public func verify(_ secret: borrowing SecureBytes) throws(StoreError) -> Authenticator.Outcome {
        let (status, output) = try secret.withBytes { bytes throws(StoreError) in
            try HelperProcess(path: path).run(HelperOperation.verify.rawValue, input: [bytes])
        }
        return try HelperReport.outcome(status: status, output: output, helper: path)
    }

    /// What a change request came to.
    public enum ChangeResult: Equatable, Sendable {
        /// Proved and stored (or removed).
        case done
        /// The proof was refused (`failure`, `locked`, `passcode-required`, `not-enrolled`);
        /// nothing changed.
        case refused(HelperReport.Outcome)
        /// Refused before any proof was checked: the new credential breaks the rules, or
        /// nothing is enrolled to remove.
        case rulesBroken
    }

    /// Sends a change request (`frames`: each buffer preceded by its length line) and says
    /// what the helper did; a failed helper or a report that disagrees with its status throws.
    public func change(_ operation: HelperOperation, frames: [UnsafeRawBufferPointer]) throws(StoreError) -> ChangeResult {
        guard operation.isChange else {
            throw .unsafe(path: path, reason: "\(operation.rawValue) is not a change request")
        }
        // Each frame is preceded by its length line; the lines are one buffer, cut into slices.
        var lines: [UInt8] = []
        var ends: [Int] = []
        for frame in frames {
            lines += Array("\(frame.count)\n".utf8)
            ends.append(lines.count)
        }
        // Array's closure methods rethrow untyped errors, so the typed run is caught inside.
        let ran = lines.withUnsafeBytes { buffer -> Result<(status: Int32, output: [UInt8]?), StoreError> in
            var input: [UnsafeRawBufferPointer] = []
            var start = 0
            for (frame, end) in zip(frames, ends) {
                input.append(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                input.append(frame)
                start = end
            }
            do throws(StoreError) {
                return .success(try HelperProcess(path: path).run(operation.rawValue, input: input))
            } catch {
                return .failure(error)
            }
        }
        let (status, output) = try ran.get()
        if status == HelperExit.rules { return .rulesBroken }
        let report = try HelperReport.attemptReport(status: status, output: output, helper: path)
        return report.outcome == .success ? .done : .refused(report.outcome)
    }
}
