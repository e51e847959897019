// swift-tools-version:6.0
//
// The layout is the architecture:
//   PuffCore      pure logic: passcode rules, lockout arithmetic, record and config formats (no I/O, no C)
//   PuffPlatform  syscalls, trusted files, locks, libsodium; the files store and the one attempt engine
//   PuffFleet     fleet mode: the directory client, its counters, the offline cache (helper and CLI only)
//   PuffPAM       the PAM boundary: C entry points, the conversation, one mapping to PAM codes
//   PuffClient    the client kit: PAM transaction and conversation, the caller, the terminal
//                 (puff-pad, puff-lock, puff-greeter, puff-enroll), and PuffClientPicture: the user's
//                 picture decoded in a confined child (puff-enroll too, to refuse what cannot be shown)
//   puff-enroll   the command-line tool
//   puff-check    the setuid helper through which unprivileged callers reach the store
//   puff-pad      the terminal pad: gestures drawn on the picture, a PAM login
//   PuffScreen    the lock screen's drawing and input (Xlib, cairo): puff-lock and the LightDM greeter
//   puff-lock     the X11 screen locker: the picture password on the desktop
//   puff-greeter  the LightDM greeter: the picture password at the login screen
// The module is linked with the Swift runtime statically by the Makefile (see `make module`);
// those flags break `swift test` linking, so they stay out of this file.
import PackageDescription

let package = Package(
    name: "Puff",
    products: [
        .library(name: "PuffPAM", type: .dynamic, targets: ["PuffPAM"]),
        .executable(name: "puff-enroll", targets: ["puff-enroll"]),
        .executable(name: "puff-check", targets: ["puff-check"]),
        .executable(name: "puff-pad", targets: ["puff-pad"]),
        .executable(name: "puff-lock", targets: ["puff-lock"]),
        .executable(name: "puff-greeter", targets: ["puff-greeter"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CPAM", path: "Sources/CPAM",
                       providers: [.apt(["libpam0g-dev"])]),
        .systemLibrary(name: "CSodium", path: "Sources/CSodium",
                       providers: [.apt(["libsodium-dev"])]),
        // libchafa (and the GLib it is built on) renders pictures as terminal text in puff-pad.
        .systemLibrary(name: "CChafa", path: "Sources/CChafa", pkgConfig: "chafa",
                       providers: [.apt(["libchafa-dev", "libglib2.0-dev"])]),
        // Xlib, XInput2, RandR and cairo for the screen locker (puff-lock); never in the module.
        // Linked by the module map's own list: cairo-xlib's pkg-config adds libXext, which
        // nothing calls (dpkg-shlibdeps warned of a useless dependency).
        .systemLibrary(name: "CLockX", path: "Sources/CLockX",
                       providers: [.apt(["libx11-dev", "libxi-dev", "libxrandr-dev", "libcairo2-dev"])]),
        // The release and the install paths chosen by the build (`make` passes them to the C compiler).
        .target(name: "CPuffBuild"),
        // Start-up code that runs before the Swift runtime reads SWIFT_* variables: the
        // helper drops its whole environment (.preinit_array), the module hides SWIFT_*
        // entries while its runtime starts in a setuid host (a priority-101 constructor).
        .target(name: "CHelperStart", path: "Sources/CHelperStart"),
        .target(name: "CModuleStart", path: "Sources/CModuleStart"),
        // The helper started as root for a service caller (HelperProcess).
        .target(name: "CSpawn", path: "Sources/CSpawn"),
        // libldap for fleet mode (`backend = ldap`): a thin C layer over its variadic BER
        // calls and NULL-terminated modify lists (Sources/CLDAP/include/puff_ldap.h), linked
        // directly here; the Embedded Swift module and helper (`make`) link its loader instead.
        .target(name: "CLDAP", path: "Sources/CLDAP", exclude: ["puff_ldap_loader.c"],
                linkerSettings: [.linkedLibrary("ldap"), .linkedLibrary("lber")]),
        // libtss2 (ESAPI) for tpm mode: the store's key sealed in the TPM
        // (Sources/CTPM/include/puff_tpm.h), linked directly here; the Embedded Swift helper
        // (`make`) links its loader instead, the module a stub that never reaches a TPM.
        .target(name: "CTPM", path: "Sources/CTPM", exclude: ["puff_tpm_loader.c"],
                linkerSettings: [.linkedLibrary("tss2-esys"), .linkedLibrary("tss2-tctildr"), .linkedLibrary("tss2-rc")]),
        .target(name: "PuffCore"),
        // libaudit: records for locks and administrator resets, as pam_faillock sends.
        .systemLibrary(name: "CAudit", path: "Sources/CAudit", providers: [.apt(["libaudit-dev"])]),
        .target(name: "PuffPlatform", dependencies: ["PuffCore", "CSodium", "CPuffBuild", "CAudit", "CTPM", "CPAM", "CSpawn"]),
        // Fleet mode (`backend = ldap`): the directory client, the fleet's counters and the
        // offline cache. Only the helper and puff-enroll depend on it: the module cannot
        // import it, so it cannot link the directory client.
        .target(name: "PuffFleet", dependencies: ["PuffCore", "PuffPlatform", "CLDAP"]),
        // The client kit shared by the programs people type into (never the module or the helper).
        .target(name: "PuffClient", dependencies: ["PuffCore", "PuffPlatform", "CPAM"]),
        // Its picture half: the one decoder, stb_image (Debian's libstb) only in a confined child
        // entered before main (CPictureDecoder/decoder.c). puff-enroll decodes a picture there
        // before enrolling it, so what cannot be shown at login is refused at enrollment.
        .target(name: "CPictureDecoder", path: "Sources/CPictureDecoder", linkerSettings: [.linkedLibrary("stb")]),
        .target(name: "PuffClientPicture", dependencies: ["PuffPlatform", "CPictureDecoder"]),
        .target(name: "PuffPAM", dependencies: ["PuffCore", "PuffPlatform", "CPAM", "CModuleStart"],
                exclude: ["pam_puff.map"]),
        .executableTarget(name: "puff-enroll", dependencies: [
            "PuffCore", "PuffPlatform", "PuffFleet", "PuffClient", "PuffClientPicture",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The setuid-root helper for unprivileged callers (like pam_unix's unix_chkpwd): no
        // Foundation, no argument parser; libpam only for the system-password proof.
        .executableTarget(name: "puff-check", dependencies: ["PuffCore", "PuffPlatform", "PuffFleet", "CPAM", "CHelperStart"]),
        // The terminal pad: draws gestures on the picture and runs a PAM login; not setuid.
        .executableTarget(name: "puff-pad", dependencies: [
            "PuffCore", "PuffPlatform", "PuffClient", "PuffClientPicture", "CPAM", "CChafa", "CPuffBuild",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The lock screen: the covering windows, the grabs and the input, the layout and the
        // cairo drawing of the picture and the keypad, and the per-prompt screen (LockSession);
        // shared by puff-lock and the LightDM greeter, so both show the same thing.
        .target(name: "PuffScreen", dependencies: ["PuffCore", "PuffPlatform", "PuffClient", "PuffClientPicture", "CPAM", "CLockX"]),
        // The X11 screen locker: runs as the user, authenticates through PAM (so through
        // puff-check), draws with cairo.
        .executableTarget(name: "puff-lock", dependencies: [
            "PuffCore", "PuffPlatform", "PuffClient", "PuffClientPicture", "PuffScreen", "CPAM", "CLockX",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // liblightdm-gobject-1 for the LightDM greeter.
        .systemLibrary(name: "CLightDM", path: "Sources/CLightDM", pkgConfig: "liblightdm-gobject-1",
                       providers: [.apt(["liblightdm-gobject-dev"])]),
        // The LightDM greeter: runs as LightDM's account, draws with PuffScreen, answers the
        // daemon's PAM conversation; pictures decoded in a confined child.
        .executableTarget(name: "puff-greeter", dependencies: [
            "PuffCore", "PuffPlatform", "PuffClient", "PuffClientPicture", "PuffScreen", "CLockX", "CLightDM",
        ]),
        // Seeded randomness and trigonometry for the gesture simulations and tests (not for secrets).
        .target(name: "PuffSimulation"),
        // `make bench`: gesture verification time against input size.
        .executableTarget(name: "gesture-bench", dependencies: ["PuffCore", "PuffSimulation"]),
        // `make gesture-eval`: the simulated workloads of issue 13 through the matcher, and an ROC curve.
        .executableTarget(name: "gesture-eval", dependencies: ["PuffCore", "PuffSimulation"]),
        // A small PAM application in C, used by the integration tests and the benchmark:
        // pam_start_confdir with a scripted conversation, like a real login program.
        .executableTarget(name: "puff-pam-harness", path: "Tests/Harness",
                          linkerSettings: [.linkedLibrary("pam"), .linkedLibrary("pthread")]),
        // N processes released by one barrier into pam_authenticate at once (`RaceTests`, `make race`).
        .executableTarget(name: "puff-race", path: "Tests/Barrier",
                          linkerSettings: [.linkedLibrary("pam")]),
        // libFuzzer targets (`make fuzz`, scripts/fuzz.sh). Built with `--sanitize fuzzer` and
        // `-DPUFF_FUZZ` they export only LLVMFuzzerTestOneInput; a normal build gives each one
        // a `main` that replays files instead, so they always compile and the corpus is replayable.
        .target(name: "FuzzSupport", path: "Sources/Fuzz/Support"),
        .executableTarget(name: "fuzz-gesture-wire", dependencies: ["FuzzSupport", "PuffCore"],
                          path: "Sources/Fuzz/GestureWire"),
        .executableTarget(name: "fuzz-template", dependencies: ["FuzzSupport", "PuffCore"],
                          path: "Sources/Fuzz/Template"),
        .executableTarget(name: "fuzz-record", dependencies: ["FuzzSupport", "PuffCore", "PuffPlatform"],
                          path: "Sources/Fuzz/Record"),
        .executableTarget(name: "fuzz-options", dependencies: ["FuzzSupport", "PuffCore"],
                          path: "Sources/Fuzz/Options"),
        .executableTarget(name: "fuzz-argon2", dependencies: ["FuzzSupport", "PuffCore", "PuffPlatform"],
                          path: "Sources/Fuzz/Argon2"),
        .executableTarget(name: "fuzz-tally", dependencies: ["FuzzSupport", "PuffCore"],
                          path: "Sources/Fuzz/Tally"),
        .executableTarget(name: "fuzz-authenticate", dependencies: ["FuzzSupport", "PuffCore", "PuffPlatform"],
                          path: "Sources/Fuzz/Authenticate"),
        .testTarget(name: "PuffCoreTests", dependencies: ["PuffCore", "PuffSimulation"]),
        .testTarget(name: "PuffPlatformTests", dependencies: ["PuffCore", "PuffPlatform"]),
        .testTarget(name: "PuffClientTests", dependencies: ["PuffCore", "PuffPlatform", "PuffClient", "PuffClientPicture", "CPictureDecoder", "CPAM"]),
        .testTarget(name: "PuffIntegrationTests", dependencies: ["PuffCore", "PuffPlatform"]),
    ]
)
