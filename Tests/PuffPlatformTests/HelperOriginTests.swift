import PuffPlatform
import Testing

/// Issue 27 L3: the origin items (service, tty, rhost, ruser) the module hands the helper with
/// `service-login` must fit the helper's bound, or the attempt fails closed for anyone with
/// such an item.
@Suite("Helper origin frames")
struct HelperOriginTests {
    /// What the helper accepts: the frame as the fourth of an origin, read by the helper's own
    /// reader (`HelperOrigin.read`: `=`, then valid UTF-8 of at most `itemLimit` bytes).
    static func helperAccepts(_ frame: [UInt8]) -> Bool {
        let marked = Array(repeating: [UInt8(ascii: "=")], count: HelperOrigin.count - 1)
        var reader = HelperFrameReader(HelperBytesSource(HelperFrames.encode(marked + [frame])))
        return (try? HelperOrigin.read(from: &reader)) != nil && (try? reader.end()) != nil
    }

    /// The module's `rawItem`: at most 256 bytes, invalid UTF-8 replaced by U+FFFD.
    static func rawItem(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(256), as: UTF8.self)
    }

    @Test func invalidUTF8ThatGrewPastTheBoundIsCutOnACharacterBoundary() {
        let item = Self.rawItem([UInt8](repeating: 0xff, count: 256))
        #expect(item.utf8.count == 768)  // the uncut frame the helper refused
        let frame = HelperOrigin.frame(item)
        #expect(Self.helperAccepts(frame))
        #expect(frame.count == 1 + 255)  // 85 whole U+FFFD
        #expect(String(decoding: frame.dropFirst(), as: UTF8.self) == String(repeating: "\u{FFFD}", count: 85))
    }

    @Test func aCharacterThatWouldCrossTheBoundIsLeftOutWhole() {
        let frame = HelperOrigin.frame(String(repeating: "a", count: 255) + "é" + "b")
        #expect(Self.helperAccepts(frame))
        #expect(frame.count == 1 + 255)
        let four = HelperOrigin.frame(String(repeating: "a", count: 254) + "😀")
        #expect(Self.helperAccepts(four))
        #expect(four.count == 1 + 254)
    }

    @Test func itemsWithinTheBoundAreSentAsTheyAre() {
        for item in ["", "sshd", "pts/3", "198.51.100.7", String(repeating: "x", count: 256), "ünïcödé"] {
            let frame = HelperOrigin.frame(item)
            #expect(Self.helperAccepts(frame))
            #expect(frame == [UInt8(ascii: "=")] + Array(item.utf8))
        }
    }

    @Test func everyMixOfValidAndInvalidBytesFitsTheHelper() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let item = Self.rawItem(bytes)
            let frame = HelperOrigin.frame(item)
            #expect(Self.helperAccepts(frame))
            // Only what does not fit is left out: a prefix of the item, whole characters.
            #expect(item.utf8.starts(with: frame.dropFirst()))
            if item.utf8.count <= HelperOrigin.itemLimit { #expect(frame.count == item.utf8.count + 1) }
        }
    }
}
