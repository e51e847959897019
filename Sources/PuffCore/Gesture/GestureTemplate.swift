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
    /// The template version: 1 (raster points, hit counting), 2 (resampled strokes,
    /// distances after a common shift; see `GestureRecognizer`) or 3 (the consensus of every
    /// enrollment drawing with the owner's learned spreads; see `GestureConsensus`).
    public let version: UInt8
    /// Version 2: the spread of each part learned at enrollment, in fractions of the longest
    /// side (0 when unknown); version 3: each path's learned shape spread (0 for a tap);
    /// empty for version 1.
    public let spreads: [Double]
    /// Version 2: the recognizer's thresholds; version 3: the learned place spread
    /// (`placeTolerance`), shift spread (`shiftLimit`), the shape cap and the overflow;
    /// `.standard` for version 1 (unused there).
    public let settings: GestureRecognizerSettings
    /// Version 4: the enrolled consensus, the logins learned from and the bounds learning keeps
    /// to (`GestureLearning`); nil for older versions.
    public let learning: GestureLearningState?

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

    /// Creates a version-2 or version-3 template from stored data, checking a valid picture
    /// size, 1…16 parts, a tap with one point, a path with exactly `GestureShape.samples`
    /// points, every coordinate in the picture and one finite spread of 0…1 per part.
    public init(width: Int, height: Int, settings: GestureRecognizerSettings, parts: [GesturePart],
                spreads: [Double], version: UInt8 = 2) throws(GestureTemplateError) {
        guard version == 2 || version == 3 else { throw .unsupportedVersion }
        guard let scale = GestureScale(width: width, height: height, parameters: .standard) else {
            throw .badPictureSize
        }
        guard !parts.isEmpty, parts.count <= GestureLimits.maximumParts, spreads.count == parts.count else {
            throw .badPartCount
        }
        var storedPoints: [[GestureMilliPoint]] = []
        for part in parts {
            switch part.kind {
            case .tap: guard part.points.count == 1 else { throw .badPointCount }
            case .path: guard part.points.count == GestureShape.samples else { throw .badPointCount }
            }
            var points: [GestureMilliPoint] = []
            for point in part.points {
                guard let converted = GestureMilliPoint(point), scale.contains(converted) else {
                    throw .badCoordinate
                }
                points.append(converted)
            }
            storedPoints.append(points)
        }
        for spread in spreads {
            guard spread >= 0, spread <= 1 else { throw .badSpread }
        }
        self.init(checkedWidth: width, height: height, settings: settings, storedPoints: storedPoints,
                  kinds: parts.map { $0.kind }, spreads: spreads, scale: scale, version: version)
    }

    /// Creates a version-4 template from stored data: the checks of version 3, and `enrolled`
    /// (the enrolled consensus) with as many parts and points as `parts`, every coordinate in
    /// the picture, and bounds that are fractions of the picture, each floor at most its ceiling.
    public init(width: Int, height: Int, settings: GestureRecognizerSettings, parts: [GesturePart],
                spreads: [Double], enrolled: [[GesturePoint]], logins: Int, drawings: Int,
                bounds: (shiftFloor: Double, shiftCeiling: Double, placeFloor: Double, placeCeiling: Double,
                         shapeFloor: Double, shapeCeilings: [Double])) throws(GestureTemplateError) {
        let checked = try GestureTemplate(width: width, height: height, settings: settings, parts: parts,
                                          spreads: spreads, version: 3)
        guard enrolled.count == parts.count, bounds.shapeCeilings.count == parts.count else { throw .badPartCount }
        var enrolledPoints: [[GestureMilliPoint]] = []
        for (part, points) in zip(parts, enrolled) {
            guard points.count == part.points.count else { throw .badPointCount }
            var converted: [GestureMilliPoint] = []
            for point in points {
                guard let milli = GestureMilliPoint(point), checked.scale.contains(milli) else { throw .badCoordinate }
                converted.append(milli)
            }
            enrolledPoints.append(converted)
        }
        let state = GestureLearningState(enrolled: enrolledPoints, logins: logins, drawings: drawings,
                                         shiftFloor: bounds.shiftFloor, shiftCeiling: bounds.shiftCeiling,
                                         placeFloor: bounds.placeFloor, placeCeiling: bounds.placeCeiling,
                                         shapeFloor: bounds.shapeFloor, shapeCeilings: bounds.shapeCeilings)
        guard state.isValid else { throw .badSpread }
        self.init(checkedWidth: width, height: height, settings: settings, storedPoints: checked.storedPoints,
                  kinds: parts.map { $0.kind }, spreads: spreads, scale: checked.scale, version: 4, learning: state)
    }

    /// Creates a version-1 template from points the caller has already checked.
    init(checkedWidth width: Int, height: Int, parameters: GestureParameters,
         storedPoints: [[GestureMilliPoint]], kinds: [GesturePartKind], scale: GestureScale) {
        self.width = width
        self.height = height
        self.parameters = parameters
        self.storedPoints = storedPoints
        self.scale = scale
        self.version = 1
        self.spreads = []
        self.settings = .standard
        self.learning = nil
        self.parts = zip(kinds, storedPoints).map { kind, points in
            GesturePart(kind: kind, points: points.map { $0.pixels })
        }
    }

    /// Creates a version-2 (or, with `version`, version-3) template from points the caller has
    /// already checked.
    init(checkedWidth width: Int, height: Int, settings: GestureRecognizerSettings,
         storedPoints: [[GestureMilliPoint]], kinds: [GesturePartKind], spreads: [Double], scale: GestureScale,
         version: UInt8 = 2, learning: GestureLearningState? = nil) {
        self.learning = version >= 4 ? learning : nil
        self.width = width
        self.height = height
        self.parameters = .standard
        self.storedPoints = storedPoints
        self.scale = scale
        self.version = version
        self.spreads = spreads
        self.settings = settings
        self.parts = zip(kinds, storedPoints).map { kind, points in
            GesturePart(kind: kind, points: points.map { $0.pixels })
        }
    }

    /// The newest form of an older template (itself when already version 4), which login
    /// stores after a success, as passcode hashes are rehashed. A version-1 or version-2
    /// template first becomes version 3: the stored parts become the consensus (a version-1
    /// path's raster points resampled along their polyline); a template built from one drawing
    /// teaches no shape spread, so the shapes get the highest, and the place and shift spreads
    /// come from version 2's learned spreads (`GestureConsensus.migrated`). A version-3
    /// template then becomes version 4 with its consensus as the enrolled one and the
    /// enrollment bounds at `settings`' factor (`GestureLearning`).
    public func upgraded(settings: GestureRecognizerSettings = .standard) -> GestureTemplate {
        guard version < 4 else { return self }
        guard version < 3 else {
            return GestureLearning.version4(of: self, drawings: GestureLearning.assumedDrawings, settings: settings)
        }
        let points = zip(parts.map { $0.kind }, storedPoints).map { kind, points -> [GestureMilliPoint] in
            guard kind == .path, version == 1 else { return points }
            let longest = Double(max(scale.width, scale.height))
            let units = points.map { GestureUnitPoint(x: Double($0.x) / longest, y: Double($0.y) / longest) }
            return GestureShape.resample(units).map { scale.milliPoint($0) }
        }
        let learned = GestureConsensus.migrated(kinds: parts.map { $0.kind }, version2Spreads: spreads,
                                                settings: settings)
        let version3 = GestureTemplate(checkedWidth: width, height: height, settings: learned.settings, storedPoints: points,
                                       kinds: parts.map { $0.kind }, spreads: learned.spreads, scale: scale, version: 3)
        return GestureLearning.version4(of: version3, drawings: 1, settings: settings)
    }

    /// Templates are equal when their picture, parameters and parts are.
    public static func == (lhs: GestureTemplate, rhs: GestureTemplate) -> Bool {
        lhs.width == rhs.width && lhs.height == rhs.height
            && lhs.parameters == rhs.parameters && lhs.storedPoints == rhs.storedPoints
            && lhs.parts.map { $0.kind } == rhs.parts.map { $0.kind } && lhs.version == rhs.version
            && lhs.spreads == rhs.spreads && lhs.settings == rhs.settings && lhs.learning == rhs.learning
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
    /// A version-2 spread is not a finite number in 0…1, or a version-4 bound is out of range.
    case badSpread
}

extension GestureTemplate {
    /// Calls `body` with the memory of every array that holds this template's points (the
    /// parts' points and the matcher's milli-pixel copies), for wiping once a verification is
    /// over (PuffPlatform's `wipeStorage`, with `explicit_bzero`). The memory is shared with
    /// every copy of the template.
    public func forEachPointStorage(_ body: (UnsafeRawBufferPointer) -> Void) {
        for part in parts { part.points.withUnsafeBytes(body) }
        for points in storedPoints { points.withUnsafeBytes(body) }
        for points in learning?.enrolled ?? [] { points.withUnsafeBytes(body) }
    }
}
