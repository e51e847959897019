import Foundation
import Testing

/// What a newcomer meets first (issue 32): the README is a first read with the safe commands
/// before any that changes PAM, every relative link in it and in docs/ leads somewhere, every
/// man page shows examples, and `make demo` installs no server.
struct FirstReadTests {
    private static let repository = Artefacts.repository

    private static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The Markdown files a reader can reach: README.md and everything under docs/.
    private static func markdownFiles() throws -> [String] {
        let docs = repository.appendingPathComponent("docs").path
        let found = try #require(FileManager.default.enumerator(atPath: docs)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        return ["README.md"] + found.sorted()
    }

    /// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces
    /// made `-`; a repeated heading gets `-1`, `-2`...
    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var result: Set<String> = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            var slug = ""
            for character in title.lowercased() {
                if character.isLetter || character.isNumber || character == "-" || character == "_" { slug.append(character) }
                else if character == " " { slug.append("-") }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            result.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return result
    }

    /// The targets of the Markdown links `[text](target)` and images `![text](target)` outside
    /// fenced code.
    static func linkTargets(_ markdown: String) -> [String] {
        var targets: [String] = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced else { continue }
            var rest = Substring(line)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                targets.append(String(after[..<close]).split(separator: " ").first.map(String.init) ?? "")
                rest = after[close...]
            }
        }
        return targets
    }

    @Test func everyRelativeLinkInTheReadmeAndDocsResolves() throws {
        var broken: [String] = []
        var checked = 0
        for file in try Self.markdownFiles() {
            let text = try Self.text(file)
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent().relativePath
            for target in Self.linkTargets(text) {
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(parts[0]), anchor = parts.count > 1 ? String(parts[1]) : nil
                let resolved = path.isEmpty ? file
                    : URL(fileURLWithPath: directory == "." ? path : directory + "/" + path).standardized.relativePath
                var isDirectory: ObjCBool = false
                guard !resolved.hasPrefix(".."),
                      FileManager.default.fileExists(atPath: Self.repository.appendingPathComponent(resolved).path,
                                                     isDirectory: &isDirectory) else {
                    broken.append("\(file): \(target) (no \(resolved))")
                    continue
                }
                if let anchor, resolved.hasSuffix(".md"), !Self.anchors(try Self.text(resolved)).contains(anchor) {
                    broken.append("\(file): \(target) (no heading #\(anchor) in \(resolved))")
                }
            }
        }
        #expect(checked > 40, "only \(checked) links found")
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// The checker itself, on links that must fail: a missing file, a missing heading.
    @Test func theLinkCheckerFindsWhatIsMissing() {
        let markdown = "# Puff: the `lock` screen\n## Puff: the `lock` screen\n[a](#puff-the-lock-screen-1) ![b](x.png \"t\")\n"
        #expect(Self.anchors(markdown) == ["puff-the-lock-screen", "puff-the-lock-screen-1"])
        #expect(Self.linkTargets(markdown) == ["#puff-the-lock-screen-1", "x.png"])
        #expect(Self.linkTargets("```\n[a](b)\n```\n") == [])
    }

    /// At most 16 KB, and the demo and the tests come before any command that changes PAM or
    /// installs anything.
    @Test func theReadmeIsAFirstReadWithTheSafeCommandsFirst() throws {
        let readme = try Self.text("README.md")
        #expect(readme.utf8.count <= 16 * 1024, "README.md is \(readme.utf8.count) bytes")
        let demo = try #require(readme.range(of: "make demo"))
        let test = try #require(readme.range(of: "make test"))
        for changing in ["pam-auth-update --enable", "dpkg -i", "make install", "apt install"] {
            guard let first = readme.range(of: changing) else { continue }
            #expect(demo.lowerBound < first.lowerBound && test.lowerBound < first.lowerBound, "\(changing) comes first")
        }
        for screen in ["puff-pad", "puff-lock", "puff-greeter"] {
            #expect(readme.contains("## " + screen) || readme.contains("### " + screen), "no paragraph for \(screen)")
        }
        #expect(readme.contains("## Contributing"))
    }

    /// Every man page has an EXAMPLES section with at least one command in it.
    @Test func everyManPageHasExamples() throws {
        let directory = Self.repository.appendingPathComponent("docs/man").path
        let pages = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".scd") }.sorted()
        #expect(pages.count >= 7)
        for page in pages {
            let lines = try Self.text("docs/man/" + page).split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(of: "# EXAMPLES") else {
                Issue.record("\(page) has no EXAMPLES section")
                continue
            }
            // Commands sit in ``` blocks (scdoc's literal text).
            var commands: [Substring] = [], literal = false
            for line in lines[(start + 1)...] {
                if line.hasPrefix("```") { literal.toggle(); continue }
                if literal { if !line.trimmingCharacters(in: .whitespaces).isEmpty { commands.append(line) } } else if line.hasPrefix("# ") { break }
            }
            #expect(!commands.isEmpty, "\(page): EXAMPLES shows no command")
        }
    }

    /// Issue 31, item 5: the layout in docs/dev/internals.md names every entry of `ls Sources`
    /// and nothing that is gone, so a newcomer finds each room by its job.
    @Test func theLayoutNamesEveryEntryOfSources() throws {
        let internals = try Self.text("docs/dev/internals.md")
        let layout = try #require(internals.components(separatedBy: "## Layout\n").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        let listed = Set(layout.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            guard let first = words.first, first.hasPrefix("Sources/") else { return nil }
            return String(first.dropFirst("Sources/".count).split(separator: "/").first ?? "")
        })
        let sources = Set(try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("Sources").path))
        #expect(sources.subtracting(listed).isEmpty, "not in the layout: \(sources.subtracting(listed).sorted())")
        #expect(listed.subtracting(sources).isEmpty, "in the layout but gone: \(listed.subtracting(sources).sorted())")
    }
}
