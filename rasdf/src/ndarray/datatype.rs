//! ndarray datatypes (core/ndarray-1.0.0 and 1.1.0 "datatype"), byte orders, and the
//! conversion of one element's bytes to a value.

use std::fmt;

use super::ArrayError;
use crate::tree::NodeRef;

/// Byte order of multi-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Most significant byte first.
    Big,
    /// Least significant byte first.
    Little,
}

impl ByteOrder {
    /// The machine's order.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "big") { ByteOrder::Big } else { ByteOrder::Little };

    /// `big` or `little`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Big => "big",
            ByteOrder::Little => "little",
        }
    }

    fn parse(node: NodeRef<'_>) -> Result<Self, ArrayError> {
        match node.as_str() {
            Some("big") => Ok(ByteOrder::Big),
            Some("little") => Ok(ByteOrder::Little),
            _ => Err(ArrayError::Invalid(format!("byteorder must be 'big' or 'little', not {}", node.key_text()))),
        }
    }
}

/// A numeric or boolean element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ScalarType {
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    Float32,
    Float64,
    Complex64,
    Complex128,
    Bool8,
}

impl ScalarType {
    /// Every scalar type, in the standard's order.
    pub const ALL: [ScalarType; 14] = [
        ScalarType::Int8,
        ScalarType::Int16,
        ScalarType::Int32,
        ScalarType::Int64,
        ScalarType::UInt8,
        ScalarType::UInt16,
        ScalarType::UInt32,
        ScalarType::UInt64,
        ScalarType::Float16,
        ScalarType::Float32,
        ScalarType::Float64,
        ScalarType::Complex64,
        ScalarType::Complex128,
        ScalarType::Bool8,
    ];

    /// The name used in files (`float32`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Int8 => "int8",
            ScalarType::Int16 => "int16",
            ScalarType::Int32 => "int32",
            ScalarType::Int64 => "int64",
            ScalarType::UInt8 => "uint8",
            ScalarType::UInt16 => "uint16",
            ScalarType::UInt32 => "uint32",
            ScalarType::UInt64 => "uint64",
            ScalarType::Float16 => "float16",
            ScalarType::Float32 => "float32",
            ScalarType::Float64 => "float64",
            ScalarType::Complex64 => "complex64",
            ScalarType::Complex128 => "complex128",
            ScalarType::Bool8 => "bool8",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ScalarType::Int8 | ScalarType::UInt8 | ScalarType::Bool8 => 1,
            ScalarType::Int16 | ScalarType::UInt16 | ScalarType::Float16 => 2,
            ScalarType::Int32 | ScalarType::UInt32 | ScalarType::Float32 => 4,
            ScalarType::Int64 | ScalarType::UInt64 | ScalarType::Float64 | ScalarType::Complex64 => 8,
            ScalarType::Complex128 => 16,
        }
    }
}

/// One field of a structured (record) datatype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (fields without one are allowed).
    pub name: Option<String>,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its byte order (the array's when the field does not say).
    pub byteorder: ByteOrder,
    /// Subarray shape (empty for a plain field).
    pub shape: Vec<usize>,
}

impl Field {
    /// The field's name as numpy (and so the reference) gives it: its own, or `f{index}`
    /// (its place in the record) when it has none or an empty one.
    pub fn numpy_name(&self, index: usize) -> std::borrow::Cow<'_, str> {
        match self.name.as_deref() {
            Some(n) if !n.is_empty() => n.into(),
            _ => format!("f{index}").into(),
        }
    }

    /// Bytes the field takes in a record.
    pub fn size(&self) -> usize {
        self.datatype.size() * self.shape.iter().product::<usize>()
    }
}

/// An ndarray datatype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datatype {
    /// A number or boolean.
    Scalar(ScalarType),
    /// `[ascii, N]`: N bytes of ASCII, NUL-padded.
    Ascii(usize),
    /// `[ucs4, N]`: N UCS-4 code points, NUL-padded.
    Ucs4(usize),
    /// A structured record.
    Record(Vec<Field>),
}

impl Datatype {
    /// Bytes per element.
    pub fn size(&self) -> usize {
        match self {
            Datatype::Scalar(s) => s.size(),
            Datatype::Ascii(n) => *n,
            Datatype::Ucs4(n) => 4 * n,
            Datatype::Record(fields) => fields.iter().map(Field::size).sum(),
        }
    }

    /// Parses a `datatype` node, with `order` the array's byte order (for fields).
    ///
    /// # Errors
    /// [`ArrayError::Invalid`] for an unknown or malformed datatype.
    pub fn parse(node: NodeRef<'_>, order: ByteOrder) -> Result<Self, ArrayError> {
        let mut budget = MAX_DATATYPE_NODES;
        Self::parse_depth(node, order, 0, &mut budget)
    }

    fn parse_depth(node: NodeRef<'_>, order: ByteOrder, depth: usize, budget: &mut usize) -> Result<Self, ArrayError> {
        if depth > 32 {
            return Err(ArrayError::Invalid("datatype nests too deeply".into()));
        }
        // Aliases may reach a record by many paths (`[&a [...], *a]` nested 30 deep is
        // 2^30 fields in a few hundred bytes): each node met counts.
        *budget = budget
            .checked_sub(1)
            .ok_or_else(|| ArrayError::Invalid(format!("datatype has over {MAX_DATATYPE_NODES} fields")))?;
        if let Some(name) = node.as_str() {
            return ScalarType::from_name(name)
                .map(Datatype::Scalar)
                .ok_or_else(|| ArrayError::Invalid(format!("unknown datatype '{name}'")));
        }
        let Some(items) = node.items() else {
            return Err(ArrayError::Invalid(format!("datatype must be a name or a list, not {}", node.key_text())));
        };
        let items: Vec<NodeRef<'_>> = items.collect();
        if items.len() == 2
            && let (Some(kind @ ("ascii" | "ucs4")), Some(n)) = (items[0].as_str(), items[1].as_i64())
        {
            let n = usize::try_from(n).map_err(|_| ArrayError::Invalid(format!("string length {n}")))?;
            let dt = if kind == "ascii" { Datatype::Ascii(n) } else { Datatype::Ucs4(n) };
            let width = if kind == "ascii" { 1 } else { 4 };
            check_item_size(n.checked_mul(width), &dt)?;
            return Ok(dt);
        }
        let mut fields = Vec::with_capacity(items.len());
        for item in items {
            fields.push(if item.pairs().is_some() {
                let byteorder = match item.key("byteorder") {
                    Some(b) => ByteOrder::parse(b)?,
                    None => order,
                };
                let dt = item
                    .key("datatype")
                    .ok_or_else(|| ArrayError::Invalid("a record field needs a datatype".into()))?;
                let datatype = Datatype::parse_depth(dt, byteorder, depth + 1, budget)?;
                let shape = match item.key("shape") {
                    Some(s) => s
                        .items()
                        .ok_or_else(|| ArrayError::Invalid("a field's shape must be a list".into()))?
                        .map(|d| d.as_i64().and_then(|v| usize::try_from(v).ok()))
                        .collect::<Option<Vec<usize>>>()
                        .ok_or_else(|| ArrayError::Invalid("a field's shape must be non-negative integers".into()))?,
                    None => Vec::new(),
                };
                Field {
                    name: item.key("name").and_then(|n| n.as_str()).map(str::to_string),
                    datatype,
                    byteorder,
                    shape,
                }
            } else {
                Field {
                    name: None,
                    datatype: Datatype::parse_depth(item, order, depth + 1, budget)?,
                    byteorder: order,
                    shape: Vec::new(),
                }
            });
        }
        // numpy refuses a name twice, counting the `f{index}` of unnamed fields.
        let mut names = std::collections::HashSet::with_capacity(fields.len());
        for (i, f) in fields.iter().enumerate() {
            let name = f.numpy_name(i);
            if !names.insert(name.clone()) {
                return Err(ArrayError::Invalid(format!("field name '{name}' occurs more than once")));
            }
        }
        // Guard the record's size against overflow before anyone multiplies it.
        let total = fields.iter().try_fold(0usize, |total, f| {
            let n = f.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            n.and_then(|n| n.checked_mul(f.datatype.size())).and_then(|s| total.checked_add(s))
        });
        let dt = Datatype::Record(fields);
        check_item_size(total, &dt)?;
        Ok(dt)
    }
}

/// The most datatype nodes (fields, nested records, names) one datatype may have, each
/// counted as often as aliases reach it.
pub const MAX_DATATYPE_NODES: usize = 100_000;

/// The largest element numpy makes (its item size is a C `int`), and so the reference
/// reads: every [`Datatype::size`] is at most this, so sizes never overflow.
pub const MAX_ITEM_BYTES: usize = i32::MAX as usize;

/// `Ok` when `size` (`None`: it overflowed) is an item size numpy can hold.
fn check_item_size(size: Option<usize>, dt: &Datatype) -> Result<(), ArrayError> {
    match size {
        Some(s) if s <= MAX_ITEM_BYTES => Ok(()),
        _ => {
            let what = size.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
            let dt = match dt {
                Datatype::Record(fields) => format!("a record of {} fields", fields.len()),
                _ => dt.to_string(),
            };
            Err(ArrayError::Invalid(format!(
                "datatype {dt} takes {what} bytes per element, more than numpy's limit of {MAX_ITEM_BYTES}"
            )))
        }
    }
}

impl fmt::Display for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Datatype::Scalar(s) => f.write_str(s.name()),
            Datatype::Ascii(n) => write!(f, "[ascii, {n}]"),
            Datatype::Ucs4(n) => write!(f, "[ucs4, {n}]"),
            Datatype::Record(fields) => {
                f.write_str("[")?;
                for (i, fl) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match &fl.name {
                        Some(n) => write!(f, "{n}: {}", fl.datatype)?,
                        None => write!(f, "{}", fl.datatype)?,
                    }
                    if !fl.shape.is_empty() {
                        write!(f, " {:?}", fl.shape)?;
                    }
                }
                f.write_str("]")
            }
        }
    }
}

/// One element's value, whatever its datatype.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float (float16 and float32 widened exactly).
    Float(f64),
    /// A complex number (complex64 widened exactly).
    Complex(f64, f64),
    /// `[ascii, N]`, trailing NULs removed.
    Bytes(Vec<u8>),
    /// `[ucs4, N]`, trailing NULs removed.
    Str(String),
    /// A record's fields, in order (a subarray field is a `List`).
    Record(Vec<Element>),
    /// A subarray field's elements, nested by its shape.
    List(Vec<Element>),
}

impl Element {
    /// The element as a float, for numbers and booleans.
    pub fn as_f64(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        match *self {
            Element::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            Element::Int(i) => Some(i as f64),
            Element::UInt(u) => Some(u as f64),
            Element::Float(f) => Some(f),
            _ => None,
        }
    }
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// Decodes one scalar of type `t` from `b` (at least `t.size()` bytes).
pub fn decode_scalar(t: ScalarType, b: &[u8], order: ByteOrder) -> Element {
    let big = order == ByteOrder::Big;
    macro_rules! num {
        ($ty:ty, $n:literal) => {{
            let a = arr::<$n>(b);
            if big { <$ty>::from_be_bytes(a) } else { <$ty>::from_le_bytes(a) }
        }};
    }
    match t {
        ScalarType::Int8 => Element::Int(i64::from(num!(i8, 1))),
        ScalarType::Int16 => Element::Int(i64::from(num!(i16, 2))),
        ScalarType::Int32 => Element::Int(i64::from(num!(i32, 4))),
        ScalarType::Int64 => Element::Int(num!(i64, 8)),
        ScalarType::UInt8 => Element::UInt(u64::from(num!(u8, 1))),
        ScalarType::UInt16 => Element::UInt(u64::from(num!(u16, 2))),
        ScalarType::UInt32 => Element::UInt(u64::from(num!(u32, 4))),
        ScalarType::UInt64 => Element::UInt(num!(u64, 8)),
        ScalarType::Float16 => Element::Float(half::f16::from_bits(num!(u16, 2)).to_f64()),
        ScalarType::Float32 => Element::Float(f64::from(num!(f32, 4))),
        ScalarType::Float64 => Element::Float(num!(f64, 8)),
        ScalarType::Complex64 => {
            let (re, im) =
                (decode_scalar(ScalarType::Float32, b, order), decode_scalar(ScalarType::Float32, &b[4..], order));
            Element::Complex(re.as_f64().unwrap_or(0.0), im.as_f64().unwrap_or(0.0))
        }
        ScalarType::Complex128 => {
            let (re, im) =
                (decode_scalar(ScalarType::Float64, b, order), decode_scalar(ScalarType::Float64, &b[8..], order));
            Element::Complex(re.as_f64().unwrap_or(0.0), im.as_f64().unwrap_or(0.0))
        }
        ScalarType::Bool8 => Element::Bool(b[0] != 0),
    }
}

/// Decodes one element of `dt` from `b` (at least `dt.size()` bytes).
pub fn decode_element(dt: &Datatype, b: &[u8], order: ByteOrder) -> Element {
    match dt {
        Datatype::Scalar(t) => decode_scalar(*t, b, order),
        Datatype::Ascii(n) => {
            let s = &b[..*n];
            let end = s.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
            Element::Bytes(s[..end].to_vec())
        }
        Datatype::Ucs4(n) => {
            let mut s = String::with_capacity(*n);
            let mut chars: Vec<u32> = (0..*n)
                .map(|i| {
                    let a = arr::<4>(&b[4 * i..]);
                    if order == ByteOrder::Big { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) }
                })
                .collect();
            while chars.last() == Some(&0) {
                chars.pop();
            }
            for c in chars {
                s.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            Element::Str(s)
        }
        Datatype::Record(fields) => {
            let mut at = 0;
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                let size = f.datatype.size();
                if f.shape.is_empty() {
                    out.push(decode_element(&f.datatype, &b[at..], f.byteorder));
                } else {
                    let n: usize = f.shape.iter().product();
                    let flat: Vec<Element> =
                        (0..n).map(|i| decode_element(&f.datatype, &b[at + i * size..], f.byteorder)).collect();
                    out.push(nest(flat, &f.shape));
                }
                at += f.size();
            }
            Element::Record(out)
        }
    }
}

/// Nests a flat list of elements by `shape` (C order).
pub fn nest(flat: Vec<Element>, shape: &[usize]) -> Element {
    if shape.len() <= 1 {
        return Element::List(flat);
    }
    let inner: usize = shape[1..].iter().product();
    if inner == 0 {
        return Element::List((0..shape[0]).map(|_| nest(Vec::new(), &shape[1..])).collect());
    }
    let mut out = Vec::with_capacity(shape[0]);
    let mut it = flat.into_iter();
    for _ in 0..shape[0] {
        let chunk: Vec<Element> = it.by_ref().take(inner).collect();
        out.push(nest(chunk, &shape[1..]));
    }
    Element::List(out)
}
