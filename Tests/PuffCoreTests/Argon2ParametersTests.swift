import PuffCore
import Testing

@Suite("Argon2Parameters.parse")
struct Argon2ParametersTests {
    /// Salt and digest as libsodium writes them (16 and 32 bytes, base64 without padding).
    static let salt = "c29tZXNhbHRzb21lc2FsdA"
    static let digest = "RdescudvJCsgt3ub+b+dWRWJTmaaJObG/m3K4cJeF3c"

    static func hash(_ costs: String, prefix: String = "$argon2id$v=19$") -> String {
        prefix + costs + "$" + salt + "$" + digest
    }

    @Test("libsodium-shaped strings parse to their parameters", arguments: [
        ("m=65536,t=2,p=1", Argon2Parameters(memoryKiB: 65536, iterations: 2)),
        ("m=8,t=1,p=1", Argon2Parameters(memoryKiB: 8, iterations: 1)),
        ("m=1048576,t=16,p=1", Argon2Parameters(memoryKiB: 1 << 20, iterations: 16)),
        ("m=262144,t=3,p=1", Argon2Parameters(memoryKiB: 262_144, iterations: 3, parallelism: 1)),
    ])
    func accepted(costs: String, expected: Argon2Parameters) throws {
        #expect(try Argon2Parameters.parse(Self.hash(costs)) == expected)
    }

    @Test("a substring parses too")
    func substring() throws {
        let text = "puff " + Self.hash("m=19456,t=2,p=1")
        let slice = text.dropFirst(5)
        #expect(try Argon2Parameters.parse(slice) == Argon2Parameters(memoryKiB: 19456, iterations: 2))
    }

    @Test("costs outside the accepted range", arguments: [
        "m=4294967295,t=2,p=1", "m=2097152,t=2,p=1", "m=1048577,t=2,p=1", "m=7,t=1,p=1", "m=0,t=1,p=1",
        "m=65536,t=0,p=1", "m=65536,t=17,p=1", "m=65536,t=2,p=2", "m=65536,t=2,p=0",
    ])
    func outOfBounds(costs: String) {
        #expect(throws: Argon2Parameters.Problem.outOfBounds) { try Argon2Parameters.parse(Self.hash(costs)) }
    }

    @Test("strings that are not argon2id v19 with three costs", arguments: [
        // wrong algorithm or version
        hash("m=65536,t=2,p=1", prefix: "$argon2i$v=19$"),
        hash("m=65536,t=2,p=1", prefix: "$argon2d$v=19$"),
        hash("m=65536,t=2,p=1", prefix: "$argon2id$v=16$"),
        hash("m=65536,t=2,p=1", prefix: "$argon2ID$v=19$"),
        hash("m=65536,t=2,p=1", prefix: "argon2id$v=19$"),
        hash("m=65536,t=2,p=1", prefix: "x$argon2id$v=19$"),
        // missing or extra fields
        "",
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt,
        "$argon2id$v=19$m=65536,t=2,p=1",
        "$argon2id$m=65536,t=2,p=1$" + salt + "$" + digest,
        hash("m=65536,t=2,p=1") + "$",
        hash("m=65536,t=2,p=1") + "$extra",
        hash("m=65536,t=2"),
        hash("m=65536,t=2,p=1,p=1"),
        hash("t=2,m=65536,p=1"),
        hash("m=65536,,p=1"),
        hash("m=,t=2,p=1"),
        hash("m65536,t=2,p=1"),
        hash("m=65536;t=2;p=1"),
        // non-digit and overflowing numbers
        hash("m=65536k,t=2,p=1"),
        hash("m=-1,t=2,p=1"),
        hash("m=+8,t=2,p=1"),
        hash("m= 8,t=2,p=1"),
        hash("m=0x10,t=2,p=1"),
        hash("m=4294967296,t=2,p=1"),
        hash("m=99999999999,t=2,p=1"),
        hash("m=65536,t=18446744073709551617,p=1"),
        // salt and digest
        "$argon2id$v=19$m=65536,t=2,p=1$$" + digest,
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbA$" + digest,
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$RdescudvJCsgt3ub+b+dW",
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "==$" + digest,
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$" + digest + "=",
        "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$" + digest.replacingSlash(),
    ])
    func malformed(text: String) {
        #expect(throws: Argon2Parameters.Problem.malformed) { try Argon2Parameters.parse(text) }
    }

    @Test("the length limit is checked before anything else")
    func overlong() throws {
        let longest = "$argon2id$v=19$m=65536,t=2,p=1$" + Self.salt + "$" + String(repeating: "A", count: 127 - 54)
        #expect(longest.utf8.count == Argon2Parameters.maximumStringLength)
        #expect(try Argon2Parameters.parse(longest) == Argon2Parameters(memoryKiB: 65536, iterations: 2))
        #expect(throws: Argon2Parameters.Problem.malformed) { try Argon2Parameters.parse(longest + "A") }
        // Over-long and out of bounds: the cheap length check wins.
        let huge = "$argon2id$v=19$m=4294967295,t=2,p=1$" + Self.salt + "$" + String(repeating: "A", count: 100)
        #expect(throws: Argon2Parameters.Problem.malformed) { try Argon2Parameters.parse(huge) }
    }

    @Test("the accepted ranges")
    func ranges() {
        #expect(Argon2Parameters.memoryKiBRange == 8...1_048_576)
        #expect(Argon2Parameters.iterationRange == 1...16)
        #expect(Argon2Parameters(memoryKiB: 8, iterations: 1).parallelism == 1)
    }
}

private extension String {
    /// The digest with one character that is not in the base64 alphabet.
    func replacingSlash() -> String {
        String(map { $0 == "/" ? "_" : $0 })
    }
}
