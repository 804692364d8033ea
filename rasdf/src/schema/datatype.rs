//! ASDF's own schema keywords on arrays, `ndim`, `max_ndim` and `datatype` (with
//! `exact_datatype`), as the reference's core validators apply them to a node tagged
//! `core/ndarray-*` of the tree as read: the number of dimensions from `shape` (or the
//! inline data's nesting), the datatype from `datatype` (or the inline data's values, as
//! numpy infers it), met when it equals the schema's or, without `exact_datatype`, when
//! numpy's "safe" casting takes it to the schema's (`uint8` to `int16`, `float32` to
//! `float64`, `[ascii, 3]` to `[ucs4, 5]`; a record field by field).

use crate::tree::{NodeRef, Value};

/// A scalar datatype, by its ASDF name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
    C64,
    C128,
}

const NAMES: &[(&str, Num)] = &[
    ("int8", Num::I8),
    ("int16", Num::I16),
    ("int32", Num::I32),
    ("int64", Num::I64),
    ("uint8", Num::U8),
    ("uint16", Num::U16),
    ("uint32", Num::U32),
    ("uint64", Num::U64),
    ("float16", Num::F16),
    ("float32", Num::F32),
    ("float64", Num::F64),
    ("complex64", Num::C64),
    ("complex128", Num::C128),
    ("bool8", Num::Bool),
];

impl Num {
    fn from_name(name: &str) -> Option<Num> {
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
    }

    fn name(self) -> &'static str {
        NAMES.iter().find(|(_, t)| *t == self).map_or("?", |(n, _)| n)
    }

    /// Kind (0 bool, 1 unsigned, 2 signed, 3 float, 4 complex) and size in bytes.
    fn kind_size(self) -> (u8, u8) {
        match self {
            Num::Bool => (0, 1),
            Num::U8 => (1, 1),
            Num::U16 => (1, 2),
            Num::U32 => (1, 4),
            Num::U64 => (1, 8),
            Num::I8 => (2, 1),
            Num::I16 => (2, 2),
            Num::I32 => (2, 4),
            Num::I64 => (2, 8),
            Num::F16 => (3, 2),
            Num::F32 => (3, 4),
            Num::F64 => (3, 8),
            Num::C64 => (4, 8),
            Num::C128 => (4, 16),
        }
    }

    /// numpy's `can_cast(self, to, "safe")`.
    fn can_cast(self, to: Num) -> bool {
        let ((k, s), (tk, ts)) = (self.kind_size(), to.kind_size());
        match (k, tk) {
            _ if self == to => true,
            (0, _) => true,
            (_, 0) => false,
            // Unsigned to unsigned, signed to signed: no narrower.
            (1, 1) | (2, 2) | (3, 3) | (4, 4) => ts >= s,
            // Unsigned to signed needs a wider type; signed never goes to unsigned.
            (1, 2) => ts > s,
            (2, 1) => false,
            // Integers to floats: float16 holds 8 bits, float32 16, float64 all.
            (1 | 2, 3) => match s {
                1 => true,
                2 => ts >= 4,
                _ => ts >= 8,
            },
            // Integers to complex: as to the float of half the size.
            (1 | 2, 4) => match s {
                1 | 2 => true,
                _ => ts >= 16,
            },
            (3, 4) => ts >= 2 * s.max(4),
            _ => false,
        }
    }

    /// The shortest string numpy casts this type to safely.
    fn text_len(self) -> u64 {
        match self {
            Num::Bool => 5,
            Num::U8 => 3,
            Num::I8 => 4,
            Num::U16 => 5,
            Num::I16 => 6,
            Num::U32 => 10,
            Num::I32 => 11,
            Num::U64 => 20,
            Num::I64 => 21,
            Num::F16 | Num::F32 | Num::F64 => 32,
            Num::C64 | Num::C128 => 64,
        }
    }
}

/// A datatype as numpy takes it.
#[derive(Clone, Debug, PartialEq)]
enum Dt {
    Num(Num),
    /// `[ascii, n]` (bytes) or `[ucs4, n]`.
    Text {
        ucs4: bool,
        len: u64,
    },
    Record(Vec<Field>),
}

#[derive(Clone, Debug, PartialEq)]
struct Field {
    dt: Dt,
    shape: Vec<u64>,
}

impl Dt {
    /// The datatype an ASDF `datatype` value names (`asdf_datatype_to_numpy_dtype`).
    fn parse(node: NodeRef<'_>, depth: usize) -> Option<Dt> {
        if depth > 32 {
            return None;
        }
        if let Value::Str(name) = node.value() {
            return Num::from_name(name).map(Dt::Num);
        }
        let items: Vec<NodeRef<'_>> = node.items()?.collect();
        if items.len() == 2
            && let (Value::Str(kind), Value::Int(len)) = (items[0].value(), items[1].value())
            && (kind == "ascii" || kind == "ucs4")
        {
            return Some(Dt::Text { ucs4: kind == "ucs4", len: u64::try_from(*len).ok()? });
        }
        let fields = items.into_iter().map(|item| Field::parse(item, depth + 1)).collect::<Option<Vec<_>>>()?;
        Some(Dt::Record(fields))
    }

    fn show(&self) -> String {
        match self {
            Dt::Num(n) => format!("'{}'", n.name()),
            Dt::Text { ucs4, len } => format!("['{}', {len}]", if *ucs4 { "ucs4" } else { "ascii" }),
            Dt::Record(fields) => format!("a record of {} fields", fields.len()),
        }
    }

    /// numpy's `can_cast(self, to, "safe")`.
    fn can_cast(&self, to: &Dt) -> bool {
        match (self, to) {
            (Dt::Num(a), Dt::Num(b)) => a.can_cast(*b),
            (Dt::Num(a), Dt::Text { len, .. }) => *len >= a.text_len(),
            (Dt::Text { ucs4: a, len: m }, Dt::Text { ucs4: b, len: n }) => (!*a || *b) && m <= n,
            (Dt::Record(a), Dt::Record(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.can_cast(y)),
            _ => false,
        }
    }
}

impl Field {
    fn parse(node: NodeRef<'_>, depth: usize) -> Option<Field> {
        if node.pairs().is_none() {
            return Some(Field { dt: Dt::parse(node, depth)?, shape: Vec::new() });
        }
        let dt = Dt::parse(node.key("datatype")?, depth)?;
        let shape = match node.key("shape") {
            None => Vec::new(),
            Some(s) => s.items()?.map(|d| d.as_i64().and_then(|d| u64::try_from(d).ok())).collect::<Option<_>>()?,
        };
        Some(Field { dt, shape })
    }

    /// A field's type with its shape: a sub-array casts to one of the same shape, a
    /// scalar to any shape.
    fn can_cast(&self, to: &Field) -> bool {
        (self.shape == to.shape || self.shape.is_empty()) && self.dt.can_cast(&to.dt)
    }
}

/// The number of dimensions of an ndarray node (`_get_ndim`): `shape`'s length, else
/// the inline data's; `Err` when the inline data is ragged (numpy refuses it).
pub(super) fn ndim(node: NodeRef<'_>) -> Result<Option<usize>, String> {
    if node.items().is_some() {
        return inline_shape(node).map(|s| Some(s.len()));
    }
    if node.pairs().is_some() {
        if let Some(shape) = node.key("shape") {
            return Ok(match shape.value() {
                Value::Seq(items) => Some(items.len()),
                Value::Str(s) => Some(s.chars().count()),
                _ => None,
            });
        }
        if let Some(data) = node.key("data") {
            return inline_shape(data).map(|s| Some(s.len()));
        }
    }
    Ok(None)
}

/// The shape numpy gives nested lists.
fn inline_shape(node: NodeRef<'_>) -> Result<Vec<usize>, String> {
    let mut shape = Vec::new();
    let mut level = vec![node];
    loop {
        if shape.len() > 64 {
            return Err("inline data nested too deep".into());
        }
        let lists = level.iter().filter(|n| n.items().is_some()).count();
        if lists == 0 {
            return Ok(shape);
        }
        if lists != level.len() {
            return Err("inline data has an inhomogeneous shape".into());
        }
        let len = level[0].items().map_or(0, |i| i.len());
        if level.iter().any(|n| n.items().map_or(0, |i| i.len()) != len) {
            return Err("inline data has an inhomogeneous shape".into());
        }
        shape.push(len);
        level = level.iter().flat_map(|n| n.items().into_iter().flatten()).collect();
        if level.is_empty() {
            return Ok(shape);
        }
    }
}

/// The datatype numpy infers for inline data (`np.asarray` of the values as read).
fn inline_datatype(node: NodeRef<'_>) -> Result<Dt, String> {
    inline_shape(node)?;
    let (mut bools, mut ints, mut big, mut floats, mut texts, mut text_len) = (false, false, false, false, false, 0u64);
    let mut stack = vec![node];
    let mut unsigned_only = true;
    while let Some(n) = stack.pop() {
        match n.value() {
            Value::Seq(items) => stack.extend(items.iter().map(|&i| n.tree().node(i))),
            Value::Bool(_) => bools = true,
            Value::Int(i) => {
                ints = true;
                unsigned_only &= *i >= 0;
            }
            Value::BigInt(b) => {
                big = true;
                let fits_u64 = u64::try_from(&**b).is_ok();
                if !fits_u64 {
                    return Err("inline data holds an integer beyond 64 bits".into());
                }
            }
            Value::Float(_) => floats = true,
            Value::Str(s) => {
                texts = true;
                text_len = text_len.max(s.chars().count() as u64);
            }
            _ => return Err("inline data holds values numpy makes objects of".into()),
        }
    }
    Ok(match () {
        _ if texts && !(bools || ints || big || floats) => Dt::Text { ucs4: true, len: text_len },
        _ if texts => return Err("inline data mixes strings and numbers".into()),
        _ if floats || (big && ints && !unsigned_only) => Dt::Num(Num::F64),
        _ if big => Dt::Num(Num::U64),
        _ if ints => Dt::Num(Num::I64),
        _ if bools => Dt::Num(Num::Bool),
        // numpy makes float64 of an empty list.
        _ => Dt::Num(Num::F64),
    })
}

/// The keys of a record field that the comparison keeps.
const FIELD_KEYS: [&str; 4] = ["name", "datatype", "byteorder", "shape"];

/// Whether a node's `datatype` equals the schema's as Python compares them (the
/// schema's record fields cut to [`FIELD_KEYS`]).
fn same_datatype(schema: NodeRef<'_>, node: NodeRef<'_>) -> bool {
    let cut = schema.items().and_then(|mut i| i.next()).is_some_and(|f| f.pairs().is_some());
    if !cut {
        return super::validate::equal(schema, node);
    }
    let (Some(a), Some(b)) = (schema.items(), node.items()) else { return false };
    if a.len() != b.len() {
        return false;
    }
    a.zip(b).all(|(x, y)| {
        let Some(pairs) = x.pairs() else { return super::validate::equal(x, y) };
        let kept: Vec<_> = pairs.filter(|(k, _)| k.as_str().is_some_and(|k| FIELD_KEYS.contains(&k))).collect();
        y.pairs().is_some_and(|p| p.len() == kept.len())
            && kept
                .iter()
                .all(|(k, v)| y.key(k.as_str().unwrap_or_default()).is_some_and(|w| super::validate::equal(*v, w)))
    })
}

/// Checks an ndarray node against a schema's `datatype` (`validate_datatype`); `Err`
/// says why it fails.
pub(super) fn check(node: NodeRef<'_>, want: NodeRef<'_>, exact: bool) -> Result<(), String> {
    // The node's datatype: as written, or inferred from the inline data.
    let written = match node.value() {
        Value::Seq(_) => None,
        Value::Map(_) => match (node.key("datatype"), node.key("data")) {
            (Some(d), _) => Some(d),
            (None, Some(_)) => None,
            (None, None) => return Err("Not an array".into()),
        },
        _ => return Err("Not an array".into()),
    };
    let wanted = Dt::parse(want, 0);
    let (have, have_text) = match written {
        Some(d) => {
            if same_datatype(want, d) {
                return Ok(());
            }
            (Dt::parse(d, 0), super::validate::show(d))
        }
        None => {
            let data = node.key("data").unwrap_or(node);
            let dt = inline_datatype(data)?;
            if wanted.as_ref() == Some(&dt) {
                return Ok(());
            }
            let text = dt.show();
            (Some(dt), text)
        }
    };
    let want_text = super::validate::show(want);
    if exact {
        return Err(format!("Expected datatype {want_text}, got {have_text}"));
    }
    let (Some(wanted), Some(have)) = (wanted, have) else {
        return Err(format!("datatype {want_text} or {have_text} is not an ASDF datatype"));
    };
    match (&wanted, &have) {
        (Dt::Record(_), Dt::Record(h)) => {
            let Dt::Record(w) = &wanted else { unreachable!() };
            if w.len() != h.len() {
                return Err(format!("Mismatch in number of columns: Expected {}, got {}", w.len(), h.len()));
            }
            if let Some((a, b)) = h.iter().zip(w).find(|(a, b)| !a.can_cast(b)) {
                return Err(format!(
                    "Can not safely cast to expected datatype: Expected {}, got {}",
                    b.dt.show(),
                    a.dt.show()
                ));
            }
            Ok(())
        }
        (Dt::Record(_), _) => Err(format!("Expected structured datatype {want_text}, got {have_text}")),
        (_, Dt::Record(_)) => Err(format!("Expected scalar datatype {want_text}, got {have_text}")),
        _ if !have.can_cast(&wanted) => Err(format!("Can not safely cast from {have_text} to {want_text}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_casts_are_numpys() {
        // numpy 2's can_cast(a, b, "safe") for every pair of ASDF's scalar types.
        let table: &[(&str, &[&str])] = &[
            ("int8", &["int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]),
            ("int16", &["int16", "int32", "int64", "float32", "float64", "complex64", "complex128"]),
            ("int32", &["int32", "int64", "float64", "complex128"]),
            ("int64", &["int64", "float64", "complex128"]),
            (
                "uint8",
                &[
                    "int16",
                    "int32",
                    "int64",
                    "uint8",
                    "uint16",
                    "uint32",
                    "uint64",
                    "float16",
                    "float32",
                    "float64",
                    "complex64",
                    "complex128",
                ],
            ),
            (
                "uint16",
                &["int32", "int64", "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128"],
            ),
            ("uint32", &["int64", "uint32", "uint64", "float64", "complex128"]),
            ("uint64", &["uint64", "float64", "complex128"]),
            ("float16", &["float16", "float32", "float64", "complex64", "complex128"]),
            ("float32", &["float32", "float64", "complex64", "complex128"]),
            ("float64", &["float64", "complex128"]),
            ("complex64", &["complex64", "complex128"]),
            ("complex128", &["complex128"]),
        ];
        for &(from, to) in table {
            let a = Num::from_name(from).unwrap();
            for &(name, b) in NAMES {
                assert_eq!(a.can_cast(b), to.contains(&name), "{from} -> {name}");
            }
            assert!(Num::Bool.can_cast(a) && !a.can_cast(Num::Bool), "{from}");
        }
    }
}
