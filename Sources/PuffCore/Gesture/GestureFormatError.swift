/// Why a gesture message or a gesture value was refused; one case per rule.
public enum GestureFormatError: Error, Equatable, Sendable {
    /// The message is longer than `GestureLimits.maximumWireBytes`.
    case inputTooLong
    /// The message holds a byte outside printable ASCII (0x20…0x7E), including a newline.
    case nonPrintableByte
    /// The message does not start with `puff-gesture:`.
    case notAGesture
    /// The message starts with `puff-gesture:` but its version is neither 1 nor 2.
    case unsupportedVersion
    /// The picture size is missing, malformed, zero or larger than 100000 pixels.
    case badSize
    /// The message or gesture has no parts at all.
    case noParts
    /// More than `GestureLimits.maximumParts` parts.
    case tooManyParts
    /// More than `GestureLimits.maximumWirePointsPerPart` points in one part.
    case tooManyPoints
    /// A part is empty (`;;`, a leading or a trailing `;`).
    case emptyPart
    /// A part's kind is neither `t` nor `p`.
    case unknownKind
    /// A space where none may be: doubled, leading, or before `;` or the end.
    case misplacedSpace
    /// A number is not digits with an optional `.digits` fraction (sign, exponent, hex,
    /// `inf`, `nan`, `12.` and `.5` are all refused).
    case malformedNumber
    /// A number has more than `GestureLimits.maximumNumberLength` characters.
    case numberTooLong
    /// A point is not `x,y`: the comma is missing.
    case malformedPoint
    /// A point has something after its `y` value, such as `1,2,3`.
    case trailingGarbage
    /// A tap has no point or more than one.
    case wrongTapPointCount
    /// A path has fewer than two points.
    case pathTooShort
    /// A coordinate is negative or beyond the picture's width or height.
    case coordinateOutsidePicture
    /// A coordinate is NaN or infinite (only possible in gestures built in code).
    case nonFiniteCoordinate
    /// A declared resolution (version 2) is malformed, zero or larger than the picture.
    case badResolution
    /// The gesture was drawn on a picture of another size than the enrolled one.
    case pictureSizeMismatch
}

extension GestureFormatError {
    /// What is wrong, in words for the person who typed or drew the gesture (`description`
    /// keeps the case name, for logs).
    public var reason: String {
        switch self {
        case .inputTooLong: "the text is longer than \(GestureLimits.maximumWireBytes) bytes"
        case .nonPrintableByte: "it holds a character that is not printable ASCII (a tab, a newline or a non-ASCII letter)"
        case .notAGesture: "it does not start with 'puff-gesture:' (docs/dev/gesture-format.md); was a passcode typed?"
        case .unsupportedVersion: "its version is neither 1 nor 2"
        case .badSize: "the picture size is missing, malformed, zero or larger than \(GestureLimits.maximumPictureSide) pixels"
        case .noParts: "it has no parts"
        case .tooManyParts: "it has more than \(GestureLimits.maximumParts) parts"
        case .tooManyPoints: "a part has more than \(GestureLimits.maximumWirePointsPerPart) points"
        case .emptyPart: "a part is empty (';;', or a ';' at the start or the end)"
        case .unknownKind: "a part is neither a tap ('t') nor a path ('p')"
        case .misplacedSpace: "a space is doubled, leading, or before a ';' or the end"
        case .malformedNumber: "a coordinate is not a plain decimal number"
        case .numberTooLong: "a coordinate has more than \(GestureLimits.maximumNumberLength) characters"
        case .malformedPoint: "a point is not 'x,y'"
        case .trailingGarbage: "a point has something after its y value"
        case .wrongTapPointCount: "a tap has no point or more than one"
        case .pathTooShort: "a path has fewer than two points"
        case .coordinateOutsidePicture: "a point lies outside the picture"
        case .nonFiniteCoordinate: "a coordinate is not a finite number"
        case .badResolution: "the declared resolution is malformed, zero or larger than the picture"
        case .pictureSizeMismatch: "it was drawn on a picture of another size than this one"
        }
    }
}
