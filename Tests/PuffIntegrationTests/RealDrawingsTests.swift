import Foundation
import Testing

/// The real-drawings evaluation (issue 35, scripts/gesture-real.sh) on the $1 unistroke logs,
/// read from ../shared/data beside the repository (never part of it): the logs load whole, and
/// two people's drawings go through the real enroller and matcher with every row counted.
@Suite(.serialized)
struct RealDrawingsTests {
    static let archive = Artefacts.repository.deletingLastPathComponent()
        .appendingPathComponent("shared/data/dollar1_xml_logs.tar.gz").path
    static var present: Bool { FileManager.default.fileExists(atPath: archive) }

    @Test(.enabled(if: present, "the $1 logs are absent (../shared/data/dollar1_xml_logs.tar.gz, outside the project): nothing to read"))
    func theDollarOneLogsLoadWholeAndTwoPeopleAreEvaluated() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("puff-real-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let untar = try run("/bin/tar", ["-xzf", Self.archive, "-C", work])
        #expect(untar.status == 0, "\(untar.errors)")
        let eval = Artefacts.binaries + "/gesture-eval"
        // All of it: 10 people × 16 shapes × 10 repetitions × 3 speeds, every log with points
        // (CRLF lines, a byte-order mark, attributes in any order).
        let all = try run(eval, ["--dollar1", work, "--scales", "", "--aims", "exact"])
        #expect(all.status == 0, "\(all.errors)")
        #expect(all.output.contains("(10 people, 4800 strokes)"), "\(all.output.prefix(400))")
        // Two people, centroids on their spots: six gestures each, enrolled from the first three
        // repetitions at medium speed, tried with the seven later ones (84), ten slow and ten
        // fast repetitions each (120), and by the other person (6 × 2 × 10 = 120).
        let two = try run(eval, ["--dollar1", work, "--scales", "1", "--aims", "exact", "--people", "2"])
        #expect(two.status == 0, "\(two.errors)")
        let lines = two.output.split(separator: "\n").map(String.init)
        func row(_ prefix: String) -> String { lines.first { $0.hasPrefix("| " + prefix) } ?? "" }
        #expect(two.output.contains("(2 people, 960 strokes)"))
        #expect(row("later repetitions").contains("/84;"), "\(two.output)")
        #expect(row("enrolled medium, drawn slow").contains("/120;"), "\(two.output)")
        #expect(row("enrolled medium, drawn fast").contains("/120;"), "\(two.output)")
        #expect(row("other people who know").contains("/120;"), "\(two.output)")
        #expect(row("enrollment").contains("0 of 12 never"), "\(two.output)")
    }
}
