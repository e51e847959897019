import Foundation
import Testing

/// The project's license is BSD-2-Clause, and every place that states it agrees: the LICENSE
/// file, the package's machine-readable debian/copyright (DEP-5) and the README.
struct LicenseTests {
    private func text(_ path: String) throws -> String {
        try String(contentsOf: Artefacts.repository.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func theLicenseFileIsBSD2Clause() throws {
        let license = try text("LICENSE")
        #expect(license.hasPrefix("BSD 2-Clause License\n"))
        #expect(license.contains("1. Redistributions of source code must retain the above copyright notice"))
        #expect(license.contains("2. Redistributions in binary form must reproduce the above copyright notice"))
        #expect(!license.contains("3. Neither the name"))
    }

    /// DEP-5: a header paragraph with Format, a Files paragraph naming its license by its SPDX
    /// short name, and a stand-alone License paragraph holding the full text of every license
    /// a Files paragraph names.
    @Test func debianCopyrightIsMachineReadableAndNamesBSD2Clause() throws {
        let paragraphs = try text("debian/copyright").components(separatedBy: "\n\n")
            .map { $0.trimmingCharacters(in: .newlines) }.filter { !$0.isEmpty }
        func field(_ name: String, in paragraph: String) -> String? {
            paragraph.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        #expect(field("Format", in: paragraphs[0]) == "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
        let files = paragraphs.filter { field("Files", in: $0) != nil }
        #expect(!files.isEmpty)
        for paragraph in files {
            #expect(field("License", in: paragraph) == "BSD-2-Clause")
            #expect(field("Copyright", in: paragraph) != nil)
        }
        let standalone = paragraphs.filter { field("Files", in: $0) == nil && field("License", in: $0) == "BSD-2-Clause" }
        #expect(standalone.count == 1)
        #expect(standalone.first?.contains(" 2. Redistributions in binary form must reproduce") == true)
        // Continuation lines start with a space; an empty line inside the text is " .".
        for line in standalone.first?.split(separator: "\n").dropFirst() ?? [] {
            #expect(line.hasPrefix(" "))
        }
        #expect(!paragraphs.contains { $0.contains("All rights reserved by the authors") })
    }

    @Test func theReadmeNamesTheLicense() throws {
        #expect(try text("README.md").contains("BSD 2-Clause license ([LICENSE](LICENSE)"))
    }
}
