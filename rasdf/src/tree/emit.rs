//! YAML 1.1 that PyYAML reads back to the same values: the tree emitter.
//!
//! Strings that PyYAML would resolve to something else (`yes`, `null`, `1:30`, `0x1F`,
//! `2020-01-01`, `=`...) are quoted; floats are written as Python's `repr` fixed up the
//! way PyYAML does (`1.0e+20`, never `1e20`, which PyYAML reads as a string); nodes
//! reached more than once get anchors (`&id001`) and aliases.

use std::collections::HashMap;
use std::fmt::Write;
use std::io;

use super::numtext::push_float;
use super::resolve::{self, Resolved};
use super::{ASDF_TAG_PREFIX, NodeId, NodeStore, OMAP_TAG as OMAP, Tree, Value, YAML_TAG_PREFIX};

/// Whether `s` can be written as a plain scalar that PyYAML reads back as this string.
pub fn plain_safe(s: &str) -> bool {
    let bytes = s.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    // Starting with an ASCII letter, only the bool and null words (5 letters at most)
    // resolve to anything but a string; other texts need the resolver.
    let resolves_to_str =
        if first.is_ascii_alphabetic() && bytes.len() > 5 { true } else { resolve::resolve_plain(s) == Resolved::Str };
    if !resolves_to_str {
        return false;
    }
    let first_ok = if first.is_ascii() {
        first.is_ascii_alphanumeric() || b"_/.($^+=".contains(&first)
    } else {
        s.chars().next().is_some_and(char::is_alphanumeric)
    };
    if !first_ok || s.starts_with("...") || s.starts_with("---") {
        return false;
    }
    let last = s.chars().last().unwrap_or(' ');
    if last.is_whitespace() || last == ':' {
        return false;
    }
    // libyaml refuses ':' inside a plain scalar in flow context (`[a:b]`), and rasdf
    // writes scalar lists in flow style: every ':' is quoted. `#` and tabs are not
    // plain either (` #` would start a comment).
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x80 {
            // The rest, character by character: letters and digits only.
            return s[i..].chars().all(|c| c.is_ascii() && plain_byte(c as u8) || !c.is_ascii() && c.is_alphanumeric());
        }
        if !plain_byte(b) {
            return false;
        }
    }
    true
}

/// An ASCII byte that may stand in a plain scalar rasdf writes.
fn plain_byte(b: u8) -> bool {
    b == b' '
        || (b.is_ascii_graphic()
            && !matches!(
                b,
                b',' | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'"'
                    | b'\''
                    | b'\\'
                    | b'`'
                    | b'#'
                    | b'|'
                    | b'>'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'%'
                    | b'@'
                    | b':'
            ))
}

/// A double-quoted YAML string with every special character escaped.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quoted(&mut out, s);
    out
}

/// [`quote`], appended to `out`.
fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            '\u{feff}' => out.push_str("\\ufeff"),
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
}

/// The short form of a tag: `!core/ndarray-1.1.0`, `!!str`, or `!<uri>`.
pub fn short_tag(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    push_short_tag(&mut out, tag);
    out
}

/// [`push_short_tag`], a core tag at the version `standard` lists (see
/// [`Emitter::for_standard`]).
#[inline]
fn push_tag(out: &mut String, tag: &str, standard: Option<&str>) {
    if let Some(standard) = standard
        && tag.starts_with("tag:stsci.edu:asdf/core/")
        && let Some(core) = core_tag_for(tag, standard)
    {
        out.push_str(&core);
        return;
    }
    push_short_tag(out, tag);
}

/// The short form of the root, ndarray or integer tag `tag` at the version `standard`
/// lists, when that is another version.
#[inline(never)]
fn core_tag_for(tag: &str, standard: &str) -> Option<String> {
    let (core_name, version) = tag.strip_prefix(ASDF_TAG_PREFIX)?.rsplit_once('-')?;
    let name = core_name.strip_prefix("core/").filter(|n| matches!(*n, "asdf" | "ndarray" | "integer"))?;
    // Only a version some standard defines (`core/ndarray-7.1.0` stays).
    let known = super::is_asdf_tag(tag, core_name);
    let want = super::core_tag_version(name, standard).filter(|&w| known && w != version)?;
    Some(format!("!core/{name}-{want}"))
}

/// [`short_tag`], appended to `out`.
fn push_short_tag(out: &mut String, tag: &str) {
    if let Some(rest) = tag.strip_prefix(ASDF_TAG_PREFIX)
        && rest.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_./".contains(&c))
        && !rest.is_empty()
    {
        out.push('!');
        out.push_str(rest);
        return;
    }
    if let Some(rest) = tag.strip_prefix(YAML_TAG_PREFIX)
        && rest.bytes().all(|c| c.is_ascii_alphanumeric())
        && !rest.is_empty()
    {
        out.push_str("!!");
        out.push_str(rest);
        return;
    }
    // Verbatim, with what a YAML tag URI may not hold as it is (`%` itself, spaces,
    // `>`, `#`, `{}`, non-ASCII...) %XX-escaped as UTF-8: YAML parsers (libyaml,
    // so the reference's PyYAML too) decode those escapes when they read the tag back.
    out.push_str("!<");
    out.push_str(&crate::uri::escape(tag.as_bytes(), crate::uri::TAG));
    out.push('>');
}

/// Writes YAML documents for trees: a [`Tree`], or an [`Overlay`](super::Overlay) of
/// changes on one (any [`NodeStore`]).
pub struct Emitter<'t, S: NodeStore + ?Sized = Tree> {
    tree: &'t S,
    /// Per node: [`UNSEEN`], [`ONCE`], [`SHARED`] (reached more than once, not yet
    /// emitted) or [`ANCHORED`] (emitted, with its anchor in `anchors`). A byte a node:
    /// trees of millions of nodes are written.
    state: Vec<u8>,
    /// Whether any node is shared (else there is nothing to look up).
    any_shared: bool,
    /// The anchor number (`&id001` is 1) of each shared node emitted so far.
    anchors: HashMap<NodeId, u32>,
    /// The ASDF Standard written, whose versions the core tags take (see
    /// [`Emitter::for_standard`]).
    standard: Option<String>,
    out: String,
    /// Where [`Emitter::write_document`] sends the text, [`SPILL`] bytes or so at a time
    /// (without one, the text stays in `out`).
    sink: Option<&'t mut (dyn io::Write + 't)>,
    /// The first error of the sink (the text after it is dropped).
    failed: Option<io::Error>,
    /// Bytes handed to the sink so far.
    written: u64,
    /// Nodes whose text someone else writes (see [`Verbatim`]).
    verbatim: HashMap<NodeId, &'t dyn Verbatim>,
}

/// The text [`Emitter::write_document`] builds up before it hands it on.
pub(crate) const SPILL: usize = 1 << 20;

/// A node whose text is written by something other than the emitter, from data that is
/// not in the tree: inline array data, written element by element from the array's
/// bytes rather than as a node an element. It writes what the emitter would write for
/// the nodes it stands for.
pub(crate) trait Verbatim {
    /// Appends the node's text to `out`, as [`Emitter`] writes a node after `key:` or
    /// `-` (a value of its own lines indented by `indent`, ending with a line end),
    /// calling `spill` often enough that `out` stays within a few times [`SPILL`].
    fn emit(&self, out: &mut String, indent: usize, spill: &mut dyn FnMut(&mut String));
}

/// Hands `out` to `sink` once it holds [`SPILL`] bytes or more (or always, when `all`);
/// after a failure, drops the text (the error is kept in `failed`).
fn spill_to(
    out: &mut String,
    sink: &mut Option<&mut (dyn io::Write + '_)>,
    failed: &mut Option<io::Error>,
    written: &mut u64,
    all: bool,
) {
    let Some(sink) = sink else { return };
    if out.len() < SPILL && !all {
        return;
    }
    if failed.is_none() {
        match sink.write_all(out.as_bytes()) {
            Ok(()) => *written += out.len() as u64,
            Err(e) => *failed = Some(e),
        }
    }
    out.clear();
}

const UNSEEN: u8 = 0;
const ONCE: u8 = 1;
const SHARED: u8 = 2;
const ANCHORED: u8 = 3;

/// What goes before a node: nothing, its anchor (first time), or its alias (later).
#[derive(Clone, Copy)]
enum Prefix {
    None,
    Anchor(u32),
    Alias(u32),
}

impl<'t, S: NodeStore + ?Sized> Emitter<'t, S> {
    /// An emitter for `tree`; nodes reached twice or more get anchors.
    pub fn new(tree: &'t S) -> Self {
        let mut state = vec![UNSEEN; tree.node_count()];
        let mut any_shared = false;
        if let Some(root) = tree.root_id() {
            // Find the nodes reached more than once; go into a node's children only the
            // first time.
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let s = &mut state[id.0 as usize];
                if *s != UNSEEN {
                    *s = SHARED;
                    any_shared = true;
                    continue;
                }
                *s = ONCE;
                match &tree.node_at(id).value {
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
        Emitter {
            tree,
            state,
            any_shared,
            anchors: HashMap::new(),
            standard: None,
            out: String::new(),
            sink: None,
            failed: None,
            written: 0,
            verbatim: HashMap::new(),
        }
    }

    /// Has `verbatim` write the text of the nodes it names (placeholders in the tree,
    /// each reached once: shared nodes cannot be verbatim).
    #[must_use]
    pub(crate) fn with_verbatim(mut self, verbatim: HashMap<NodeId, &'t dyn Verbatim>) -> Self {
        self.verbatim = verbatim;
        self
    }

    /// Writes the root, ndarray and integer tags at the version ASDF Standard `standard`
    /// lists ([`super::core_tag_version`]): an input's `core/ndarray-1.0.0` becomes 1.1.0
    /// in a 1.6.0 file, a new array's 1.1.0 becomes 1.0.0 in a 1.5.0 one, as the
    /// reference converts only those. Versions no standard defines, and standards rasdf
    /// does not know, stay as they are.
    #[must_use]
    pub fn for_standard(mut self, standard: &str) -> Self {
        self.standard = Some(standard.to_string());
        self
    }

    /// The document: `%YAML 1.1`, `%TAG ! tag:stsci.edu:asdf/`, `---`, the tree, `...`.
    pub fn document(self) -> String {
        self.document_after(String::new())
    }

    /// [`Emitter::document`] appended to `text` (which may hold the file's header
    /// lines, and room for the rest), without another copy.
    pub fn document_after(mut self, text: String) -> String {
        self.out = text;
        self.emit_document();
        self.out
    }

    /// [`Emitter::document_after`] `head` written to `sink` as it is made, a megabyte or
    /// so at a time: however large the tree's text, only that much of it is held.
    /// Returns the number of bytes written (`head`'s included).
    ///
    /// # Errors
    /// The first error of `sink` (nothing more is written after it).
    pub fn write_document(mut self, head: &str, sink: &'t mut (dyn io::Write + 't)) -> io::Result<u64> {
        self.out = String::with_capacity(SPILL + (64 << 10));
        self.out.push_str(head);
        self.sink = Some(sink);
        self.emit_document();
        self.spill(true);
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.written),
        }
    }

    fn emit_document(&mut self) {
        self.out += "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---";
        match self.tree.root_id() {
            Some(root) => {
                self.node(root, 0, Ctx::Document);
            }
            None => self.out += " null\n",
        }
        self.out += "...\n";
    }

    /// Hands the text so far to the sink, if there is one and the text is large enough
    /// (or always, when `all`).
    #[inline]
    fn spill(&mut self, all: bool) {
        if self.sink.is_some() && (all || self.out.len() >= SPILL) {
            spill_to(&mut self.out, &mut self.sink, &mut self.failed, &mut self.written, all);
        }
    }

    /// Appends the text of scalar `id` (its tag first, if any); `false`, with nothing
    /// appended, for a collection.
    fn scalar(&mut self, id: NodeId) -> bool {
        let node = self.tree.node_at(id);
        push_scalar(&mut self.out, node.tag.as_deref(), &node.value, self.standard.as_deref())
    }

    /// The node's anchor or alias, marking it emitted. Anchors are numbered in the
    /// order they are emitted (the order in which `new` first reached their nodes).
    fn prefix(&mut self, id: NodeId) -> Prefix {
        if !self.any_shared {
            return Prefix::None;
        }
        match self.state[id.0 as usize] {
            SHARED => {
                self.state[id.0 as usize] = ANCHORED;
                let a = u32::try_from(self.anchors.len() + 1).unwrap_or(u32::MAX);
                self.anchors.insert(id, a);
                Prefix::Anchor(a)
            }
            ANCHORED => self.anchors.get(&id).map_or(Prefix::None, |&a| Prefix::Alias(a)),
            _ => Prefix::None,
        }
    }

    fn is_flow_scalar(&self, id: NodeId) -> bool {
        !matches!(self.tree.node_at(id).value, Value::Seq(_) | Value::Map(_))
            && (!self.any_shared || self.state[id.0 as usize] < SHARED)
    }

    /// Appends a node's head, its anchor and tag if it has them: ` &id001 !tag` before
    /// lines of its own, or ` &id001 !tag ` (at least ` `) before an inline value.
    fn head(&mut self, anchor: Option<u32>, tag: Option<&str>, inline: bool) {
        if anchor.is_none() && tag.is_none() {
            if inline {
                self.out.push(' ');
            }
            return;
        }
        self.out.push(' ');
        if let Some(a) = anchor {
            let _ = write!(self.out, "&id{a:03}");
            if tag.is_some() {
                self.out.push(' ');
            }
        }
        if let Some(t) = tag {
            push_tag(&mut self.out, t, self.standard.as_deref());
        }
        if inline {
            self.out.push(' ');
        }
    }

    /// Emits `key:` and its value (indented by `indent` where it takes lines of its own).
    fn pair(&mut self, k: NodeId, v: NodeId, indent: usize) {
        match self.prefix(k) {
            Prefix::Alias(a) => {
                let _ = write!(self.out, "*id{a:03} ");
            }
            p => {
                if let Prefix::Anchor(a) = p {
                    let _ = write!(self.out, "&id{a:03} ");
                }
                if !self.scalar(k) {
                    self.out.push_str("null");
                }
            }
        }
        self.out.push(':');
        self.node(v, indent, Ctx::MapValue);
    }

    /// Emits node `id` after whatever the line holds already (`key:`, `-`, `---`).
    fn node(&mut self, id: NodeId, indent: usize, ctx: Ctx) {
        self.spill(false);
        if !self.verbatim.is_empty()
            && let Some(&v) = self.verbatim.get(&id)
        {
            let Emitter { out, sink, failed, written, .. } = self;
            v.emit(out, indent, &mut |out| spill_to(out, sink, failed, written, false));
            return;
        }
        let anchor = match self.prefix(id) {
            Prefix::Alias(a) => {
                let _ = writeln!(self.out, " *id{a:03}");
                return;
            }
            Prefix::Anchor(a) => Some(a),
            Prefix::None => None,
        };
        let tree = self.tree;
        let node = tree.node_at(id);
        let tag = node.tag.as_deref();
        match &node.value {
            Value::Seq(items) => {
                if items.is_empty() {
                    self.head(anchor, tag, true);
                    self.out.push_str("[]\n");
                } else if items.iter().all(|&i| self.is_flow_scalar(i)) {
                    self.head(anchor, tag, true);
                    self.out.push('[');
                    for (n, &i) in items.iter().enumerate() {
                        if n > 0 {
                            self.out.push_str(", ");
                        }
                        self.scalar(i);
                    }
                    self.out.push_str("]\n");
                } else {
                    self.head(anchor, tag, false);
                    self.out.push('\n');
                    for &item in items {
                        push_spaces(&mut self.out, indent);
                        self.out.push('-');
                        self.node(item, indent + 2, Ctx::SeqItem);
                    }
                }
            }
            Value::Map(pairs) if tag == Some(OMAP) => {
                // An ordered map (read from `!!omap`) is written as the reference writes
                // one: a sequence of one-pair mappings (it refuses `!!omap` on a mapping).
                self.head(anchor, tag, false);
                if pairs.is_empty() {
                    self.out.push_str(" []\n");
                    return;
                }
                self.out.push('\n');
                for &(k, v) in pairs {
                    push_spaces(&mut self.out, indent);
                    self.out.push_str("- ");
                    self.pair(k, v, indent + 4);
                }
            }
            Value::Map(pairs) => {
                if pairs.is_empty() {
                    self.head(anchor, tag, true);
                    self.out.push_str("{}\n");
                    return;
                }
                self.head(anchor, tag, false);
                self.out.push('\n');
                let child_indent = if matches!(ctx, Ctx::Document) { 0 } else { indent };
                for &(k, v) in pairs {
                    push_spaces(&mut self.out, child_indent);
                    self.pair(k, v, child_indent + 2);
                }
            }
            _ => {
                self.out.push(' ');
                if let Some(a) = anchor {
                    let _ = write!(self.out, "&id{a:03} ");
                }
                self.scalar(id);
                self.out.push('\n');
            }
        }
    }
}

/// Appends the text of a scalar of `value` tagged `tag` (its tag first, if any) as the
/// emitter writes it for ASDF Standard `standard`; `false`, with nothing appended, for a
/// collection.
pub(crate) fn push_scalar(out: &mut String, tag: Option<&str>, value: &Value, standard: Option<&str>) -> bool {
    if matches!(value, Value::Seq(_) | Value::Map(_)) {
        return false;
    }
    if let Some(t) = tag {
        push_tag(out, t, standard);
        out.push(' ');
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => push_int(out, *i),
        Value::BigInt(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => push_float(out, *f),
        Value::Timestamp(t) => {
            if resolve::is_timestamp(t) && plain_safe_ts(t) {
                out.push_str(t);
            } else {
                out.push_str("!!timestamp ");
                push_quoted(out, t);
            }
        }
        Value::Binary(b) => {
            use base64::Engine;
            out.push_str("!!binary ");
            push_quoted(out, &base64::engine::general_purpose::STANDARD.encode(b));
        }
        Value::Str(s) => {
            // A tagged scalar is read back as text whatever it looks like.
            let plain =
                plain_safe(s) || (tag.is_some() && resolve::resolve_plain(s) != Resolved::Str && plain_safe_ts(s));
            if plain {
                out.push_str(s);
            } else {
                push_quoted(out, s);
            }
        }
        Value::Seq(_) | Value::Map(_) => {}
    }
    true
}

pub(crate) fn push_spaces(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// `i` in decimal, appended to `out`.
pub(crate) fn push_int(out: &mut String, i: i64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = i.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or("0"));
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

    /// Shared nodes get anchors numbered in the order they are written, recursive ones
    /// too; a node met again is an alias, in flow lists as in blocks.
    #[test]
    fn anchors_are_numbered_as_written() {
        let src = "b: &x [1, 2]\nc: &y {p: *x, q: &z hello}\nd: [*y, *z, *x, &w 7, *w]\ne: &r {self: *r, k: [*r]}\n";
        let t = Tree::parse(src, &Limits::default()).unwrap();
        let out = Emitter::new(&t).document();
        let want = "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---\nb: &id001 [1, 2]\nc: &id002\n  p: *id001\n  q: &id003 hello\nd:\n  - *id002\n  - *id003\n  - *id001\n  - &id004 7\n  - *id004\ne: &id005\n  self: *id005\n  k:\n    - *id005\n...\n";
        assert_eq!(out, want);
        let back = Tree::parse(&out, &Limits::default()).unwrap();
        assert_eq!(back.get("e").unwrap().id(), back.get("e/self").unwrap().id());
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
