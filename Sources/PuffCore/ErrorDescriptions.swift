// Log text for the error values that end up in log lines ("malformed (badHeader)", "gesture
// rejected: tooManyPoints"). The full runtime would print a case name by reflection; Embedded
// Swift, which builds the module and the helper, has no reflection and would print "(cannot
// print value in embedded Swift)". These conformances spell out the same case names, so both
// builds log the same text (and the log tests hold both to it).

extension RecordFormatError: CustomStringConvertible {
    /// The case name.
    public var description: String {
        switch self {
        case .tooLarge: "tooLarge"
        case .badHeader: "badHeader"
        case .badText: "badText"
        case .unknownKey: "unknownKey"
        case .duplicateKey: "duplicateKey"
        case .missingKey: "missingKey"
        case .badValue: "badValue"
        }
    }
}

extension Argon2Parameters.Problem: CustomStringConvertible {
    /// The case name.
    public var description: String {
        switch self {
        case .malformed: "malformed"
        case .outOfBounds: "outOfBounds"
        }
    }
}

extension GestureFormatError: CustomStringConvertible {
    /// The case name.
    public var description: String {
        switch self {
        case .inputTooLong: "inputTooLong"
        case .nonPrintableByte: "nonPrintableByte"
        case .notAGesture: "notAGesture"
        case .unsupportedVersion: "unsupportedVersion"
        case .badSize: "badSize"
        case .noParts: "noParts"
        case .tooManyParts: "tooManyParts"
        case .tooManyPoints: "tooManyPoints"
        case .emptyPart: "emptyPart"
        case .unknownKind: "unknownKind"
        case .misplacedSpace: "misplacedSpace"
        case .malformedNumber: "malformedNumber"
        case .numberTooLong: "numberTooLong"
        case .malformedPoint: "malformedPoint"
        case .trailingGarbage: "trailingGarbage"
        case .wrongTapPointCount: "wrongTapPointCount"
        case .pathTooShort: "pathTooShort"
        case .coordinateOutsidePicture: "coordinateOutsidePicture"
        case .nonFiniteCoordinate: "nonFiniteCoordinate"
        case .badResolution: "badResolution"
        case .pictureSizeMismatch: "pictureSizeMismatch"
        }
    }
}

extension GestureParameterError: CustomStringConvertible {
    /// The case name.
    public var description: String {
        switch self {
        case .rasterOutOfRange: "rasterOutOfRange"
        case .toleranceOutOfRange: "toleranceOutOfRange"
        case .hitRatioOutOfRange: "hitRatioOutOfRange"
        case .overflowOutOfRange: "overflowOutOfRange"
        }
    }
}

extension GestureMatchFailure: CustomStringConvertible {
    /// The case name, with its value.
    public var description: String {
        switch self {
        case .invalidAttempt(let problem): "invalidAttempt(\(problem))"
        case .pictureSizeMismatch: "pictureSizeMismatch"
        case .partCountMismatch: "partCountMismatch"
        case .tooComplex: "tooComplex"
        case .partMismatch: "partMismatch"
        }
    }
}
