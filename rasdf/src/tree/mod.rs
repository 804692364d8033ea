//! The YAML tree: YAML to a node tree. (The file's opening before it, the header and
//! comments, is [`crate::header`].)
//!
//! The tree is an arena of [`Node`]s addressed by [`NodeId`]. An alias is the same
//! `NodeId` as its anchor, so shared nodes are shared, recursive aliases are cycles, and
//! the tree's memory is linear in the file's size whatever the aliases do. Walkers that
//! follow children must therefore expect cycles (see [`Tree::walk`]).
//!
//! Here is the data model: the arena ([`Tree`], [`Node`], [`NodeId`], [`Value`]), the
//! navigation ([`NodeRef`], paths, [`Tree::walk`]), mapping keys as Python compares them,
//! and the tags rasdf knows. A tree is built from parser events, libyaml's or the fast
//! scanner's, in `build`, and a large text parsed in parts on several threads in
//! `parallel`; [`emit`] writes a tree back as YAML.

mod build;
pub mod emit;
// The fast scanner and the parse in parts (feature `fast-yaml`).
#[cfg(feature = "fast-yaml")]
mod fast;
pub mod numtext;
pub(crate) mod overlay;
#[cfg(feature = "fast-yaml")]
mod parallel;
pub mod resolve;
mod serde_impl;
mod serialize;

use std::borrow::Cow;
use std::collections::HashMap;

use num_bigint::BigInt;

use crate::limits::LimitError;

/// The text of [`Value::Str`] and [`Value::Timestamp`]: a `String` that keeps up to 24
/// bytes inline, without allocating. It derefs to `&str`; make one with `.into()` from a
/// `&str` or a `String`.
pub use compact_str::CompactString;
pub use overlay::{NodeArena, NodeStore, Overlay};
pub use serde_impl::DeError;
pub use serialize::SerError;
pub(crate) use serialize::to_node;

// The parser's helpers, kept with the event builder that drives the parser.
#[cfg(feature = "fast-yaml")]
#[doc(hidden)]
pub use build::fast_scan_count;
pub(crate) use build::guard_parser;
pub use build::panic_is_from_yaml_parser;

/// The ASDF tag prefix that the `!` handle stands for.
pub const ASDF_TAG_PREFIX: &str = "tag:stsci.edu:asdf/";
/// The YAML core tag prefix (`!!`).
pub const YAML_TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// The tag PyYAML gives a plain `=` (the YAML value key).
const VALUE_TAG: &str = "tag:yaml.org,2002:value";
/// The tag PyYAML gives a plain `<<`: a merge key in a mapping's key, elsewhere a string
/// the reference keeps tagged (with a warning).
const MERGE_TAG: &str = "tag:yaml.org,2002:merge";
/// The tag of an ordered map (`!!omap`), a sequence of one-pair mappings in YAML, which
/// rasdf keeps as a mapping under this tag.
pub const OMAP_TAG: &str = "tag:yaml.org,2002:omap";
/// `!!pairs`: a sequence of one-pair mappings, read as a list of `[key, value]` lists.
const PAIRS_TAG: &str = "tag:yaml.org,2002:pairs";
/// The tag of a YAML set (`!!set`), a mapping of null values, kept on the node.
pub const SET_TAG: &str = "tag:yaml.org,2002:set";

/// What can be wrong with the YAML tree.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The YAML does not parse.
    #[error("invalid YAML: {0}")]
    Syntax(String),
    /// The tree nests deeper than `Limits::max_depth`.
    #[error("the tree nests deeper than {0} levels")]
    TooDeep(usize),
    /// A limit on nodes or alias expansion was exceeded.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A mapping key is a sequence, a mapping or a tagged scalar (PyYAML: "found
    /// unhashable key").
    #[error("a mapping key may not be a sequence, a mapping or a tagged scalar")]
    UnhashableKey,
    /// A `<<` merge whose value is not a mapping or a list of mappings.
    #[error("a '<<' merge needs a mapping or a list of mappings")]
    BadMerge,
    /// A scalar with a YAML core tag whose text does not fit it (`!!int abc`).
    #[error("'{text}' is not a valid {tag}")]
    BadScalar {
        /// The tag.
        tag: String,
        /// The text.
        text: String,
    },
    /// A node does not have the kind or content the schema asks for.
    #[error("{0}")]
    Unexpected(String),
}

/// A parse error and its line and column in the tree text, if known.
pub type ParseError = (TreeError, Option<(usize, usize)>);

/// A node's handle in its [`Tree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// A node's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~`, or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An integer that does not (YAML allows any size).
    BigInt(Box<BigInt>),
    /// A float.
    Float(f64),
    /// A string (also the text of scalars with tags rasdf does not resolve).
    Str(CompactString),
    /// Bytes from `!!binary`.
    Binary(Vec<u8>),
    /// A date or date-time, as written.
    Timestamp(CompactString),
    /// A sequence.
    Seq(Vec<NodeId>),
    /// A mapping, in file order, duplicate keys merged (the last value wins, at the
    /// first key's place, as in Python).
    Map(Vec<(NodeId, NodeId)>),
}

/// One node: its tag, content and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The full tag URI (`!core/ndarray-1.0.0` becomes
    /// `tag:stsci.edu:asdf/core/ndarray-1.0.0`), when the YAML gives one that rasdf keeps.
    pub tag: Option<String>,
    /// The content.
    pub value: Value,
    /// Line and column (1-based) inside the tree text.
    pub line: u32,
    /// Column (1-based).
    pub col: u32,
}

/// A parsed YAML tree. (Two trees are equal when their arenas and roots are: the same
/// nodes at the same places, in the same order.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    nodes: Vec<Node>,
    root: Option<NodeId>,
    /// The two-item sequences that PyYAML makes tuples of (the items of a `!!pairs`),
    /// in increasing order. (Rare: most trees have none.)
    tuples: Vec<NodeId>,
}

impl Tree {
    /// An empty tree (no document).
    pub fn empty() -> Self {
        Tree::default()
    }

    /// The root node, when the tree has one.
    pub fn root(&self) -> Option<NodeRef<'_>> {
        self.root.map(|id| NodeRef { tree: self, id })
    }

    /// Number of nodes in the arena.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the tree has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether node `id` is a `(key, value)` pair of a `!!pairs` sequence, which the
    /// tree keeps as a two-item sequence and PyYAML (so the reference) makes a tuple of.
    pub fn is_tuple(&self, id: NodeId) -> bool {
        !self.tuples.is_empty() && self.tuples.binary_search(&id).is_ok()
    }

    /// The node with handle `id`.
    ///
    /// # Panics
    /// When `id` is not from this tree.
    pub fn node(&self, id: NodeId) -> NodeRef<'_> {
        assert!((id.0 as usize) < self.nodes.len(), "NodeId from another tree");
        NodeRef { tree: self, id }
    }

    /// The node at `path` from the root: keys and sequence indices separated by `/`
    /// (`sci/data`, `history/entries/0`). A leading `/` is allowed. A key that holds `/`
    /// or `~` is named with JSON Pointer's escapes, `~1` and `~0` (GSD's
    /// `particles/position` is `frames/0/particles~1position`), as paths are printed (see
    /// [`escape_step`]); a step is matched as written first, so a key holding `~1` itself
    /// is found either way.
    pub fn get(&self, path: &str) -> Option<NodeRef<'_>> {
        self.root()?.get(path)
    }

    /// Visits every node reachable from the root once, depth first, with its path. A node
    /// reached again through an alias is visited only the first time. The path is built
    /// only when `visit` asks for it (`to_string`, from [`TreePath`]'s `Display`).
    pub fn walk<'t>(&'t self, mut visit: impl FnMut(&TreePath<'t>, NodeRef<'t>)) {
        let Some(root) = self.root else { return };
        let mut seen = vec![false; self.nodes.len()];
        // (node, depth, step that reached it); `path.steps` holds the steps to the node.
        let mut stack: Vec<(NodeId, usize, Step)> = vec![(root, 0, Step::Root)];
        let mut path = TreePath { tree: self, steps: Vec::new() };
        while let Some((id, depth, step)) = stack.pop() {
            if std::mem::replace(&mut seen[id.0 as usize], true) {
                continue;
            }
            path.steps.truncate(depth.saturating_sub(1));
            if depth > 0 {
                path.steps.push(step);
            }
            let node = self.node(id);
            visit(&path, node);
            match &node.node().value {
                Value::Seq(items) => {
                    for (i, c) in items.iter().enumerate().rev() {
                        stack.push((*c, depth + 1, Step::Index(i)));
                    }
                }
                Value::Map(pairs) => {
                    for (k, v) in pairs.iter().rev() {
                        stack.push((*v, depth + 1, Step::Key(*k)));
                    }
                }
                _ => {}
            }
        }
    }

    /// Sets the root node.
    pub fn set_root(&mut self, id: NodeId) {
        self.root = Some(id);
    }

    /// Replaces the tag of node `id`.
    pub fn set_tag(&mut self, id: NodeId, tag: Option<String>) {
        self.nodes[id.0 as usize].tag = tag;
    }

    /// Replaces the content of node `id`.
    pub fn set_value(&mut self, id: NodeId, value: Value) {
        self.nodes[id.0 as usize].value = value;
    }

    /// Appends the pair `key: value` to the mapping `map` (nothing when `map` is not one).
    pub(crate) fn push_pair(&mut self, map: NodeId, key: NodeId, value: NodeId) {
        if let Value::Map(pairs) = &mut self.nodes[map.0 as usize].value {
            pairs.push((key, value));
        }
    }

    /// Makes of the tree what the reference makes of an ASDF file's tree: an empty
    /// document (`---` alone, `~`, `null`) is no tree at all, that is an empty
    /// `AsdfObject`; and a core/asdf node (whose converter calls Python's `dict` on it)
    /// that is an empty scalar or an empty sequence is an empty mapping, a sequence of
    /// `[key, value]` pairs the mapping of those pairs. Other core/asdf nodes that are not
    /// mappings stay as written, as the reference leaves a node it fails to convert.
    pub(crate) fn settle_asdf_objects(&mut self) {
        if let Some(root) = self.root
            && let node = &self.nodes[root.0 as usize]
            && node.value == Value::Null
            && node.tag.as_deref().is_none_or(|t| t == "tag:yaml.org,2002:null")
        {
            self.root = None;
            return;
        }
        for i in 0..self.nodes.len() {
            let node = &self.nodes[i];
            let is_asdf_object = node.tag.as_deref().is_some_and(|t| {
                matches!(t, "tag:stsci.edu:asdf/core/asdf-1.0.0" | "tag:stsci.edu:asdf/core/asdf-1.1.0")
            });
            if !is_asdf_object {
                continue;
            }
            let pairs = match &node.value {
                Value::Null => Some(Vec::new()),
                Value::Str(s) if s.is_empty() => Some(Vec::new()),
                Value::Seq(items) => items
                    .iter()
                    .map(|item| match &self.nodes[item.0 as usize].value {
                        Value::Seq(kv) if kv.len() == 2 => Some((kv[0], kv[1])),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            };
            if let Some(pairs) = pairs
                && let Ok(pairs) = dedupe(self, pairs)
            {
                self.nodes[i].value = Value::Map(pairs);
            }
        }
    }

    /// Adds a node (not yet attached anywhere) and returns its handle.
    pub fn push(&mut self, node: Node) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.nodes.push(node);
        id
    }
}

/// One step of a path: the root, a sequence index, a mapping key.
#[derive(Debug, Clone, Copy)]
enum Step {
    Root,
    Index(usize),
    Key(NodeId),
}

/// The path of a node during [`Tree::walk`], formatted on demand as `/key/0/key`.
#[derive(Debug)]
pub struct TreePath<'t> {
    tree: &'t Tree,
    steps: Vec<Step>,
}

impl std::fmt::Display for TreePath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for s in &self.steps {
            match s {
                Step::Root => {}
                Step::Index(i) => write!(f, "/{i}")?,
                Step::Key(k) => write!(f, "/{}", escape_step(&self.tree.node(*k).key_text()))?,
            }
        }
        Ok(())
    }
}

/// A key as a step of a tree path: `~` written `~0` and `/` written `~1`, JSON
/// Pointer's escapes, so that the path names the key (see [`Tree::get`]).
pub fn escape_step(key: &str) -> Cow<'_, str> {
    match key.contains(['~', '/']) {
        true => Cow::Owned(key.replace('~', "~0").replace('/', "~1")),
        false => Cow::Borrowed(key),
    }
}

/// A step of a tree path as the key it names: `~1` read as `/`, `~0` as `~`.
pub fn unescape_step(step: &str) -> Cow<'_, str> {
    match step.contains('~') {
        true => Cow::Owned(step.replace("~1", "/").replace("~0", "~")),
        false => Cow::Borrowed(step),
    }
}

/// A node and the tree it belongs to, for navigation: by path ([`NodeRef::get`]), key
/// ([`NodeRef::key`]) or index ([`NodeRef::index`]), over children ([`NodeRef::pairs`],
/// [`NodeRef::items`]), and to values ([`NodeRef::as_str`], [`NodeRef::as_f64`],
/// [`NodeRef::value`]...). Cheap to copy; it borrows the tree.
///
/// ```
/// use rasdf::tree::Value;
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
/// let file = rasdf::AsdfFile::open(path)?;
/// let meta = file.get("meta").expect("a meta mapping");
/// assert_eq!(meta.key("telescope").and_then(|n| n.as_str()), Some("example"));
/// assert_eq!(meta.get("exposure_time").and_then(|n| n.as_f64()), Some(120.5));
/// let filters: Vec<&str> = meta.key("filters").unwrap().items().unwrap().filter_map(|n| n.as_str()).collect();
/// assert_eq!(filters, ["F150W", "F200W"]);
/// assert!(matches!(meta.get("calibrated").unwrap().value(), Value::Bool(true)));
/// // Tags, as written or by name; ndarrays are read through the file.
/// let data = file.get("sci/data").unwrap();
/// assert!(data.is_asdf_tag("core/ndarray"));
/// assert_eq!(file.array_at(data).read_dyn()?.shape, [64, 64]);
/// # Ok::<(), rasdf::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NodeRef<'t> {
    tree: &'t Tree,
    id: NodeId,
}

impl<'t> NodeRef<'t> {
    /// The node's handle.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The tree.
    pub fn tree(&self) -> &'t Tree {
        self.tree
    }

    /// The node itself.
    pub fn node(&self) -> &'t Node {
        &self.tree.nodes[self.id.0 as usize]
    }

    /// The content.
    pub fn value(&self) -> &'t Value {
        &self.node().value
    }

    /// The full tag URI, if any.
    pub fn tag(&self) -> Option<&'t str> {
        self.node().tag.as_deref()
    }

    /// The tag without the version (`tag:stsci.edu:asdf/core/ndarray`), and the version.
    #[inline]
    pub fn tag_name_version(&self) -> Option<(&'t str, &'t str)> {
        let t = self.tag()?;
        let i = t.rfind('-')?;
        Some((&t[..i], &t[i + 1..]))
    }

    /// Whether the tag is the ASDF core tag `name`, e.g. `core/ndarray`, at a version some
    /// ASDF Standard defines (for the tags rasdf converts; any `X.Y.Z` for others),
    /// whichever standard the file declares. The reference leaves other versions
    /// (`core/ndarray-7.1.0`, `core/ndarray-1.1.*`) unconverted, and so does rasdf.
    #[inline]
    pub fn is_asdf_tag(&self, name: &str) -> bool {
        // Most nodes have no tag: that much is checked where this is called.
        self.tag().is_some_and(|t| is_asdf_tag(t, name))
    }

    /// Whether ASDF Standard `standard` (as `#ASDF_STANDARD` gives it) lists this node's
    /// core tag (`core/...-X.Y.Z`), by the standard's core manifest: the reference
    /// converts a core tag only then (`core/ndarray-1.0.0` in a 1.6.0 file, or 1.1.0 in
    /// a 1.5.0 one, stays a raw tagged mapping there, with a warning), where
    /// [`NodeRef::is_asdf_tag`] takes any version it knows in any file. `None` for a
    /// node without a core tag and for a standard outside 1.0.0 to 1.6.0.
    pub fn in_standard(&self, standard: &str) -> Option<bool> {
        let (name, version) = self.tag_name_version()?;
        let name = name.strip_prefix(ASDF_TAG_PREFIX)?.strip_prefix("core/")?;
        standard_minor(standard)?;
        Some(core_tag_version(name, standard) == Some(version))
    }

    /// The string, for a string node.
    pub fn as_str(&self) -> Option<&'t str> {
        match self.value() {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, for an int node that fits in 64 bits.
    pub fn as_i64(&self) -> Option<i64> {
        match self.value() {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number as a float, for int and float nodes.
    pub fn as_f64(&self) -> Option<f64> {
        match self.value() {
            #[allow(clippy::cast_precision_loss)]
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The boolean, for a bool node.
    pub fn as_bool(&self) -> Option<bool> {
        match self.value() {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether the node is null.
    pub fn is_null(&self) -> bool {
        matches!(self.value(), Value::Null)
    }

    /// The items, for a sequence.
    pub fn items(&self) -> Option<impl ExactSizeIterator<Item = NodeRef<'t>> + 't> {
        let tree = self.tree;
        match self.value() {
            Value::Seq(items) => Some(items.iter().map(move |&id| NodeRef { tree, id })),
            _ => None,
        }
    }

    /// The key/value pairs, for a mapping.
    pub fn pairs(&self) -> Option<impl ExactSizeIterator<Item = (NodeRef<'t>, NodeRef<'t>)> + 't> {
        let tree = self.tree;
        match self.value() {
            Value::Map(pairs) => {
                Some(pairs.iter().map(move |&(k, v)| (NodeRef { tree, id: k }, NodeRef { tree, id: v })))
            }
            _ => None,
        }
    }

    /// The value under the string key `key`, for a mapping.
    pub fn key(&self, key: &str) -> Option<NodeRef<'t>> {
        let tree = self.tree;
        match self.value() {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(&tree.nodes[k.0 as usize].value, Value::Str(s) if s == key))
                .map(|&(_, v)| NodeRef { tree, id: v }),
            _ => None,
        }
    }

    /// Item `i` of a sequence.
    pub fn index(&self, i: usize) -> Option<NodeRef<'t>> {
        match self.value() {
            Value::Seq(items) => items.get(i).map(|&id| NodeRef { tree: self.tree, id }),
            _ => None,
        }
    }

    /// The node at `path` below this one (see [`Tree::get`]). A path step matches a
    /// string key first, then, on a sequence, an index, then a key of another scalar
    /// kind written the same way (`1`, `true`).
    pub fn get(&self, path: &str) -> Option<NodeRef<'t>> {
        let mut cur = *self;
        for step in path.split('/').filter(|s| !s.is_empty()) {
            cur = match cur.value() {
                Value::Map(pairs) => {
                    let find = |step: &str| {
                        cur.key(step).or_else(|| {
                            let found = pairs.iter().find(|(k, _)| self.tree.node(*k).key_text() == step);
                            found.map(|&(_, v)| self.tree.node(v))
                        })
                    };
                    find(step).or_else(|| step.contains('~').then(|| find(&unescape_step(step))).flatten())?
                }
                Value::Seq(_) => cur.index(step.parse().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The text of a scalar as a mapping key in paths and listings.
    pub fn key_text(&self) -> String {
        match self.value() {
            Value::Str(s) | Value::Timestamp(s) => s.to_string(),
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::BigInt(i) => i.to_string(),
            Value::Float(f) => numtext::format_float(*f),
            Value::Binary(_) => "<binary>".into(),
            Value::Seq(_) => "<sequence>".into(),
            Value::Map(_) => "<mapping>".into(),
        }
    }

    /// Deserializes this subtree into `T` (`#[derive(Deserialize)]` types, maps, vectors,
    /// numbers, strings).
    ///
    /// # Errors
    /// [`DeError`] with the path of the node that did not fit.
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, DeError> {
        serde_impl::from_node(*self, serde_impl::MAX_VISITS)
    }

    /// [`NodeRef::deserialize`] visiting at most `max_nodes` collections (aliases are
    /// followed, so shared subtrees count each time they are reached). The default is
    /// 10 000 000.
    ///
    /// # Errors
    /// As [`NodeRef::deserialize`], and when the budget is spent.
    pub fn deserialize_limited<T: serde::de::DeserializeOwned>(&self, max_nodes: u64) -> Result<T, DeError> {
        serde_impl::from_node(*self, max_nodes)
    }
}

/// The value of a core/integer's `words`, least significant first, each ORed in 32 bits
/// above the one before as the reference does (so a plain list of non-negative ints
/// serves as well as a uint32 array), with its sign.
pub(crate) fn integer_from_words(words: &[u64], negative: bool) -> BigInt {
    let value = words.iter().rev().fold(BigInt::from(0u8), |value, &w| (value << 32u32) | BigInt::from(w));
    if negative { -value } else { value }
}

/// A core/integer's sign, as the reference reads it: `None` without a `sign` key, and
/// anything but `-` is positive.
pub(crate) fn integer_is_negative(node: NodeRef<'_>) -> Option<bool> {
    node.key("sign").map(|s| s.as_str() == Some("-"))
}

/// A hashable form of a scalar key, equal where Python's dict keys are equal
/// (`1`, `1.0` and `true` are one key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum KeyRepr {
    Null,
    Int(BigInt),
    Float(u64),
    Str(CompactString),
    Binary(Vec<u8>),
    Timestamp(CompactString),
}

fn key_repr(v: &Value) -> Option<KeyRepr> {
    Some(match v {
        Value::Null => KeyRepr::Null,
        Value::Bool(b) => KeyRepr::Int(BigInt::from(u8::from(*b))),
        Value::Int(i) => KeyRepr::Int(BigInt::from(*i)),
        Value::BigInt(i) => KeyRepr::Int((**i).clone()),
        Value::Float(f) => {
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                #[allow(clippy::cast_possible_truncation)]
                KeyRepr::Int(BigInt::from(*f as i64))
            } else {
                KeyRepr::Float(f.to_bits())
            }
        }
        Value::Str(s) => KeyRepr::Str(s.clone()),
        Value::Binary(b) => KeyRepr::Binary(b.clone()),
        Value::Timestamp(t) => KeyRepr::Timestamp(t.clone()),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

/// [`NodeRef::is_asdf_tag`] for a node tagged `tag`.
fn is_asdf_tag(tag: &str, name: &str) -> bool {
    let Some((n, v)) = tag.rsplit_once('-') else { return false };
    if n.strip_prefix(ASDF_TAG_PREFIX) != Some(name) {
        return false;
    }
    match name {
        "core/ndarray" | "core/integer" => matches!(v, "1.0.0" | "1.1.0" | "1.2.0"),
        "core/asdf" => matches!(v, "1.0.0" | "1.1.0"),
        "core/complex" | "core/software" | "core/history_entry" | "core/extension_metadata" | "core/externalarray" => {
            v == "1.0.0"
        }
        _ => v.split('.').count() == 3 && v.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// The minor version of an ASDF Standard rasdf knows the core manifest of (1.0.0 to
/// 1.6.0; 1.0.0 and 1.1.0, and 1.4.0 and 1.5.0, list the same core tags).
fn standard_minor(standard: &str) -> Option<u8> {
    Some(match standard {
        "1.0.0" | "1.1.0" => 1,
        "1.2.0" => 2,
        "1.3.0" => 3,
        "1.4.0" | "1.5.0" => 4,
        "1.6.0" => 6,
        _ => return None,
    })
}

/// The version of the core tag `name` (`ndarray`, without `core/`) that ASDF Standard
/// `standard` lists in its core manifest, which the reference converts in a file of
/// that standard; `None` when it lists none (or the standard is not 1.0.0 to 1.6.0).
pub fn core_tag_version(name: &str, standard: &str) -> Option<&'static str> {
    let minor = standard_minor(standard)?;
    let listed = match name {
        "asdf" => return Some(if minor == 1 { "1.0.0" } else { "1.1.0" }),
        "ndarray" => return Some(if minor == 6 { "1.1.0" } else { "1.0.0" }),
        "integer" => return (minor >= 3).then_some(if minor == 6 { "1.1.0" } else { "1.0.0" }),
        "complex" | "constant" | "history_entry" | "software" => true,
        "column" | "table" => minor <= 4,
        "extension_metadata" => minor >= 2,
        "externalarray" => minor >= 3,
        "subclass_metadata" => minor == 4,
        _ => false,
    };
    listed.then_some("1.0.0")
}

/// A 64-bit hash of a key's text, eight bytes at a step.
fn key_hash(s: &str) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (s.len() as u64).wrapping_mul(K);
    let mut words = s.as_bytes().chunks_exact(8);
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(29);
    }
    let rest = words.remainder();
    let mut b = [0u8; 8];
    b[..rest.len()].copy_from_slice(rest);
    h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K);
    h ^ (h >> 32)
}

/// Merges duplicate keys: the last value wins, at the first key's place.
fn dedupe(tree: &Tree, pairs: Vec<(NodeId, NodeId)>) -> Result<Vec<(NodeId, NodeId)>, TreeError> {
    if pairs.len() < 2 {
        return Ok(pairs);
    }
    // The usual case: string keys, all different; checked without allocating.
    let str_key = |id: NodeId| match &tree.nodes[id.0 as usize].value {
        Value::Str(s) => Some(s.as_str()),
        _ => None,
    };
    if pairs.iter().all(|(k, _)| str_key(*k).is_some()) {
        let unique = if pairs.len() <= 8 {
            pairs.iter().enumerate().all(|(i, (a, _))| pairs[..i].iter().all(|(b, _)| str_key(*a) != str_key(*b)))
        } else {
            // The keys' hashes in an open-addressing set at most half full: distinct
            // hashes prove distinct keys; an equal pair is settled by the full check
            // below. (On the stack for up to 64 keys.)
            let hash = |k: NodeId| key_hash(str_key(k).unwrap_or("")) | 1;
            let distinct = |slots: &mut [u64]| {
                let mask = slots.len() - 1;
                pairs.iter().all(|&(k, _)| {
                    let h = hash(k);
                    // Slot counts are powers of two; the high bits, rotated down, are
                    // the best mixed (and fit any `usize`).
                    let wide_mask = u64::try_from(mask).unwrap_or(u64::MAX);
                    let mut at = usize::try_from(h.rotate_left(24) & wide_mask).unwrap_or(0);
                    loop {
                        match slots[at] {
                            0 => {
                                slots[at] = h;
                                return true;
                            }
                            x if x == h => return false,
                            _ => at = (at + 1) & mask,
                        }
                    }
                })
            };
            let n = (2 * pairs.len()).next_power_of_two();
            let mut stack = [0u64; 128];
            match stack.get_mut(..n) {
                Some(slots) => distinct(slots),
                None => distinct(&mut vec![0u64; n]),
            }
        };
        if unique {
            return Ok(pairs);
        }
    }
    let mut first: HashMap<KeyRepr, usize> = HashMap::with_capacity(pairs.len());
    let mut out: Vec<(NodeId, NodeId)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let repr = key_repr(&tree.nodes[k.0 as usize].value).ok_or(TreeError::UnhashableKey)?;
        match first.get(&repr) {
            Some(&i) => out[i].1 = v,
            None => {
                first.insert(repr, out.len());
                out.push((k, v));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    pub(super) fn parse(s: &str) -> Tree {
        Tree::parse(s, &Limits::default()).unwrap()
    }

    #[test]
    fn every_printed_path_names_its_node_whatever_its_keys_hold() {
        let t = parse(
            "frames:\n- {particles/position: [1, 2], log/a~b: x, 'x~1y': y, '~': {'/': z}, plain: {a/b/c: [w]}}\n",
        );
        let mut paths = Vec::new();
        t.walk(|p, n| paths.push((p.to_string(), n.id())));
        let printed: Vec<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
        for want in ["/frames/0/particles~1position/1", "/frames/0/log~1a~0b", "/frames/0/x~01y", "/frames/0/~0/~1"] {
            assert!(printed.contains(&want), "{want} not in {printed:?}");
        }
        for (p, id) in &paths {
            assert_eq!(t.get(p).map(|n| n.id()), Some(*id), "{p}");
        }
        // Written as they are, keys are still found when nothing else matches.
        assert_eq!(t.get("frames/0/x~1y").and_then(|n| n.as_str()), Some("y"));
        assert_eq!(t.get("frames/0/log~1a~b").and_then(|n| n.as_str()), Some("x"));
        assert!(t.get("frames/0/particles/position").is_none());
    }

    #[test]
    fn core_tags_are_in_the_standards_whose_manifests_list_them() {
        let t = parse(
            "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---\na: !core/ndarray-1.0.0 {}\nb: !core/ndarray-1.1.0 {}\n\
             c: !core/integer-1.0.0 {}\nd: !core/subclass_metadata-1.0.0 {}\ne: !core/asdf-1.0.0 {}\n\
             f: !core/externalarray-1.0.0 {}\ng: !core/ndarray-1.2.0 {}\nh: !unit/unit-1.0.0 m\ni: 1\n",
        );
        let root = t.root().unwrap();
        let at = |k: &str, std: &str| root.key(k).unwrap().in_standard(std);
        for (k, listed_in) in [
            ("a", ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0"].as_slice()),
            ("b", &["1.6.0"]),
            ("c", &["1.3.0", "1.4.0", "1.5.0"]),
            ("d", &["1.4.0", "1.5.0"]),
            ("e", &["1.0.0", "1.1.0"]),
            ("f", &["1.3.0", "1.4.0", "1.5.0", "1.6.0"]),
            ("g", &[]),
        ] {
            for std in ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0"] {
                assert_eq!(at(k, std), Some(listed_in.contains(&std)), "{k} in {std}");
            }
            assert_eq!(at(k, "1.7.0"), None);
        }
        assert_eq!((at("h", "1.6.0"), at("i", "1.6.0")), (None, None));
    }

    /// The walk goes depth first, in document order, each node once (the first time it
    /// is reached), with its path: as a recursive walk would.
    #[test]
    fn walk_is_depth_first_in_order_with_paths() {
        fn recurse(n: NodeRef<'_>, path: String, seen: &mut Vec<bool>, out: &mut Vec<(String, u32)>) {
            if std::mem::replace(&mut seen[n.id().0 as usize], true) {
                return;
            }
            out.push((path.clone(), n.id().0));
            if let Some(items) = n.items() {
                for (i, c) in items.enumerate() {
                    recurse(c, format!("{path}/{i}"), seen, out);
                }
            } else if let Some(pairs) = n.pairs() {
                for (k, v) in pairs {
                    recurse(v, format!("{path}/{}", k.key_text()), seen, out);
                }
            }
        }
        let t = parse(
            "a: {x: &s 1, y: [2, &m {z: *s, w: [], v: {}}]}\nb: *m\nc: &r [1, *r, [[3], 4]]\nd: 5\ne: [*m, *s]\n",
        );
        let mut walked = Vec::new();
        t.walk(|p, n| walked.push((p.to_string(), n.id().0)));
        let mut expected = Vec::new();
        recurse(t.root().unwrap(), String::new(), &mut vec![false; t.len()], &mut expected);
        assert_eq!(walked, expected);
        assert!(walked.iter().any(|(p, _)| p == "/c/2/0/0"), "{walked:?}");
        let mut scalar_root = Vec::new();
        parse("7\n").walk(|p, n| scalar_root.push((p.to_string(), n.as_i64())));
        assert_eq!(scalar_root, [(String::new(), Some(7))]);
    }

    #[test]
    fn duplicate_keys_merge_in_maps_of_every_size() {
        // Sizes on both sides of the small-map check and of the stack-held hash set.
        for n in [2usize, 8, 9, 20, 63, 64, 65, 200, 1000] {
            for dup in [None, Some(0), Some(n / 2), Some(n - 1)] {
                let mut text = String::from("m: {");
                for k in 0..n {
                    text += &format!("key{k}: {k}, ");
                }
                if let Some(d) = dup {
                    text += &format!("key{d}: -1, ");
                }
                text += "last: 0}\n";
                let t = parse(&text);
                let got: Vec<(String, i64)> =
                    t.get("m").unwrap().pairs().unwrap().map(|(k, v)| (k.key_text(), v.as_i64().unwrap())).collect();
                let mut want: Vec<(String, i64)> = (0..n).map(|k| (format!("key{k}"), k as i64)).collect();
                if let Some(d) = dup {
                    want[d].1 = -1;
                }
                want.push(("last".into(), 0));
                assert_eq!(got, want, "{n} keys, duplicate {dup:?}");
            }
        }
    }
}
