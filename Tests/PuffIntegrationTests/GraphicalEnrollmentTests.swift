import Foundation
import Testing

/// `puff-enroll gesture` on a desktop: the real puff-enroll (as root, for a test user, in a
/// throwaway store) with `DISPLAY` set and no `--stdin` opens `puff-lock --draw` windows for
/// the drawings and `puff-lock --show` for the template, on an Xvfb server driven with
/// xdotool. Screenshots of each window go to build/screenshots/.
@Suite(.serialized)
struct GraphicalEnrollmentTests {
    /// A running `puff-enroll gesture` and what it wrote.
    final class Enrollment: WatchedChild {
        let output: String

        init(fixture: Fixture, user: String, server: LockScreenTests.XServer) throws {
            let log = fixture.root + "/enroll.log"
            output = fixture.root + "/enroll.out"
            var environment = ProcessInfo.processInfo.environment
            environment["DISPLAY"] = server.display
            let pid = try Child([Artefacts.enroll, "gesture", "--user", user, "--picture", GestureLoginTests.picture, "--print-layout"]
                                + fixture.storeArguments,
                                stdin: .null, stdout: .append(output), stderr: .append(log), environment: environment,
                                newGroup: true).start()
            super.init(pid: pid, log: log, group: true)
        }

        var said: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

        /// The pid of puff-enroll's running child (the puff-lock window), if any.
        func child() -> pid_t? {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            return children.split(separator: " ").compactMap { pid_t($0) }.first
        }
    }

    /// The owner of /proc/PID/status and the core limit: a process that is not dumpable has
    /// its /proc files owned by root, whoever it runs as.
    static func dumpState(_ pid: pid_t) throws -> (procOwner: uid_t, realUid: uid_t, coreLimit: String) {
        var info = stat()
        #expect(stat("/proc/\(pid)/status", &info) == 0)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let uidLine = try #require(status.split(separator: "\n").first { $0.hasPrefix("Uid:") })
        let realUid = try #require(uid_t(uidLine.split(separator: "\t")[1]))
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
        let words = core.split(separator: " ", omittingEmptySubsequences: true)
        return (info.st_uid, realUid, words.dropFirst(4).prefix(2).joined(separator: " "))
    }

    @Test func drawConfirmAndSaveInWindows() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let fixture = try Fixture(moduleArguments: "deny=100")
        let server = try LockScreenTests.XServer()
        let enrollment = try Enrollment(fixture: fixture, user: user, server: server)

        #expect(enrollment.waitFor("screen ready", count: 1), "\(enrollment.text)")
        try LockScreenTests.draw(server, layoutText: enrollment.text, GestureLoginTests.genuine)
        usleep(300_000)
        try server.screenshot("enroll-define")
        try server.xdotool(["key", "Return"])

        #expect(enrollment.waitFor("screen ready", count: 2), "\(enrollment.text)")
        try LockScreenTests.draw(server, layoutText: enrollment.text, GestureLoginTests.genuine)
        usleep(300_000)
        try server.screenshot("enroll-confirm")
        try server.xdotool(["key", "Return"])

        #expect(enrollment.waitFor("review ready", count: 1), "\(enrollment.text)")
        // The review window runs as nobody (root's puff-lock drops its privileges once the
        // display is open and the picture read), is not dumpable and has no core limit.
        let review = try #require(enrollment.child(), "no puff-lock child")
        let state = try Self.dumpState(review)
        #expect(state.realUid == getpwnam("nobody")?.pointee.pw_uid, "\(state)")
        #expect(state.procOwner == 0, "the review window is dumpable: \(state)")
        #expect(state.coreLimit == "0 0", "\(state)")
        // Nothing is saved before the user accepts.
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/pictures/" + user))
        // Halfway through the replay of the first drawing.
        usleep(1_400_000)
        try server.screenshot("enroll-review")
        let buttons = try LockScreenTests.layout(in: enrollment.text).buttons
        let (x, y) = try #require(buttons["submit"], "\(buttons)")
        #expect(buttons["cancel"] != nil && buttons["replay"] != nil, "\(buttons)")
        try server.xdotool(["mousemove", String(x), String(y), "click", "1"])

        #expect(enrollment.exitStatus(timeout: 30) == 0, "\(enrollment.text)")
        #expect(enrollment.said.contains("Gesture for \(user) saved (3 parts, picture 400x300)."), "\(enrollment.said)")
        #expect(!enrollment.said.contains("once more"))
        // The gesture drawn in the windows logs in; a different one does not.
        let login = try fixture.authenticate(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)])
        #expect(login.status == PAMCode.success, "\(login.output)")
        let wrong = try fixture.authenticate(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine) { ($0 + 40, $1) }])
        #expect(wrong.status != PAMCode.success, "\(wrong.output)")
    }

    /// A confirmation whose tap lies 8 picture pixels off is not a copy of the definition: a
    /// third window asks for the gesture once more (the enroller's rule, as on the pad), the
    /// template is the consensus of the three; cancelling the review saves nothing.
    @Test func aConfirmationThatDiffersALotAsksAgainAndCancelSavesNothing() throws {
        let user = try TestUsers.ensure("puff-it-lena")
        let fixture = try Fixture(moduleArguments: "deny=100")
        let server = try LockScreenTests.XServer()
        let enrollment = try Enrollment(fixture: fixture, user: user, server: server)
        var offTap = GestureLoginTests.genuine
        offTap[2].points = [(308, 80)]

        for (drawing, parts) in [GestureLoginTests.genuine, offTap, GestureLoginTests.genuine].enumerated() {
            #expect(enrollment.waitFor("screen ready", count: drawing + 1), "\(enrollment.text)")
            try LockScreenTests.draw(server, layoutText: enrollment.text, parts)
            usleep(300_000)
            if drawing == 2 { try server.screenshot("enroll-once-more") }
            try server.xdotool(["key", "Return"])
        }
        #expect(enrollment.waitFor("review ready", count: 1), "\(enrollment.text)")
        usleep(300_000)
        try server.xdotool(["key", "Escape"])
        #expect(enrollment.exitStatus(timeout: 30) == 3, "\(enrollment.text)")
        #expect(enrollment.said.contains("Draw the gesture once more: Puff learns it from all three drawings."), "\(enrollment.said)")
        #expect(enrollment.text.contains("cancelled; nothing was changed"), "\(enrollment.text)")
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/pictures/" + user))
        #expect(!FileManager.default.fileExists(atPath: fixture.etc + "/users/" + user))
    }
}
