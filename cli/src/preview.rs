//! `rasdf preview FILE PATH -o OUT.png`: an array as a picture. A 2-D array (or one
//! plane of a cube) is drawn as a grey image of the array's width and height, values
//! mapped linearly from a stretch's interval to black..white; a 1-D array is drawn as a
//! line plot.
//!
//! - Stretches: `zscale` (IRAF's, as astropy's `ZScaleInterval` computes it, the
//!   default for images), `minmax` (the default for plots) and `percentile` (the central
//!   P per cent of the values, as astropy's `PercentileInterval`). Masked, NaN and
//!   infinite values take no part in them.
//! - Grey: `round(255 * clamp((v - vmin) / (vmax - vmin), 0, 1))`, halves rounded away
//!   from zero; when `vmax == vmin`, values up to it are black and values above white.
//! - Masked pixels are magenta ([`MASKED_COLOUR`]), other NaN and infinite ones red
//!   ([`NON_FINITE_COLOUR`]). The PNG is 8-bit greyscale when every pixel is grey,
//!   else 8-bit RGB, grey pixels with r = g = b (plots are RGB).
//! - Orientation: by default row 0 of the array is the image's bottom row (origin
//!   lower, as ds9 and matplotlib's `origin='lower'` show images); [`Origin::Upper`]
//!   puts it at the top. Column 0 is at the left either way.
//! - Cubes (3 or more dimensions): the last two axes are the image; the leading axes,
//!   flattened in C order, number the planes (`--plane N`, needed).
//! - Plots: [`PLOT_WIDTH`] x [`PLOT_HEIGHT`] pixels, white, the values in black from
//!   left to right, the y axis from the stretch's interval (values outside it drawn at
//!   the edge), a grey frame and a light grey line at y = 0 when 0 is inside;
//!   masked, NaN and infinite values leave gaps, marked below the frame by a tick of
//!   their colour. A PNG `Comment` text chunk gives the interval.
//!
//! Memory: the array's data as the library reads it (a mapped or decoded block), its
//! mask if it has one, and for the percentile stretch one `f64` copy of the plane's
//! values; the image is encoded row by row as it is drawn, never held whole. Images of
//! more than 2^31 pixels are refused.
//!
//! The plot is drawn by a few lines of rasteriser here rather than by a plotting crate:
//! a polyline on a white canvas needs nothing more, and `plotters` would add dozens of
//! crates (fonts, image formats) to the build.

use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use rasdf::ndarray::{Datatype, NdArray, ScalarType};
use rasdf::{AsdfFile, Error, ErrorKind, Location, Result};

/// How values map to grey levels: the interval whose ends are black and white.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stretch {
    /// IRAF's zscale (astropy's ZScaleInterval): a line fitted to a sample of the
    /// sorted values; the default for images.
    Zscale,
    /// The smallest and largest value; the default for plots.
    Minmax,
    /// The central P per cent of the values (astropy's PercentileInterval).
    Percentile,
}

impl Stretch {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Stretch::Zscale => "zscale",
            Stretch::Minmax => "minmax",
            Stretch::Percentile => "percentile",
        }
    }
}

/// Where row 0 of the array goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Origin {
    /// At the bottom of the image (ds9, matplotlib's origin='lower').
    #[default]
    Lower,
    /// At the top of the image (the order of the rows in memory).
    Upper,
}

/// The parameters of the zscale stretch, as astropy's `ZScaleInterval` names them; the
/// defaults are astropy's (and IRAF's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZScale {
    /// How many values are sampled (evenly, every `len / n_samples`-th one).
    pub n_samples: usize,
    /// The fitted slope is divided by this (0 < contrast <= 1): smaller widens the
    /// interval.
    pub contrast: f64,
    /// When more than this fraction of the samples is rejected, the interval is the
    /// samples' minimum and maximum.
    pub max_reject: f64,
    /// Fewer samples left than this (or than `max_reject` allows): minimum and maximum.
    pub min_npixels: usize,
    /// Samples further than `krej` standard deviations from the line are rejected.
    pub krej: f64,
    /// Most rounds of fitting and rejection.
    pub max_iterations: usize,
}

impl Default for ZScale {
    fn default() -> Self {
        ZScale { n_samples: 1000, contrast: 0.25, max_reject: 0.5, min_npixels: 5, krej: 2.5, max_iterations: 5 }
    }
}

/// What to draw and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreviewOptions {
    /// The stretch (`None`: zscale for images, minmax for plots).
    pub stretch: Option<Stretch>,
    /// For [`Stretch::Percentile`]: the per cent of the values kept (0 < P <= 100), as
    /// many left out at each end.
    pub percentile: f64,
    /// For [`Stretch::Zscale`].
    pub zscale: ZScale,
    /// The plane of a cube: an index over its leading axes flattened in C order.
    pub plane: Option<usize>,
    /// Where row 0 goes.
    pub origin: Origin,
}

impl Default for PreviewOptions {
    fn default() -> Self {
        PreviewOptions {
            stretch: None,
            percentile: 99.5,
            zscale: ZScale::default(),
            plane: None,
            origin: Origin::Lower,
        }
    }
}

/// The colour of masked pixels (and of their ticks under a plot): magenta.
pub const MASKED_COLOUR: [u8; 3] = [255, 0, 255];
/// The colour of NaN and infinite pixels that are not masked: red.
pub const NON_FINITE_COLOUR: [u8; 3] = [255, 0, 0];
/// The width of a plot.
pub const PLOT_WIDTH: u32 = 800;
/// The height of a plot.
pub const PLOT_HEIGHT: u32 = 400;
/// The most pixels an image may have (2^31).
pub const MAX_PIXELS: u64 = 1 << 31;
/// PNG's largest width or height.
const MAX_SIDE: usize = (1 << 31) - 1;

/// What was drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The tree path of the array.
    pub path: String,
    /// The PNG's width.
    pub width: u32,
    /// The PNG's height.
    pub height: u32,
    /// A line plot of a 1-D array (not an image).
    pub plot: bool,
    /// The plane drawn and how many the cube has.
    pub plane: Option<(usize, usize)>,
    /// The stretch used.
    pub stretch: Stretch,
    /// Its interval: `None` when no value is finite and unmasked.
    pub limits: Option<(f64, f64)>,
    /// Values drawn (pixels of the image, points of the plot).
    pub values: u64,
    /// Masked values.
    pub masked: u64,
    /// NaN and infinite values not masked.
    pub non_finite: u64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.plot { format!("plot of {} values", self.values) } else { "image".to_string() };
        write!(f, "{}x{} {what} of {}", self.width, self.height, self.path)?;
        if let Some((n, of)) = self.plane {
            write!(f, " (plane {n} of {of})")?;
        }
        match self.limits {
            Some((lo, hi)) => write!(f, ", {} {lo} to {hi}", self.stretch.name())?,
            None => write!(f, ", no finite unmasked value")?,
        }
        write!(f, "; {} masked, {} NaN or infinite", self.masked, self.non_finite)
    }
}

/// An array ready to draw: checked, its interval computed.
pub struct Preview<'f> {
    array: NdArray<'f>,
    mask: Option<Vec<bool>>,
    /// Where the plane starts in the mask (plane x rows x cols).
    mask_start: usize,
    /// The byte offset of the plane's element [0, 0].
    offset: isize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
    origin: Origin,
    summary: Summary,
}

/// What [`Preview::census`] counts.
#[derive(Clone, Copy, Debug, Default)]
struct Census {
    good: u64,
    masked: u64,
    non_finite: u64,
    min: f64,
    max: f64,
}

/// Reads the array at `path` of `file`, checks it can be drawn and computes the
/// stretch's interval; [`Preview::write_png`] then draws it.
///
/// # Errors
/// [`ErrorKind::Usage`] for arguments that do not fit (exit 2): a cube without a plane or
/// a plane out of range, a plane for fewer than 3 dimensions, options out of range.
/// [`ErrorKind::NotFound`] for what the file has no preview of (exit 1, as `extract`
/// and `convert --array`): no node at `path`, a node that is not an ndarray, strings,
/// records or complex numbers, a 0-d or empty array, an image of more than
/// [`MAX_PIXELS`]. The library's errors for an array or mask that cannot be read.
pub fn prepare<'f>(file: &'f AsdfFile, path: &str, options: &PreviewOptions) -> Result<Preview<'f>> {
    let usage = |m: String| Error::new(ErrorKind::Usage(m), Location::path(path)).in_file_opt(file.path());
    let lacks = |m: String| Error::new(ErrorKind::NotFound(m), Location::path(path)).in_file_opt(file.path());
    let p = options.percentile;
    if !(p > 0.0 && p <= 100.0) {
        return Err(usage(format!("--percentile {p}: the per cent of values kept, more than 0 and at most 100")));
    }
    let z = &options.zscale;
    if !(z.contrast > 0.0 && z.contrast <= 1.0) || z.n_samples == 0 {
        return Err(usage(format!("--contrast {}: more than 0 and at most 1", z.contrast)));
    }
    let node = file.node_at(path)?;
    if !node.is_asdf_tag("core/ndarray") {
        return Err(lacks(not_an_array(file, path)));
    }
    let handle = file.array_at(node);
    let array = handle.read_dyn().map_err(|e| e.at_path(path))?;
    match array.datatype {
        Datatype::Scalar(ScalarType::Complex64 | ScalarType::Complex128) => {
            return Err(lacks(format!("{}: complex numbers have no preview (only real numbers)", array.datatype)));
        }
        Datatype::Scalar(_) => {}
        ref other => {
            return Err(lacks(format!("{other}: strings and records have no preview (only numbers)")));
        }
    }
    let shape = array.shape.clone();
    let ndim = shape.len();
    let shape_text = format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", "));
    if ndim == 0 {
        return Err(lacks("a 0-d array (a single value) has no preview".into()));
    }
    if array.is_empty() {
        return Err(lacks(format!("the array of shape {shape_text} is empty")));
    }
    let (rows, cols) = if ndim == 1 { (1, shape[0]) } else { (shape[ndim - 2], shape[ndim - 1]) };
    let planes: usize = shape[..ndim.saturating_sub(2)].iter().product();
    let plane = match (ndim, options.plane) {
        (1 | 2, None) => 0,
        (1 | 2, Some(_)) => return Err(usage(format!("--plane: the array has {ndim} dimensions, not 3 or more"))),
        (_, None) => {
            return Err(usage(format!(
                "the array of shape {shape_text} has {planes} planes: choose one with --plane N (0 to {})",
                planes - 1
            )));
        }
        (_, Some(n)) if n >= planes => {
            return Err(usage(format!(
                "--plane {n}: the array of shape {shape_text} has {planes} planes (0 to {})",
                planes - 1
            )));
        }
        (_, Some(n)) => n,
    };
    let plot = ndim == 1;
    if !plot && (rows > MAX_SIDE || cols > MAX_SIDE || (rows as u64).saturating_mul(cols as u64) > MAX_PIXELS) {
        return Err(lacks(format!("an image of {cols}x{rows} pixels is more than a preview draws (2^31 pixels)")));
    }
    // The plane's element [0, 0]: the leading axes' indices from `plane`, in C order.
    let mut offset = array.offset as isize;
    let mut rest = plane;
    for axis in (0..ndim.saturating_sub(2)).rev() {
        offset += (rest % shape[axis]) as isize * array.strides[axis];
        rest /= shape[axis];
    }
    let (row_stride, col_stride) =
        if plot { (0, array.strides[0]) } else { (array.strides[ndim - 2], array.strides[ndim - 1]) };
    let mask = handle.mask(&array).map_err(|e| e.at_path(path))?;
    if let Some(m) = &mask
        && m.len() != array.len()
    {
        return Err(lacks(format!("a mask of {} elements for an array of {}", m.len(), array.len())));
    }
    let stretch = options.stretch.unwrap_or(if plot { Stretch::Minmax } else { Stretch::Zscale });
    let (width, height) = if plot {
        (PLOT_WIDTH, PLOT_HEIGHT)
    } else {
        (u32::try_from(cols).unwrap_or(u32::MAX), u32::try_from(rows).unwrap_or(u32::MAX))
    };
    let summary = Summary {
        path: path.to_string(),
        width,
        height,
        plot,
        plane: (ndim >= 3).then_some((plane, planes)),
        stretch,
        limits: None,
        values: (rows as u64) * (cols as u64),
        masked: 0,
        non_finite: 0,
    };
    let mut preview = Preview {
        array,
        mask,
        mask_start: plane * rows * cols,
        offset,
        rows,
        cols,
        row_stride,
        col_stride,
        origin: options.origin,
        summary,
    };
    let census = preview.census().map_err(|e| Error::new(e, Location::path(path)))?;
    preview.summary.masked = census.masked;
    preview.summary.non_finite = census.non_finite;
    preview.summary.limits =
        preview.limits(stretch, &census, options).map_err(|e| Error::new(e, Location::path(path)))?;
    Ok(preview)
}

/// Why `path` is not an array, with the arrays under it if there are any.
fn not_an_array(file: &AsdfFile, path: &str) -> String {
    let prefix = format!("/{}/", path.trim_matches('/'));
    let under: Vec<String> = file
        .arrays()
        .filter_map(|a| a.path().map(str::to_string))
        .filter(|p| p.starts_with(&prefix) || prefix == "//")
        .map(|p| p.trim_start_matches('/').to_string())
        .collect();
    match under.len() {
        0 => "not an ndarray".to_string(),
        n if n <= 5 => format!("not an ndarray; the arrays under it: {}", under.join(", ")),
        n => format!("not an ndarray; the arrays under it: {}, and {} more", under[..5].join(", "), n - 5),
    }
}

/// Draws a preview of the array at `path` of `file` as a PNG into `out` ([`prepare`],
/// then [`Preview::write_png`]).
///
/// # Errors
/// As [`prepare`]; writing to `out` (as [`ErrorKind::Io`]).
pub fn preview(file: &AsdfFile, path: &str, options: &PreviewOptions, out: impl Write) -> Result<Summary> {
    let p = prepare(file, path, options)?;
    p.write_png(out)?;
    Ok(p.summary)
}

/// The command: the PNG to `output`, written atomically (or to `out` for `-`); for a
/// file, a line of [`Summary`] to `out`.
///
/// # Errors
/// As [`prepare`]; writing the output.
pub fn run(file: &AsdfFile, path: &str, options: &PreviewOptions, output: &Path, out: &mut impl Write) -> Result<()> {
    crate::outputs::refuse(file, &[output])?;
    let p = prepare(file, path, options)?;
    if output.as_os_str() == "-" {
        return p.write_png(out);
    }
    crate::outputs::write_output(output, &mut io::sink(), |staged| {
        rasdf::write::write_atomically_with(staged, |f| {
            let mut w = io::BufWriter::with_capacity(1 << 16, f);
            p.write_png(&mut w).map_err(|e| match e.into_parts() {
                (ErrorKind::Io(e), _) => e,
                (kind, _) => io::Error::other(kind.to_string()),
            })?;
            w.flush()
        })
    })
    .map_err(|e| Error::new(e, Location::default().with_file(output)))?;
    writeln!(out, "{}: {}", output.display(), p.summary)?;
    Ok(())
}

impl Preview<'_> {
    /// What was (or will be) drawn.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Row `r` of the plane (counted in the array, not the image).
    fn row(&self, r: usize) -> NdArray<'_> {
        let offset = self.offset + r as isize * self.row_stride;
        // The layout was checked against the data when the array was read, and the row
        // is part of it, so the offset is within the data.
        let offset = usize::try_from(offset).unwrap_or(0);
        NdArray::from_layout(
            &self.array.datatype,
            self.array.byteorder,
            &[self.cols],
            &[self.col_stride],
            offset,
            self.array.data(),
        )
    }

    /// The mask of row `r`, if the array has one.
    fn mask_row(&self, r: usize) -> Option<&[bool]> {
        let start = self.mask_start + r * self.cols;
        self.mask.as_deref().map(|m| &m[start..start + self.cols])
    }

    /// Calls `f` with each value of the plane in C order and whether it is masked.
    fn for_each(&self, mut f: impl FnMut(f64, bool)) -> std::result::Result<(), rasdf::ndarray::ArrayError> {
        for r in 0..self.rows {
            let mask = self.mask_row(r);
            let mut j = 0;
            self.row(r).for_each_f64(|v| {
                f(v, mask.is_some_and(|m| m[j]));
                j += 1;
            })?;
        }
        Ok(())
    }

    /// Calls `f` with each finite, unmasked value of the plane, in C order.
    fn for_each_good(&self, mut f: impl FnMut(f64)) -> std::result::Result<(), rasdf::ndarray::ArrayError> {
        self.for_each(|v, masked| {
            if !masked && v.is_finite() {
                f(v);
            }
        })
    }

    fn census(&self) -> std::result::Result<Census, rasdf::ndarray::ArrayError> {
        let mut c = Census { min: f64::INFINITY, max: f64::NEG_INFINITY, ..Census::default() };
        self.for_each(|v, masked| {
            if masked {
                c.masked += 1;
            } else if !v.is_finite() {
                c.non_finite += 1;
            } else {
                c.good += 1;
                c.min = c.min.min(v);
                c.max = c.max.max(v);
            }
        })?;
        Ok(c)
    }

    /// The stretch's interval over the finite, unmasked values.
    fn limits(
        &self,
        stretch: Stretch,
        census: &Census,
        options: &PreviewOptions,
    ) -> std::result::Result<Option<(f64, f64)>, rasdf::ndarray::ArrayError> {
        if census.good == 0 {
            return Ok(None);
        }
        let good = usize::try_from(census.good).unwrap_or(usize::MAX);
        Ok(match stretch {
            Stretch::Minmax => Some((census.min, census.max)),
            Stretch::Zscale => {
                let z = &options.zscale;
                let stride = zscale_stride(good, z.n_samples);
                let mut samples = Vec::with_capacity(good.min(z.n_samples));
                let mut k = 0usize;
                self.for_each_good(|v| {
                    if k.is_multiple_of(stride) && samples.len() < z.n_samples {
                        samples.push(v);
                    }
                    k += 1;
                })?;
                samples.sort_unstable_by(f64::total_cmp);
                zscale_of_sorted(&samples, z)
            }
            Stretch::Percentile => {
                let mut values = Vec::with_capacity(good);
                self.for_each_good(|v| values.push(v))?;
                percentile_interval(&mut values, options.percentile)
            }
        })
    }

    /// The PNG: an 8-bit RGB image (the plane) or plot.
    ///
    /// # Errors
    /// Writing to `out`, as [`ErrorKind::Io`].
    pub fn write_png(&self, out: impl Write) -> Result<()> {
        let s = &self.summary;
        let mut encoder = png::Encoder::new(out, s.width, s.height);
        // An image with no masked or non-finite pixel is all grey: one byte a pixel, a
        // third of the data to compress. fdeflate's fast mode: a 4096 x 4096 image of
        // noise encodes in 0.1 s, against 0.6 s at the default level for a file 7 %
        // smaller (and 0.2 s against 5.9 s in RGB, where it stays about the raw size).
        let grey_only = !s.plot && s.masked == 0 && s.non_finite == 0;
        encoder.set_color(if grey_only { png::ColorType::Grayscale } else { png::ColorType::Rgb });
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let png_error = |e: png::EncodingError| match e {
            png::EncodingError::IoError(e) => Error::from(e),
            e => Error::from(io::Error::other(e.to_string())),
        };
        let limits = match s.limits {
            Some((lo, hi)) => format!("{} {lo} to {hi}", s.stretch.name()),
            None => "no finite unmasked value".to_string(),
        };
        let comment = match s.plot {
            true => format!("{limits} (y axis); masked magenta, NaN and infinite red"),
            false => format!(
                "{limits}; origin {}; masked magenta, NaN and infinite red",
                if self.origin == Origin::Lower { "lower" } else { "upper" }
            ),
        };
        encoder.add_text_chunk("Software".into(), "rasdf preview".into()).map_err(png_error)?;
        encoder.add_text_chunk("Comment".into(), comment).map_err(png_error)?;
        encoder.add_itxt_chunk("Title".into(), s.path.clone()).map_err(png_error)?;
        let mut writer = encoder.write_header().map_err(png_error)?;
        if s.plot {
            let canvas = self.plot().map_err(|e| Error::new(e, Location::path(s.path.as_str())))?;
            writer.write_image_data(&canvas.pixels).map_err(png_error)?;
        } else {
            let mut stream = writer.stream_writer_with_size(256 << 10).map_err(png_error)?;
            let channels = if grey_only { 1 } else { 3 };
            let mut line = vec![0u8; channels * self.cols];
            for y in 0..self.rows {
                let r = match self.origin {
                    Origin::Lower => self.rows - 1 - y,
                    Origin::Upper => y,
                };
                let mask = self.mask_row(r);
                let mut j = 0;
                self.row(r)
                    .for_each_f64(|v| {
                        let c = if mask.is_some_and(|m| m[j]) {
                            MASKED_COLOUR
                        } else if !v.is_finite() {
                            NON_FINITE_COLOUR
                        } else {
                            let g = s.limits.map_or(0, |(lo, hi)| grey(v, lo, hi));
                            [g, g, g]
                        };
                        line[channels * j..channels * (j + 1)].copy_from_slice(&c[..channels]);
                        j += 1;
                    })
                    .map_err(|e| Error::new(e, Location::path(s.path.as_str())))?;
                stream.write_all(&line)?;
            }
            stream.finish().map_err(png_error)?;
        }
        writer.finish().map_err(png_error)
    }

    /// The line plot of a 1-D array.
    fn plot(&self) -> std::result::Result<Canvas, rasdf::ndarray::ArrayError> {
        const MARGIN: i64 = 8;
        let (w, h) = (i64::from(PLOT_WIDTH), i64::from(PLOT_HEIGHT));
        let (left, right, top, bottom) = (MARGIN, w - 1 - MARGIN, MARGIN, h - 1 - 2 * MARGIN);
        let mut canvas = Canvas::new(PLOT_WIDTH as usize, PLOT_HEIGHT as usize, WHITE);
        let limits = self.summary.limits;
        let n = self.cols;
        // Pixel coordinates are rounded from values clamped to the plot (or a fraction
        // of its width), so they fit in i64.
        #[allow(clippy::cast_possible_truncation)]
        let x_of = |i: usize| match n {
            1 => (left + right) / 2,
            _ => left + (i as f64 * (right - left) as f64 / (n - 1) as f64).round() as i64,
        };
        #[allow(clippy::cast_possible_truncation)]
        let y_of = |v: f64| match limits {
            Some((lo, hi)) if hi > lo => {
                let t = ((hi - v) / (hi - lo)).clamp(0.0, 1.0);
                top + (t * (bottom - top) as f64).round() as i64
            }
            _ => (top + bottom) / 2,
        };
        if let Some((lo, hi)) = limits
            && lo < 0.0
            && hi > 0.0
        {
            let y = y_of(0.0);
            canvas.line((left, y), (right, y), ZERO_LINE);
        }
        let (x0, x1, y0, y1) = (left - 1, right + 1, top - 1, bottom + 1);
        for (a, b) in [((x0, y0), (x1, y0)), ((x0, y1), (x1, y1)), ((x0, y0), (x0, y1)), ((x1, y0), (x1, y1))] {
            canvas.line(a, b, FRAME);
        }
        // Consecutive points in one column make a vertical span, drawn once the next
        // column is reached; a point in another column is joined to the last one.
        let mut span: Option<(i64, i64, i64)> = None;
        let mut last: Option<(i64, i64)> = None;
        let mut i = 0usize;
        self.for_each(|v, masked| {
            let x = x_of(i);
            i += 1;
            if masked || !v.is_finite() {
                let c = if masked { MASKED_COLOUR } else { NON_FINITE_COLOUR };
                canvas.line((x, h - 4 - MARGIN), (x, h - 4), c);
                last = None;
                return;
            }
            let y = y_of(v);
            match &mut span {
                Some((sx, lo, hi)) if *sx == x => {
                    *lo = (*lo).min(y);
                    *hi = (*hi).max(y);
                }
                _ => {
                    if let Some((sx, lo, hi)) = span.replace((x, y, y)) {
                        canvas.line((sx, lo), (sx, hi), INK);
                    }
                }
            }
            if let Some((lx, ly)) = last
                && lx != x
            {
                canvas.line((lx, ly), (x, y), INK);
            }
            last = Some((x, y));
        })?;
        if let Some((sx, lo, hi)) = span {
            canvas.line((sx, lo), (sx, hi), INK);
        }
        Ok(canvas)
    }
}

const WHITE: [u8; 3] = [255, 255, 255];
const INK: [u8; 3] = [0, 0, 0];
const FRAME: [u8; 3] = [160, 160, 160];
const ZERO_LINE: [u8; 3] = [215, 215, 215];

/// The grey level of `v` in the interval `lo..hi`: 0 at `lo` or below, 255 at `hi` or
/// above, linear between, rounded to the nearest level (halves up). An empty interval
/// (`lo == hi`): 0 up to it, 255 above.
#[allow(clippy::cast_possible_truncation)] // 0..=255 after the clamp
pub fn grey(v: f64, lo: f64, hi: f64) -> u8 {
    if hi > lo {
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        (t * 255.0).round() as u8
    } else if v > lo {
        255
    } else {
        0
    }
}

/// An RGB image in memory, with a line rasteriser.
struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: usize, height: usize, colour: [u8; 3]) -> Canvas {
        Canvas { width, height, pixels: colour.repeat(width * height) }
    }

    /// Sets one pixel; points outside the canvas are ignored.
    fn set(&mut self, x: i64, y: i64, colour: [u8; 3]) {
        if let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y))
            && x < self.width
            && y < self.height
        {
            let at = 3 * (y * self.width + x);
            self.pixels[at..at + 3].copy_from_slice(&colour);
        }
    }

    /// The segment from `a` to `b`, both ends included (Bresenham's algorithm: one
    /// pixel a step along the longer axis, 8-connected).
    fn line(&mut self, a: (i64, i64), b: (i64, i64), colour: [u8; 3]) {
        let (mut x, mut y) = a;
        let (dx, dy) = ((b.0 - x).abs(), -(b.1 - y).abs());
        let (sx, sy) = ((b.0 - x).signum(), (b.1 - y).signum());
        let mut err = dx + dy;
        loop {
            self.set(x, y, colour);
            if (x, y) == b {
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
}

/// The step between zscale's samples of `n` values: every `max(1, n / n_samples)`-th
/// value (astropy's `int(max(1.0, n / n_samples))`).
pub fn zscale_stride(n: usize, n_samples: usize) -> usize {
    (n / n_samples.max(1)).max(1)
}

/// The zscale interval of `values` (finite, unmasked, in the image's C order) as
/// astropy's `ZScaleInterval(...).get_limits` computes it: `None` when there are none.
pub fn zscale_interval(values: &[f64], z: &ZScale) -> Option<(f64, f64)> {
    let stride = zscale_stride(values.len(), z.n_samples);
    let mut samples: Vec<f64> = values.iter().step_by(stride).take(z.n_samples).copied().collect();
    samples.sort_unstable_by(f64::total_cmp);
    zscale_of_sorted(&samples, z)
}

/// The zscale interval of sorted samples: a line fitted by least squares to the samples
/// against their rank, samples further than `krej` standard deviations from it
/// rejected (with their neighbours, 1 % of the samples wide) and the line fitted again,
/// up to `max_iterations` times or until no more are rejected; when enough samples are
/// left, the interval is the median -/+ the slope / contrast times the ranks below and
/// above the centre, within the samples' range, else the samples' range.
pub fn zscale_of_sorted(samples: &[f64], z: &ZScale) -> Option<(f64, f64)> {
    let npix = samples.len();
    let (mut vmin, mut vmax) = (*samples.first()?, *samples.last()?);
    // Python's int() of a positive float: truncation (npix is at most n_samples).
    #[allow(clippy::cast_possible_truncation)]
    let (minpix, ngrow) =
        (z.min_npixels.max((npix as f64 * z.max_reject) as usize), ((npix as f64 * 0.01) as usize).max(1));
    let mut bad = vec![false; npix];
    let (mut ngood, mut last_ngood) = (npix, npix + 1);
    let mut slope = None;
    for _ in 0..z.max_iterations {
        if ngood >= last_ngood || ngood < minpix {
            break;
        }
        let (b, a) = fit_line(samples, &bad);
        slope = Some(b);
        let flat = |i: usize| samples[i] - (b * i as f64 + a);
        // The standard deviation (numpy's, ddof 0) of the kept samples' residuals.
        let kept = bad.iter().filter(|&&x| !x).count() as f64;
        let mean = (0..npix).filter(|&i| !bad[i]).map(flat).sum::<f64>() / kept;
        let var = (0..npix).filter(|&i| !bad[i]).map(|i| (flat(i) - mean).powi(2)).sum::<f64>() / kept;
        let threshold = z.krej * var.sqrt();
        for (i, x) in bad.iter_mut().enumerate() {
            let r = flat(i);
            if r < -threshold || r > threshold {
                *x = true;
            }
        }
        bad = dilate(&bad, ngrow);
        last_ngood = ngood;
        ngood = bad.iter().filter(|&&x| !x).count();
    }
    if ngood >= minpix
        && let Some(slope) = slope
    {
        let slope = slope / z.contrast;
        let center = (npix - 1) / 2;
        let median = match npix % 2 {
            1 => samples[npix / 2],
            _ => (samples[npix / 2 - 1] + samples[npix / 2]) / 2.0,
        };
        vmin = vmin.max(median - (center as f64 - 1.0) * slope);
        vmax = vmax.min(median + (npix - center) as f64 * slope);
    }
    Some((vmin, vmax))
}

/// Least squares of `y[i]` against `i` over the `i` not flagged in `bad`: slope and
/// intercept.
fn fit_line(y: &[f64], bad: &[bool]) -> (f64, f64) {
    let kept = || (0..y.len()).filter(|&i| !bad[i]);
    let n = kept().count() as f64;
    let mx = kept().map(|i| i as f64).sum::<f64>() / n;
    let my = kept().map(|i| y[i]).sum::<f64>() / n;
    let sxx: f64 = kept().map(|i| (i as f64 - mx).powi(2)).sum();
    let sxy: f64 = kept().map(|i| (i as f64 - mx) * (y[i] - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, my - slope * mx)
}

/// Every flag spread to its neighbours as numpy's `convolve(bad, ones(ngrow), "same")`
/// spreads it: flag `i` sets `i - (ngrow - 1) / 2 ..= i + ngrow / 2`.
fn dilate(bad: &[bool], ngrow: usize) -> Vec<bool> {
    let n = bad.len();
    let mut count = vec![0usize; n + 1];
    for (i, &b) in bad.iter().enumerate() {
        count[i + 1] = count[i] + usize::from(b);
    }
    (0..n).map(|k| count[(k + (ngrow - 1) / 2 + 1).min(n)] > count[k.saturating_sub(ngrow / 2)]).collect()
}

/// The central `percent` per cent of `values` (finite), as astropy's
/// `PercentileInterval(percent)` (numpy's `percentile`, linear interpolation, of
/// `(100 - percent) / 2` and `100 - (100 - percent) / 2`): `None` when there are none.
/// Reorders `values`.
pub fn percentile_interval(values: &mut [f64], percent: f64) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let lower = (100.0 - percent) * 0.5;
    let upper = 100.0 - lower;
    Some((quantile(values, lower / 100.0), quantile(values, upper / 100.0)))
}

/// numpy's `quantile(values, q)`, method linear: the values at the ranks either side
/// of `(n - 1) q`, interpolated as numpy's `_lerp` does.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    let n = values.len();
    let virtual_index = (n as f64 * q + (1.0 - q)) - 1.0;
    let at = |values: &mut [f64], k: usize| *values.select_nth_unstable_by(k, f64::total_cmp).1;
    if virtual_index >= (n - 1) as f64 {
        return at(values, n - 1);
    }
    if virtual_index < 0.0 {
        return at(values, 0);
    }
    let below = virtual_index.floor();
    #[allow(clippy::cast_possible_truncation)] // 0 <= below < n - 1
    let k = below as usize;
    let a = at(values, k);
    // After the selection, everything right of `k` is at least `a`: its least is next.
    let b = values[k + 1..].iter().copied().fold(f64::INFINITY, f64::min);
    let t = virtual_index - below;
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_maps_the_interval_linearly_and_clips() {
        assert_eq!(grey(0.0, 0.0, 10.0), 0);
        assert_eq!(grey(10.0, 0.0, 10.0), 255);
        assert_eq!(grey(-5.0, 0.0, 10.0), 0);
        assert_eq!(grey(50.0, 0.0, 10.0), 255);
        assert_eq!(grey(5.0, 0.0, 10.0), 128); // 127.5 rounds up
        assert_eq!(grey(1.0, 0.0, 255.0), 1);
        assert_eq!(grey(3.0, 3.0, 3.0), 0);
        assert_eq!(grey(3.5, 3.0, 3.0), 255);
    }

    #[test]
    fn minmax_of_the_ramp_and_percentile_as_numpy() {
        // numpy.percentile(arange(101), [0.25, 99.75]) == [0.25, 99.75].
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        assert_eq!(percentile_interval(&mut v, 99.5), Some((0.25, 99.75)));
        // numpy.percentile([1, 2, 3, 4], [25, 75]) == [1.75, 3.25].
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile_interval(&mut v, 50.0), Some((1.75, 3.25)));
        let mut v = vec![7.0, -1.0, 3.0];
        assert_eq!(percentile_interval(&mut v, 100.0), Some((-1.0, 7.0)));
        let mut v = vec![2.5];
        assert_eq!(percentile_interval(&mut v, 99.5), Some((2.5, 2.5)));
        assert_eq!(percentile_interval(&mut [], 99.5), None);
    }

    #[test]
    fn zscale_of_few_values_is_their_range() {
        let z = ZScale::default();
        assert_eq!(zscale_interval(&[3.0, 1.0, 2.0], &z), Some((1.0, 3.0)));
        assert_eq!(zscale_interval(&[], &z), None);
    }

    #[test]
    fn zscale_of_a_line_is_the_median_plus_the_slope_over_contrast() {
        // 1000 samples on the line 2 i + 5: no rejection; slope 2 / 0.25 = 8, median
        // 1004, center 499: vmin = max(5, 1004 - 498 * 8), vmax = min(2003, ...).
        let v: Vec<f64> = (0..1000).map(|i| 2.0 * f64::from(i) + 5.0).collect();
        assert_eq!(zscale_interval(&v, &ZScale::default()), Some((5.0, 2003.0)));
        // With contrast 1 the slope is 2: 1004 - 498 * 2 = 8, 1004 + 501 * 2 = 2006 -> 2003.
        let z = ZScale { contrast: 1.0, ..ZScale::default() };
        assert_eq!(zscale_interval(&v, &z), Some((8.0, 2003.0)));
    }

    #[test]
    fn zscale_samples_every_stride_th_value() {
        assert_eq!(zscale_stride(999, 1000), 1);
        assert_eq!(zscale_stride(2000, 1000), 2);
        assert_eq!(zscale_stride(2999, 1000), 2);
        assert_eq!(zscale_stride(4096, 1000), 4);
        // An outlier at a sampled rank moves the range; one between samples does not.
        let mut v: Vec<f64> = (0..2000).map(f64::from).collect();
        v[1] = 1e9;
        assert_eq!(zscale_interval(&v, &ZScale::default()).unwrap().1, 1998.0);
    }

    #[test]
    fn zscale_rejects_outliers_and_their_neighbours() {
        // A flat sky of slowly rising values with 20 hot pixels: the hot pixels are
        // rejected and the interval stays near the sky.
        let mut v: Vec<f64> = (0..1000).map(|i| 100.0 + f64::from(i) * 0.01).collect();
        for k in 0..20 {
            v[k * 50] = 1e6;
        }
        let (lo, hi) = zscale_interval(&v, &ZScale::default()).unwrap();
        assert!(lo >= 100.0 && hi < 200.0, "{lo} {hi}");
    }

    #[test]
    fn dilation_matches_numpy_convolve_same() {
        // numpy: a flag at 10 of 20 with kernels of 1, 2, 3, 4, 10.
        let mut bad = vec![false; 20];
        bad[10] = true;
        let on = |b: Vec<bool>| b.iter().enumerate().filter(|(_, x)| **x).map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(on(dilate(&bad, 1)), vec![10]);
        assert_eq!(on(dilate(&bad, 2)), vec![10, 11]);
        assert_eq!(on(dilate(&bad, 3)), vec![9, 10, 11]);
        assert_eq!(on(dilate(&bad, 4)), vec![9, 10, 11, 12]);
        assert_eq!(on(dilate(&bad, 10)), (6..=15).collect::<Vec<_>>());
        let mut ends = vec![false; 20];
        ends[0] = true;
        ends[19] = true;
        assert_eq!(on(dilate(&ends, 4)), vec![0, 1, 2, 18, 19]);
    }

    #[test]
    fn the_line_fit_skips_rejected_samples() {
        let y = [1.0, 3.0, 100.0, 7.0, 9.0];
        let (b, a) = fit_line(&y, &[false, false, true, false, false]);
        assert!((b - 2.0).abs() < 1e-12 && (a - 1.0).abs() < 1e-12, "{b} {a}");
    }

    fn drawn(c: &Canvas) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for y in 0..c.height {
            for x in 0..c.width {
                if c.pixels[3 * (y * c.width + x)] == 0 {
                    out.push((x, y));
                }
            }
        }
        out
    }

    #[test]
    fn the_rasteriser_draws_connected_segments_with_both_ends() {
        let mut c = Canvas::new(10, 10, WHITE);
        c.line((1, 1), (8, 1), INK);
        assert_eq!(drawn(&c), (1..=8).map(|x| (x, 1)).collect::<Vec<_>>());
        let mut c = Canvas::new(10, 10, WHITE);
        c.line((2, 7), (2, 3), INK);
        assert_eq!(drawn(&c).len(), 5);
        let mut c = Canvas::new(10, 10, WHITE);
        c.line((0, 0), (9, 9), INK);
        assert_eq!(drawn(&c), (0..10).map(|i| (i, i)).collect::<Vec<_>>());
        // A steep segment: one pixel per row, each touching the last (8-connected).
        let mut c = Canvas::new(10, 10, WHITE);
        c.line((1, 9), (4, 0), INK);
        let mut px = drawn(&c);
        assert_eq!(px.len(), 10);
        px.sort_by_key(|p| p.1);
        assert!(px.windows(2).all(|w| w[0].0.abs_diff(w[1].0) <= 1 && w[1].1 == w[0].1 + 1));
        assert!(px.contains(&(1, 9)) && px.contains(&(4, 0)));
        // Off the canvas: clipped, no panic.
        let mut c = Canvas::new(4, 4, WHITE);
        c.line((-3, 1), (6, 1), INK);
        assert_eq!(drawn(&c).len(), 4);
    }
}
