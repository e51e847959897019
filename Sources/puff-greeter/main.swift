// puff-greeter: a LightDM or greetd greeter that shows Puff's picture password and keypad
// exactly as puff-lock does (PuffScreen), at the login screen. LightDM starts it as its own
// account (`lightdm` on Debian) on the X server of the seat; greetd starts it as its greeter
// account, under cage (a Wayland window). The daemon runs PAM and relays each prompt and
// message here, and this program answers them (liblightdm-gobject-1, or greetd's IPC).
//
//   puff-greeter [--greetd [--sessions DIRECTORY]] [--backend x11|wayland] [--dir DIRECTORY] [--print-layout]
//
// --dir: the Puff directory whose pictures/ it shows (default /etc/puff, like puff-lock).
// --backend: an X11 or a Wayland window (default: Wayland when WAYLAND_DISPLAY is set).
// --print-layout: where the rows, the picture and the buttons are, on stderr (tests).
import CLockX
import Glibc
import PuffClient
import PuffPlatform
import PuffScreen

Report.program = "puff-greeter"
let arguments = Array(CommandLine.arguments.dropFirst())

var directory = "/etc/puff"
var printLayout = false
var greetd = false
var sessionDirectory: String?
var backend: String?
var remaining = arguments.makeIterator()
while let argument = remaining.next() {
    switch argument {
    case "--dir":
        guard let value = remaining.next(), value.hasPrefix("/") else {
            Report.warn("--dir takes an absolute path")
            exit(2)
        }
        directory = value
    case "--print-layout":
        printLayout = true
    case "--greetd":
        greetd = true
    case "--sessions":
        guard let value = remaining.next(), value.hasPrefix("/") else {
            Report.warn("--sessions takes an absolute path")
            exit(2)
        }
        sessionDirectory = value
    case "--backend":
        guard let value = remaining.next(), value == "x11" || value == "wayland" else {
            Report.warn("--backend takes x11 or wayland")
            exit(2)
        }
        backend = value
    case "--version":
        print("puff-greeter \(BuildInfo.version)")
        exit(0)
    case "--help", "-h":
        print("""
            usage: puff-greeter [--greetd [--sessions DIRECTORY]] [--backend x11|wayland] [--dir DIRECTORY] [--print-layout]
            A LightDM greeter for Puff's picture password and passcode; LightDM starts it
            (greeter-session=puff-greeter). With --greetd it speaks greetd's IPC over
            $GREETD_SOCK instead, as a Wayland window under cage. A Wayland window when
            WAYLAND_DISPLAY is set, else an X11 one (--backend chooses). See puff-greeter(8).
            """)
        exit(0)
    default:
        Report.warn("unknown argument \(argument); see puff-greeter --help")
        exit(2)
    }
}

// A crashed greeter leaves no core with a typed passcode in it, and no process of the
// greeter's account can read its memory.
guard puff_forbid_dumps() == 0 else {
    Report.warn("cannot disable core dumps")
    exit(1)
}
// A peer that is gone must not take the greeter with it.
signal(SIGPIPE, SIG_IGN)
// A crash ends the greeter at once, as puff-lock's processes do, so greetd's fallback
// (puff-greeter-cage) starts rather than a frozen screen waiting in Swift's backtracer.
for crash in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] { signal(crash, SIG_DFL) }

do {
    let waylandSet = getenv("WAYLAND_DISPLAY").map { $0.pointee != 0 } ?? false
    let wayland: Bool = backend.map { $0 == "wayland" } ?? waylandSet
    let display: any GreeterScreen
    if wayland {
        let window = try WaylandWindow(title: "puff-greeter", background: LockTheme.dark.backgroundPixel)
        try window.show()
        if printLayout { Report.raw("puff-greeter: a Wayland window \(window.width)x\(window.height)\n") }
        display = window
    } else {
        let window = try LockDisplay()
        window.show()
        display = window
    }
    let connection: any GreeterDaemon
    if greetd {
        // --sessions: the sessions' .desktop files (Wayland ones) instead of the system's.
        connection = try sessionDirectory.map { try GreetdConnection(sessionDirectories: [($0, "wayland")]) } ?? GreetdConnection()
    } else {
        connection = try LightDMConnection()
    }
    GreeterFlow(display: display, connection: connection, directory: directory, printLayout: printLayout).run()
} catch {
    Report.warn("\(error)")
    exit(1)
}

/// The greeter's screen: an X11 window (LightDM) or a Wayland one (greetd under cage).
protocol GreeterScreen: LockScreenDisplay {
    /// Called with the key symbol of a key that types nothing; true when it was used.
    var otherKey: ((UInt) -> Bool)? { get set }
}

extension LockDisplay: GreeterScreen {}
extension WaylandWindow: GreeterScreen {}
