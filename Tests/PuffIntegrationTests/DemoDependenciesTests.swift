import Foundation
import Testing

/// `make demo` is safe to try on a workstation (issue 32): it installs a compiler and
/// libraries, never a server or a display manager.
struct DemoDependenciesTests {
    /// `make -n demo` (what the demo would run) installs only a compiler and libraries: no
    /// package it names ships a service (a systemd unit or an init script) or is a server.
    @Test func theDemoInstallsNoServer() throws {
        let dryRun = try run("/usr/bin/make", ["-n", "-C", Artefacts.repository.path, "demo"])
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        // The recursive `make install-packages PACKAGES="..."` lines: what the demo would install.
        let packages = dryRun.lines.compactMap { line -> Substring? in
            guard let start = line.range(of: "PACKAGES=\"") else { return nil }
            return line[start.upperBound...].prefix { $0 != "\"" }
        }.flatMap { $0.split(separator: " ") }.map(String.init)
        #expect(packages.contains("libpam0g-dev") && packages.contains("libsodium-dev"), "\(packages)")
        let servers = ["openssh-server", "slapd", "lightdm", "swtpm", "xserver-xephyr", "xvfb", "dbus-daemon", "fail2ban"]
        #expect(Set(packages).isDisjoint(with: servers), "the demo installs \(Set(packages).intersection(servers))")
        for package in packages {
            let files = try run("/usr/bin/dpkg-query", ["-L", package])
            guard files.status == 0 else { continue }  // not installed here: nothing to look at
            let services = files.lines.filter { $0.hasPrefix("/lib/systemd/system/") || $0.hasPrefix("/usr/lib/systemd/system/")
                || $0.hasPrefix("/etc/init.d/") }
            #expect(services.isEmpty, "\(package) ships \(services)")
        }
    }
}
