import PuffCore
import Testing

/// The framed text of the helper's service calls: the module decodes the helper's answer with
/// it, so every malformed answer must come back as `nil`, never as other fields.
@Suite("FrameText")
struct FrameTextTests {
    @Test("fields round-trip, empty ones and binary bytes included")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let count = Int.random(in: 0...6, using: &generator)
            let fields = (0..<count).map { _ in
                (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            let text = FrameText.encode(fields)
            #expect(FrameText.decode(text, maximumFields: 6) == fields)
            if count > 0 { #expect(FrameText.decode(text, maximumFields: count - 1) == nil) }
        }
        #expect(FrameText.encode([Array("ab".utf8), []]) == Array("2\nab0\n".utf8))
    }

    @Test("malformed text is refused", arguments: [
        "3\nab",          // shorter than its length
        "2\nabc",         // bytes after the last field that are no length line
        "x\nab",          // not a number
        "\nab",           // no digits
        "2ab",            // no newline
        "-1\na",          // a sign
        "12345678901\na", // eleven digits
        "2",              // a length line cut short
        " 2\nab",         // a space
    ])
    func malformed(text: String) {
        #expect(FrameText.decode(Array(text.utf8), maximumFields: 8) == nil)
    }

    @Test("a truncated answer decodes to fewer whole fields, or not at all")
    func truncated() {
        let text = FrameText.encode([Array("puff-check 1\noutcome failure\n".utf8), Array("before".utf8), Array("after".utf8),
                                     Array("local".utf8)])
        var decoded: [Int] = []
        for cut in 1..<text.count {
            // Cut inside a field: refused; cut exactly between fields: the whole fields before
            // the cut, which the client refuses by count (one or five).
            if let fields = FrameText.decode(Array(text.prefix(cut)), maximumFields: 4) {
                #expect(FrameText.encode(fields) == Array(text.prefix(cut)))
                decoded.append(fields.count)
            }
        }
        // Only the three cuts between fields decode.
        #expect(decoded == [1, 2, 3])
    }
}
