import Foundation
import Testing

/// `gesture-eval --svc2004` (issue 35, scripts/gesture-real.sh) on a set written here in the
/// SVC2004 file format — the real signatures are not part of the project and are never needed
/// by a test: files load in both tasks' layouts, each person's signatures fall into the first
/// session, the second session and the forgeries, and every row counts what it should.
@Suite(.serialized)
struct SignatureSetTests {
    static let eval = Artefacts.binaries + "/gesture-eval"

    /// A signature in the SVC2004 layout: a count, then X Y T button (azimuth altitude pressure)
    /// rows; two pen-down strokes, button 0 on each stroke's first point. `wobble` changes the
    /// drawing a little from one signature to the next; `person` changes the whole shape.
    static func signatureFile(person: Int, number: Int, wobble: Double, columns: Int) -> String {
        var rows: [String] = []
        let count = 120
        for index in 0..<count {
            let t = Double(index) / Double(count - 1)
            let angle = 2 * Double.pi * t * Double(2 + person)
            let jitter = wobble * sin(Double(number) * 1.7 + Double(index) * 0.3)
            let x = 2000 + 6000 * t + 600 * cos(angle) + jitter
            let y = 4000 + 900 * sin(angle * (1 + 0.3 * Double(person))) + jitter
            let button = index == 0 || index == count / 2 ? 0 : 1
            var row = "\(Int(x)) \(Int(y)) \(1_000_000 + 10 * index) \(button)"
            if columns == 7 { row += " 1500 600 \(300 + index)" }
            rows.append(row)
        }
        return "\(count)\n" + rows.joined(separator: "\n") + "\n"
    }

    /// Three people × 40 signatures under DIRECTORY/FOLDER.
    static func writeSet(in directory: String, folder: String, columns: Int) throws {
        let root = directory + "/" + folder
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for person in 1...3 {
            for number in 1...40 {
                // Genuine signatures vary by a few tablet units; forgeries by more.
                let text = signatureFile(person: person, number: number, wobble: number > 20 ? 120 : 15, columns: columns)
                try text.write(toFile: "\(root)/U\(person)S\(number).TXT", atomically: true, encoding: .utf8)
            }
        }
    }

    static func scratch() throws -> String {
        let path = Artefacts.temporary + "/puff-signatures-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aSetInTheSVC2004LayoutIsSplitIntoSessionsAndForgeriesAndEveryRowIsCounted() throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Self.writeSet(in: work, folder: "Task2", columns: 7)
        let result = try run(Self.eval, ["--svc2004", work, "--scales", "1", "--aims", "exact"])
        #expect(result.status == 0, "\(result.errors)")
        func row(_ prefix: String) -> String { result.lines.first { $0.hasPrefix("| " + prefix) } ?? "" }
        #expect(result.output.contains("(3 people, 120 signatures)"), "\(result.output.prefix(400))")
        // The variation table counts parts: three a signature.
        #expect(row("first three (S1–S3) | 27 |") != "", "\(result.output)")
        #expect(row("later seven, same session (S4–S10) | 63 |") != "", "\(result.output)")
        #expect(row("second session (S11–S20) | 90 |") != "", "\(result.output)")
        #expect(row("skilled forgeries (S21–S40) | 180 |") != "", "\(result.output)")
        // Each person enrolls from the first session; ten second-session signatures each, twenty
        // forgeries each, and the other two people's twenty genuine signatures each.
        #expect(row("enrollment from the first session").contains("0 of 3 never"), "\(result.output)")
        #expect(row("second session, a week").contains("/30;"), "\(result.output)")
        #expect(row("skilled forgeries (watched").contains("/60;"), "\(result.output)")
        #expect(row("other people's genuine").contains("/120;"), "\(result.output)")
        // Enrollment used three or four of the first session's ten; the rest are the later ones.
        let later = row("same session, later signatures")
        #expect(later.contains("/21;") || later.contains("/20;") || later.contains("/19;") || later.contains("/18;"), "\(later)")
    }

    @Test func taskOneFilesWithFourColumnsLoadToo() throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Self.writeSet(in: work, folder: "Task1", columns: 4)
        let result = try run(Self.eval, ["--svc2004", work, "--scales", "", "--aims", "exact"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("(3 people, 120 signatures)"), "\(result.output.prefix(400))")
    }

    @Test func aBrokenFileIsNamedAndNothingIsMeasured() throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Self.writeSet(in: work, folder: "Task2", columns: 7)
        // One row short of what the count says.
        let text = Self.signatureFile(person: 2, number: 5, wobble: 15, columns: 7).split(separator: "\n").dropLast().joined(separator: "\n")
        try text.write(toFile: work + "/Task2/U2S5.TXT", atomically: true, encoding: .utf8)
        let result = try run(Self.eval, ["--svc2004", work, "--scales", "1", "--aims", "exact"])
        #expect(result.status == 2)
        #expect(result.errors.contains("U2S5.TXT: 833 values for 120 points (4 or 7 a point expected)"), "\(result.errors)")
        #expect(!result.output.contains("| second session"), "\(result.output)")
    }

    @Test func aDirectoryWithoutSignaturesIsRefusedInWords() throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try run(Self.eval, ["--svc2004", work])
        #expect(result.status == 2)
        #expect(result.errors.contains("no SVC2004 signatures (U<person>S<number>.TXT) under \(work)"), "\(result.errors)")
    }
}
