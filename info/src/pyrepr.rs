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
    let mut r = Repr { file, open: Vec::new(), out: String::new(), max };
    r.repr(node);
    let mut out = r.out;
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

/// One repr being written: the nodes being shown (whatever their kind: a node inside
/// itself, even through an external array's shape, is shown once) and one budget for
/// the whole text, so that neither a cycle nor an alias bomb makes it run long.
struct Repr<'f> {
    file: &'f AsdfFile,
    open: Vec<u32>,
    out: String,
    max: usize,
}

impl Repr<'_> {
    fn repr(&mut self, node: NodeRef<'_>) {
        if self.out.len() > self.max {
            return;
        }
        let id = node.id().0;
        let kind = kind(node);
        if matches!(kind, Kind::Dict | Kind::List | Kind::Array) || is_leaf_object(node) {
            if self.open.contains(&id) {
                self.out.push_str(match kind {
                    Kind::Dict => "{...}",
                    Kind::List => "[...]",
                    _ => "...",
                });
                return;
            }
            self.open.push(id);
            self.children(node, kind);
            self.open.pop();
        } else {
            self.children(node, kind);
        }
    }

    fn children(&mut self, node: NodeRef<'_>, kind: Kind) {
        let tree = node.tree();
        if is_leaf_object(node) {
            if !self.leaf_object(node) {
                self.out.push('?');
            }
            return;
        }
        if kind == Kind::Array {
            self.array(node);
            return;
        }
        match node.value() {
            Value::Map(pairs) if node.tag() == Some(OMAP_TAG) => {
                // Python 3.11's `OrderedDict` repr: a list of pairs.
                if pairs.is_empty() {
                    self.out.push_str("OrderedDict()");
                } else {
                    self.out.push_str("OrderedDict([");
                    for (i, &(k, v)) in pairs.iter().enumerate() {
                        self.out.push_str(if i == 0 { "(" } else { ", (" });
                        self.repr(tree.node(k));
                        self.out.push_str(", ");
                        self.repr(tree.node(v));
                        self.out.push(')');
                    }
                    self.out.push_str("])");
                }
            }
            Value::Map(pairs) => {
                self.out.push('{');
                for (i, &(k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.repr(tree.node(k));
                    self.out.push_str(": ");
                    self.repr(tree.node(v));
                }
                self.out.push('}');
            }
            Value::Seq(items) => {
                self.out.push('[');
                for (i, &c) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.repr(tree.node(c));
                }
                self.out.push(']');
            }
            Value::Str(_) if node.is_asdf_tag("core/complex") => {
                let text = str_of(self.file, node, self.max);
                self.out.push_str(&text);
            }
            Value::Str(s) => str_repr(s, &mut self.out),
            Value::Timestamp(t) => match parse_timestamp(t) {
                Some(ts) => self.out.push_str(&datetime_repr(&ts)),
                None => str_repr(t, &mut self.out),
            },
            other => self.out.push_str(&scalar_repr(other)),
        }
    }

    /// `str()` of `node` into the text: a container's repr (in this repr's cycle and
    /// budget), a scalar's as [`str_of`] writes it.
    fn str(&mut self, node: NodeRef<'_>) {
        match node.value() {
            Value::Map(_) | Value::Seq(_) => self.repr(node),
            _ => {
                let text = str_of(self.file, node, self.max);
                self.out.push_str(&text);
            }
        }
    }

    /// `str()` of the objects the reference makes of some tagged mappings:
    /// `IntegerType(5)`, an external array reference, a set. `false` (nothing written)
    /// when the node is malformed.
    fn leaf_object(&mut self, node: NodeRef<'_>) -> bool {
        let tree = node.tree();
        if node.is_asdf_tag("core/integer") {
            return match self.file.integer_at(node) {
                Ok(v) => {
                    let _ = write!(self.out, "IntegerType({v})");
                    true
                }
                Err(_) => false,
            };
        }
        if node.is_asdf_tag("core/externalarray") {
            let (Some(shape), Some(uri), Some(target), Some(datatype)) =
                (node.key("shape"), node.key("fileuri"), node.key("target"), node.key("datatype"))
            else {
                return false;
            };
            let Value::Seq(items) = shape.value() else { return false };
            self.out.push_str("<External array reference in ");
            self.str(uri);
            self.out.push_str(" at ");
            self.str(target);
            self.out.push_str(" shape: (");
            for (i, &c) in items.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.repr(tree.node(c));
            }
            self.out.push_str(if items.len() == 1 { ",)" } else { ")" });
            self.out.push_str(" dtype: ");
            self.str(datatype);
            self.out.push('>');
            return true;
        }
        if node.tag() == Some(SET_TAG) {
            let Value::Map(pairs) = node.value() else { return false };
            if pairs.is_empty() {
                self.out.push_str("set()");
                return true;
            }
            self.out.push('{');
            for (i, &(k, _)) in pairs.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.repr(tree.node(k));
            }
            self.out.push('}');
            return true;
        }
        false
    }

    /// `<array (unloaded) shape: [64, 64] dtype: float32>`, as the reference's
    /// `NDArrayType` shows itself before its data is read.
    fn array(&mut self, node: NodeRef<'_>) {
        let masked = if node.key("mask").is_some() { "masked array" } else { "array" };
        let _ = write!(self.out, "<{masked} (unloaded) shape: ");
        match node.key("shape") {
            Some(shape) => self.repr(shape),
            None => self.out.push_str("None"),
        }
        self.out.push_str(" dtype: ");
        match node.key("datatype") {
            Some(d) => {
                let start = self.out.len();
                self.str(d);
                let shown = self.out[start..].replace(['[', ']', '\''], "");
                self.out.truncate(start);
                self.out.push_str(&shown);
            }
            None => self.out.push_str("None"),
        }
        self.out.push('>');
    }
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
