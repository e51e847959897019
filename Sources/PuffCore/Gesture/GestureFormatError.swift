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
