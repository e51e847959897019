import CLockX
import Glibc
import PuffClient
import PuffPlatform

/// Why the screen cannot be locked.
package struct LockDisplayError: Error, CustomStringConvertible {
    package let description: String

    package init(description: String) { self.description = description }
}

/// A rectangle in window coordinates (the window covers the default screen's root).
package struct LockRect: Equatable {
    package var x: Double
    package var y: Double
    package var width: Double
    package var height: Double

    package init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    package var maxX: Double { x + width }
    package var maxY: Double { y + height }
    package var midX: Double { x + width / 2 }
    package var midY: Double { y + height / 2 }

    package func contains(_ px: Double, _ py: Double) -> Bool {
        px >= x && px < maxX && py >= y && py < maxY
    }

    /// This rectangle shrunk by `inset` on every side (never below zero size).
    package func insetBy(_ inset: Double) -> LockRect {
        LockRect(x: x + inset, y: y + inset, width: max(0, width - 2 * inset), height: max(0, height - 2 * inset))
    }
}

/// Up to 16 bytes of typed text from one key press, held inline (never on the heap) so that
/// a typed secret leaves no copy behind; wiped by its user.
package struct TypedBytes {
    package var storage: (UInt64, UInt64) = (0, 0)
    package var count = 0

    package init() {}

    package subscript(index: Int) -> UInt8 {
        withUnsafeBytes(of: storage) { $0[index] }
    }

    package mutating func wipe() {
        withUnsafeMutableBytes(of: &storage) { Wipe.bytes($0) }
        count = 0
    }
}

/// What the locker reacts to, in window coordinates of the main window.
package enum LockEvent {
    case pointerDown(Double, Double)
    case pointerMove(Double, Double)
    case pointerUp(Double, Double)
    case enter
    case backspace
    case escape
    case text(TypedBytes)
    /// The screen must be drawn again (exposed, or its size changed).
    case redraw
    /// The screen configuration (or the drawing window's size) changed: layout again.
    case screensChanged
    /// The window manager asked the drawing window to close.
    case close
}

/// The X11 side of the locker: the connection, one override-redirect window per X screen, the
/// keyboard and pointer grabs, and the events, translated into `LockEvent`s.
///
/// The pointer is grabbed through XInput2 when the server has it (sub-pixel positions from
/// pens and tablets; touch screens arrive as emulated pointer events) and through the core
/// protocol otherwise. The window is raised again whenever something covers it, and resized
/// when RandR reports a new screen size.
package final class LockDisplay {
    package let display: OpaquePointer
    /// The window on the default screen, where everything is drawn.
    package let window: Window
    /// Black windows covering the other X screens (multi-head setups without Xinerama).
    private var others: [Window] = []
    package let screen: Int32
    package let root: Window
    package private(set) var width: Int
    package private(set) var height: Int
    private var inputMethod: XIM?
    private var inputContext: XIC?
    private var xinputOpcode: Int32 = -1
    private var pointerDevice: Int32 = -1
    private var randrEventBase: Int32 = -1
    private var pointerIsDown = false
    /// A titled window for drawing a gesture (`--draw`) rather than the covering lock window.
    package let windowed: Bool
    /// puff-lock's authentication child: a window inside the parent's covering window, no
    /// grabs of its own, its input read from `channel` (`LockChannel`) rather than from X.
    package let embedded: Bool
    /// The socket to the locking parent (embedded), or -1.
    package let channel: Int32
    /// Whether the parent said the screen is covered and grabbed (embedded).
    package private(set) var parentLocked = false
    /// `busy` was said and not yet ended by a `pong` (embedded).
    private var saidBusy = false
    /// More descriptors to wait on (the locking parent's child socket and signals):
    /// `nextEvent` returns nil as soon as one of them is readable.
    package var wakeDescriptors: [Int32] = []
    private var deleteAtom: Atom = 0
    /// The covering window holds the grabs (after `lock`); they are taken again when it is
    /// mapped again (another client unmapped it, which ends a grab).
    private var grabbed = false
    private var regrabPending = false

    /// Connects to `$DISPLAY` and creates the covering windows (not mapped yet), or, with a
    /// `title`, one ordinary window for drawing a gesture.
    package convenience init(title: String? = nil) throws(LockDisplayError) {
        try self.init(title: title, parent: nil, channel: -1)
    }

    /// The authentication child's display: a window covering the default screen inside the
    /// locking parent's window `parent` (a window of another client, named by its id), drawn
    /// on by this process; input comes from `channel`. The window is mapped when the parent
    /// says this process is the one that asks (`waitUntilLocked`).
    package convenience init(embeddedIn parent: Window, channel: Int32) throws(LockDisplayError) {
        try self.init(title: nil, parent: parent, channel: channel)
    }

    private init(title: String?, parent: Window?, channel: Int32) throws(LockDisplayError) {
        guard let display = XOpenDisplay(nil) else {
            let name = getenv("DISPLAY").flatMap { String(validatingCString: $0) } ?? "(DISPLAY is not set)"
            throw LockDisplayError(description: "cannot open the X display \(name)")
        }
        self.display = display
        screen = XDefaultScreen(display)
        root = XRootWindow(display, screen)
        windowed = title != nil
        embedded = parent != nil
        self.channel = channel
        if let parent {
            width = Int(XDisplayWidth(display, screen))
            height = Int(XDisplayHeight(display, screen))
            var attributes = XSetWindowAttributes()
            // No background: mapped over a hung child's window, it keeps showing that frame
            // until this process draws its own (rather than a flash of a plain colour).
            attributes.background_pixmap = UInt(None)
            attributes.cursor = XCreateFontCursor(display, UInt32(XC_crosshair))
            // An X error here (a window id that is not a window) ends the process through
            // Xlib's default handler: never exit 0.
            window = XCreateWindow(display, parent, 0, 0, UInt32(width), UInt32(height), 0,
                                   Int32(CopyFromParent), UInt32(InputOutput), nil,
                                   UInt(CWBackPixmap | CWCursor), &attributes)
            XSelectInput(display, window, ExposureMask | StructureNotifyMask)
            XSelectInput(display, root, StructureNotifyMask)
            // Mapped once the parent makes this process the one that asks (waitUntilLocked).
            XSync(display, 0)
        } else if let title {
            width = min(1100, Int(XDisplayWidth(display, screen)))
            height = min(820, Int(XDisplayHeight(display, screen)))
            window = XCreateSimpleWindow(display, root, 0, 0, UInt32(width), UInt32(height), 0,
                                         XBlackPixel(display, screen), XBlackPixel(display, screen))
            XStoreName(display, window, title)
            XDefineCursor(display, window, XCreateFontCursor(display, UInt32(XC_crosshair)))
            deleteAtom = XInternAtom(display, "WM_DELETE_WINDOW", 0)
            XSetWMProtocols(display, window, &deleteAtom, 1)
            XSelectInput(display, window, ExposureMask | KeyPressMask | StructureNotifyMask
                         | ButtonPressMask | ButtonReleaseMask | PointerMotionMask)
        } else {
            width = Int(XDisplayWidth(display, screen))
            height = Int(XDisplayHeight(display, screen))
            window = Self.coveringWindow(display, screen: screen)
            for other in 0..<XScreenCount(display) where other != screen {
                let covering = Self.coveringWindow(display, screen: other)
                XSelectInput(display, covering, StructureNotifyMask)
                others.append(covering)
            }
            XStoreName(display, window, "puff-lock")
            XSelectInput(display, window, ExposureMask | KeyPressMask | VisibilityChangeMask | StructureNotifyMask
                         | ButtonPressMask | ButtonReleaseMask | PointerMotionMask)
            // Other clients mapping or restacking windows: the lock window goes back on top.
            // And the root's own changes: RandR monitors set or removed (xrandr --setmonitor)
            // come as a ConfigureNotify of the root.
            XSelectInput(display, root, SubstructureNotifyMask | StructureNotifyMask)
        }
        var errorBase: Int32 = 0
        if XRRQueryExtension(display, &randrEventBase, &errorBase) != 0 {
            XRRSelectInput(display, root, Int32(RRScreenChangeNotifyMask))
        } else {
            randrEventBase = -1
        }
        var event: Int32 = 0, error: Int32 = 0
        if XQueryExtension(display, "XInputExtension", &xinputOpcode, &event, &error) != 0 {
            var major: Int32 = 2, minor: Int32 = 0
            if XIQueryVersion(display, &major, &minor) != Int32(Success) { xinputOpcode = -1 }
        } else {
            xinputOpcode = -1
        }
        // Text reaches the embedded child already translated by the parent.
        if embedded { return }
        // The built-in input method only (compose sequences): no input method server ever
        // sees what is typed on the lock screen.
        _ = setlocale(LC_CTYPE, "")
        _ = XSetLocaleModifiers("@im=none")
        inputMethod = XOpenIM(display, nil, nil, nil)
        if let inputMethod { inputContext = puff_create_input_context(inputMethod, window) }
    }

    deinit {
        if let inputContext { XDestroyIC(inputContext) }
        if let inputMethod { XCloseIM(inputMethod) }
        XCloseDisplay(display)
    }

    private static func coveringWindow(_ display: OpaquePointer, screen: Int32) -> Window {
        var attributes = XSetWindowAttributes()
        attributes.override_redirect = 1
        attributes.background_pixel = XBlackPixel(display, screen)
        attributes.cursor = XCreateFontCursor(display, UInt32(XC_crosshair))
        return XCreateWindow(display, XRootWindow(display, screen), 0, 0,
                             UInt32(XDisplayWidth(display, screen)), UInt32(XDisplayHeight(display, screen)), 0,
                             Int32(CopyFromParent), UInt32(InputOutput), nil,
                             UInt(CWOverrideRedirect | CWBackPixel | CWCursor), &attributes)
    }

    /// The visual of the main window, for cairo.
    package var visual: UnsafeMutablePointer<Visual> { XDefaultVisual(display, screen) }
    package var depth: Int32 { XDefaultDepth(display, screen) }

    /// Maps and raises the windows, then grabs the keyboard and the pointer, retrying for up
    /// to `timeout` seconds (a menu or another program may hold a grab for a moment, as when
    /// xss-lock starts the locker from a key binding). Throws, naming what could not be
    /// grabbed, when a grab is still refused at the end.
    package func lock(timeout: Double) throws(LockDisplayError) {
        for other in others { XMapRaised(display, other) }
        XMapRaised(display, window)
        XSync(display, 0)
        let deadline = monotonicSeconds() + timeout
        var keyboard = Int32(GrabNotViewable), pointer = Int32(GrabNotViewable)
        while true {
            if keyboard != Int32(GrabSuccess) {
                keyboard = XGrabKeyboard(display, window, 0, GrabModeAsync, GrabModeAsync, UInt(CurrentTime))
            }
            if pointer != Int32(GrabSuccess) { pointer = grabPointer() }
            if keyboard == Int32(GrabSuccess) && pointer == Int32(GrabSuccess) { break }
            if monotonicSeconds() >= deadline {
                let what = keyboard != Int32(GrabSuccess)
                    ? (pointer != Int32(GrabSuccess) ? "the keyboard and the pointer" : "the keyboard")
                    : "the pointer"
                let why = [keyboard, pointer].contains(Int32(AlreadyGrabbed))
                    ? "another program holds a grab" : "the server refused (code \(max(keyboard, pointer)))"
                XUngrabKeyboard(display, UInt(CurrentTime))
                XUngrabPointer(display, UInt(CurrentTime))
                XSync(display, 0)
                throw LockDisplayError(description: "cannot grab \(what): \(why); not locking")
            }
            XRaiseWindow(display, window)
            XSync(display, 0)
            usleep(50_000)
        }
        XSetInputFocus(display, window, RevertToParent, UInt(CurrentTime))
        XSync(display, 0)
        grabbed = true
    }

    /// Takes the grabs again (the window was unmapped and mapped again); tried again with
    /// every event and at least every 50 ms until both hold.
    private func regrab() {
        let keyboard = XGrabKeyboard(display, window, 0, GrabModeAsync, GrabModeAsync, UInt(CurrentTime))
        let pointer = grabPointer()
        XSetInputFocus(display, window, RevertToParent, UInt(CurrentTime))
        regrabPending = keyboard != Int32(GrabSuccess) || pointer != Int32(GrabSuccess)
        if regrabPending { XRaiseWindow(display, window) }
    }

    /// Shows the drawing window (`--draw`): no grabs, the window manager decides the rest.
    package func show() {
        XMapRaised(display, window)
        XSetInputFocus(display, window, RevertToParent, UInt(CurrentTime))
        XSync(display, 0)
    }

    /// `Xft.dpi` from the X resources (xrdb), when set: desktops put their HiDPI scale there.
    package func resourceDPI() -> Double? {
        guard let resources = XResourceManagerString(display), let text = String(validatingCString: resources) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Xft.dpi:") {
            return Double(line.dropFirst("Xft.dpi:".count).trimmingSpaces())
        }
        return nil
    }

    /// Paints the covering windows in `pixel` (a TrueColor value): what shows where nothing
    /// is drawn, and while the authentication process is being replaced.
    package func setBackground(_ pixel: UInt) {
        for covering in [window] + others {
            XSetWindowBackground(display, covering, pixel)
            XClearWindow(display, covering)
        }
    }

    /// A copy of the default screen as it is now (before it is covered), in a pixmap of this
    /// connection that other clients may read by its id (`--translucent`).
    package func captureScreen() -> Pixmap {
        let pixmap = XCreatePixmap(display, root, UInt32(max(1, width)), UInt32(max(1, height)), UInt32(depth))
        var values = XGCValues()
        values.subwindow_mode = IncludeInferiors
        let context = XCreateGC(display, root, UInt(GCSubwindowMode), &values)
        XCopyArea(display, root, pixmap, context, 0, 0, UInt32(max(1, width)), UInt32(max(1, height)), 0, 0)
        XFreeGC(display, context)
        XSync(display, 0)
        return pixmap
    }

    /// Whether pointer events come through XInput2.
    package var usesXInput2: Bool { pointerDevice >= 0 }

    /// Called with the key symbol of a key that types nothing (arrows, Tab, function keys);
    /// true when it was used (puff-greeter's user list). nil: such keys are ignored.
    package var otherKey: ((KeySym) -> Bool)?

    private func grabPointer() -> Int32 {
        let cursor = XCreateFontCursor(display, UInt32(XC_crosshair))
        if xinputOpcode >= 0 {
            var device: Int32 = 0
            if XIGetClientPointer(display, UInt(None), &device) != 0 {
                var bits = [UInt8](repeating: 0, count: 4)
                for type in [XI_ButtonPress, XI_ButtonRelease, XI_Motion] { puff_xi_set_mask(&bits, type) }
                let status = bits.withUnsafeMutableBufferPointer { buffer in
                    var mask = XIEventMask(deviceid: device, mask_len: Int32(buffer.count), mask: buffer.baseAddress)
                    return XIGrabDevice(display, device, window, UInt(CurrentTime), cursor,
                                        GrabModeAsync, GrabModeAsync, 0, &mask)
                }
                if status == Int32(GrabSuccess) { pointerDevice = device }
                return status
            }
        }
        return XGrabPointer(display, window, 0, UInt32(ButtonPressMask | ButtonReleaseMask | PointerMotionMask),
                            GrabModeAsync, GrabModeAsync, UInt(None), cursor, UInt(CurrentTime))
    }

    /// The primary monitor (RandR), in window coordinates; the whole screen without RandR
    /// monitors.
    package func primaryMonitor() -> LockRect {
        let whole = LockRect(x: 0, y: 0, width: Double(width), height: Double(height))
        guard randrEventBase >= 0, !windowed else { return whole }
        var count: Int32 = 0
        guard let monitors = XRRGetMonitors(display, root, 1, &count), count > 0 else { return whole }
        defer { XRRFreeMonitors(monitors) }
        var chosen = monitors[0]
        for index in 0..<Int(count) where monitors[index].primary != 0 { chosen = monitors[index] }
        let rect = LockRect(x: Double(chosen.x), y: Double(chosen.y), width: Double(chosen.width), height: Double(chosen.height))
        // A monitor outside the screen (a stale configuration) would hide the picture.
        guard rect.width > 0, rect.height > 0, rect.x >= 0, rect.y >= 0,
              rect.maxX <= whole.maxX, rect.maxY <= whole.maxY else { return whole }
        return rect
    }

    /// The next event, waiting at most `timeout` seconds (nil: forever); nil on timeout.
    /// Events are handed over one at a time, never queued in an array, so typed text is
    /// only ever in one stack value.
    /// An event `hasQueuedEvents` read ahead, returned by the next `nextEvent`.
    private var lookahead: LockEvent?

    package func nextEvent(timeout: Double?) -> LockEvent? {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        idle()
        if let event = lookahead {
            lookahead = nil
            return event
        }
        while true {
            if regrabPending { regrab() }
            while XPending(display) > 0 {
                var event = XEvent()
                XNextEvent(display, &event)
                if let translated = translate(&event) { return translated }
            }
            XFlush(display)
            if channel >= 0, let forwarded = readChannel() { return forwarded }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return nil }
                milliseconds = Int32(clamping: Int((left * 1000).rounded(.up)))
            }
            if regrabPending && (milliseconds < 0 || milliseconds > 50) { milliseconds = 50 }
            var pollers = [pollfd(fd: XConnectionNumber(display), events: Int16(POLLIN), revents: 0)]
            if channel >= 0 { pollers.append(pollfd(fd: channel, events: Int16(POLLIN), revents: 0)) }
            for fd in wakeDescriptors { pollers.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&pollers, nfds_t(pollers.count), milliseconds)
            if pollers.dropFirst(channel >= 0 ? 2 : 1).contains(where: { $0.revents != 0 }) { return nil }
            // XPending reads the socket (and exits through the I/O error handler when the
            // server is gone).
        }
    }

    /// The next input event the parent forwarded, answering its pings and noting its
    /// `locked`; nil when none is waiting. The process ends (never with status 0) when the
    /// parent is gone: nothing may be answered for a screen nobody covers.
    private func readChannel() -> LockEvent? {
        while true {
            switch LockChannel.receive(channel) {
            case .nothing:
                return nil
            case .closed:
                Report.warn("the locking process is gone; stopping")
                _exit(70)
            case .record(var record):
                defer { record.wipe() }
                switch record.kind {
                case .ping?:
                    saidBusy = false
                    LockChannel.send(channel, .pong)
                case .locked?:
                    parentLocked = true
                    // Handed back at once, so that waitUntilLocked need not wait for an event.
                    return .redraw
                default:
                    if let event = LockChannel.event(record) { return event }
                }
            }
        }
    }

    /// Embedded: tells the parent that this process leaves its event loop for PAM or for a
    /// new layout (so it may not answer pings for a while).
    package func busy(_ reason: LockChannel.BusyReason = .pam) {
        guard channel >= 0 else { return }
        saidBusy = LockChannel.sendBusy(channel, reason)
    }

    /// Embedded: tells the parent, after `busy`, that this process is back in its event loop
    /// (a `pong` nobody asked for), so the short limit on its silence applies again at once,
    /// not only after the next ping.
    package func idle() {
        guard channel >= 0, saidBusy else { return }
        saidBusy = false
        LockChannel.send(channel, .pong)
    }

    /// Embedded: waits (answering pings) until the parent has covered and grabbed the screen
    /// and made this process the one that asks, then shows the window. A standby child waits
    /// here, its window unmapped, until the active one is gone.
    package func waitUntilLocked() {
        while channel >= 0 && !parentLocked {
            if case .text(var typed)? = nextEvent(timeout: 1) { typed.wipe() }
        }
        guard embedded else { return }
        // Above the window of a child that hung (it stays until it dies); with no background
        // of its own, the window shows what was there until this process draws.
        XMapRaised(display, window)
        XFlush(display)
    }

    /// Whether more events are already queued (so a redraw can wait for them).
    /// Whether `nextEvent` has an event to return at once. Queued X events the display drops
    /// (the core twin of every XInput2 motion, key releases) do not count: a loop that skipped
    /// its frame for them would sleep on them with the frame undrawn. The first event that
    /// counts is kept for `nextEvent`.
    package var hasQueuedEvents: Bool {
        if lookahead != nil { return true }
        while XPending(display) > 0 {
            var event = XEvent()
            XNextEvent(display, &event)
            if let translated = translate(&event) {
                lookahead = translated
                return true
            }
        }
        if channel >= 0, let forwarded = readChannel() {
            lookahead = forwarded
            return true
        }
        return false
    }

    private func translate(_ event: inout XEvent) -> LockEvent? {
        // The covering window takes keys and clicks only from the devices it grabbed, never
        // from another client's XSendEvent; the embedded child takes them only from its parent.
        // Dropped before XFilterEvent: a synthetic dead key would otherwise start a compose
        // sequence that changes or swallows the user's next real key.
        let input = [KeyPress, KeyRelease, ButtonPress, ButtonRelease, MotionNotify, GenericEvent].contains(event.type)
        if input && (embedded || (!windowed && event.xany.send_event != 0)) { return nil }
        if XFilterEvent(&event, UInt(None)) != 0 { return nil }
        switch event.type {
        case KeyPress:
            return key(&event.xkey)
        case ButtonPress where !usesXInput2 && event.xbutton.button == UInt32(Button1):
            pointerIsDown = true
            return .pointerDown(Double(event.xbutton.x), Double(event.xbutton.y))
        case ButtonRelease where !usesXInput2 && event.xbutton.button == UInt32(Button1):
            pointerIsDown = false
            return .pointerUp(Double(event.xbutton.x), Double(event.xbutton.y))
        case MotionNotify where !usesXInput2 && pointerIsDown:
            return .pointerMove(Double(event.xmotion.x), Double(event.xmotion.y))
        case GenericEvent where event.xcookie.extension == xinputOpcode:
            return xinput(&event.xcookie)
        case Expose where event.xexpose.count == 0 && event.xexpose.window == window:
            return .redraw
        case ConfigureNotify where windowed && event.xconfigure.window == window:
            let size = (Int(event.xconfigure.width), Int(event.xconfigure.height))
            guard size != (width, height), size.0 > 0, size.1 > 0 else { return nil }
            (width, height) = size
            return .screensChanged
        case ClientMessage where windowed && event.xclient.data.l.0 == Int(deleteAtom):
            return .close
        case UnmapNotify where !windowed && (event.xunmap.window == window || others.contains(event.xunmap.window)):
            // Any client may unmap an override-redirect window by its id: it is mapped again.
            XMapRaised(display, event.xunmap.window)
            return .redraw
        case VisibilityNotify where !windowed && event.xvisibility.state != VisibilityUnobscured:
            // Something covers the lock window (xsecurelock does the same).
            XRaiseWindow(display, event.xvisibility.window)
        case ConfigureNotify where !windowed && event.xconfigure.window == root:
            // Monitors changed (the screen's size comes with RandR's own event).
            return .screensChanged
        case MapNotify where grabbed && event.xmap.window == window:
            // Mapped again after another client unmapped it: unmapping ended the grabs.
            regrab()
            return .redraw
        case DestroyNotify where !windowed && event.xdestroywindow.window == window:
            // Any client may destroy any window: without its window this process locks nothing.
            Report.warn(embedded ? "another client destroyed the window; stopping"
                                 : "another client destroyed the covering window: the screen is no longer locked")
            _exit(embedded ? 70 : 1)
        case MapNotify where !windowed, ConfigureNotify where !windowed:
            let moved = event.type == MapNotify ? event.xmap.window : event.xconfigure.window
            if moved != window && !others.contains(moved) {
                XRaiseWindow(display, window)
                for other in others { XRaiseWindow(display, other) }
            }
        default:
            if !windowed && randrEventBase >= 0 && event.type == randrEventBase + Int32(RRScreenChangeNotify) {
                XRRUpdateConfiguration(&event)
                resize()
                return .screensChanged
            }
        }
        return nil
    }

    private func resize() {
        let newWidth = Int(XDisplayWidth(display, screen)), newHeight = Int(XDisplayHeight(display, screen))
        width = newWidth
        height = newHeight
        XMoveResizeWindow(display, window, 0, 0, UInt32(max(1, newWidth)), UInt32(max(1, newHeight)))
        XRaiseWindow(display, window)
    }

    private func xinput(_ cookie: inout XGenericEventCookie) -> LockEvent? {
        guard XGetEventData(display, &cookie) != 0 else { return nil }
        defer { XFreeEventData(display, &cookie) }
        guard let data = cookie.data else { return nil }
        let device = data.assumingMemoryBound(to: XIDeviceEvent.self).pointee
        switch cookie.evtype {
        case XI_ButtonPress where device.detail == 1:
            pointerIsDown = true
            return .pointerDown(device.event_x, device.event_y)
        case XI_ButtonRelease where device.detail == 1:
            pointerIsDown = false
            return .pointerUp(device.event_x, device.event_y)
        case XI_Motion where pointerIsDown:
            return .pointerMove(device.event_x, device.event_y)
        default:
            return nil
        }
    }

    private func key(_ event: inout XKeyEvent) -> LockEvent? {
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        defer { withUnsafeMutableBytes(of: &buffer) { Wipe.bytes($0) } }
        var symbol: KeySym = 0
        let length: Int = withUnsafeMutableBytes(of: &buffer) { raw in
            let characters = raw.baseAddress?.assumingMemoryBound(to: CChar.self)
            if let inputContext {
                var status: Int32 = 0
                let got = Xutf8LookupString(inputContext, &event, characters, Int32(raw.count - 1), &symbol, &status)
                return status == XBufferOverflow ? 0 : Int(got)
            }
            return Int(XLookupString(&event, characters, Int32(raw.count - 1), &symbol, nil))
        }
        switch Int32(truncatingIfNeeded: symbol) {
        case XK_Return, XK_KP_Enter: return .enter
        case XK_BackSpace, XK_Delete: return .backspace
        case XK_Escape: return .escape
        default:
            // Keys that are not text (arrows, Tab, function keys) go to `otherKey` when set:
            // the event is then a redraw, so the caller's loop looks at what it kept.
            if let otherKey, length == 0 || (length == 1 && buffer.0 & 0xFF < 0x20), otherKey(symbol) { return .redraw }
            guard length > 0, length <= 16 else { return nil }
            var typed = TypedBytes()
            withUnsafeBytes(of: buffer) { source in
                withUnsafeMutableBytes(of: &typed.storage) { target in
                    for index in 0..<length { target[index] = source[index] }
                }
            }
            typed.count = length
            // Control characters (Tab, Ctrl-letters) are not text.
            if length == 1 && (typed[0] < 0x20 || typed[0] == 0x7F) {
                typed.wipe()
                return nil
            }
            return .text(typed)
        }
    }

    /// Closes `XSS_SLEEP_LOCK_FD` (xss-lock --transfer-sleep-lock): the screen is locked, so
    /// the system may go to sleep now.
    package func releaseSleepLock() {
        guard let value = getenv("XSS_SLEEP_LOCK_FD").flatMap({ String(validatingCString: $0) }),
              let fd = Int32(value), fd > 2 else { return }
        close(fd)
    }
}

package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
