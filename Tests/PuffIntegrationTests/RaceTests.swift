import Foundation
import Testing

/// N separate processes released at once into `pam_authenticate` on one user by the
/// `puff-race` barrier harness (fork, pam_start_confdir, wait on a pipe, authenticate).
/// Debian's pam_faillock runs through the same harness in the same test; its count is
/// printed next to Puff's for comparison, and only Puff's is asserted.
@Suite(.serialized)
struct RaceTests {
    /// What one barrier run reported.
    struct RaceResult {
        var codes: [Int32: Int] = [:]
        var missing = -1
        var slowestMilliseconds = -1
        var output = ""

        func count(of code: Int32) -> Int { codes[code] ?? 0 }
    }

    static var barrierHarness: String { Artefacts.binaries + "/puff-race" }

    /// Runs `count` simultaneous attempts through `service` and parses the report.
    static func race(_ pamDirectory: String, service: String, user: String, reply: String, count: Int) throws -> RaceResult {
        let result = try run(barrierHarness, ["--confdir", pamDirectory, "--service", service, "--user", user,
                                              "--count", String(count), "--reply", reply])
        var parsed = RaceResult(output: result.output + result.errors)
        for line in result.lines {
            let fields = line.split(separator: " ")
            if fields.first == "CODE", fields.count >= 3, let code = Int32(fields[1]), let n = Int(fields[2]) {
                parsed.codes[code] = n
            } else if fields.first == "MISSING", fields.count == 2, let n = Int(fields[1]) {
                parsed.missing = n
            } else if fields.first == "TIME", let field = fields.first(where: { $0.hasPrefix("max_ms=") }) {
                parsed.slowestMilliseconds = Int(field.dropFirst("max_ms=".count)) ?? -1
            }
        }
        return parsed
    }

    /// A pam_faillock stack in `fixture`: preauth, a module that always fails, authfail.
    /// (pam_deny stands in for the password check, so only the tally is exercised.)
    static func faillockService(_ fixture: Fixture, always: String = "pam_deny.so") throws -> String {
        let tallies = fixture.root + "/faillock"
        try FileManager.default.createDirectory(atPath: tallies, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        try fixture.write(fixture.root + "/faillock.conf", "", mode: 0o644)
        let options = "dir=\(tallies) deny=100000 conf=\(fixture.root)/faillock.conf"
        try fixture.write(fixture.pamDirectory + "/faillock-race", """
            auth requisite pam_faillock.so preauth \(options)
            auth [success=1 default=bad] \(always)
            auth [default=die] pam_faillock.so authfail \(options)
            auth sufficient pam_faillock.so authsucc \(options)

            """, mode: 0o644)
        return tallies
    }

    /// The number of entries `faillock --dir` lists for `user`.
    static func faillockTally(_ tallies: String, user: String) throws -> Int {
        let result = try run("/usr/sbin/faillock", ["--dir", tallies, "--user", user])
        // "user:", a header line "When Type Source Valid", then one line per entry.
        return result.lines.filter { $0.hasSuffix(" V") || $0.hasSuffix(" I") }.count
    }

    @Test(arguments: [64, 200], [false, true])
    func simultaneousWrongAttemptsAreAllCounted(count: Int, fileExists: Bool) throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=1000000 max_failures=0")
        try fixture.enroll(user, "604917")
        let tallies = try Self.faillockService(fixture)
        let counterFile = fixture.state + "/" + user
        let faillockFile = tallies + "/" + user
        var before = 0, faillockBefore = 0
        // Enrollment takes the counter lock and so creates the file; start from none.
        try FileManager.default.removeItem(atPath: counterFile)
        if fileExists {
            // One earlier failure creates each file.
            #expect(try fixture.authenticate(user, replies: ["111333"]).status == PAMCode.authError)
            #expect(try fixture.authenticate(user, replies: ["111333"], service: "faillock-race").status == PAMCode.authError)
            before = try fixture.failures(user)
            faillockBefore = try Self.faillockTally(tallies, user: user)
            #expect(before == 1)
            #expect(faillockBefore == 1)
        }
        #expect(FileManager.default.fileExists(atPath: counterFile) == fileExists)
        #expect(FileManager.default.fileExists(atPath: faillockFile) == fileExists)

        let puff = try Self.race(fixture.pamDirectory, service: "puff-test", user: user, reply: "111333", count: count)
        let faillock = try Self.race(fixture.pamDirectory, service: "faillock-race", user: user, reply: "111333", count: count)
        let counted = try fixture.failures(user) - before
        let faillockCounted = try Self.faillockTally(tallies, user: user) - faillockBefore

        print("RACE N=\(count) \(fileExists ? "existing" : "missing") counter file: "
              + "puff \(counted)/\(count) counted, pam_faillock \(faillockCounted)/\(count) counted "
              + "(slowest puff attempt \(puff.slowestMilliseconds) ms)")
        #expect(puff.missing == 0, "\(puff.output)")
        #expect(puff.count(of: PAMCode.authError) == count, "\(puff.output)")
        #expect(counted == count)
        // Attempts on one user are serialised; all of them must fit in lock_wait (30 s).
        #expect(puff.slowestMilliseconds >= 0 && puff.slowestMilliseconds < 30_000)
        #expect(faillock.missing == 0, "\(faillock.output)")
    }

    /// In-flight attempts count until they finish (see ConcurrencyTests): some right answers
    /// may be refused as locked for that moment; the count ends cleared.
    @Test func thirtyTwoSimultaneousCorrectAttemptsWithDenyThreeEndCleared() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=3 delays=10m")
        try fixture.enroll(user, "604917")
        let puff = try Self.race(fixture.pamDirectory, service: "puff-test", user: user, reply: "604917", count: 32)
        print("RACE 32 correct, deny=3: puff \(puff.count(of: PAMCode.success))/32 succeeded")
        #expect(puff.missing == 0, "\(puff.output)")
        #expect(puff.count(of: PAMCode.success) + puff.count(of: PAMCode.authError) == 32, "\(puff.output)")
        #expect(puff.count(of: PAMCode.success) >= 3, "\(puff.output)")
        #expect(try fixture.failures(user) == 0)
    }
}
