/// The cost parameters written inside an argon2id hash string
/// (`$argon2id$v=19$m=65536,t=2,p=1$<salt>$<hash>`).
///
/// A stored record is checked against `Argon2Parameters.acceptedRange` *before* libsodium
/// runs it: a record claiming terabytes of memory or a million passes must be refused, not
/// executed inside sshd.
public struct Argon2Parameters: Equatable, Sendable {
    /// Memory in KiB.
    public var memoryKiB: UInt32
    /// Number of passes.
    public var iterations: UInt32
    /// Lanes; libsodium only ever writes 1.
    public var parallelism: UInt32

    /// Creates a parameter set.
    public init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32 = 1) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// Memory accepted in a stored hash: libsodium's minimum (8 KiB) to 1 GiB.
    public static let memoryKiBRange: ClosedRange<UInt32> = 8...(1 << 20)
    /// Passes accepted in a stored hash.
    public static let iterationRange: ClosedRange<UInt32> = 1...16
    /// The longest hash string accepted (libsodium's buffer is 128 bytes with the NUL).
    public static let maximumStringLength = 127

    /// Why a stored hash string is refused.
    public enum Problem: Error, Equatable, Sendable {
        /// Not an `$argon2id$v=19$m=…,t=…,p=…$salt$hash` string.
        case malformed
        /// Parameters outside the accepted bounds.
        case outOfBounds
    }

    /// Parses and bounds-checks the parameters of `hash`.
    public static func parse(_ hash: some StringProtocol) throws(Problem) -> Argon2Parameters {
        let bytes = Array(hash.utf8)
        guard bytes.count <= maximumStringLength else { throw .malformed }
        let fields = bytes.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        // "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
        guard fields.count == 6, fields[0].isEmpty,
              Array(fields[1]) == Array("argon2id".utf8),
              Array(fields[2]) == Array("v=19".utf8) else { throw .malformed }
        let costs = fields[3].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard costs.count == 3,
              let memory = number(costs[0], key: "m"),
              let iterations = number(costs[1], key: "t"),
              let lanes = number(costs[2], key: "p") else { throw .malformed }
        guard isBase64NoPadding(fields[4]), fields[4].count >= 11,
              isBase64NoPadding(fields[5]), fields[5].count >= 22 else { throw .malformed }
        guard memoryKiBRange.contains(memory), iterationRange.contains(iterations), lanes == 1 else {
            throw .outOfBounds
        }
        return Argon2Parameters(memoryKiB: memory, iterations: iterations, parallelism: lanes)
    }

    private static func number(_ field: ArraySlice<UInt8>, key: Character) -> UInt32? {
        guard let keyByte = key.asciiValue, field.count >= 3, field.count <= 12,
              field.first == keyByte, field.dropFirst().first == UInt8(ascii: "=") else { return nil }
        var value: UInt32 = 0
        for byte in field.dropFirst(2) {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt32(byte - 0x30))
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    private static func isBase64NoPadding(_ field: ArraySlice<UInt8>) -> Bool {
        !field.isEmpty && field.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }
}
