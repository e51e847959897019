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
/// Another layer seals the bytes with authenticated encryption; the decoder still trusts
/// nothing and applies every check of `GestureTemplate.init`.
extension GestureTemplate {
    /// The first four bytes of every encoded template.
    public static let encodingMagic: [UInt8] = Array("PUFG".utf8)
    /// The encoding version `encode` writes and `decode` reads.
    public static let encodingVersion: UInt8 = 1
    /// The longest possible valid encoding: 16 parts of `maximumPointsPerPart` points.
    public static let maximumEncodedSize = 46 + GestureLimits.maximumParts * (3 + maximumPointsPerPart * 8)

    /// Encodes the template.
    public func encode() -> [UInt8] {
        var output = Self.encodingMagic
        output.append(Self.encodingVersion)
        append(UInt64(width.magnitude), byteCount: 4, to: &output)
        append(UInt64(height.magnitude), byteCount: 4, to: &output)
        for value in [parameters.raster, parameters.tolerance, parameters.minimumHitRatio, parameters.overflow] {
            append(value.bitPattern, byteCount: 8, to: &output)
        }
        output.append(UInt8(truncatingIfNeeded: storedPoints.count))
        for (part, points) in zip(parts, storedPoints) {
            output.append(part.kind == .tap ? 1 : 2)
            append(UInt64(points.count.magnitude), byteCount: 2, to: &output)
            for point in points {
                // Valid templates hold 0…10^8 here, well inside 4 bytes.
                append(UInt64(point.x.magnitude), byteCount: 4, to: &output)
                append(UInt64(point.y.magnitude), byteCount: 4, to: &output)
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
        guard try read(&reader, byteCount: 1) == UInt64(encodingVersion) else { throw .unsupportedVersion }
        let width = try readInt(&reader, byteCount: 4)
        let height = try readInt(&reader, byteCount: 4)
        let raster = Double(bitPattern: try read(&reader, byteCount: 8))
        let tolerance = Double(bitPattern: try read(&reader, byteCount: 8))
        let minimumHitRatio = Double(bitPattern: try read(&reader, byteCount: 8))
        let overflow = Double(bitPattern: try read(&reader, byteCount: 8))
        let parameters: GestureParameters
        do {
            parameters = try GestureParameters(raster: raster, tolerance: tolerance,
                                               minimumHitRatio: minimumHitRatio, overflow: overflow)
        } catch {
            throw .invalidParameters(error)
        }
        let partCount = try readInt(&reader, byteCount: 1)
        guard partCount >= 1, partCount <= GestureLimits.maximumParts else { throw .badPartCount }

        var parts: [GesturePart] = []
        for _ in 0..<partCount {
            let kind: GesturePartKind
            switch try read(&reader, byteCount: 1) {
            case 1: kind = .tap
            case 2: kind = .path
            default: throw .badPartKind
            }
            let pointCount = try readInt(&reader, byteCount: 2)
            var points: [GesturePoint] = []
            points.reserveCapacity(pointCount)
            for _ in 0..<pointCount {
                let x = try readInt(&reader, byteCount: 4)
                let y = try readInt(&reader, byteCount: 4)
                points.append(GesturePoint(x: GestureDecimal.pixels(milli: x), y: GestureDecimal.pixels(milli: y)))
            }
            parts.append(GesturePart(kind: kind, points: points))
        }
        guard reader.isAtEnd else { throw .trailingBytes }
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
