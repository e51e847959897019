import Foundation
import Testing

/// Learning from successful logins through real libpam: the sealed template on disk changes
/// after each accepted gesture and stays byte for byte after a refused one.
@Suite(.serialized)
struct GestureLearningLoginTests {
    /// The sealed template line of `user`'s record.
    func sealedTemplate(_ fixture: Fixture, _ user: String) throws -> String {
        let record = try String(contentsOfFile: fixture.etc + "/users/" + user, encoding: .utf8)
        return String(try #require(record.split(separator: "\n").first { $0.hasPrefix("gesture-template ") }))
    }

    @Test func aSuccessStoresTheLearnedTemplateAndARefusalLeavesIt() throws {
        let user = try TestUsers.ensure("puff-it-alice")
        let fixture = try Fixture(moduleArguments: "deny=100")
        try GestureLoginTests().enrolled(fixture, user)
        let enrolled = try sealedTemplate(fixture, user)
        // A near miss: the tap 30 px off on its own. Refused, counted, and nothing stored.
        var tapMoved = GestureLoginTests.genuine
        tapMoved[2].points = [(330, 80)]
        let nearMiss = GestureLoginTests.wire(tapMoved)
        #expect(try fixture.authenticate(user, replies: [nearMiss]).status == PAMCode.authError)
        #expect(try sealedTemplate(fixture, user) == enrolled)
        // Accepted drawings a few pixels off: each one re-seals the template it taught.
        var seen = [enrolled]
        for seed in UInt64(1)...3 {
            var jitter = GestureLoginTests.Jitter(state: seed)
            let attempt = GestureLoginTests.wire(GestureLoginTests.genuine) { x, y in (x + 2 + jitter.next(2), y + jitter.next(2)) }
            let result = try fixture.authenticate(user, replies: [attempt])
            #expect(result.status == PAMCode.success, "seed \(seed): \(result.output)")
            let now = try sealedTemplate(fixture, user)
            #expect(!seen.contains(now), "seed \(seed): the template was not stored again")
            seen.append(now)
        }
        let learned = try sealedTemplate(fixture, user)
        #expect(try fixture.authenticate(user, replies: [nearMiss]).status == PAMCode.authError)
        #expect(try sealedTemplate(fixture, user) == learned)
        #expect(try fixture.failures(user) == 1)
        // The learned template still opens for the gesture as enrolled.
        #expect(try fixture.authenticate(user, replies: [GestureLoginTests.wire(GestureLoginTests.genuine)]).status == PAMCode.success)
    }
}
