/// The text form of a gesture, as a helper sends it in the PAM conversation reply.
///
/// One line of printable ASCII:
///
///     puff-gesture:1:<W>x<H>:<part>;<part>;...
///     part   = kind " " point *( " " point )      ; single spaces only
///     kind   = "t" (tap, exactly one point) / "p" (path, two or more points)
///     point  = number "," number                 ; picture pixels, 0…W and 0…H inclusive
///     number = 1*DIGIT [ "." 1*DIGIT ]           ; at most 12 characters
///
/// Example: `puff-gesture:1:1000x750:p 100,120 104,126 111,131;t 500,400;p 800,100 800,600`.
///
/// Coordinates are rounded to the nearest thousandth of a pixel (halves up) before the range
/// check, so `1000.0004` on a 1000-pixel side is inside. The edge itself (x = W) is inside:
/// a helper scaling a touch on the last pixel row may land exactly on it.
///
/// Version 2 adds one field after the size, the input's resolution (`GestureResolution`): the
/// size of the cell a point may lie anywhere in, in picture pixels, as two numbers of the
/// same grammar as coordinates, each greater than 0 and at most the picture's side:
///
///     puff-gesture:2:<W>x<H>:<cell width>x<cell height>:<part>;<part>;...
///
/// Example: `puff-gesture:2:1000x750:13.889x27.778:p 6.944,13.889 20.833,13.889;t 500,402.778`.
///
/// Compatibility: later versions may add optional fields, under a new version number; version
/// 1 and 2 messages must stay accepted, and this parser stays strict about both so a message
/// has exactly one reading.
public enum GestureWire {
    /// The bytes every gesture message starts with.
    public static let prefix: [UInt8] = Array("puff-gesture:".utf8)
    /// The version of a message without a declared resolution; the parser reads it and 2.
    public static let version = 1
    /// The version of a message that declares its input's resolution.
    public static let resolutionVersion = 2

    /// Parses a gesture message without copying it. Checks run in this order: length, printable
    /// bytes, prefix, version, picture size, then each part left to right.
    ///
    /// The parser does not know the enrolled picture; compare with `Gesture.requireSize`.
    public static func parse(_ bytes: some Collection<UInt8>) throws(GestureFormatError) -> Gesture {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(GestureFormatError) -> Gesture in try parseBytes(buffer) }
        }
        if let contiguous { return try contiguous.get() }
        return try parseBytes(bytes)
    }

    /// Parses a gesture message held in an array.
    public static func parse(_ bytes: [UInt8]) throws(GestureFormatError) -> Gesture {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(GestureFormatError) -> Gesture in try parseBytes(buffer) }
        }
        return try result.get()
    }

    /// Parses a gesture message held in raw memory, such as a wiped secret buffer.
    public static func parse(_ buffer: UnsafeRawBufferPointer) throws(GestureFormatError) -> Gesture {
        try parseBytes(buffer)
    }

    /// Writes the canonical message for `gesture`: integers without a fraction, fractions
    /// with at most three decimals and no trailing zeros, single spaces; version 2 with the
    /// resolution when the gesture declares one, else version 1.
    ///
    /// For every message `m` the parser accepts, `serialize(parse(m))` is canonical and parses
    /// to the same gesture. A gesture that fails `validate()` is written without repair, so the
    /// result fails to parse: a negative coordinate keeps its sign and a non-finite one is
    /// written as `nan`.
    public static func serialize(_ gesture: Gesture) -> [UInt8] {
        // The text is a secret its callers wipe: it is written into one buffer reserved for the
        // longest possible text up front, so growing never leaves a freed partial copy behind.
        // (A coordinate takes at most 21 bytes: a sign, 16 digits, a point and 3 decimals.)
        let points = gesture.parts.reduce(0) { $0 + $1.points.count }
        var output: [UInt8] = []
        output.reserveCapacity(prefix.count + 5 * 21 + 6 + 2 * gesture.parts.count + 48 * points)
        output.append(contentsOf: prefix)
        GestureDecimal.appendInteger(gesture.resolution == nil ? version : resolutionVersion, to: &output)
        output.append(UInt8(ascii: ":"))
        GestureDecimal.appendInteger(gesture.width, to: &output)
        output.append(UInt8(ascii: "x"))
        GestureDecimal.appendInteger(gesture.height, to: &output)
        output.append(UInt8(ascii: ":"))
        if let resolution = gesture.resolution {
            appendCoordinate(resolution.width, to: &output)
            output.append(UInt8(ascii: "x"))
            appendCoordinate(resolution.height, to: &output)
            output.append(UInt8(ascii: ":"))
        }
        for (partIndex, part) in gesture.parts.enumerated() {
            if partIndex > 0 { output.append(UInt8(ascii: ";")) }
            switch part.kind {
            case .tap: output.append(UInt8(ascii: "t"))
            case .path: output.append(UInt8(ascii: "p"))
            }
            for point in part.points {
                output.append(UInt8(ascii: " "))
                appendCoordinate(point.x, to: &output)
                output.append(UInt8(ascii: ","))
                appendCoordinate(point.y, to: &output)
            }
        }
        return output
    }

    private static func appendCoordinate(_ value: Double, to output: inout [UInt8]) {
        if let milli = GestureDecimal.milli(value) {
            GestureDecimal.appendMilli(milli, to: &output)
        } else {
            output.append(contentsOf: "nan".utf8)
        }
    }

    /// The parser proper, generic so that contiguous inputs run specialized.
    static func parseBytes<Bytes: Collection>(_ bytes: Bytes) throws(GestureFormatError) -> Gesture
    where Bytes.Element == UInt8 {
        // Walk at most one byte past the limit, whatever the collection's length.
        if let limit = bytes.index(bytes.startIndex, offsetBy: GestureLimits.maximumWireBytes,
                                   limitedBy: bytes.endIndex),
           limit != bytes.endIndex {
            throw .inputTooLong
        }
        for byte in bytes where byte < 0x20 || byte > 0x7E { throw .nonPrintableByte }

        var reader = GestureByteReader(bytes)
        guard reader.consume(prefix) else { throw .notAGesture }
        let declaresResolution = try readVersion(&reader) == resolutionVersion
        let width = try readSide(&reader, terminator: UInt8(ascii: "x"))
        let height = try readSide(&reader, terminator: UInt8(ascii: ":"))
        var resolution: GestureResolution?
        if declaresResolution {
            let cellWidth = try readNumber(&reader, until: UInt8(ascii: "x"))
            guard reader.consume(UInt8(ascii: "x")) else { throw .badResolution }
            let cellHeight = try readNumber(&reader, until: UInt8(ascii: ":"))
            guard reader.consume(UInt8(ascii: ":")) else { throw .badResolution }
            guard cellWidth > 0, cellHeight > 0,
                  cellWidth <= width * GestureDecimal.milliPerPixel,
                  cellHeight <= height * GestureDecimal.milliPerPixel
            else { throw .badResolution }
            resolution = GestureResolution(width: GestureDecimal.pixels(milli: cellWidth),
                                           height: GestureDecimal.pixels(milli: cellHeight))
        }
        guard !reader.isAtEnd else { throw .noParts }

        let bounds = (x: width * GestureDecimal.milliPerPixel, y: height * GestureDecimal.milliPerPixel)
        var parts: [GesturePart] = []
        while true {
            guard parts.count < GestureLimits.maximumParts else { throw .tooManyParts }
            parts.append(try readPart(&reader, bounds: bounds))
            // readPart stops only at the end or at a `;`.
            guard reader.consume(UInt8(ascii: ";")) else { break }
        }
        return Gesture(width: width, height: height, parts: parts, resolution: resolution)
    }

    /// Reads the version, a single digit 1 or 2, and the colon after it.
    private static func readVersion<Bytes>(_ reader: inout GestureByteReader<Bytes>) throws(GestureFormatError) -> Int {
        var length = 0
        var value = 0
        while let byte = reader.peek(), byte != UInt8(ascii: ":") {
            length += 1
            value = length == 1 ? (reader.peekDigit() ?? 0) : 0
            reader.advance()
        }
        guard value == version || value == resolutionVersion else { throw .unsupportedVersion }
        guard reader.consume(UInt8(ascii: ":")) else { throw .badSize }
        return value
    }

    /// Reads 1…6 digits followed by `terminator`; the value must be 1…100000.
    private static func readSide<Bytes>(_ reader: inout GestureByteReader<Bytes>,
                                        terminator: UInt8) throws(GestureFormatError) -> Int {
        var value = 0
        var digits = 0
        while let digit = reader.peekDigit() {
            digits += 1
            guard digits <= 6 else { throw .badSize }
            value = value * 10 + digit
            reader.advance()
        }
        guard digits > 0, Gesture.isValidSide(value), reader.consume(terminator) else { throw .badSize }
        return value
    }

    private static func readPart<Bytes>(_ reader: inout GestureByteReader<Bytes>,
                                        bounds: (x: Int, y: Int)) throws(GestureFormatError) -> GesturePart {
        guard let kindByte = reader.peek(), kindByte != UInt8(ascii: ";") else { throw .emptyPart }
        guard kindByte != UInt8(ascii: " ") else { throw .misplacedSpace }
        reader.advance()
        if let next = reader.peek(), next != UInt8(ascii: " "), next != UInt8(ascii: ";") {
            throw .unknownKind
        }
        let kind: GesturePartKind
        switch kindByte {
        case UInt8(ascii: "t"): kind = .tap
        case UInt8(ascii: "p"): kind = .path
        default: throw .unknownKind
        }

        var points: [GesturePoint] = []
        while reader.consume(UInt8(ascii: " ")) {
            guard let next = reader.peek(), next != UInt8(ascii: " "), next != UInt8(ascii: ";")
            else { throw .misplacedSpace }
            guard points.count < GestureLimits.maximumWirePointsPerPart else { throw .tooManyPoints }
            let x = try readNumber(&reader, until: UInt8(ascii: ","))
            guard reader.consume(UInt8(ascii: ",")) else { throw .malformedPoint }
            let y = try readNumber(&reader, until: UInt8(ascii: ","))
            if let next = reader.peek(), next != UInt8(ascii: " "), next != UInt8(ascii: ";") {
                throw .trailingGarbage
            }
            guard x <= bounds.x, y <= bounds.y else { throw .coordinateOutsidePicture }
            points.append(GesturePoint(x: GestureDecimal.pixels(milli: x),
                                       y: GestureDecimal.pixels(milli: y)))
        }
        switch kind {
        case .tap: guard points.count == 1 else { throw .wrongTapPointCount }
        case .path: guard points.count >= 2 else { throw .pathTooShort }
        }
        return GesturePart(kind: kind, points: points)
    }

    /// Reads one number up to `terminator`, ` `, `;` or the end and returns it in milli-pixels.
    private static func readNumber<Bytes>(_ reader: inout GestureByteReader<Bytes>,
                                          until terminator: UInt8) throws(GestureFormatError) -> Int {
        var length = 0
        var whole = 0
        var fraction = 0
        var fractionDigits = 0
        var wholeDigits = 0
        var sawPoint = false
        while let byte = reader.peek(),
              byte != terminator, byte != UInt8(ascii: " "), byte != UInt8(ascii: ";") {
            length += 1
            guard length <= GestureLimits.maximumNumberLength else { throw .numberTooLong }
            if let digit = reader.peekDigit() {
                // At most 12 digits, so neither value can overflow.
                if sawPoint {
                    fraction = fraction * 10 + digit
                    fractionDigits += 1
                } else {
                    whole = whole * 10 + digit
                    wholeDigits += 1
                }
            } else if byte == UInt8(ascii: "."), !sawPoint {
                sawPoint = true
            } else {
                throw .malformedNumber
            }
            reader.advance()
        }
        guard wholeDigits > 0, !sawPoint || fractionDigits > 0 else { throw .malformedNumber }

        let fractionMilli: Int
        if fractionDigits <= 3 {
            fractionMilli = fraction * powerOfTen(3 - fractionDigits)
        } else {
            let divisor = powerOfTen(fractionDigits - 3)
            fractionMilli = (fraction + divisor / 2) / divisor
        }
        return whole * GestureDecimal.milliPerPixel + fractionMilli
    }

    private static func powerOfTen(_ exponent: Int) -> Int {
        var result = 1
        for _ in 0..<max(0, exponent) { result *= 10 }
        return result
    }
}

/// A forward cursor over the bytes of a message that never copies them.
struct GestureByteReader<Bytes: Collection> where Bytes.Element == UInt8 {
    private let bytes: Bytes
    private var index: Bytes.Index

    /// A reader at the start of `bytes`.
    init(_ bytes: Bytes) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    /// Whether every byte has been read.
    var isAtEnd: Bool { index == bytes.endIndex }

    /// The next byte, or nil at the end.
    func peek() -> UInt8? {
        index == bytes.endIndex ? nil : bytes[index]
    }

    /// The value of the next byte when it is an ASCII digit.
    func peekDigit() -> Int? {
        guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        return Int(byte &- UInt8(ascii: "0"))
    }

    /// Moves past the next byte; does nothing at the end.
    mutating func advance() {
        if index != bytes.endIndex { bytes.formIndex(after: &index) }
    }

    /// Consumes `byte` when it comes next.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        advance()
        return true
    }

    /// Consumes `literal` when it comes next; on a mismatch the position is unspecified.
    mutating func consume(_ literal: [UInt8]) -> Bool {
        for byte in literal {
            guard consume(byte) else { return false }
        }
        return true
    }
}
