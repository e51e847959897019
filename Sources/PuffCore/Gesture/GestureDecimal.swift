/// Decimal text for the wire format and the debug view, without Foundation.
///
/// Coordinates are handled as whole thousandths of a pixel ("milli-pixels"): the parser
/// rounds to them, the geometry computes in them exactly, and the writer prints them.
enum GestureDecimal {
    /// Milli-pixels per pixel.
    static let milliPerPixel = 1000

    /// Rounds `value` pixels to the nearest milli-pixel (halves away from zero); nil when the
    /// value is not finite or too large to convert exactly.
    static func milli(_ value: Double) -> Int? {
        guard let scaled = GestureRounding.nearest(value * Double(milliPerPixel)),
              // 2^53: beyond it Doubles are no longer whole numbers one apart.
              scaled.magnitude <= 9_007_199_254_740_992
        else { return nil }
        return scaled
    }

    /// The pixel value of a milli-pixel count.
    static func pixels(milli: Int) -> Double {
        Double(milli) / Double(milliPerPixel)
    }

    /// Appends `value` in decimal ASCII.
    static func appendInteger(_ value: Int, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        appendDigits(value.magnitude, to: &output)
    }

    /// Appends a milli-pixel count as pixels: no fraction for whole pixels, otherwise up to
    /// three decimals with trailing zeros trimmed (`12500` → `12.5`).
    static func appendMilli(_ milli: Int, to output: inout [UInt8]) {
        if milli < 0 { output.append(UInt8(ascii: "-")) }
        let magnitude = milli.magnitude
        let perPixel = milliPerPixel.magnitude
        appendDigits(magnitude / perPixel, to: &output)
        var fraction = magnitude % perPixel
        guard fraction != 0 else { return }
        output.append(UInt8(ascii: "."))
        var divisor: UInt = 100
        while fraction != 0, divisor != 0 {
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction / divisor))
            fraction %= divisor
            divisor /= 10
        }
    }

    /// `appendMilli` as a `String`, for the debug view.
    static func text(milli: Int) -> String {
        var bytes: [UInt8] = []
        appendMilli(milli, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `appendInteger` as a `String`, for the debug view.
    static func text(integer: Int) -> String {
        var bytes: [UInt8] = []
        appendInteger(integer, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Most significant digit first, with no temporary array: the digits of a gesture are
    /// secret and a freed array would keep them.
    private static func appendDigits(_ value: UInt, to output: inout [UInt8]) {
        var divisor: UInt = 1
        // divisor * 10 <= value here, so it cannot overflow.
        while value / divisor >= 10 { divisor *= 10 }
        repeat {
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        } while divisor != 0
    }
}

/// Rounding of Doubles to Ints without libm.
///
/// `Double.rounded` calls C's `round`, `floor` and `ceil`; a module that imports neither
/// Foundation nor Glibc is not linked with libm, and a release build then fails to link.
/// Truncation (`Int(_:)` on a guarded value) and subtraction compile to plain instructions.
enum GestureRounding {
    /// 2^62: values beyond it are refused so that no conversion can overflow.
    private static let bound = 4_611_686_018_427_387_904.0

    /// The value truncated toward zero with its exact remainder; nil when not finite or
    /// beyond ±2^62.
    private static func split(_ value: Double) -> (whole: Int, fraction: Double)? {
        guard value.isFinite, value > -bound, value < bound else { return nil }
        let whole = Int(value)
        // Exact: below 2^52 the fraction has no more bits than the value, above it is zero.
        return (whole, value - Double(whole))
    }

    /// ⌊value⌋, or nil when not finite or beyond ±2^62.
    static func floor(_ value: Double) -> Int? {
        guard let (whole, fraction) = split(value) else { return nil }
        return fraction < 0 ? whole - 1 : whole
    }

    /// ⌈value⌉, or nil when not finite or beyond ±2^62.
    static func ceiling(_ value: Double) -> Int? {
        guard let (whole, fraction) = split(value) else { return nil }
        return fraction > 0 ? whole + 1 : whole
    }

    /// The nearest whole number, halves away from zero; nil when not finite or beyond ±2^62.
    static func nearest(_ value: Double) -> Int? {
        guard let (whole, fraction) = split(value) else { return nil }
        if fraction >= 0.5 { return whole + 1 }
        if fraction <= -0.5 { return whole - 1 }
        return whole
    }
}
