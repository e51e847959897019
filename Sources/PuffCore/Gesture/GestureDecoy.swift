/// What a discreet service matches a gesture reply against when the account has no template
/// to match it with (no record, no such account, locked, passcode required, no gesture
/// enrolled), and how a reply drawn on another picture size is still matched: so that a
/// refused gesture costs the same matching work whatever the account (issue 27, item 2).
public enum GestureDecoy {
    /// A version-3 template of three parts, as most enrolled gestures have three or four: a
    /// stroke across the picture, a loop and a tap, on a `width`×`height` picture (the reply's
    /// own size, so that the reply is matched part by part rather than refused for its size).
    /// nil for a size no template can have.
    public static func template(width: Int, height: Int) -> GestureTemplate? {
        let w = Double(width), h = Double(height)
        let last = Double(GestureShape.samples - 1)
        let stroke = (0..<GestureShape.samples).map { i in
            GesturePoint(x: w * (0.1 + 0.45 * Double(i) / last), y: h * (0.85 - 0.55 * Double(i) / last))
        }
        let loop = (0..<GestureShape.samples).map { i in
            let turn = Double(i) / last
            // A circle traced from a polygon, so no trigonometry is needed in the module.
            let (x, y) = unitCircle(turn)
            return GesturePoint(x: w * (0.72 + 0.14 * x), y: h * (0.3 + 0.14 * y))
        }
        let tap = [GesturePoint(x: w * 0.72, y: h * 0.3)]
        return try? GestureTemplate(width: width, height: height, settings: .standard,
                                    parts: [GesturePart(kind: .path, points: stroke),
                                            GesturePart(kind: .path, points: loop),
                                            GesturePart(kind: .tap, points: tap)],
                                    spreads: [0.02, 0.02, 0], version: 3)
    }

    /// A point on the unit circle at `turn` (0…1) of the way round, along an octagon.
    static func unitCircle(_ turn: Double) -> (Double, Double) {
        let corners: [(Double, Double)] = [(1, 0), (0.707, 0.707), (0, 1), (-0.707, 0.707), (-1, 0),
                                           (-0.707, -0.707), (0, -1), (0.707, -0.707), (1, 0)]
        let position = min(max(turn, 0), 1) * 8
        let index = min(Int(position), 7)
        let along = position - Double(index)
        let (a, b) = (corners[index], corners[index + 1])
        return (a.0 + (b.0 - a.0) * along, a.1 + (b.1 - a.1) * along)
    }
}

extension Gesture {
    /// The gesture as drawn on a `width`×`height` picture instead: every point scaled by the
    /// ratio of the sides, clamped into the picture. A reply drawn on another picture size is
    /// refused, but matched in this form first, so that its refusal costs what a match costs.
    public func rescaled(width: Int, height: Int) -> Gesture {
        let sx = Double(width) / Double(max(self.width, 1)), sy = Double(height) / Double(max(self.height, 1))
        let parts = self.parts.map { part in
            GesturePart(kind: part.kind, points: part.points.map { point in
                GesturePoint(x: min(max(point.x * sx, 0), Double(width)), y: min(max(point.y * sy, 0), Double(height)))
            })
        }
        let cell = resolution.map { GestureResolution(width: $0.width * sx, height: $0.height * sy) }
        return Gesture(width: width, height: height, parts: parts, resolution: cell)
    }
}
