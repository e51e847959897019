import PuffCore
import Testing

/// The prompt contract read back: every prompt the module can send is understood by the
/// parser the helpers share (puff-pad login, puff-lock), and other modules' prompts are not
/// mistaken for Puff's.
@Suite("PromptContract")
struct PromptContractTests {
    @Test("every prompt the module sends reads back as what it accepts")
    func roundTrip() {
        for type in PasscodeType.allCases {
            #expect(PuffPrompt(Acceptance.passcodeOrGesture(type).prompt) == .passcodeOrGesture(type))
            #expect(PuffPrompt(Acceptance.passcodeOnly(type, because: .restarted).prompt) == .passcodeOnly(type))
            #expect(PuffPrompt(Acceptance.passcodeOnly(type, because: nil).prompt) == .passcodeOnly(type))
        }
        #expect(PuffPrompt(Acceptance.gestureOnly.prompt) == .gestureOnly)
        #expect(PuffPrompt(Acceptance.unenrolled.prompt) == .passcodeOnly(.digits6))
    }

    @Test("what each prompt accepts")
    func accepts() {
        let cases: [(PuffPrompt, passcode: Bool, gesture: Bool)] = [
            (.passcodeOrGesture(.digits4), true, true), (.passcodeOnly(.numeric), true, false),
            (.gestureOnly, false, true), (.foreign("Password: "), false, false),
        ]
        for (prompt, passcode, gesture) in cases {
            #expect(prompt.acceptsPasscode == passcode, "\(prompt)")
            #expect(prompt.acceptsGesture == gesture, "\(prompt)")
        }
    }

    @Test("other modules' prompts and odd Puff prompts")
    func foreignAndUnknown() {
        #expect(PuffPrompt("Password: ") == .foreign("Password: "))
        #expect(PuffPrompt("Puff passcode [6 digits]:") == .foreign("Puff passcode [6 digits]:"))
        #expect(PuffPrompt("puff passcode [6 digits]: ") == .foreign("puff passcode [6 digits]: "))
        // A Puff prompt of an unknown shape, or an unknown keypad: both factors, no keypad type.
        #expect(PuffPrompt("Puff something new: ") == .passcodeOrGesture(nil))
        #expect(PuffPrompt("Puff passcode [9 digits]: ") == .passcodeOnly(nil))
        #expect(PuffPrompt("Puff passcode or gesture [emoji]: ") == .passcodeOrGesture(nil))
    }
}
