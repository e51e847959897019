import Testing
import PuffCore
import PuffSimulation

@Suite("Gesture template encoding")
struct GestureTemplateTests {
    static func templates() throws -> [GestureTemplate] {
        [
            try GestureEnroller.build(from: Draw.genuine),
            try GestureEnroller.build(from: Draw.scaled(Draw.genuine, by: 2)),
            try GestureEnroller.build(from: Draw.genuine, parameters: GestureParameters(
                raster: 0.02, tolerance: 0.05, minimumHitRatio: 0.8, overflow: 1.25)),
            try GestureTemplate(width: 1, height: 1, parameters: .standard, parts: [
                Draw.tap(0, 0), Draw.tap(1, 1), Draw.path([GesturePoint(x: 0.5, y: 0.5)]),
            ]),
        ]
    }

    @Test("decode(encode(t)) == t and encode(decode(e)) == e")
    func roundTrip() throws {
        for template in try Self.templates() {
            let encoded = template.encode()
            let decoded = try GestureTemplate.decode(encoded)
            #expect(decoded == template)
            #expect(decoded.parts == template.parts)
            #expect(decoded.parameters == template.parameters)
            #expect(decoded.encode() == encoded)
            #expect(GestureMatcher.verify(decoded, Draw.genuine).passed == GestureMatcher.verify(template, Draw.genuine).passed)
        }
    }

    @Test("the encoding is compact: 46 bytes, 3 per part, 8 per point")
    func size() throws {
        let template = try GestureEnroller.build(from: Draw.genuine)
        let points = template.parts.reduce(0) { $0 + $1.points.count }
        #expect(template.encode().count == 46 + 3 * template.parts.count + 8 * points)
    }

    @Test("every truncation is refused")
    func truncations() throws {
        let encoded = try GestureEnroller.build(from: Draw.genuine).encode()
        for length in 0..<encoded.count {
            #expect(throws: GestureTemplateError.truncated) { try GestureTemplate.decode(encoded.prefix(length)) }
        }
    }

    /// Writes an encoding by hand, so that each field can be wrong on its own.
    static func encoding(magic: String = "PUFG", version: UInt8 = 1, width: UInt32 = 1000, height: UInt32 = 750,
                         parameters: [Double] = [0.03, 0.045, 0.7, 1.4], partCount: Int? = nil,
                         parts: [(UInt8, [(UInt32, UInt32)])], pointCount: Int? = nil) -> [UInt8] {
        var bytes = Array(magic.utf8) + [version]
        func put(_ value: UInt64, _ count: Int) {
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
        }
        put(UInt64(width), 4)
        put(UInt64(height), 4)
        for value in parameters { put(value.bitPattern, 8) }
        bytes.append(UInt8(partCount ?? parts.count))
        for (kind, points) in parts {
            bytes.append(kind)
            put(UInt64(pointCount ?? points.count), 2)
            for (x, y) in points {
                put(UInt64(x), 4)
                put(UInt64(y), 4)
            }
        }
        return bytes
    }

    static let tap: (UInt8, [(UInt32, UInt32)]) = (1, [(500_000, 400_000)])
    static let path: (UInt8, [(UInt32, UInt32)]) = (2, [(100_000, 100_000), (130_000, 100_000), (160_000, 100_000)])

    static let rejections: [([UInt8], GestureTemplateError)] = [
        ([], .truncated),
        (encoding(magic: "PUFH", parts: [tap, path]), .badMagic),
        (encoding(magic: "XUFG", parts: [tap, path]), .badMagic),
        (encoding(version: 0, parts: [tap, path]), .unsupportedVersion),
        (encoding(version: 5, parts: [tap, path]), .unsupportedVersion),
        (encoding(width: 0, parts: [tap, path]), .badPictureSize),
        (encoding(height: 100_001, parts: [tap, path]), .badPictureSize),
        (encoding(parameters: [.nan, 0.045, 0.7, 1.4], parts: [tap, path]), .invalidParameters(.rasterOutOfRange)),
        (encoding(parameters: [0.03, 0.2, 0.7, 1.4], parts: [tap, path]), .invalidParameters(.toleranceOutOfRange)),
        (encoding(parameters: [0.03, 0.045, 0, 1.4], parts: [tap, path]), .invalidParameters(.hitRatioOutOfRange)),
        (encoding(parameters: [0.03, 0.045, 0.7, -.infinity], parts: [tap, path]), .invalidParameters(.overflowOutOfRange)),
        (encoding(parts: []), .badPartCount),
        (encoding(partCount: 17, parts: [tap]), .badPartCount),
        (encoding(parts: [(0, [(1, 1)])]), .badPartKind),
        (encoding(parts: [(3, [(1, 1)])]), .badPartKind),
        (encoding(parts: [(1, [(1, 1), (90_000, 90_000)])]), .badPointCount),
        (encoding(parts: [(1, [])]), .badPointCount),
        (encoding(parts: [(2, [])]), .badPointCount),
        (encoding(parts: [(1, [(1_000_001, 0)])]), .badCoordinate),
        (encoding(parts: [(1, [(0, 750_001)])]), .badCoordinate),
        (encoding(parts: [(1, [(UInt32.max, 0)])]), .badCoordinate),
        (encoding(parts: [(2, [(100_000, 100_000), (129_999, 100_000)])]), .overlappingRaster),
        (encoding(parts: [(2, [(100_000, 100_000), (200_000, 100_000), (110_000, 110_000)])]), .overlappingRaster),
        (encoding(parts: [tap, path]) + [0], .trailingBytes),
        (encoding(parts: [tap, path], pointCount: 3), .truncated),
    ]

    @Test("refuses each malformed encoding with its own error", arguments: rejections)
    func rejects(bytes: [UInt8], expected: GestureTemplateError) {
        #expect(throws: expected) { try GestureTemplate.decode(bytes) }
    }

    @Test("an encoding longer than any valid template is refused before it is read")
    func tooLarge() {
        let bytes = [UInt8](repeating: 0, count: GestureTemplate.maximumEncodedSize + 1)
        #expect(throws: GestureTemplateError.tooLarge) { try GestureTemplate.decode(bytes) }
        #expect(throws: GestureTemplateError.badMagic) { try GestureTemplate.decode(bytes.dropLast()) }
    }

    @Test("the hand-written encoding of a valid template decodes")
    func handWritten() throws {
        let template = try GestureTemplate.decode(Self.encoding(parts: [Self.tap, Self.path]))
        #expect(template.parts == [Draw.tap(500, 400), Draw.path(Draw.line(100, 100, 160, 100, samples: 3))])
        // Touching raster squares are a valid raster.
        _ = try GestureTemplate.decode(Self.encoding(parts: [(2, [(100_000, 100_000), (130_000, 100_000)])]))
    }

    @Test("random corruption never traps and never yields a template that re-encodes differently")
    func corruption() throws {
        let encoded = try GestureEnroller.build(from: Draw.genuine).encode()
        var random = SplitMix64(seed: 2024)
        var accepted = 0
        for _ in 0..<5000 {
            var bytes = encoded
            for _ in 0...(random.next() % 4) {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] = UInt8(truncatingIfNeeded: random.next())
            }
            if let template = try? GestureTemplate.decode(bytes) {
                accepted += 1
                #expect(template.encode() == bytes)
            }
        }
        for _ in 0..<2000 {
            let bytes = Array("PUFG".utf8) + [1] + (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = try? GestureTemplate.decode(bytes)
        }
        #expect(accepted < 5000)
    }

    @Test("the public initializer applies the same rules", arguments: [
        ([Draw.tap(1, 1), Draw.tap(2, 2)], nil),
        ([], .badPartCount),
        (Array(repeating: Draw.tap(1, 1), count: 17), .badPartCount),
        ([GesturePart(kind: .tap, points: [])], .badPointCount),
        ([Draw.path([])], .badPointCount),
        ([Draw.tap(.nan, 1)], .badCoordinate),
        ([Draw.tap(-1, 1)], .badCoordinate),
        ([Draw.path([GesturePoint(x: 10, y: 10), GesturePoint(x: 20, y: 20)])], .overlappingRaster),
    ] as [([GesturePart], GestureTemplateError?)])
    func initializerRules(parts: [GesturePart], expected: GestureTemplateError?) {
        do {
            _ = try GestureTemplate(width: 1000, height: 750, parameters: .standard, parts: parts)
            #expect(expected == nil)
        } catch {
            #expect(error == expected)
        }
    }

    @Test("coordinates are rounded to thousandths of a pixel")
    func rounding() throws {
        let template = try GestureTemplate(width: 10, height: 10, parameters: .standard, parts: [
            Draw.tap(1.23456, 9.9999),
        ])
        #expect(template.parts == [Draw.tap(1.235, 10)])
    }
}
