import CChafa
import Glibc
import PuffClientPicture
import PuffPlatform

/// The user's picture, decoded by the client kit's confined decoder (`UserPicture`), rendered
/// as terminal text with libchafa.
final class PadPicture {
    /// Why a picture cannot be shown.
    typealias LoadError = UserPicture.LoadError

    private let picture: UserPicture
    var width: Int { picture.width }
    var height: Int { picture.height }

    /// Reads `path` and decodes it in the kit's confined child (never in this process, which
    /// may be root: `puff-pad login` for another user, whose picture came from that user).
    init(path: String) throws(LoadError) {
        picture = try UserPicture(path: path)
    }

    /// The largest size in cells that fits in `columns` × `rows` with the picture's aspect
    /// ratio, given a cell's width/height ratio (0.5 for the usual terminal font).
    func fit(columns: Int, rows: Int, cellAspect: Double) -> (columns: Int, rows: Int) {
        var w = Int32(clamping: max(1, columns)), h = Int32(clamping: max(1, rows))
        chafa_calc_canvas_geometry(Int32(width), Int32(height), &w, &h, Float(cellAspect), 0, 0)
        return (max(1, Int(w)), max(1, Int(h)))
    }

    /// How the picture is drawn.
    enum Colors {
        case truecolor, indexed256, indexed16

        /// From the environment: `COLORTERM=truecolor|24bit`, else a `TERM` naming 256 colours,
        /// else the 16 ANSI colours every colour terminal has.
        static func detect() -> Colors {
            let colorterm = getenv("COLORTERM").flatMap { String(validatingCString: $0) } ?? ""
            let term = getenv("TERM").flatMap { String(validatingCString: $0) } ?? ""
            if colorterm == "truecolor" || colorterm == "24bit" { return .truecolor }
            if term.contains("256") || term.contains("direct") { return .indexed256 }
            return .indexed16
        }
    }

    /// Renders the picture as `rows` lines of `columns` cells each, with colour escapes and
    /// block symbols (`chafa_canvas_print`). Each line ends with the attributes reset.
    func render(columns: Int, rows: Int, colors: Colors) -> [String] {
        guard let config = chafa_canvas_config_new() else { return [] }
        defer { chafa_canvas_config_unref(config) }
        chafa_canvas_config_set_geometry(config, Int32(clamping: columns), Int32(clamping: rows))
        let mode: ChafaCanvasMode
        switch colors {
        case .truecolor: mode = CHAFA_CANVAS_MODE_TRUECOLOR
        case .indexed256: mode = CHAFA_CANVAS_MODE_INDEXED_240
        case .indexed16: mode = CHAFA_CANVAS_MODE_INDEXED_16
        }
        chafa_canvas_config_set_canvas_mode(config, mode)
        chafa_canvas_config_set_pixel_mode(config, CHAFA_PIXEL_MODE_SYMBOLS)
        if let symbols = chafa_symbol_map_new() {
            // Blocks, half and quarter blocks and shades: sharp in every monospace font.
            let tags = CHAFA_SYMBOL_TAG_BLOCK.rawValue | CHAFA_SYMBOL_TAG_SPACE.rawValue
                | CHAFA_SYMBOL_TAG_HALF.rawValue | CHAFA_SYMBOL_TAG_QUAD.rawValue
            chafa_symbol_map_add_by_tags(symbols, ChafaSymbolTags(rawValue: tags))
            chafa_canvas_config_set_symbol_map(config, symbols)
            chafa_symbol_map_unref(symbols)
        }
        guard let canvas = chafa_canvas_new(config) else { return [] }
        defer { chafa_canvas_unref(canvas) }
        picture.withRGBA { pixels in
            chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, pixels.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                         Int32(width), Int32(height), Int32(width * 4))
        }
        let database = chafa_term_db_get_default()
        let info = chafa_term_db_get_fallback_info(database)
        defer { if let info { chafa_term_info_unref(info) } }
        guard let printed = chafa_canvas_print(canvas, info) else { return [] }
        let text = String(cString: printed.pointee.str)
        g_string_free(printed, 1)
        return text.split(separator: "\n", omittingEmptySubsequences: false).prefix(rows).map(String.init)
    }
}
