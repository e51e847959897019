import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

/// Self-enrollment for an ordinary user (`puff-enroll passcode|gesture` without root): the
/// request is the proof, then the new credential. The proof is the current Puff passcode when
/// one is enrolled (never the gesture: changing a credential needs the stronger factor),
/// otherwise the system password through the `puff-enroll` PAM service. Either is a counted
/// attempt under the user's lockout.
///
///   enroll-passcode:  proof, type (digits4|digits6|numeric|alphanumeric), new passcode
///   enroll-gesture:   proof, define gesture, confirm gesture, picture (PNG or JPEG bytes)
enum Enrollment {
    static func run<S: StoreBackend>(_ operation: HelperOperation, _ store: S, _ subject: Subject, _ account: Account,
                    _ input: inout HelperFrameReader<HelperDescriptorSource>) throws(StoreError) -> Int32 {
        let request: HelperChangeRequest.Enrollment
        do throws(HelperProtocolError) {
            request = try HelperChangeRequest.readEnrollment(gesture: operation == .enrollGesture, from: &input)
        } catch {
            HelperLog.write(LOG_NOTICE, "user \(account.name): malformed enrollment request (\(error)); nothing counted")
            return HelperExit.usage
        }
        // The new credential is checked first, so a good proof is never spent on a bad request.
        let change: Change
        switch prepare(request, store.options, isRoot: account.uid == 0) {
        case .failure(let reason):
            HelperLog.write(LOG_NOTICE, "user \(account.name): enrollment refused: \(reason)")
            return HelperExit.rules
        case .success(let prepared):
            change = prepared
        }
        let options = store.options
        // Whether the proof is the system password (no Puff passcode yet) or the passcode.
        let hadPasscode = Self.passcode(of: subject) != nil
        let proved = try prove(request.proof, store, subject, account)
        guard proved.outcome == .success else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): enrollment refused, proof \(proved.outcome.rawValue)")
            return Helper.write(proved) ? HelperExit.refused : HelperExit.failure
        }
        switch change {
        case .passcode(let type):
            let keyring = options.keyring && options.keyringRefusal == nil
            // A change proven with the old passcode: its copy of the system password, opened
            // now, is sealed again to the new passcode's key pair below.
            var kept: SecureBytes?
            if keyring, hadPasscode { kept = Self.keyringCopy(opening: request.proof, store, account) }
            try store.storePasscode(request.secret, type: type, for: account)
            HelperLog.write(LOG_NOTICE, "user \(account.name): passcode set by the user (type \(type.rawValue))")
            if keyring, !hadPasscode {
                Self.keepKeyringCopy(request.proof, store, account, when: "self-enrollment's password proof")
            } else if let password = kept.take() {
                Self.keepKeyringCopy(password, store, account, when: "passcode change")
            }
        case .gesture(let template, let picture):
            try store.storeGesture(template, picture: picture, for: account)
            HelperLog.write(LOG_NOTICE, "user \(account.name): gesture set by the user")
        }
        return Helper.write(proved) ? HelperExit.success : HelperExit.failure
    }

    /// `precheck`: what a change checks, asked before the rest of the change is typed, so
    /// that a type the policy refuses or a wrong proof is said at once (issue 32, item 7). The
    /// type is checked first and counts nothing; the proof is a counted attempt, as a change's
    /// (which checks it again: the helper keeps nothing between runs). Nothing is changed.
    static func precheck<S: StoreBackend>(_ store: S, _ subject: Subject, _ account: Account,
                         _ input: inout HelperFrameReader<HelperDescriptorSource>) throws(StoreError) -> Int32 {
        let request: HelperChangeRequest.Precheck
        do throws(HelperProtocolError) {
            request = try HelperChangeRequest.readPrecheck(from: &input)
        } catch {
            HelperLog.write(LOG_NOTICE, "user \(account.name): malformed precheck request (\(error)); nothing counted")
            return HelperExit.usage
        }
        if let type = request.type {
            // The rules `prepare` applies that depend on the type alone.
            let floor = store.options.minimumPasscode ?? .digits6
            guard type.meets(floor) else {
                HelperLog.write(LOG_NOTICE, "user \(account.name): passcode type \(type.rawValue) refused before any proof "
                                + "(below \(floor.rawValue))")
                return HelperExit.rules
            }
        }
        guard let proof = request.takeProof() else { return Helper.write(HelperReport(subject.state)) ? HelperExit.success : HelperExit.failure }
        let proved = try prove(proof, store, subject, account)
        guard proved.outcome == .success else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): precheck, proof \(proved.outcome.rawValue)")
            return Helper.write(proved) ? HelperExit.refused : HelperExit.failure
        }
        return Helper.write(proved) ? HelperExit.success : HelperExit.failure
    }

    /// The keyring's copy opened with the verified passcode `proof`, or nil (none kept, stale,
    /// or an error, which is logged: the change goes on, the copy is then dropped).
    private static func keyringCopy<S: StoreBackend>(opening proof: borrowing SecureBytes, _ store: S, _ account: Account) -> SecureBytes? {
        do {
            guard case .password(let password) = try store.releaseKeyring(proof, for: account) else { return nil }
            return password
        } catch {
            HelperLog.write(LOG_WARNING, "user \(account.name): keyring: the copy could not be opened to seal it again: \(error)")
            return nil
        }
    }

    /// Seals `password` (proven) to the record's passcode key pair; best effort, logged.
    private static func keepKeyringCopy<S: StoreBackend>(_ password: borrowing SecureBytes, _ store: S, _ account: Account, when: String) {
        do {
            if try store.captureKeyring(password, for: account) == .kept {
                HelperLog.write(LOG_INFO, "user \(account.name): keyring: the system password is kept, sealed to the passcode (\(when))")
            }
        } catch {
            HelperLog.write(LOG_WARNING, "user \(account.name): keyring: not kept (\(when)): \(error)")
        }
    }

    /// `remove`: the caller's own enrollment (record, picture, counter) after the same proof
    /// as a change. The request is one frame, the proof.
    static func remove<S: StoreBackend>(_ store: S, _ subject: Subject, _ account: Account,
                       _ input: inout HelperFrameReader<HelperDescriptorSource>) throws(StoreError) -> Int32 {
        let proof: SecureBytes
        do throws(HelperProtocolError) {
            proof = try HelperChangeRequest.readRemoval(from: &input)
        } catch {
            HelperLog.write(LOG_NOTICE, "user \(account.name): malformed removal request (\(error)); nothing counted")
            return HelperExit.usage
        }
        guard case .enrolled = subject else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): removal refused, nothing enrolled")
            return Helper.write(HelperReport(subject.state)) ? HelperExit.rules : HelperExit.failure
        }
        let proved = try prove(proof, store, subject, account)
        guard proved.outcome == .success else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): removal refused, proof \(proved.outcome.rawValue)")
            return Helper.write(proved) ? HelperExit.refused : HelperExit.failure
        }
        _ = try store.removeEnrollment(of: account.name)
        HelperLog.write(LOG_NOTICE, "user \(account.name): enrollment removed by the user")
        return Helper.write(proved) ? HelperExit.success : HelperExit.failure
    }

    /// The verified proof, as a report (`success`, `failure`, `locked`, `passcode-required`).
    private static func prove<S: StoreBackend>(_ proof: borrowing SecureBytes, _ store: S,
                              _ subject: Subject, _ account: Account) throws(StoreError) -> HelperReport {
        let state = subject.state
        if let passcode = Self.passcode(of: subject) {
            if proof.hasPrefix(GestureWire.prefix) { return .passcodeRequiredForChange(state, type: passcode.type) }
            let outcome = try store.attempt(proof, for: subject, asProofForChange: true)
            return HelperReport(unverifiedIsFailure(outcome, state), before: state)
        }
        // A gesture-only user under an administrator's lock: only `puff-enroll reset` lifts
        // it, never a passcode enrolled with the system password.
        if case .refused(.administrator?) = subject.acceptance {
            return HelperReport(.locked(.lockedUntilReset), before: state)
        }
        let outcome = try store.countedAttempt(for: account) { () throws(StoreError) -> Bool in
            SystemPassword.verify(user: account.name.value, proof: proof)
        }
        // The system password takes back only its own attempt: earlier failures stand.
        return HelperReport(unverifiedIsFailure(outcome, state), before: state, clearsFailures: false)
    }

    /// The enrolled passcode as the store read it (the directory's record in fleet mode).
    private static func passcode(of subject: Subject) -> StoredPasscode? {
        guard case .enrolled(let enrolled) = subject else { return nil }
        return enrolled.record.passcode
    }

    /// A proof that was not verified (passcode required, the record removed meanwhile) is a
    /// refused proof, with the state as it was.
    private static func unverifiedIsFailure(_ outcome: AttemptOutcome,
                                            _ state: CredentialState) -> AttemptOutcome {
        switch outcome {
        case .passcodeRequired, .notEnrolled: .failure(failures: state.failures, lock: state.lock)
        case .success, .failure, .locked: outcome
        }
    }

    enum Change {
        case passcode(PasscodeType)
        case gesture(GestureTemplate, [UInt8])
    }

    /// The change to store, or why the new credential breaks the rules.
    static func prepare(_ request: borrowing HelperChangeRequest.Enrollment, _ options: PuffOptions,
                        isRoot: Bool) -> Result<Change, RuleError> {
        if let type = request.type {
            if let violation = request.secret.withBytes({ PasscodeRules.violation(of: $0, as: type, allowWeak: false, minimum: options.minimumPasscode, isRoot: isRoot, selfService: true) }) {
                return .failure(RuleError(violation.message))
            }
            return .success(.passcode(type))
        }
        // The picture is not decoded here (no image parser runs as root on user bytes):
        // only its kind is checked; its size is the one the gestures declare.
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        guard request.picture.starts(with: png) || request.picture.starts(with: [0xff, 0xd8, 0xff]) else {
            return .failure(RuleError("the picture is neither PNG nor JPEG"))
        }
        // One typed catch per step (Embedded Swift has no untyped `any Error`).
        let settings: GestureRecognizerSettings
        let first: Gesture, second: Gesture
        let template: GestureTemplate
        do throws(OptionError) {
            settings = try options.gestureRecognizerSettings()
        } catch {
            return .failure(RuleError("gesture refused: \(error)"))
        }
        do throws(GestureFormatError) {
            first = try request.secret.withBytes { bytes throws(GestureFormatError) in try GestureWire.parse(bytes) }
            second = try request.confirm.withBytes { bytes throws(GestureFormatError) in try GestureWire.parse(bytes) }
        } catch {
            return .failure(RuleError("gesture refused: \(error)"))
        }
        guard first.width == second.width, first.height == second.height else {
            return .failure(RuleError("the two gestures are for different picture sizes"))
        }
        do throws(GestureEnrollmentError) {
            template = try GestureEnroller.build(drawings: [first, second], settings: settings)
        } catch {
            return .failure(RuleError("gesture refused: \(error)"))
        }
        return .success(.gesture(template, request.picture))
    }

    struct RuleError: Error, CustomStringConvertible {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        /// The reason (also what Embedded Swift can print).
        var description: String { reason }
    }
}
