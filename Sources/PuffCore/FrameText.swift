/// Fields as `puff-check` reads and writes them: each its length in ASCII decimal, a newline,
/// then that many bytes. The helper's `FrameReader` reads requests from its standard input
/// this way (secrets straight into wiped memory); this is the form of the public fields, and of
/// a service call's answer.
public enum FrameText {
    /// `fields`, each preceded by its length line.
    public static func encode(_ fields: [[UInt8]]) -> [UInt8] {
        var text: [UInt8] = []
        for field in fields {
            text += lengthLine(field.count)
            text += field
        }
        return text
    }

    /// The line that precedes a field of `count` bytes.
    public static func lengthLine(_ count: Int) -> [UInt8] {
        Array("\(count)\n".utf8)
    }

    /// The fields of `text`, which must end after the last one; `nil` when it is not such
    /// text or has more than `maximumFields`.
    public static func decode(_ text: [UInt8], maximumFields: Int) -> [[UInt8]]? {
        var fields: [[UInt8]] = []
        var index = 0
        while index < text.count {
            guard fields.count < maximumFields else { return nil }
            var length = 0
            var digits = 0
            while index < text.count, text[index] != UInt8(ascii: "\n") {
                let byte = text[index]
                guard byte >= 0x30, byte <= 0x39, digits < 10 else { return nil }
                length = length * 10 + Int(byte - 0x30)
                digits += 1
                index += 1
            }
            guard digits > 0, index < text.count, length <= text.count - index - 1 else { return nil }
            index += 1
            fields.append(Array(text[index..<(index + length)]))
            index += length
        }
        return fields
    }
}
