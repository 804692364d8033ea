//! `rasdf diff A B`: the structural differences of two ASDF files (keys, tags, values,
//! arrays' shapes, datatypes and elements), one line each with its tree path.
//!
//! What is compared is what a reader of the files sees, not how they are stored: block
//! compression, block order, byte order, offsets and strides, and whether an array is
//! inline or in a block are not differences. The verdicts follow `asdftool diff` (scalars
//! compare as Python's `==`: `1 == 1.0 == True`), except where it is wrong: NaN equals
//! NaN, lists of different lengths differ (asdftool compares the common part only), and
//! tags are compared (a core/ndarray's tag version is layout, not compared).

use std::collections::HashSet;
use std::io::Write;

use rasdf::AsdfFile;
use rasdf::ndarray::datatype::decode_element;
use rasdf::ndarray::{Datatype, Element, NdArray};
use rasdf::tree::{NodeId, NodeRef, Value, escape_step, unescape_step};

use rasdf_info::pyrepr::{self, Kind};

/// How values are compared.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Relative tolerance for floats: `|a - b| <= atol + rtol * |b|` (NumPy's `isclose`).
    pub rtol: f64,
    /// Absolute tolerance for floats.
    pub atol: f64,
    /// Tree paths not compared (with what lies below them): `/meta/date`, `*` for any
    /// one step (`/list/*/date`), or asdftool's JMESPath subset (`meta.date`,
    /// `list[*].date`, `[asdf_library,history]`).
    pub ignore: Vec<String>,
}

/// One difference.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The tree path (`/meta/date`; the root is ``).
    pub path: String,
    /// What differs.
    pub change: Change,
}

/// What differs at a path: in each variant `a` is file A's side and `b` file B's.
/// Values are shown as Python's `repr()` of them.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Change {
    /// The path is in A only.
    OnlyInA,
    /// The path is in B only.
    OnlyInB,
    /// Two values (or a value and a container) differ.
    Value { a: String, b: String },
    /// The tags differ (`None`: no tag).
    Tag { a: Option<String>, b: Option<String> },
    /// Two sequences have different lengths (the items past the shorter one's end are
    /// reported as only in one file).
    Length { a: usize, b: usize },
    /// Two arrays have different shapes (their elements are then not compared).
    Shape { a: Vec<usize>, b: Vec<usize> },
    /// Two arrays have different datatypes (their elements are still compared by value).
    Datatype { a: String, b: String },
    /// Elements of two arrays differ: how many, of how many, the first one's index and
    /// values, and the largest absolute difference of numbers.
    Elements { count: u64, total: u64, first: Vec<usize>, a: String, b: String, max_abs: Option<f64> },
    /// The arrays' masks differ at `count` of `total` elements.
    Mask { count: u64, total: u64 },
}

impl Change {
    /// The stable name of the kind of change (`--json`'s `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Change::OnlyInA => "only_in_a",
            Change::OnlyInB => "only_in_b",
            Change::Value { .. } => "value",
            Change::Tag { .. } => "tag",
            Change::Length { .. } => "length",
            Change::Shape { .. } => "shape",
            Change::Datatype { .. } => "datatype",
            Change::Elements { .. } => "elements",
            Change::Mask { .. } => "mask",
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        let tag = |t: &Option<String>| t.clone().unwrap_or_else(|| "(no tag)".into());
        match &self.change {
            Change::OnlyInA => write!(f, "{path}: only in A"),
            Change::OnlyInB => write!(f, "{path}: only in B"),
            Change::Value { a, b } => write!(f, "{path}: {a} != {b}"),
            Change::Tag { a, b } => write!(f, "{path}: tag {} != {}", tag(a), tag(b)),
            Change::Length { a, b } => write!(f, "{path}: length {a} != {b}"),
            Change::Shape { a, b } => write!(f, "{path}: shape {} != {}", shape(a), shape(b)),
            Change::Datatype { a, b } => write!(f, "{path}: datatype {a} != {b}"),
            Change::Elements { count, total, first, a, b, max_abs } => {
                write!(f, "{path}: {count} of {total} elements differ (first at {}: {a} != {b}", index(first))?;
                match max_abs {
                    Some(m) => write!(f, "; largest |A - B| {})", pyrepr::float_repr(*m)),
                    None => write!(f, ")"),
                }
            }
            Change::Mask { count, total } => write!(f, "{path}: mask differs at {count} of {total} elements"),
        }
    }
}

/// A shape as Python writes a tuple: `()`, `(3,)`, `(2, 3)`.
fn shape(s: &[usize]) -> String {
    match s {
        [n] => format!("({n},)"),
        _ => format!("({})", s.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

fn index(i: &[usize]) -> String {
    format!("[{}]", i.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
}

/// The differences between `a` and `b`, in A's order (then what B alone has).
///
/// # Errors
/// An array of either file that cannot be read (its block damaged, a limit).
pub fn diff(a: &AsdfFile, b: &AsdfFile, options: &DiffOptions) -> rasdf::Result<Vec<Difference>> {
    let mut d = Differ {
        a,
        b,
        options,
        ignore: options.ignore.iter().flat_map(|p| ignore_patterns(p)).collect(),
        seen: HashSet::new(),
        out: Vec::new(),
    };
    match (a.tree().root(), b.tree().root()) {
        (Some(ra), Some(rb)) => d.node(ra, rb, &mut Vec::new())?,
        (None, None) => {}
        (Some(_), None) => d.push(&[], Change::OnlyInA),
        (None, Some(_)) => d.push(&[], Change::OnlyInB),
    }
    a.check_unchanged()?;
    b.check_unchanged()?;
    Ok(d.out)
}

struct Differ<'a> {
    a: &'a AsdfFile,
    b: &'a AsdfFile,
    options: &'a DiffOptions,
    ignore: Vec<Vec<String>>,
    /// Pairs of containers compared already (aliases, and trees that contain
    /// themselves).
    seen: HashSet<(NodeId, NodeId)>,
    out: Vec<Difference>,
}

/// Keys of an ndarray that say how it is stored, not what it holds.
const ARRAY_LAYOUT: [&str; 8] = ["source", "data", "shape", "datatype", "byteorder", "offset", "strides", "mask"];

impl Differ<'_> {
    fn push(&mut self, path: &[String], change: Change) {
        self.out.push(Difference { path: path_text(path), change });
    }

    fn ignored(&self, path: &[String]) -> bool {
        self.ignore.iter().any(|p| p.len() == path.len() && p.iter().zip(path).all(|(p, s)| p == "*" || p == s))
    }

    fn node(&mut self, na: NodeRef<'_>, nb: NodeRef<'_>, path: &mut Vec<String>) -> rasdf::Result<()> {
        if self.ignored(path) {
            return Ok(());
        }
        let (ka, kb) = (pyrepr::kind(na), pyrepr::kind(nb));
        if ka == Kind::Array && kb == Kind::Array {
            let name = |n: NodeRef<'_>| n.tag_name_version().map(|(name, _)| name.to_owned());
            if name(na) != name(nb) {
                self.push(path, Change::Tag { a: na.tag().map(str::to_owned), b: nb.tag().map(str::to_owned) });
            }
            return self.arrays(na, nb, path);
        }
        if na.tag() != nb.tag() {
            self.push(path, Change::Tag { a: na.tag().map(str::to_owned), b: nb.tag().map(str::to_owned) });
        }
        match (na.value(), nb.value()) {
            (Value::Map(_), Value::Map(_)) if ka != Kind::Array && kb != Kind::Array => {
                if self.seen.insert((na.id(), nb.id())) {
                    self.maps(na, nb, path, &[])?;
                }
            }
            (Value::Seq(xa), Value::Seq(xb)) => {
                if !self.seen.insert((na.id(), nb.id())) {
                    return Ok(());
                }
                if xa.len() != xb.len() {
                    self.push(path, Change::Length { a: xa.len(), b: xb.len() });
                }
                for i in 0..xa.len().max(xb.len()) {
                    path.push(i.to_string());
                    match (xa.get(i), xb.get(i)) {
                        (Some(&ia), Some(&ib)) => self.node(na.tree().node(ia), nb.tree().node(ib), path)?,
                        (Some(_), None) if !self.ignored(path) => self.push(path, Change::OnlyInA),
                        (None, Some(_)) if !self.ignored(path) => self.push(path, Change::OnlyInB),
                        _ => {}
                    }
                    path.pop();
                }
            }
            (va, vb) => {
                if !self.scalars_equal(na, va, nb, vb) {
                    let a = self.describe(self.a, na);
                    let b = self.describe(self.b, nb);
                    self.push(path, Change::Value { a, b });
                }
            }
        }
        Ok(())
    }

    /// A value as the difference shows it: Python's repr, an array by its shape and type.
    fn describe(&self, file: &AsdfFile, node: NodeRef<'_>) -> String {
        if pyrepr::kind(node) == Kind::Array {
            return match file.array_at(node).meta() {
                Ok((dt, _, s)) => format!("<ndarray {dt} {}>", shape(&s)),
                Err(_) => "<ndarray>".into(),
            };
        }
        pyrepr::repr_of(file, node, 200)
    }

    /// Compares two mappings key by key (keys equal by their Python repr: `1` and `'1'`
    /// are different keys), leaving out `skip`.
    fn maps(&mut self, na: NodeRef<'_>, nb: NodeRef<'_>, path: &mut Vec<String>, skip: &[&str]) -> rasdf::Result<()> {
        let keyed = |file: &AsdfFile, n: NodeRef<'_>| -> Vec<(String, String, NodeId)> {
            n.pairs()
                .into_iter()
                .flatten()
                .filter(|(k, _)| !k.as_str().is_some_and(|s| skip.contains(&s)))
                .map(|(k, v)| (pyrepr::repr_of(file, k, 1 << 16), k.key_text(), v.id()))
                .collect()
        };
        let (pa, pb) = (keyed(self.a, na), keyed(self.b, nb));
        let in_b: std::collections::HashMap<&str, NodeId> = pb.iter().map(|(r, _, v)| (r.as_str(), *v)).collect();
        let in_a: HashSet<&str> = pa.iter().map(|(r, _, _)| r.as_str()).collect();
        for (repr, text, va) in &pa {
            path.push(text.clone());
            match in_b.get(repr.as_str()) {
                Some(&vb) => self.node(na.tree().node(*va), nb.tree().node(vb), path)?,
                None if !self.ignored(path) => self.push(path, Change::OnlyInA),
                None => {}
            }
            path.pop();
        }
        for (repr, text, _) in &pb {
            if !in_a.contains(repr.as_str()) {
                path.push(text.clone());
                if !self.ignored(path) {
                    self.push(path, Change::OnlyInB);
                }
                path.pop();
            }
        }
        Ok(())
    }

    fn scalars_equal(&self, na: NodeRef<'_>, va: &Value, nb: NodeRef<'_>, vb: &Value) -> bool {
        use Value as V;
        let number = |v: &Value| -> Option<Num> {
            match v {
                V::Bool(b) => Some(Num::Int(i128::from(*b))),
                V::Int(i) => Some(Num::Int(i128::from(*i))),
                V::BigInt(i) => i128::try_from(&**i).ok().map(Num::Int),
                V::Float(f) => Some(Num::Float(*f)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (number(va), number(vb)) {
            return self.numbers_equal(x, y);
        }
        match (va, vb) {
            (V::Null, V::Null) => true,
            (V::BigInt(x), V::BigInt(y)) => x == y,
            (V::Str(x), V::Str(y)) if na.is_asdf_tag("core/complex") && nb.is_asdf_tag("core/complex") => {
                match (rasdf::ndarray::parse_complex(x), rasdf::ndarray::parse_complex(y)) {
                    (Some((xr, xi)), Some((yr, yi))) => self.floats_equal(xr, yr) && self.floats_equal(xi, yi),
                    _ => x == y,
                }
            }
            (V::Str(x), V::Str(y)) | (V::Timestamp(x), V::Timestamp(y)) => x == y,
            (V::Binary(x), V::Binary(y)) => x == y,
            _ => false,
        }
    }

    fn numbers_equal(&self, x: Num, y: Num) -> bool {
        match (x, y) {
            (Num::Int(x), Num::Int(y)) => x == y,
            #[allow(clippy::cast_precision_loss)]
            (Num::Int(i), Num::Float(f)) | (Num::Float(f), Num::Int(i)) => {
                // Python compares an int and a float exactly: only a float that is a
                // whole number in range equals an integer (9007199254740993 is not
                // 9007199254740992.0, which it rounds to). With tolerances, as floats.
                // (2^127 is past every i128: the cast would saturate.)
                #[allow(clippy::cast_possible_truncation)]
                let exact = f.fract() == 0.0 && f.abs() < 2f64.powi(127) && f as i128 == i;
                exact || (self.tolerant() && self.floats_equal(i as f64, f))
            }
            (Num::Float(x), Num::Float(y)) => self.floats_equal(x, y),
        }
    }

    /// Whether numbers are compared with a tolerance.
    fn tolerant(&self) -> bool {
        self.options.rtol != 0.0 || self.options.atol != 0.0
    }

    /// NumPy's `isclose(a, b, rtol, atol, equal_nan=True)` (exact equality when both
    /// tolerances are 0).
    fn floats_equal(&self, a: f64, b: f64) -> bool {
        if a == b || (a.is_nan() && b.is_nan()) {
            return true;
        }
        if a.is_infinite() || b.is_infinite() || a.is_nan() || b.is_nan() {
            return false;
        }
        (a - b).abs() <= self.options.atol + self.options.rtol * b.abs()
    }

    fn elements_equal(&self, a: &Element, b: &Element) -> bool {
        use Element as E;
        let int = |e: &Element| match *e {
            E::Bool(b) => Some(i128::from(b)),
            E::Int(i) => Some(i128::from(i)),
            E::UInt(u) => Some(i128::from(u)),
            _ => None,
        };
        if let (Some(x), Some(y)) = (int(a), int(b)) {
            return x == y;
        }
        let complex = |e: &Element| match *e {
            E::Complex(re, im) => Some((re, im)),
            _ => e.as_f64().map(|x| (x, 0.0)),
        };
        match (a, b) {
            (E::Bytes(x), E::Bytes(y)) => x == y,
            (E::Str(x), E::Str(y)) => x == y,
            (E::Record(x), E::Record(y)) | (E::List(x), E::List(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| self.elements_equal(x, y))
            }
            _ => match (complex(a), complex(b)) {
                (Some((ar, ai)), Some((br, bi))) => self.floats_equal(ar, br) && self.floats_equal(ai, bi),
                _ => false,
            },
        }
    }

    fn arrays(&mut self, na: NodeRef<'_>, nb: NodeRef<'_>, path: &mut Vec<String>) -> rasdf::Result<()> {
        // What the node says besides its layout (a `bizbaz` key, say) is tree.
        if matches!((na.value(), nb.value()), (Value::Map(_), Value::Map(_))) && self.seen.insert((na.id(), nb.id())) {
            self.maps(na, nb, path, &ARRAY_LAYOUT)?;
        }
        let (ha, hb) = (self.a.array_at(na), self.b.array_at(nb));
        let (xa, xb) = (ha.read_dyn()?, hb.read_dyn()?);
        if xa.shape != xb.shape {
            self.push(path, Change::Shape { a: xa.shape.clone(), b: xb.shape.clone() });
        }
        // Datatypes as written without byte orders (a record's fields have their own).
        let (da, db) = (xa.datatype.to_string(), xb.datatype.to_string());
        if da != db {
            self.push(path, Change::Datatype { a: da, b: db });
        }
        if xa.shape != xb.shape {
            return Ok(());
        }
        let (ma, mb) = (ha.mask(&xa)?, hb.mask(&xb)?);
        let total = xa.len() as u64;
        let masked = |m: &Option<Vec<bool>>, i: usize| m.as_ref().is_some_and(|m| m.get(i).copied().unwrap_or(false));
        let mut mask_count = 0u64;
        let mut count = 0u64;
        let mut first: Option<(usize, Element, Element)> = None;
        let mut max_abs: Option<f64> = None;
        let numeric = numeric(&xa.datatype) && numeric(&xb.datatype);
        let comparable = numeric || kinds_match(&xa.datatype, &xb.datatype);
        for (i, (oa, ob)) in xa.byte_offsets().zip(xb.byte_offsets()).enumerate() {
            let (m1, m2) = (masked(&ma, i), masked(&mb, i));
            if m1 != m2 {
                mask_count += 1;
            }
            if m1 || m2 {
                continue;
            }
            let ea = element(&xa, oa);
            let eb = element(&xb, ob);
            if comparable && self.elements_equal(&ea, &eb) {
                continue;
            }
            count += 1;
            if numeric && let (Some(x), Some(y)) = (ea.as_f64(), eb.as_f64()) {
                let d = (x - y).abs();
                if !d.is_nan() {
                    max_abs = Some(max_abs.map_or(d, |m: f64| m.max(d)));
                }
            }
            if first.is_none() {
                first = Some((i, ea, eb));
            }
        }
        if mask_count > 0 {
            self.push(path, Change::Mask { count: mask_count, total });
        }
        if let Some((i, ea, eb)) = first {
            let first = unravel(i, &xa.shape);
            self.push(
                path,
                Change::Elements { count, total, first, a: element_repr(&ea), b: element_repr(&eb), max_abs },
            );
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn element(a: &NdArray<'_>, at: usize) -> Element {
    decode_element(&a.datatype, &a.data()[at..], a.byteorder)
}

fn numeric(d: &Datatype) -> bool {
    matches!(d, Datatype::Scalar(_))
}

/// Whether elements of `a` and `b` can be equal: both text, or records of as many fields.
fn kinds_match(a: &Datatype, b: &Datatype) -> bool {
    match (a, b) {
        (Datatype::Ascii(_), Datatype::Ascii(_)) | (Datatype::Ucs4(_), Datatype::Ucs4(_)) => true,
        (Datatype::Record(x), Datatype::Record(y)) => x.len() == y.len(),
        _ => false,
    }
}

/// The index in `shape` of the `i`-th element in C order.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for (k, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            out[k] = i % n;
            i /= n;
        }
    }
    out
}

/// An element as Python shows a NumPy scalar's value.
fn element_repr(e: &Element) -> String {
    match e {
        Element::Bool(b) => (if *b { "True" } else { "False" }).into(),
        Element::Int(i) => i.to_string(),
        Element::UInt(u) => u.to_string(),
        Element::Float(f) => pyrepr::float_repr(*f),
        Element::Complex(re, im) => rasdf::tree::numtext::complex_repr(*re, *im),
        Element::Bytes(b) => format!("b{:?}", String::from_utf8_lossy(b)),
        Element::Str(s) => {
            let mut out = String::new();
            pyrepr::str_repr(s, &mut out);
            out
        }
        Element::Record(x) => format!("({})", x.iter().map(element_repr).collect::<Vec<_>>().join(", ")),
        Element::List(x) => format!("[{}]", x.iter().map(element_repr).collect::<Vec<_>>().join(", ")),
    }
}

fn path_text(path: &[String]) -> String {
    path.iter().map(|s| format!("/{}", escape_step(s))).collect()
}

/// The paths an `--ignore` pattern names, as steps (`*`: any one step).
fn ignore_patterns(pattern: &str) -> Vec<Vec<String>> {
    let p = pattern.trim();
    if p.starts_with('/') || p.contains('/') || p.is_empty() {
        return vec![p.split('/').filter(|s| !s.is_empty()).map(|s| unescape_step(s).into_owned()).collect()];
    }
    // asdftool's JMESPath: `[a,b]` (several), `a.b`, `a[*].b`, `a[0]`.
    if let Some(inner) = p.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
        && !inner.is_empty()
        && inner != "*"
        && inner.parse::<usize>().is_err()
    {
        return split_top(inner).into_iter().flat_map(ignore_patterns).collect();
    }
    let mut steps = Vec::new();
    for part in p.split('.') {
        let mut rest = part;
        let name_end = rest.find('[').unwrap_or(rest.len());
        let name = &rest[..name_end];
        if !name.is_empty() {
            steps.push(name.trim_matches('"').to_owned());
        }
        rest = &rest[name_end..];
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            steps.push(r[..end].to_owned());
            rest = r.get(end + 1..).unwrap_or("");
        }
    }
    vec![steps]
}

/// `inner` split at its commas outside brackets.
fn split_top(inner: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].trim());
    out
}

/// Writes the differences, one a line (or as JSON: `{"equal": bool, "differences":
/// [{"path", "kind", ...}]}`, the fields of each [`Change`] by their names).
///
/// # Errors
/// Writing to `out`.
pub fn report(differences: &[Difference], json: bool, out: &mut impl Write) -> std::io::Result<()> {
    if !json {
        for d in differences {
            writeln!(out, "{d}")?;
        }
        return Ok(());
    }
    let items: Vec<serde_json::Value> = differences.iter().map(difference_json).collect();
    let doc = serde_json::json!({ "equal": differences.is_empty(), "differences": items });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

fn difference_json(d: &Difference) -> serde_json::Value {
    use serde_json::json;
    let mut v = json!({ "path": d.path, "kind": d.change.kind() });
    let extra = match &d.change {
        Change::OnlyInA | Change::OnlyInB => json!({}),
        Change::Value { a, b } | Change::Datatype { a, b } => json!({ "a": a, "b": b }),
        Change::Tag { a, b } => json!({ "a": a, "b": b }),
        Change::Length { a, b } => json!({ "a": a, "b": b }),
        Change::Shape { a, b } => json!({ "a": a, "b": b }),
        Change::Elements { count, total, first, a, b, max_abs } => json!({
            "count": count, "total": total, "first_index": first, "a": a, "b": b,
            "max_abs_diff": max_abs.filter(|m| m.is_finite()),
        }),
        Change::Mask { count, total } => json!({ "count": count, "total": total }),
    };
    if let (Some(v), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_patterns_read_pointer_and_jmespath() {
        assert_eq!(ignore_patterns("/a/b~1c"), vec![vec!["a".to_string(), "b/c".into()]]);
        assert_eq!(ignore_patterns("a.b[*].c"), vec![vec!["a".to_string(), "b".into(), "*".into(), "c".into()]]);
        assert_eq!(
            ignore_patterns("[asdf_library,history]"),
            vec![vec!["asdf_library".to_string()], vec!["history".to_string()]]
        );
        assert_eq!(ignore_patterns("list[0]"), vec![vec!["list".to_string(), "0".into()]]);
    }

    #[test]
    fn unravel_is_c_order() {
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
    }
}
