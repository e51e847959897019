// The C entry points libpam looks up with dlsym. Each converts its pointers to Swift values,
// calls one function, and returns that function's PAM code; nothing here can trap.
#if !$Embedded
// Only the full-runtime build (SwiftPM: the TSan build) has a runtime that reads SWIFT_*
// variables at load; the Embedded Swift module (`make module`) has none to hide them from
// and leaves its host's environment alone.
import CModuleStart
#endif
import CPAM

/// `pam_sm_authenticate`: checks a passcode against the user's Puff record.
@_cdecl("pam_sm_authenticate")
public func pam_sm_authenticate(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                                _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    #if !$Embedded
    puff_module_restore_environment()
    #endif
    guard let handle else { return PAM_SYSTEM_ERR }
    let module = ModuleContext(handle: handle, flags: flags)
    return module.pamCode(for: module.authenticate(arguments: ModuleContext.arguments(argc, argv)))
}

/// `pam_sm_setcred`: Puff grants no credentials; succeeds like pam_unix so stacks work.
@_cdecl("pam_sm_setcred")
public func pam_sm_setcred(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                           _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    #if !$Embedded
    puff_module_restore_environment()
    #endif
    return handle == nil ? PAM_SYSTEM_ERR : PAM_SUCCESS
}

/// `pam_sm_acct_mgmt`: Puff keeps no account policy. Its lockout is enforced while
/// authenticating, and the account stack never touches (or resets) the counters.
@_cdecl("pam_sm_acct_mgmt")
public func pam_sm_acct_mgmt(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                             _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    #if !$Embedded
    puff_module_restore_environment()
    #endif
    return handle == nil ? PAM_SYSTEM_ERR : PAM_IGNORE
}

/// `pam_sm_chauthtok`: Puff changes no password. With `keyring = yes`, on the update pass it
/// keeps the new password the module before it set, sealed to the user's passcode (Keyring.swift).
@_cdecl("pam_sm_chauthtok")
public func pam_sm_chauthtok(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                             _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    #if !$Embedded
    puff_module_restore_environment()
    #endif
    guard let handle else { return PAM_SYSTEM_ERR }
    return ModuleContext(handle: handle, flags: flags).passwordChanged(arguments: ModuleContext.arguments(argc, argv))
}
