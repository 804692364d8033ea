//! `rasdf to-yaml FILE -o OUT`: the file as pure YAML (every array inline), like
//! `asdftool to_yaml`; tags, anchors and key order are kept, and the reference library
//! reads OUT to the same tree and values. Unlike the reference's own `to_yaml` it also
//! handles 0-d arrays, inline arrays with nulls and nested structured datatypes.

use crate::AsdfFile;
use crate::error::{Error, Result};
use crate::write::{ArrayStorage, Document, WriteOptions};

/// Python's `repr` of a float inside a complex: no `.0` added (`1`, `1.5`, `1e+20`).
fn complex_part(x: f64) -> String {
    let s = crate::cli::pyrepr::float_repr(x);
    s.strip_suffix(".0").map_or_else(|| s.clone(), str::to_string)
}

/// Python's `str(complex)`: `(1+2j)`, `2j`, `(-0+0j)`, `(nan+infj)`.
pub fn complex_repr(re: f64, im: f64) -> String {
    let imag = complex_part(im);
    // Python shows no sign on a NaN: `(1+nanj)` whatever its sign bit.
    let imag_signed = if im.is_sign_negative() && !im.is_nan() && !imag.starts_with('-') {
        format!("-{imag}")
    } else if imag.starts_with('-') {
        imag
    } else {
        format!("+{imag}")
    };
    if re == 0.0 && re.is_sign_positive() {
        return format!("{}j", complex_part(im));
    }
    format!("({}{imag_signed}j)", complex_part(re))
}

/// The whole YAML-only ASDF file for `file`.
///
/// # Errors
/// Any error reading an array.
pub fn to_yaml(file: &AsdfFile) -> Result<String> {
    let doc = Document::from_file(file)?;
    let mut out = std::io::Cursor::new(Vec::new());
    let options = WriteOptions { storage: Some(ArrayStorage::Inline), ..WriteOptions::default() };
    doc.write(&mut out, None, &options)?;
    Ok(String::from_utf8_lossy(&out.into_inner()).into_owned())
}

/// Writes `to_yaml(file)` to `path` through a temporary file in the same folder.
///
/// # Errors
/// Reading arrays, or writing the output.
pub fn write(file: &AsdfFile, path: &std::path::Path) -> Result<()> {
    let text = to_yaml(file)?;
    crate::cli::write_atomically(path, text.as_bytes()).map_err(|e| Error::from(e).in_file(path))
}

#[cfg(test)]
mod tests {
    use super::complex_repr;

    #[test]
    fn complex_as_python_str() {
        assert_eq!(complex_repr(1.0, 2.0), "(1+2j)");
        assert_eq!(complex_repr(0.0, 2.0), "2j");
        assert_eq!(complex_repr(0.0, 0.0), "0j");
        assert_eq!(complex_repr(-0.0, 0.0), "(-0+0j)");
        assert_eq!(complex_repr(f64::NAN, f64::INFINITY), "(nan+infj)");
        assert_eq!(complex_repr(f64::NAN, f64::NEG_INFINITY), "(nan-infj)");
        assert_eq!(complex_repr(1.0, -f64::NAN), "(1+nanj)");
        assert_eq!(complex_repr(-f64::NAN, 1.0), "(nan+1j)");
        assert_eq!(complex_repr(0.0, -f64::NAN), "nanj");
        assert_eq!(complex_repr(0.0, -f64::MAX), "-1.7976931348623157e+308j");
        assert_eq!(complex_repr(1.5, -1e-20), "(1.5-1e-20j)");
    }
}
