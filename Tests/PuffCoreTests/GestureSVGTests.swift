import Testing
import PuffCore

@Suite("Gesture debug view")
struct GestureSVGTests {
    @Test("draws every kept point, its square, the arrows and the part numbers")
    func content() throws {
        let template = try GestureEnroller.build(from: Draw.genuine)
        let svg = GestureSVG.render(template: template, pictureHref: "picture.jpg")
        let points = template.parts.reduce(0) { $0 + $1.points.count }
        let arrows = template.parts.reduce(0) { $0 + max(0, $1.points.count - 1) }
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"750\" viewBox=\"0 0 1000 750\">"))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(count("<rect ", in: svg) == points)
        #expect(count("<circle ", in: svg) == points)
        #expect(count("<line ", in: svg) == arrows)
        #expect(count("marker-end=\"url(#puff-arrow-", in: svg) == arrows)
        #expect(count("<marker ", in: svg) == 3)
        #expect(svg.contains("<image href=\"picture.jpg\""))
        for label in [">1</text>", ">2</text>", ">3</text>"] { #expect(svg.contains(label)) }
        // The tap at (700, 200) with a 45 px square.
        #expect(svg.contains("<rect x=\"677.5\" y=\"177.5\" width=\"45\" height=\"45\""))
    }

    @Test("without a picture there is no image element")
    func noPicture() throws {
        let svg = GestureSVG.render(template: try GestureEnroller.build(from: Draw.genuine), pictureHref: nil)
        #expect(!svg.contains("<image"))
    }

    @Test("the picture reference is escaped for XML", arguments: [
        ("a&b.png", "a&amp;b.png"),
        ("\"><script>x</script>", "&quot;&gt;&lt;script&gt;x&lt;/script&gt;"),
        ("it's.png", "it&apos;s.png"),
        ("a\u{0}b\u{1B}c", "abc"),
        ("line\nbreak", "line&#10;break"),
        ("é 😀", "é 😀"),
    ])
    func escaping(href: String, escaped: String) throws {
        #expect(GestureSVG.escapeAttribute(href) == escaped)
        let svg = GestureSVG.render(template: try GestureEnroller.build(from: Draw.genuine), pictureHref: href)
        #expect(svg.contains("<image href=\"\(escaped)\""))
    }

    private func count(_ needle: String, in text: String) -> Int {
        text.split(separator: needle, omittingEmptySubsequences: false).count - 1
    }
}
