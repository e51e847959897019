/// An enrolled gesture: the picture size, the parameters used, and each part's kind with its
/// kept raster points (a tap keeps its single point).
///
/// Every value is valid by construction: the enroller builds it, and both the public
/// initializer and `decode` check it. Points lie on whole thousandths of a pixel.
public struct GestureTemplate: Equatable, Sendable {
    /// Picture width in pixels, 1…100000.
    public let width: Int
    /// Picture height in pixels, 1…100000.
    public let height: Int
    /// The parameters used at enrollment, and again at every verification.
    public let parameters: GestureParameters
    /// The parts in drawing order, with their kept points in drawing order.
    public let parts: [GesturePart]
    /// `parts` in milli-pixels, for the matcher.
    let storedPoints: [[GestureMilliPoint]]
    /// The sizes derived from the picture and the parameters.
    let scale: GestureScale

    /// Most points in one part; the raster floor keeps real parts far below it (≈ 40,401).
    public static let maximumPointsPerPart = Int(UInt16.max)

    /// Creates a template from stored data, checking what the enroller guarantees: a valid
    /// picture size, 1…16 parts, a tap with one point, a path with 1…65535 points, every
    /// coordinate finite and in the picture, and no two raster squares of a path intersecting.
    ///
    /// Coordinates are rounded to whole thousandths of a pixel. The enrollment minimums (three
    /// raster points per path, two parts or eight points) are not required, so that a template
    /// stays readable if those policies change.
    public init(width: Int, height: Int, parameters: GestureParameters,
                parts: [GesturePart]) throws(GestureTemplateError) {
        guard let scale = GestureScale(width: width, height: height, parameters: parameters) else {
            throw .badPictureSize
        }
        guard !parts.isEmpty, parts.count <= GestureLimits.maximumParts else { throw .badPartCount }
        var storedPoints: [[GestureMilliPoint]] = []
        for part in parts {
            switch part.kind {
            case .tap: guard part.points.count == 1 else { throw .badPointCount }
            case .path:
                guard part.points.count >= 1, part.points.count <= Self.maximumPointsPerPart else {
                    throw .badPointCount
                }
            }
            var points: [GestureMilliPoint] = []
            points.reserveCapacity(part.points.count)
            for point in part.points {
                guard let converted = GestureMilliPoint(point), scale.contains(converted) else {
                    throw .badCoordinate
                }
                points.append(converted)
            }
            if part.kind == .path {
                // A stored path must be a raster: otherwise one grid cell could hold any number
                // of points and verification would no longer be linear.
                guard var raster = GestureRaster(scale: scale) else { throw .badPictureSize }
                for point in points {
                    guard raster.offer(point) else { throw .overlappingRaster }
                }
            }
            storedPoints.append(points)
        }
        self.init(checkedWidth: width, height: height, parameters: parameters,
                  storedPoints: storedPoints, kinds: parts.map { $0.kind }, scale: scale)
    }

    /// Creates a template from points the caller has already checked.
    init(checkedWidth width: Int, height: Int, parameters: GestureParameters,
         storedPoints: [[GestureMilliPoint]], kinds: [GesturePartKind], scale: GestureScale) {
        self.width = width
        self.height = height
        self.parameters = parameters
        self.storedPoints = storedPoints
        self.scale = scale
        self.parts = zip(kinds, storedPoints).map { kind, points in
            GesturePart(kind: kind, points: points.map { $0.pixels })
        }
    }

    /// Templates are equal when their picture, parameters and parts are.
    public static func == (lhs: GestureTemplate, rhs: GestureTemplate) -> Bool {
        lhs.width == rhs.width && lhs.height == rhs.height
            && lhs.parameters == rhs.parameters && lhs.storedPoints == rhs.storedPoints
            && lhs.parts.map { $0.kind } == rhs.parts.map { $0.kind }
    }
}

/// Why stored template data was refused.
public enum GestureTemplateError: Error, Equatable, Sendable {
    /// The encoding is longer than any valid template.
    case tooLarge
    /// The encoding ends early.
    case truncated
    /// The encoding does not start with the template magic.
    case badMagic
    /// The encoding has a version this code does not read.
    case unsupportedVersion
    /// The stored parameters are out of range.
    case invalidParameters(GestureParameterError)
    /// The picture size is zero or larger than 100000 pixels.
    case badPictureSize
    /// No parts, or more than 16.
    case badPartCount
    /// A part's kind byte is unknown.
    case badPartKind
    /// A tap without exactly one point, or a path with none or too many.
    case badPointCount
    /// A coordinate is not finite or lies outside the picture.
    case badCoordinate
    /// Two raster squares of one path intersect, which enrollment never produces.
    case overlappingRaster
    /// Bytes follow the last part.
    case trailingBytes
}
