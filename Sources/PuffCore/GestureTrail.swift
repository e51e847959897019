/// What the login and unlock screens (puff-lock, puff-greeter, puff-pad) show of a gesture
/// while it is drawn (`gesture_trail` in puff.conf). Enrollment's drawing and review show the
/// whole gesture whatever is set: the owner is defining it.
public enum GestureTrail: String, CaseIterable, Sendable {
    /// The stroke being drawn, in one colour; a finished stroke fades out within
    /// `fadeSeconds`. No part numbers, no arrows; the count of parts drawn is shown.
    case fade
    /// Nothing on the picture: only the count of parts drawn.
    case hidden
    /// Every part stays until the gesture is sent, numbered, each stroke with an arrow.
    case visible

    /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
    public init?(rawValue: String) { self.init(bytesOf: rawValue) }

    /// How long a finished stroke stays visible with `fade`, in seconds (fully drawn at its
    /// end, transparent this long after).
    public static let fadeSeconds = 0.5

    /// How opaque a finished part is `age` seconds after its end (1 while it is drawn or with
    /// `visible`, 0 with `hidden` and once faded).
    public func opacity(age: Double?) -> Double {
        switch self {
        case .visible: return 1
        case .hidden: return 0
        case .fade:
            guard let age else { return 1 }
            guard age > 0 else { return 1 }
            return age >= Self.fadeSeconds ? 0 : 1 - age / Self.fadeSeconds
        }
    }
}
