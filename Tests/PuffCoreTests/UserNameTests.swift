import PuffCore
import Testing

@Suite("UserName")
struct UserNameTests {
    @Test("valid names", arguments: [
        "alice", "first.last", "svc_1", "user@domain", "Alice", "a", "host$", "a-b",
        String(repeating: "x", count: 32),
    ])
    func valid(name: String) throws {
        let parsed = try #require(UserName(name))
        #expect(parsed.value == name)
        #expect(parsed.description == name)
    }

    @Test("invalid names", arguments: [
        "", String(repeating: "x", count: 33), "../x", "a/b", ".hidden", "-x", "a\nb", "a b", "é",
        ".", "..", "a\0b", "a\tb", "a:b", "a\\b", "x\u{7f}",
    ])
    func invalid(name: String) {
        #expect(UserName(name) == nil)
    }

    @Test("the limit counts bytes, not characters")
    func byteLimit() {
        #expect(UserName.maximumLength == 32)
        #expect(UserName(String(repeating: "é", count: 16)) == nil)
    }
}

@Suite("LogText.escape")
struct LogTextTests {
    @Test("printable ASCII passes, everything else becomes \\xNN", arguments: [
        ([UInt8]("alice".utf8), "alice"),
        ([0x0a], "\\x0a"),
        ([0x00, 0x1b, 0x7f], "\\x00\\x1b\\x7f"),
        ([UInt8]("a\\b".utf8), "a\\x5cb"),
        ([UInt8]("é".utf8), "\\xc3\\xa9"),
        ([0xff, 0x80], "\\xff\\x80"),
        ([UInt8]("evil\nJan 1 sshd: accepted".utf8), "evil\\x0aJan 1 sshd: accepted"),
        ([UInt8](" ~".utf8), " ~"),
        ([], ""),
    ])
    func escapes(input: [UInt8], expected: String) {
        #expect(LogText.escape(input) == expected)
    }

    @Test("the String overload escapes the UTF-8 bytes")
    func stringOverload() {
        #expect(LogText.escape("tab\there") == "tab\\x09here")
        #expect(LogText.escape("ü") == "\\xc3\\xbc")
    }

    @Test("at most `limit` input bytes are shown")
    func truncation() {
        let exactly = String(repeating: "a", count: 64)
        #expect(LogText.escape(exactly) == exactly)
        #expect(LogText.escape(exactly + "b") == exactly + "...")
        #expect(LogText.escape(String(repeating: "z", count: 65_536)) == String(repeating: "z", count: 64) + "...")
        #expect(LogText.escape("abcdef", limit: 3) == "abc...")
        #expect(LogText.escape("abc", limit: 3) == "abc")
        #expect(LogText.escape("\n\n\n", limit: 2) == "\\x0a\\x0a...")
        #expect(LogText.escape("a", limit: 0) == "...")
    }
}
