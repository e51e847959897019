/// The binary form of a template, version 1. All integers are big-endian.
///
///     offset  size  field
///          0     4  magic "PUFG"
///          4     1  version = 1
///          5     4  width in pixels
///          9     4  height in pixels
///         13     8  raster            (IEEE 754 binary64 bit pattern)
///         21     8  tolerance         (same)
///         29     8  minimum hit ratio (same)
///         37     8  overflow          (same)
///         45     1  part count, 1…16
///     then for each part:
///              1  kind: 1 = tap, 2 = path
///              2  point count
///              8  per point: x, y in thousandths of a pixel, 4 bytes each
///
/// Version 2 (`GestureRecognizer`) has the same frame with other fields:
///
///     offset  size  field
///          0     4  magic "PUFG"
///          4     1  version = 2
///          5     4  width in pixels
///          9     4  height in pixels
///         13     8  place tolerance   (IEEE 754 binary64 bit pattern)
///         21     8  shape tolerance   (same)
///         29     8  shift limit       (same)
///         37     8  overflow          (same)
///         45     1  part count, 1…16
///     then for each part:
///              1  kind: 1 = tap, 2 = path
///              4  learned spread in millionths of the longest side, 0…1,000,000
///              2  point count: 1 for a tap, 32 for a path (resampled along its length)
///              8  per point: x, y in thousandths of a pixel, 4 bytes each
///
/// Version 3 (`GestureConsensus`) has exactly version 2's layout with version = 3; the four
/// header numbers are the learned place spread, the shape cap, the learned shift spread and
/// the overflow, and each part's spread is its learned shape spread (0 for a tap).
///
/// Version 4 (`GestureLearning`) is version 3 with what learning from logins keeps:
///
///     offset  size  field
///          0     4  magic "PUFG"
///          4     1  version = 4
///          5    40  width, height and the four header numbers, as version 3
///         45     8  shift floor       (IEEE 754 binary64 bit pattern)
///         53     8  shift ceiling     (same)
///         61     8  place floor       (same)
///         69     8  place ceiling     (same)
///         77     8  shape floor       (same)
///         85     2  logins learned from, 0…65535
///         87     1  enrollment drawings, 1…8
///         88     1  part count, 1…16
///     then for each part:
///              1  kind: 1 = tap, 2 = path
///              4  learned shape spread in millionths of the longest side
///              4  shape ceiling in millionths of the longest side
///              2  point count: 1 for a tap, 32 for a path
///              8  per point: the consensus's x, y in thousandths of a pixel, 4 bytes each
///              8  per point: the enrolled consensus's x, y, the same way
///
/// Another layer seals the bytes with authenticated encryption; the decoder still trusts
/// nothing and applies every check of `GestureTemplate.init`.
extension GestureTemplate {
    /// The first four bytes of every encoded template.
    public static let encodingMagic: [UInt8] = Array("PUFG".utf8)
    /// The newest encoding version: `encode` writes a template's own version, `decode`
    /// reads 1 to 4. Login migrates an older template to this version after a success.
    public static let encodingVersion: UInt8 = 4
    /// The longest possible valid encoding: 16 parts of `maximumPointsPerPart` points.
    public static let maximumEncodedSize = 46 + GestureLimits.maximumParts * (3 + maximumPointsPerPart * 8)

    /// Encodes the template.
    public func encode() -> [UInt8] {
        var output = Self.encodingMagic
        output.append(version)
        append(UInt64(width.magnitude), byteCount: 4, to: &output)
        append(UInt64(height.magnitude), byteCount: 4, to: &output)
        let header = version == 1
            ? [parameters.raster, parameters.tolerance, parameters.minimumHitRatio, parameters.overflow]
            : [settings.placeTolerance, settings.shapeTolerance, settings.shiftLimit, settings.overflow]
        for value in header {
            append(value.bitPattern, byteCount: 8, to: &output)
        }
        let learning = version >= 4 ? self.learning : nil
        if let learning {
            for value in [learning.shiftFloor, learning.shiftCeiling, learning.placeFloor, learning.placeCeiling,
                          learning.shapeFloor] {
                append(value.bitPattern, byteCount: 8, to: &output)
            }
            append(UInt64(min(max(0, learning.logins), Int(UInt16.max)).magnitude), byteCount: 2, to: &output)
            append(UInt64(min(max(0, learning.drawings), Int(UInt8.max)).magnitude), byteCount: 1, to: &output)
        }
        func millionths(_ value: Double) -> UInt64 {
            UInt64(GestureRounding.nearest(value * 1_000_000).map { max(0, min(1_000_000, $0)) } ?? 0)
        }
        output.append(UInt8(truncatingIfNeeded: storedPoints.count))
        for (index, (part, points)) in zip(parts, storedPoints).enumerated() {
            output.append(part.kind == .tap ? 1 : 2)
            if version >= 2 {
                append(millionths(index < spreads.count ? spreads[index] : 0), byteCount: 4, to: &output)
            }
            if let learning {
                append(millionths(index < learning.shapeCeilings.count ? learning.shapeCeilings[index] : 0),
                       byteCount: 4, to: &output)
            }
            append(UInt64(points.count.magnitude), byteCount: 2, to: &output)
            var rows = [points]
            if let learning, index < learning.enrolled.count { rows.append(learning.enrolled[index]) }
            for row in rows {
                for point in row {
                    // Valid templates hold 0…10^8 here, well inside 4 bytes.
                    append(UInt64(point.x.magnitude), byteCount: 4, to: &output)
                    append(UInt64(point.y.magnitude), byteCount: 4, to: &output)
                }
            }
        }
        return output
    }

    /// Decodes and checks an encoded template; refuses anything `encode` would not write.
    public static func decode(_ bytes: some Collection<UInt8>) throws(GestureTemplateError) -> GestureTemplate {
        if let limit = bytes.index(bytes.startIndex, offsetBy: maximumEncodedSize, limitedBy: bytes.endIndex),
           limit != bytes.endIndex {
            throw .tooLarge
        }
        var reader = GestureByteReader(bytes)
        for byte in encodingMagic {
            guard let read = reader.peek() else { throw .truncated }
            guard read == byte else { throw .badMagic }
            reader.advance()
        }
        let version = try read(&reader, byteCount: 1)
        guard version >= 1, version <= 4 else { throw .unsupportedVersion }
        let width = try readInt(&reader, byteCount: 4)
        let height = try readInt(&reader, byteCount: 4)
        let first = Double(bitPattern: try read(&reader, byteCount: 8))
        let second = Double(bitPattern: try read(&reader, byteCount: 8))
        let third = Double(bitPattern: try read(&reader, byteCount: 8))
        let overflow = Double(bitPattern: try read(&reader, byteCount: 8))
        var parameters = GestureParameters.standard
        var settings = GestureRecognizerSettings.standard
        do {
            if version == 1 {
                parameters = try GestureParameters(raster: first, tolerance: second,
                                                   minimumHitRatio: third, overflow: overflow)
            } else {
                settings = try GestureRecognizerSettings(placeTolerance: first, shapeTolerance: second,
                                                         shiftLimit: third, overflow: overflow)
            }
        } catch {
            throw .invalidParameters(error)
        }
        var bounds: [Double] = []
        var logins = 0, drawings = 0
        if version >= 4 {
            for _ in 0..<5 { bounds.append(Double(bitPattern: try read(&reader, byteCount: 8))) }
            logins = try readInt(&reader, byteCount: 2)
            drawings = try readInt(&reader, byteCount: 1)
        }
        let partCount = try readInt(&reader, byteCount: 1)
        guard partCount >= 1, partCount <= GestureLimits.maximumParts else { throw .badPartCount }

        var parts: [GesturePart] = []
        var spreads: [Double] = []
        var shapeCeilings: [Double] = []
        var enrolled: [[GesturePoint]] = []
        for _ in 0..<partCount {
            let kind: GesturePartKind
            switch try read(&reader, byteCount: 1) {
            case 1: kind = .tap
            case 2: kind = .path
            default: throw .badPartKind
            }
            if version >= 2 {
                let millionths = try readInt(&reader, byteCount: 4)
                guard millionths <= 1_000_000 else { throw .badSpread }
                spreads.append(Double(millionths) / 1_000_000)
            }
            if version >= 4 {
                let millionths = try readInt(&reader, byteCount: 4)
                guard millionths <= 1_000_000 else { throw .badSpread }
                shapeCeilings.append(Double(millionths) / 1_000_000)
            }
            let pointCount = try readInt(&reader, byteCount: 2)
            var rows: [[GesturePoint]] = []
            for _ in 0..<(version >= 4 ? 2 : 1) {
                var points: [GesturePoint] = []
                points.reserveCapacity(pointCount)
                for _ in 0..<pointCount {
                    let x = try readInt(&reader, byteCount: 4)
                    let y = try readInt(&reader, byteCount: 4)
                    points.append(GesturePoint(x: GestureDecimal.pixels(milli: x), y: GestureDecimal.pixels(milli: y)))
                }
                rows.append(points)
            }
            parts.append(GesturePart(kind: kind, points: rows.first ?? []))
            if version >= 4 { enrolled.append(rows.last ?? []) }
        }
        guard reader.isAtEnd else { throw .trailingBytes }
        if version >= 4, bounds.count == 5 {
            return try GestureTemplate(width: width, height: height, settings: settings, parts: parts, spreads: spreads,
                                       enrolled: enrolled, logins: logins, drawings: drawings,
                                       bounds: (bounds[0], bounds[1], bounds[2], bounds[3], bounds[4], shapeCeilings))
        }
        if version >= 2 {
            return try GestureTemplate(width: width, height: height, settings: settings, parts: parts, spreads: spreads,
                                       version: UInt8(truncatingIfNeeded: version))
        }
        return try GestureTemplate(width: width, height: height, parameters: parameters, parts: parts)
    }

    private func append(_ value: UInt64, byteCount: Int, to output: inout [UInt8]) {
        for index in stride(from: byteCount - 1, through: 0, by: -1) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(index * 8)))
        }
    }

    private static func read<Bytes>(_ reader: inout GestureByteReader<Bytes>,
                                    byteCount: Int) throws(GestureTemplateError) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<byteCount {
            guard let byte = reader.peek() else { throw .truncated }
            value = value << 8 | UInt64(byte)
            reader.advance()
        }
        return value
    }

    /// Reads at most four bytes, which always fit an `Int`.
    private static func readInt<Bytes>(_ reader: inout GestureByteReader<Bytes>,
                                       byteCount: Int) throws(GestureTemplateError) -> Int {
        Int(truncatingIfNeeded: try read(&reader, byteCount: min(byteCount, 4)))
    }
}
