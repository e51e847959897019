import Glibc
import PuffCore
import PuffPlatform

/// `gesture_trail` for the screens that take a gesture at login or unlock (puff-lock,
/// puff-greeter, puff-pad), read from puff.conf with the module's own parser.
public enum TrailSetting {
    /// The setting in `configFile`, and what to log about it (nil: nothing).
    ///
    /// A missing file gives the default (`fade`). A file the screen may not read (a root-only
    /// puff.conf and a screen running as the user) gives the default too, and says so. A bad
    /// value, or a file that is unsafe or does not parse, gives `hidden`: what the file meant
    /// is unknown, so the screen shows an onlooker the least.
    public static func load(configFile: String = "/etc/puff/puff.conf") -> (trail: GestureTrail, warning: String?) {
        do {
            let loaded = try Configuration.load(arguments: ["conf=" + configFile])
            return (loaded.options.gestureTrail, nil)
        } catch {
            if case .system(_, _, let code) = error, code == Errno(EACCES) {
                return (.fade, "\(configFile) cannot be read here: gesture_trail is the default, fade")
            }
            return (.hidden, "\(error.description): the gesture's trail is hidden")
        }
    }
}
