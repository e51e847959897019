import CLockWayland
import Glibc
import PuffPlatform

/// The socket between puff-lock's two processes (a `SOCK_SEQPACKET` socket pair): the locking
/// parent, which holds the grabs and the covering windows, forwards the input it receives to
/// the authentication child, which draws and runs PAM; the child says how it is doing.
///
/// One record per packet, 32 bytes: the kind, then for pointer events two doubles (window
/// coordinates, which are the same in both processes: both windows cover the screen from its
/// origin), for typed text up to 16 bytes. Records holding typed text are wiped by whoever
/// built or read them. The parent's end is non-blocking: a child that stops reading loses
/// input, and the parent never waits for it.
package enum LockChannel {
    package enum Kind: UInt8 {
        // Parent → child.
        case pointerDown = 1, pointerMove, pointerUp, enter, backspace, escape, text
        /// The screen is covered and grabbed and this child is the one asking: it shows its
        /// window and starts PAM's conversation. (A standby child waits for it.)
        case locked = 16
        /// Are you alive? (answered by `pong` from the child's event loop)
        case ping
        /// Wayland: the size of the output the lock screen is drawn on (two `UInt32` at
        /// offset 8), sent at the start and whenever it changes; the child draws at that size.
        case configure
        // Child → parent.
        /// PAM started: the parent may lock (sent once, before the first prompt).
        case started = 32
        case pong
        /// The child leaves its event loop for work that may take a while (it may not answer
        /// pings meanwhile; the parent allows it longer, by the reason in the record's second
        /// byte: `BusyReason`). Its next `pong` ends it.
        case busy
        /// pam_authenticate succeeded; the child exits 0 next. The parent unlocks only on both.
        case success
        /// Wayland: the child's two frames, a sealed memfd passed with the record (width,
        /// height and stride as `UInt32` at offsets 8, 12 and 16), which the parent shares
        /// with the compositor.
        case frames
        /// Wayland: frame 0 or 1 (the second byte) is drawn; the parent shows it.
        case frame
    }

    package static let recordSize = 32

    /// Why a child says `busy`: how long the parent lets it be silent.
    package enum BusyReason: UInt8 {
        /// pam_authenticate: the modules' work before a prompt, or checking a submission
        /// (a slow KDF, a directory).
        case pam = 0
        /// Laying the screen out again and drawing it at a new size (the picture scaled, the
        /// backdrop blurred again).
        case layout = 1
    }

    /// A record on the stack, wiped when it is sent or read.
    package struct Record {
        package var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        package init(kind: Kind) {
            withUnsafeMutableBytes(of: &bytes) { $0[0] = kind.rawValue }
        }

        package init() {}

        package var kind: Kind? { withUnsafeBytes(of: bytes) { Kind(rawValue: $0[0]) } }

        /// A `busy` record's reason (PAM when the byte is unknown: the longer allowance).
        package var busyReason: BusyReason { withUnsafeBytes(of: bytes) { BusyReason(rawValue: $0[1]) ?? .pam } }

        /// The three `UInt32` at offsets 8, 12 and 16 (`configure`, `frames`).
        package var sizes: (UInt32, UInt32, UInt32) {
            withUnsafeBytes(of: bytes) {
                ($0.load(fromByteOffset: 8, as: UInt32.self), $0.load(fromByteOffset: 12, as: UInt32.self),
                 $0.load(fromByteOffset: 16, as: UInt32.self))
            }
        }

        /// A record of `kind` carrying three sizes.
        package init(kind: Kind, sizes: (UInt32, UInt32, UInt32)) {
            self.init(kind: kind)
            withUnsafeMutableBytes(of: &bytes) {
                $0.storeBytes(of: sizes.0, toByteOffset: 8, as: UInt32.self)
                $0.storeBytes(of: sizes.1, toByteOffset: 12, as: UInt32.self)
                $0.storeBytes(of: sizes.2, toByteOffset: 16, as: UInt32.self)
            }
        }

        /// The record's second byte (`frame`'s index).
        package var detail: UInt8 { withUnsafeBytes(of: bytes) { $0[1] } }

        package var point: (Double, Double) {
            withUnsafeBytes(of: bytes) { ($0.load(fromByteOffset: 8, as: Double.self), $0.load(fromByteOffset: 16, as: Double.self)) }
        }

        package mutating func wipe() {
            withUnsafeMutableBytes(of: &bytes) { Wipe.bytes($0) }
        }
    }

    /// The record for an input event (nil for events that are not input: redraws, screens).
    package static func record(_ event: LockEvent) -> Record? {
        var record: Record
        switch event {
        case .pointerDown(let x, let y), .pointerMove(let x, let y), .pointerUp(let x, let y):
            let kind: Kind = switch event {
            case .pointerDown: .pointerDown
            case .pointerMove: .pointerMove
            default: .pointerUp
            }
            record = Record(kind: kind)
            withUnsafeMutableBytes(of: &record.bytes) {
                $0.storeBytes(of: x, toByteOffset: 8, as: Double.self)
                $0.storeBytes(of: y, toByteOffset: 16, as: Double.self)
            }
        case .enter: record = Record(kind: .enter)
        case .backspace: record = Record(kind: .backspace)
        case .escape: record = Record(kind: .escape)
        case .text(let typed):
            record = Record(kind: .text)
            withUnsafeMutableBytes(of: &record.bytes) { target in
                target[1] = UInt8(typed.count)
                for index in 0..<min(typed.count, 16) { target[8 + index] = typed[index] }
            }
        case .redraw, .screensChanged, .close:
            return nil
        }
        return record
    }

    /// The event a record carries (nil for the control kinds and for malformed records).
    package static func event(_ record: Record) -> LockEvent? {
        switch record.kind {
        case .pointerDown?, .pointerMove?, .pointerUp?:
            let (x, y) = record.point
            guard x.isFinite, y.isFinite else { return nil }
            return record.kind == .pointerDown ? .pointerDown(x, y) : record.kind == .pointerMove ? .pointerMove(x, y) : .pointerUp(x, y)
        case .enter?: return .enter
        case .backspace?: return .backspace
        case .escape?: return .escape
        case .text?:
            var typed = TypedBytes()
            let count = withUnsafeBytes(of: record.bytes) { Int($0[1]) }
            guard count > 0, count <= 16 else { return nil }
            withUnsafeBytes(of: record.bytes) { source in
                withUnsafeMutableBytes(of: &typed.storage) { target in
                    for index in 0..<count { target[index] = source[8 + index] }
                }
            }
            typed.count = count
            return .text(typed)
        default:
            return nil
        }
    }

    /// Sends one record without blocking and without SIGPIPE; false when it was not sent.
    @discardableResult
    package static func send(_ fd: Int32, _ record: inout Record) -> Bool {
        defer { record.wipe() }
        while true {
            let sent = withUnsafeBytes(of: record.bytes) { Glibc.send(fd, $0.baseAddress, recordSize, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent < 0 && errno == EINTR { continue }
            return sent == recordSize
        }
    }

    @discardableResult
    package static func send(_ fd: Int32, _ kind: Kind) -> Bool {
        var record = Record(kind: kind)
        return send(fd, &record)
    }

    /// Sends `busy` with its reason.
    @discardableResult
    package static func sendBusy(_ fd: Int32, _ reason: BusyReason) -> Bool {
        var record = Record(kind: .busy)
        withUnsafeMutableBytes(of: &record.bytes) { $0[1] = reason.rawValue }
        return send(fd, &record)
    }

    /// What `receive` found.
    package enum Received {
        case record(Record)
        /// Nothing to read now.
        case nothing
        /// The other end is gone (or the socket failed).
        case closed
    }

    /// Reads one record without blocking. A packet of another size is dropped. A descriptor
    /// that came with the record is stored in `descriptor` when the caller asks for it (the
    /// caller closes it), and closed otherwise.
    package static func receive(_ fd: Int32, descriptor: UnsafeMutablePointer<Int32>? = nil) -> Received {
        var record = Record()
        descriptor?.pointee = -1
        while true {
            var passed: Int32 = -1
            let got = withUnsafeMutableBytes(of: &record.bytes) { puff_receive_with_descriptor(fd, $0.baseAddress, recordSize, &passed) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .nothing }
            if got != recordSize || descriptor == nil, passed >= 0 {
                close(passed)
                passed = -1
            }
            if got <= 0 { return .closed }
            if got != recordSize {
                record.wipe()
                continue
            }
            descriptor?.pointee = passed
            return .record(record)
        }
    }

    /// Sends a record with a descriptor (SCM_RIGHTS) without blocking; false when not sent.
    @discardableResult
    package static func send(_ fd: Int32, _ record: inout Record, descriptor: Int32) -> Bool {
        defer { record.wipe() }
        return withUnsafeBytes(of: record.bytes) { puff_send_with_descriptor(fd, $0.baseAddress, recordSize, descriptor) } == 0
    }
}
