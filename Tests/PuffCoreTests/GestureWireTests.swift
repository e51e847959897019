import Testing
import PuffCore
import PuffSimulation

@Suite("Gesture wire format")
struct GestureWireTests {
    static let head = "puff-gesture:1:10x10:"

    @Test("parses the example from the format description")
    func parsesExample() throws {
        let text = "puff-gesture:1:1000x750:p 100,120 104,126 111,131;t 500,400;p 800,100 800,600"
        let gesture = try GestureWire.parse(Array(text.utf8))
        #expect(gesture == Gesture(width: 1000, height: 750, parts: [
            Draw.path([GesturePoint(x: 100, y: 120), GesturePoint(x: 104, y: 126), GesturePoint(x: 111, y: 131)]),
            Draw.tap(500, 400),
            Draw.path([GesturePoint(x: 800, y: 100), GesturePoint(x: 800, y: 600)]),
        ]))
        #expect(String(decoding: GestureWire.serialize(gesture), as: UTF8.self) == text)
    }

    static let rejections: [(String, GestureFormatError)] = [
        ("\(head)t 1,1\n", .nonPrintableByte),
        ("\(head)t 1,1\r", .nonPrintableByte),
        ("\(head)t\t1,1", .nonPrintableByte),
        ("\(head)t 1,1\u{7F}", .nonPrintableByte),
        ("\(head)t 1,\u{E9}", .nonPrintableByte),
        ("\u{0}", .nonPrintableByte),
        ("", .notAGesture),
        ("hello", .notAGesture),
        ("puff-gesture", .notAGesture),
        ("PUFF-GESTURE:1:10x10:t 1,1", .notAGesture),
        (" puff-gesture:1:10x10:t 1,1", .notAGesture),
        ("puff-gesture:", .unsupportedVersion),
        ("puff-gesture::10x10:t 1,1", .unsupportedVersion),
        ("puff-gesture:3:10x10:t 1,1", .unsupportedVersion),
        ("puff-gesture:02:10x10:2x2:t 1,1", .unsupportedVersion),
        ("puff-gesture:2:10x10:t 1,1", .malformedNumber),           // version 2 needs the cell
        ("puff-gesture:2:10x10:", .malformedNumber),
        ("puff-gesture:2:10x10:2x2", .badResolution),
        ("puff-gesture:2:10x10:2,2:t 1,1", .malformedNumber),
        ("puff-gesture:2:10x10:2x:t 1,1", .malformedNumber),
        ("puff-gesture:2:10x10:x2:t 1,1", .malformedNumber),
        ("puff-gesture:2:10x10:0x2:t 1,1", .badResolution),
        ("puff-gesture:2:10x10:2x0.0001:t 1,1", .badResolution),    // rounds to 0
        ("puff-gesture:2:10x10:10.001x2:t 1,1", .badResolution),    // wider than the picture
        ("puff-gesture:2:10x10:2x10.5:t 1,1", .badResolution),
        ("puff-gesture:2:10x10:-2x2:t 1,1", .malformedNumber),
        ("puff-gesture:2:10x10:2x2x2:t 1,1", .malformedNumber),
        ("puff-gesture:2:10x10:1234567890123x2:t 1,1", .numberTooLong),
        ("puff-gesture:2:10x10:2x2;t 1,1", .badResolution),
        ("puff-gesture:01:10x10:t 1,1", .unsupportedVersion),
        ("puff-gesture:1.0:10x10:t 1,1", .unsupportedVersion),
        ("puff-gesture:12:10x10:t 1,1", .unsupportedVersion),
        ("puff-gesture:1", .badSize),
        ("puff-gesture:1:", .badSize),
        ("puff-gesture:1:0x10:t 0,0", .badSize),
        ("puff-gesture:1:10x0:t 0,0", .badSize),
        ("puff-gesture:1:100001x10:t 0,0", .badSize),
        ("puff-gesture:1:10x100001:t 0,0", .badSize),
        ("puff-gesture:1:1000000x10:t 0,0", .badSize),
        ("puff-gesture:1:10X10:t 0,0", .badSize),
        ("puff-gesture:1:x10:t 0,0", .badSize),
        ("puff-gesture:1:10x:t 0,0", .badSize),
        ("puff-gesture:1:10x10", .badSize),
        ("puff-gesture:1:10x10;t 0,0", .badSize),
        ("puff-gesture:1:-10x10:t 0,0", .badSize),
        ("puff-gesture:1:10.5x10:t 0,0", .badSize),
        (head, .noParts),
        ("\(head)t 1,1;;t 1,1", .emptyPart),
        ("\(head)t 1,1;", .emptyPart),
        ("\(head);t 1,1", .emptyPart),
        ("\(head)x 1,1", .unknownKind),
        ("\(head)T 1,1", .unknownKind),
        ("\(head)tp 1,1", .unknownKind),
        ("\(head)1,1", .unknownKind),
        ("\(head)t  1,1", .misplacedSpace),
        ("\(head)t 1,1 ", .misplacedSpace),
        ("\(head)p 1,1  2,2", .misplacedSpace),
        ("\(head) t 1,1", .misplacedSpace),
        ("\(head)t 1,1 ;t 1,1", .misplacedSpace),
        ("\(head)t 1,1; t 1,1", .misplacedSpace),
        ("\(head)t -1,1", .malformedNumber),
        ("\(head)t +1,1", .malformedNumber),
        ("\(head)t 1e1,1", .malformedNumber),
        ("\(head)t 0x1,1", .malformedNumber),
        ("\(head)t 1.,1", .malformedNumber),
        ("\(head)t .5,1", .malformedNumber),
        ("\(head)t 1..2,1", .malformedNumber),
        ("\(head)t 1.2.3,1", .malformedNumber),
        ("\(head)t nan,1", .malformedNumber),
        ("\(head)t inf,1", .malformedNumber),
        ("\(head)t ,1", .malformedNumber),
        ("\(head)t 1,", .malformedNumber),
        ("\(head)t 1,2x", .malformedNumber),
        ("\(head)t 1,1_0", .malformedNumber),
        ("\(head)t 1.00000000000,1", .numberTooLong),      // 13 characters
        ("\(head)t 0000000000001,1", .numberTooLong),
        ("\(head)t 1", .malformedPoint),
        ("\(head)t 1 2", .malformedPoint),
        ("\(head)t 1;2", .malformedPoint),
        ("\(head)t 1,2,3", .trailingGarbage),
        ("\(head)p 1,2 3,4,5", .trailingGarbage),
        ("\(head)t", .wrongTapPointCount),
        ("\(head)t;t 1,1", .wrongTapPointCount),
        ("\(head)t 1,1 2,2", .wrongTapPointCount),
        ("\(head)p", .pathTooShort),
        ("\(head)p 1,1", .pathTooShort),
        ("\(head)p 1,1;t 1,1", .pathTooShort),
        ("\(head)t 10.001,0", .coordinateOutsidePicture),
        ("\(head)t 0,10.001", .coordinateOutsidePicture),
        ("\(head)t 11,5", .coordinateOutsidePicture),
        ("\(head)p 1,1 2,2 5,100", .coordinateOutsidePicture),
        ("puff-gesture:1:20x10:t 15,15", .coordinateOutsidePicture),
    ]

    @Test("refuses each malformed message with its own error", arguments: rejections)
    func rejects(text: String, expected: GestureFormatError) {
        #expect(throws: expected) { try GestureWire.parse(Array(text.utf8)) }
    }

    static let acceptances: [String] = [
        "\(head)t 0,0",
        "\(head)t 10,10",                         // the far edge is inside
        "\(head)t 10.0004,0",                     // rounds to 10.000 before the range check
        "\(head)t 1.0000000000,1",                // 12 characters
        "\(head)t 000000000001,1",
        "\(head)p 1,1 1,1",                       // a repeated point is still a path
        "puff-gesture:1:100000x100000:t 100000,100000",
        "puff-gesture:1:1x1:t 1,1",
        "puff-gesture:1:000010x10:t 1,1",
        "puff-gesture:2:10x10:10x10:t 1,1",       // a cell as large as the picture
        "puff-gesture:2:10x10:0.001x0.001:p 1,1 2,2",
    ]

    @Test("version 2 declares the input's cell; serialize writes it back, and version 1 without one")
    func resolution() throws {
        let text = "puff-gesture:2:1000x750:13.889x27.778:p 6.944,13.889 20.833,13.889;t 493.056,402.778"
        let gesture = try GestureWire.parse(Array(text.utf8))
        #expect(gesture.resolution == GestureResolution(width: 13.889, height: 27.778))
        #expect(gesture.parts.count == 2)
        #expect(String(decoding: GestureWire.serialize(gesture), as: UTF8.self) == text)
        var plain = gesture
        plain.resolution = nil
        #expect(String(decoding: GestureWire.serialize(plain), as: UTF8.self).hasPrefix("puff-gesture:1:1000x750:p "))
        var wrong = gesture
        wrong.resolution = GestureResolution(width: 1001, height: 1)
        #expect(throws: GestureFormatError.badResolution) { try wrong.validate() }
    }

    @Test("accepts messages at the edges of the rules", arguments: acceptances)
    func accepts(text: String) throws {
        _ = try GestureWire.parse(Array(text.utf8))
    }

    @Test("the message length limit: exactly 65536 bytes parses, one more is refused")
    func lengthLimit() throws {
        let exact = Self.message(length: GestureLimits.maximumWireBytes)
        #expect(exact.count == 65536)
        let gesture = try GestureWire.parse(exact)
        #expect(gesture.parts.count == 4)
        #expect(throws: GestureFormatError.inputTooLong) { try GestureWire.parse(exact + Array("5".utf8)) }
        #expect(throws: GestureFormatError.inputTooLong) {
            try GestureWire.parse([UInt8](repeating: 0, count: 1 << 20))
        }
    }

    @Test("the part limit: 16 parts parse, 17 are refused", arguments: [(16, true), (17, false)])
    func partLimit(count: Int, accepted: Bool) {
        let text = Self.head + Array(repeating: "t 1,1", count: count).joined(separator: ";")
        #expect((try? GestureWire.parse(Array(text.utf8)))?.parts.count == (accepted ? count : nil))
        if !accepted {
            #expect(throws: GestureFormatError.tooManyParts) { try GestureWire.parse(Array(text.utf8)) }
        }
    }

    @Test("the point limit: 4096 points in a part parse, 4097 are refused", arguments: [(4096, true), (4097, false)])
    func pointLimit(count: Int, accepted: Bool) {
        let text = Self.head + "p " + Array(repeating: "1,1", count: count).joined(separator: " ")
        #expect((try? GestureWire.parse(Array(text.utf8)))?.parts.first?.points.count == (accepted ? count : nil))
        if !accepted {
            #expect(throws: GestureFormatError.tooManyPoints) { try GestureWire.parse(Array(text.utf8)) }
        }
    }

    @Test("numbers are read as decimals and rounded to thousandths", arguments: [
        ("0", 0.0), ("7", 7.0), ("12.5", 12.5), ("0.1", 0.1), ("999.999", 999.999),
        ("1.2344", 1.234), ("1.2345", 1.235), ("1.9996", 2.0), ("007.500", 7.5), ("0.0005", 0.001),
    ] as [(String, Double)])
    func numbers(text: String, value: Double) throws {
        let gesture = try GestureWire.parse(Array("puff-gesture:1:1000x1000:t \(text),0".utf8))
        #expect(gesture.parts.first?.points.first?.x == value)
    }

    static let canonicalForms: [(String, String)] = [
        ("\(head)t 007.500,1.0", "\(head)t 7.5,1"),
        ("\(head)t 1.23456,2.0000", "\(head)t 1.235,2"),
        ("\(head)t 1.9996,0.0004", "\(head)t 2,0"),
        ("\(head)p 0.10,0.120 9.999,9", "\(head)p 0.1,0.12 9.999,9"),
        ("puff-gesture:1:0010x010:t 1,1", "\(head)t 1,1"),
        ("\(head)t 10.0004,0", "\(head)t 10,0"),
    ]

    @Test("serialize(parse(m)) is canonical and stable", arguments: canonicalForms)
    func canonicalForm(text: String, canonical: String) throws {
        let gesture = try GestureWire.parse(Array(text.utf8))
        let written = GestureWire.serialize(gesture)
        #expect(String(decoding: written, as: UTF8.self) == canonical)
        #expect(try GestureWire.parse(written) == gesture)
        #expect(GestureWire.serialize(try GestureWire.parse(written)) == written)
    }

    static let roundTrips: [Gesture] = [
        Draw.genuine,
        Gesture(width: 1, height: 1, parts: [Draw.tap(0, 0), Draw.tap(1, 1)]),
        Gesture(width: 100_000, height: 3, parts: [
            Draw.path([GesturePoint(x: 99_999.999, y: 2.5), GesturePoint(x: 0.001, y: 0.125)]),
        ]),
        Gesture(width: 640, height: 480, parts: (0..<16).map { Draw.tap(Double($0) * 40, 479.5) }),
        Draw.jittered(Draw.genuine, amplitude: 0, seed: 1),
    ]

    @Test("parse(serialize(g)) == g", arguments: roundTrips)
    func roundTrip(gesture: Gesture) throws {
        // The genuine fixture has irrational circle points: compare after one trip.
        let once = try GestureWire.parse(GestureWire.serialize(gesture))
        #expect(try GestureWire.parse(GestureWire.serialize(once)) == once)
        for (a, b) in zip(gesture.parts.flatMap(\.points), once.parts.flatMap(\.points)) {
            #expect(abs(a.x - b.x) <= 0.0005 && abs(a.y - b.y) <= 0.0005)
        }
    }

    @Test("gestures on exact thousandths round-trip exactly")
    func exactRoundTrip() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<200 {
            let points = (0..<5).map { _ in
                GesturePoint(x: Double(Int(random.uniform(0, 1_000_001))) / 1000,
                             y: Double(Int(random.uniform(0, 750_001))) / 1000)
            }
            let gesture = Gesture(width: 1000, height: 750, parts: [Draw.path(points), Draw.tap(points[0].x, points[0].y)])
            #expect(try GestureWire.parse(GestureWire.serialize(gesture)) == gesture)
        }
    }

    @Test("invalid gestures are written without repair, so they fail to parse", arguments: [
        (Gesture(width: 10, height: 10, parts: [Draw.tap(.nan, 1)]), GestureFormatError.malformedNumber),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(-1, 1)]), .malformedNumber),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(11, 1)]), .coordinateOutsidePicture),
        (Gesture(width: 0, height: 10, parts: [Draw.tap(0, 0)]), .badSize),
        (Gesture(width: 10, height: 10, parts: []), .noParts),
    ])
    func invalidSerialization(gesture: Gesture, expected: GestureFormatError) {
        #expect(throws: expected) { try GestureWire.parse(GestureWire.serialize(gesture)) }
    }

    @Test("parses from any byte collection and from raw memory")
    func inputForms() throws {
        let text = Array("puff-gesture:1:1000x750:p 100,120 104,126;t 500,400".utf8)
        let expected = try GestureWire.parse(text)
        // A lazy view has no contiguous storage, so it takes the generic path.
        #expect(try GestureWire.parse(text.lazy.map { $0 }) == expected)
        #expect(try GestureWire.parse(text[...]) == expected)
        #expect(try GestureWire.parse("puff-gesture:1:1000x750:p 100,120 104,126;t 500,400".utf8) == expected)
        let fromRaw = try text.withUnsafeBytes { buffer throws(GestureFormatError) in try GestureWire.parse(buffer) }
        #expect(fromRaw == expected)
        let tooLong = [UInt8](repeating: 0x41, count: 65537)
        #expect(throws: GestureFormatError.inputTooLong) {
            try GestureWire.parse(tooLong.lazy.map { $0 })
        }
    }

    @Test("random edits never trap, and whatever parses round-trips")
    func mutations() throws {
        let valid = Array("puff-gesture:1:1000x750:p 100,120 104.5,126 111,131;t 500,400;p 800,100 800,600".utf8)
        let alphabet = Array("0123456789.,; tpx:-e\n".utf8) + [0, 0x7F, 0xFF]
        var random = SplitMix64(seed: 1)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = valid
            for _ in 0...(random.next() % 3) {
                let index = Int(random.next() % UInt64(bytes.count))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 3 {
                case 0: bytes[index] = byte
                case 1: bytes.insert(byte, at: index)
                default: if bytes.count > 1 { bytes.remove(at: index) }
                }
            }
            guard let gesture = try? GestureWire.parse(bytes) else { continue }
            accepted += 1
            try gesture.validate()
            #expect(try GestureWire.parse(GestureWire.serialize(gesture)) == gesture)
        }
        #expect(accepted > 0 && accepted < 20_000)
    }

    @Test("the parsed size is compared by the caller")
    func requireSize() throws {
        let gesture = try GestureWire.parse(Array("\(Self.head)t 1,1".utf8))
        try gesture.requireSize(width: 10, height: 10)
        #expect(throws: GestureFormatError.pictureSizeMismatch) { try gesture.requireSize(width: 20, height: 10) }
        #expect(throws: GestureFormatError.pictureSizeMismatch) { try gesture.requireSize(width: 10, height: 11) }
    }

    @Test("validate applies the structural rules to gestures built in code", arguments: [
        (Gesture(width: 10, height: 10, parts: [Draw.tap(1, 1)]), nil),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(10, 10)]), nil),
        (Gesture(width: 0, height: 10, parts: [Draw.tap(0, 0)]), .badSize),
        (Gesture(width: 10, height: 100_001, parts: [Draw.tap(0, 0)]), .badSize),
        (Gesture(width: 10, height: 10, parts: []), .noParts),
        (Gesture(width: 10, height: 10, parts: Array(repeating: Draw.tap(1, 1), count: 17)), .tooManyParts),
        (Gesture(width: 10, height: 10, parts: [GesturePart(kind: .tap, points: [])]), .wrongTapPointCount),
        (Gesture(width: 10, height: 10, parts: [Draw.path([GesturePoint(x: 1, y: 1)])]), .pathTooShort),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(.nan, 1)]), .nonFiniteCoordinate),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(1, .infinity)]), .nonFiniteCoordinate),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(-0.001, 1)]), .coordinateOutsidePicture),
        (Gesture(width: 10, height: 10, parts: [Draw.tap(1, 10.001)]), .coordinateOutsidePicture),
    ] as [(Gesture, GestureFormatError?)])
    func validation(gesture: Gesture, expected: GestureFormatError?) {
        do {
            try gesture.validate()
            #expect(expected == nil)
        } catch {
            #expect(error == expected)
        }
    }

    /// A valid message of exactly `length` bytes made of paths on a 1000 × 1000 picture.
    static func message(length: Int) -> [UInt8] {
        var text = "puff-gesture:1:1000x1000:"
        var parts: [String] = []
        var remaining = length - text.utf8.count
        while remaining > 0 {
            if !parts.isEmpty { remaining -= 1 }
            // A part of n points "1,1" is 4n + 1 bytes; the first x absorbs the remainder.
            let points = min(GestureLimits.maximumWirePointsPerPart, (remaining - 1) / 4)
            let extra = remaining - (4 * points + 1)
            let pad = extra <= 3 ? extra : 0
            let first = ["1", "11", "1.0", "1.00"][pad] + ",1"
            parts.append((["p " + first] + Array(repeating: "1,1", count: points - 1)).joined(separator: " "))
            remaining -= 4 * points + 1 + pad
        }
        text += parts.joined(separator: ";")
        return Array(text.utf8)
    }
}
