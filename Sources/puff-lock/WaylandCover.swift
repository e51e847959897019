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
    private let wayland: WaylandConnection
    private var connection: OpaquePointer { wayland.handle }
    var wakeDescriptors: [Int32] = []
    let childEmbedding = ["--frames"]

    /// Connects; throws, saying why, when there is no compositor or it cannot lock a session.
    init(background: UInt) throws(LockDisplayError) {
        wayland = try WaylandConnection(lockingWith: background)
    }

    /// Asks for the lock and waits up to `timeout` seconds for the compositor to say every
    /// output is covered (`locked`). Throws when it refuses (another locker holds the lock)
    /// or does not answer.
    func lock(timeout: Double) throws(LockDisplayError) {
        guard puff_wl_lock(connection) == 0 else { throw LockDisplayError(description: "cannot ask the compositor for the lock") }
        let deadline = monotonicSeconds() + timeout
        while puff_wl_state(connection) == Int32(PUFF_WL_LOCKING.rawValue) {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw LockDisplayError(description: "the compositor did not lock the session in \(timeout) s") }
            guard wayland.pump(milliseconds: Int32(left * 1000) + 1, wake: wakeDescriptors) else {
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

    func nextEvent(timeout: Double?) -> LockEvent? {
        wayland.nextEvent(timeout: timeout, wake: wakeDescriptors, check: { [connection] in
            if puff_wl_state(connection) == Int32(PUFF_WL_FINISHED.rawValue) {
                // The compositor ended the lock itself (it is no longer this process's).
                Report.warn("the compositor ended the session lock; stopping")
                exit(1)
            }
        })
    }

    /// Tells a child the lock screen's size (nothing before the compositor configured it).
    func introduce(_ socket: Int32) {
        let (width, height) = wayland.size
        guard width > 0, height > 0, let wide = UInt32(exactly: width), let high = UInt32(exactly: height) else { return }
        var record = LockChannel.Record(kind: .configure, sizes: (wide, high, 0))
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
