import PuffCore

/// Where the picture sits on the screen and how cells map to picture pixels.
///
/// The picture fills exactly `columns` × `rows` cells from (`left`, `top`), so cell (c, r) of
/// the picture covers pixels [c·W/columns, (c+1)·W/columns) × [r·H/rows, (r+1)·H/rows). A cell
/// mouse report names a whole cell, and the pad sends the pixel at the cell's centre: the error
/// is at most half a cell in each direction. A pixel report (SGR-Pixels, mode 1016) also says
/// where inside the cell, and the pad sends that point.
struct PictureLayout: Equatable {
    let left: Int
    let top: Int
    let columns: Int
    let rows: Int
    let pictureWidth: Int
    let pictureHeight: Int

    /// Picture pixels per cell, horizontally and vertically.
    var cellSize: (width: Double, height: Double) {
        (Double(pictureWidth) / Double(columns), Double(pictureHeight) / Double(rows))
    }

    /// Whether a screen cell shows part of the picture.
    func contains(column: Int, row: Int) -> Bool {
        column >= left && column < left + columns && row >= top && row < top + rows
    }

    /// The picture pixel at the centre of a screen cell; cells off the picture are first moved
    /// to the nearest picture cell (a stroke that leaves the picture follows its edge).
    func point(column: Int, row: Int, within: CellOffset = .centre) -> GesturePoint {
        let c = min(max(column - left, 0), columns - 1)
        let r = min(max(row - top, 0), rows - 1)
        let fx = min(max(within.x, 0), 1), fy = min(max(within.y, 0), 1)
        let cell = cellSize
        return GesturePoint(x: round3(min(Double(pictureWidth), (Double(c) + fx) * cell.width)),
                            y: round3(min(Double(pictureHeight), (Double(r) + fy) * cell.height)))
    }

    /// The screen cell showing a picture pixel.
    func cell(of point: GesturePoint) -> (column: Int, row: Int) {
        let cell = cellSize
        let c = min(max(Int((point.x / cell.width).rounded(.down)), 0), columns - 1)
        let r = min(max(Int((point.y / cell.height).rounded(.down)), 0), rows - 1)
        return (left + c, top + r)
    }

    /// The wire format keeps thousandths of a pixel.
    private func round3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}
