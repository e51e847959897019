import CLockX
import CStb
import Glibc
import PuffPlatform

/// The user's picture decoded with stb_image (PNG and JPEG) into a cairo image surface.
package final class LockPicture {
    package struct LoadError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Largest decoded picture: 64 megapixels.
    package static let maximumPixels = 64 << 20

    package let width: Int
    package let height: Int
    /// A cairo image surface (ARGB32, premultiplied) holding the picture.
    package let surface: OpaquePointer

    /// Reads and decodes `path` (a regular file, not followed through a symlink).
    package convenience init(path: String) throws(LoadError) {
        try self.init(bytes: Self.read(path), path: path)
    }

    /// Reads `path` (a regular file, not followed through a symlink) without decoding it.
    package static func read(_ path: String) throws(LoadError) -> [UInt8] {
        do {
            return try PictureFile.read(path)
        } catch {
            throw LoadError(description: error.description)
        }
    }

    /// Decodes the bytes of a PNG or JPEG picture read from `path` (named in errors).
    package convenience init(bytes: [UInt8], path: String) throws(LoadError) {
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
            throw LoadError(description: "\(path) is not a PNG or JPEG picture")
        }
        guard let length = Int32(exactly: bytes.count) else { throw LoadError(description: "\(path) is too large") }
        var w: Int32 = 0, h: Int32 = 0, components: Int32 = 0
        let known = bytes.withUnsafeBufferPointer { stbi_info_from_memory($0.baseAddress, length, &w, &h, &components) }
        guard known == 1, w > 0, h > 0, Int(w) <= 100_000, Int(h) <= 100_000, Int(w) * Int(h) <= Self.maximumPixels else {
            throw LoadError(description: "\(path): unsupported picture size")
        }
        guard let decoded = bytes.withUnsafeBufferPointer({ stbi_load_from_memory($0.baseAddress, length, &w, &h, &components, 4) }) else {
            throw LoadError(description: "\(path): the picture cannot be decoded")
        }
        defer { stbi_image_free(decoded) }
        try self.init(rgba: UnsafeRawBufferPointer(start: decoded, count: 4 * Int(w) * Int(h)),
                      width: Int(w), height: Int(h), path: path)
    }

    /// A picture from decoded RGBA pixels (4 bytes a pixel, rows top to bottom), as puff-greeter's
    /// confined decoder hands them over; `path` names it in errors.
    package init(rgba: UnsafeRawBufferPointer, width: Int, height: Int, path: String) throws(LoadError) {
        guard width > 0, height > 0, width <= 100_000, height <= 100_000, width * height <= Self.maximumPixels,
              rgba.count == 4 * width * height, let w = Int32(exactly: width), let h = Int32(exactly: height) else {
            throw LoadError(description: "\(path): unsupported picture size")
        }
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h),
              cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS,
              let target = cairo_image_surface_get_data(surface) else {
            throw LoadError(description: "\(path): out of memory for the picture")
        }
        cairo_surface_flush(surface)
        let stride = Int(cairo_image_surface_get_stride(surface))
        for row in 0..<height {
            let line = (target + row * stride).withMemoryRebound(to: UInt32.self, capacity: width) { $0 }
            for column in 0..<width {
                let source = 4 * (row * width + column)
                let alpha = UInt32(rgba[source + 3])
                // cairo wants premultiplied native-endian ARGB.
                func premultiplied(_ value: UInt8) -> UInt32 { (UInt32(value) * alpha + 127) / 255 }
                line[column] = alpha << 24 | premultiplied(rgba[source]) << 16 | premultiplied(rgba[source + 1]) << 8
                    | premultiplied(rgba[source + 2])
            }
        }
        cairo_surface_mark_dirty(surface)
        self.width = width
        self.height = height
        self.surface = surface
    }

    deinit { cairo_surface_destroy(surface) }
}
