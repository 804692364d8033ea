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
        Some(d) => d.clone(),
        None => {
            let leaves = leaves(data, &dims)?;
            infer_type(&leaves)
        }
    };
    Ok((datatype, dims))
}

fn infer_type(leaves: &[NodeRef<'_>]) -> Datatype {
    let (mut any_float, mut any_int, mut any_complex, mut max_str, mut any_str) = (false, false, false, 0, false);
    let mut any_bool = false;
    for l in leaves {
        match l.value() {
            Value::Null => {}
            Value::Bool(_) => any_bool = true,
            Value::Int(_) | Value::BigInt(_) => any_int = true,
            Value::Float(_) => any_float = true,
            Value::Str(s) if l.is_asdf_tag("core/complex") => {
                let _ = s;
                any_complex = true;
            }
            Value::Str(s) => {
                any_str = true;
                max_str = max_str.max(s.chars().count());
            }
            _ => any_str = true,
        }
    }
    if any_str {
        // numpy makes room for the longest text any of the other kinds can take: 5 for
        // a bool (`False`), 21 for an int, 32 for a float, 64 for a complex.
        let room = [(any_bool, 5), (any_int, 21), (any_float, 32), (any_complex, 64)];
        let others = room.iter().filter(|(any, _)| *any).map(|&(_, n)| n).max().unwrap_or(0);
        Datatype::Ucs4(max_str.max(others).max(1))
    } else if any_complex {
        Datatype::Scalar(ScalarType::Complex128)
    } else if any_float || (leaves.iter().all(|l| l.is_null()) && !leaves.is_empty()) {
        Datatype::Scalar(ScalarType::Float64)
    } else if any_int || leaves.is_empty() {
        Datatype::Scalar(if leaves.is_empty() { ScalarType::Float64 } else { ScalarType::Int64 })
    } else {
        Datatype::Scalar(ScalarType::Bool8)
    }
}

/// The leaf nodes of nested lists `dims` deep, in C order; checks the nesting is
/// rectangular and matches `dims`.
fn leaves<'t>(data: NodeRef<'t>, dims: &[usize]) -> Result<Vec<NodeRef<'t>>, ArrayError> {
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
fn python_str(leaf: NodeRef<'_>) -> String {
    match leaf.value() {
        Value::Str(s) => s.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Float(f) => crate::tree::emit::float_repr(*f),
        _ => leaf.key_text(),
    }
}

fn number(leaf: NodeRef<'_>) -> Result<f64, ArrayError> {
    match leaf.value() {
        #[allow(clippy::cast_precision_loss)]
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::BigInt(b) => Ok(b.to_string().parse().unwrap_or(f64::NAN)),
        _ => Err(err(format!("expected a number, found {}", leaf.key_text()))),
    }
}

fn integer(leaf: NodeRef<'_>) -> Result<i128, ArrayError> {
    match leaf.value() {
        Value::Int(i) => Ok(i128::from(*i)),
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::BigInt(b) => i128::try_from(&**b).map_err(|_| err("integer too large")),
        #[allow(clippy::cast_possible_truncation)]
        Value::Float(f) => Ok(*f as i128),
        _ => Err(err(format!("expected an integer, found {}", leaf.key_text()))),
    }
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
            ScalarType::Int8 => put!(integer(leaf)? as i8),
            ScalarType::Int16 => put!(integer(leaf)? as i16),
            ScalarType::Int32 => put!(integer(leaf)? as i32),
            ScalarType::Int64 => put!(integer(leaf)? as i64),
            ScalarType::UInt8 => put!(integer(leaf)? as u8),
            ScalarType::UInt16 => put!(integer(leaf)? as u16),
            ScalarType::UInt32 => put!(integer(leaf)? as u32),
            ScalarType::UInt64 => put!(integer(leaf)? as u64),
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
            ScalarType::Bool8 => out.push(u8::from(match leaf.value() {
                Value::Bool(b) => *b,
                _ => number(leaf)? != 0.0,
            })),
        },
        Datatype::Ascii(n) => {
            let s = python_str(leaf);
            let b = s.as_bytes();
            if b.len() > *n {
                return Err(err(format!("'{s}' is longer than [ascii, {n}]")));
            }
            out.extend_from_slice(b);
            out.resize(out.len() + n - b.len(), 0);
        }
        Datatype::Ucs4(n) => {
            let s = python_str(leaf);
            let chars: Vec<char> = s.chars().collect();
            if chars.len() > *n {
                return Err(err(format!("'{s}' is longer than [ucs4, {n}]")));
            }
            for c in &chars {
                put!(*c as u32);
            }
            out.resize(out.len() + 4 * (n - chars.len()), 0);
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
