import PuffCore
import Testing

/// Where a call's store work runs, decided once before the prompt: every caller and
/// configuration, written out. The rule: a process an ordinary user can stop holds nothing
/// another account's login waits on; the module links neither the directory client nor the TPM's.
@Suite("StoreRoute")
struct StoreRouteTests {
    static func options(directory: Bool) -> PuffOptions {
        var options = PuffOptions()
        options.directory.backend = directory ? .ldap : .files
        return options
    }

    @Test("the module, the helper and the tools, with and without fleet mode and tpm mode", arguments: [
        // sshd, login: real and effective uid root; tpm mode goes to the helper, which unseals.
        (StoreRoute.Caller.module(effectiveUID: 0, realUID: 0, sealedKey: false), false, StoreRoute.files),
        (.module(effectiveUID: 0, realUID: 0, sealedKey: true), false, .rootService),
        (.module(effectiveUID: 0, realUID: 0, sealedKey: false), true, .rootService),
        // su or sudo run by user 1000: the user may stop the process, so the helper does the work.
        (.module(effectiveUID: 0, realUID: 1000, sealedKey: false), false, .rootService),
        (.module(effectiveUID: 0, realUID: 1000, sealedKey: false), true, .rootService),
        // A screen locker or the pad without root: the setuid helper, for the caller's own account.
        (.module(effectiveUID: 1000, realUID: 1000, sealedKey: false), false, .ownHelper),
        (.module(effectiveUID: 1000, realUID: 1000, sealedKey: true), false, .ownHelper),
        (.module(effectiveUID: 1000, realUID: 1000, sealedKey: false), true, .ownHelper),
        (.module(effectiveUID: 1000, realUID: 0, sealedKey: false), false, .ownHelper),
        // The helper does its operation's work itself.
        (.helper, false, .files),
        (.helper, true, .directory),
        // puff-enroll as root, and as an ordinary user.
        (.tool(effectiveUID: 0), false, .files),
        (.tool(effectiveUID: 0), true, .directory),
        (.tool(effectiveUID: 1000), false, .ownHelper),
        (.tool(effectiveUID: 1000), true, .ownHelper),
    ])
    func route(caller: StoreRoute.Caller, directory: Bool, expected: StoreRoute) {
        #expect(StoreRoute.choose(Self.options(directory: directory), for: caller) == expected)
    }

    @Test("the module never gets the directory in its own process, nor the files store under a real uid that is not root or in tpm mode")
    func moduleNeverHoldsTheStoreForAUser() {
        for effective: UInt32 in [0, 1, 1000, UInt32.max] {
            for real: UInt32 in [0, 1, 1000, UInt32.max] {
                for directory in [false, true] {
                    for sealed in [false, true] {
                        let route = StoreRoute.choose(Self.options(directory: directory),
                                                      for: .module(effectiveUID: effective, realUID: real, sealedKey: sealed))
                        #expect(route != .directory)
                        if route == .files { #expect(effective == 0 && real == 0 && !directory && !sealed) }
                    }
                }
            }
        }
    }
}
