#![allow(clippy::cast_possible_truncation)] // test data: small values, 64-bit hosts
//! `rasdf preview`, end to end in process: the PNG decoded and checked pixel by pixel
//! against the stretch (size, row order, grey levels, the colours of masked, NaN and
//! infinite pixels), planes of cubes, every real datatype and layout giving the same
//! image, 1-D plots, the errors and their exit codes; and the stretches' intervals
//! against astropy's (`tests/python/stretch_limits.py` in `.venv-astro`).

use rasdf_testkit as common;
mod support;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use ndarray::{Array, ArrayD, IxDyn};
use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::ndarray::{ByteOrder, Datatype, ScalarType, c_strides};
use rasdf::write::{ArrayBytes, Document, WriteOptions};
use rasdf_cli::preview::{self, MASKED_COLOUR, NON_FINITE_COLOUR, PreviewOptions, Stretch};

/// `rasdf preview ARGS...`: the exit code and what went to standard output.
fn run(args: &[&str]) -> (u8, Vec<u8>) {
    let argv: Vec<&str> = std::iter::once("preview").chain(args.iter().copied()).collect();
    support::rasdf_bytes(&argv)
}

/// A decoded PNG: width, height and 8-bit RGB pixels, row by row from the top.
struct Image {
    width: usize,
    height: usize,
    /// Whether the PNG is greyscale (else RGB).
    grey: bool,
    rgb: Vec<u8>,
}

impl Image {
    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = 3 * (y * self.width + x);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

fn decode(png_bytes: &[u8]) -> Image {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    // Greyscale when every pixel is grey, else RGB: as RGB here.
    let rgb = match (info.color_type, info.bit_depth) {
        (png::ColorType::Rgb, png::BitDepth::Eight) => buf,
        (png::ColorType::Grayscale, png::BitDepth::Eight) => buf.iter().flat_map(|&g| [g, g, g]).collect(),
        other => panic!("a PNG of {other:?}"),
    };
    let grey = info.color_type == png::ColorType::Grayscale;
    Image { width: info.width as usize, height: info.height as usize, grey, rgb }
}

/// The preview of `path` in `file` with `args`, through `-o -`.
fn image(file: &Path, path: &str, args: &[&str]) -> Image {
    let mut all = vec![file.to_str().unwrap(), path, "-o", "-"];
    all.extend(args);
    let (code, out) = run(&all);
    assert_eq!(code, 0, "{args:?}");
    decode(&out)
}

/// An array of f64 in C order as a node of `doc`, masked by `mask` if given.
fn put_f64(doc: &mut Document<'_>, path: &str, shape: &[usize], values: &[f64], mask: Option<Vec<bool>>) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let array = ArrayBytes {
        datatype: Datatype::Scalar(ScalarType::Float64),
        byteorder: ByteOrder::NATIVE,
        shape: shape.to_vec(),
        strides: c_strides(shape, 8),
        data: Cow::Owned(data),
    };
    let id = doc.array_node(array, Compression::None).unwrap();
    if let Some(mask) = mask {
        doc.set_array_mask(id, mask).unwrap();
    }
    doc.set_node(path, id).unwrap();
}

fn write(doc: &Document<'_>, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    path
}

/// A 3 x 4 ramp (row r, column c holds 4 r + c) with minmax: 0 black, 11 white, each
/// pixel round(255 v / 11); row 0 at the bottom, or at the top with --origin upper.
#[test]
fn a_ramp_with_minmax_spans_black_to_white_row_zero_at_the_bottom() {
    let dir = common::temp_dir("preview-ramp");
    let mut doc = Document::new();
    let values: Vec<f64> = (0..12).map(f64::from).collect();
    put_f64(&mut doc, "ramp", &[3, 4], &values, None);
    let file = write(&doc, &dir, "ramp.asdf");
    let level = |v: f64| (255.0 * v / 11.0).round() as u8;
    for (origin, flip) in [(None, true), (Some("upper"), false)] {
        let mut args = vec!["--stretch", "minmax"];
        if let Some(o) = origin {
            args.extend(["--origin", o]);
        }
        let img = image(&file, "ramp", &args);
        assert_eq!((img.width, img.height), (4, 3));
        assert!(img.grey, "every pixel grey: a greyscale PNG");
        for y in 0..3 {
            let r = if flip { 2 - y } else { y };
            for x in 0..4 {
                let g = level((4 * r + x) as f64);
                assert_eq!(img.at(x, y), [g, g, g], "{origin:?} x={x} y={y}");
            }
        }
        let bottom_left = if flip { 2 } else { 0 };
        assert_eq!(img.at(0, bottom_left), [0, 0, 0]);
        assert_eq!(img.at(3, 2 - bottom_left), [255, 255, 255]);
    }
    // To a file: the PNG, and a line about it on standard output.
    let out = dir.join("ramp.png");
    let (code, text) = run(&[file.to_str().unwrap(), "/ramp", "-o", out.to_str().unwrap(), "--stretch", "minmax"]);
    assert_eq!(code, 0);
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("4x3 image of /ramp, minmax 0 to 11; 0 masked, 0 NaN or infinite"), "{text}");
    assert_eq!(decode(&std::fs::read(&out).unwrap()).rgb, image(&file, "ramp", &["--stretch", "minmax"]).rgb);
    // Percentile 100 is minmax.
    let all = image(&file, "ramp", &["--stretch", "percentile", "--percentile", "100"]);
    assert_eq!(all.rgb, image(&file, "ramp", &["--stretch", "minmax"]).rgb);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Masked pixels are magenta and NaN or infinite ones red, and none of them moves the
/// stretch (a masked 1e9 would).
#[test]
fn masked_and_non_finite_pixels_are_coloured_and_left_out_of_the_stretch() {
    let dir = common::temp_dir("preview-bad");
    let mut doc = Document::new();
    let mut values: Vec<f64> = (0..20).map(f64::from).collect();
    values[1] = f64::NAN;
    values[2] = f64::INFINITY;
    values[3] = f64::NEG_INFINITY;
    values[5] = 1e9;
    values[6] = f64::NAN; // masked and NaN: masked
    let mut mask = vec![false; 20];
    mask[5] = true;
    mask[6] = true;
    put_f64(&mut doc, "img", &[4, 5], &values, Some(mask));
    let file = write(&doc, &dir, "bad.asdf");
    let img = image(&file, "img", &["--stretch", "minmax", "--origin", "upper"]);
    assert!(!img.grey, "coloured pixels: an RGB PNG");
    let px = |i: usize| img.at(i % 5, i / 5);
    assert_eq!(px(0), [0, 0, 0]);
    assert_eq!(px(19), [255, 255, 255]);
    for i in [1, 2, 3] {
        assert_eq!(px(i), NON_FINITE_COLOUR, "{i}");
    }
    for i in [5, 6] {
        assert_eq!(px(i), MASKED_COLOUR, "{i}");
    }
    assert_eq!(px(4), [54, 54, 54]); // round(255 * 4 / 19) = 53.68
    let f = AsdfFile::open(&file).unwrap();
    let opts = PreviewOptions { stretch: Some(Stretch::Minmax), ..PreviewOptions::default() };
    let s = preview::preview(&f, "img", &opts, std::io::sink()).unwrap();
    assert_eq!((s.limits, s.masked, s.non_finite, s.values), (Some((0.0, 19.0)), 2, 3, 20));
    for stretch in [Stretch::Zscale, Stretch::Percentile] {
        let opts = PreviewOptions { stretch: Some(stretch), ..PreviewOptions::default() };
        let (lo, hi) = preview::prepare(&f, "img", &opts).unwrap().summary().limits.unwrap();
        assert!(lo >= 0.0 && hi <= 19.0, "{stretch:?}: {lo} {hi}");
    }
    // All bad: every pixel coloured, no interval.
    let mut doc = Document::new();
    put_f64(&mut doc, "nan", &[2, 2], &[f64::NAN; 4], Some(vec![true, false, false, false]));
    let file = write(&doc, &dir, "nan.asdf");
    let img = image(&file, "nan", &["--origin", "upper"]);
    assert_eq!(img.at(0, 0), MASKED_COLOUR);
    assert_eq!([img.at(1, 0), img.at(0, 1), img.at(1, 1)], [NON_FINITE_COLOUR; 3]);
    let f = AsdfFile::open(&file).unwrap();
    assert_eq!(preview::prepare(&f, "nan", &PreviewOptions::default()).unwrap().summary().limits, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inline data with `null`s: the nulls are masked.
#[test]
fn nulls_of_inline_data_are_masked() {
    let dir = common::temp_dir("preview-inline");
    let file = dir.join("inline.asdf");
    std::fs::write(
        &file,
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         img: !core/ndarray-1.0.0\n  data: [[1.0, null, 3.0], [4.0, 5.0, .nan]]\n  datatype: float64\n  shape: [2, 3]\n...\n",
    )
    .unwrap();
    let img = image(&file, "img", &["--stretch", "minmax"]);
    // Row 0 at the bottom: [1, null, 3]; row 1 at the top: [4, 5, nan].
    assert_eq!(img.at(0, 1), [0, 0, 0]);
    assert_eq!(img.at(1, 1), MASKED_COLOUR);
    assert_eq!(img.at(1, 0), [255, 255, 255]);
    assert_eq!(img.at(2, 0), NON_FINITE_COLOUR);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Plane N of a cube of 4 dimensions is [N / 3, N % 3] of its leading axes; without
/// --plane, or out of range, it is a usage error that says how many planes there are.
#[test]
fn a_plane_of_a_cube_indexes_the_leading_axes_flattened() {
    let dir = common::temp_dir("preview-cube");
    let mut doc = Document::new();
    let cube = ArrayD::from_shape_fn(IxDyn(&[2, 3, 4, 5]), |i| (1000 * i[0] + 100 * i[1] + 5 * i[2] + i[3]) as f32);
    doc.set_array("cube", cube.view(), Compression::Zlib).unwrap();
    let file = write(&doc, &dir, "cube.asdf");
    let s = file.to_str().unwrap();
    for plane in [0usize, 4, 5] {
        let img = image(&file, "cube", &["--plane", &plane.to_string(), "--stretch", "minmax", "--origin", "upper"]);
        assert_eq!((img.width, img.height), (5, 4));
        let (a, b) = (plane / 3, plane % 3);
        let base = (1000 * a + 100 * b) as f64;
        for y in 0..4 {
            for x in 0..5 {
                let v = base + (5 * y + x) as f64;
                let g = (255.0 * (v - base) / 19.0).round() as u8;
                assert_eq!(img.at(x, y), [g, g, g], "plane {plane}");
            }
        }
    }
    assert_eq!(run(&[s, "cube", "-o", "-"]).0, 2);
    assert_eq!(run(&[s, "cube", "-o", "-", "--plane", "6"]).0, 2);
    let f = AsdfFile::open(&file).unwrap();
    let e = preview::prepare(&f, "cube", &PreviewOptions::default()).err().unwrap().to_string();
    assert!(e.contains("has 6 planes: choose one with --plane N (0 to 5)"), "{e}");
    let opts = PreviewOptions { plane: Some(6), ..PreviewOptions::default() };
    let e = preview::prepare(&f, "cube", &opts).err().unwrap().to_string();
    assert!(e.contains("--plane 6: the array of shape (2, 3, 4, 5) has 6 planes (0 to 5)"), "{e}");
    let s3 = preview::prepare(&f, "cube", &PreviewOptions { plane: Some(5), ..PreviewOptions::default() }).unwrap();
    assert_eq!(s3.summary().plane, Some((5, 6)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every real datatype, big-endian data, and a layout other than C order (a transpose)
/// give the image of the same values as float64.
#[test]
fn every_real_datatype_and_layout_gives_the_same_image() {
    let dir = common::temp_dir("preview-types");
    let (rows, cols) = (6usize, 7usize);
    let v = |r: usize, c: usize| ((r * cols + c) % 17) as f64;
    let values: Vec<f64> = (0..rows * cols).map(|i| v(i / cols, i % cols)).collect();
    let mut doc = Document::new();
    put_f64(&mut doc, "f64", &[rows, cols], &values, None);
    let shape = (rows, cols);
    doc.set_array("f32", Array::from_shape_fn(shape, |(r, c)| v(r, c) as f32), Compression::Lz4).unwrap();
    doc.set_array("f16", Array::from_shape_fn(shape, |(r, c)| half::f16::from_f64(v(r, c))), Compression::None)
        .unwrap();
    doc.set_array("i8", Array::from_shape_fn(shape, |(r, c)| v(r, c) as i8 - 3), Compression::None).unwrap();
    doc.set_array("u64", Array::from_shape_fn(shape, |(r, c)| v(r, c) as u64 * 1000), Compression::Zlib).unwrap();
    // Big-endian int32.
    let be: Vec<u8> = values.iter().flat_map(|&x| (x as i32).to_be_bytes()).collect();
    let array = ArrayBytes {
        datatype: Datatype::Scalar(ScalarType::Int32),
        byteorder: ByteOrder::Big,
        shape: vec![rows, cols],
        strides: c_strides(&[rows, cols], 4),
        data: Cow::Owned(be),
    };
    doc.set_array_bytes("i32be", array, Compression::None).unwrap();
    // Column-major float64: the bytes of the transpose, with swapped strides.
    let fortran: Vec<u8> = (0..rows * cols).flat_map(|i| v(i % rows, i / rows).to_ne_bytes()).collect();
    let array = ArrayBytes {
        datatype: Datatype::Scalar(ScalarType::Float64),
        byteorder: ByteOrder::NATIVE,
        shape: vec![rows, cols],
        strides: vec![8, 8 * rows as isize],
        data: Cow::Owned(fortran),
    };
    doc.set_array_bytes("fortran", array, Compression::None).unwrap();
    let file = write(&doc, &dir, "types.asdf");
    for stretch in ["minmax", "zscale", "percentile"] {
        let want = image(&file, "f64", &["--stretch", stretch]);
        for name in ["f32", "f16", "i8", "u64", "i32be", "fortran"] {
            assert_eq!(image(&file, name, &["--stretch", stretch]).rgb, want.rgb, "{name} {stretch}");
        }
    }
    // Booleans: false black, true white.
    let mut doc = Document::new();
    doc.set_array("b", Array::from_shape_fn((2, 2), |(r, c)| r == c), Compression::None).unwrap();
    let file = write(&doc, &dir, "bool.asdf");
    let img = image(&file, "b", &["--stretch", "minmax", "--origin", "upper"]);
    assert_eq!([img.at(0, 0), img.at(1, 0)], [[255; 3], [0; 3]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 1-D array is a line plot: 800 x 400, white, with the line in black; a run of NaN
/// leaves a gap, marked red under the frame; a constant array and a single value draw.
#[test]
fn a_one_dimensional_array_is_a_line_plot_with_gaps() {
    let dir = common::temp_dir("preview-plot");
    let n = 1000;
    let mut values: Vec<f64> = (0..n).map(|i| (f64::from(i) / 50.0).sin()).collect();
    for v in &mut values[400..500] {
        *v = f64::NAN;
    }
    let mut doc = Document::new();
    put_f64(&mut doc, "sine", &[n as usize], &values, None);
    put_f64(&mut doc, "flat", &[5], &[2.0; 5], None);
    put_f64(&mut doc, "one", &[1], &[2.0], None);
    let long: Vec<f64> = (0..300_000).map(|i| f64::from(i % 1000)).collect();
    put_f64(&mut doc, "long", &[long.len()], &long, Some((0..long.len()).map(|i| i % 1000 == 999).collect()));
    let file = write(&doc, &dir, "plot.asdf");
    let img = image(&file, "sine", &[]);
    assert_eq!((img.width, img.height), (800, 400));
    assert!(!img.grey, "plots are RGB");
    let black = |img: &Image, x: usize| (0..img.height).filter(|&y| img.at(x, y) == [0, 0, 0]).count();
    // Points 0..400 are columns 8..322, the gap 323..401, the rest after.
    assert!((8..320).all(|x| black(&img, x) > 0));
    assert!((330..395).all(|x| black(&img, x) == 0));
    assert!((410..792).all(|x| black(&img, x) > 0));
    let red = |img: &Image, x: usize| (0..img.height).any(|y| img.at(x, y) == NON_FINITE_COLOUR);
    assert!(red(&img, 360) && !red(&img, 100));
    // The sine spans the plot: its top row and bottom row both have ink.
    assert!((0..800).any(|x| img.at(x, 8) == [0, 0, 0]) && (0..800).any(|x| img.at(x, 383) == [0, 0, 0]));
    for name in ["flat", "one", "long"] {
        let img = image(&file, name, &[]);
        assert_eq!((img.width, img.height), (800, 400));
        assert!(img.rgb.chunks(3).any(|p| p == [0, 0, 0]), "{name}");
    }
    let img = image(&file, "long", &[]);
    assert!((8..792).any(|x| (0..400).any(|y| img.at(x, y) == MASKED_COLOUR)));
    // --plane is for cubes.
    assert_eq!(run(&[file.to_str().unwrap(), "sine", "-o", "-", "--plane", "0"]).0, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What has no preview, or cannot be read or written, and the exit codes: 1 for what
/// the file has no preview of (no such path, not an array, strings, records, complex
/// numbers, 0-d or empty arrays, as `extract` and `convert --array`) and for a failed
/// write, 2 for arguments (options out of range, a missing -o, an input that cannot be
/// opened); a failure leaves no file, and an existing output as it was.
#[test]
fn errors_and_their_exit_codes() {
    let dir = common::temp_dir("preview-errors");
    let file = dir.join("odd.asdf");
    std::fs::write(
        &file,
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         text: !core/ndarray-1.0.0\n  data: [abc, de]\n  datatype: [ascii, 3]\n  shape: [2]\n\
         empty: !core/ndarray-1.0.0\n  data: [[], []]\n  datatype: float64\n  shape: [2, 0]\n\
         zero_d: !core/ndarray-1.0.0\n  data: 5.0\n  datatype: float64\n  shape: []\n\
         meta: {a: 1}\n...\n",
    )
    .unwrap();
    let mut doc = Document::new();
    let z = Array::from_shape_fn((2, 2), |(r, c)| num_complex::Complex::new(r as f64, c as f64));
    doc.set_array("z", z, Compression::None).unwrap();
    doc.set_array("ok", Array::from_shape_fn((2, 2), |(r, c)| (r + c) as f64), Compression::None).unwrap();
    let complex = write(&doc, &dir, "complex.asdf");
    let example = common::testdata("example.asdf");
    let (f, c, e) = (file.to_str().unwrap(), complex.to_str().unwrap(), example.to_str().unwrap());
    for (args, code) in [
        (vec![e, "nope", "-o", "-"], 1),
        (vec![e, "sci", "-o", "-"], 1),
        (vec![e, "catalog", "-o", "-"], 1),
        (vec![f, "text", "-o", "-"], 1),
        (vec![f, "empty", "-o", "-"], 1),
        (vec![f, "zero_d", "-o", "-"], 1),
        (vec![f, "meta", "-o", "-"], 1),
        (vec![c, "z", "-o", "-"], 1),
        (vec![c, "ok", "-o", "-", "--percentile", "0"], 2),
        (vec![c, "ok", "-o", "-", "--percentile", "101"], 2),
        (vec![c, "ok", "-o", "-", "--contrast", "0"], 2),
        (vec![c, "ok", "-o", "-", "--stretch", "bogus"], 2),
        (vec!["/nonexistent/file.asdf", "ok", "-o", "-"], 2),
        (vec![c, "ok"], 2),
        (vec![c, "ok", "-o", "-"], 0),
    ] {
        assert_eq!(run(&args).0, code, "{args:?}");
    }
    let f_ = AsdfFile::open(&example).unwrap();
    let msg = |path: &str| preview::prepare(&f_, path, &PreviewOptions::default()).err().unwrap().to_string();
    assert!(msg("sci").ends_with("not an ndarray; the arrays under it: sci/data, sci/dq, sci/err"), "{}", msg("sci"));
    assert!(msg("catalog").contains("strings and records have no preview"), "{}", msg("catalog"));
    assert!(msg("nope").contains("no node at 'nope'"), "{}", msg("nope"));
    let f_ = AsdfFile::open(&complex).unwrap();
    let e = preview::prepare(&f_, "z", &PreviewOptions::default()).err().unwrap().to_string();
    assert!(e.contains("complex numbers have no preview"), "{e}");
    // A failed write: exit 1, nothing left behind.
    let out = dir.join("missing-folder").join("x.png");
    assert_eq!(run(&[c, "ok", "-o", out.to_str().unwrap()]).0, 1);
    assert!(!out.exists());
    // An error leaves an existing output as it was.
    let out = dir.join("old.png");
    std::fs::write(&out, b"old").unwrap();
    assert_eq!(run(&[c, "z", "-o", out.to_str().unwrap()]).0, 1);
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small deterministic generator (xorshift64*) for the cross-test's images.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal: the sum of 12 uniforms less 6.
    fn gauss(&mut self) -> f64 {
        (0..12).map(|_| self.next()).sum::<f64>() - 6.0
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
}

/// zscale, percentile and minmax intervals of images of sky, stars, hot pixels, NaN,
/// masks, integers (big-endian), a constant, a plane of a cube: as astropy's
/// ZScaleInterval, PercentileInterval and MinMaxInterval, to 1e-6 relative.
#[test]
fn stretch_intervals_match_astropy() {
    let Some(py) = common::python_astro() else {
        eprintln!("skipped: RASDF_PYTHON_ASTRO is not set (scripts/test.sh makes .venv-astro)");
        return;
    };
    let dir = common::temp_dir("preview-astropy");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut doc = Document::new();
    // Sky with a gradient, stars, NaN and infinities: 60 000 values, every 60th sampled.
    let (h, w) = (200, 300);
    let mut sky: Vec<f64> =
        (0..h * w).map(|i| 1000.0 + 0.05 * (i % w) as f64 + 0.02 * (i / w) as f64 + 10.0 * rng.gauss()).collect();
    for _ in 0..300 {
        let i = (rng.next() * (h * w) as f64) as usize;
        sky[i] += 5000.0 * rng.next();
    }
    for k in 0..55 {
        let i = (rng.next() * (h * w) as f64) as usize;
        sky[i] = if k < 50 { f64::NAN } else { f64::INFINITY };
    }
    put_f64(&mut doc, "sky", &[h, w], &sky, None);
    // float32 stars on a faint sky, 1 024 000 values: every 1024th.
    let stars = Array::from_shape_fn((1000, 1024), |_| {
        let s = 50.0 + 3.0 * rng.gauss();
        (if rng.next() < 0.002 { s + 2000.0 * rng.next() } else { s }) as f32
    });
    doc.set_array("stars", stars, Compression::Lz4).unwrap();
    // Big-endian int16, 1961 values: the first 1000 sampled.
    let ints: Vec<u8> =
        (0..37 * 53).flat_map(|_| ((100.0 + 20.0 * rng.gauss()).round() as i16).to_be_bytes()).collect();
    let array = ArrayBytes {
        datatype: Datatype::Scalar(ScalarType::Int16),
        byteorder: ByteOrder::Big,
        shape: vec![37, 53],
        strides: c_strides(&[37, 53], 2),
        data: Cow::Owned(ints),
    };
    doc.set_array_bytes("ints", array, Compression::None).unwrap();
    // Masked: the masked values are 1e9, which would decide every interval.
    let (mh, mw) = (100, 120);
    let mut masked: Vec<f64> = (0..mh * mw).map(|_| -20.0 + 4.0 * rng.gauss()).collect();
    let mask: Vec<bool> = (0..mh * mw).map(|_| rng.next() < 0.1).collect();
    for (v, &m) in masked.iter_mut().zip(&mask) {
        if m {
            *v = 1e9;
        }
    }
    put_f64(&mut doc, "masked", &[mh, mw], &masked, Some(mask));
    doc.set_array("flat", Array::from_elem((40, 40), 7u8), Compression::None).unwrap();
    doc.set_array("ramp", Array::from_shape_fn((50, 50), |(r, c)| (r * 50 + c) as f64), Compression::None).unwrap();
    let cube = Array::from_shape_fn((3, 60, 80), |(p, r, c)| {
        (p as f64 * 100.0 + r as f64 - c as f64 + 5.0 * rng.gauss()) as f32
    });
    doc.set_array("cube", cube, Compression::Zlib).unwrap();
    let file = write(&doc, &dir, "stretch.asdf");

    let specs = ["sky", "stars", "ints", "masked", "flat", "ramp", "cube plane 2", "cube plane 0"];
    let percent = "99.5";
    let script = common::root().join("tests/python/stretch_limits.py");
    let output = std::process::Command::new(py)
        .arg(&script)
        .arg(&file)
        .arg(percent)
        .args(specs)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), specs.len());
    let f = AsdfFile::open(&file).unwrap();
    for line in &lines {
        let spec = line["path"].as_str().unwrap();
        let (path, plane) = match spec.split_once(" plane ") {
            Some((p, n)) => (p, Some(n.parse().unwrap())),
            None => (spec, None),
        };
        for (stretch, key) in
            [(Stretch::Zscale, "zscale"), (Stretch::Percentile, "percentile"), (Stretch::Minmax, "minmax")]
        {
            let opts = PreviewOptions { stretch: Some(stretch), plane, percentile: 99.5, ..PreviewOptions::default() };
            let (lo, hi) = preview::prepare(&f, path, &opts).unwrap().summary().limits.unwrap();
            let want = (line[key][0].as_f64().unwrap(), line[key][1].as_f64().unwrap());
            assert!(close(lo, want.0) && close(hi, want.1), "{spec} {key}: rasdf {lo} {hi}, astropy {want:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
