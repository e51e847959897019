import Glibc
import PuffPlatform

/// The lock screen's colours: a dark and a light theme, and which one the desktop prefers.
package struct LockTheme: Equatable {
    package typealias Colour = (red: Double, green: Double, blue: Double)

    package var name: String
    package var background: Colour
    package var bar: Colour
    package var title: Colour
    package var prompt: Colour
    package var clock: Colour
    package var error: Colour
    package var info: Colour
    package var hint: Colour
    package var frame: Colour
    package var panel: Colour
    package var label: Colour
    package var field: Colour
    package var fieldBorder: Colour
    package var fieldBorderActive: Colour
    package var fieldText: Colour
    package var dotEmpty: Colour
    package var digitKey: Colour
    package var otherKey: Colour
    package var keyText: Colour
    package var submitKey: Colour
    package var cancelKey: Colour
    /// Over a translucent background (the blurred screen): this colour at `veilAlpha`.
    package var veil: Colour
    package var veilAlpha: Double

    package static func == (a: LockTheme, b: LockTheme) -> Bool { a.name == b.name }

    package static let dark = LockTheme(
        name: "dark", background: (0.07, 0.07, 0.09), bar: (0.16, 0.17, 0.21), title: (1, 1, 1),
        prompt: (0.85, 0.88, 0.95), clock: (1, 1, 1), error: (1.0, 0.42, 0.38), info: (1.0, 0.80, 0.35),
        hint: (0.75, 0.78, 0.85), frame: (0.35, 0.35, 0.40), panel: (0.11, 0.12, 0.15), label: (0.8, 0.82, 0.88),
        field: (0.05, 0.05, 0.06), fieldBorder: (0.3, 0.3, 0.35), fieldBorderActive: (0.35, 0.6, 1.0),
        fieldText: (1, 1, 1), dotEmpty: (0.45, 0.45, 0.5), digitKey: (0.22, 0.23, 0.28), otherKey: (0.20, 0.20, 0.24),
        keyText: (1, 1, 1), submitKey: (0.16, 0.45, 0.25), cancelKey: (0.45, 0.18, 0.18),
        veil: (0.03, 0.03, 0.05), veilAlpha: 0.55)

    package static let light = LockTheme(
        name: "light", background: (0.92, 0.93, 0.95), bar: (1, 1, 1), title: (0.10, 0.10, 0.13),
        prompt: (0.28, 0.30, 0.36), clock: (0.10, 0.10, 0.13), error: (0.76, 0.12, 0.10), info: (0.58, 0.38, 0.0),
        hint: (0.36, 0.38, 0.44), frame: (0.68, 0.69, 0.73), panel: (0.98, 0.98, 0.99), label: (0.30, 0.32, 0.38),
        field: (1, 1, 1), fieldBorder: (0.74, 0.75, 0.79), fieldBorderActive: (0.15, 0.42, 0.90),
        fieldText: (0.08, 0.08, 0.10), dotEmpty: (0.60, 0.61, 0.66), digitKey: (0.87, 0.88, 0.91),
        otherKey: (0.83, 0.84, 0.87), keyText: (0.10, 0.10, 0.13), submitKey: (0.17, 0.55, 0.30),
        cancelKey: (0.74, 0.22, 0.20), veil: (0.96, 0.96, 0.98), veilAlpha: 0.62)

    package static func named(_ name: String) -> LockTheme? {
        switch name {
        case "dark": .dark
        case "light": .light
        default: nil
        }
    }

    /// The background as a 24-bit TrueColor pixel, for the covering windows.
    package var backgroundPixel: UInt {
        func byte(_ value: Double) -> UInt { UInt((min(max(value, 0), 1) * 255).rounded()) }
        return byte(background.red) << 16 | byte(background.green) << 8 | byte(background.blue)
    }

    /// The theme the desktop asks for, and where that was read: GNOME's
    /// `org.gnome.desktop.interface color-scheme` (through `gsettings`, when it answers within
    /// a second), then GTK's `gtk-application-prefer-dark-theme` or a `gtk-theme-name` ending in
    /// `-dark` in `$XDG_CONFIG_HOME/gtk-3.0/settings.ini` (or gtk-4.0); dark when nothing says.
    package static func desktopPreference() -> (theme: LockTheme, source: String) {
        if let scheme = gsettings("color-scheme") {
            if scheme.contains("prefer-dark") { return (.dark, "color-scheme \(scheme)") }
            if scheme.contains("prefer-light") { return (.light, "color-scheme \(scheme)") }
        }
        let home = getenv("HOME").flatMap { String(validatingCString: $0) } ?? ""
        let config = getenv("XDG_CONFIG_HOME").flatMap { String(validatingCString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.config"
        for version in ["gtk-4.0", "gtk-3.0"] {
            let path = config + "/" + version + "/settings.ini"
            guard let text = readSmallFile(path) else { continue }
            // The explicit preference first, then the theme's name.
            var themeName: (theme: LockTheme, source: String)?
            for line in text.split(separator: "\n") {
                let pair = line.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
                guard pair.count == 2 else { continue }
                switch pair[0] {
                case "gtk-application-prefer-dark-theme":
                    let dark = pair[1] == "1" || pair[1].lowercased() == "true"
                    return (dark ? .dark : .light, "\(version)/settings.ini \(pair[0])=\(pair[1])")
                case "gtk-theme-name":
                    let dark = pair[1].lowercased().hasSuffix("-dark") || pair[1].lowercased().hasSuffix(":dark")
                    themeName = (dark ? .dark : .light, "\(version)/settings.ini \(pair[0])=\(pair[1])")
                default:
                    continue
                }
            }
            if let themeName { return themeName }
        }
        // Not GNOME's gtk-theme: gsettings answers its default ('Adwaita') when nobody chose
        // one, which is no preference.
        return (.dark, "no desktop preference")
    }

    /// `gsettings get org.gnome.desktop.interface KEY`, nil when it is missing, fails or takes
    /// more than a second.
    private static func gsettings(_ key: String) -> String? {
        var output: [Int32] = [-1, -1]
        guard pipe(&output) == 0 else { return nil }
        _ = fcntl(output[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(output[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["gsettings", "get", "org.gnome.desktop.interface", key]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, "gsettings", &actions, nil, &argv, environ)
        close(output[1])
        defer { close(output[0]) }
        guard spawned == 0 else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        let deadline = monotonicSeconds() + 1
        var finished = false
        while bytes.count < 4096 {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { break }
            var poller = pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { break }
            let got = chunk.withUnsafeMutableBytes { read(output[0], $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 {
                finished = true
                break
            }
            bytes += chunk[0..<got]
        }
        if !finished { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard finished, status == 0 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces()
        return text.isEmpty ? nil : text
    }

    /// A small text file of the user's (at most 64 KiB), or nil.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 65_536 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard got >= 0 else { return nil }
        return String(decoding: bytes[0..<got], as: UTF8.self)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line ends.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
