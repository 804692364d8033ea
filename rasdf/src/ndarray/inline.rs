//! Inline array data: nested lists in the tree, `null` for masked entries.

use super::{ArrayError, ArrayMeta, ByteOrder, Datatype, Dim, ScalarType, parse_complex};
use crate::tree::{NodeRef, Value};

fn err(msg: impl Into<String>) -> ArrayError {
    ArrayError::Inline(msg.into())
}

/// The shape and datatype of inline `data`: the datatype given, or inferred as numpy
/// does (bool, int64, float64, complex128 or `[ucs4, N]`).
pub(super) fn infer(
    data: NodeRef<'_>,
    datatype: Option<&Datatype>,
    shape: Option<&[Dim]>,
) -> Result<(Datatype, Vec<usize>), ArrayError> {
    let dims: Vec<usize> = match shape {
        Some(s) => s
            .iter()
            .map(|d| match d {
                Dim::Fixed(v) => usize::try_from(*v).map_err(|_| err("shape too large")),
                Dim::Stream => Err(err("'*' needs a streamed block, not inline data")),
            })
            .collect::<Result<_, _>>()?,
        None => {
            let mut dims = Vec::new();
            let mut cur = data;
            while let Some(mut items) = cur.items() {
                dims.push(items.len());
                if dims.len() > 64 {
                    return Err(err("inline data nests too deeply"));
                }
                match items.next() {
                    Some(first) => cur = first,
                    None => break,
                }
            }
            if matches!(datatype, Some(Datatype::Record(_))) {
                dims.pop();
            }
            dims
        }
    };
    let datatype = match datatype {
        // A string type of size 0 is numpy's flexible size: that of the longest text of
        // an element (`np.array([1, 22], dtype="S0")` is `S2`), at least 1.
        Some(d @ (Datatype::Ascii(0) | Datatype::Ucs4(0))) => {
            let leaves = leaves(data, &dims)?;
            let mut longest = 0;
            for l in leaves.iter().filter(|l| !l.is_null()) {
                longest = longest.max(match l.value() {
                    Value::Binary(b) => b.len(),
                    _ => python_str(*l)?.chars().count(),
                });
            }
            let n = longest.max(1);
            if matches!(d, Datatype::Ascii(_)) { Datatype::Ascii(n) } else { Datatype::Ucs4(n) }
        }
        Some(d) => d.clone(),
        None => {
            let leaves = leaves(data, &dims)?;
            infer_type(&leaves)?
        }
    };
    Ok((datatype, dims))
}

/// The numpy type of one inline leaf when no datatype is given: Python ints are int64
/// when they fit, else uint64 when they fit that.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bool,
    Int64,
    UInt64,
    Float,
    Complex,
}

impl Kind {
    /// numpy's promotion of two kinds: int64 and uint64 meet in float64.
    fn promote(self, other: Kind) -> Kind {
        match (self.max(other), self.min(other)) {
            (Kind::UInt64, Kind::Int64) => Kind::Float,
            (hi, _) => hi,
        }
    }

    /// The characters numpy gives a string array for a value of this kind.
    fn text_room(self) -> usize {
        match self {
            Kind::Bool => 5,
            Kind::Int64 => 21,
            Kind::UInt64 => 20,
            Kind::Float => 32,
            Kind::Complex => 64,
        }
    }
}

fn infer_type(leaves: &[NodeRef<'_>]) -> Result<Datatype, ArrayError> {
    let mut kind: Option<Kind> = None;
    let (mut any_str, mut any_bytes, mut max_str) = (false, false, 0);
    for l in leaves {
        let k = match l.value() {
            Value::Null => continue,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_) => Kind::Int64,
            Value::BigInt(b) => {
                if u64::try_from(&**b).is_err() {
                    return Err(err(format!(
                        "the integer {b} fits no numpy integer type (the reference makes an object array of it)"
                    )));
                }
                Kind::UInt64
            }
            Value::Float(_) => Kind::Float,
            Value::Str(_) if l.is_asdf_tag("core/complex") => Kind::Complex,
            Value::Str(s) => {
                any_str = true;
                max_str = max_str.max(s.chars().count());
                continue;
            }
            // `!!binary` is Python's `bytes`: numpy makes a bytes (`S`) array of it.
            Value::Binary(b) => {
                any_bytes = true;
                max_str = max_str.max(b.len());
                continue;
            }
            Value::Seq(_) | Value::Map(_) | Value::Timestamp(_) => return Err(not_a_scalar(*l)),
        };
        kind = Some(kind.map_or(k, |prev| prev.promote(k)));
    }
    // numpy makes room for the longest text the other values' common type can take; text
    // and binary together make text (the bytes read as ASCII).
    let room = || max_str.max(kind.map_or(0, Kind::text_room)).max(1);
    Ok(if any_str {
        Datatype::Ucs4(room())
    } else if any_bytes {
        Datatype::Ascii(room())
    } else {
        Datatype::Scalar(match kind {
            None => ScalarType::Float64,
            Some(Kind::Bool) => ScalarType::Bool8,
            Some(Kind::Int64) => ScalarType::Int64,
            Some(Kind::UInt64) => ScalarType::UInt64,
            Some(Kind::Float) => ScalarType::Float64,
            Some(Kind::Complex) => ScalarType::Complex128,
        })
    })
}

/// The leaf nodes of nested lists `dims` deep, in C order; checks the nesting is
/// rectangular and matches `dims`.
fn leaves<'t>(data: NodeRef<'t>, dims: &[usize]) -> Result<Vec<NodeRef<'t>>, ArrayError> {
    // Without aliases an array has no more elements than the tree has nodes; aliases may
    // reach a list by many paths (`[&a [...], *a]` nested 34 deep is 2^34 elements in a
    // few hundred bytes), which are taken up to a million elements.
    let most = data.tree().len().max(1 << 20);
    match dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) {
        Some(n) if n <= most => {}
        _ => {
            return Err(err(format!(
                "inline data of shape {dims:?} has more elements than the tree has nodes ({})",
                data.tree().len()
            )));
        }
    }
    let mut out = Vec::new();
    // A 0-d array written as a one-item list (the only inline form the reference does
    // not take for a block number: `data: 5` would be `source: 5`).
    if dims.is_empty()
        && let Some(mut items) = data.items()
        && items.len() == 1
    {
        return Ok(items.next().into_iter().collect());
    }
    let mut stack: Vec<(NodeRef<'t>, usize)> = vec![(data, 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth == dims.len() {
            out.push(node);
            continue;
        }
        let items: Vec<NodeRef<'t>> = node
            .items()
            .ok_or_else(|| err(format!("expected a list at depth {depth}, found {}", node.key_text())))?
            .collect();
        if items.len() != dims[depth] {
            return Err(err(format!(
                "inline data doesn't match the given shape: {} items at depth {depth}, shape says {}",
                items.len(),
                dims[depth]
            )));
        }
        for item in items.into_iter().rev() {
            stack.push((item, depth + 1));
        }
    }
    Ok(out)
}

/// Encodes inline data to native-order bytes plus the mask of `null` entries.
pub(super) fn encode(data: NodeRef<'_>, meta: &ArrayMeta) -> Result<(Vec<u8>, Option<Vec<bool>>), ArrayError> {
    let dims: Vec<usize> = meta
        .shape
        .iter()
        .map(|d| if let Dim::Fixed(v) = d { usize::try_from(*v).map_err(|_| err("shape too large")) } else { Ok(0) })
        .collect::<Result<_, _>>()?;
    if dims.is_empty() && matches!(meta.datatype, Datatype::Record(_)) {
        // A 0-d record: the reference writes the record itself (`[1, 2.5]`), rasdf a
        // one-item list of it; like the reference, take the record as it stands when it
        // is one, else look one level in.
        let mut bytes = Vec::with_capacity(meta.datatype.size());
        if encode_value(&meta.datatype, data, &mut bytes, meta.byteorder, 0).is_ok() {
            return Ok((bytes, None));
        }
    }
    let leaves = leaves(data, &dims)?;
    let size = meta.datatype.size();
    let mut bytes = Vec::with_capacity(leaves.len() * size);
    let mut mask = vec![false; leaves.len()];
    for (i, leaf) in leaves.iter().enumerate() {
        if leaf.is_null() {
            // The reference puts 0 where a null is (`np.where(nones, 0, ...)`), which
            // a string datatype holds as the text "0".
            mask[i] = true;
            let start = bytes.len();
            bytes.resize(start + size, 0);
            match meta.datatype {
                Datatype::Ascii(n) if n > 0 => bytes[start] = b'0',
                Datatype::Ucs4(n) if n > 0 => {
                    let zero =
                        if meta.byteorder == ByteOrder::Big { 0x30u32.to_be_bytes() } else { 0x30u32.to_le_bytes() };
                    bytes[start..start + 4].copy_from_slice(&zero);
                }
                _ => {}
            }
        } else {
            encode_value(&meta.datatype, *leaf, &mut bytes, meta.byteorder, 0)?;
        }
    }
    let mask = mask.iter().any(|&m| m).then_some(mask);
    Ok((bytes, mask))
}

/// The text numpy stores for a scalar in a string array: Python's `str()` of it (`True`,
/// `1e+20`, `inf`).
///
/// # Errors
/// A leaf that is no scalar numpy takes as text ([`not_a_scalar`]).
fn python_str(leaf: NodeRef<'_>) -> Result<String, ArrayError> {
    Ok(match leaf.value() {
        Value::Str(s) => s.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Float(f) => crate::tree::numtext::float_repr(*f),
        Value::Null | Value::Int(_) | Value::BigInt(_) => leaf.key_text(),
        // `str()` of a `datetime.date` is the date as YAML writes it in full.
        Value::Timestamp(t) if is_full_date(t) => t.to_string(),
        // numpy reads bytes as ASCII into a text array.
        Value::Binary(b) if b.is_ascii() => String::from_utf8_lossy(b).into_owned(),
        Value::Seq(_) | Value::Map(_) | Value::Timestamp(_) | Value::Binary(_) => return Err(not_a_scalar(leaf)),
    })
}

/// Whether a timestamp is a date alone, `YYYY-MM-DD` (Python's text of the date it makes).
fn is_full_date(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// The error for a leaf of inline data that rasdf makes no element of a numeric or text
/// array of: the reference leaves a list where a scalar belongs unconverted (numpy's
/// "inhomogeneous shape") and makes an object array, which no ASDF datatype holds, of a
/// mapping or a date with no datatype given (with a text datatype it takes Python's
/// `str()` of them: rasdf takes a date's, refuses a time's and a mapping's). Never a text
/// standing in for the value.
fn not_a_scalar(leaf: NodeRef<'_>) -> ArrayError {
    err(match leaf.value() {
        Value::Seq(_) => "inline data is not rectangular: a list stands where its shape puts a scalar".to_string(),
        Value::Map(_) => "inline data holds a mapping, which numpy keeps only in an object array".to_string(),
        Value::Timestamp(t) => {
            format!("inline data holds the timestamp {t}, which numpy keeps only in an object array")
        }
        Value::Binary(_) => "inline data holds binary that is not ASCII where text is expected".to_string(),
        _ => format!("inline data holds {}, which is not a number or text", leaf.key_text()),
    })
}

/// A leaf as numpy takes it into a float array: numbers and booleans, and text as
/// Python's `float()` reads it (`' 2 '`, `1e5`, `inf`, `1_0.5`).
fn number(leaf: NodeRef<'_>) -> Result<f64, ArrayError> {
    match leaf.value() {
        #[allow(clippy::cast_precision_loss)]
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::BigInt(b) => Ok(b.to_string().parse().unwrap_or(f64::NAN)),
        Value::Str(s) if !leaf.is_asdf_tag("core/complex") => {
            python_float(s).ok_or_else(|| err(format!("could not convert string to float: '{s}'")))
        }
        Value::Seq(_) | Value::Map(_) | Value::Timestamp(_) => Err(not_a_scalar(leaf)),
        _ => Err(err(format!("expected a number, found {}", leaf.key_text()))),
    }
}

/// Python's `float()` of a text: surrounding whitespace, `_` between digits, `inf`,
/// `infinity` and `nan` in any case.
fn python_float(s: &str) -> Option<f64> {
    let t = without_digit_underscores(s.trim())?;
    let body = t.trim_start_matches(['+', '-']);
    if body.len() + 1 < t.len() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan")
        || body.bytes().all(|c| c.is_ascii_digit() || b".eE+-".contains(&c))
    {
        t.parse().ok()
    } else {
        None
    }
}

/// `t` without its underscores, each of which must stand between two digits, as in
/// Python's `int()` and `float()` (`1_000`); `None` when one does not.
fn without_digit_underscores(t: &str) -> Option<String> {
    let b = t.as_bytes();
    let ok = b.iter().enumerate().all(|(i, &c)| {
        c != b'_' || (i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
    });
    ok.then(|| t.replace('_', ""))
}

/// A leaf as the Python int numpy takes into an integer array: ints, booleans, floats
/// cut toward zero, and text as Python's `int()` reads it (`' 12 '`, `+5`, `1_000`).
fn integer(leaf: NodeRef<'_>) -> Result<i128, ArrayError> {
    let too_large = |what: String| err(format!("Python integer {what} is out of bounds for any 64-bit type"));
    match leaf.value() {
        Value::Int(i) => Ok(i128::from(*i)),
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::BigInt(b) => i128::try_from(&**b).map_err(|_| too_large(b.to_string())),
        Value::Float(f) if f.is_nan() => Err(err("cannot convert float NaN to integer")),
        Value::Float(f) if f.is_infinite() => Err(err("cannot convert float infinity to integer")),
        #[allow(clippy::cast_possible_truncation)]
        Value::Float(f) if f.abs() < 1e38 => Ok(f.trunc() as i128),
        Value::Float(f) => Err(too_large(format!("{f:e}"))),
        Value::Str(s) if !leaf.is_asdf_tag("core/complex") => {
            let invalid = || err(format!("invalid literal for int() with base 10: '{s}'"));
            let t = without_digit_underscores(s.trim()).ok_or_else(invalid)?;
            let digits = t.strip_prefix(['+', '-']).unwrap_or(&t);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(invalid());
            }
            let v: num_bigint::BigInt = t.parse().map_err(|_| invalid())?;
            i128::try_from(&v).map_err(|_| too_large(v.to_string()))
        }
        Value::Seq(_) | Value::Map(_) | Value::Timestamp(_) => Err(not_a_scalar(leaf)),
        _ => Err(err(format!("expected an integer, found {}", leaf.key_text()))),
    }
}

/// [`integer`], checked to fit `T` as numpy checks it.
fn integer_as<T: TryFrom<i128>>(leaf: NodeRef<'_>, name: &str) -> Result<T, ArrayError> {
    let v = integer(leaf)?;
    T::try_from(v).map_err(|_| err(format!("Python integer {v} out of bounds for {name}")))
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn encode_value(
    dt: &Datatype,
    leaf: NodeRef<'_>,
    out: &mut Vec<u8>,
    order: ByteOrder,
    depth: usize,
) -> Result<(), ArrayError> {
    if depth > 32 {
        return Err(err("record nests too deeply"));
    }
    let ne = order == ByteOrder::Big;
    macro_rules! put {
        ($v:expr) => {{
            let v = $v;
            out.extend_from_slice(&if ne { v.to_be_bytes() } else { v.to_le_bytes() });
        }};
    }
    match dt {
        Datatype::Scalar(t) => match t {
            ScalarType::Int8 => put!(integer_as::<i8>(leaf, "int8")?),
            ScalarType::Int16 => put!(integer_as::<i16>(leaf, "int16")?),
            ScalarType::Int32 => put!(integer_as::<i32>(leaf, "int32")?),
            ScalarType::Int64 => put!(integer_as::<i64>(leaf, "int64")?),
            ScalarType::UInt8 => put!(integer_as::<u8>(leaf, "uint8")?),
            ScalarType::UInt16 => put!(integer_as::<u16>(leaf, "uint16")?),
            ScalarType::UInt32 => put!(integer_as::<u32>(leaf, "uint32")?),
            ScalarType::UInt64 => put!(integer_as::<u64>(leaf, "uint64")?),
            ScalarType::Float16 => put!(half::f16::from_f64(number(leaf)?).to_bits()),
            ScalarType::Float32 => put!(number(leaf)? as f32),
            ScalarType::Float64 => put!(number(leaf)?),
            ScalarType::Complex64 | ScalarType::Complex128 => {
                let (re, im) = match leaf.value() {
                    Value::Str(s) => parse_complex(s).ok_or_else(|| err(format!("'{s}' is not a complex number")))?,
                    _ => (number(leaf)?, 0.0),
                };
                if *t == ScalarType::Complex64 {
                    put!(re as f32);
                    put!(im as f32);
                } else {
                    put!(re);
                    put!(im);
                }
            }
            // numpy's truth of a value: text is true unless empty (`'False'` too).
            ScalarType::Bool8 => out.push(u8::from(match leaf.value() {
                Value::Bool(b) => *b,
                Value::Str(s) if leaf.is_asdf_tag("core/complex") => {
                    parse_complex(s).is_some_and(|(re, im)| re != 0.0 || im != 0.0)
                }
                Value::Str(s) => !s.is_empty(),
                _ => number(leaf)? != 0.0,
            })),
        },
        // Text longer than the datatype is cut to it, as numpy cuts it.
        Datatype::Ascii(n) => {
            let text;
            let bytes = match leaf.value() {
                Value::Binary(b) => b.as_slice(),
                _ => {
                    text = python_str(leaf)?;
                    if !text.is_ascii() {
                        return Err(err(format!("'{text}' is not ASCII text")));
                    }
                    text.as_bytes()
                }
            };
            let b = &bytes[..bytes.len().min(*n)];
            out.extend_from_slice(b);
            out.resize(out.len() + n - b.len(), 0);
        }
        Datatype::Ucs4(n) => {
            let s = python_str(leaf)?;
            let mut used = 0;
            for c in s.chars().take(*n) {
                put!(c as u32);
                used += 1;
            }
            out.resize(out.len() + 4 * (n - used), 0);
        }
        Datatype::Record(fields) => {
            let items: Vec<NodeRef<'_>> =
                leaf.items().ok_or_else(|| err("a record must be a list of field values"))?.collect();
            if items.len() != fields.len() {
                return Err(err(format!("a record has {} fields, found {} values", fields.len(), items.len())));
            }
            for (f, item) in fields.iter().zip(items) {
                if f.shape.is_empty() {
                    encode_value(&f.datatype, item, out, f.byteorder, depth + 1)?;
                } else {
                    for l in leaves(item, &f.shape)? {
                        encode_value(&f.datatype, l, out, f.byteorder, depth + 1)?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::python_float;

    /// Text as Python's `float()` reads it, and what it refuses.
    #[test]
    fn floats_from_text_as_python_reads_them() {
        for (text, value) in
            [("1e5", 1e5), (" 2 ", 2.0), ("1_0.5", 10.5), ("-Infinity", f64::NEG_INFINITY), (".5", 0.5)]
        {
            assert_eq!(python_float(text), Some(value), "{text}");
        }
        assert!(python_float(" NaN ").is_some_and(f64::is_nan));
        for text in ["1__0", "_1", "1_", "+-1", "0x10", "abc", "", "1e", "inf inity"] {
            assert_eq!(python_float(text), None, "{text}");
        }
    }
}
