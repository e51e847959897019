import CLockWayland
import Glibc
import PuffClient
import PuffPlatform
import PuffScreen

/// The locking parent on Wayland: a session lock (ext-session-lock-v1) with one lock surface
/// per output, the seat's pointer, touch and keyboard translated into `LockEvent`s for the
/// active child, and the child's frames shown on the lock screen's output (every other output,
/// and that one until a child has drawn, shows the theme's background colour). The compositor
/// keeps every output covered until `unlock()`, also when this process dies.
final class WaylandCover: LockCover {
    private let connection: OpaquePointer
    var wakeDescriptors: [Int32] = []
    let childEmbedding = ["--frames"]

    /// Connects; throws, saying why, when there is no compositor or it cannot lock a session.
    init(background: UInt) throws(LockDisplayError) {
        var error = [CChar](repeating: 0, count: 256)
        guard let connection = puff_wl_connect(UInt32(truncatingIfNeeded: background), &error, error.count) else {
            throw LockDisplayError(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.connection = connection
    }

    deinit { puff_wl_disconnect(connection) }

    /// Asks for the lock and waits up to `timeout` seconds for the compositor to say every
    /// output is covered (`locked`). Throws when it refuses (another locker holds the lock)
    /// or does not answer.
    func lock(timeout: Double) throws(LockDisplayError) {
        guard puff_wl_lock(connection) == 0 else { throw LockDisplayError(description: "cannot ask the compositor for the lock") }
        let deadline = monotonicSeconds() + timeout
        while puff_wl_state(connection) == Int32(PUFF_WL_LOCKING.rawValue) {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw LockDisplayError(description: "the compositor did not lock the session in \(timeout) s") }
            guard pump(milliseconds: Int32(left * 1000) + 1) else {
                throw LockDisplayError(description: "the Wayland compositor closed the connection")
            }
        }
        guard puff_wl_state(connection) == Int32(PUFF_WL_LOCKED.rawValue) else {
            throw LockDisplayError(description: "the compositor refused the lock (another locker holds it?)")
        }
    }

    /// How many outputs have a lock surface.
    var surfaceCount: Int { Int(puff_wl_surface_count(connection)) }

    /// Ends the lock: the compositor shows the session again.
    func unlock() { puff_wl_unlock(connection) }

    /// Reads and dispatches what the compositor sent, waiting up to `milliseconds` (and for
    /// `wakeDescriptors`); false when the connection is lost.
    private func pump(milliseconds: Int32) -> Bool {
        guard puff_wl_pump(connection, 0) == 0 else { return false }
        var pollers = [pollfd(fd: puff_wl_fd(connection), events: Int16(POLLIN), revents: 0)]
        for fd in wakeDescriptors { pollers.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&pollers, nfds_t(pollers.count), milliseconds)
        return puff_wl_pump(connection, pollers[0].revents != 0 ? 1 : 0) == 0
    }

    func nextEvent(timeout: Double?) -> LockEvent? {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        while true {
            var raw = puff_wl_event()
            if puff_wl_next_event(connection, &raw) != 0 {
                defer { withUnsafeMutableBytes(of: &raw) { Wipe.bytes($0) } }
                if let event = Self.translate(&raw) { return event }
                continue
            }
            if puff_wl_state(connection) == Int32(PUFF_WL_FINISHED.rawValue) {
                // The compositor ended the lock itself (it is no longer this process's).
                Report.warn("the compositor ended the session lock; stopping")
                exit(1)
            }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return nil }
                milliseconds = Int32(clamping: Int((left * 1000).rounded(.up)))
            }
            guard pump(milliseconds: milliseconds) else {
                // Without a compositor there is no session to unlock.
                Report.warn("the Wayland compositor closed the connection; stopping")
                exit(1)
            }
            if puff_wl_next_event(connection, &raw) == 0 {
                var pollers = wakeDescriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                if !pollers.isEmpty, poll(&pollers, nfds_t(pollers.count), 0) > 0 { return nil }
            } else {
                defer { withUnsafeMutableBytes(of: &raw) { Wipe.bytes($0) } }
                if let event = Self.translate(&raw) { return event }
            }
        }
    }

    private static func translate(_ raw: inout puff_wl_event) -> LockEvent? {
        switch raw.kind {
        case Int32(PUFF_WL_DOWN.rawValue): return .pointerDown(raw.x, raw.y)
        case Int32(PUFF_WL_MOVE.rawValue): return .pointerMove(raw.x, raw.y)
        case Int32(PUFF_WL_UP.rawValue): return .pointerUp(raw.x, raw.y)
        case Int32(PUFF_WL_ENTER.rawValue): return .enter
        case Int32(PUFF_WL_BACKSPACE.rawValue): return .backspace
        case Int32(PUFF_WL_ESCAPE.rawValue): return .escape
        case Int32(PUFF_WL_RESIZED.rawValue): return .screensChanged
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

    /// Tells a child the lock screen's size (nothing before the compositor configured it).
    func introduce(_ socket: Int32) {
        var width: Int32 = 0, height: Int32 = 0
        puff_wl_primary_size(connection, &width, &height)
        guard width > 0, height > 0 else { return }
        var record = LockChannel.Record(kind: .configure, sizes: (UInt32(width), UInt32(height), 0))
        LockChannel.send(socket, &record)
    }

    func childSaid(_ record: LockChannel.Record, descriptor: Int32, fromActive: Bool) {
        switch record.kind {
        case .frames? where fromActive && descriptor >= 0:
            let (width, height, stride) = record.sizes
            guard let width = Int32(exactly: width), let height = Int32(exactly: height), let stride = Int32(exactly: stride) else {
                close(descriptor)
                Report.warn("the authentication process's frames were refused")
                return
            }
            // Checked there (a sealed file large enough for both frames); always closed.
            if puff_wl_set_frames(connection, descriptor, width, height, stride) != 0 {
                Report.warn("the authentication process's frames were refused")
            }
        case .frame? where fromActive:
            _ = puff_wl_show_frame(connection, Int32(record.detail))
            _ = puff_wl_pump(connection, 0)
            if descriptor >= 0 { close(descriptor) }
        default:
            if descriptor >= 0 { close(descriptor) }
        }
    }

    /// Closes `XSS_SLEEP_LOCK_FD` when a sleep hook passed one: the session is locked.
    func releaseSleepLock() {
        guard let value = getenv("XSS_SLEEP_LOCK_FD").flatMap({ String(validatingCString: $0) }),
              let fd = Int32(value), fd > 2 else { return }
        close(fd)
    }
}
