import CLockWayland
import Glibc
import PuffClient
import PuffPlatform

/// A connection to the Wayland compositor through CLockWayland, in lock mode (puff-lock's
/// session lock, `WaylandCover`) or window mode (puff-greeter's window, `WaylandWindow`): the
/// waiting, the reading and the translation of its input into `LockEvent`s, shared by both.
package final class WaylandConnection {
    package let handle: OpaquePointer

    /// Lock mode: throws, saying why, when there is no compositor or it cannot lock a session.
    package convenience init(lockingWith background: UInt) throws(LockDisplayError) {
        try self.init { error in puff_wl_connect(UInt32(truncatingIfNeeded: background), error, 256) }
    }

    /// Window mode: one fullscreen toplevel titled `title`; throws, saying why, when there is
    /// no compositor or it has no xdg-shell.
    package convenience init(windowTitled title: String, background: UInt) throws(LockDisplayError) {
        try self.init { error in puff_wl_connect_window(UInt32(truncatingIfNeeded: background), title, error, 256) }
    }

    private init(_ connect: (UnsafeMutablePointer<CChar>) -> OpaquePointer?) throws(LockDisplayError) {
        var error = [CChar](repeating: 0, count: 256)
        guard let handle = error.withUnsafeMutableBufferPointer({ buffer in buffer.baseAddress.flatMap(connect) }) else {
            throw LockDisplayError(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.handle = handle
    }

    deinit { puff_wl_disconnect(handle) }

    /// The size of the lock screen's output or of the window (0 × 0 before it is configured).
    package var size: (width: Int, height: Int) {
        var width: Int32 = 0, height: Int32 = 0
        puff_wl_primary_size(handle, &width, &height)
        return (Int(width), Int(height))
    }

    /// Reads and dispatches what the compositor sent, waiting up to `milliseconds` (-1:
    /// without limit) and for `wake`; false when the connection is lost.
    package func pump(milliseconds: Int32, wake: [Int32] = []) -> Bool {
        guard puff_wl_pump(handle, 0) == 0 else { return false }
        var pollers = [pollfd(fd: puff_wl_fd(handle), events: Int16(POLLIN), revents: 0)]
        for fd in wake { pollers.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        // A held key is repeated by this process's clock (puff_wl_pump).
        let repeatIn = puff_wl_repeat_wait(handle)
        let wait = repeatIn >= 0 && (milliseconds < 0 || repeatIn < milliseconds) ? repeatIn : milliseconds
        _ = poll(&pollers, nfds_t(pollers.count), wait)
        return puff_wl_pump(handle, pollers[0].revents != 0 ? 1 : 0) == 0
    }

    /// The next input event, waiting at most `timeout` seconds (nil: forever); nil on timeout
    /// or as soon as one of `wake` is readable. `otherKey` sees keys that type nothing (a
    /// redraw follows when it used one); `check` runs before each wait. A lost connection ends
    /// the process (status 1): without a compositor nothing is shown or locked.
    package func nextEvent(timeout: Double?, wake: [Int32], otherKey: ((UInt) -> Bool)? = nil,
                           check: () -> Void = {}) -> LockEvent? {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        while true {
            if let event = lookahead {
                lookahead = nil
                return event
            }
            var raw = puff_wl_event()
            while puff_wl_next_event(handle, &raw) != 0 {
                defer { withUnsafeMutableBytes(of: &raw) { Wipe.bytes($0) } }
                if let event = Self.translate(&raw, otherKey: otherKey) { return event }
            }
            check()
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return nil }
                milliseconds = Int32(clamping: Int((left * 1000).rounded(.up)))
            }
            guard pump(milliseconds: milliseconds, wake: wake) else {
                Report.warn("the Wayland compositor closed the connection; stopping")
                exit(1)
            }
            var pollers = wake.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if !pollers.isEmpty, poll(&pollers, nfds_t(pollers.count), 0) > 0, !hasQueuedEvents(otherKey: otherKey) { return nil }
        }
    }

    /// Whether `nextEvent` has an event to return at once: raw events it drops (a key that
    /// types nothing and that `otherKey` does not use) do not count. The event read is kept for
    /// `nextEvent`.
    package func hasQueuedEvents(otherKey: ((UInt) -> Bool)? = nil) -> Bool {
        if lookahead != nil { return true }
        _ = puff_wl_pump(handle, 0)
        var raw = puff_wl_event()
        while puff_wl_next_event(handle, &raw) != 0 {
            defer { withUnsafeMutableBytes(of: &raw) { Wipe.bytes($0) } }
            if let event = Self.translate(&raw, otherKey: otherKey) {
                lookahead = event
                return true
            }
        }
        return false
    }

    /// An event `hasQueuedEvents` read ahead, returned by the next `nextEvent`.
    private var lookahead: LockEvent?

    private static func translate(_ raw: inout puff_wl_event, otherKey: ((UInt) -> Bool)?) -> LockEvent? {
        switch raw.kind {
        case Int32(PUFF_WL_DOWN.rawValue): return .pointerDown(raw.x, raw.y)
        case Int32(PUFF_WL_MOVE.rawValue): return .pointerMove(raw.x, raw.y)
        case Int32(PUFF_WL_UP.rawValue): return .pointerUp(raw.x, raw.y)
        case Int32(PUFF_WL_ENTER.rawValue): return .enter
        case Int32(PUFF_WL_BACKSPACE.rawValue): return .backspace
        case Int32(PUFF_WL_ESCAPE.rawValue): return .escape
        case Int32(PUFF_WL_RESIZED.rawValue): return .screensChanged
        case Int32(PUFF_WL_CLOSE.rawValue): return .close
        case Int32(PUFF_WL_KEY.rawValue):
            // X11 and xkbcommon share the key symbols' values.
            return otherKey?(UInt(raw.symbol)) == true ? .redraw : nil
        case Int32(PUFF_WL_TEXT.rawValue):
            guard raw.count > 0, raw.count <= 16 else { return nil }
            var typed = TypedBytes()
            withUnsafeBytes(of: raw.text) { source in
                withUnsafeMutableBytes(of: &typed.storage) { target in
                    for index in 0..<Int(raw.count) { target[index] = source[index] }
                }
            }
            typed.count = Int(raw.count)
            return .text(typed)
        default: return nil
        }
    }
}

/// puff-greeter's screen under a Wayland compositor (cage): one fullscreen xdg-shell window,
/// drawn into two frames of a sealed memfd that the compositor shows in turn, as puff-lock's
/// Wayland child draws for its parent.
package final class WaylandWindow: LockScreenDisplay, FrameTarget {
    package let connection: WaylandConnection
    private let frames = FramePair()
    /// Keys that type nothing (the user list's arrows), as on X11 (`LockDisplay.otherKey`).
    package var otherKey: ((UInt) -> Bool)?

    /// Connects and asks for the window; throws, saying why, when that is not possible.
    package init(title: String, background: UInt) throws(LockDisplayError) {
        connection = try WaylandConnection(windowTitled: title, background: background)
    }

    package var width: Int { connection.size.width }
    package var height: Int { connection.size.height }

    /// Waits (up to 10 s) for the compositor to give the window its size; throws when it
    /// does not.
    package func show() throws(LockDisplayError) {
        let deadline = monotonicSeconds() + 10
        while width == 0 {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw LockDisplayError(description: "the Wayland compositor did not show the window in 10 s") }
            guard connection.pump(milliseconds: Int32(left * 1000) + 1) else {
                throw LockDisplayError(description: "the Wayland compositor closed the connection")
            }
        }
    }

    package func primaryMonitor() -> LockRect {
        let (width, height) = connection.size
        return LockRect(x: 0, y: 0, width: Double(width), height: Double(height))
    }

    package func resourceDPI() -> Double? { nil }

    package func nextEvent(timeout: Double?) -> LockEvent? {
        connection.nextEvent(timeout: timeout, wake: [], otherKey: otherKey)
    }

    package func idle() {}
    package func busy(_ reason: LockChannel.BusyReason) {}
    package var hasQueuedEvents: Bool { connection.hasQueuedEvents(otherKey: otherKey) }
    package func sync() { _ = puff_wl_pump(connection.handle, 0) }
    package func waitUntilLocked() {}
    package func makeRenderer() -> LockRenderer { LockRenderer(frames: self) }

    package func canvas() -> OpaquePointer? {
        let (width, height) = connection.size
        guard width > 0, height > 0 else { return nil }
        if !frames.fits(width, height) {
            let file = frames.make(width: width, height: height)
            guard file >= 0 else { return nil }
            // Checked there and always closed.
            guard puff_wl_set_frames(connection.handle, file, Int32(width), Int32(height), Int32(frames.stride)) == 0 else {
                frames.release()
                return nil
            }
        }
        return frames.current
    }

    package func present() {
        guard frames.current != nil else { return }
        _ = puff_wl_show_frame(connection.handle, Int32(frames.next))
        _ = puff_wl_pump(connection.handle, 0)
        frames.flip()
    }
}
