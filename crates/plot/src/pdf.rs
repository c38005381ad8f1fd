//! A plotters backend that writes a one-page vector PDF (PDF 1.4): lines,
//! paths, rectangles, polygons and circles as PDF path operators, text
//! in the standard Helvetica font (every PDF reader has it, so nothing is
//! embedded), WinAnsi-encoded, placed with Helvetica's advance widths.
//!
//! One figure pixel is 0.75 pt (a CSS pixel), so the PDF page has the
//! SVG's physical size. The file is uncompressed: a figure of a few
//! thousand points stays small, and the content is readable text.

use std::fmt::Write as _;
use std::io;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};

/// PDF points per figure pixel.
pub const PT_PER_PX: f64 = 0.75;
/// Plotters' text size is in pixels of a box 1.24 em high (its SVG
/// backend divides by the same factor).
const EM_PER_SIZE: f64 = 1.0 / 1.24;

/// Helvetica's advance widths (units of 1/1000 em) for WinAnsi codes 32–126.
const ASCII_WIDTHS: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278,
    278, // ' '…'/'
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584,
    556, // '0'…'?'
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722,
    778, // '@'…'O'
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
    556, // 'P'…'_'
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556,
    556, // '`'…'o'
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // 'p'…'~'
];

/// Advance width (1/1000 em) of a WinAnsi byte.
fn width(b: u8) -> u16 {
    match b {
        32..=126 => ASCII_WIDTHS[(b - 32) as usize],
        0x85 | 0x97 => 1000, // … —
        0x91 | 0x92 => 222,  // ‘ ’
        0x93 | 0x94 => 333,  // “ ”
        0x96 => 556,         // –
        0xB0 => 400,         // °
        0xB7 => 278,         // ·
        0xD7 | 0xF7 => 584,  // × ÷
        0xC0..=0xC5 | 0xC8..=0xCB => 667,
        0xCC..=0xCF | 0xEC..=0xEF => 278,
        0xD2..=0xD6 | 0xD8 => 778,
        0xC6 => 1000,
        0xE6 => 889,
        0xE7 | 0xFD | 0xFF => 500,
        0xC7 | 0xD0 | 0xD1 | 0xD9..=0xDC => 722,
        _ => 556,
    }
}

/// A character in WinAnsiEncoding (`?` for those it lacks).
fn win_ansi(c: char) -> u8 {
    match c {
        ' '..='~' => c as u8,
        '\u{A0}'..='\u{FF}' => c as u32 as u8,
        '−' | '‐' => b'-',
        'μ' => 0xB5,
        '…' => 0x85,
        '‘' => 0x91,
        '’' => 0x92,
        '“' => 0x93,
        '”' => 0x94,
        '–' => 0x96,
        '—' => 0x97,
        _ => b'?',
    }
}

/// Width of `text` in pixels at plotters text size `size`.
pub fn text_width(text: &str, size: f64) -> f64 {
    let units: u32 = text.chars().map(|c| u32::from(width(win_ansi(c)))).sum();
    units as f64 / 1000.0 * size * EM_PER_SIZE
}

/// Writes a PDF into `out` when presented.
pub struct PdfBackend<'a> {
    /// Where the file goes.
    out: &'a mut Vec<u8>,
    /// Figure size in pixels.
    size: (u32, u32),
    /// The page's content stream being built.
    content: Vec<u8>,
    /// Document title (Info dictionary).
    title: Option<String>,
    /// Written already (present is also called on drop).
    done: bool,
}

impl<'a> PdfBackend<'a> {
    /// A figure of `size` pixels, written to `out`.
    pub fn new(out: &'a mut Vec<u8>, size: (u32, u32), title: Option<String>) -> PdfBackend<'a> {
        PdfBackend {
            out,
            size,
            content: Vec::new(),
            title,
            done: false,
        }
    }

    /// Page x of a pixel column.
    fn x(&self, px: f64) -> f64 {
        px * PT_PER_PX
    }

    /// Page y (upwards) of a pixel row (downwards).
    fn y(&self, py: f64) -> f64 {
        (self.size.1 as f64 - py) * PT_PER_PX
    }

    fn op(&mut self, s: &str) {
        self.content.extend_from_slice(s.as_bytes());
        self.content.push(b'\n');
    }

    /// Colour operators (stroke and fill); alpha is blended on white, as
    /// the figure's background is white.
    fn color(&mut self, c: BackendColor) {
        let ch = |v: u8| {
            let v = c.alpha * v as f64 + (1.0 - c.alpha) * 255.0;
            num(v / 255.0)
        };
        let (r, g, b) = (ch(c.rgb.0), ch(c.rgb.1), ch(c.rgb.2));
        self.op(&format!("{r} {g} {b} RG {r} {g} {b} rg"));
    }

    fn path_ops(&mut self, points: &[BackendCoord], close: bool) {
        let mut s = String::new();
        for (i, (px, py)) in points.iter().enumerate() {
            let op = if i == 0 { "m" } else { "l" };
            let _ = writeln!(
                s,
                "{} {} {op}",
                num(self.x(*px as f64)),
                num(self.y(*py as f64))
            );
        }
        if close {
            s.push_str("h\n");
        }
        self.content.extend_from_slice(s.as_bytes());
    }

    /// The whole file: catalog, page tree, page, content, font, info, xref.
    fn file(&self) -> Vec<u8> {
        let (w, h) = (
            num(self.size.0 as f64 * PT_PER_PX),
            num(self.size.1 as f64 * PT_PER_PX),
        );
        let mut title = b"(streamgauge plot)".to_vec();
        if let Some(t) = &self.title {
            title = literal(t);
        }
        let mut info = b"<< /Producer (streamgauge plot) /Title ".to_vec();
        info.extend_from_slice(&title);
        info.extend_from_slice(b" >>");
        let mut content = format!("<< /Length {} >>\nstream\n", self.content.len()).into_bytes();
        content.extend_from_slice(&self.content);
        content.extend_from_slice(b"\nendstream");
        let objects: Vec<Vec<u8>> = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Contents 4 0 R \
                 /Resources << /Font << /F1 5 0 R >> >> >>"
            )
            .into_bytes(),
            content,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_vec(),
            info,
        ];
        // A binary comment line marks the file as binary for transfer tools.
        let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
        let mut offsets = Vec::with_capacity(objects.len());
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(table, "{o:010} 00000 n ");
        }
        let _ = write!(
            table,
            "trailer\n<< /Size {} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        );
        out.extend_from_slice(table.as_bytes());
        out
    }
}

/// A number with at most three decimals, no trailing zeros.
fn num(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// A PDF literal string of `text` in WinAnsiEncoding.
fn literal(text: &str) -> Vec<u8> {
    let mut out = vec![b'('];
    for c in text.chars() {
        match win_ansi(c) {
            b @ (b'(' | b')' | b'\\') => out.extend_from_slice(&[b'\\', b]),
            b => out.push(b),
        }
    }
    out.push(b')');
    out
}

type Result<T> = std::result::Result<T, DrawingErrorKind<io::Error>>;

impl DrawingBackend for PdfBackend<'_> {
    type ErrorType = io::Error;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<()> {
        Ok(())
    }

    fn present(&mut self) -> Result<()> {
        if !self.done {
            *self.out = self.file();
            self.done = true;
        }
        Ok(())
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<()> {
        if color.alpha == 0.0 {
            return Ok(());
        }
        self.color(color);
        let (x, y) = (self.x(point.0 as f64), self.y(point.1 as f64 + 1.0));
        self.op(&format!(
            "{} {} {} {} re f",
            num(x),
            num(y),
            num(PT_PER_PX),
            num(PT_PER_PX)
        ));
        Ok(())
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<()> {
        self.draw_path([from, to], style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<()> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        self.color(style.color());
        let (x0, y0) = (self.x(upper_left.0 as f64), self.y(upper_left.1 as f64));
        let (x1, y1) = (self.x(bottom_right.0 as f64), self.y(bottom_right.1 as f64));
        let rect = format!(
            "{} {} {} {} re",
            num(x0),
            num(y1),
            num(x1 - x0),
            num(y0 - y1)
        );
        if fill {
            self.op(&format!("{rect} f"));
        } else {
            let w = num(style.stroke_width().max(1) as f64 * PT_PER_PX);
            self.op(&format!("{w} w {rect} S"));
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<()> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let points: Vec<BackendCoord> = path.into_iter().collect();
        if points.len() < 2 {
            return Ok(());
        }
        self.color(style.color());
        let w = num(style.stroke_width().max(1) as f64 * PT_PER_PX);
        // Round joins and caps: a polyline of many short steps stays smooth.
        self.op(&format!("{w} w 1 j 1 J"));
        self.path_ops(&points, false);
        self.op("S");
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<()> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        self.color(style.color());
        let (cx, cy) = (self.x(center.0 as f64), self.y(center.1 as f64));
        let r = radius as f64 * PT_PER_PX;
        // Four cubic Béziers; k places the control points of a quarter circle.
        let k = r * 0.552_284_75;
        let mut s = format!("{} {} m\n", num(cx + r), num(cy));
        for (x1, y1, x2, y2, x, y) in [
            (cx + r, cy + k, cx + k, cy + r, cx, cy + r),
            (cx - k, cy + r, cx - r, cy + k, cx - r, cy),
            (cx - r, cy - k, cx - k, cy - r, cx, cy - r),
            (cx + k, cy - r, cx + r, cy - k, cx + r, cy),
        ] {
            let _ = writeln!(
                s,
                "{} {} {} {} {} {} c",
                num(x1),
                num(y1),
                num(x2),
                num(y2),
                num(x),
                num(y)
            );
        }
        s.push_str(if fill { "f" } else { "S" });
        if !fill {
            let w = num(style.stroke_width().max(1) as f64 * PT_PER_PX);
            self.op(&format!("{w} w"));
        }
        self.op(&s);
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<()> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let points: Vec<BackendCoord> = vert.into_iter().collect();
        if points.len() < 3 {
            return Ok(());
        }
        self.color(style.color());
        self.path_ops(&points, true);
        self.op("f");
        Ok(())
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<()> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let em = style.size() * EM_PER_SIZE;
        let width = text_width(text, style.size());
        // Offsets in the text's own frame (pixels, y downwards), as
        // plotters' SVG backend places its anchors.
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.76 * em,
            VPos::Center => 0.36 * em,
            VPos::Bottom => -0.22 * em,
        };
        // Rotation of the text frame (pixel space, y downwards).
        let (cos, sin) = match style.transform() {
            FontTransform::Rotate90 => (0.0, 1.0),
            FontTransform::Rotate180 => (-1.0, 0.0),
            FontTransform::Rotate270 => (0.0, -1.0),
            _ => (1.0, 0.0),
        };
        let px = pos.0 as f64 + dx * cos - dy * sin;
        let py = pos.1 as f64 + dx * sin + dy * cos;
        // The page's y axis points up: the matrix flips the rotation's sign.
        let size = em * PT_PER_PX;
        self.color(color);
        let mut s = format!(
            "BT /F1 {} Tf {} {} {} {} {} {} Tm ",
            num(size),
            num(cos),
            num(-sin),
            num(sin),
            num(cos),
            num(self.x(px)),
            num(self.y(py))
        )
        .into_bytes();
        s.extend_from_slice(&literal(text));
        s.extend_from_slice(b" Tj ET");
        self.content.extend_from_slice(&s);
        self.content.push(b'\n');
        Ok(())
    }

    fn estimate_text_size<T: BackendTextStyle>(&self, text: &str, style: &T) -> Result<(u32, u32)> {
        let w = text_width(text, style.size()).ceil() as u32;
        let h = style.size().ceil() as u32;
        Ok(match style.transform() {
            FontTransform::Rotate90 | FontTransform::Rotate270 => (h, w),
            _ => (w, h),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helvetica_widths_and_escapes() {
        // "Hi" = 722 + 222 units; size 12.4 → 10 px em.
        assert!((text_width("Hi", 12.4) - 9.44).abs() < 1e-9);
        assert_eq!(
            literal("a(b)\\ µs − 1"),
            b"(a\\(b\\)\\\\ \xB5s - 1)".to_vec()
        );
        assert_eq!(num(1.0), "1");
        assert_eq!(num(-0.0001), "0");
        assert_eq!(num(2.5), "2.5");
    }
}
