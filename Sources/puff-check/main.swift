// puff-check: the setuid-root helper that lets Puff run in processes without root
// (screen lockers, `puff-enroll` run by an ordinary user). In the spirit of pam_unix's
// unix_chkpwd it checks only the account of its real uid, reads the secret from standard
// input, applies the same lockout as the module, and answers with an exit status and a
// `HelperReport` that holds no secret. Every path, every policy value and the store come
// from /etc/puff/puff.conf and the defaults; nothing comes from the caller but the secret.
//
//   puff-check query            the state of the caller's account (puff-enroll status)
//   puff-check login            one unlock: the state as one frame, then one attempt
//   puff-check enroll-passcode  a proof, then a new passcode (Enrollment.swift)
//   puff-check enroll-gesture   a proof, then a new gesture and its picture
//   puff-check remove           a proof, then the caller's enrollment is removed
//   puff-check precheck         what a change would check, before it is typed
//   puff-check service-*        for a caller whose real uid is root only (the module as root in
//                               fleet or tpm mode, or under su/sudo run by a user): Service.swift
//
// Every request and answer is framed; the messages are in PuffPlatform/HelperProtocol.swift.
// Exit (HelperExit in PuffCore): 0 verified, stored or state reported; 1 refused, with a
// report; 2 usage or a malformed request; 3 failed closed (store, configuration, setup), no
// report; 4 a change refused before its proof (the new credential breaks the rules, or nothing
// to remove). HelperClient is the one reader of the answers.

// The full-runtime build's entry point (SwiftPM). `make helper` builds the helper in Embedded
// Swift without this file: its entry point is the C `main` in Entry.swift.
helperMain(operation: CommandLine.arguments.count == 2 ? CommandLine.arguments[1] : nil)
