import CLockWayland
import CLockX
import Glibc
import PuffClient
import PuffPlatform

/// What the lock screen (`LockSession`) needs from where it is shown: the X11 window
/// (`LockDisplay`) or, on Wayland, frames handed to the locking parent (`LockFrames`).
package protocol LockScreenDisplay: AnyObject {
    /// The area the picture and the keypad go in, in drawing coordinates.
    func primaryMonitor() -> LockRect
    /// The desktop's DPI setting, when there is one (X11's `Xft.dpi`).
    func resourceDPI() -> Double?
    /// The next event, waiting at most `timeout` seconds (nil: forever); nil on timeout.
    func nextEvent(timeout: Double?) -> LockEvent?
    /// Back in the event loop (after `busy`): tells the locking parent.
    func idle()
    /// Leaving the event loop for PAM or a new layout: tells the locking parent.
    func busy(_ reason: LockChannel.BusyReason)
    /// Whether more events wait already (a redraw can wait for them).
    var hasQueuedEvents: Bool { get }
    /// Makes sure what was drawn has reached the screen.
    func sync()
    /// Waits until the parent made this process the one that asks.
    func waitUntilLocked()
    /// A renderer drawing here.
    func makeRenderer() -> LockRenderer
}

extension LockScreenDisplay {
    package func busy() { busy(.pam) }
}

extension LockDisplay: LockScreenDisplay {
    package func sync() { XSync(display, 0) }
    package func makeRenderer() -> LockRenderer { LockRenderer(display: self) }
}

/// Where a Wayland renderer draws: two frames at the screen's size, shown one after the other
/// (puff-lock's child hands them to its parent; puff-greeter's window to the compositor).
package protocol FrameTarget: AnyObject {
    var width: Int { get }
    var height: Int { get }
    /// The frame to draw the next picture into; nil before the size is known.
    func canvas() -> OpaquePointer?
    /// The frame from `canvas()` is drawn: show it.
    func present()
}

/// Two XRGB8888 frames in one sealed memfd (`puff_frame_file`), each a cairo image surface.
package final class FramePair {
    private var mapping: UnsafeMutableRawPointer?
    private var mappedSize = 0
    private var surfaces: [OpaquePointer] = []
    package private(set) var size = (width: 0, height: 0)
    package private(set) var stride = 0
    /// The frame drawn into next (0 or 1).
    package private(set) var next = 0

    package init() {}

    deinit { release() }

    package func release() {
        for surface in surfaces { cairo_surface_destroy(surface) }
        surfaces = []
        if let mapping { munmap(mapping, mappedSize) }
        mapping = nil
        mappedSize = 0
        size = (0, 0)
    }

    /// Whether the pair is made for this size.
    package func fits(_ width: Int, _ height: Int) -> Bool { surfaces.count == 2 && size == (width, height) }

    /// Makes a new pair of `width` × `height`; returns its file (the caller passes it on and
    /// closes it), or -1 when no memory could be had.
    package func make(width: Int, height: Int) -> Int32 {
        release()
        let stride = Int(cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, Int32(clamping: width)))
        let (frame, overflow) = stride.multipliedReportingOverflow(by: height)
        guard width > 0, height > 0, stride > 0, !overflow, frame <= Int(Int32.max) / 2 else { return -1 }
        let file = puff_frame_file(2 * frame)
        guard file >= 0 else { return -1 }
        guard let memory = mmap(nil, 2 * frame, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0), memory != MAP_FAILED else {
            close(file)
            return -1
        }
        mapping = memory
        mappedSize = 2 * frame
        for index in 0..<2 {
            let data = memory.advanced(by: index * frame).assumingMemoryBound(to: UInt8.self)
            guard let surface = cairo_image_surface_create_for_data(data, CAIRO_FORMAT_RGB24, Int32(width), Int32(height), Int32(stride)) else {
                release()
                close(file)
                return -1
            }
            surfaces.append(surface)
        }
        size = (width, height)
        self.stride = stride
        next = 0
        return file
    }

    /// The surface of the frame drawn into next.
    package var current: OpaquePointer? { surfaces.count == 2 ? surfaces[next] : nil }

    /// The current frame is shown: the next drawing goes into the other one.
    package func flip() { next = 1 - next }
}

/// puff-lock's authentication child on Wayland. Only the process that asked for the lock can
/// give the compositor a lock surface, so this one draws into two frames in a sealed memfd it
/// passes to the locking parent (`frames`), says which one is ready (`frame`), and the parent
/// shows it on the lock screen's output. Input and the output's size come from the parent over
/// the same channel as on X11 (`LockChannel`); this process has no Wayland connection.
package final class LockFrames: LockScreenDisplay, FrameTarget {
    /// The socket to the locking parent (descriptor 3).
    package let channel: Int32
    /// The lock screen's size, from the parent's `configure` (0 until it comes).
    package private(set) var width = 0
    package private(set) var height = 0
    private var parentLocked = false
    private var saidBusy = false
    private let frames = FramePair()

    package init(channel: Int32) {
        self.channel = channel
    }

    package func primaryMonitor() -> LockRect {
        LockRect(x: 0, y: 0, width: Double(width), height: Double(height))
    }

    package func resourceDPI() -> Double? { nil }

    package func makeRenderer() -> LockRenderer { LockRenderer(frames: self) }

    package func sync() {}

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
            if let event = readChannel() { return event }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return nil }
                milliseconds = Int32(clamping: Int((left * 1000).rounded(.up)))
            }
            var poller = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, milliseconds)
        }
    }

    /// The next input event the parent forwarded, answering pings and noting `locked` and
    /// `configure`; nil when none waits. Ends the process (status 70) when the parent is gone.
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
                    return .redraw
                case .configure?:
                    let (newWidth, newHeight, _) = record.sizes
                    guard newWidth > 0, newWidth <= 16384, newHeight > 0, newHeight <= 16384,
                          (Int(newWidth), Int(newHeight)) != (width, height) else { continue }
                    width = Int(newWidth)
                    height = Int(newHeight)
                    return .screensChanged
                default:
                    if let event = LockChannel.event(record) { return event }
                }
            }
        }
    }

    package func busy(_ reason: LockChannel.BusyReason) {
        saidBusy = LockChannel.sendBusy(channel, reason)
    }

    package func idle() {
        guard saidBusy else { return }
        saidBusy = false
        LockChannel.send(channel, .pong)
    }

    package func waitUntilLocked() {
        while !parentLocked || width == 0 {
            if case .text(var typed)? = nextEvent(timeout: 1) { typed.wipe() }
        }
    }

    /// Whether `nextEvent` has an event to return at once; records it answers itself (pings)
    /// do not count. The event read is kept for `nextEvent`.
    package var hasQueuedEvents: Bool {
        if lookahead == nil { lookahead = readChannel() }
        return lookahead != nil
    }

    /// The frame to draw the next picture into (a cairo image surface at the lock screen's
    /// size); a new pair is made and passed to the parent when the size changed. nil before
    /// the size is known or when no memory could be had.
    package func canvas() -> OpaquePointer? {
        guard width > 0, height > 0 else { return nil }
        if !frames.fits(width, height) {
            let file = frames.make(width: width, height: height)
            guard file >= 0 else { return nil }
            defer { close(file) }
            var record = LockChannel.Record(kind: .frames, sizes: (UInt32(width), UInt32(height), UInt32(frames.stride)))
            guard LockChannel.send(channel, &record, descriptor: file) else {
                frames.release()
                return nil
            }
        }
        return frames.current
    }

    /// The frame from `canvas()` is drawn: the parent shows it; the next one is drawn into
    /// the other frame.
    package func present() {
        guard frames.current != nil else { return }
        var record = LockChannel.Record(kind: .frame)
        withUnsafeMutableBytes(of: &record.bytes) { $0[1] = UInt8(frames.next) }
        LockChannel.send(channel, &record)
        frames.flip()
    }
}
