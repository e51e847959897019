/// The geometry of enrollment and verification, stored with each template.
///
/// Sizes are fractions of the picture's longest side, so the same gesture on the same picture
/// shown at another resolution rasterizes and verifies the same way. With the defaults on a
/// 1000-pixel-wide picture the raster square is 30 pixels and the tolerance square 45, the
/// values of the reference implementation.
public struct GestureParameters: Equatable, Sendable {
    /// Side of the rasterization square, as a fraction of the longest side (0.005…0.25).
    ///
    /// The floor of 0.005 bounds the work: a path keeps at most one point per raster cell, so
    /// a part never stores more than ≈ 201 × 201 points and interpolation never expands a
    /// segment to more than ≈ 1,132 points.
    public let raster: Double
    /// Side of the verification square centred on each stored point, as a fraction of the
    /// longest side (raster…4 × raster).
    ///
    /// Below the raster side, neighbouring stored points would leave untested gaps between
    /// their squares; above four raster sides, one input point would hit more stored points
    /// than a bounded neighbourhood holds and the path's shape would barely matter.
    public let tolerance: Double
    /// Share of a path's stored points that must be hit, in order (greater than 0, at most 1).
    public let minimumHitRatio: Double
    /// Most rasterized input points allowed per stored point of a path (1…10); stops a
    /// scribble over the whole picture, which would otherwise hit every stored point.
    public let overflow: Double

    /// The reference values: raster 0.03, tolerance 0.045, hit ratio 0.70, overflow 1.40.
    public static let standard = GestureParameters(
        checkedRaster: 0.03, tolerance: 0.045, minimumHitRatio: 0.70, overflow: 1.40)

    /// Creates parameters, refusing values outside the documented ranges (NaN included).
    public init(raster: Double = 0.03, tolerance: Double = 0.045,
                minimumHitRatio: Double = 0.70, overflow: Double = 1.40) throws(GestureParameterError) {
        guard raster >= 0.005, raster <= 0.25 else { throw .rasterOutOfRange }
        guard tolerance >= raster, tolerance <= 4 * raster else { throw .toleranceOutOfRange }
        guard minimumHitRatio > 0, minimumHitRatio <= 1 else { throw .hitRatioOutOfRange }
        guard overflow >= 1, overflow <= 10 else { throw .overflowOutOfRange }
        self.init(checkedRaster: raster, tolerance: tolerance,
                  minimumHitRatio: minimumHitRatio, overflow: overflow)
    }

    private init(checkedRaster raster: Double, tolerance: Double,
                 minimumHitRatio: Double, overflow: Double) {
        self.raster = raster
        self.tolerance = tolerance
        self.minimumHitRatio = minimumHitRatio
        self.overflow = overflow
    }

    /// Products closer than this to a whole number count as that number, so that
    /// 0.7 × 10 is 7 and 1.4 × 10 is 14 although neither factor is exact in binary.
    static let countEpsilon = 1e-9

    /// Stored points a path part must hit: ⌈minimumHitRatio × storedCount⌉, at least 1.
    ///
    /// With the default ratio 0.70:
    ///
    ///     stored    1  2  3  4  5  6  7  8  9  10
    ///     required  1  2  3  3  4  5  5  6  7   7
    public func requiredHits(storedCount: Int) -> Int {
        let product = minimumHitRatio * Double(max(0, storedCount))
        return max(1, GestureRounding.ceiling(product - Self.countEpsilon) ?? Int.max)
    }

    /// Most rasterized input points a path part may have: ⌊overflow × storedCount⌋.
    ///
    /// With the default overflow 1.40:
    ///
    ///     stored  1  2  3  4  5  6  7   8   9  10
    ///     limit   1  2  4  5  7  8  9  11  12  14
    public func rasterLimit(storedCount: Int) -> Int {
        let product = overflow * Double(max(0, storedCount))
        return GestureRounding.floor(product + Self.countEpsilon) ?? Int.max
    }
}

/// Which gesture parameter is out of its documented range.
public enum GestureParameterError: Error, Equatable, Sendable {
    /// `raster` is not within 0.005…0.25.
    case rasterOutOfRange
    /// `tolerance` is not within raster…4 × raster.
    case toleranceOutOfRange
    /// `minimumHitRatio` is not within (0, 1].
    case hitRatioOutOfRange
    /// `overflow` is not within 1…10.
    case overflowOutOfRange
}
