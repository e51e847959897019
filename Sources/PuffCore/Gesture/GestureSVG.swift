/// A debug picture of a template, as SVG text. It shows the secret, so it is for enrollment
/// tooling and tests run by the owner, never for logs.
public enum GestureSVG {
    /// Renders `template` over an optional picture: per part, its tolerance squares as
    /// translucent rectangles, its kept points as dots, arrows from each kept point to the
    /// next in drawing order, and the part number (from 1) beside its first point.
    ///
    /// `pictureHref` is escaped for an XML attribute; characters XML cannot hold are dropped.
    public static func render(template: GestureTemplate, pictureHref: String?) -> String {
        let scale = template.scale
        let longest = max(scale.width, scale.height)
        let stroke = max(GestureDecimal.milliPerPixel, longest / 500)
        let dotRadius = max(GestureDecimal.milliPerPixel, scale.rasterSide / 6)
        let halfTolerance = scale.toleranceSide / 2
        let width = GestureDecimal.text(integer: template.width)
        let height = GestureDecimal.text(integer: template.height)

        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\""
        svg += " viewBox=\"0 0 \(width) \(height)\">\n"
        svg += "<defs>\n"
        for index in template.parts.indices {
            svg += "<marker id=\"puff-arrow-\(number(index + 1))\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\""
            svg += " markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\">"
            svg += "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"\(colour(index))\"/></marker>\n"
        }
        svg += "</defs>\n"
        if let pictureHref {
            svg += "<image href=\"\(escapeAttribute(pictureHref))\" x=\"0\" y=\"0\" width=\"\(width)\""
            svg += " height=\"\(height)\" preserveAspectRatio=\"none\"/>\n"
        }
        for (index, points) in template.storedPoints.enumerated() {
            let colour = colour(index)
            let label = number(index + 1)
            svg += "<g id=\"part-\(label)\" fill=\"\(colour)\" stroke=\"\(colour)\">\n"
            for point in points {
                svg += "<rect x=\"\(milli(point.x - halfTolerance))\" y=\"\(milli(point.y - halfTolerance))\""
                svg += " width=\"\(milli(scale.toleranceSide))\" height=\"\(milli(scale.toleranceSide))\""
                svg += " fill-opacity=\"0.15\" stroke-opacity=\"0.4\" stroke-width=\"\(milli(stroke / 2))\"/>\n"
            }
            for (start, end) in zip(points, points.dropFirst()) {
                svg += "<line x1=\"\(milli(start.x))\" y1=\"\(milli(start.y))\" x2=\"\(milli(end.x))\""
                svg += " y2=\"\(milli(end.y))\" stroke-width=\"\(milli(stroke))\""
                svg += " marker-end=\"url(#puff-arrow-\(label))\"/>\n"
            }
            for point in points {
                svg += "<circle cx=\"\(milli(point.x))\" cy=\"\(milli(point.y))\" r=\"\(milli(dotRadius))\""
                svg += " stroke=\"none\"/>\n"
            }
            if let first = points.first {
                svg += "<text x=\"\(milli(first.x + dotRadius * 2))\" y=\"\(milli(first.y - dotRadius * 2))\""
                svg += " font-family=\"sans-serif\" font-size=\"\(milli(max(scale.rasterSide, 4 * stroke)))\""
                svg += " stroke=\"none\">\(label)</text>\n"
            }
            svg += "</g>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    /// Escapes `text` for a double- or single-quoted XML attribute.
    public static func escapeAttribute(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            // Attribute normalization would turn these into spaces; keep them as written.
            case "\t": escaped += "&#9;"
            case "\n": escaped += "&#10;"
            case "\r": escaped += "&#13;"
            default:
                // XML 1.0 has no way to write the other C0 controls or U+FFFE/U+FFFF.
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static let palette = ["#e6194b", "#3cb44b", "#4363d8", "#f58231",
                                  "#911eb4", "#0fa3b1", "#f032e6", "#9a6324"]

    private static func colour(_ index: Int) -> String {
        palette[Int(truncatingIfNeeded: index.magnitude % palette.count.magnitude)]
    }

    private static func milli(_ value: Int) -> String {
        GestureDecimal.text(milli: value)
    }

    private static func number(_ value: Int) -> String {
        GestureDecimal.text(integer: value)
    }
}
