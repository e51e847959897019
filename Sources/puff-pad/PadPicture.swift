import CChafa
import CStb
import Glibc
import PuffPlatform

/// A picture decoded to RGBA pixels with stb_image (PNG and JPEG), ready to be rendered as
/// terminal text with libchafa. The pixels are malloc'ed (by stb_image or by the reader of the
/// unprivileged decoder); `stbi_image_free` is `free`.
final class PadPicture {
    /// Why a picture cannot be shown.
    struct LoadError: Error, CustomStringConvertible {
        let description: String
    }

    /// Largest decoded picture: 64 megapixels (256 MiB of RGBA).
    static let maximumPixels = 64 << 20

    let width: Int
    let height: Int
    private let pixels: UnsafeMutablePointer<UInt8>

    /// Reads and decodes `path`. As root (`puff-pad login` for another user, whose picture
    /// came from that user), stb_image runs only in a child that has become `nobody`
    /// (`decodeUnprivileged`): a flaw in the decoder cannot run code as root.
    init(path: String) throws(LoadError) {
        let bytes: [UInt8]
        do {
            bytes = try PictureFile.read(path)
        } catch {
            throw LoadError(description: error.description)
        }
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
            throw LoadError(description: "\(path) is not a PNG or JPEG picture")
        }
        if geteuid() == 0 || getuid() == 0 {
            (width, height, pixels) = try Self.decodeUnprivileged(bytes, path: path)
            return
        }
        guard let decoded = Self.decode(bytes) else { throw LoadError(description: "\(path): the picture cannot be decoded") }
        (width, height, pixels) = decoded
    }

    /// stb_image on `bytes`, within the size limits; the pixels are RGBA and malloc'ed.
    private static func decode(_ bytes: [UInt8]) -> (Int, Int, UnsafeMutablePointer<UInt8>)? {
        guard let length = Int32(exactly: bytes.count) else { return nil }
        var w: Int32 = 0, h: Int32 = 0, components: Int32 = 0
        let known = bytes.withUnsafeBufferPointer { stbi_info_from_memory($0.baseAddress, length, &w, &h, &components) }
        guard known == 1, Self.acceptable(Int(w), Int(h)) else { return nil }
        let decoded = bytes.withUnsafeBufferPointer { stbi_load_from_memory($0.baseAddress, length, &w, &h, &components, 4) }
        guard let decoded, Self.acceptable(Int(w), Int(h)) else { return nil }
        return (Int(w), Int(h), decoded)
    }

    private static func acceptable(_ w: Int, _ h: Int) -> Bool {
        w > 0 && h > 0 && w <= 100_000 && h <= 100_000 && w * h <= maximumPixels
    }

    /// The unprivileged user the decoder runs as.
    static let nobody: UInt32 = 65534

    /// Decodes in a forked child that drops every group and becomes `nobody` first, and reads
    /// back its answer as untrusted data: width and height (checked again), then exactly
    /// width × height × 4 bytes, then a clean exit.
    private static func decodeUnprivileged(_ bytes: [UInt8], path: String) throws(LoadError)
        -> (Int, Int, UnsafeMutablePointer<UInt8>) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw LoadError(description: "\(path): cannot start the decoder") }
        let child = fork()
        if child == 0 {
            close(ends[0])
            guard setgroups(0, nil) == 0, setgid(nobody) == 0, setuid(nobody) == 0, setuid(0) != 0 else { _exit(2) }
            guard let (w, h, pixels) = decode(bytes) else { _exit(1) }
            var header = [Int32(w), Int32(h)]
            let sent = header.withUnsafeMutableBytes { writeAll(ends[1], UnsafeRawBufferPointer($0)) }
                && writeAll(ends[1], UnsafeRawBufferPointer(start: pixels, count: w * h * 4))
            _exit(sent ? 0 : 3)
        }
        close(ends[1])
        defer { close(ends[0]) }
        guard child > 0 else { throw LoadError(description: "\(path): cannot start the decoder") }
        var header: [Int32] = [0, 0]
        let got = header.withUnsafeMutableBytes { readAll(ends[0], $0) }
        let w = Int(header[0]), h = Int(header[1])
        var pixels: UnsafeMutablePointer<UInt8>?
        if got, acceptable(w, h), let buffer = malloc(w * h * 4)?.assumingMemoryBound(to: UInt8.self) {
            if readAll(ends[0], UnsafeMutableRawBufferPointer(start: buffer, count: w * h * 4)) {
                pixels = buffer
            } else {
                free(buffer)
            }
        }
        let status = (try? ChildProcess.wait(child)) ?? -1
        guard let pixels else { throw LoadError(description: "\(path): the picture cannot be decoded") }
        guard status == 0 else {
            free(pixels)
            throw LoadError(description: "\(path): the picture cannot be decoded")
        }
        return (w, h, pixels)
    }

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        (try? FileDescriptor.writeAll(fd, buffer)) != nil
    }

    private static func readAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        (try? FileDescriptor.read(fd, into: buffer)) == buffer.count
    }

    deinit { stbi_image_free(pixels) }

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
        chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, pixels,
                                     Int32(width), Int32(height), Int32(width * 4))
        let database = chafa_term_db_get_default()
        let info = chafa_term_db_get_fallback_info(database)
        defer { if let info { chafa_term_info_unref(info) } }
        guard let printed = chafa_canvas_print(canvas, info) else { return [] }
        let text = String(cString: printed.pointee.str)
        g_string_free(printed, 1)
        return text.split(separator: "\n", omittingEmptySubsequences: false).prefix(rows).map(String.init)
    }
}
