import Foundation
import Testing

/// The fuzz targets built normally replay files instead of fuzzing; here each one replays its
/// committed seed corpus, so a change that breaks a target's invariants on a seed fails
/// `make test`, not only the next `make fuzz`.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let targets = ["gesture-wire", "template", "record", "options", "argon2", "tally", "authenticate"]

    @Test("every seed passes its target's invariants", arguments: targets)
    func replay(target: String) throws {
        let corpus = Artefacts.repository.appendingPathComponent("Fuzz/corpus/" + target).path
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus).filter { !$0.hasPrefix(".") }
        #expect(seeds.count >= 3, "the \(target) corpus is nearly empty")
        let result = try run(Artefacts.binaries + "/fuzz-" + target, [corpus])
        #expect(result.status == 0, "fuzz-\(target): \(result.errors)")
        #expect(result.output == "replayed \(seeds.count) inputs\n")
    }
}
