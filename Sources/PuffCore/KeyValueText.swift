/// Why a stored record or counter could not be read. Any of these fails closed.
public enum RecordFormatError: Error, Equatable, Sendable {
    /// Larger than the format allows.
    case tooLarge
    /// Missing or different first line.
    case badHeader
    /// A byte outside printable ASCII, or a line without a final newline.
    case badText
    /// A key the format does not know.
    case unknownKey
    /// A key given twice.
    case duplicateKey
    /// A required key missing.
    case missingKey
    /// A value that does not parse.
    case badValue
}

/// The fields of a parsed text, in their order: a handful per record, so a lookup compares
/// keys byte by byte instead of hashing them (hashing Strings into a Dictionary, and building
/// the callers' key Sets, was most of a login's own work in the module).
struct KeyValueFields {
    fileprivate var keys: [[UInt8]] = []
    fileprivate var values: [String] = []

    /// The value of `key`, or nil when the text has none.
    subscript(key: String) -> String? {
        for (candidate, value) in zip(keys, values) where candidate.elementsEqual(key.utf8) { return value }
        return nil
    }
}

/// The shared on-disk text shape: a header line, then one `key value` per line, each
/// line ending in a newline; printable ASCII only; every key known and given once.
enum KeyValueText {
    static func parse(_ bytes: some Collection<UInt8>, header: String, maximumSize: Int,
                      keys: [String], optional: [String]) throws(RecordFormatError) -> KeyValueFields {
        guard bytes.count <= maximumSize else { throw .tooLarge }
        return try parse(Array(bytes), header: header, keys: keys, optional: optional)
    }

    /// The parser itself, for an array (one copy in the module, whatever collection the
    /// caller holds).
    @inline(never)
    private static func parse(_ bytes: [UInt8], header: String, keys: [String],
                              optional: [String]) throws(RecordFormatError) -> KeyValueFields {
        guard bytes.reversed().first == UInt8(ascii: "\n") else { throw .badText }
        for byte in bytes where byte != UInt8(ascii: "\n") && (byte < 0x20 || byte > 0x7e) {
            throw .badText
        }
        // Split as bytes: every byte is printable ASCII or a newline (checked above), so a byte
        // is a character, and byte comparison is the text comparison, without the grapheme
        // breaking that made String.split the bulk of a login's instructions.
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        lines.removeLast() // the empty piece after the final newline
        guard let first = lines.first, first.elementsEqual(header.utf8) else { throw .badHeader }
        var fields = KeyValueFields()
        for line in lines.dropFirst() {
            guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { throw .badText }
            let key = Array(line[..<space])
            guard keys.contains(where: { $0.utf8.elementsEqual(key) }) || optional.contains(where: { $0.utf8.elementsEqual(key) }) else {
                throw .unknownKey
            }
            guard !fields.keys.contains(key) else { throw .duplicateKey }
            fields.keys.append(key)
            fields.values.append(String(decoding: line[line.index(after: space)...], as: UTF8.self))
        }
        for key in keys where fields[key] == nil { throw .missingKey }
        return fields
    }
}
