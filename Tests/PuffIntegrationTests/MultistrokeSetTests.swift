import Foundation
import Testing

/// `gesture-eval --mmg` (issue 35, scripts/gesture-real.sh) on symbols written here in the CSV
/// layout of the MMG multistroke set — the real drawings are never needed by a test: each
/// stroke becomes one part, both input devices are told apart, every row counts what it should,
/// and a broken file is named.
@Suite(.serialized)
struct MultistrokeSetTests {
    /// One "H" in the MMG CSV layout ("X,-Y,1,T,stroke"): two uprights and a crossbar.
    static func letterH(wobble: Double, repetition: Int) -> String {
        var rows: [String] = []
        var time = 1_300_000_000_000
        let strokes: [[(Double, Double)]] = [
            stride(from: 0.0, through: 200, by: 4).map { (0, $0) },
            stride(from: 0.0, through: 200, by: 4).map { (120, $0) },
            stride(from: 0.0, through: 120, by: 4).map { ($0, 100) },
        ]
        for (index, stroke) in strokes.enumerated() {
            for (x, y) in stroke {
                let jitter = wobble * sin(Double(repetition) * 2.3 + Double(index) + y * 0.05)
                rows.append("\(Int(x + 100 + jitter)),\(-Int(y + 100 - jitter)),1,\(time),\(index + 1)")
                time += 15
            }
            time += 300
        }
        return rows.joined(separator: "\n") + "\n"
    }

    @Test func multistrokeSymbolsLoadAndEachStrokeIsOnePart() throws {
        let work = try SignatureSetTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let folder = work + "/H"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (person, device) in [("10", "stylus"), ("41", "finger")] {
            for speed in ["slow", "medium", "fast"] {
                for repetition in 1...10 {
                    let name = "\(person)-\(device)-\(speed)-H-\(repetition < 10 ? "0" : "")\(repetition).csv"
                    try Self.letterH(wobble: person == "10" ? 2 : 4, repetition: repetition)
                        .write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
                }
            }
        }
        let result = try run(SignatureSetTests.eval, ["--mmg", work])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("(2 people, 1 with a finger; 60 drawings)"), "\(result.output.prefix(400))")
        #expect(result.output.contains("enough for the enroller): H;"), "\(result.output.prefix(600))")
        // Each table: one owner enrolled from the medium repetitions, ten slow and ten fast, and
        // the other person's ten medium ones.
        let tables = result.output.components(separatedBy: "### MMG, drawn with").dropFirst()
        #expect(tables.count == 6, "\(result.output)")
        for table in tables {
            let lines = table.split(separator: "\n").map(String.init)
            func row(_ prefix: String) -> String { lines.first { $0.hasPrefix("| " + prefix) } ?? "" }
            #expect(row("enrolled medium, drawn slow").contains("/10;"), "\(table)")
            #expect(row("enrolled medium, drawn fast").contains("/10;"), "\(table)")
            #expect(row("other people who know").contains("/10;"), "\(table)")
            #expect(row("enrollment").contains("0 of 1 never"), "\(table)")
            let later = row("later repetitions")
            #expect(later.contains("/7;") || later.contains("/6;"), "\(later)")
        }
        // A row that is not five numbers is named, and nothing is measured.
        try "12,-40,1\n".write(toFile: folder + "/41-finger-fast-H-03.csv", atomically: true, encoding: .utf8)
        let broken = try run(SignatureSetTests.eval, ["--mmg", work])
        #expect(broken.status == 2)
        #expect(broken.errors.contains("41-finger-fast-H-03.csv: a row is not five numbers"), "\(broken.errors)")
    }
}
