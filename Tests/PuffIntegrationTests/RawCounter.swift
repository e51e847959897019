import Foundation
import PuffPlatform

/// A counter file read raw, without the module's code or its lock (status would wait for an
/// attempt in progress): written out here from the format (docs/dev/internals.md, "Lockout"), so a test sees
/// what is on the disk, not what the reader under test makes of it. Version 4 is two 512-byte
/// slots, each "puff-tally 4", the fields, "generation N", "check <BLAKE2b-128 hex of the
/// text before it>", NUL padding; the newer whole slot is the counter. Older versions are the
/// text alone.
enum RawCounter {
    struct Slot {
        let fields: [String: String]
        let generation: UInt64
    }

    /// The fields of one slot when it is whole (its check matches), else nil.
    static func slot(_ bytes: Data) -> Slot? {
        let text = Array(bytes.prefix { $0 != 0 })
        guard let checkStart = text.dropLast().lastIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }) else { return nil }
        let body = Array(text[..<checkStart])
        let check = String(decoding: text[checkStart...], as: UTF8.self)
        guard check == "check \(Sodium.checkDigest(body))\n" else { return nil }
        let fields = fieldsOf(body)
        guard fields["puff-tally"] == "4", let generation = fields["generation"].flatMap({ UInt64($0) }) else { return nil }
        return Slot(fields: fields, generation: generation)
    }

    static func fieldsOf(_ text: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// The counter's fields: the newer whole slot, or an older version's text; nil when the
    /// file is missing or has no whole slot.
    static func fields(atPath path: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        if data.count == 1024 {
            let slots = [slot(data.prefix(512)), slot(data.suffix(512))].compactMap { $0 }
            return slots.max { $0.generation < $1.generation }?.fields
        }
        let fields = fieldsOf(Array(data.prefix { $0 != 0 }))
        return fields["puff-tally"] == nil ? nil : fields
    }

    /// The generation of the counter's newer whole slot (0 for an older version's file).
    static func generation(atPath path: String) -> UInt64? {
        fields(atPath: path).map { $0["generation"].flatMap { UInt64($0) } ?? 0 }
    }

    /// The failure count, nil when the file does not decode.
    static func failures(atPath path: String) -> Int? {
        fields(atPath: path)?["failures"].flatMap { Int($0) }
    }
}
