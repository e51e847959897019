import CLockX
import Glibc
import PuffClient
import PuffScreen

/// The first screen: LightDM's users, a row to type any other name, and the session to
/// start; the host name and a clock in the bar.
///
/// Keyboard: ↑/↓ choose a row, typing writes a name (which selects the matching user),
/// ←/→ or F2 change the session, Enter logs in as the chosen user, Esc clears the name.
/// Pointer: a click on a user logs in as that user, on the session row changes it.
final class UserChooser {
    let display: any GreeterScreen
    let renderer: LockRenderer
    let users: [UserChoice]
    let sessions: [SessionChoice]
    let host: String
    let printLayout: Bool
    /// The session chosen (an index into `sessions`), kept from one screen to the next.
    private(set) var sessionIndex: Int
    /// The row chosen: an index into `users`, or `users.count` for the typed name.
    private var selected: Int
    /// The first user shown (the list scrolls to keep the chosen one in view).
    private var offset = 0
    private var announcedOffset = 0
    private var typed = ""
    private var keys: [UInt] = []
    /// The renderer draws strokes on every screen; this one has none.
    private let noStrokes = StrokeBuffer()
    /// Messages for the next screen (a session that failed to start).
    var messages: [LockScene.Message] = []

    init(display: any GreeterScreen, users: [UserChoice], sessions: [SessionChoice], defaultSession: String?,
         selectedUser: String?, host: String, printLayout: Bool) {
        self.display = display
        renderer = display.makeRenderer()
        self.users = users
        self.sessions = sessions
        self.host = host
        self.printLayout = printLayout
        sessionIndex = sessions.firstIndex { $0.key == defaultSession } ?? 0
        selected = users.firstIndex { $0.name == selectedUser } ?? 0
    }

    /// The key of the session chosen; nil when LightDM offers none (its default is used).
    var sessionKey: String? { sessions.indices.contains(sessionIndex) ? sessions[sessionIndex].key : nil }

    private struct Geometry {
        var userRows: [LockRect]
        var other: LockRect
        var session: LockRect
    }

    private func geometry(_ monitor: LockRect) -> Geometry {
        let width = min(560, monitor.width - 40)
        let height = 56.0, gap = 10.0
        let top = monitor.y + LockLayout.barHeight + LockLayout.messageHeight + 30
        let room = Int((monitor.maxY - top - 2 * (height + gap) - 60) / (height + gap))
        let shown = max(0, min(users.count, room))
        let total = Double(shown + 1) * (height + gap) + 24 + height
        var y = max(top, (monitor.midY - total / 2).rounded(.down))
        let x = (monitor.midX - width / 2).rounded(.down)
        var rows: [LockRect] = []
        for _ in 0..<shown {
            rows.append(LockRect(x: x, y: y, width: width, height: height))
            y += height + gap
        }
        let other = LockRect(x: x, y: y, width: width, height: height)
        let session = LockRect(x: x, y: y + height + gap + 24, width: width, height: height)
        return Geometry(userRows: rows, other: other, session: session)
    }

    /// Runs the screen until a user is chosen; returns the name to authenticate.
    func choose() -> String {
        display.otherKey = { [unowned self] symbol in
            switch Int32(truncatingIfNeeded: symbol) {
            case XK_Up, XK_Down, XK_Left, XK_Right, XK_F2, XK_Tab, XK_KP_Up, XK_KP_Down:
                keys.append(symbol)
                return true
            default:
                return false
            }
        }
        defer { display.otherKey = nil }
        var geometry = self.geometry(display.primaryMonitor())
        let otherIndex = users.count
        draw(geometry)
        announce(geometry)
        while true {
            let event = display.nextEvent(timeout: secondsToNextMinute())
            guard let event else {
                draw(geometry)
                continue
            }
            switch event {
            case .redraw:
                while !keys.isEmpty {
                    let key = Int32(truncatingIfNeeded: keys.removeFirst())
                    switch key {
                    case XK_Up, XK_KP_Up: selected = max(0, selected - 1)
                    case XK_Down, XK_KP_Down, XK_Tab: selected = min(otherIndex, selected + 1)
                    case XK_Left: changeSession(by: -1)
                    case XK_Right, XK_F2: changeSession(by: 1)
                    default: break
                    }
                }
            case .screensChanged:
                geometry = self.geometry(display.primaryMonitor())
                announce(geometry)
            case .pointerDown(let x, let y):
                if let row = geometry.userRows.firstIndex(where: { $0.contains(x, y) }), users.indices.contains(offset + row) {
                    return finish(users[offset + row].name)
                } else if geometry.other.contains(x, y) {
                    selected = otherIndex
                } else if geometry.session.contains(x, y) {
                    changeSession(by: x < geometry.session.midX - geometry.session.width / 4 ? -1 : 1)
                }
            case .text(var bytes):
                for index in 0..<bytes.count where typed.utf8.count < 64 {
                    let byte = bytes[index]
                    // User names are ASCII; anything else is not typed into the name.
                    if byte > 0x20 && byte < 0x7F { typed.append(Character(UnicodeScalar(byte))) }
                }
                bytes.wipe()
                selectTyped(otherIndex)
            case .backspace:
                if !typed.isEmpty {
                    typed.removeLast()
                    selectTyped(otherIndex)
                }
            case .escape:
                typed = ""
            case .enter:
                if users.indices.contains(selected) { return finish(users[selected].name) }
                if !typed.isEmpty { return finish(typed) }
            case .pointerMove, .pointerUp, .close:
                continue
            }
            // Keep the chosen user in view.
            let shown = geometry.userRows.count
            if selected < offset { offset = selected }
            if selected < otherIndex && selected >= offset + shown { offset = selected - shown + 1 }
            offset = max(0, min(offset, users.count - shown))
            if offset != announcedOffset { announce(geometry) }
            if !display.hasQueuedEvents { draw(geometry) }
        }
    }

    private func finish(_ name: String) -> String {
        typed = ""
        messages.removeAll()
        return name
    }

    /// The row of the user whose name is typed, else the row for another name.
    private func selectTyped(_ otherIndex: Int) {
        selected = users.firstIndex { $0.name == typed } ?? otherIndex
    }

    private func changeSession(by step: Int) {
        guard !sessions.isEmpty else { return }
        sessionIndex = (sessionIndex + step + sessions.count) % sessions.count
    }

    private func draw(_ geometry: Geometry) {
        let layout = LockLayout(monitor: display.primaryMonitor(), pictureSize: nil, panel: .none, gesture: false)
        var scene = LockScene(title: host, prompt: Self.clock(), messages: messages)
        scene.hint = "↑↓ or type a name · Enter · ←→ session"
        let otherIndex = users.count
        for (row, rect) in geometry.userRows.enumerated() where users.indices.contains(offset + row) {
            let user = users[offset + row]
            scene.rows.append(.init(label: user.displayName, detail: user.displayName == user.name ? "" : user.name,
                                    rect: rect, selected: selected == offset + row))
        }
        let typing = !typed.isEmpty || selected == otherIndex
        scene.rows.append(.init(label: typed.isEmpty ? "Other user…" : typed + (selected == otherIndex ? "▏" : ""),
                                detail: typing ? "type a name" : "", rect: geometry.other, selected: selected == otherIndex))
        let session = sessions.indices.contains(sessionIndex) ? sessions[sessionIndex].name : "Default session"
        scene.rows.append(.init(label: "Session: " + session, detail: sessions.count > 1 ? "◀  ▶" : "",
                                rect: geometry.session, selected: false))
        renderer.draw(scene, layout: layout, picture: nil, strokes: noStrokes)
    }

    /// With `--print-layout`: where the rows are (for tests), then `users ready`.
    private func announce(_ geometry: Geometry) {
        announcedOffset = offset
        guard printLayout else { return }
        var text = ""
        for (row, rect) in geometry.userRows.enumerated() where users.indices.contains(offset + row) {
            text += "puff-greeter: user \(users[offset + row].name) \(rect.midX) \(rect.midY)\n"
        }
        text += "puff-greeter: other \(geometry.other.midX) \(geometry.other.midY)\n"
        text += "puff-greeter: session \(geometry.session.midX) \(geometry.session.midY)\n"
        Report.raw(text + "puff-greeter: users ready\n")
    }

    /// The time and date in figures only (no language needed): `14:05  2026-11-24`.
    static func clock() -> String {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return "" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min))   \(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
    }

    private func secondsToNextMinute() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(60 - Int(now.tv_sec % 60)) + 0.05
    }
}
