import PuffCore
import PuffPlatform
import Testing

/// The one mapping between the FilesStore's state and outcome and the helper's report
/// (PuffPlatform/HelperProtocol.swift), both ways, through the wire text.
@Suite("HelperReportMapping")
struct HelperReportMappingTests {
    static let path = "/usr/local/sbin/puff-check"

    static let locks: [LockStatus] = [.open, .locked(secondsLeft: 1), .locked(secondsLeft: 900), .lockedUntilReset]
    static let reasons: [PasscodeReason] = [.administrator, .gestureFailures(0), .gestureFailures(3),
                                            .gestureFailures(UInt32.max), .restarted, .unused(interval: 1),
                                            .unused(interval: 172_800)]
    static var acceptances: [Acceptance] {
        var all: [Acceptance] = [.gestureOnly, .refused(nil)]
        for type in PasscodeType.allCases {
            all.append(.passcodeOrGesture(type))
            all.append(.passcodeOnly(type, because: nil))
            all += reasons.map { .passcodeOnly(type, because: $0) }
        }
        all += reasons.map { .refused($0) }
        return all
    }
    static let failureCounts: [UInt32] = [0, 1, 3, UInt32.max]

    /// Every enrolled state the wire can carry.
    static var enrolledStates: [CredentialState] {
        var all: [CredentialState] = []
        for lock in locks {
            for acceptance in acceptances {
                for failures in failureCounts {
                    all.append(CredentialState(notEnrolledReason: nil, lock: lock, acceptance: acceptance, failures: failures))
                }
            }
        }
        return all
    }

    /// Every outcome of an attempt (the rehash flag and a failure's detail are not on the wire).
    static var outcomes: [AttemptOutcome] {
        var all: [AttemptOutcome] = [.success(rehashed: false), .success(rehashed: true), .notEnrolled]
        for lock in locks {
            for failures in failureCounts {
                all.append(.failure(failures: failures, lock: lock, detail: ""))
                all.append(.failure(failures: failures, lock: lock, detail: "gesture did not match"))
            }
            all.append(.locked(lock))
        }
        all += reasons.map { .passcodeRequired($0) }
        return all
    }

    /// What `outcome` reads back as on the module's side.
    static func expectedAfterWire(_ outcome: AttemptOutcome) -> AttemptOutcome {
        switch outcome {
        case .success: .success(rehashed: false)
        case .failure(let failures, let lock, _): .failure(failures: failures, lock: lock, detail: HelperReport.failureDetail)
        case .locked, .passcodeRequired, .notEnrolled: outcome
        }
    }

    @Test("the wire text is the one old helpers and modules speak, byte for byte")
    func wireText() throws {
        let state = CredentialState(notEnrolledReason: nil, lock: .locked(secondsLeft: 90),
                                    acceptance: .passcodeOnly(.digits6, because: .gestureFailures(3)), failures: 3)
        #expect(HelperReport(state).encoded() == Array("""
            puff-check 1
            outcome state
            lock seconds 90
            accepts passcode digits6 gesture-failures:3
            failures 3

            """.utf8))
        let before = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .passcodeOrGesture(.numeric), failures: 2)
        #expect(HelperReport(.success(rehashed: true), before: before).encoded() == Array("""
            puff-check 1
            outcome success
            lock open
            accepts both numeric -
            failures 0

            """.utf8))
        #expect(HelperReport(.failure(failures: 5, lock: .lockedUntilReset, detail: "x"), before: before).encoded() == Array("""
            puff-check 1
            outcome failure
            lock reset
            accepts both numeric -
            failures 5

            """.utf8))
        #expect(HelperReport(.notEnrolled, before: .notEnrolled("no such account")).encoded() == Array("""
            puff-check 1
            outcome not-enrolled
            lock open
            accepts passcode digits6 -
            failures 0

            """.utf8))
        // A report as the helper of the previous commit wrote it reads back the same.
        let old = Array("puff-check 1\noutcome passcode-required\nlock open\naccepts passcode alphanumeric unused:604800\nfailures 1\n".utf8)
        #expect(try HelperReport.outcome(status: HelperExit.refused, output: old, helper: Self.path)
                == .passcodeRequired(.unused(interval: 604_800)))
    }

    @Test("every enrolled state survives state → report text → state")
    func stateRoundTrip() throws {
        let states = Self.enrolledStates
        #expect(states.count == Self.locks.count * Self.acceptances.count * Self.failureCounts.count)
        for state in states {
            let text = HelperReport(state).encoded()
            #expect(try HelperReport.state(status: HelperExit.success, output: text, helper: Self.path) == state,
                    "\(String(decoding: text, as: UTF8.self))")
        }
    }

    @Test("a subject's state becomes a report and back: not enrolled keeps only that it is not enrolled")
    func notEnrolledRoundTrip() throws {
        for reason in ["invalid user name", "no such account", "no Puff record"] {
            let subject = Subject.notEnrolled(reason: reason)
            #expect(subject.state == .notEnrolled(reason))
            let text = HelperReport(subject.state).encoded()
            let back = try HelperReport.state(status: HelperExit.success, output: text, helper: Self.path)
            #expect(back == .notEnrolled(HelperReport.notEnrolledReason))
            #expect(!back.isEnrolled && !back.hasPasscode)
        }
        // A damaged counter is the helper's to log; it does not travel.
        let damaged = CredentialState(notEnrolledReason: nil, lock: .lockedUntilReset, acceptance: .gestureOnly,
                                      failures: 0, counterDamaged: true)
        var undamaged = damaged
        undamaged.counterDamaged = false
        #expect(try HelperReport.state(status: HelperExit.success, output: HelperReport(damaged).encoded(),
                                       helper: Self.path) == undamaged)
    }

    @Test("every outcome survives outcome → report text (with its exit status) → outcome, whatever the state before")
    func outcomeRoundTrip() throws {
        let befores = [CredentialState.notEnrolled("no such account")] + Self.enrolledStates.filter { $0.failures == 3 }
        var checked = 0
        for outcome in Self.outcomes {
            for before in befores {
                let report = HelperReport(outcome, before: before)
                #expect(report.exitStatus == (outcome == .success(rehashed: false) || outcome == .success(rehashed: true)
                                                  ? HelperExit.success : HelperExit.refused))
                let back = try HelperReport.outcome(status: report.exitStatus, output: report.encoded(), helper: Self.path)
                #expect(back == Self.expectedAfterWire(outcome), "\(outcome) before \(before)")
                checked += 1
            }
        }
        #expect(checked == Self.outcomes.count * befores.count)
    }

    @Test("an outcome's report keeps what it does not change from the state before")
    func outcomeKeepsTheState() throws {
        let before = CredentialState(notEnrolledReason: nil, lock: .locked(secondsLeft: 60),
                                     acceptance: .passcodeOnly(.digits4, because: .restarted), failures: 4)
        let success = HelperReport(.success(rehashed: false), before: before)
        #expect(success.lock == .open && success.failures == 0 && success.acceptance == before.acceptance)
        // The system password proving a change takes back only its own attempt.
        let proof = HelperReport(.success(rehashed: false), before: before, clearsFailures: false)
        #expect(proof.lock == .open && proof.failures == 4)
        let locked = HelperReport(.locked(.lockedUntilReset), before: before)
        #expect(locked.outcome == .locked && locked.lock == .lockedUntilReset && locked.failures == 4)
        // A passcode required by an administrator after the state was read (the gesture-only
        // acceptance then had no passcode type): the reason still travels.
        let gestureOnly = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .gestureOnly, failures: 0)
        let required = HelperReport(.passcodeRequired(.administrator), before: gestureOnly)
        #expect(required.acceptance == .passcodeOnly(.digits6, because: .administrator))
        let both = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .passcodeOrGesture(.alphanumeric), failures: 0)
        #expect(HelperReport(.passcodeRequired(.administrator), before: both).acceptance
                == .passcodeOnly(.alphanumeric, because: .administrator))
    }

    @Test("a report whose exit status disagrees with it, or that answers the wrong question, is refused")
    func disagreementRefused() throws {
        let before = CredentialState(notEnrolledReason: nil, lock: .open, acceptance: .passcodeOrGesture(.digits6), failures: 1)
        let success = HelperReport(.success(rehashed: false), before: before).encoded()
        let failure = HelperReport(.failure(failures: 2, lock: .open), before: before).encoded()
        let locked = HelperReport(.locked(.lockedUntilReset), before: before).encoded()
        let state = HelperReport(before).encoded()
        func refusedAttempt(_ status: Int32, _ output: [UInt8]?) -> String? {
            do throws(StoreError) {
                _ = try HelperReport.outcome(status: status, output: output, helper: Self.path)
                return nil
            } catch {
                guard case .unsafe(let path, let reason) = error, path == Self.path else { return "wrong error \(error)" }
                return reason
            }
        }
        #expect(refusedAttempt(HelperExit.refused, success) == "the helper's status and report disagree")
        #expect(refusedAttempt(HelperExit.success, failure) == "the helper's status and report disagree")
        #expect(refusedAttempt(HelperExit.success, locked) == "the helper's status and report disagree")
        #expect(refusedAttempt(HelperExit.success, state) == "the helper answered an attempt with a query's state")
        #expect(refusedAttempt(HelperExit.refused, state) == "the helper answered an attempt with a query's state")
        for status in [HelperExit.usage, HelperExit.failure, HelperExit.rules, 127, -1] {
            #expect(refusedAttempt(status, success) == "the helper failed (status \(status)); see its log")
        }
        #expect(refusedAttempt(HelperExit.success, nil) == "the helper's report is malformed")
        #expect(refusedAttempt(HelperExit.success, Array(success.dropLast(3))) == "the helper's report is malformed")
        #expect(refusedAttempt(HelperExit.success, success + Array("extra 1\n".utf8)) == "the helper's report is malformed")
        // A passcode required with no reason is a change proof's answer, not an attempt's.
        let forChange = HelperReport.passcodeRequiredForChange(before, type: .digits6)
        #expect(refusedAttempt(HelperExit.refused, forChange.encoded()) == "the helper gave no reason for requiring the passcode")
        #expect(try HelperReport.attemptReport(status: HelperExit.refused, output: forChange.encoded(),
                                               helper: Self.path).outcome == .passcodeRequired)
        #expect(throws: StoreError.self) {
            try HelperReport.attemptReport(status: HelperExit.success, output: forChange.encoded(), helper: Self.path)
        }
        // A query is answered with exit 0 and a state, nothing else.
        for (status, output) in [(HelperExit.refused, state), (HelperExit.success, success), (HelperExit.refused, failure),
                                 (HelperExit.failure, state), (HelperExit.success, [UInt8]())] {
            #expect(throws: StoreError.self) {
                try HelperReport.state(status: status, output: output, helper: Self.path)
            }
        }
    }
}
