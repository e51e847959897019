import CHelperStart
import CPAM
import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

/// The `service-*` operations: the store work of the module as root in fleet mode, for a named
/// user under the module's arguments. The module runs the files store in its own process and
/// hands fleet mode here, so the directory client (and libldap) is never loaded into sshd, su
/// or login. Only a caller whose real uid is root is served: it chose the user and the
/// arguments, which could lower the lockout, as it could edit puff.conf. (The module starts
/// the helper with real uid root when only its effective uid is: su or sudo run by a user.)
enum Service {
    /// The request's bounds: the module's own and a counter file's.
    static let maximumUserName = ModuleLimits.userNameLength
    static let maximumArguments = ModuleLimits.arguments
    static let maximumArgument = ModuleLimits.argumentLength
    static let maximumCounter = LockoutStore.fileSize

    /// The request's public part: the user and the module's arguments.
    struct Request {
        var user: String
        var arguments: [String]
    }

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
        guard let request = try? readRequest() else {
            HelperLog.write(LOG_NOTICE, "\(operation.rawValue): malformed request; nothing counted")
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
            case .directory: return try serve(operation, request, FleetStore(files), user: user)
            case .files, .ownHelper, .rootService: return try serve(operation, request, files, user: user)
            }
        } catch {
            HelperLog.write(LOG_ERR, "user \(user): \(operation.rawValue): \(error); failing closed")
            return HelperExit.failure
        }
    }

    /// `operation` for the request's user, in `store`.
    private static func serve<S: StoreBackend>(_ operation: HelperOperation, _ request: Request, _ store: S,
                                               user: String) throws(StoreError) -> Int32 {
            func malformed() -> Int32 {
                HelperLog.write(LOG_NOTICE, "user \(user): \(operation.rawValue): malformed request; nothing counted")
                return HelperExit.usage
            }
            switch operation {
            case .serviceQuery:
                guard (try? FrameReader.end()) != nil else { return malformed() }
                let subject = try store.subject(for: request.user)
                return Helper.write(HelperReport(subject.state)) ? HelperExit.success : HelperExit.failure
            case .serviceVerify:
                guard let origin = try? readOrigin(), let secret = try? FrameReader.secret(limit: Helper.maximumSecretLength),
                      (try? FrameReader.end()) != nil else { return malformed() }
                return try verify(secret, store, try store.subject(for: request.user), origin: origin, user: user)
            case .serviceLogin:
                // The whole login in this one run: one directory connection (the store's), one
                // wait at most for a directory out of reach.
                guard let origin = try? readOrigin() else { return malformed() }
                let subject = try store.subject(for: request.user)
                guard Helper.write(FrameText.encode([HelperReport(subject.state).encoded()])) else { return HelperExit.failure }
                // The module's prompt runs now. No secret (the input ends: not enrolled with
                // nullok, locked, an empty reply): nothing is counted.
                guard let secret = try? FrameReader.secret(limit: Helper.maximumSecretLength),
                      (try? FrameReader.end()) != nil else { return HelperExit.usage }
                return try verify(secret, store, subject, origin: origin, user: user)
            case .serviceTakeBack:
                guard let fields = try? readFailure(), let failure = CountedFailure(serviceFields: fields) else {
                    return malformed()
                }
                let taken = try store.takeBack(failure)
                if taken {
                    HelperLog.write(LOG_INFO, CountedFailure.takenBackLine(user: user))
                    // No failure to list in `puff-enroll status` (the row `verify` wrote).
                    let options = store.options
                    do {
                        _ = try FailureHistory(stateDirectory: options.stateDirectory, lockWaitSeconds: options.lockWaitSeconds,
                                               session: store.session).forget(serial: failure.after.serial, for: failure.user)
                    } catch {
                        HelperLog.write(LOG_WARNING, "user \(user): failure history not updated: \(error)")
                    }
                }
                return taken ? HelperExit.success : HelperExit.refused
            case .query, .verify, .enrollPasscode, .enrollGesture, .remove, .precheck:
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
        if case .failure = outcome, let line = outcome.logLine(user: user, kind: secret.hasPrefix(GestureWire.prefix) ? "gesture" : "passcode") {
            HelperLog.write(line.priority, line.text)
        }
        // The failure history (`puff-enroll status --user`), written here and not by the module,
        // whose process the user may be able to stop (su run by them) while it held the lock.
        if let counted, origin.count == HelperClient.Service.originCount {
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
        let answer = FrameText.encode([report.encoded()] + (counted?.serviceFields ?? []))
        guard Helper.write(answer) else { return HelperExit.failure }
        return report.exitStatus
    }

    /// The user and the module's arguments from standard input.
    private static func readRequest() throws(FrameReader.Malformed) -> Request {
        guard let user = String(validating: try FrameReader.bytes(limit: maximumUserName), as: UTF8.self),
              let count = Int(String(decoding: try FrameReader.bytes(limit: String(maximumArguments).utf8.count), as: UTF8.self)),
              count >= 0, count <= maximumArguments else { throw FrameReader.Malformed() }
        var arguments: [String] = []
        for _ in 0..<count {
            guard let argument = String(validating: try FrameReader.bytes(limit: maximumArgument), as: UTF8.self) else {
                throw FrameReader.Malformed()
            }
            arguments.append(argument)
        }
        return Request(user: user, arguments: arguments)
    }

    /// The transaction's origin (`HelperClient.Service.originFields`): four frames, each `=` and
    /// an item of at most `originItemLimit` (256) bytes.
    private static func readOrigin() throws(FrameReader.Malformed) -> [String] {
        var items: [String] = []
        for _ in 0..<HelperClient.Service.originCount {
            let frame = try FrameReader.bytes(limit: HelperClient.Service.originItemLimit + 1)
            guard frame.first == UInt8(ascii: "="), let item = String(validating: frame.dropFirst(), as: UTF8.self) else {
                throw FrameReader.Malformed()
            }
            items.append(item)
        }
        return items
    }

    /// A counted failure's fields (`CountedFailure.serviceFields`), then the end of the request.
    private static func readFailure() throws(FrameReader.Malformed) -> [[UInt8]] {
        let fields = [try FrameReader.bytes(limit: maximumUserName), try FrameReader.bytes(limit: maximumCounter),
                      try FrameReader.bytes(limit: maximumCounter), try FrameReader.bytes(limit: 16)]
        try FrameReader.end()
        return fields
    }
}
