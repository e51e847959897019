import CHelperStart
import CPAM
import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

/// The `service-*` operations: the store work of the module as root in fleet mode and tpm
/// mode, and under su or sudo run by a user, for a named user under the module's arguments.
/// The module runs the files store in its own process and hands the rest here, so the
/// directory client (and libldap) is never loaded into sshd, su or login. Only a caller whose
/// real uid is root is served: it chose the user and the arguments, which could lower the
/// lockout, as it could edit puff.conf. (The module starts the helper with real uid root when
/// only its effective uid is: su or sudo run by a user.)
enum Service {
    static func run(_ operation: HelperOperation) -> Int32 {
        let uid = getuid()
        guard uid == 0 else {
            HelperLog.write(LOG_NOTICE, "uid \(uid): \(operation.rawValue) refused: it serves callers whose real uid is root only")
            return HelperExit.usage
        }
        // Before any lock: out of every cgroup a user could freeze or throttle (cgroup.c). (The
        // start-up code also left the caller's session, and so the autogroup whose nice value
        // its user may raise: setsid fails only for a process group leader, which the module
        // never starts; root may, and is no one to guard against.)
        guard leaveUserCgroups(operation) else { return HelperExit.failure }
        var input = HelperFrameReader(HelperDescriptorSource(0))
        let request: HelperServiceRequest
        do throws(HelperProtocolError) {
            request = try HelperServiceRequest.read(from: &input)
        } catch {
            HelperLog.write(LOG_NOTICE, "\(operation.rawValue): malformed request (\(error)); nothing counted")
            return HelperExit.usage
        }
        let user = LogText.escape(request.user)
        do {
            try Sodium.initialize()
            let session = StoreSession()
            let options = try Configuration.load(arguments: request.arguments, session: session).options
            // Service calls come from root-run services whose caller may not be the user
            // (sshd in fleet mode, su to another account): every refusal costs the same work.
            var files = FilesStore(options: options, session: session)
            files.evenRefusals = true
            switch StoreRoute.choose(options, for: .helper) {
            case .directory: return try serve(operation, request, FleetStore(files), &input, user: user)
            case .files, .ownHelper, .rootService: return try serve(operation, request, files, &input, user: user)
            }
        } catch {
            HelperLog.write(LOG_ERR, "user \(user): \(operation.rawValue): \(error); failing closed")
            return HelperExit.failure
        }
    }

    /// `operation` for the request's user, in `store` (the files store or the directory,
    /// chosen once by the caller).
    private static func serve<S: StoreBackend>(_ operation: HelperOperation, _ request: HelperServiceRequest, _ store: S,
                                               _ input: inout HelperFrameReader<HelperDescriptorSource>,
                                               user: String) throws(StoreError) -> Int32 {
        func malformed(_ error: HelperProtocolError) -> Int32 {
            HelperLog.write(LOG_NOTICE, "user \(user): \(operation.rawValue): malformed request (\(error)); nothing counted")
            return HelperExit.usage
        }
        switch operation {
        case .serviceLogin:
            // The whole login in this one run: one directory connection (the store's), one
            // wait at most for a directory out of reach.
            let origin: [String]
            do throws(HelperProtocolError) {
                origin = try HelperOrigin.read(from: &input)
            } catch {
                return malformed(error)
            }
            let subject = try store.subject(for: request.user)
            guard Helper.write(HelperLoginAnswer.stateFrame(subject.state)) else { return HelperExit.failure }
            // The module's prompt runs now. No secret (the input ends: not enrolled with
            // nullok, locked, an empty reply): nothing is counted.
            let secret: SecureBytes
            do throws(HelperProtocolError) {
                guard let read = try HelperLoginSecret.read(from: &input) else { return HelperExit.usage }
                secret = read
            } catch {
                return malformed(error)
            }
            return try verify(secret, store, subject, origin: origin, user: user)
        case .serviceTakeBack:
            let failure: CountedFailure
            do throws(HelperProtocolError) {
                failure = try HelperTakeBackRequest.readFailure(from: &input)
            } catch {
                return malformed(error)
            }
            let taken = try store.takeBack(failure)
            if taken {
                HelperLog.write(LOG_INFO, CountedFailure.takenBackLine(user: user))
                // No failure to list in `puff-enroll status` (the row the login wrote).
                let options = store.options
                do {
                    _ = try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                                           session: store.session).forget(serial: failure.after.serial, for: failure.user)
                } catch {
                    HelperLog.write(LOG_WARNING, "user \(user): failure history not updated: \(error)")
                }
            }
            return taken ? HelperExit.success : HelperExit.refused
        case .query, .login, .enrollPasscode, .enrollGesture, .remove, .precheck:
            return HelperExit.usage
        }
    }

    /// The helper started for su or sudo run by a user stays in their cgroup, whose freezer
    /// (or CPU or I/O limit) they may control, and they could stop it while it holds another
    /// account's lock, which no signal of theirs can. `false`, logged, when the helper cannot
    /// be made to run where only root controls it: then nothing is read or counted.
    static func leaveUserCgroups(_ operation: HelperOperation) -> Bool {
        var message = [CChar](repeating: 0, count: 512)
        var moved: Int32 = 0
        let status = message.withUnsafeMutableBufferPointer { buffer in
            puff_helper_leave_user_cgroups(buffer.baseAddress, buffer.count, &moved)
        }
        let text = LogText.escape(message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, limit: 400)
        guard status == 0 else {
            HelperLog.write(LOG_ERR, "\(operation.rawValue): the helper cannot leave a cgroup a user may freeze or throttle "
                            + "(\(text)); failing closed, nothing counted")
            return false
        }
        if moved > 0 {
            HelperLog.write(LOG_INFO, "\(operation.rawValue): moved into the puff-check cgroup of \(moved) hierarchies (\(text))")
        }
        return true
    }

    /// One attempt; the answer is the report, then the failure it counted, if any (for the
    /// module's `authsucc` line and its failure history).
    private static func verify<S: StoreBackend>(_ secret: borrowing SecureBytes, _ store: S, _ subject: Subject,
                               origin: [String], user: String) throws(StoreError) -> Int32 {
        let before = subject.state
        var counted: CountedFailure?
        let outcome = try store.attempt(secret, for: subject, counted: &counted)
        // The attempt's one log line: the module writes none for it (PuffPAM's `conclude`).
        if let line = outcome.logLine(user: user, kind: secret.hasPrefix(GestureWire.prefix) ? "gesture" : "passcode") {
            HelperLog.write(line.priority, line.text)
        }
        // The failure history (`puff-enroll status --user`), written here and not by the module,
        // whose process the user may be able to stop (su run by them) while it held the lock.
        if let counted, origin.count == HelperOrigin.count {
            let options = store.options
            let entry = FailureHistory.Entry(time: counted.after.lastFailure, service: origin[0], tty: origin[1],
                                             rhost: origin[2], ruser: origin[3], serial: counted.after.serial)
            do {
                try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                                   session: store.session).record(entry, for: counted.user)
            } catch {
                HelperLog.write(LOG_WARNING, "user \(user): failure history not written: \(error)")
            }
        }
        let report = HelperReport(outcome, before: before)
        var released: SecureBytes?
        if case .success = outcome, case .enrolled(let enrolled) = subject {
            released = Helper.releasedPassword(secret, store, enrolled.account, user: user)
        }
        guard Helper.writeAnswer(report, counted: counted, released: released) else { return HelperExit.failure }
        return report.exitStatus
    }
}
