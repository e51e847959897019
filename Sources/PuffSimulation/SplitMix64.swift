// Deterministic randomness and trigonometry for the gesture simulations (gesture-eval,
// gesture-bench) and the gesture tests, without Foundation: one copy for all three. Never
// used for anything secret (that is libsodium's randombytes).

import Glibc

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence for the same seed,
/// so a simulation or a test is reproducible.
public struct SplitMix64 {
    private var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [low, high).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * Double(next() >> 11) / Double(UInt64(1) << 53)
    }

    /// Uniform integer in 0..<count.
    public mutating func below(_ count: Int) -> Int {
        Int(next() % UInt64(count))
    }

    /// Normal with mean 0 and standard deviation `sigma` (Box–Muller).
    public mutating func gaussian(_ sigma: Double) -> Double {
        let u = max(uniform(0, 1), 1e-300)
        let v = uniform(0, 1)
        return sigma * (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
    }
}

/// Sine and cosine by Taylor series, accurate to about 1e-15 for the simulated shapes, without
/// Foundation or libm.
public enum Trig {
    public static func sin(_ angle: Double) -> Double {
        // Reduced to [-π, π] by plain loops (Double.rounded would need libm), then summed.
        let twoPi = 2 * Double.pi
        var x = angle
        while x > Double.pi { x -= twoPi }
        while x < -Double.pi { x += twoPi }
        var term = x
        var sum = x
        for n in 1...20 {
            term *= -x * x / Double((2 * n) * (2 * n + 1))
            sum += term
        }
        return sum
    }

    public static func cos(_ angle: Double) -> Double {
        sin(angle + Double.pi / 2)
    }
}
