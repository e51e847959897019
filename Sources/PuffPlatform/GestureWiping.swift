import Glibc
import PuffCore

extension Gesture {
    /// Overwrites every coordinate with zeros in place, with `explicit_bzero` (which the
    /// compiler may not drop as a dead store), so a parsed attempt does not linger in freed
    /// heap memory the way the secret buffer it came from does not either. The gesture must
    /// own its arrays alone (a local parsed value does): a shared array would be copied first
    /// and the copy wiped instead.
    public mutating func wipe() {
        for index in parts.indices { Wipe.array(&parts[index].points) }
    }
}

extension GestureTemplate {
    /// Zeroes the points of an opened template where they lie, with `explicit_bzero` — in the
    /// storage every copy of this value shares, which is the point: the attempt is over and no
    /// copy is read again. Only for a template opened for one verification.
    public func wipeStorage() {
        forEachPointStorage { Wipe.bytes(UnsafeMutableRawBufferPointer(mutating: $0)) }
    }
}

extension GestureAcceptance {
    /// Zeroes the accepted attempt's resampled points where they lie, with `explicit_bzero`,
    /// once the login has been learned from (the template's points are wiped on their own).
    public func wipeStorage() {
        forEachPointStorage { Wipe.bytes(UnsafeMutableRawBufferPointer(mutating: $0)) }
    }
}
