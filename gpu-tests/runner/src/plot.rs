//! The benchmark's plot: translations/s against table size (both logarithmic), one panel per
//! key pattern, one line per implementation, as a PNG written without any library (a 3x5 pixel
//! font, lines, and an uncompressed PNG stream), so the bundle needs nothing on the GPU machine.

use crate::measurements::{Pattern, Row, IMPLEMENTATIONS, SIZES};

const WIDTH: usize = 1200;
const HEIGHT: usize = 900;
const PANEL_W: usize = WIDTH / 2;
const PANEL_H: usize = HEIGHT / 2;
const COLORS: [[u8; 3]; 5] = [[214, 39, 40], [255, 127, 14], [44, 160, 44], [31, 119, 180], [110, 110, 110]];

struct Canvas {
    pixels: Vec<u8>,
}

impl Canvas {
    fn new() -> Canvas {
        Canvas { pixels: vec![255; WIDTH * HEIGHT * 3] }
    }

    fn set(&mut self, x: i64, y: i64, color: [u8; 3]) {
        if (0..WIDTH as i64).contains(&x) && (0..HEIGHT as i64).contains(&y) {
            let at = (y as usize * WIDTH + x as usize) * 3;
            self.pixels[at..at + 3].copy_from_slice(&color);
        }
    }

    fn rect(&mut self, x: i64, y: i64, w: i64, h: i64, color: [u8; 3]) {
        for dy in 0..h {
            for dx in 0..w {
                self.set(x + dx, y + dy, color);
            }
        }
    }

    /// A line `width` pixels thick (Bresenham, a square brush).
    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), width: i64, color: [u8; 3]) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.rect(x - width / 2, y - width / 2, width, width, color);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Text in the 3x5 font, scaled by 2, top-left at (x, y).
    fn text(&mut self, x: i64, y: i64, text: &str, color: [u8; 3]) {
        for (i, c) in text.chars().enumerate() {
            let glyph = glyph(c.to_ascii_lowercase());
            for row in 0..5 {
                for col in 0..3 {
                    if glyph >> (14 - (row * 3 + col)) & 1 == 1 {
                        self.rect(x + i as i64 * 8 + col * 2, y + row * 2, 2, 2, color);
                    }
                }
            }
        }
    }
}

/// 3x5 glyphs, rows top to bottom, 3 bits each (left bit first).
fn glyph(c: char) -> u16 {
    let rows: [u8; 5] = match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'a' => [2, 5, 7, 5, 5],
        'b' => [6, 5, 6, 5, 6],
        'c' => [3, 4, 4, 4, 3],
        'd' => [6, 5, 5, 5, 6],
        'e' => [7, 4, 6, 4, 7],
        'f' => [7, 4, 6, 4, 4],
        'g' => [3, 4, 5, 5, 3],
        'h' => [5, 5, 7, 5, 5],
        'i' => [7, 2, 2, 2, 7],
        'j' => [1, 1, 1, 5, 2],
        'k' => [5, 5, 6, 5, 5],
        'l' => [4, 4, 4, 4, 7],
        'm' => [5, 7, 7, 5, 5],
        'n' => [6, 5, 5, 5, 5],
        'o' => [2, 5, 5, 5, 2],
        'p' => [6, 5, 6, 4, 4],
        'q' => [2, 5, 5, 6, 3],
        'r' => [6, 5, 6, 5, 5],
        's' => [3, 4, 2, 1, 6],
        't' => [7, 2, 2, 2, 2],
        'u' => [5, 5, 5, 5, 7],
        'v' => [5, 5, 5, 5, 2],
        'w' => [5, 5, 7, 7, 5],
        'x' => [5, 5, 2, 5, 5],
        'y' => [5, 5, 2, 2, 2],
        'z' => [7, 1, 2, 4, 7],
        '-' => [0, 0, 7, 0, 0],
        '.' => [0, 0, 0, 0, 2],
        '/' => [1, 1, 2, 4, 4],
        '(' => [1, 2, 2, 2, 1],
        ')' => [4, 2, 2, 2, 4],
        _ => [0; 5],
    };
    rows.iter().fold(0, |acc, &r| acc << 3 | r as u16)
}

fn size_label(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{}m", n >> 20),
        n if n >= 1 << 10 => format!("{}k", n >> 10),
        n => n.to_string(),
    }
}

/// The PNG of the throughput rows.
pub fn throughput_png(rows: &[Row]) -> Vec<u8> {
    let mut canvas = Canvas::new();
    let rates: Vec<f64> = rows.iter().filter(|r| r.mode == "throughput").map(|r| r.rate().log10()).collect();
    let lo = rates.iter().cloned().fold(f64::INFINITY, f64::min).floor();
    let hi = rates.iter().cloned().fold(f64::NEG_INFINITY, f64::max).ceil().max(lo + 1.0);
    let (x_lo, x_hi) = ((SIZES[0] as f64).log2(), (SIZES[SIZES.len() - 1] as f64).log2());
    for (p, pattern) in Pattern::ALL.iter().enumerate() {
        let (ox, oy) = ((p % 2 * PANEL_W) as i64, (p / 2 * PANEL_H) as i64);
        let (left, right, top, bottom) =
            (ox + 70, ox + PANEL_W as i64 - 20, oy + 40, oy + PANEL_H as i64 - 40);
        let to_x =
            |n: usize| left + (((n as f64).log2() - x_lo) / (x_hi - x_lo) * (right - left) as f64) as i64;
        let to_y = |rate: f64| bottom - ((rate.log10() - lo) / (hi - lo) * (bottom - top) as f64) as i64;
        let black = [0, 0, 0];
        canvas.text(left, oy + 12, &format!("{} (translations/s vs entries)", pattern.name()), black);
        canvas.line((left, top), (left, bottom), 1, black);
        canvas.line((left, bottom), (right, bottom), 1, black);
        for &n in &SIZES {
            let x = to_x(n);
            canvas.line((x, bottom), (x, bottom + 5), 1, black);
            canvas.text(x - 8, bottom + 10, &size_label(n), black);
        }
        for decade in lo as i64..=hi as i64 {
            let y = to_y(10f64.powi(decade as i32));
            canvas.line((left - 5, y), (left, y), 1, black);
            canvas.line((left + 1, y), (right, y), 1, [225, 225, 225]);
            canvas.text(ox + 20, y - 5, &format!("1e{decade}"), black);
        }
        for (i, name) in IMPLEMENTATIONS.iter().map(|i| i.name).enumerate() {
            let color = COLORS[i];
            let points: Vec<(i64, i64)> = SIZES
                .iter()
                .filter_map(|&n| {
                    rows.iter()
                        .find(|r| {
                            r.implementation == name
                                && r.pattern == *pattern
                                && r.mode == "throughput"
                                && r.entries == n
                        })
                        .map(|r| (to_x(n), to_y(r.rate())))
                })
                .collect();
            for pair in points.windows(2) {
                canvas.line(pair[0], pair[1], 2, color);
            }
            for &(x, y) in &points {
                canvas.rect(x - 3, y - 3, 7, 7, color);
            }
            let legend_y = bottom - 20 - 14 * (IMPLEMENTATIONS.len() - i) as i64;
            canvas.rect(right - 130, legend_y, 10, 10, color);
            canvas.text(right - 115, legend_y, name, black);
        }
    }
    encode_png(&canvas.pixels)
}

/// The plot as a PNG.
fn encode_png(pixels: &[u8]) -> Vec<u8> {
    packaging::png::encode_rgb(WIDTH as u32, HEIGHT as u32, pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_header_is_standard() {
        let png = encode_png(&vec![255; WIDTH * HEIGHT * 3]);
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"));
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
    }
}
