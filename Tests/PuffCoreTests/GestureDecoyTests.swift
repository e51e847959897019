import Testing
@testable import PuffCore

/// The decoy a discreet service matches an unmatched gesture reply against, and the rescaled
/// match of a reply drawn on another picture size (issue 27, item 2: the same work for every
/// refusal). The time itself is `make timing`'s to measure.
@Suite("Gesture decoy")
struct GestureDecoyTests {
    @Test("a version-3 template of three parts on any valid picture size", arguments: [(1, 1), (400, 300), (1000, 750), (3840, 2160), (100_000, 7)])
    func decoyOnEverySize(_ size: (Int, Int)) throws {
        let decoy = try #require(GestureDecoy.template(width: size.0, height: size.1))
        #expect(decoy.version == 3)
        #expect(decoy.width == size.0 && decoy.height == size.1)
        #expect(decoy.parts.map(\.kind) == [.path, .path, .tap])
        // It survives its own encoding, as the sealed copy must.
        #expect(try GestureTemplate.decode(decoy.encode()) == decoy)
    }

    @Test("no decoy for a size no template can have")
    func noDecoyForImpossibleSizes() {
        #expect(GestureDecoy.template(width: 0, height: 300) == nil)
        #expect(GestureDecoy.template(width: 400, height: 100_001) == nil)
    }

    @Test("the decoy is matched in full: its own parts drawn as a reply pass, an ordinary gesture does not")
    func repliesAreMatchedInFull() throws {
        // A pass needs every part evaluated; a decoy the matcher refused early (size, validity,
        // complexity) could not pass its own drawing.
        let decoy = try #require(GestureDecoy.template(width: 1000, height: 750))
        #expect(GestureMatcher.verify(decoy, Gesture(width: 1000, height: 750, parts: decoy.parts)).passed)
        let other = GestureMatcher.verify(decoy, GestureConsensusTests.base)
        #expect(!other.passed, "an ordinary gesture is not the decoy")
        #expect(other.failure != .pictureSizeMismatch)
    }

    @Test("a gesture rescaled to another picture keeps its shape and stays in the picture")
    func rescaledKeepsTheShape() throws {
        let drawn = Gesture(width: 800, height: 600, parts: GestureConsensusTests.base.parts.map { part in
            GesturePart(kind: part.kind, points: part.points.map { GesturePoint(x: $0.x * 0.8, y: $0.y * 0.8) })
        }, resolution: GestureResolution(width: 8, height: 16))
        let rescaled = drawn.rescaled(width: 1000, height: 750)
        #expect(rescaled.width == 1000 && rescaled.height == 750)
        #expect(rescaled.resolution == GestureResolution(width: 10, height: 20))
        try rescaled.validate()
        for (original, scaled) in zip(GestureConsensusTests.base.parts, rescaled.parts) {
            for (a, b) in zip(original.points, scaled.points) {
                #expect(abs(a.x - b.x) < 1e-9 && abs(a.y - b.y) < 1e-9)
            }
        }
        // Points outside the picture (a hostile reply) are clamped in, never trapped on.
        let wild = Gesture(width: 10, height: 10, parts: [GesturePart(kind: .tap, points: [GesturePoint(x: 1e12, y: -5)])])
        let clamped = wild.rescaled(width: 400, height: 300)
        #expect(clamped.parts[0].points[0] == GesturePoint(x: 400, y: 0))
    }
}
