import CLockX
import Glibc
import PuffClientPicture
import PuffPlatform

/// The user's picture as a cairo image surface. The file is decoded by the client kit's
/// confined decoder (`UserPicture`), never in the lock screen's or the greeter's process.
package final class LockPicture {
    package struct LoadError: Error, CustomStringConvertible {
        package let description: String
        /// The file is there but is no picture the decoder can show (truncated, damaged), as
        /// opposed to missing or unreadable: the screens say which.
        package var undecodable = false
    }

    package let width: Int
    package let height: Int
    /// A cairo image surface (ARGB32, premultiplied) holding the picture.
    package let surface: OpaquePointer

    private init(surface: OpaquePointer, width: Int, height: Int) {
        self.surface = surface
        self.width = width
        self.height = height
    }

    /// Reads `path` (a regular file, not followed through a symlink) and decodes it in the
    /// kit's confined child.
    package convenience init(path: String) throws(LoadError) {
        let decoded: UserPicture
        do {
            decoded = try UserPicture(path: path)
        } catch {
            throw LoadError(description: error.description, undecodable: error.undecodable)
        }
        try self.init(decoded, path: path)
    }

    /// The surface of a decoded picture; `path` names it in errors.
    package convenience init(_ picture: UserPicture, path: String) throws(LoadError) {
        let surface = try picture.withRGBA { rgba throws(LoadError) in
            try Self.surface(rgba: rgba, width: picture.width, height: picture.height, path: path)
        }
        self.init(surface: surface, width: picture.width, height: picture.height)
    }

    private static func surface(rgba: UnsafeRawBufferPointer, width: Int, height: Int, path: String)
        throws(LoadError) -> OpaquePointer {
        guard UserPicture.acceptable(width: width, height: height), rgba.count == 4 * width * height,
              let w = Int32(exactly: width), let h = Int32(exactly: height) else {
            throw LoadError(description: "\(path): unsupported picture size")
        }
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h) else {
            throw LoadError(description: "\(path): out of memory for the picture")
        }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS, let target = cairo_image_surface_get_data(surface) else {
            cairo_surface_destroy(surface)
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
        return surface
    }

    deinit { cairo_surface_destroy(surface) }
}
