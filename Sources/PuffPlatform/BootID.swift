import Glibc
import PuffCore

extension BootID {
    /// Where the kernel publishes the id it draws at every boot.
    static let path = "/proc/sys/kernel/random/boot_id"

    /// The current boot id (`/proc/sys/kernel/random/boot_id`), or `nil` when it cannot be
    /// read; callers then assume a restart, which asks for the passcode (fails toward the
    /// stronger factor).
    public static func current() -> String? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path: path, O_RDONLY | O_NOFOLLOW | O_NOCTTY)
        } catch {
            return nil
        }
        guard let status = try? file.status(), status.st_uid == 0 else { return nil }
        guard let bytes = try? file.readPrefix(limit: 64) else { return nil }
        return canonical(bytes)
    }
}
