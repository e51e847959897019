/// Text compared, matched and cut as UTF-8 bytes.
///
/// Swift's `==` on strings, `hasPrefix`, a `switch` over string literals, a synthesized
/// `init(rawValue:)`, `String` keys of a `Set` or `Dictionary`, and the `Character`-based
/// collection operations (`split`, `dropLast`, `count`, `index(_:offsetBy:)`) follow Unicode:
/// two strings are equal when they are canonically equivalent (a composed "é", U+00E9, equals
/// "e" + U+0301; the Kelvin sign U+212A equals "K"), and a character may be several scalars.
/// The kernel, NSS, libpam, the store's files and the helper's wire compare bytes: to them those
/// are different names. So Puff compares user names, paths, option keys and stored fields with
/// these functions, byte for byte, which is also why `pam_puff.so` carries none of the standard
/// library's normalization and grapheme tables (docs/dev/embedded-swift.md, "Text as bytes").
extension StringProtocol {
    /// Whether `self` and `other` are the same UTF-8 bytes (not Unicode canonical equivalence).
    @inlinable
    public func sameBytes(as other: some StringProtocol) -> Bool {
        utf8.count == other.utf8.count && utf8.elementsEqual(other.utf8)
    }

    /// Whether `self` is exactly the bytes of `literal`.
    @inlinable
    public func sameBytes(as literal: StaticString) -> Bool {
        literal.withUTF8Buffer { utf8.count == $0.count && utf8.elementsEqual($0) }
    }

    /// Whether `self` begins with the bytes of `prefix`.
    @inlinable
    public func hasBytePrefix(_ prefix: some StringProtocol) -> Bool {
        utf8.starts(with: prefix.utf8)
    }
}

extension Substring {
    /// `self` cut at every `separator` byte, an ASCII byte (which never occurs inside the UTF-8
    /// encoding of another scalar, so every piece is whole scalars): what `split(separator:)`
    /// gives for a `Character`, but without grapheme breaking, and a separator followed by a
    /// combining mark still cuts, as it does for the kernel.
    public func splitBytes(at separator: UInt8, omittingEmptySubsequences: Bool = true) -> [Substring] {
        utf8.split(separator: separator, omittingEmptySubsequences: omittingEmptySubsequences)
            .map { self[$0.startIndex..<$0.endIndex] }
    }
}

extension String {
    /// `self` cut at every `separator` byte (`Substring.splitBytes(at:omittingEmptySubsequences:)`).
    public func splitBytes(at separator: UInt8, omittingEmptySubsequences: Bool = true) -> [Substring] {
        self[...].splitBytes(at: separator, omittingEmptySubsequences: omittingEmptySubsequences)
    }
}

extension Optional where Wrapped: StringProtocol {
    /// Whether both are `nil`, or both hold the same UTF-8 bytes (`==` of two optional strings,
    /// by bytes).
    @inlinable
    public func sameBytes(as other: Wrapped?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case (let left?, let right?): left.sameBytes(as: right)
        default: false
        }
    }
}

extension CaseIterable where Self: RawRepresentable, RawValue == String {
    /// The case whose raw value is exactly `text`'s bytes. The enums of Puff's keys and wire
    /// words implement `init?(rawValue:)` with this instead of the synthesized one, which matches
    /// by Unicode canonical equivalence through a hashed table of the names.
    @inlinable
    public static func matching(bytesOf text: some StringProtocol) -> Self? {
        allCases.first { $0.rawValue.sameBytes(as: text) }
    }
}

extension FixedWidthInteger {
    /// The value of `text` when it is a canonical decimal: ASCII digits only, no sign, no
    /// leading zero (but "0" itself), within the type; nil otherwise. The stored formats accept
    /// only what `String(value)` writes, and this checks that from the bytes, without building
    /// the String (Swift's own parsers also take "+1", "-0" and "01").
    public init?(canonicalDecimal text: some StringProtocol) {
        let digits = text.utf8
        guard let first = digits.first, first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var value: Self = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (tens, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, carried) = tens.addingReportingOverflow(Self(byte - UInt8(ascii: "0")))
            guard !overflowed, !carried else { return nil }
            value = sum
        }
        self = value
    }
}

extension CaseIterable where Self: RawRepresentable, RawValue == String {
    /// The case whose raw value is exactly `text`'s bytes (`matching(bytesOf:)`), as an
    /// initializer: each enum's `init?(rawValue:)` is this one line.
    @inlinable
    public init?(bytesOf text: some StringProtocol) {
        guard let found = Self.matching(bytesOf: text) else { return nil }
        self = found
    }
}
