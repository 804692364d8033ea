//! FITS files that hold an ASDF file: ASDF-in-FITS, as every JWST product is written.
//!
//! A FITS file is a sequence of header/data units (HDUs). Each header is 2880-byte
//! records of 80-character cards (`KEYWORD = value / comment`) up to an `END` card; the
//! data that follows takes `|BITPIX| / 8 × GCOUNT × (PCOUNT + NAXIS1 × … × NAXISn)`
//! bytes (none when `NAXIS = 0`), padded to a whole record. The first HDU starts with
//! `SIMPLE  =`, every other one with `XTENSION=`.
//!
//! The ASDF file is the data of the HDU named `ASDF` (`EXTNAME`, any case, the first
//! one): stdatamodels writes a one-row `BINTABLE` whose one column `ASDF_METADATA`
//! (`TFORM1 = '{N}B'`) holds it; asdf 2.15 and older wrote an `IMAGE` of `BITPIX = 8`
//! (and for a while a non-standard `XTENSION = 'ASDF'`). Arrays of its tree may have a
//! `source` of `fits:EXTNAME,EXTVER` (`fits:SCI,1`) or `fits:INDEX` (`fits:3`): the
//! data of that HDU, big-endian, read as astropy reads it (as stdatamodels does):
//!
//! - an image: its `BITPIX` type, shape `NAXISn` reversed; `BZERO = 2^(n-1)` with
//!   `BSCALE = 1` on a 16, 32 or 64-bit image is unsigned (`BZERO = -128` on 8 bits:
//!   signed), any other `BZERO`/`BSCALE`, or a `BLANK` on an integer image, gives
//!   float32 (from 8 and 16 bits, and float32 data) or float64 values, computed in that
//!   type, `BLANK` elements NaN;
//! - a binary table: a record array of `NAXIS2` rows, one field per column (`L`
//!   logical as bool8, `B I J K E D C M` as numbers, `A` as text with trailing blanks
//!   dropped, `TDIMn` shapes), `TZEROn` of `2^(n-1)` on `I J K` unsigned, other
//!   `TZEROn`/`TSCALn` float64.
//!
//! Data that needs none of these conversions is read in place (see
//! [`HduArray::zero_copy`]). Everything read from the file is checked against its
//! length before use, and arithmetic on header values is checked: a hostile header
//! gives a [`FitsError`], never a panic or an allocation beyond what the file holds.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use crate::Limits;
use crate::ndarray::{ByteOrder, Datatype, Field, ScalarType};

/// Bytes in a header record or a data record.
pub const RECORD: usize = 2880;
/// Bytes in a header card.
const CARD: usize = 80;
/// The largest `NAXIS` and `TFIELDS` the standard allows.
const MAX_AXES: i128 = 999;

/// Whether `bytes` start like a FITS file (`SIMPLE  =`).
pub fn is_fits(bytes: &[u8]) -> bool {
    bytes.starts_with(b"SIMPLE  =")
}

/// What is wrong with a FITS file, its ASDF extension, or a `fits:` source. Messages
/// name the HDU (its number from 0, and its `EXTNAME,EXTVER`) and byte offsets in the
/// whole file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FitsError {
    /// A header is malformed: a mandatory keyword missing or of the wrong kind.
    #[error("FITS HDU {hdu} (header at byte {at}): {message}")]
    Header {
        /// The HDU's number (0 is the primary HDU).
        hdu: usize,
        /// The header's offset.
        at: u64,
        /// What is wrong.
        message: String,
    },
    /// The file ends before a header's `END` card.
    #[error("FITS HDU {hdu} (header at byte {at}): no END card before the end of the file ({len} bytes)")]
    NoEnd {
        /// The HDU's number.
        hdu: usize,
        /// The header's offset.
        at: u64,
        /// The file's length.
        len: u64,
    },
    /// An HDU's data (or its header's last record) goes past the end of the file.
    #[error("FITS HDU {hdu} ({name}): needs bytes {start}..{end}, but the file has {len}: it is cut short")]
    Truncated {
        /// The HDU's number.
        hdu: usize,
        /// Its name, as `EXTNAME,EXTVER`.
        name: String,
        /// First byte needed.
        start: u64,
        /// One past the last byte needed.
        end: u64,
        /// The file's length.
        len: u64,
    },
    /// No HDU is named `ASDF`.
    #[error("a FITS file without an ASDF extension: none of its {hdus} HDUs is named ASDF{stopped}")]
    NoAsdf {
        /// HDUs read.
        hdus: usize,
        /// Why reading HDUs stopped early, if it did (with a leading `; `).
        stopped: String,
    },
    /// A `fits:` source that names no HDU in either form.
    #[error("source 'fits:{0}' is neither fits:EXTNAME,EXTVER nor fits:INDEX")]
    BadSource(String),
    /// A `fits:` source that names an HDU the file does not have.
    #[error("source 'fits:{spec}' names no HDU of the file (it has {hdus}: {names}){stopped}")]
    NoSuchHdu {
        /// The source after `fits:`.
        spec: String,
        /// HDUs read.
        hdus: usize,
        /// The names of the first HDUs.
        names: String,
        /// Why reading HDUs stopped early, if it did (with a leading `; `).
        stopped: String,
    },
    /// A `fits:` source in a file that is not inside a FITS file.
    #[error("source 'fits:{0}' names an HDU, but this ASDF file is not inside a FITS file")]
    NotInFits(String),
    /// The HDU has no data (`NAXIS = 0`).
    #[error("FITS HDU {hdu} ({name}) has no data (NAXIS = 0)")]
    NoData {
        /// The HDU's number.
        hdu: usize,
        /// Its name.
        name: String,
    },
    /// Something rasdf does not read (a variable-length column, a compressed image...).
    #[error("FITS HDU {hdu} ({name}): {what} is not supported")]
    Unsupported {
        /// The HDU's number.
        hdu: usize,
        /// Its name.
        name: String,
        /// What.
        what: String,
    },
    /// A limit of [`Limits`] is exceeded.
    #[error("FITS HDU {hdu} ({name}): {error}")]
    Limit {
        /// The HDU's number.
        hdu: usize,
        /// Its name.
        name: String,
        /// The limit.
        error: crate::LimitError,
    },
}

/// A header value, as the standard writes them.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `T` or `F`.
    Bool(bool),
    /// An integer (wide enough for `BZERO = 9223372036854775808`).
    Int(i128),
    /// A real number (`D` exponents read as `E`).
    Float(f64),
    /// A quoted string, `''` unescaped, trailing blanks dropped.
    Str(String),
    /// Anything else (complex numbers, no value), as written.
    Other(String),
}

impl Value {
    /// The value as an integer, when it is one.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// Whether the value is the number `x`, compared exactly as Python compares an int
    /// or float with an int (`True` is 1, as in Python).
    // A whole float well inside i128's range converts exactly.
    #[allow(clippy::cast_possible_truncation)]
    fn is_int(&self, x: i128) -> bool {
        match self {
            Value::Int(i) => *i == x,
            Value::Float(f) => f.fract() == 0.0 && f.abs() < 1.7e38 && *f as i128 == x,
            Value::Bool(b) => i128::from(*b) == x,
            _ => false,
        }
    }

    fn number(&self) -> Option<Num> {
        match self {
            Value::Int(i) => Some(Num::Int(*i)),
            Value::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// The value as Python's `str()` shows it (`EXTNAME = 5` is the name `5`).
    fn text(&self) -> String {
        match self {
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) | Value::Other(s) => s.clone(),
        }
    }
}

/// A header number, kept as written (Python's int or float) until it meets the data's
/// type, as NumPy casts a Python scalar (NEP 50).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    // As NumPy casts a Python scalar to float32: rounded to the nearest.
    #[allow(clippy::cast_possible_truncation)]
    fn f32(self) -> f32 {
        match self {
            Num::Int(i) => i as f32,
            Num::Float(f) => f as f32,
        }
    }

    fn f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// What kind of HDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HduKind {
    /// The first HDU.
    Primary,
    /// `XTENSION = 'IMAGE'`.
    Image,
    /// `XTENSION = 'BINTABLE'`.
    BinTable,
    /// `XTENSION = 'TABLE'` (ASCII table).
    Table,
    /// Any other extension, with its `XTENSION`.
    Other(String),
}

impl std::fmt::Display for HduKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HduKind::Primary => f.write_str("PRIMARY"),
            HduKind::Image => f.write_str("IMAGE"),
            HduKind::BinTable => f.write_str("BINTABLE"),
            HduKind::Table => f.write_str("TABLE"),
            HduKind::Other(x) => f.write_str(x),
        }
    }
}

/// One header/data unit: where it is, and the header keywords rasdf uses.
#[derive(Debug, Clone)]
pub struct Hdu {
    /// Its number, from 0 (the primary HDU).
    pub index: usize,
    /// The offset of its header.
    pub header_at: u64,
    /// The offset of its data (after the header's last record).
    pub data_at: u64,
    /// The bytes of data the header declares (not counting the padding).
    pub data_len: u64,
    /// Its kind.
    pub kind: HduKind,
    /// Its name, as astropy gives it: `EXTNAME`, or `PRIMARY` for a primary HDU
    /// without one, or empty.
    pub name: String,
    /// `BITPIX`.
    pub bitpix: i64,
    /// `NAXIS1`, `NAXIS2`...
    pub naxis: Vec<u64>,
    /// The keywords rasdf reads (the first of each), by name.
    keys: HashMap<String, Value>,
}

impl Hdu {
    /// The value of `keyword` (those rasdf reads: the mandatory ones, `EXTNAME`,
    /// `EXTVER`, `BZERO`, `BSCALE`, `BLANK`, and the table's `T...n`).
    pub fn value(&self, keyword: &str) -> Option<&Value> {
        self.keys.get(keyword)
    }

    /// `EXTVER` as astropy gives it: 1 when absent.
    fn ver_is(&self, ver: u128) -> bool {
        match self.keys.get("EXTVER") {
            None => ver == 1,
            Some(v) => i128::try_from(ver).is_ok_and(|ver| v.is_int(ver)),
        }
    }

    /// `EXTNAME,EXTVER` (`SCI,1`), `PRIMARY` for a primary HDU without a name, or the
    /// HDU's number when it has no name (`HDU 3`).
    pub fn label(&self) -> String {
        if self.name.trim().is_empty() {
            return format!("HDU {}", self.index);
        }
        if self.index == 0 && self.name == "PRIMARY" && !self.keys.contains_key("EXTVER") {
            return self.name.clone();
        }
        let ver = self.keys.get("EXTVER").map_or_else(|| "1".to_string(), Value::text);
        format!("{},{ver}", self.name.trim())
    }

    /// One past the last byte of its data.
    pub fn data_end(&self) -> u64 {
        self.data_at.saturating_add(self.data_len)
    }

    fn fail(&self, what: impl Into<String>) -> FitsError {
        FitsError::Unsupported { hdu: self.index, name: self.label(), what: what.into() }
    }

    fn number(&self, key: &str, default: Num) -> Result<Num, FitsError> {
        match self.keys.get(key) {
            None => Ok(default),
            Some(v) => v.number().ok_or_else(|| self.fail(format!("{key} = {} (not a number)", v.text()))),
        }
    }

    /// Its data's bytes in `file` (the whole FITS file).
    ///
    /// # Errors
    /// [`FitsError::Truncated`] when the file ends before them.
    pub fn data<'a>(&self, file: &'a [u8]) -> Result<&'a [u8], FitsError> {
        self.range(file, self.data_len)
    }

    fn range<'a>(&self, file: &'a [u8], len: u64) -> Result<&'a [u8], FitsError> {
        let end = self.data_at.saturating_add(len);
        usize::try_from(self.data_at).ok().zip(usize::try_from(end).ok()).and_then(|(s, e)| file.get(s..e)).ok_or_else(
            || FitsError::Truncated {
                hdu: self.index,
                name: self.label(),
                start: self.data_at,
                end,
                len: file.len() as u64,
            },
        )
    }

    /// How the HDU's data reads as an array (see the [module](self)): datatype, shape,
    /// and whether it is read in place.
    ///
    /// # Errors
    /// [`FitsError::NoData`], and [`FitsError::Unsupported`] for what rasdf does not read:
    /// random groups, ASCII tables, tile-compressed images, variable-length and bit
    /// columns, scaled complex columns.
    pub fn array(&self) -> Result<HduArray, FitsError> {
        match self.kind {
            HduKind::Primary | HduKind::Image => self.image(),
            HduKind::BinTable => self.table(),
            HduKind::Table => Err(self.fail("an ASCII table (XTENSION = 'TABLE')")),
            HduKind::Other(ref x) => Err(self.fail(format!("an extension of type '{x}'"))),
        }
    }

    fn image(&self) -> Result<HduArray, FitsError> {
        if self.naxis.is_empty() {
            return Err(FitsError::NoData { hdu: self.index, name: self.label() });
        }
        if self.kind == HduKind::Primary && self.keys.get("GROUPS") == Some(&Value::Bool(true)) {
            return Err(self.fail("random groups (GROUPS = T)"));
        }
        let raw = match self.bitpix {
            8 => ScalarType::UInt8,
            16 => ScalarType::Int16,
            32 => ScalarType::Int32,
            64 => ScalarType::Int64,
            -32 => ScalarType::Float32,
            -64 => ScalarType::Float64,
            b => return Err(self.fail(format!("BITPIX = {b}"))),
        };
        let shape = self
            .naxis
            .iter()
            .rev()
            .map(|&d| usize::try_from(d).map_err(|_| self.fail("an axis longer than memory")))
            .collect::<Result<Vec<_>, _>>()?;
        let zero = self.number("BZERO", Num::Int(0))?;
        let scale = self.number("BSCALE", Num::Int(1))?;
        // astropy ignores a BLANK that is no integer, or on float data.
        let blank = if self.bitpix > 0 { self.keys.get("BLANK").and_then(Value::as_int) } else { None };
        let is = |n: Num, x: i128| match n {
            Num::Int(i) => i == x,
            Num::Float(f) => Value::Float(f).is_int(x),
        };
        let (zero0, scale1) = (is(zero, 0), is(scale, 1));
        let bits = self.bitpix.unsigned_abs();
        let (how, datatype) = if zero0 && scale1 && blank.is_none() {
            (ImageHow::Raw, raw)
        } else if !zero0 && scale1 && matches!(bits, 16 | 32 | 64) && self.bitpix > 0 && is(zero, 1 << (bits - 1)) {
            let unsigned = match bits {
                16 => ScalarType::UInt16,
                32 => ScalarType::UInt32,
                _ => ScalarType::UInt64,
            };
            (ImageHow::Flip, unsigned)
        } else if scale1 && self.bitpix == 8 && is(zero, -128) {
            // astropy makes it int8, then sets the BLANK elements to NaN, which NumPy
            // refuses for an integer array.
            if blank.is_some_and(|b| b != 0) {
                return Err(self.fail("BLANK on an int8 image (BITPIX = 8, BZERO = -128)"));
            }
            (ImageHow::Flip, ScalarType::Int8)
        } else {
            let out = match self.bitpix {
                8 | 16 | -32 => ScalarType::Float32,
                _ => ScalarType::Float64,
            };
            let how = ImageHow::Scale {
                scale: (!scale1).then_some(scale),
                zero: (!zero0).then_some(zero),
                blank,
                nan: blank.is_some_and(|b| b != 0),
            };
            (how, out)
        };
        let n = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        let raw_len =
            n.and_then(|n| n.checked_mul(raw.size() as u64)).ok_or_else(|| self.fail("a shape that overflows"))?;
        Ok(HduArray {
            byteorder: if how == ImageHow::Raw { ByteOrder::Big } else { ByteOrder::NATIVE },
            datatype: Datatype::Scalar(datatype),
            shape,
            zero_copy: how == ImageHow::Raw,
            raw_len,
            conv: Conv::Image { raw, how },
        })
    }

    fn table(&self) -> Result<HduArray, FitsError> {
        if self.keys.get("ZIMAGE") == Some(&Value::Bool(true)) {
            return Err(self.fail("a tile-compressed image (ZIMAGE = T)"));
        }
        let (row, rows) = match self.naxis[..] {
            [row, rows] if self.bitpix == 8 => (row, rows),
            _ => return Err(self.fail("a binary table without BITPIX = 8 and NAXIS = 2")),
        };
        let row = usize::try_from(row).map_err(|_| self.fail("a row longer than memory"))?;
        let rows = usize::try_from(rows).map_err(|_| self.fail("more rows than memory"))?;
        let fields = self.keys.get("TFIELDS").and_then(Value::as_int).unwrap_or(0);
        if !(1..=MAX_AXES).contains(&fields) {
            return Err(self.fail(format!("TFIELDS = {fields}")));
        }
        let mut columns = Vec::new();
        let (mut at, mut out_at) = (0usize, 0usize);
        for n in 1..=fields {
            let c = self.column(n as usize, at, out_at)?;
            at = at.checked_add(c.width).ok_or_else(|| self.fail("columns wider than memory"))?;
            out_at = out_at.checked_add(c.field.size()).ok_or_else(|| self.fail("columns wider than memory"))?;
            columns.push(c);
        }
        if at > row {
            return Err(self.fail(format!("columns of {at} bytes in rows of NAXIS1 = {row}")));
        }
        let zero_copy = at == row && columns.iter().all(|c| c.how == ColumnHow::Raw);
        let raw_len = (row as u64).checked_mul(rows as u64).ok_or_else(|| self.fail("a table larger than memory"))?;
        Ok(HduArray {
            datatype: Datatype::Record(columns.iter().map(|c| c.field.clone()).collect()),
            byteorder: ByteOrder::Big,
            shape: vec![rows],
            zero_copy,
            raw_len,
            conv: Conv::Table { row, out_row: out_at, columns },
        })
    }

    /// Column `n` (from 1), starting `at` bytes into a stored row and `out_at` into a
    /// row as read.
    fn column(&self, n: usize, at: usize, out_at: usize) -> Result<Column, FitsError> {
        let key = |k: &str| self.keys.get(&format!("{k}{n}"));
        let form = match key("TFORM") {
            Some(Value::Str(s)) => s.trim().to_string(),
            Some(v) => return Err(self.fail(format!("TFORM{n} = {}", v.text()))),
            None => return Err(self.fail(format!("a table without TFORM{n}"))),
        };
        let digits = form.bytes().take_while(u8::is_ascii_digit).count();
        let repeat: usize = if digits == 0 {
            1
        } else {
            form[..digits].parse().map_err(|_| self.fail(format!("TFORM{n} = '{form}'")))?
        };
        let code = form.as_bytes().get(digits).copied().unwrap_or(b' ');
        let element = match code {
            b'L' => ScalarType::Bool8,
            b'B' => ScalarType::UInt8,
            b'I' => ScalarType::Int16,
            b'J' => ScalarType::Int32,
            b'K' => ScalarType::Int64,
            b'E' => ScalarType::Float32,
            b'D' => ScalarType::Float64,
            b'C' => ScalarType::Complex64,
            b'M' => ScalarType::Complex128,
            b'A' => ScalarType::UInt8,
            b'P' | b'Q' => return Err(self.fail(format!("a variable-length column (TFORM{n} = '{form}')"))),
            b'X' => return Err(self.fail(format!("a bit column (TFORM{n} = '{form}')"))),
            _ => return Err(self.fail(format!("TFORM{n} = '{form}'"))),
        };
        let width =
            repeat.checked_mul(element.size()).ok_or_else(|| self.fail(format!("TFORM{n} = '{form}' (too wide)")))?;
        let name = match key("TTYPE") {
            Some(Value::Str(s)) => Some(s.clone()),
            Some(v) => Some(v.text()),
            None => None,
        };
        // TDIMn: '(a,b,...)', the fastest axis first.
        let dims: Option<Vec<usize>> = match key("TDIM") {
            Some(Value::Str(s)) => {
                let inner = s.trim().strip_prefix('(').and_then(|s| s.strip_suffix(')'));
                let dims = inner.and_then(|i| i.split(',').map(|d| d.trim().parse::<usize>().ok()).collect());
                Some(dims.ok_or_else(|| self.fail(format!("TDIM{n} = '{s}'")))?)
            }
            _ => None,
        };
        let fits = |d: &[usize]| d.iter().try_fold(1usize, |a, &x| a.checked_mul(x));
        let (datatype, shape) = if code == b'A' {
            match dims {
                Some(d) if d.len() > 1 && fits(&d) == Some(repeat) => {
                    (Datatype::Ascii(d[0]), d[1..].iter().rev().copied().collect())
                }
                _ => (Datatype::Ascii(repeat), Vec::new()),
            }
        } else {
            let shape = match dims {
                Some(d) if fits(&d) == Some(repeat) => d.iter().rev().copied().collect(),
                // astropy ignores a TDIM larger than the repeat count (with a warning).
                Some(d) if fits(&d).is_none_or(|p| p > repeat) => plain_shape(repeat),
                Some(_) => return Err(self.fail(format!("TDIM{n} smaller than TFORM{n} = '{form}'"))),
                None => plain_shape(repeat),
            };
            (Datatype::Scalar(element), shape)
        };
        let zero = key("TZERO").and_then(Value::number).filter(|z| !Value::from_num(*z).is_int(0));
        let scale = key("TSCAL").and_then(Value::number).filter(|s| !Value::from_num(*s).is_int(1));
        let (how, datatype) = match code {
            b'L' => (ColumnHow::Bool, datatype),
            b'A' => (ColumnHow::Text, datatype),
            _ if zero.is_none() && scale.is_none() => (ColumnHow::Raw, datatype),
            b'C' | b'M' => return Err(self.fail(format!("a scaled complex column (TSCAL{n}/TZERO{n})"))),
            b'I' | b'J' | b'K' => {
                let (bits, unsigned) = match code {
                    b'I' => (16, ScalarType::UInt16),
                    b'J' => (32, ScalarType::UInt32),
                    _ => (64, ScalarType::UInt64),
                };
                if zero.is_some_and(|z| Value::from_num(z).is_int(1 << (bits - 1))) {
                    if scale.is_some() {
                        return Err(self.fail(format!("TSCAL{n} on an unsigned column (TZERO{n} = 2^{})", bits - 1)));
                    }
                    (ColumnHow::Flip, Datatype::Scalar(unsigned))
                } else {
                    (ColumnHow::Scale { scale: scale.map(Num::f64), zero: zero.map(Num::f64) }, float64())
                }
            }
            _ => (ColumnHow::Scale { scale: scale.map(Num::f64), zero: zero.map(Num::f64) }, float64()),
        };
        Ok(Column {
            element,
            offset: at,
            width,
            out_offset: out_at,
            field: Field { name, datatype, byteorder: ByteOrder::Big, shape },
            how,
        })
    }
}

impl Value {
    fn from_num(n: Num) -> Value {
        match n {
            Num::Int(i) => Value::Int(i),
            Num::Float(f) => Value::Float(f),
        }
    }
}

fn float64() -> Datatype {
    Datatype::Scalar(ScalarType::Float64)
}

/// A column's shape without TDIM: a scalar for one element, else a list.
fn plain_shape(repeat: usize) -> Vec<usize> {
    if repeat == 1 { Vec::new() } else { vec![repeat] }
}

/// How an image's stored values become the values read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ImageHow {
    /// As stored.
    Raw,
    /// The sign bit flipped (`BZERO = 2^(n-1)`, or -128 on 8 bits).
    Flip,
    /// To float: times `scale`, plus `zero`, in the float type; BLANK elements NaN when
    /// `nan`.
    Scale { scale: Option<Num>, zero: Option<Num>, blank: Option<i128>, nan: bool },
}

/// How a table column's stored values become the values read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ColumnHow {
    Raw,
    /// `T` is true, anything else false.
    Bool,
    /// The sign bit flipped (unsigned `TZERO`).
    Flip,
    /// To float64: times `scale`, plus `zero`.
    Scale {
        scale: Option<f64>,
        zero: Option<f64>,
    },
    /// Trailing blanks (and NULs) dropped, as astropy's character arrays drop them.
    Text,
}

#[derive(Debug, Clone, PartialEq)]
struct Column {
    /// The stored element type (`A`: bytes).
    element: ScalarType,
    /// Where it starts in a stored row.
    offset: usize,
    /// Its bytes in a stored row.
    width: usize,
    /// Where it starts in a row as read.
    out_offset: usize,
    /// The field as read.
    field: Field,
    how: ColumnHow,
}

#[derive(Debug, Clone, PartialEq)]
enum Conv {
    Image { raw: ScalarType, how: ImageHow },
    Table { row: usize, out_row: usize, columns: Vec<Column> },
}

/// How an HDU's data reads as an array: what [`Hdu::array`] finds from the header.
#[derive(Debug, Clone, PartialEq)]
pub struct HduArray {
    /// The element type as read (as astropy gives it: `uint32` for `BITPIX = 32` with
    /// `BZERO = 2147483648`).
    pub datatype: Datatype,
    /// The byte order of what [`HduArray::read`] gives: big-endian in place, the
    /// machine's for converted images (a converted table keeps its fields big-endian).
    pub byteorder: ByteOrder,
    /// The shape: `NAXISn` reversed for an image, the rows for a table.
    pub shape: Vec<usize>,
    /// Whether the data is read in place, with no copy.
    pub zero_copy: bool,
    /// The stored bytes read.
    raw_len: u64,
    conv: Conv,
}

impl HduArray {
    /// The data of `hdu` as read: a slice of `file` (the whole FITS file) when
    /// [`HduArray::zero_copy`], else converted.
    ///
    /// # Errors
    /// [`FitsError::Truncated`] when the file ends before the data;
    /// [`FitsError::Limit`] for more elements than `limits.max_array_elements`.
    pub fn read<'a>(&self, hdu: &Hdu, file: &'a [u8], limits: &Limits) -> Result<Cow<'a, [u8]>, FitsError> {
        let limit = |error| FitsError::Limit { hdu: hdu.index, name: hdu.label(), error };
        let elements = self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
        Limits::check("max_array_elements", elements, limits.max_array_elements).map_err(limit)?;
        // The array's bytes lie within the HDU's data as its header sizes it (`GCOUNT = 0`
        // would otherwise let it read the next HDU's).
        if self.raw_len > hdu.data_len {
            return Err(
                hdu.fail(format!("an array of {} bytes in data of {} (GCOUNT, PCOUNT)", self.raw_len, hdu.data_len))
            );
        }
        let raw = hdu.range(file, self.raw_len)?;
        if self.zero_copy {
            return Ok(Cow::Borrowed(raw));
        }
        // What is made is at most 8 times what is stored (uint8 to float64), which the
        // file holds.
        let out_len = elements.saturating_mul(self.datatype.size() as u64);
        let mut out = Vec::new();
        usize::try_from(out_len)
            .ok()
            .filter(|&n| out.try_reserve_exact(n).is_ok())
            .ok_or_else(|| hdu.fail(format!("converting {out_len} bytes (no memory for them)")))?;
        match &self.conv {
            Conv::Image { raw: stored, how } => convert_image(*stored, *how, raw, &mut out),
            Conv::Table { row, out_row, columns } => convert_table(*row, *out_row, columns, raw, &mut out),
        }
        Ok(Cow::Owned(out))
    }
}

fn be<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

fn convert_image(stored: ScalarType, how: ImageHow, raw: &[u8], out: &mut Vec<u8>) {
    let size = stored.size();
    let items = raw.chunks_exact(size);
    match how {
        ImageHow::Raw => out.extend_from_slice(raw),
        ImageHow::Flip => {
            for b in items {
                match size {
                    1 => out.push(b[0] ^ 0x80),
                    2 => out.extend_from_slice(&(u16::from_be_bytes(be(b)) ^ (1 << 15)).to_ne_bytes()),
                    4 => out.extend_from_slice(&(u32::from_be_bytes(be(b)) ^ (1 << 31)).to_ne_bytes()),
                    _ => out.extend_from_slice(&(u64::from_be_bytes(be(b)) ^ (1 << 63)).to_ne_bytes()),
                }
            }
        }
        ImageHow::Scale { scale, zero, blank, nan } => {
            // The stored value (as an integer, to compare with BLANK) of each element.
            let int = |b: &[u8]| -> Option<i128> {
                match stored {
                    ScalarType::UInt8 => Some(i128::from(b[0])),
                    ScalarType::Int16 => Some(i128::from(i16::from_be_bytes(be(b)))),
                    ScalarType::Int32 => Some(i128::from(i32::from_be_bytes(be(b)))),
                    ScalarType::Int64 => Some(i128::from(i64::from_be_bytes(be(b)))),
                    _ => None,
                }
            };
            let blank_at = |b: &[u8]| nan && blank.is_some() && int(b) == blank;
            if matches!(stored, ScalarType::UInt8 | ScalarType::Int16 | ScalarType::Float32) {
                let (s, z) = (scale.map(Num::f32), zero.map(Num::f32));
                for b in items {
                    let mut x = match int(b) {
                        Some(i) => i as f32,
                        None => f32::from_be_bytes(be(b)),
                    };
                    if let Some(s) = s {
                        x *= s;
                    }
                    if let Some(z) = z {
                        x += z;
                    }
                    if blank_at(b) {
                        x = f32::NAN;
                    }
                    out.extend_from_slice(&x.to_ne_bytes());
                }
            } else {
                let (s, z) = (scale.map(Num::f64), zero.map(Num::f64));
                for b in items {
                    let mut x = match int(b) {
                        Some(i) => i as f64,
                        None => f64::from_be_bytes(be(b)),
                    };
                    if let Some(s) = s {
                        x *= s;
                    }
                    if let Some(z) = z {
                        x += z;
                    }
                    if blank_at(b) {
                        x = f64::NAN;
                    }
                    out.extend_from_slice(&x.to_ne_bytes());
                }
            }
        }
    }
}

fn convert_table(row: usize, out_row: usize, columns: &[Column], raw: &[u8], out: &mut Vec<u8>) {
    let rows = raw.len().checked_div(row).unwrap_or(0);
    out.resize(rows * out_row, 0);
    for r in 0..rows {
        let src = &raw[r * row..(r + 1) * row];
        let dst = &mut out[r * out_row..(r + 1) * out_row];
        for c in columns {
            let from = &src[c.offset..c.offset + c.width];
            let to = &mut dst[c.out_offset..c.out_offset + c.field.size()];
            match c.how {
                ColumnHow::Raw => to.copy_from_slice(from),
                ColumnHow::Bool => {
                    for (t, &f) in to.iter_mut().zip(from) {
                        *t = u8::from(f == b'T');
                    }
                }
                ColumnHow::Flip => {
                    to.copy_from_slice(from);
                    for e in to.chunks_exact_mut(c.element.size()) {
                        e[0] ^= 0x80;
                    }
                }
                ColumnHow::Text => {
                    let len = match c.field.datatype {
                        Datatype::Ascii(n) => n.max(1),
                        _ => 1,
                    };
                    for (t, f) in to.chunks_mut(len).zip(from.chunks(len)) {
                        // NumPy drops trailing NULs, then astropy's character array
                        // trailing whitespace.
                        let mut end = f.len();
                        while end > 0 && f[end - 1] == 0 {
                            end -= 1;
                        }
                        while end > 0 && matches!(f[end - 1], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
                            end -= 1;
                        }
                        t[..end].copy_from_slice(&f[..end]);
                    }
                }
                ColumnHow::Scale { scale, zero } => {
                    for (t, f) in to.chunks_exact_mut(8).zip(from.chunks_exact(c.element.size())) {
                        let mut x = match c.element {
                            ScalarType::UInt8 => f64::from(f[0]),
                            ScalarType::Int16 => f64::from(i16::from_be_bytes(be(f))),
                            ScalarType::Int32 => f64::from(i32::from_be_bytes(be(f))),
                            ScalarType::Int64 => i64::from_be_bytes(be(f)) as f64,
                            ScalarType::Float32 => f64::from(f32::from_be_bytes(be(f))),
                            _ => f64::from_be_bytes(be(f)),
                        };
                        if let Some(s) = scale {
                            x *= s;
                        }
                        if let Some(z) = zero {
                            x += z;
                        }
                        t.copy_from_slice(&x.to_be_bytes());
                    }
                }
            }
        }
    }
}

/// A FITS file's HDUs, read from their headers (no data read).
#[derive(Debug, Clone)]
pub struct Fits {
    hdus: Vec<Hdu>,
    len: u64,
    error: Option<FitsError>,
    trailing: Option<u64>,
}

impl Fits {
    /// Reads the headers of every HDU of `file`, one after another. A damaged HDU after
    /// the first stops the reading: the HDUs before it are kept, and
    /// [`Fits::error`] tells why.
    ///
    /// # Errors
    /// A primary header that cannot be read (see [`FitsError`]).
    pub fn parse(file: &[u8]) -> Result<Fits, FitsError> {
        let len = file.len();
        let mut fits = Fits { hdus: Vec::new(), len: len as u64, error: None, trailing: None };
        let mut at = 0usize;
        while at < len {
            let index = fits.hdus.len();
            if index > 0 && !file[at..].starts_with(b"XTENSION") {
                if file[at..].iter().any(|&b| b != 0) {
                    fits.trailing = Some(at as u64);
                }
                break;
            }
            match read_hdu(file, at, index) {
                Ok(hdu) => {
                    let end = hdu.data_end();
                    let next = end.checked_next_multiple_of(RECORD as u64);
                    let name = hdu.label();
                    let start = hdu.data_at;
                    fits.hdus.push(hdu);
                    if end > len as u64 {
                        fits.error = Some(FitsError::Truncated { hdu: index, name, start, end, len: len as u64 });
                        break;
                    }
                    at = next.and_then(|n| usize::try_from(n).ok()).unwrap_or(len);
                }
                Err(e) if index == 0 => return Err(e),
                Err(e) => {
                    fits.error = Some(e);
                    break;
                }
            }
        }
        Ok(fits)
    }

    /// The HDUs read, in file order.
    pub fn hdus(&self) -> &[Hdu] {
        &self.hdus
    }

    /// Why reading HDUs stopped before the end of the file, if it did.
    pub fn error(&self) -> Option<&FitsError> {
        self.error.as_ref()
    }

    /// The offset of bytes after the last HDU that are neither an HDU nor zeros, if any
    /// (astropy ignores them, with a warning).
    pub fn trailing(&self) -> Option<u64> {
        self.trailing
    }

    fn stopped(&self) -> String {
        self.error.as_ref().map(|e| format!("; reading HDUs stopped: {e}")).unwrap_or_default()
    }

    /// The ASDF extension: the first HDU named `ASDF` (any case), and the bytes of the
    /// ASDF file it holds (a binary table's rows, or the whole data).
    ///
    /// # Errors
    /// [`FitsError::NoAsdf`]; [`FitsError::Truncated`] for an extension cut short;
    /// [`FitsError::Unsupported`] for a gzip-compressed one.
    pub fn asdf_extension(&self) -> Result<(&Hdu, Range<u64>), FitsError> {
        let hdu = self
            .hdus
            .iter()
            .find(|h| h.name.trim().eq_ignore_ascii_case("ASDF"))
            .ok_or_else(|| FitsError::NoAsdf { hdus: self.hdus.len(), stopped: self.stopped() })?;
        if hdu.keys.get("COMPRESS") == Some(&Value::Bool(true)) {
            return Err(hdu.fail("a gzip-compressed ASDF extension (COMPRESS = T)"));
        }
        // A table's data as astropy lends it: its rows, without the heap.
        let len = match (&hdu.kind, &hdu.naxis[..]) {
            (HduKind::BinTable, [row, rows]) => row.checked_mul(*rows).unwrap_or(u64::MAX).min(hdu.data_len),
            _ => hdu.data_len,
        };
        let end = hdu.data_at.saturating_add(len);
        if end > self.len {
            return Err(FitsError::Truncated {
                hdu: hdu.index,
                name: hdu.label(),
                start: hdu.data_at,
                end,
                len: self.len,
            });
        }
        Ok((hdu, hdu.data_at..end))
    }

    /// The HDU a `fits:` source names (`spec` is what follows `fits:`), as stdatamodels
    /// and astropy find it: `EXTNAME,EXTVER` (the name compared without surrounding
    /// blanks and case; `EXTVER` 1 when absent; `PRIMARY` also names HDU 0), or an
    /// index from 0. As Python's `re.match` reads the reference's pattern, the name is
    /// the longest run of printable ASCII before a comma and a digit, and anything after
    /// the digits is ignored.
    ///
    /// # Errors
    /// [`FitsError::BadSource`], [`FitsError::NoSuchHdu`].
    pub fn resolve(&self, spec: &str) -> Result<&Hdu, FitsError> {
        let (name, ver) = parse_source(spec).ok_or_else(|| FitsError::BadSource(spec.to_string()))?;
        let ver: Option<u128> = ver.parse().ok();
        let found = match (name, ver) {
            (_, None) => None,
            (None, Some(i)) => usize::try_from(i).ok().and_then(|i| self.hdus.get(i)),
            (Some(name), Some(ver)) => {
                let key = name.trim().to_ascii_uppercase();
                self.hdus.iter().find(|h| {
                    (h.name.trim().to_ascii_uppercase() == key || (key == "PRIMARY" && h.index == 0)) && h.ver_is(ver)
                })
            }
        };
        found.ok_or_else(|| {
            let mut names: Vec<String> = self.hdus.iter().take(12).map(Hdu::label).collect();
            if self.hdus.len() > 12 {
                names.push("...".into());
            }
            FitsError::NoSuchHdu {
                spec: spec.to_string(),
                hdus: self.hdus.len(),
                names: names.join(", "),
                stopped: self.stopped(),
            }
        })
    }
}

/// `fits:` sources as the reference's pattern `((?P<name>[ -~]+),)?(?P<ver>[0-9]+)`
/// matches them at the start: `(name, digits)`.
fn parse_source(s: &str) -> Option<(Option<&str>, &str)> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let printable = b.iter().take_while(|&&c| (0x20..=0x7e).contains(&c)).count();
    let comma = (1..printable).rev().find(|&i| b[i] == b',' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
    if let Some(i) = comma {
        return Some((Some(&s[..i]), &s[i + 1..i + 1 + digits(i + 1)]));
    }
    let n = digits(0);
    (n > 0).then(|| (None, &s[..n]))
}

/// The keywords kept of a header: those rasdf reads.
fn wanted(keyword: &str) -> bool {
    const PLAIN: [&str; 16] = [
        "SIMPLE", "XTENSION", "BITPIX", "NAXIS", "PCOUNT", "GCOUNT", "GROUPS", "EXTNAME", "EXTVER", "BZERO", "BSCALE",
        "BLANK", "TFIELDS", "ZIMAGE", "COMPRESS", "THEAP",
    ];
    const INDEXED: [&str; 6] = ["NAXIS", "TTYPE", "TFORM", "TZERO", "TSCAL", "TDIM"];
    PLAIN.contains(&keyword)
        || INDEXED.iter().any(|p| {
            keyword.strip_prefix(p).is_some_and(|n| {
                (1..=3).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()) && !n.starts_with('0')
            })
        })
}

/// A card's value field (bytes 10 to 80), free-format as the standard allows.
fn parse_value(v: &[u8]) -> Value {
    let s = v.trim_ascii_start();
    if let Some(rest) = s.strip_prefix(b"'") {
        let mut out = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            if rest[i] == b'\'' {
                if rest.get(i + 1) == Some(&b'\'') {
                    out.push(b'\'');
                    i += 2;
                    continue;
                }
                break;
            }
            out.push(rest[i]);
            i += 1;
        }
        while out.last() == Some(&b' ') {
            out.pop();
        }
        return Value::Str(String::from_utf8_lossy(&out).into_owned());
    }
    let token = match memchr::memchr(b'/', s) {
        Some(i) => &s[..i],
        None => s,
    }
    .trim_ascii();
    let t = String::from_utf8_lossy(token);
    let t = t.as_ref();
    match t {
        "T" => return Value::Bool(true),
        "F" => return Value::Bool(false),
        _ => {}
    }
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    if !body.is_empty()
        && body.bytes().all(|c| c.is_ascii_digit())
        && let Ok(i) = t.parse::<i128>()
    {
        return Value::Int(i);
    }
    let real = body.bytes().any(|c| c.is_ascii_digit())
        && body.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'E' | b'e' | b'D' | b'd' | b'+' | b'-'));
    if real && let Ok(f) = t.replace(['D', 'd'], "E").parse::<f64>() {
        return Value::Float(f);
    }
    Value::Other(t.to_string())
}

/// Reads the header at `at` (a whole number of records, up to `END`), then the HDU's
/// data size.
fn read_hdu(file: &[u8], at: usize, index: usize) -> Result<Hdu, FitsError> {
    let header_at = at as u64;
    let bad = |message: String| FitsError::Header { hdu: index, at: header_at, message };
    let mut keys: HashMap<String, Value> = HashMap::new();
    let mut pos = at;
    let end = loop {
        let Some(card) = file.get(pos..pos + CARD) else {
            return Err(FitsError::NoEnd { hdu: index, at: header_at, len: file.len() as u64 });
        };
        let keyword = String::from_utf8_lossy(card[..8].trim_ascii_end());
        if keyword == "END" {
            break pos + CARD;
        }
        if card[8] == b'=' && wanted(&keyword) && !keys.contains_key(keyword.as_ref()) {
            keys.insert(keyword.into_owned(), parse_value(&card[10..]));
        }
        pos += CARD;
    };
    let data_at = (end - at).next_multiple_of(RECORD) + at;
    let kind = if index == 0 {
        if keys.get("SIMPLE") != Some(&Value::Bool(true)) {
            return Err(bad("SIMPLE is not T".into()));
        }
        HduKind::Primary
    } else {
        match keys.get("XTENSION") {
            Some(Value::Str(x)) => match x.trim() {
                "IMAGE" => HduKind::Image,
                "BINTABLE" => HduKind::BinTable,
                "TABLE" => HduKind::Table,
                other => HduKind::Other(other.to_string()),
            },
            other => return Err(bad(format!("XTENSION is not a string ({other:?})"))),
        }
    };
    let int = |key: &str| -> Result<i128, FitsError> {
        match keys.get(key) {
            Some(Value::Int(i)) => Ok(*i),
            Some(v) => Err(bad(format!("{key} = {} is not an integer", v.text()))),
            None => Err(bad(format!("no {key}"))),
        }
    };
    let bitpix = int("BITPIX")?;
    let bitpix: i64 = match bitpix {
        8 | 16 | 32 | 64 | -32 | -64 => i64::try_from(bitpix).unwrap_or(8),
        _ => return Err(bad(format!("BITPIX = {bitpix}"))),
    };
    let axes = int("NAXIS")?;
    if !(0..=MAX_AXES).contains(&axes) {
        return Err(bad(format!("NAXIS = {axes}")));
    }
    let mut naxis = Vec::new();
    for n in 1..=axes {
        let d = int(&format!("NAXIS{n}"))?;
        naxis.push(u64::try_from(d).map_err(|_| bad(format!("NAXIS{n} = {d}")))?);
    }
    let groups = index == 0 && keys.get("GROUPS") == Some(&Value::Bool(true)) && naxis.first() == Some(&0);
    let count = |key: &str, default: i128| -> Result<u64, FitsError> {
        let v = if keys.contains_key(key) { int(key)? } else { default };
        u64::try_from(v).map_err(|_| bad(format!("{key} = {v}")))
    };
    let (pcount, gcount) = if index == 0 && !groups { (0, 1) } else { (count("PCOUNT", 0)?, count("GCOUNT", 1)?) };
    let data_len = if naxis.is_empty() {
        0
    } else {
        let product = naxis[usize::from(groups)..].iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        product
            .and_then(|p| p.checked_add(pcount))
            .and_then(|p| p.checked_mul(gcount))
            .and_then(|p| p.checked_mul(bitpix.unsigned_abs() / 8))
            .ok_or_else(|| bad("the data size overflows 64 bits".into()))?
    };
    let name = match keys.get("EXTNAME") {
        Some(v) => v.text(),
        None if index == 0 => "PRIMARY".into(),
        None => String::new(),
    };
    Ok(Hdu { index, header_at, data_at: data_at as u64, data_len, kind, name, bitpix, naxis, keys })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header of `cards` (padded to a record) then `data` (padded).
    fn hdu(cards: &[&str], data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in cards.iter().chain(&["END"]) {
            let mut card = c.as_bytes().to_vec();
            card.resize(CARD, b' ');
            out.extend_from_slice(&card);
        }
        out.resize(out.len().next_multiple_of(RECORD), b' ');
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(RECORD), 0);
        out
    }

    fn primary() -> Vec<u8> {
        hdu(
            &["SIMPLE  =                    T", "BITPIX  =                    8", "NAXIS   =                    0"],
            &[],
        )
    }

    #[test]
    fn values() {
        assert_eq!(parse_value(b"'O''Hara  '  / c"), Value::Str("O'Hara".into()));
        assert_eq!(parse_value(b"                   T"), Value::Bool(true));
        assert_eq!(parse_value(b"           2147483648 / x"), Value::Int(2147483648));
        assert_eq!(parse_value(b"  9223372036854775808"), Value::Int(1 << 63));
        assert_eq!(parse_value(b" 1.5D2"), Value::Float(150.0));
        assert_eq!(parse_value(b" -.5"), Value::Float(-0.5));
        assert_eq!(parse_value(b" inf"), Value::Other("inf".into()));
        assert_eq!(parse_value(b"  "), Value::Other(String::new()));
        assert!(Value::Float(32768.0).is_int(32768));
        // 2^63 - 1 as a float is 2^63: Python tells them apart.
        assert!(!Value::Float((1u64 << 63) as f64).is_int((1 << 63) - 1));
        assert!(Value::Float((1u64 << 63) as f64).is_int(1 << 63));
    }

    #[test]
    fn sources_as_the_reference_pattern_matches() {
        assert_eq!(parse_source("SCI,1"), Some((Some("SCI"), "1")));
        assert_eq!(parse_source("A,B,2"), Some((Some("A,B"), "2")));
        assert_eq!(parse_source("SCI,1,2"), Some((Some("SCI,1"), "2")));
        assert_eq!(parse_source("SCI,12x"), Some((Some("SCI"), "12")));
        assert_eq!(parse_source("3"), Some((None, "3")));
        assert_eq!(parse_source("3x"), Some((None, "3")));
        assert_eq!(parse_source(",1"), None);
        assert_eq!(parse_source("SCI"), None);
        assert_eq!(parse_source("é,1"), None);
        assert_eq!(parse_source(""), None);
    }

    #[test]
    fn hdus_and_sizes() {
        let mut f = primary();
        let data: Vec<u8> = (0..12u8).flat_map(|i| [0, i]).collect();
        f.extend(hdu(
            &[
                "XTENSION= 'IMAGE   '",
                "BITPIX  =                   16",
                "NAXIS   =                    2",
                "NAXIS1  =                    4",
                "NAXIS2  =                    3",
                "PCOUNT  =                    0",
                "GCOUNT  =                    1",
                "BZERO   =                32768",
                "EXTNAME = 'sci     '",
                "EXTVER  =                    2",
            ],
            &data,
        ));
        let fits = Fits::parse(&f).unwrap();
        assert_eq!(fits.hdus().len(), 2);
        let h = fits.resolve("SCI,2").unwrap();
        assert_eq!((h.index, h.data_at, h.data_len), (1, 2 * RECORD as u64, 24));
        assert!(fits.resolve("SCI,1").is_err());
        assert_eq!(fits.resolve("1").unwrap().index, 1);
        assert_eq!(fits.resolve("PRIMARY,1").unwrap().index, 0);
        let a = h.array().unwrap();
        assert_eq!((a.datatype.to_string(), a.shape.clone(), a.zero_copy), ("uint16".into(), vec![3, 4], false));
        let got = a.read(h, &f, &Limits::default()).unwrap();
        let values: Vec<u16> = got.chunks(2).map(|b| u16::from_ne_bytes([b[0], b[1]])).collect();
        assert_eq!(values, (0..12).map(|i| i + 32768).collect::<Vec<u16>>());
        assert!(matches!(fits.asdf_extension(), Err(FitsError::NoAsdf { hdus: 2, .. })));
    }

    #[test]
    fn hostile_headers_are_errors() {
        // No END.
        let mut f = b"SIMPLE  =                    T".to_vec();
        f.resize(RECORD, b' ');
        assert!(matches!(Fits::parse(&f), Err(FitsError::NoEnd { .. })));
        // A huge NAXIS: the data goes past the end of the file.
        let mut f = primary();
        f.extend(hdu(
            &[
                "XTENSION= 'IMAGE   '",
                "BITPIX  =                  -64",
                "NAXIS   =                    2",
                "NAXIS1  =   400000000000000000",
                "NAXIS2  =                    1",
            ],
            &[],
        ));
        let fits = Fits::parse(&f).unwrap();
        assert!(matches!(fits.error(), Some(FitsError::Truncated { hdu: 1, .. })), "{:?}", fits.error());
        let h = &fits.hdus()[1];
        let a = h.array().unwrap();
        assert!(a.read(h, &f, &Limits::default()).is_err());
        // An overflowing size.
        let mut f = primary();
        f.extend(hdu(
            &[
                "XTENSION= 'IMAGE   '",
                "BITPIX  =                  -64",
                "NAXIS   =                    2",
                "NAXIS1  =  4000000000000000000",
                "NAXIS2  =  4000000000000000000",
            ],
            &[],
        ));
        assert!(matches!(Fits::parse(&f).unwrap().error(), Some(FitsError::Header { .. })));
        // NAXIS beyond the standard's, a BITPIX of no type.
        for bad in ["NAXIS   =                 1000", "BITPIX  =                   12"] {
            let mut f = primary();
            let cards = ["XTENSION= 'IMAGE   '", "BITPIX  =                    8", "NAXIS   =                    0"];
            let cards: Vec<&str> = cards.iter().map(|c| if c[..8] == bad[..8] { bad } else { c }).collect();
            f.extend(hdu(&cards, &[]));
            assert!(matches!(Fits::parse(&f).unwrap().error(), Some(FitsError::Header { .. })), "{bad}");
        }
    }

    #[test]
    fn scaled_images_as_astropy() {
        let mut f = primary();
        let data: Vec<u8> = [1i16, -2, 7].iter().flat_map(|v| v.to_be_bytes()).collect();
        f.extend(hdu(
            &[
                "XTENSION= 'IMAGE   '",
                "BITPIX  =                   16",
                "NAXIS   =                    1",
                "NAXIS1  =                    3",
                "BSCALE  =                  0.5",
                "BZERO   =                   10",
                "BLANK   =                    7",
            ],
            &data,
        ));
        let fits = Fits::parse(&f).unwrap();
        let h = fits.resolve("1").unwrap();
        let a = h.array().unwrap();
        assert_eq!(a.datatype.to_string(), "float32");
        let got = a.read(h, &f, &Limits::default()).unwrap();
        let v: Vec<f32> = got.chunks(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert_eq!(&v[..2], &[10.5, 9.0]);
        assert!(v[2].is_nan());
    }

    #[test]
    fn tables() {
        let mut f = primary();
        let mut rows = Vec::new();
        for (i, (flag, name)) in [(-1i32, (b'T', b"ab  ")), (0, (b'F', b"c   "))] {
            rows.extend_from_slice(&i.to_be_bytes());
            rows.push(flag);
            rows.extend_from_slice(name);
            rows.extend_from_slice(&(1.5 * (i + 1) as f32).to_be_bytes());
        }
        f.extend(hdu(
            &[
                "XTENSION= 'BINTABLE'",
                "BITPIX  =                    8",
                "NAXIS   =                    2",
                "NAXIS1  =                   13",
                "NAXIS2  =                    2",
                "PCOUNT  =                    0",
                "GCOUNT  =                    1",
                "TFIELDS =                    4",
                "TTYPE1  = 'DQ      '",
                "TFORM1  = 'J       '",
                "TZERO1  =           2147483648",
                "TTYPE2  = 'OK      '",
                "TFORM2  = 'L       '",
                "TTYPE3  = 'NAME    '",
                "TFORM3  = '4A      '",
                "TTYPE4  = 'X       '",
                "TFORM4  = 'E       '",
                "EXTNAME = 'TAB     '",
            ],
            &rows,
        ));
        let fits = Fits::parse(&f).unwrap();
        let h = fits.resolve("TAB,1").unwrap();
        let a = h.array().unwrap();
        assert_eq!(a.datatype.to_string(), "[DQ: uint32, OK: bool8, NAME: [ascii, 4], X: float32]");
        assert!(!a.zero_copy);
        let got = a.read(h, &f, &Limits::default()).unwrap();
        assert_eq!(got.len(), 2 * 13);
        assert_eq!(&got[..13], &[0x7f, 0xff, 0xff, 0xff, 1, b'a', b'b', 0, 0, 0, 0, 0, 0]);
        assert_eq!(&got[13..22], &[0x80, 0, 0, 0, 0, b'c', 0, 0, 0]);
    }
}
