/// One gesture drawn on a picture: an ordered list of parts, in picture pixels.
///
/// A `Gesture` is plain data. Values built in code are not checked until they are used:
/// `validate()` applies the structural rules, and the parser, the enroller and the matcher
/// all apply them before doing any work.
public struct Gesture: Equatable, Sendable {
    /// Width of the picture the gesture was drawn on, in pixels.
    public var width: Int
    /// Height of the picture the gesture was drawn on, in pixels.
    public var height: Int
    /// The parts in drawing order.
    public var parts: [GesturePart]
    /// The input's resolution as the client declared it (wire version 2), or nil: every point
    /// may be up to half a cell off in each direction (a terminal reports cells, not pixels).
    /// Enrollment raises the learned spreads' floors by the cell's error, and the overflow rule
    /// allows a login for it; a login's declaration never widens the score (`GestureConsensus`).
    public var resolution: GestureResolution?

    /// Creates a gesture without checking it; call `validate()` before trusting it.
    public init(width: Int, height: Int, parts: [GesturePart], resolution: GestureResolution? = nil) {
        self.width = width
        self.height = height
        self.parts = parts
        self.resolution = resolution
    }
}

/// The size of the input's cell in picture pixels: a client whose input names cells (puff-pad
/// in a terminal) sends each cell's centre and declares the cell here.
public struct GestureResolution: Equatable, Sendable {
    /// Cell width in picture pixels, greater than 0 and at most the picture's width.
    public var width: Double
    /// Cell height in picture pixels, greater than 0 and at most the picture's height.
    public var height: Double

    /// Creates a resolution without checking it (`Gesture.validate()` checks it).
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// The largest cell side the matcher allows for, as a fraction of the picture's longest
    /// side: 3 %, which covers puff-pad's cells in a 100×30 terminal (13.9 × 27.8 px on a
    /// 1000×750 picture). A coarser declaration is accepted but allowed for only up to this,
    /// so declaring a huge cell buys an attacker nothing more (docs/dev/gesture-format.md measures
    /// the attacks with attempts that declare 30 × 30 px on a 1000 px side).
    public static let maximumCell = 0.03
}

/// One part of a gesture: a tap or a single stroke.
public struct GesturePart: Equatable, Sendable {
    /// Whether the part is a tap or a path; a tap never matches a path and vice versa.
    public var kind: GesturePartKind
    /// The points in drawing order (exactly one for a tap).
    public var points: [GesturePoint]

    /// Creates a part without checking it.
    public init(kind: GesturePartKind, points: [GesturePoint]) {
        self.kind = kind
        self.points = points
    }
}

/// The kind of a gesture part.
public enum GesturePartKind: Equatable, Sendable {
    /// A single touch, stored as one point.
    case tap
    /// One continuous stroke, at least two points as drawn.
    case path
}

/// A point in picture pixels; (0, 0) is the top-left corner of the picture.
public struct GesturePoint: Equatable, Sendable {
    /// Horizontal position, 0…width.
    public var x: Double
    /// Vertical position, 0…height.
    public var y: Double

    /// Creates a point.
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// Hard limits shared by the wire format, the in-memory checks and the template.
public enum GestureLimits {
    /// Largest picture side in pixels.
    public static let maximumPictureSide = 100_000
    /// Most parts in one gesture.
    public static let maximumParts = 16
    /// Most points in one part of a wire message. Gestures built in code are bounded by
    /// `maximumInterpolatedPoints` instead, so that benchmarks can feed denser strokes.
    public static let maximumWirePointsPerPart = 4096
    /// Most bytes in one wire message.
    public static let maximumWireBytes = 65536
    /// Most characters in one number of a wire message.
    public static let maximumNumberLength = 12
    /// Most points a whole gesture may expand to when its paths are interpolated.
    ///
    /// A wire message can describe at most 16 × 4095 segments, each as long as the picture's
    /// diagonal; at the smallest raster (0.5 % of the longest side, a step of 0.125 %) a
    /// segment expands to at most ≈ 1,132 points. The cap keeps memory and time bounded
    /// (≈ 20 ms per million points on the 2-core build machine) while leaving room for
    /// ≈ 7,800 longest sides of drawing at the default raster, far beyond any genuine
    /// gesture. Larger gestures are refused, never truncated.
    public static let maximumInterpolatedPoints = 1 << 20
}

extension Gesture {
    /// Checks the structural rules every gesture must meet before any geometry is done:
    /// a picture size of 1…100000 pixels per side, 1…16 parts, a tap with exactly one point,
    /// a path with at least two, and every coordinate finite and inside the picture
    /// (0…width, 0…height, both edges inclusive). Rules are checked in that order; then a
    /// declared resolution must be positive and at most the picture's size.
    ///
    /// The per-part point limit of the wire format is not applied here: work on gestures
    /// built in code is bounded by `GestureLimits.maximumInterpolatedPoints`.
    public func validate() throws(GestureFormatError) {
        guard Self.isValidSide(width), Self.isValidSide(height) else { throw .badSize }
        guard !parts.isEmpty else { throw .noParts }
        guard parts.count <= GestureLimits.maximumParts else { throw .tooManyParts }
        for part in parts {
            switch part.kind {
            case .tap: guard part.points.count == 1 else { throw .wrongTapPointCount }
            case .path: guard part.points.count >= 2 else { throw .pathTooShort }
            }
            for point in part.points {
                guard point.x.isFinite, point.y.isFinite else { throw .nonFiniteCoordinate }
                guard point.x >= 0, point.y >= 0,
                      point.x <= Double(width), point.y <= Double(height)
                else { throw .coordinateOutsidePicture }
            }
        }
        if let resolution {
            guard resolution.width > 0, resolution.height > 0,
                  resolution.width <= Double(width), resolution.height <= Double(height)
            else { throw .badResolution }
        }
    }

    /// Throws `pictureSizeMismatch` unless the gesture was drawn on a picture of exactly
    /// `width` × `height` pixels. The parser never knows the enrolled picture, so callers
    /// compare the parsed size here before verifying.
    public func requireSize(width: Int, height: Int) throws(GestureFormatError) {
        guard self.width == width, self.height == height else { throw .pictureSizeMismatch }
    }

    /// Whether `side` is a valid picture side: 1…`GestureLimits.maximumPictureSide` pixels.
    static func isValidSide(_ side: Int) -> Bool {
        side >= 1 && side <= GestureLimits.maximumPictureSide
    }
}
