//! Python's `str()` and `repr()` of the objects the reference library makes of tree
//! nodes, for `info`, which shows values as the reference's `asdftool info` prints them
//! (`None`, `True`, `1e+16`, `inf`, `b'hi'`, `(1+2j)`, `2001-12-14 21:59:43.100000-05:00`),
//! and for the command line's `diff` and `search`, which show them the same way.

use std::borrow::Cow;
use std::fmt::Write as _;

use rasdf::AsdfFile;
use rasdf::tree::numtext::complex_repr;
pub use rasdf::tree::numtext::float_repr;
use rasdf::tree::resolve::{Timestamp, parse_timestamp};
use rasdf::tree::{NodeRef, Value};

use rasdf::tree::{OMAP_TAG, SET_TAG};

/// What the reference makes of a node, as far as its display goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A dict (or one of its subclasses: tagged dicts, `Software`, `OrderedDict`).
    Dict,
    /// A list (or a tagged list).
    List,
    /// An object shown by its `str()`, without children: scalars, and the core tags the
    /// reference turns into such objects (`complex`, `IntegerType`, external array
    /// references, sets).
    Leaf,
    /// A core/ndarray node (`NDArrayType`).
    Array,
}

/// The kind of `node`.
pub fn kind(node: NodeRef<'_>) -> Kind {
    if node.is_asdf_tag("core/ndarray") {
        return Kind::Array;
    }
    if is_leaf_object(node) {
        return Kind::Leaf;
    }
    match node.value() {
        Value::Map(_) => Kind::Dict,
        Value::Seq(_) => Kind::List,
        _ => Kind::Leaf,
    }
}

/// A mapping the reference makes an object without children of (`IntegerType`, an
/// external array reference, a set), shown by [`leaf_object_str`].
fn is_leaf_object(node: NodeRef<'_>) -> bool {
    node.is_asdf_tag("core/integer") || node.is_asdf_tag("core/externalarray") || node.tag() == Some(SET_TAG)
}

/// The name of the Python class the reference makes of `node` (for tags it has no class
/// for, which depend on the extensions installed, the tag itself).
pub fn type_name<'t>(node: NodeRef<'t>) -> &'t str {
    for (tag, name) in [
        ("core/asdf", "AsdfObject"),
        ("core/software", "Software"),
        ("core/history_entry", "HistoryEntry"),
        ("core/extension_metadata", "ExtensionMetadata"),
        ("core/ndarray", "NDArrayType"),
        ("core/complex", "complex"),
        ("core/integer", "IntegerType"),
        ("core/externalarray", "ExternalArrayReference"),
    ] {
        if node.is_asdf_tag(tag) {
            return name;
        }
    }
    match node.tag() {
        Some(OMAP_TAG) => return "OrderedDict",
        Some(SET_TAG) => return "set",
        Some(t) => return t,
        None => {}
    }
    match node.value() {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::BigInt(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::Binary(_) => "bytes",
        Value::Timestamp(t) => {
            if parse_timestamp(t).is_some_and(|t| t.time.is_none()) {
                "date"
            } else {
                "datetime"
            }
        }
        Value::Seq(_) => "list",
        Value::Map(_) => "dict",
    }
}

/// Python's `str()` of `node`, which `info` shows after a leaf's type (arrays are
/// described by the caller); a container's is its repr, cut at `max` bytes.
pub fn str_of<'t>(file: &AsdfFile, node: NodeRef<'t>, max: usize) -> Cow<'t, str> {
    match node.value() {
        Value::Str(s) if node.is_asdf_tag("core/complex") => {
            rasdf::ndarray::parse_complex(s).map_or_else(|| s.as_str().into(), |(re, im)| complex_repr(re, im).into())
        }
        Value::Str(s) => s.as_str().into(),
        Value::Timestamp(t) => parse_timestamp(t).map_or_else(|| t.as_str().into(), |t| datetime_str(&t).into()),
        Value::Map(_) | Value::Seq(_) => repr_of(file, node, max).into(),
        _ => scalar_repr(node.value()).into(),
    }
}

/// Python's `repr()` of `node`, as the reference shows a node it has shown before (a
/// container inside itself is `{...}` or `[...]`, as Python writes it).
///
/// Aliases are expanded, as in Python; a text that would pass `max` bytes (an alias
/// bomb's) ends there in `...`.
pub fn repr_of(file: &AsdfFile, node: NodeRef<'_>, max: usize) -> String {
    let mut out = String::new();
    let mut open = Vec::new();
    repr_into(file, node, &mut open, &mut out, max);
    if out.len() > max {
        let mut end = max;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push_str("...");
    }
    out
}

/// The longest repr `info` shows.
pub const REPR_MAX: usize = 1 << 20;

fn repr_into(file: &AsdfFile, node: NodeRef<'_>, open: &mut Vec<u32>, out: &mut String, max: usize) {
    if out.len() > max {
        return;
    }
    let id = node.id().0;
    let kind = kind(node);
    if matches!(kind, Kind::Dict | Kind::List) && open.contains(&id) {
        out.push_str(if kind == Kind::Dict { "{...}" } else { "[...]" });
        return;
    }
    if is_leaf_object(node) {
        out.push_str(&leaf_object_str(file, node, max).unwrap_or_else(|| "?".into()));
        return;
    }
    if kind == Kind::Array {
        out.push_str(&array_repr(file, node, max));
        return;
    }
    open.push(id);
    match node.value() {
        Value::Map(pairs) if node.tag() == Some(OMAP_TAG) => {
            // Python 3.11's `OrderedDict` repr: a list of pairs.
            if pairs.is_empty() {
                out.push_str("OrderedDict()");
            } else {
                out.push_str("OrderedDict([");
                for (i, &(k, v)) in pairs.iter().enumerate() {
                    out.push_str(if i == 0 { "(" } else { ", (" });
                    repr_into(file, node.tree().node(k), open, out, max);
                    out.push_str(", ");
                    repr_into(file, node.tree().node(v), open, out, max);
                    out.push(')');
                }
                out.push_str("])");
            }
        }
        Value::Map(pairs) => {
            out.push('{');
            for (i, &(k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(file, node.tree().node(k), open, out, max);
                out.push_str(": ");
                repr_into(file, node.tree().node(v), open, out, max);
            }
            out.push('}');
        }
        Value::Seq(items) => {
            out.push('[');
            for (i, &c) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(file, node.tree().node(c), open, out, max);
            }
            out.push(']');
        }
        Value::Str(_) if node.is_asdf_tag("core/complex") => out.push_str(&str_of(file, node, max)),
        Value::Str(s) => str_repr(s, out),
        Value::Timestamp(t) => match parse_timestamp(t) {
            Some(ts) => out.push_str(&datetime_repr(&ts)),
            None => str_repr(t, out),
        },
        other => out.push_str(&scalar_repr(other)),
    }
    open.pop();
}

/// `str()` of the objects the reference makes of some tagged mappings: `IntegerType(5)`,
/// an external array reference, a set (each part cut at `max` bytes). `None` when the
/// node is not such a one, or is malformed.
fn leaf_object_str(file: &AsdfFile, node: NodeRef<'_>, max: usize) -> Option<String> {
    if node.is_asdf_tag("core/integer") {
        return file.integer_at(node).ok().map(|v| format!("IntegerType({v})"));
    }
    if node.is_asdf_tag("core/externalarray") {
        let field = |k: &str| node.key(k);
        let shape = match field("shape")?.value() {
            Value::Seq(items) => {
                let parts: Vec<String> = items.iter().map(|&c| repr_of(file, node.tree().node(c), max)).collect();
                if parts.len() == 1 { format!("({},)", parts[0]) } else { format!("({})", parts.join(", ")) }
            }
            _ => return None,
        };
        return Some(format!(
            "<External array reference in {} at {} shape: {shape} dtype: {}>",
            str_of(file, field("fileuri")?, max),
            str_of(file, field("target")?, max),
            str_of(file, field("datatype")?, max)
        ));
    }
    if node.tag() == Some(SET_TAG) {
        let Value::Map(pairs) = node.value() else { return None };
        if pairs.is_empty() {
            return Some("set()".into());
        }
        let keys: Vec<String> = pairs.iter().map(|&(k, _)| repr_of(file, node.tree().node(k), max)).collect();
        return Some(format!("{{{}}}", keys.join(", ")));
    }
    None
}

/// `<array (unloaded) shape: [64, 64] dtype: float32>`, as the reference's `NDArrayType`
/// shows itself before its data is read.
fn array_repr(file: &AsdfFile, node: NodeRef<'_>, max: usize) -> String {
    let shape = node.key("shape").map_or_else(|| "None".into(), |s| repr_of(file, s, max));
    let dtype =
        node.key("datatype").map_or_else(|| "None".into(), |d| str_of(file, d, max).replace(['[', ']', '\''], ""));
    let masked = if node.key("mask").is_some() { "masked array" } else { "array" };
    format!("<{masked} (unloaded) shape: {shape} dtype: {dtype}>")
}

/// `repr()` of a scalar value (and `str()`, which is the same for these).
fn scalar_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::Binary(b) => bytes_repr(b),
        Value::Str(s) | Value::Timestamp(s) => {
            let mut out = String::new();
            str_repr(s, &mut out);
            out
        }
        Value::Seq(_) => "[]".into(),
        Value::Map(_) => "{}".into(),
    }
}

/// Python's `str()` of the `datetime` or `date` PyYAML makes of a timestamp.
pub(crate) fn datetime_str(t: &Timestamp) -> String {
    t.isoformat().replacen('T', " ", 1)
}

/// Python's `repr()` of the same: `datetime.datetime(2001, 12, 14, 21, 59, 43, 100000,
/// tzinfo=datetime.timezone(datetime.timedelta(days=-1, seconds=68400)))`.
fn datetime_repr(t: &Timestamp) -> String {
    let (y, mo, d) = t.date;
    let Some((h, mi, s, us)) = t.time else {
        return format!("datetime.date({y}, {mo}, {d})");
    };
    let mut out = format!("datetime.datetime({y}, {mo}, {d}, {h}, {mi}");
    if s != 0 || us != 0 {
        let _ = write!(out, ", {s}");
    }
    if us != 0 {
        let _ = write!(out, ", {us}");
    }
    match t.offset_minutes {
        None => {}
        Some(0) => out.push_str(", tzinfo=datetime.timezone.utc"),
        Some(m) => {
            // A timedelta keeps seconds in [0, 86400) and the sign in its days.
            let secs = i64::from(m) * 60;
            let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let delta = match (days, rest) {
                (0, r) => format!("seconds={r}"),
                (d, 0) => format!("days={d}"),
                (d, r) => format!("days={d}, seconds={r}"),
            };
            let _ = write!(out, ", tzinfo=datetime.timezone(datetime.timedelta({delta}))");
        }
    }
    out.push(')');
    out
}

/// Python's `repr()` of a `str`, appended to `out`: single quotes unless the text holds
/// one and no double quote; backslash escapes for the characters Python does not print.
pub fn str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = u32::from(c);
                let _ = if n < 0x100 {
                    write!(out, "\\x{n:02x}")
                } else if n < 0x10000 {
                    write!(out, "\\u{n:04x}")
                } else {
                    write!(out, "\\U{n:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Whether Python's `str.isprintable` holds for `c`: all but control and format
/// characters, separators other than the space, surrogates, private use and
/// noncharacters. (Unassigned code points, which Python also escapes, are not known
/// here and are printed.)
fn printable(c: char) -> bool {
    let n = u32::from(c);
    !(n < 0x20
        || (0x7f..=0xa0).contains(&n)
        || n == 0xad
        || n == 0x1680
        || (0x2000..=0x200f).contains(&n)
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x2064).contains(&n)
        || n == 0x3000
        || (0xe000..=0xf8ff).contains(&n)
        || n == 0xfeff
        || (0xfff9..=0xfffb).contains(&n)
        || (n & 0xfffe) == 0xfffe
        || n >= 0xf0000)
}

/// Python's `repr()` of `bytes`: `b'hi\x00'`.
fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') { b'"' } else { b'\'' };
    let mut out = String::with_capacity(b.len() + 3);
    out.push('b');
    out.push(char::from(quote));
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(char::from(c));
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(char::from(quote));
    out
}

/// Whether `s` is more than one line to Python's `str.splitlines` (a line break that is
/// not the text's last character, `\r\n` counting as one).
pub(crate) fn is_multiline(s: &str) -> bool {
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let brk = matches!(
            c,
            '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        );
        if brk {
            let mut end = i + c.len_utf8();
            if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
                end += 1;
                chars.next();
            }
            return end < s.len();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        let mut s = String::new();
        str_repr("it's", &mut s);
        str_repr("a'b\"c\\\n\u{7f}é\u{2028}", &mut s);
        assert_eq!(s, "\"it's\"'a\\'b\"c\\\\\\n\\x7fé\\u2028'");
        assert_eq!(bytes_repr(b"hi\x00'"), "b\"hi\\x00'\"");
        for (x, want) in
            [(1.0, "1.0"), (1e16, "1e+16"), (1.5e-7, "1.5e-07"), (-0.0, "-0.0"), (f64::NEG_INFINITY, "-inf")]
        {
            assert_eq!(float_repr(x), want);
        }
        assert_eq!(float_repr(f64::NAN), "nan");
        assert!(is_multiline("a\nb") && is_multiline("a\u{2028}b") && is_multiline("\r\n\n"));
        assert!(!is_multiline("a\n") && !is_multiline("a\r\n") && !is_multiline("ab"));
    }

    #[test]
    fn datetimes() {
        let t = parse_timestamp("2001-12-14t21:59:43.10-05:00").unwrap();
        assert_eq!(datetime_str(&t), "2001-12-14 21:59:43.100000-05:00");
        assert_eq!(
            datetime_repr(&t),
            "datetime.datetime(2001, 12, 14, 21, 59, 43, 100000, \
             tzinfo=datetime.timezone(datetime.timedelta(days=-1, seconds=68400)))"
        );
        let t = parse_timestamp("2002-12-14").unwrap();
        assert_eq!((datetime_str(&t), datetime_repr(&t)), ("2002-12-14".into(), "datetime.date(2002, 12, 14)".into()));
        let t = parse_timestamp("2001-12-15T02:59:00Z").unwrap();
        assert_eq!(datetime_repr(&t), "datetime.datetime(2001, 12, 15, 2, 59, tzinfo=datetime.timezone.utc)");
    }
}
