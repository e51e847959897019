import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("TrustedDirectory")
struct TrustedDirectoryTests {
    init() throws { try Sodium.initialize() }

    @Test("accepts a root 0700 directory under the sticky /tmp")
    func acceptsPrivateDirectory() throws {
        let scratch = try ScratchDirectory()
        let directory = try TrustedDirectory(scratch.path)
        #expect(directory.path == scratch.path)
        #expect(try directory.descriptor.status().st_ino == fileStatus(scratch.path).st_ino)
    }

    @Test("accepts root 0755 and root 01777-sticky intermediate directories")
    func acceptsReadableAndStickyParents() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("open"), mode: 0o755)
        try makeDirectory(scratch("open/sticky"), mode: 0o1777)
        try makeDirectory(scratch("open/sticky/final"), mode: 0o755)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("open/sticky/final")) } == nil)
        // Doubled and trailing slashes name the same directory.
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch.path + "//open/sticky/final/") } == nil)
    }

    @Test("the root directory itself is accepted")
    func rootDirectory() {
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory("/") } == nil)
    }

    @Test("a relative path or '.'/'..' components are refused", arguments: [
        "tmp", "", "./tmp", "/tmp/../tmp", "/tmp/.",
    ])
    func relativeOrDots(path: String) {
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(path) } == .unsafe)
    }

    @Test("a symlink as the final directory is refused")
    func symlinkedFinal() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("real"))
        try makeSymlink(scratch("real"), at: scratch("link"))
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("link")) } == .unsafe)
    }

    @Test("a symlink as an intermediate directory is refused")
    func symlinkedIntermediate() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("real"))
        try makeDirectory(scratch("real/inner"))
        try makeSymlink("real", at: scratch("link"))
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("link/inner")) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("real/inner")) } == nil)
    }

    @Test("a '/' followed by a combining mark still ends a component (no symlink followed inside one name)")
    func slashBeforeCombiningMark() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("real"))
        try makeDirectory(scratch("real/\u{301}inner"))
        try makeSymlink("real", at: scratch("link"))
        // To Swift "/\u{301}" is one Character, not "/": the walk must still stop at "link".
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("link/\u{301}inner")) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("real/\u{301}inner")) } == nil)
    }

    @Test("a regular file in place of a directory is refused")
    func fileInsteadOfDirectory() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("file"), "x")
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("file")) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("file/below")) } == .unsafe)
    }

    @Test("a final directory writable by group or others is refused", arguments: [
        mode_t(0o770), 0o720, 0o702, 0o777, 0o1777, 0o1770,
    ])
    func writableFinal(mode: mode_t) throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("d"), mode: mode)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("d")) } == .unsafe)
    }

    @Test("an intermediate directory writable by others without the sticky bit is refused")
    func writableIntermediate() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("open"), mode: 0o777)
        try makeDirectory(scratch("open/final"))
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("open/final")) } == .unsafe)
        try setMode(scratch("open"), 0o1777)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("open/final")) } == nil)
    }

    @Test("a directory owned by another uid is refused, final or intermediate")
    func otherOwner() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("theirs"))
        try makeDirectory(scratch("theirs/mine"))
        try setOwner(scratch("theirs"), 65534)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("theirs")) } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try TrustedDirectory(scratch("theirs/mine")) } == .unsafe)
    }

    @Test("a missing path is reported as missing, and only that")
    func missing() throws {
        let scratch = try ScratchDirectory()
        for path in [scratch("absent"), scratch("absent/deeper")] {
            do {
                _ = try TrustedDirectory(path)
                Issue.record("opened a missing directory")
            } catch {
                #expect(error.kind == .system(ENOENT))
                #expect(TrustedDirectory.isMissing(error))
            }
        }
        #expect(!TrustedDirectory.isMissing(.unsafe(path: "/x", reason: "y")))
        #expect(!TrustedDirectory.isMissing(.system("open", path: "/x", Errno(EACCES))))
        #expect(!TrustedDirectory.isMissing(.format(path: "/x", .badText)))
    }

    @Test("subdirectory creates a root 0700 directory once and opens it after")
    func subdirectory() throws {
        let scratch = try ScratchDirectory()
        let parent = try TrustedDirectory(scratch.path)
        let created = try parent.subdirectory("users", create: true)
        #expect(created.path == scratch("users"))
        let info = try fileStatus(scratch("users"))
        #expect(info.st_mode & S_IFMT == S_IFDIR)
        #expect(info.st_mode & 0o7777 == 0o700)
        #expect(info.st_uid == 0)
        #expect(errorKind { () throws(StoreError) in _ = try parent.subdirectory("users", create: true) } == nil)
        #expect(errorKind { () throws(StoreError) in _ = try parent.subdirectory("users", create: false) } == nil)
        let missing = errorKind { () throws(StoreError) in _ = try parent.subdirectory("other", create: false) }
        #expect(missing == .system(ENOENT))
        try setMode(scratch("users"), 0o770)
        #expect(errorKind { () throws(StoreError) in _ = try parent.subdirectory("users", create: true) } == .unsafe)
    }
}

@Suite("TrustedDirectory.readFile")
struct ReadFileTests {
    static let small = FileRequirement.rootPrivate(maximumSize: 64)

    init() throws { try Sodium.initialize() }

    private func read(_ scratch: borrowing ScratchDirectory, _ name: String,
                      _ requirement: FileRequirement = small) throws(StoreError) -> [UInt8]? {
        try TrustedDirectory(scratch.path).readFile(name, requirement)
    }

    @Test("a regular root 0600 file is read whole")
    func regularFile() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "hello\n")
        #expect(try read(scratch, "f") == Array("hello\n".utf8))
        try makeFile(scratch("empty"), [])
        #expect(try read(scratch, "empty") == [])
        try makeFile(scratch("full"), [UInt8](repeating: 7, count: 64))
        #expect(try read(scratch, "full") == [UInt8](repeating: 7, count: 64))
    }

    @Test("a missing file is nil")
    func missing() throws {
        let scratch = try ScratchDirectory()
        #expect(try read(scratch, "absent") == nil)
    }

    @Test("a symlink is refused even to a good file")
    func symlink() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("good"), "x")
        try makeSymlink("good", at: scratch("link"))
        try makeSymlink("/etc/shadow", at: scratch("shadow"))
        try makeSymlink(scratch("nowhere"), at: scratch("dangling"))
        for name in ["link", "shadow", "dangling"] {
            #expect(errorKind { () throws(StoreError) in _ = try read(scratch, name) } == .unsafe, "\(name)")
        }
    }

    @Test("a FIFO is refused without blocking")
    func fifo() throws {
        let scratch = try ScratchDirectory()
        guard mkfifo(scratch("pipe"), 0o600) == 0 else { throw SetupError(what: "mkfifo") }
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "pipe") } == .unsafe)
    }

    @Test("a directory in place of the file is refused")
    func directory() throws {
        let scratch = try ScratchDirectory()
        try makeDirectory(scratch("d"))
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "d") } == .unsafe)
    }

    @Test("a hard-linked file is refused")
    func hardLink() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "x")
        guard link(scratch("f"), scratch("g")) == 0 else { throw SetupError(what: "link") }
        #expect(try fileStatus(scratch("f")).st_nlink == 2)
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "f") } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "g") } == .unsafe)
        guard unlink(scratch("g")) == 0 else { throw SetupError(what: "unlink") }
        #expect(try read(scratch, "f") == Array("x".utf8))
    }

    @Test("modes against rootPrivate and rootWritable", arguments: [
        (mode_t(0o600), true, true), (0o400, true, true), (0o000, true, true),
        (0o640, false, true), (0o604, false, true), (0o644, false, true), (0o700, true, true),
        (0o620, false, false), (0o602, false, false), (0o666, false, false),
    ])
    func modes(mode: mode_t, privateOK: Bool, writableOK: Bool) throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "x", mode: mode)
        let asPrivate = errorKind { () throws(StoreError) in _ = try read(scratch, "f", .rootPrivate(maximumSize: 64)) }
        let asWritable = errorKind { () throws(StoreError) in _ = try read(scratch, "f", .rootWritable(maximumSize: 64)) }
        #expect(asPrivate == (privateOK ? nil : .unsafe))
        #expect(asWritable == (writableOK ? nil : .unsafe))
    }

    @Test("a file owned by another uid is refused")
    func otherOwner() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "x")
        try setOwner(scratch("f"), 65534)
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "f") } == .unsafe)
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "f", .rootWritable(maximumSize: 64)) } == .unsafe)
    }

    @Test("a file over the size limit is refused")
    func oversize() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), [UInt8](repeating: 1, count: 65))
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "f") } == .tooLarge)
        #expect(errorKind { () throws(StoreError) in _ = try read(scratch, "f", .rootPrivate(maximumSize: 65)) } == nil)
    }

    @Test("the requirement constructors")
    func requirements() {
        #expect(FileRequirement.rootPrivate(maximumSize: 10).forbiddenMode == 0o077)
        #expect(FileRequirement.rootWritable(maximumSize: 10).forbiddenMode == 0o022)
        #expect(FileRequirement.rootWritable(maximumSize: 10).maximumSize == 10)
    }
}

@Suite("TrustedDirectory.replaceFile")
struct ReplaceFileTests {
    init() throws { try Sodium.initialize() }

    @Test("writes the content with the requested mode")
    func writes() throws {
        let scratch = try ScratchDirectory()
        let directory = try TrustedDirectory(scratch.path)
        try directory.replaceFile("f", with: Array("first".utf8))
        #expect(try contents(scratch("f")) == Array("first".utf8))
        #expect(try fileStatus(scratch("f")).st_mode & 0o7777 == 0o600)
        try directory.replaceFile("f", with: Array("second, longer".utf8))
        #expect(try directory.readFile("f", .rootPrivate(maximumSize: 100)) == Array("second, longer".utf8))
        try directory.replaceFile("f", with: [])
        #expect(try contents(scratch("f")) == [])
        try directory.replaceFile("g", with: Array("public".utf8), mode: 0o644)
        #expect(try fileStatus(scratch("g")).st_mode & 0o7777 == 0o644)
        #expect(try directoryNames(scratch.path) == ["f", "g"])
    }

    @Test("replacing a file also replaces a wider mode")
    func replacesMode() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "old", mode: 0o666)
        try TrustedDirectory(scratch.path).replaceFile("f", with: Array("new".utf8))
        #expect(try fileStatus(scratch("f")).st_mode & 0o7777 == 0o600)
        #expect(try contents(scratch("f")) == Array("new".utf8))
    }

    @Test("replacing a symlink replaces the link, not its target")
    func replacesSymlink() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("target"), "keep")
        try makeSymlink("target", at: scratch("f"))
        try TrustedDirectory(scratch.path).replaceFile("f", with: Array("new".utf8))
        #expect(try contents(scratch("target")) == Array("keep".utf8))
        #expect(try fileStatus(scratch("f")).st_mode & S_IFMT == S_IFREG)
    }

    @Test("the mode is 0600 even under umask 0")
    func umaskZero() throws {
        let scratch = try ScratchDirectory()
        let old = umask(0)
        defer { umask(old) }
        try TrustedDirectory(scratch.path).replaceFile("f", with: Array("x".utf8))
        #expect(try fileStatus(scratch("f")).st_mode & 0o7777 == 0o600)
    }

    @Test("a stale temp file blocks neither reading nor replacing")
    func staleTempFile() throws {
        let scratch = try ScratchDirectory()
        let directory = try TrustedDirectory(scratch.path)
        try directory.replaceFile("alice", with: Array("v1".utf8))
        try makeFile(scratch(".alice.tmp-0123456789abcdef"), "half-written", mode: 0o644)
        #expect(try directory.readFile("alice", .rootPrivate(maximumSize: 64)) == Array("v1".utf8))
        try directory.replaceFile("alice", with: Array("v2".utf8))
        #expect(try directory.readFile("alice", .rootPrivate(maximumSize: 64)) == Array("v2".utf8))
        #expect(try directoryNames(scratch.path) == [".alice.tmp-0123456789abcdef", "alice"])
    }

    @Test("a failed replace leaves the old file and no temp file")
    func failedReplace() throws {
        let scratch = try ScratchDirectory()
        let directory = try TrustedDirectory(scratch.path)
        try directory.replaceFile("f", with: Array("old".utf8))
        // A directory in the way makes the rename fail.
        try makeDirectory(scratch("d"))
        try makeFile(scratch("d/inside"), "x")
        #expect(errorKind { () throws(StoreError) in try directory.replaceFile("d", with: Array("new".utf8)) } == .system(EISDIR))
        #expect(try directoryNames(scratch.path) == ["d", "f"])
        #expect(try contents(scratch("f")) == Array("old".utf8))
    }

    /// The content writer `writer` puts in round `round`: distinct, long, and checkable.
    static func content(writer: Int, round: Int) -> [UInt8] {
        let header = Array("writer \(writer) round \(round)\n".utf8)
        return header + [UInt8](repeating: UInt8(ascii: "a") + UInt8(writer), count: 32 * 1024 + writer * 512)
    }

    static func isWhole(_ bytes: [UInt8]) -> Bool {
        guard let newline = bytes.firstIndex(of: 10) else { return false }
        let words = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ")
        guard words.count == 4, let writer = Int(words[1]), let round = Int(words[3]) else { return false }
        return bytes == content(writer: writer, round: round)
    }

    @Test("concurrent writers: every read and the final file are one writer's whole content")
    func concurrentWriters() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.path
        let problems = Problems()
        runThreads(8) { writer in
            do {
                let directory = try TrustedDirectory(path)
                for round in 0..<50 {
                    try directory.replaceFile("shared", with: Self.content(writer: writer, round: round))
                    // A plain read, not `readFile`: this checks the atomicity of the replacement only.
                    if !Self.isWhole(try contents(path + "/shared")) { problems.add("a mixed or partial file was read") }
                }
            } catch {
                problems.add("\(error)")
            }
        }
        #expect(problems.all == [])
        let final = try #require(try TrustedDirectory(path).readFile("shared", .rootPrivate(maximumSize: 64 * 1024)))
        #expect(Self.isWhole(final))
        #expect(final.count > 32 * 1024)
        #expect(try directoryNames(path) == ["shared"])
    }
}

@Suite("TrustedDirectory.removeFile")
struct RemoveFileTests {
    @Test("removes a file once")
    func removes() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("f"), "x")
        let directory = try TrustedDirectory(scratch.path)
        #expect(try directory.removeFile("f") == true)
        #expect(try directory.removeFile("f") == false)
        #expect(try directoryNames(scratch.path) == [])
    }

    @Test("removing a symlink removes the link only")
    func symlink() throws {
        let scratch = try ScratchDirectory()
        try makeFile(scratch("target"), "x")
        try makeSymlink("target", at: scratch("link"))
        #expect(try TrustedDirectory(scratch.path).removeFile("link") == true)
        #expect(try directoryNames(scratch.path) == ["target"])
    }
}
