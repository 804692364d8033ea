//! YAML 1.1 that PyYAML reads back to the same values: the tree emitter.
//!
//! Strings that PyYAML would resolve to something else (`yes`, `null`, `1:30`, `0x1F`,
//! `2020-01-01`, `=`...) are quoted; floats are written as Python's `repr` fixed up the
//! way PyYAML does (`1.0e+20`, never `1e20`, which PyYAML reads as a string); nodes
//! reached more than once get anchors (`&id001`) and aliases.

use std::collections::HashMap;
use std::fmt::Write;

use super::resolve::{self, Resolved};
use super::{ASDF_TAG_PREFIX, NodeId, Tree, Value, YAML_TAG_PREFIX};

/// The tag of an ordered map (`!!omap`).
const OMAP: &str = "tag:yaml.org,2002:omap";

/// A float as PyYAML writes it: Python's shortest `repr`, with `.0` before a bare
/// exponent, and `.nan`, `.inf`, `-.inf`.
pub fn format_float(x: f64) -> String {
    let mut out = String::with_capacity(24);
    push_float(&mut out, x);
    out
}

/// [`format_float`] appended to `out`, without allocating on its own.
pub fn push_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str(".nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { ".inf" } else { "-.inf" });
        return;
    }
    // The shortest digits that read back to `x`, as Python's repr gives them; only the
    // layout differs.
    let mut digits = [0u8; 17];
    let (n_digits, exp) = shortest_digits(x.abs(), &mut digits);
    let digits = std::str::from_utf8(&digits[..n_digits]).unwrap_or("0");
    let (lead, frac) = digits.split_at(1);
    if x.is_sign_negative() {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let e = usize::try_from(exp).unwrap_or(0);
            if n_digits > e + 1 {
                out.push_str(lead);
                out.push_str(&frac[..e]);
                out.push('.');
                out.push_str(&frac[e..]);
            } else {
                out.push_str(lead);
                out.push_str(frac);
                (0..e + 1 - n_digits).for_each(|_| out.push('0'));
                out.push_str(".0");
            }
        } else {
            out.push_str("0.");
            (0..usize::try_from(-exp - 1).unwrap_or(0)).for_each(|_| out.push('0'));
            out.push_str(lead);
            out.push_str(frac);
        }
    } else {
        out.push_str(lead);
        out.push('.');
        out.push_str(if frac.is_empty() { "0" } else { frac });
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    }
}

/// The shortest decimal digits of finite `x >= 0` that read back to it, written to `out`
/// without trailing zeros, and the power of ten of the first one: `(digits, exp)` stands
/// for `d.ddd × 10^exp`; zero is `"0"` at power 0. zmij picks the digits as Python's repr
/// does, a tie between two last digits going to the even one (std's `{:e}` rounds it
/// up). Its fixed form (below 1e16) and its exponent form both hold at most 17 digits
/// from the first significant one, so `out` holds them all.
fn shortest_digits(x: f64, out: &mut [u8; 17]) -> (usize, i32) {
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(x).as_bytes();
    // zmij writes `ddd.ddd` (leading or trailing zeros included) or `d[.ddd]e±N`.
    let (mantissa, mut exp) = match text.iter().position(|&b| b == b'e') {
        Some(e) => (&text[..e], std::str::from_utf8(&text[e + 1..]).ok().and_then(|t| t.parse().ok()).unwrap_or(0)),
        None => (text, 0i32),
    };
    let before_point = mantissa.iter().position(|&b| b == b'.').unwrap_or(mantissa.len());
    exp += i32::try_from(before_point).unwrap_or(0) - 1;
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        if n == 0 && b == b'0' {
            // A leading zero: the first significant digit is one place further down.
            exp -= 1;
        } else if n < out.len() {
            out[n] = b;
            n += 1;
        }
    }
    while n > 1 && out[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        out[0] = b'0';
        return (1, 0);
    }
    (n, exp)
}

/// Whether `s` can be written as a plain scalar that PyYAML reads back as this string.
pub fn plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if resolve::resolve_plain(s) != Resolved::Str {
        return false;
    }
    if !(first.is_alphanumeric() || matches!(first, '_' | '/' | '.' | '(' | '$' | '^' | '+' | '=')) {
        return false;
    }
    if s.starts_with("...") || s.starts_with("---") {
        return false;
    }
    let last = s.chars().last().unwrap_or(' ');
    if last.is_whitespace() || last == ':' {
        return false;
    }
    // libyaml refuses ':' inside a plain scalar in flow context (`[a:b]`), and rasdf
    // writes scalar lists in flow style: quote every ':'.
    if s.contains(':') || s.contains(" #") || s.contains('\t') {
        return false;
    }
    s.chars().all(|c| {
        (c.is_ascii_graphic()
            && !matches!(
                c,
                ',' | '[' | ']' | '{' | '}' | '"' | '\'' | '\\' | '`' | '#' | '|' | '>' | '&' | '*' | '!' | '%' | '@'
            ))
            || c == ' '
            || (!c.is_ascii() && c.is_alphanumeric())
    })
}

/// A double-quoted YAML string with every special character escaped.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            '\n' => out += "\\n",
            '\t' => out += "\\t",
            '\r' => out += "\\r",
            '\0' => out += "\\0",
            '\u{85}' => out += "\\N",
            '\u{2028}' => out += "\\L",
            '\u{2029}' => out += "\\P",
            '\u{feff}' => out += "\\ufeff",
            c if (c as u32) < 0x20 || c as u32 == 0x7f || (0x80..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (0xd800..0xe000).contains(&(c as u32)) || c as u32 == 0xfffe || c as u32 == 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The short form of a tag: `!core/ndarray-1.1.0`, `!!str`, or `!<uri>`.
pub fn short_tag(tag: &str) -> String {
    if let Some(rest) = tag.strip_prefix(ASDF_TAG_PREFIX) {
        if rest.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) && !rest.is_empty() {
            return format!("!{rest}");
        }
    }
    if let Some(rest) = tag.strip_prefix(YAML_TAG_PREFIX) {
        if rest.chars().all(|c| c.is_ascii_alphanumeric()) && !rest.is_empty() {
            return format!("!!{rest}");
        }
    }
    // Verbatim, with what a YAML tag URI may not hold as it is (`%` itself, spaces,
    // `>`, `#`, `{}`, non-ASCII...) %XX-escaped as UTF-8: YAML parsers (libyaml,
    // so the reference's PyYAML too) decode those escapes when they read the tag back.
    format!("!<{}>", crate::uri::escape(tag.as_bytes(), b"-_;/?:@&=+$,.!~*'()[]"))
}

/// Writes YAML documents for trees.
pub struct Emitter<'t> {
    tree: &'t Tree,
    anchors: HashMap<NodeId, String>,
    emitted: Vec<bool>,
    out: String,
}

impl<'t> Emitter<'t> {
    /// An emitter for `tree`; nodes reached twice or more get anchors.
    pub fn new(tree: &'t Tree) -> Self {
        let mut refs = vec![0u32; tree.len()];
        // Nodes in the order they are first reached, which is the order of emission.
        let mut order = Vec::new();
        if let Some(root) = tree.root {
            // Count references; go into a node's children only the first time.
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let r = &mut refs[id.0 as usize];
                *r += 1;
                if *r > 1 {
                    continue;
                }
                order.push(id);
                match &tree.node(id).node().value {
                    Value::Seq(items) => stack.extend(items.iter().rev()),
                    Value::Map(pairs) => {
                        for (k, v) in pairs.iter().rev() {
                            stack.push(*v);
                            stack.push(*k);
                        }
                    }
                    _ => {}
                }
            }
        }
        let anchors: HashMap<NodeId, String> = order
            .into_iter()
            .filter(|id| refs[id.0 as usize] > 1)
            .enumerate()
            .map(|(n, id)| (id, format!("id{:03}", n + 1)))
            .collect();
        Emitter { tree, anchors, emitted: vec![false; tree.len()], out: String::new() }
    }

    /// The document: `%YAML 1.1`, `%TAG ! tag:stsci.edu:asdf/`, `---`, the tree, `...`.
    pub fn document(mut self) -> String {
        self.out += "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---";
        match self.tree.root {
            Some(root) => {
                self.node(root, 0, Ctx::Document);
            }
            None => self.out += " null\n",
        }
        self.out += "...\n";
        self.out
    }

    fn scalar_text(&self, id: NodeId) -> Option<String> {
        let node = self.tree.node(id).node();
        let text = match &node.value {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::BigInt(i) => i.to_string(),
            Value::Float(f) => format_float(*f),
            Value::Timestamp(t) => {
                if resolve::is_timestamp(t) && plain_safe_ts(t) {
                    t.clone()
                } else {
                    format!("!!timestamp {}", quote(t))
                }
            }
            Value::Binary(b) => {
                use base64::Engine;
                format!("!!binary {}", quote(&base64::engine::general_purpose::STANDARD.encode(b)))
            }
            Value::Str(s) => {
                if node.tag.is_some() {
                    // A tagged scalar is read back as text whatever it looks like.
                    if plain_safe(s) || (resolve::resolve_plain(s) != Resolved::Str && plain_safe_ts(s)) {
                        s.clone()
                    } else {
                        quote(s)
                    }
                } else if plain_safe(s) {
                    s.clone()
                } else {
                    quote(s)
                }
            }
            Value::Seq(_) | Value::Map(_) => return None,
        };
        Some(match &node.tag {
            Some(t) => format!("{} {text}", short_tag(t)),
            None => text,
        })
    }

    /// Anchor/alias prefix: `Some(alias text)` when the node was emitted already.
    fn prefix(&mut self, id: NodeId) -> Result<String, String> {
        match self.anchors.get(&id) {
            Some(a) if self.emitted[id.0 as usize] => Err(format!("*{a}")),
            Some(a) => {
                self.emitted[id.0 as usize] = true;
                Ok(format!("&{a} "))
            }
            None => Ok(String::new()),
        }
    }

    fn is_flow_scalar(&self, id: NodeId) -> bool {
        !self.anchors.contains_key(&id) && !matches!(self.tree.node(id).node().value, Value::Seq(_) | Value::Map(_))
    }

    /// Emits `key:` and its value (indented by `indent` where it takes lines of its own).
    fn pair(&mut self, k: NodeId, v: NodeId, indent: usize) {
        let key = match self.prefix(k) {
            Ok(p) => format!("{p}{}", self.scalar_text(k).unwrap_or_else(|| "null".into())),
            Err(alias) => format!("{alias} "),
        };
        self.out += &key;
        self.out += ":";
        self.node(v, indent, Ctx::MapValue);
    }

    /// Emits node `id` after whatever the line holds already (`key:`, `-`, `---`).
    fn node(&mut self, id: NodeId, indent: usize, ctx: Ctx) {
        let prefix = match self.prefix(id) {
            Ok(p) => p,
            Err(alias) => {
                self.out.push(' ');
                self.out += &alias;
                self.out.push('\n');
                return;
            }
        };
        let tree = self.tree;
        let node = tree.node(id).node();
        let tag = node.tag.as_deref().map(short_tag);
        match &node.value {
            Value::Seq(items) => {
                let head = format!("{prefix}{}", tag.map(|t| t + " ").unwrap_or_default());
                if items.is_empty() {
                    let _ = writeln!(self.out, " {head}[]");
                } else if items.iter().all(|&i| self.is_flow_scalar(i)) {
                    let parts: Vec<String> = items.iter().map(|&i| self.scalar_text(i).unwrap_or_default()).collect();
                    let _ = writeln!(self.out, " {head}[{}]", parts.join(", "));
                } else {
                    let head = head.trim_end();
                    if !head.is_empty() {
                        self.out.push(' ');
                        self.out += head;
                    }
                    self.out.push('\n');
                    let pad = " ".repeat(indent);
                    for &item in items {
                        self.out += &pad;
                        self.out += "-";
                        self.node(item, indent + 2, Ctx::SeqItem);
                    }
                }
            }
            Value::Map(pairs) if node.tag.as_deref() == Some(OMAP) => {
                // An ordered map (read from `!!omap`) is written as the reference writes
                // one: a sequence of one-pair mappings (it refuses `!!omap` on a mapping).
                let head = format!("{prefix}{}", tag.unwrap_or_default());
                if pairs.is_empty() {
                    let _ = writeln!(self.out, " {head} []");
                    return;
                }
                self.out.push(' ');
                self.out += &head;
                self.out.push('\n');
                let pad = " ".repeat(indent);
                for &(k, v) in pairs {
                    self.out += &pad;
                    self.out += "- ";
                    self.pair(k, v, indent + 4);
                }
            }
            Value::Map(pairs) => {
                let head = format!("{prefix}{}", tag.map(|t| t + " ").unwrap_or_default());
                if pairs.is_empty() {
                    let _ = writeln!(self.out, " {head}{{}}");
                    return;
                }
                let head = head.trim_end();
                if !head.is_empty() {
                    self.out.push(' ');
                    self.out += head;
                }
                self.out.push('\n');
                let child_indent = if matches!(ctx, Ctx::Document) { 0 } else { indent };
                let pad = " ".repeat(child_indent);
                for &(k, v) in pairs {
                    self.out += &pad;
                    self.pair(k, v, child_indent + 2);
                }
            }
            _ => {
                let text = self.scalar_text(id).unwrap_or_default();
                let _ = writeln!(self.out, " {prefix}{text}");
            }
        }
    }
}

/// Timestamps and tagged texts are plain when they have no YAML syntax in them.
/// (No ':' either: libyaml refuses it in a plain scalar in flow context.)
fn plain_safe_ts(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-+. _()".contains(c))
        && !s.starts_with([' ', '-'])
        && !s.ends_with(' ')
}

#[derive(Clone, Copy)]
enum Ctx {
    Document,
    SeqItem,
    MapValue,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    #[test]
    fn tags_that_need_escaping_read_back() {
        // A tag holding `%` (written `%25`), spaces, `>`, `#` and non-ASCII letters.
        for tag in ["!c(re5%55", "tag:example.org,2024:a b>c#d", "tag:x/\u{e9}t\u{e9}", "!local", "x%y%25"] {
            let text = format!("%YAML 1.1\n---\na: {} v\n...\n", short_tag(tag));
            let tree = Tree::parse(&text, &Limits::default()).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let node = tree.root().and_then(|r| r.key("a")).unwrap();
            assert_eq!(node.tag(), Some(tag), "{text}");
        }
    }

    #[test]
    fn floats_as_pyyaml() {
        for (x, s) in [
            (0.1, "0.1"),
            (3.0, "3.0"),
            (1e20, "1.0e+20"),
            (1e-7, "1.0e-07"),
            (1.5e-5, "1.5e-05"),
            (-0.0, "-0.0"),
            (1e16, "1.0e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(format_float(x), s, "{x}");
        }
    }

    /// 4 000 floats as the pinned PyYAML writes them (tests/python/make_float_reprs.py):
    /// random bits, decimals of every size, subnormals, and 17-digit ties, which Python
    /// rounds half to even (std's `{:e}` gave `1658206780088562.3` for the exact
    /// `...562.25`, Python `...562.2`).
    #[test]
    fn floats_as_pyyaml_writes_them() {
        let table = include_str!("../../testdata/scalars/floats.txt");
        let mut n = 0;
        for line in table.lines() {
            let (bits, text) = line.split_once(' ').unwrap();
            let x = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            assert_eq!(format_float(x), text, "{bits}");
            n += 1;
        }
        assert_eq!(n, 4000);
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in
            ["yes", "null", "1:30", "0x1F", "2020-01-01", "=", "", " x", "a: b", "1.5", "~", "-", "<<", "#", "a #b"]
        {
            assert!(!plain_safe(s), "{s:?}");
        }
        for s in ["hello", "F150W", "1e5", "y", "a b", "héllo", "asdf/core-1.0.0"] {
            assert!(plain_safe(s), "{s:?}");
        }
    }

    #[test]
    fn round_trip_through_the_parser() {
        let src = "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---\na: &x [1, 2.5, 'yes', null]\nb: *x\nc: !core/complex-1.0.0 1+2j\nd: {e: \"multi\\nline\", f: []}\ng: [[1, 2], [3, 4]]\nh: 2020-01-01\n";
        let t = Tree::parse(src, &Limits::default()).unwrap();
        let out = Emitter::new(&t).document();
        let t2 = Tree::parse(&out, &Limits::default()).unwrap();
        assert_eq!(Emitter::new(&t2).document(), out);
        assert_eq!(t2.get("a/2").unwrap().as_str(), Some("yes"));
        assert_eq!(t2.get("a").unwrap().id(), t2.get("b").unwrap().id());
        assert_eq!(t2.get("d/e").unwrap().as_str(), Some("multi\nline"));
        assert_eq!(t2.get("c").unwrap().tag(), Some("tag:stsci.edu:asdf/core/complex-1.0.0"));
        assert_eq!(t2.get("g/1/0").unwrap().as_i64(), Some(3));
    }

    #[test]
    fn colons_in_flow_lists_read_back() {
        // libyaml refuses `[a:b]` and `[2001-12-14 21:59:43]` as plain scalars.
        let src = "a: ['a:b', 'http://x.org', !!timestamp '2001-12-14 21:59:43', !foo 'x:y']\nb: 2001-12-14 21:59:43\n";
        let t = Tree::parse(src, &Limits::default()).unwrap();
        let out = Emitter::new(&t).document();
        let t2 = Tree::parse(&out, &Limits::default()).unwrap_or_else(|e| panic!("{e:?}\n{out}"));
        assert_eq!(t2.get("a/0").unwrap().as_str(), Some("a:b"));
        assert!(matches!(t2.get("a/2").unwrap().value(), Value::Timestamp(_)));
        assert!(matches!(t2.get("b").unwrap().value(), Value::Timestamp(_)));
        assert_eq!(t2.get("a/3").unwrap().as_str(), Some("x:y"));
    }
}
