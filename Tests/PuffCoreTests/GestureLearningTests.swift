import Foundation
import Testing
@testable import PuffCore
import PuffSimulation

/// Version 4: learning from accepted logins within the enrollment's bounds.
@Suite("Gesture learning from successful logins, version 4")
struct GestureLearningTests {
    typealias Base = GestureConsensusTests

    static func enrolled() throws -> GestureTemplate {
        try GestureEnroller.build(drawings: Base.steady)
    }

    /// The accepted login's learned template, or nil when the matcher refused it.
    static func learned(_ template: GestureTemplate, _ attempt: Gesture) -> GestureTemplate? {
        GestureLearning.accept(attempt, by: template).acceptance.map { GestureLearning.learned(from: $0) }
    }

    @Test("only an accepted attempt can be learned from; a refused one leaves the template byte for byte")
    func refusedAttemptsTeachNothing() throws {
        let template = try Self.enrolled()
        let before = template.encode()
        // The tap 60 px off on its own: a near miss the matcher refuses.
        let refused = Base.moved(Base.base, by: [(0, 0), (60, 0), (0, 0)])
        let (result, acceptance) = GestureLearning.accept(refused, by: template)
        #expect(!result.passed && acceptance == nil)
        #expect(template.encode() == before)
        let accepted = Base.moved(Base.base, by: [(2, 1), (1, -2), (2, 0)])
        let learned = try #require(Self.learned(template, accepted))
        #expect(learned.version == 4 && learned.learning?.logins == 1)
        #expect(learned.encode() != before)
    }

    @Test("a version-3 template verifies as before and migrates to version 4 on a success, its consensus kept as the enrolled one")
    func versionThreeMigrates() throws {
        let template = try Self.enrolled()
        #expect(template.version == 3)
        let decoded = try GestureTemplate.decode(template.encode())
        #expect(decoded == template && decoded.encode()[4] == 3)
        #expect(GestureMatcher.verify(decoded, Base.base).passed)
        let learned = try #require(Self.learned(decoded, Base.base))
        let state = try #require(learned.learning)
        #expect(learned.version == 4 && learned.encode()[4] == 4)
        #expect(state.logins == 1 && state.drawings == GestureLearning.assumedDrawings)
        #expect(state.enrolled == decoded.storedPoints)
        // The bounds hold the enrollment's (default factor) and the template's own spreads.
        #expect(state.placeFloor <= GestureConsensus.floors.place && state.placeCeiling >= GestureConsensus.ceilings.place)
        #expect(state.shiftFloor <= decoded.settings.shiftLimit && state.shiftCeiling >= decoded.settings.shiftLimit)
        let again = try GestureTemplate.decode(learned.encode())
        #expect(again == learned)
        #expect(GestureMatcher.verify(again, Base.base).passed)
        #expect(!GestureMatcher.verify(again, Base.moved(Base.base, by: [(0, 0), (60, 0), (0, 0)])).passed)
        // Learned again: the count goes on and the enrolled consensus stays.
        let twice = try #require(Self.learned(again, Base.base))
        #expect(twice.learning?.logins == 2 && twice.learning?.enrolled == state.enrolled)
    }

    @Test("the spreads never leave floor…ceiling and the consensus never leaves its bound, whatever is accepted")
    func boundsHold() throws {
        var random = SplitMix64(seed: 7)
        var template = try Self.enrolled()
        var learnedCount = 0
        for step in 0..<300 {
            // Wide attempts, each part off on its own, half of them pulling the tap one way.
            let pull = step % 2 == 0 ? 6.0 : 0
            let attempt = Base.moved(Base.base, by: [
                (random.gaussian(6), random.gaussian(6)), (pull + random.gaussian(6), random.gaussian(6)),
                (random.gaussian(6), random.gaussian(6)),
            ])
            guard let next = Self.learned(template, attempt) else { continue }
            learnedCount += 1
            let state = try #require(next.learning)
            #expect(next.settings.placeTolerance >= state.placeFloor - 1e-12 && next.settings.placeTolerance <= state.placeCeiling + 1e-12)
            #expect(next.settings.shiftLimit >= state.shiftFloor - 1e-12 && next.settings.shiftLimit <= state.shiftCeiling + 1e-12)
            for (index, spread) in next.spreads.enumerated() where next.parts[index].kind == .path {
                #expect(spread >= state.shapeFloor - 1e-6 && spread <= state.shapeCeilings[index] + 1e-6)
            }
            #expect(try GestureTemplate.decode(next.encode()) == next)
            // Each part's place after the common shift within √2 place ceilings of the enrolled
            // one (plus a milli-pixel of rounding).
            let now = next.storedPoints.map(Self.centroid)
            let then = state.enrolled.map(Self.centroid)
            var moves: [GestureUnitPoint] = []
            var shift = GestureUnitPoint(x: 0, y: 0)
            for (a, b) in zip(now, then) {
                moves.append(GestureUnitPoint(x: a.x - b.x, y: a.y - b.y))
                shift.x += (a.x - b.x) / 3
                shift.y += (a.y - b.y) / 3
            }
            #expect(GestureShape.distance(shift, GestureUnitPoint(x: 0, y: 0)) <= 2.squareRoot() * state.shiftCeiling + 1e-5)
            for move in moves {
                #expect(GestureShape.distance(move, shift) <= 2.squareRoot() * state.placeCeiling + 1e-5)
            }
            template = next
        }
        #expect(learnedCount > 100, "\(learnedCount) of 300 accepted")
        #expect(template.learning?.logins == learnedCount)
    }

    @Test("a hand that keeps pulling one part the same way moves the consensus up to its bound and no further")
    func aWalkStopsAtTheBound() throws {
        var template = try #require(Self.learned(try Self.enrolled(), Base.base))
        let enrolled = try #require(template.learning).enrolled
        // How far the consensus's tap lies right of the enrolled one, in pixels.
        func tapMove(_ template: GestureTemplate) -> Double {
            Double(template.storedPoints[1][0].x - enrolled[1][0].x) / 1000
        }
        var accepted = 0
        for _ in 0..<400 {
            // Always 8 px beyond where the consensus has the tap now: each is accepted and pulls.
            let attempt = Base.moved(Base.base, by: [(0, 0), (tapMove(template) + 8, 0), (0, 0)])
            guard let next = Self.learned(template, attempt) else { continue }
            template = next
            accepted += 1
        }
        let state = try #require(template.learning)
        // The tap's place (its move less the gesture's common move, in picture units) is held
        // at √2 × the place ceiling; without the bound it goes on growing (122 px here).
        let moves = zip(template.storedPoints.map(Self.centroid), enrolled.map(Self.centroid)).map {
            GestureUnitPoint(x: $0.x - $1.x, y: $0.y - $1.y)
        }
        let shift = GestureUnitPoint(x: moves.map { $0.x }.reduce(0, +) / 3, y: moves.map { $0.y }.reduce(0, +) / 3)
        let place = GestureShape.distance(moves[1], shift)
        let limit = 2.squareRoot() * state.placeCeiling
        #expect(accepted > 300, "\(accepted) of 400 accepted")
        #expect(place > 0.95 * limit && place <= limit + 1e-5, "place \(place) against \(limit)")
        #expect(tapMove(template) < 40, "\(tapMove(template)) px")
    }

    @Test("learning pairs points along the matcher's own alignment: the same cost, and a stroke drawn at another pace is paired with itself")
    func pairsFollowTheMatchersAlignment() throws {
        var random = SplitMix64(seed: 3)
        for _ in 0..<50 {
            let a = GestureShape.resample((0..<20).map { _ in GestureUnitPoint(x: random.uniform(0, 1), y: random.uniform(0, 0.75)) })
            let b = GestureShape.resample((0..<20).map { _ in GestureUnitPoint(x: random.uniform(0, 1), y: random.uniform(0, 0.75)) })
            let shift = GestureUnitPoint(x: random.gaussian(0.01), y: random.gaussian(0.01))
            let paired = try #require(GestureShape.warpedPairs(a, b, shift: shift))
            let cost = GestureShape.warpedMeanSquare(a, b, shift: shift, reversed: false)
            #expect(abs(paired.meanSquare - cost) <= 1e-12 * max(1, cost))
        }
        // A quarter circle, and the same with its first sixth cut off: index by index every
        // point lies beside another part of the arc; along the alignment, only the first.
        let arc = (0...240).map { t in GestureUnitPoint(x: 0.5 + 0.2 * cos(Double(t) / 480 * .pi), y: 0.4 + 0.2 * sin(Double(t) / 480 * .pi)) }
        let whole = GestureShape.resample(arc)
        let trimmed = GestureShape.resample(Array(arc.dropFirst(40)))
        let paired = try #require(GestureShape.warpedPairs(whole, trimmed, shift: GestureUnitPoint(x: 0, y: 0)))
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }
        let byIndex = mean(zip(whole, trimmed).map { GestureShape.distance($0, $1) })
        let alongAlignment = mean(zip(whole, paired.pairs).map { GestureShape.distance($0, $1) })
        #expect(alongAlignment < byIndex / 2, "\(alongAlignment) against \(byIndex)")
    }

    /// The centroid of stored milli-pixel points on a 1000-pixel picture, in picture units.
    static func centroid(_ points: [GestureMilliPoint]) -> GestureUnitPoint {
        GestureShape.centroid(points.map { GestureUnitPoint(x: Double($0.x) / 1e6, y: Double($0.y) / 1e6) })
    }

    @Test("a hand that drifts is followed: after its successes a drawing the enrolled template refuses is accepted")
    func driftIsFollowed() throws {
        let enrolled = try Self.enrolled()
        // The tap drifts 2 px a login to the right, the rest stays.
        var template = enrolled
        for step in 1...12 {
            let attempt = Base.moved(Base.base, by: [(0, 0), (2 * Double(step), 0), (0, 0)])
            template = try #require(Self.learned(template, attempt), "login \(step) refused")
        }
        let later = Base.moved(Base.base, by: [(0, 0), (30, 0), (0, 0)])
        #expect(!GestureMatcher.verify(enrolled, later).passed)
        #expect(GestureMatcher.verify(template, later).passed)
    }

    @Test("version-4 decoding refuses bounds out of order or range, and a missing enrolled point", arguments: [0, 1, 2])
    func badEncodings(kind: Int) throws {
        let learned = try #require(Self.learned(try Self.enrolled(), Base.base))
        var bytes = learned.encode()
        switch kind {
        case 0:
            // The shift floor above its ceiling.
            let ceiling = Array(bytes[53..<61])
            bytes.replaceSubrange(45..<53, with: ceiling.map { $0 } + [])
            bytes.replaceSubrange(53..<61, with: Array(0.001.bitPattern.bigEndianBytes))
            #expect(throws: GestureTemplateError.badSpread) { try GestureTemplate.decode(bytes) }
        case 1:
            // A place ceiling beyond the picture.
            bytes.replaceSubrange(69..<77, with: Array(2.0.bitPattern.bigEndianBytes))
            #expect(throws: GestureTemplateError.badSpread) { try GestureTemplate.decode(bytes) }
        default:
            bytes.removeLast(8)
            #expect(throws: GestureTemplateError.truncated) { try GestureTemplate.decode(bytes) }
        }
    }
}

extension UInt64 {
    fileprivate var bigEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (56 - 8 * UInt64($0))) } }
}
