//! The YAML tree: the header and comments ([`header`]), and YAML to a node tree.
//!
//! The tree is an arena of [`Node`]s addressed by [`NodeId`]. An alias is the same
//! `NodeId` as its anchor, so shared nodes are shared, recursive aliases are cycles, and
//! the tree's memory is linear in the file's size whatever the aliases do. Walkers that
//! follow children must therefore expect cycles (see [`Tree::walk`]).

pub mod emit;
mod fast;
pub mod header;
pub mod numtext;
pub(crate) mod overlay;
pub mod resolve;
mod serde_impl;
mod serialize;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use libyaml_safer::{EventData, Parser, ScalarStyle};
use num_bigint::BigInt;

use crate::Limits;
use crate::limits::LimitError;
use resolve::Resolved;

/// The text of [`Value::Str`] and [`Value::Timestamp`]: a `String` that keeps up to 24
/// bytes inline, without allocating. It derefs to `&str`; make one with `.into()` from a
/// `&str` or a `String`.
pub use compact_str::CompactString;
pub use overlay::{NodeArena, NodeStore, Overlay};
pub use serde_impl::DeError;
pub use serialize::SerError;
pub(crate) use serialize::to_node;

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

/// A block scalar's one final line break (not two), which PyYAML's patterns (`$`) still
/// pass: the text without it.
fn strip_one_break(text: &str) -> Option<&str> {
    text.strip_suffix('\n').filter(|t| !t.ends_with('\n'))
}

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

/// Runs `f`, which drives libyaml-safer, turning a panic inside the parser into an
/// error: libyaml-safer 0.3 panics on some inputs libyaml accepts (a tag directly
/// followed by `,` in a flow collection: "TODO: What is expected here?").
pub(crate) fn guard_parser<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let what = p.downcast_ref::<&str>().map(|s| (*s).to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        format!("the YAML parser gave up on this text ({})", what.unwrap_or_default())
    })
}

/// Whether a panic comes from the YAML parser, whose panics `guard_parser` turns into
/// errors (for panic hooks that should stay quiet about those).
pub fn panic_is_from_yaml_parser(info: &std::panic::PanicHookInfo<'_>) -> bool {
    info.location().is_some_and(|l| l.file().contains("libyaml-safer"))
}

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
}

impl Tree {
    /// An empty tree (no document).
    pub fn empty() -> Self {
        Tree::default()
    }

    /// Parses the YAML text of a tree (the first document).
    ///
    /// # Errors
    /// [`TreeError`] with the line and column (1-based, inside `text`) where it happened.
    pub fn parse(text: &str, limits: &Limits) -> Result<Tree, ParseError> {
        match Tree::parse_fast(text, limits) {
            Some(Ok(tree)) => Ok(tree),
            // An error is libyaml's to give: the fast scanner may have met it inside a
            // construct it would have left to libyaml (errors are rare; this costs a
            // second parse only then).
            Some(Err(_)) | None => Tree::parse_libyaml(text, limits),
        }
    }

    /// [`Tree::parse`] with libyaml only.
    ///
    /// # Errors
    /// As [`Tree::parse`].
    #[doc(hidden)]
    pub fn parse_libyaml(text: &str, limits: &Limits) -> Result<Tree, ParseError> {
        guard_parser(|| Builder::new(limits, text.len(), true).run(text))
            .unwrap_or_else(|message| Err((TreeError::Syntax(message), None)))
    }

    /// [`Tree::parse`] with the fast scanner only; `None` when the text has YAML it
    /// leaves to libyaml.
    #[doc(hidden)]
    pub fn parse_fast(text: &str, limits: &Limits) -> Option<Result<Tree, ParseError>> {
        match Tree::parse_split(text, limits) {
            Some(tree) => Some(Ok(tree)),
            None => Tree::parse_fast_whole(text, limits),
        }
    }

    /// [`Tree::parse_fast`] on one thread.
    pub(crate) fn parse_fast_whole(text: &str, limits: &Limits) -> Option<Result<Tree, ParseError>> {
        let mut b = Builder::new(limits, text.len(), true);
        let done = fast::scan(text, &mut b.sink());
        match done {
            Ok(true) => Some(Ok(b.into_tree())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// A large tree whose root is a block mapping, parsed in parts on several threads
    /// (the text cut between entries of the root mapping) and joined. `None` when the
    /// text is small, or a part cannot be parsed alone (the scanner gave up, an alias
    /// names an anchor of another part, a merge key, an error, a limit): the caller then
    /// parses the whole text at once, which gives the same tree or the error with its
    /// place.
    fn parse_split(text: &str, limits: &Limits) -> Option<Tree> {
        if text.len() < 2 * SPLIT_PART_MIN {
            return None;
        }
        let threads = std::thread::available_parallelism().map_or(1, usize::from).min(text.len() / SPLIT_PART_MIN);
        if threads < 2 {
            return None;
        }
        Tree::parse_in_parts(text, limits, threads)
    }

    /// [`Tree::parse_split`] in (at most) `parts` parts, whatever the text's size.
    pub(crate) fn parse_in_parts(text: &str, limits: &Limits, parts: usize) -> Option<Tree> {
        let cuts = fast::split_points(text, parts);
        if cuts.is_empty() {
            return None;
        }
        let bounds: Vec<(usize, usize)> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .zip(cuts.iter().copied().chain(std::iter::once(text.len())))
            .collect();
        let part = |(start, end): (usize, usize)| {
            // The first part's arena has room for the whole tree: the others join it.
            let mut b = Builder::new(limits, if start == 0 { text.len() } else { end - start }, false);
            let done = fast::scan_part(text, start, end, &mut b.sink());
            match done {
                Ok(true) if !b.any_merge => {
                    let anchors: Vec<String> = b.anchors.keys().cloned().collect();
                    Some((b.into_tree(), anchors))
                }
                _ => None,
            }
        };
        let parts: Vec<Option<(Tree, Vec<String>)>> = std::thread::scope(|scope| {
            // A thread the system refuses, or one that panicked, leaves its part undone.
            let others: Vec<_> = bounds[1..]
                .iter()
                .map(|&r| std::thread::Builder::new().spawn_scoped(scope, move || part(r)).ok())
                .collect();
            let first = part(bounds[0]);
            std::iter::once(first).chain(others.into_iter().map(|h| h?.join().ok().flatten())).collect()
        });
        let parts: Vec<(Tree, Vec<String>)> = parts.into_iter().collect::<Option<_>>()?;
        // An anchor given in two parts is the whole parse's error to report.
        let mut names = HashSet::new();
        if !parts.iter().flat_map(|(_, a)| a).all(|a| names.insert(a)) {
            return None;
        }
        join_parts(parts.into_iter().map(|(t, _)| t).collect(), limits)
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

/// A node and the tree it belongs to, for navigation.
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

/// A collection being built; its items (pairs) so far are those of the builder's
/// shared stack from `start` on, so no collection grows a vector of its own.
enum Frame {
    /// `merge`: the list is a merge key's value (`<<: [*a, *b]`).
    Seq {
        id: NodeId,
        start: usize,
        merge: bool,
    },
    Map {
        id: NodeId,
        start: usize,
        key: Option<NodeId>,
    },
}

struct Builder<'l> {
    /// The node arena's pages made present ahead of the parse (large texts only).
    /// First, so that on every path it is stopped before the arena is freed (fields
    /// drop in order).
    prefault: Option<crate::hugepages::Prefault>,
    limits: &'l Limits,
    tree: Tree,
    anchors: HashMap<String, NodeId>,
    stack: Vec<Frame>,
    /// Items of the open sequences, innermost last.
    items: Vec<NodeId>,
    /// Pairs of the open mappings, innermost last.
    pairs: Vec<(NodeId, NodeId)>,
    /// Whether any `<<` (a node tagged [`MERGE_TAG`]) was read: a mapping's end looks
    /// for merge keys only then (by their tag).
    any_merge: bool,
    /// Anchored items of `!!omap` and `!!pairs`, and anchored merge values, whose tag
    /// names another kind of node (`- &a !!omap {k: v}`, `<<: &m !!seq {k: v}`), with that
    /// tag and the kind found: PyYAML ignores the tag there, but an alias to one
    /// elsewhere constructs it, tag and all, and fails.
    unchecked_items: HashMap<NodeId, (String, &'static str)>,
    /// Mappings written with more than one pair (`{a: 1, a: 2}`) that hold one once
    /// repeated keys are folded: PyYAML counts pairs as written, so an alias to one is
    /// no `!!omap` or `!!pairs` item.
    folded_to_one: HashSet<NodeId>,
    documents: usize,
}

/// A parser event, from libyaml or from the fast scanner ([`fast`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ev<'a> {
    DocStart,
    DocEnd,
    Alias(String),
    /// The text borrows from the tree's text where it can (plain scalars of the fast
    /// scanner), so numbers and nulls never allocate.
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: Cow<'a, str>,
        plain: bool,
    },
    SeqStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    SeqEnd,
    MapStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    MapEnd,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

type BuildError = (TreeError, Option<(usize, usize)>);

/// A parse error and its line and column in the tree text, if known.
pub type ParseError = (TreeError, Option<(usize, usize)>);

/// libyaml-safer turns each `%XX` escape of a tag into the character U+00XX; libyaml,
/// and so the reference's PyYAML, reads the escaped bytes as UTF-8 (`%C3%A9` is `é`), and
/// refuses them when they are not. (A tag holds no other character past ASCII: the
/// scanner allows none.)
fn utf8_escapes(tag: Option<String>) -> Result<Option<String>, TreeError> {
    match tag {
        Some(t) if !t.is_ascii() => {
            let bytes: Option<Vec<u8>> = t.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
            let text = bytes.and_then(|b| String::from_utf8(b).ok());
            text.map(Some).ok_or_else(|| TreeError::Syntax(format!("the %-escapes of tag {t:?} are not UTF-8")))
        }
        other => Ok(other),
    }
}

/// A libyaml error, placed where libyaml saw it.
fn syntax_error(e: libyaml_safer::Error) -> BuildError {
    let pos = e.problem_mark().or_else(|| e.context_mark()).map(mark_pos);
    (TreeError::Syntax(e.to_string()), pos)
}

fn mark_pos(m: libyaml_safer::Mark) -> (usize, usize) {
    let line = usize::try_from(m.line).unwrap_or(usize::MAX).saturating_add(1);
    (line, usize::try_from(m.column).unwrap_or(usize::MAX).saturating_add(1))
}

/// The kind of node a YAML core tag constructs, as PyYAML's `SafeConstructor` (which
/// the reference uses) requires it: `None` for tags of any kind (and other tags).
fn core_tag_kind(tag: &str) -> Option<&'static str> {
    match tag.strip_prefix(YAML_TAG_PREFIX)? {
        "str" | "int" | "float" | "bool" | "null" | "binary" | "timestamp" => Some("scalar"),
        "seq" | "omap" | "pairs" => Some("sequence"),
        "map" | "set" => Some("mapping"),
        _ => None,
    }
}

/// PyYAML's refusal of a core tag on a node of another kind (`!!str [1]`, `!!omap {}`,
/// `!!seq x`), where `found` is the node's kind.
fn check_kind(tag: Option<&str>, found: &str) -> Result<(), TreeError> {
    match tag.and_then(core_tag_kind) {
        Some(expected) if expected != found => Err(TreeError::Unexpected(format!(
            "{} expects a {expected} node, but found a {found}",
            tag.map(emit::short_tag).unwrap_or_default()
        ))),
        _ => Ok(()),
    }
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

/// `!` alone (non-specific) and the default collection tags add nothing.
fn collection_tag(tag: Option<String>) -> Option<String> {
    tag.filter(|t| !matches!(t.as_str(), "!" | "tag:yaml.org,2002:seq" | "tag:yaml.org,2002:map"))
}

impl<'l> Builder<'l> {
    /// A builder for a text of `text_len` bytes; `helper`: whether a thread may make the
    /// arena's pages present ahead of the parse.
    fn new(limits: &'l Limits, text_len: usize, helper: bool) -> Self {
        let mut tree = Tree::default();
        // Room for the nodes such a text may hold (one per 4 bytes covers even dense flow
        // lists), reserved once: memory is touched only as nodes arrive, and the arena
        // is never copied while it grows.
        // (Where the address space is tight the reservation may fail: the arena then grows
        // as usual.)
        let _ = tree.nodes.try_reserve(text_len.div_ceil(4).min(limits.max_nodes).min(1 << 26));
        crate::hugepages::advise(tree.nodes.as_ptr(), tree.nodes.capacity() * std::mem::size_of::<Node>());
        // The arena's pages are made present by a helper while the parse runs, a little
        // ahead of the nodes (a text of 128 KB or more; dense ASDF metadata holds about
        // a node per 8 bytes of text).
        let prefault = if helper && text_len >= 128 << 10 {
            crate::hugepages::Prefault::start(tree.nodes.as_ptr(), tree.nodes.capacity() * std::mem::size_of::<Node>())
        } else {
            None
        };
        Builder {
            limits,
            tree,
            anchors: HashMap::new(),
            stack: Vec::new(),
            items: Vec::new(),
            pairs: Vec::new(),
            any_merge: false,
            unchecked_items: HashMap::new(),
            folded_to_one: HashSet::new(),
            documents: 0,
            prefault,
        }
    }

    /// The event sink for the fast scanner: it stops taking events once the tree is
    /// complete.
    fn sink<'s, 'a>(&'s mut self) -> impl FnMut(Ev<'a>, (usize, usize)) -> Result<bool, BuildError> + 's {
        let mut stopped = false;
        move |ev, pos| {
            if !stopped && self.event(ev, pos)? == Flow::Stop {
                stopped = true;
            }
            Ok(stopped)
        }
    }

    /// The tree built, the helper stopped.
    fn into_tree(mut self) -> Tree {
        self.prefault = None;
        std::mem::take(&mut self.tree)
    }

    /// Names node `id` by `anchor`. An anchor given twice is an error, as in PyYAML's
    /// composer (YAML itself lets the later one win).
    #[inline]
    fn anchor(&mut self, anchor: Option<String>, id: NodeId) -> Result<(), TreeError> {
        if let Some(a) = anchor {
            if self.anchors.contains_key(&a) {
                return Err(TreeError::Syntax(format!("found duplicate anchor &{a}")));
            }
            self.anchors.insert(a, id);
        }
        Ok(())
    }

    /// Builds from libyaml's events.
    fn run(mut self, text: &str) -> Result<Tree, BuildError> {
        let mut parser = Parser::new();
        let mut input = text.as_bytes();
        parser.set_input_string(&mut input);
        loop {
            let ev = parser.parse().map_err(syntax_error)?;
            let pos = mark_pos(ev.start_mark);
            let utf8 = |tag| utf8_escapes(tag).map_err(|e| (e, Some(pos)));
            let ev = match ev.data {
                EventData::StreamEnd => Ev::End,
                EventData::DocumentStart { .. } => Ev::DocStart,
                EventData::DocumentEnd { .. } => Ev::DocEnd,
                EventData::Alias { anchor } => Ev::Alias(anchor),
                EventData::Scalar { anchor, tag, value, style, .. } => {
                    Ev::Scalar { anchor, tag: utf8(tag)?, value: Cow::Owned(value), plain: style == ScalarStyle::Plain }
                }
                EventData::SequenceStart { anchor, tag, .. } => Ev::SeqStart { anchor, tag: utf8(tag)? },
                EventData::MappingStart { anchor, tag, .. } => Ev::MapStart { anchor, tag: utf8(tag)? },
                EventData::SequenceEnd => Ev::SeqEnd,
                EventData::MappingEnd => Ev::MapEnd,
                EventData::StreamStart { .. } => continue,
            };
            let end = ev == Ev::End;
            if self.event(ev, pos)? == Flow::Stop {
                if !end {
                    // After the document, the stream must end (as PyYAML's
                    // `get_single_node` requires): another document, or text libyaml
                    // cannot read, is an error.
                    let ev = parser.parse().map_err(syntax_error)?;
                    match ev.data {
                        EventData::StreamEnd => {}
                        EventData::DocumentStart { .. } => {
                            self.event(Ev::DocStart, mark_pos(ev.start_mark))?;
                        }
                        other => {
                            let msg = format!("unexpected {other:?} after the document");
                            return Err((TreeError::Syntax(msg), Some(mark_pos(ev.start_mark))));
                        }
                    }
                }
                break;
            }
        }
        Ok(self.into_tree())
    }

    /// Takes one event; says whether the tree is complete.
    fn event(&mut self, ev: Ev<'_>, pos: (usize, usize)) -> Result<Flow, BuildError> {
        let at = |e: TreeError| (e, Some(pos));
        match ev {
            Ev::End => return Ok(Flow::Stop),
            Ev::DocStart => {
                self.documents += 1;
                if self.documents > 1 {
                    // As PyYAML's `get_single_node`, which the reference uses.
                    return Err(at(TreeError::Syntax(
                        "expected a single document in the stream, but found another document".into(),
                    )));
                }
            }
            Ev::DocEnd => {
                if self.documents >= 1 && self.stack.is_empty() {
                    return Ok(Flow::Stop);
                }
            }
            Ev::Alias(anchor) => {
                let id = *self
                    .anchors
                    .get(&anchor)
                    .ok_or_else(|| at(TreeError::Syntax(format!("alias *{anchor} names no anchor"))))?;
                if let Some((tag, found)) = self.unchecked_items.get(&id) {
                    check_kind(Some(tag), found).map_err(at)?;
                }
                self.attach(id).map_err(at)?;
            }
            Ev::Scalar { anchor, tag, value, plain } => {
                let node = self.scalar(value, plain, tag, pos).map_err(at)?;
                let id = self.add(node).map_err(at)?;
                self.anchor(anchor, id).map_err(at)?;
                self.attach(id).map_err(at)?;
            }
            Ev::SeqStart { anchor, tag } => {
                // A merge key's list of mappings: PyYAML takes the items, never the
                // list's tag (`<<: !!map []` merges nothing).
                let merge_value = self.at_merge_value();
                let wrong_kind = check_kind(tag.as_deref(), "sequence");
                if !merge_value {
                    wrong_kind.clone().map_err(at)?;
                }
                // An anchored one of the wrong kind keeps its tag aside for its aliases.
                let (tag, unchecked) = match tag {
                    Some(t) if anchor.is_some() && wrong_kind.is_err() => (None, Some(t)),
                    _ if merge_value && anchor.is_none() => (None, None),
                    t => (t, None),
                };
                let id = self.open(collection_tag(tag), Value::Seq(Vec::new()), pos).map_err(at)?;
                if let Some(t) = unchecked {
                    self.unchecked_items.insert(id, (t, "sequence"));
                }
                self.anchor(anchor, id).map_err(at)?;
                self.stack.push(Frame::Seq { id, start: self.items.len(), merge: merge_value });
            }
            Ev::MapStart { anchor, tag } => {
                // An item of `!!omap` or `!!pairs` gives only its one pair, and a merge
                // key's mapping (or each mapping of its list) only its pairs: their own
                // tags are never constructed there (gwcs writes `!!omap` on each item).
                let pair_item = self.in_pairs_seq() || self.at_merge_value() || self.in_merge_list();
                let checked = check_kind(tag.as_deref(), "mapping");
                let wrong_kind = checked.is_err();
                if !pair_item {
                    checked.map_err(at)?;
                }
                // A tag of the wrong kind is not the node's (`<<: [!!omap {k: v}]` merges
                // a mapping); an anchored one is kept aside for its aliases.
                let (tag, unchecked) = match tag {
                    Some(t) if wrong_kind => (None, anchor.is_some().then_some(t)),
                    t => (t, None),
                };
                let id = self.open(collection_tag(tag), Value::Map(Vec::new()), pos).map_err(at)?;
                if let Some(t) = unchecked {
                    self.unchecked_items.insert(id, (t, "mapping"));
                }
                self.anchor(anchor, id).map_err(at)?;
                self.stack.push(Frame::Map { id, start: self.pairs.len(), key: None });
            }
            Ev::SeqEnd => {
                if let Some(Frame::Seq { id, start, .. }) = self.stack.pop() {
                    let items: Vec<NodeId> = self.items.drain(start..).collect();
                    self.finish_seq(id, items).map_err(at)?;
                    self.attach(id).map_err(at)?;
                }
            }
            Ev::MapEnd => {
                if let Some(Frame::Map { id, start, .. }) = self.stack.pop() {
                    let pairs: Vec<(NodeId, NodeId)> = self.pairs.drain(start..).collect();
                    self.finish_map(id, pairs).map_err(at)?;
                    self.attach(id).map_err(at)?;
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// The tag of the open sequence `up` levels above the innermost open collection (0:
    /// that collection itself), `None` when that is not a sequence or has no tag.
    fn seq_tag(&self, up: usize) -> Option<&str> {
        let i = self.stack.len().checked_sub(up + 1)?;
        match self.stack[i] {
            Frame::Seq { id, .. } => self.tree.nodes[id.0 as usize].tag.as_deref(),
            Frame::Map { .. } => None,
        }
    }

    /// Whether the innermost open collection is an `!!omap` or `!!pairs` sequence.
    fn in_pairs_seq(&self) -> bool {
        matches!(self.seq_tag(0), Some(OMAP_TAG | PAIRS_TAG))
    }

    /// Whether the innermost open collection is a merge key's list (`<<: [...]`).
    fn in_merge_list(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Seq { merge: true, .. }))
    }

    /// Whether the next node is the value of a merge key (`<<: !!pairs {a: 1}`): PyYAML
    /// takes that mapping's pairs, never its tag. (In an `!!omap` or `!!pairs` item,
    /// `<<` is a key like any other.)
    fn at_merge_value(&self) -> bool {
        !matches!(self.seq_tag(1), Some(OMAP_TAG | PAIRS_TAG))
            && matches!(self.stack.last(), Some(Frame::Map { key: Some(k), .. })
                if self.tree.nodes[k.0 as usize].tag.as_deref() == Some(MERGE_TAG))
    }

    fn add(&mut self, node: Node) -> Result<NodeId, TreeError> {
        Limits::check("max_nodes", self.tree.nodes.len() as u64 + 1, self.limits.max_nodes as u64)?;
        let len = self.tree.nodes.len();
        if len == self.tree.nodes.capacity() {
            // The arena is about to move: the helper must be done with it (dropping stops it).
            self.prefault = None;
        } else if len.is_multiple_of(1024)
            && let Some(p) = &self.prefault
        {
            p.filled(len * std::mem::size_of::<Node>());
        }
        Ok(self.tree.push(node))
    }

    fn open(&mut self, tag: Option<String>, value: Value, pos: (usize, usize)) -> Result<NodeId, TreeError> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(TreeError::TooDeep(self.limits.max_depth));
        }
        let (line, col) = (u32::try_from(pos.0).unwrap_or(u32::MAX), u32::try_from(pos.1).unwrap_or(u32::MAX));
        self.add(Node { tag, value, line, col })
    }

    /// Adds a finished node to the collection being built, or makes it the root.
    fn attach(&mut self, id: NodeId) -> Result<(), TreeError> {
        // An item of `!!pairs` becomes a (key, value) tuple there, whose key need not be
        // hashable.
        let pairs_item = self.seq_tag(1) == Some(PAIRS_TAG);
        // An `!!omap` or `!!pairs` item's key is constructed as it is: `=` stays the
        // value-tagged string (no longer hashable, for an ordered map's key).
        let keep_value_tag = pairs_item || self.seq_tag(1) == Some(OMAP_TAG);
        match self.stack.last_mut() {
            None => {
                if self.tree.root.is_none() {
                    self.tree.root = Some(id);
                }
            }
            Some(Frame::Seq { .. }) => self.items.push(id),
            Some(Frame::Map { key, .. }) => match key.take() {
                None => {
                    // PyYAML's keys must be hashable: not collections, nor the objects
                    // the reference makes of tagged scalars (`!foo a`, `!!foo a`). A key
                    // `=` (`!!value`) is the plain string "=" there.
                    let node = &mut self.tree.nodes[id.0 as usize];
                    if node.tag.as_deref() == Some(VALUE_TAG) && !keep_value_tag {
                        node.tag = None;
                    }
                    // (An item's `<<` is a key like any other, not a merge.)
                    let merge = node.tag.as_deref() == Some(MERGE_TAG) && !keep_value_tag;
                    if !pairs_item
                        && ((node.tag.is_some() && !merge) || matches!(node.value, Value::Seq(_) | Value::Map(_)))
                    {
                        return Err(TreeError::UnhashableKey);
                    }
                    *key = Some(id);
                }
                Some(k) => self.pairs.push((k, id)),
            },
        }
        Ok(())
    }

    fn scalar(
        &mut self,
        text: Cow<'_, str>,
        plain: bool,
        tag: Option<String>,
        pos: (usize, usize),
    ) -> Result<Node, TreeError> {
        let (line, col) = (u32::try_from(pos.0).unwrap_or(u32::MAX), u32::try_from(pos.1).unwrap_or(u32::MAX));
        let mk = |tag: Option<String>, value: Value| Node { tag, value, line, col };
        // The non-specific tag `!` (also `!<!>`), whatever the scalar's style, makes
        // PyYAML resolve it as a plain one: `! 'yes'` is true, `! '2001-12-14'` a
        // date (the reference writes history times so).
        let bang = tag.as_deref() == Some("!");
        // But `!` on no text at all (an empty node), whose event libyaml does not mark
        // implicit, makes a string.
        if (tag.is_none() && !plain) || (bang && plain && text.is_empty()) {
            return Ok(mk(None, Value::Str(CompactString::from(text))));
        }
        let full = match tag {
            Some(t) if !bang => t,
            _ => {
                // A block scalar's one final line break: PyYAML's patterns (`$`) still
                // match, and its constructors take the text with the break, which `int`
                // and `float` ignore but the tables of bools and of `.inf` and `.nan` do not.
                let (text, broken) = match strip_one_break(&text).filter(|_| bang) {
                    Some(t) => (Cow::Owned(t.to_string()), Some(text.into_owned())),
                    None => (text, None),
                };
                let resolved = resolve::resolve_plain(&text);
                if let Some(whole) = broken {
                    let special = || {
                        let v = text.replace('_', "").to_ascii_lowercase();
                        matches!(v.trim_start_matches(['+', '-']), ".inf" | ".nan")
                    };
                    let fails = match &resolved {
                        Resolved::Bool(_) => true,
                        Resolved::Float(_) => special(),
                        _ => false,
                    };
                    if fails {
                        return Err(TreeError::BadScalar { tag: "!".into(), text: whole });
                    }
                    // PyYAML picks its patterns by the first character, the break for a
                    // text that is nothing else: a string then.
                    let as_text = match resolved {
                        _ if text.is_empty() => Some(None),
                        Resolved::Merge => {
                            self.any_merge = true;
                            Some(Some(MERGE_TAG))
                        }
                        Resolved::Value => Some(Some(VALUE_TAG)),
                        Resolved::Str => Some(None),
                        _ => None,
                    };
                    if let Some(tag) = as_text {
                        return Ok(mk(tag.map(str::to_string), Value::Str(CompactString::from(whole))));
                    }
                }
                return Ok(match resolved {
                    Resolved::Null => mk(None, Value::Null),
                    Resolved::Bool(b) => mk(None, Value::Bool(b)),
                    Resolved::Int(i) => mk(None, Value::Int(i)),
                    Resolved::BigInt(i) => mk(None, Value::BigInt(Box::new(i))),
                    Resolved::Float(f) => mk(None, Value::Float(f)),
                    Resolved::Timestamp => {
                        // Shaped as a timestamp, so PyYAML makes a `datetime` of it, or fails.
                        if resolve::parse_timestamp(&text).is_none() {
                            let tag = format!("{YAML_TAG_PREFIX}timestamp");
                            return Err(TreeError::BadScalar { tag, text: text.into_owned() });
                        }
                        mk(None, Value::Timestamp(CompactString::from(text)))
                    }
                    Resolved::Merge => {
                        // Tagged so the mapping's end can find it; a merge key is a plain `<<`.
                        self.any_merge = true;
                        mk(Some(MERGE_TAG.into()), Value::Str(CompactString::from(text)))
                    }
                    Resolved::Value => mk(Some(VALUE_TAG.into()), Value::Str(CompactString::from(text))),
                    Resolved::Str => mk(None, Value::Str(CompactString::from(text))),
                });
            }
        };
        check_kind(Some(&full), "scalar")?;
        let bad = || TreeError::BadScalar { tag: full.clone(), text: text.to_string() };
        let Some(core) = full.strip_prefix(YAML_TAG_PREFIX) else {
            // Any other tag: the text, tagged (the reference keeps unknown tagged scalars
            // as strings).
            return Ok(mk(Some(full), Value::Str(CompactString::from(text))));
        };
        let core = core.to_string();
        if core == "merge" {
            // `!!merge <<` is a merge key too, as a plain `<<` is.
            self.any_merge = true;
            return Ok(mk(Some(full), Value::Str(CompactString::from(text))));
        }
        let value = match core.as_str() {
            "str" => Value::Str(CompactString::from(text)),
            "null" => Value::Null,
            // PyYAML looks an explicit bool up by its lower case (`!!bool tRue`).
            "bool" => Value::Bool(match text.to_ascii_lowercase().as_str() {
                "yes" | "true" | "on" => true,
                "no" | "false" | "off" => false,
                _ => return Err(bad()),
            }),
            "int" => match resolve::construct_int_explicit(&text).ok_or_else(bad)? {
                Resolved::Int(i) => Value::Int(i),
                Resolved::BigInt(i) => Value::BigInt(Box::new(i)),
                _ => return Err(bad()),
            },
            "float" => {
                let f = if resolve::is_float(&text) || text.contains(':') {
                    // (`!!float 1:60` is 120.0: PyYAML's constructor takes any base-60 form,
                    // and Python's float() of each part, spaces around it too.)
                    resolve::construct_float(&text.split(':').map(str::trim).collect::<Vec<_>>().join(":"))
                } else {
                    // `!!float 1` and `!!float 1e5`: Python's float() of the text, which
                    // takes spaces around it (`!!float |` of `0` and a break).
                    let t: String = text.chars().filter(|&c| c != '_').collect();
                    t.trim_matches(|c: char| c.is_whitespace()).parse::<f64>().ok()
                };
                Value::Float(f.ok_or_else(bad)?)
            }
            "binary" => Value::Binary(resolve::python_base64(&text).ok_or_else(bad)?),
            "timestamp" => {
                let t = strip_one_break(&text).unwrap_or(&text);
                if resolve::parse_timestamp(t).is_some() {
                    Value::Timestamp(CompactString::from(t))
                } else {
                    // PyYAML's constructor, unlike its resolver, takes a date alone with a
                    // one-digit month or day (`!!timestamp 2001-2-3`): kept as `2001-02-03`.
                    let parts: Vec<&str> = t.split('-').collect();
                    let ok = |p: &str, n: std::ops::RangeInclusive<usize>| {
                        n.contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit())
                    };
                    let date = match parts[..] {
                        [y, m, d] if ok(y, 4..=4) && ok(m, 1..=2) && ok(d, 1..=2) => format!("{y}-{m:0>2}-{d:0>2}"),
                        _ => return Err(bad()),
                    };
                    resolve::parse_timestamp(&date).ok_or_else(bad)?;
                    Value::Timestamp(CompactString::from(date))
                }
            }
            _ => return Ok(mk(Some(full), Value::Str(CompactString::from(text)))),
        };
        Ok(mk(None, value))
    }

    fn finish_seq(&mut self, id: NodeId, items: Vec<NodeId>) -> Result<(), TreeError> {
        match self.tree.nodes[id.0 as usize].tag.as_deref() {
            // `!!omap` and `!!pairs`: a list of one-pair mappings.
            Some(OMAP_TAG) => {
                let mut pairs = Vec::with_capacity(items.len());
                for &item in &items {
                    let p = self
                        .one_pair(item)
                        .ok_or_else(|| TreeError::Unexpected("!!omap items must be one-pair mappings".into()))?;
                    pairs.push(p);
                }
                // Keys repeated merge as in the reference's `OrderedDict`.
                let pairs = dedupe(&self.tree, pairs)?;
                self.tree.nodes[id.0 as usize].value = Value::Map(pairs);
            }
            Some(PAIRS_TAG) => {
                let mut out = Vec::with_capacity(items.len());
                for item in &items {
                    let p = self
                        .one_pair(*item)
                        .ok_or_else(|| TreeError::Unexpected("!!pairs items must be one-pair mappings".into()))?;
                    let (line, col) = (self.tree.nodes[item.0 as usize].line, self.tree.nodes[item.0 as usize].col);
                    out.push(self.add(Node { tag: None, value: Value::Seq(vec![p.0, p.1]), line, col })?);
                }
                let n = &mut self.tree.nodes[id.0 as usize];
                n.tag = None;
                n.value = Value::Seq(out);
            }
            _ => self.tree.nodes[id.0 as usize].value = Value::Seq(items),
        }
        Ok(())
    }

    /// The pair of an `!!omap` or `!!pairs` item: a mapping written with one pair.
    fn one_pair(&self, item: NodeId) -> Option<(NodeId, NodeId)> {
        match &self.tree.nodes[item.0 as usize].value {
            Value::Map(p) if p.len() == 1 && !self.folded_to_one.contains(&item) => Some(p[0]),
            _ => None,
        }
    }

    fn finish_map(&mut self, id: NodeId, pairs: Vec<(NodeId, NodeId)>) -> Result<(), TreeError> {
        // An `!!omap` or `!!pairs` item holds one pair as written (PyYAML counts before
        // any repeated key is merged).
        let item = self.in_pairs_seq();
        if item && pairs.len() != 1 {
            return Err(TreeError::Unexpected(format!("an ordered map item holds {} pairs, not one", pairs.len())));
        }
        let is_merge = |k: NodeId| self.tree.nodes[k.0 as usize].tag.as_deref() == Some(MERGE_TAG);
        let has_merge = self.any_merge && !item && pairs.iter().any(|&(k, _)| is_merge(k));
        if !has_merge {
            // The usual case: the pairs as they came, checked for duplicate keys.
            let written = pairs.len();
            let pairs = dedupe(&self.tree, pairs)?;
            if written > 1 && pairs.len() == 1 {
                self.folded_to_one.insert(id);
            }
            self.tree.nodes[id.0 as usize].value = Value::Map(pairs);
            return Ok(());
        }
        let mut merged: Vec<(NodeId, NodeId)> = Vec::new();
        let mut own: Vec<(NodeId, NodeId)> = Vec::with_capacity(pairs.len());
        {
            for (k, v) in pairs {
                if !is_merge(k) {
                    own.push((k, v));
                    continue;
                }
                match &self.tree.nodes[v.0 as usize].value {
                    Value::Map(p) => merged.extend_from_slice(p),
                    Value::Seq(subs) => {
                        let mut parts = Vec::new();
                        for s in subs {
                            let n = &self.tree.nodes[s.0 as usize];
                            match &n.value {
                                // (An `!!omap` is a sequence to PyYAML.)
                                Value::Map(p) if n.tag.as_deref() != Some(OMAP_TAG) => {
                                    parts.push(p.clone());
                                }
                                _ => return Err(TreeError::BadMerge),
                            }
                        }
                        for p in parts.into_iter().rev() {
                            merged.extend(p);
                        }
                    }
                    _ => return Err(TreeError::BadMerge),
                }
            }
        }
        merged.extend(own);
        // (PyYAML counts a merged mapping's pairs once merged, before folding.)
        let written = merged.len();
        let pairs = dedupe(&self.tree, merged)?;
        if written > 1 && pairs.len() == 1 {
            self.folded_to_one.insert(id);
        }
        self.tree.nodes[id.0 as usize].value = Value::Map(pairs);
        Ok(())
    }
}

/// Texts are parsed in parts of at least this many bytes. (A thread costs ~0.1 ms; but
/// where the second core of a virtual machine takes milliseconds to wake, as on the
/// machine the benchmarks ran on, parts of 170 KB gained nothing, parts of 1.4 MB a
/// quarter.)
const SPLIT_PART_MIN: usize = 512 << 10;

/// Nodes moved at a time when parts are joined (2 MiB of them).
const JOIN_RUN: usize = (2 << 20) / std::mem::size_of::<Node>();

/// Joins the trees of a split parse ([`Tree::parse_split`]): the first holds the
/// document's root mapping, each later one (node 0, its root) more entries of it. The
/// nodes keep the order of a parse of the whole text.
fn join_parts(parts: Vec<Tree>, limits: &Limits) -> Option<Tree> {
    let mut parts = parts.into_iter();
    let mut tree = parts.next()?;
    let root = tree.root?.0 as usize;
    let Value::Map(own) = &mut tree.nodes[root].value else { return None };
    let mut pairs = std::mem::take(own);
    for part in parts {
        let total = tree.nodes.len().checked_add(part.nodes.len())?;
        if part.root != Some(NodeId(0)) || total > limits.max_nodes || u32::try_from(total).is_err() {
            return None;
        }
        // Node k of the part becomes node `offset + k`; its node 0 is dropped.
        let offset = u32::try_from(tree.nodes.len() - 1).ok()?;
        let shift = |id: &mut NodeId| id.0 += offset;
        let shift_pair = |(k, v): &mut (NodeId, NodeId)| {
            shift(k);
            shift(v);
        };
        let from = part.nodes.as_ptr() as usize;
        let mut nodes = part.nodes.into_iter();
        let Some(Node { tag: None, value: Value::Map(mut more), .. }) = nodes.next() else { return None };
        more.iter_mut().for_each(shift_pair);
        pairs.append(&mut more);
        // Moved a run at a time, the part's pages given back as their nodes leave, so
        // that the part's nodes are not held twice (a tree of 200 000 entries: 15 MB).
        let mut released = from;
        while nodes.len() > 0 {
            tree.nodes.extend(nodes.by_ref().take(JOIN_RUN).map(|mut n| {
                match &mut n.value {
                    Value::Seq(items) => items.iter_mut().for_each(shift),
                    Value::Map(p) => p.iter_mut().for_each(shift_pair),
                    _ => {}
                }
                n
            }));
            let moved_to = nodes.as_slice().as_ptr() as usize;
            // SAFETY: `released..moved_to` lies in the part's arena, which `nodes` owns
            // until the end of this loop's scope, and holds only nodes moved out: the
            // iterator reads from `moved_to` on and frees the arena without reading it.
            released = unsafe { crate::hugepages::release(released, moved_to) };
        }
    }
    // Keys repeated across parts merge as in one mapping.
    let pairs = dedupe(&tree, pairs).ok()?;
    tree.nodes[root].value = Value::Map(pairs);
    Some(tree)
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

/// Events of the fast scanner, counted (for profiling only).
#[doc(hidden)]
pub fn fast_scan_count(text: &str) -> Option<usize> {
    let mut n = 0;
    let done = fast::scan(text, &mut |_, _| {
        n += 1;
        Ok::<bool, ()>(false)
    });
    done.ok().filter(|d| *d).map(|_| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Tree {
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

    /// A root mapping of `n` entries of many shapes, each `~60-200` bytes.
    fn many_entries(n: usize) -> String {
        let mut t = String::from("%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n");
        for i in 0..n {
            match i % 8 {
                0 => {
                    t += &format!("e{i}: !core/ndarray-1.1.0\n  source: {i}\n  shape: [3, {i}]\n  datatype: float64\n")
                }
                1 => t += &format!("e{i}: {{a: 1.5, b: value {i}, c: [x, 'y z', \"w\\t\"],\n  d: yes}}\n"),
                2 => t += &format!("'e{i}':\n  a: &a{i} [1, 2, {i}]\n  copy: *a{i}\n"),
                3 => t += &format!("e{i}:\n- 1\n- [nested, 0x1F]\n- k: v\n  m: ~\n"),
                4 => t += &format!("# a comment\n\ne{i}: plain text {i}  \n"),
                5 => t += &format!("\"e{i}\": !!str 017\ndup: {i}\n"),
                6 => t += &format!("e{i}:\n  deep:\n    deeper: {{x: !<tag:x.org:y-1.0> 1}}\n  list: []\n"),
                _ => t += &format!("e{i}: 2001-12-14t21:59:43.10-05:00\nempty{i}:\n"),
            }
        }
        t
    }

    fn whole(text: &str) -> Tree {
        Tree::parse_fast_whole(text, &Limits::default()).expect("the fast scanner takes it").expect("it parses")
    }

    #[test]
    fn parse_in_parts_is_the_parse_of_the_whole() {
        for (text, ends) in [(many_entries(200), ""), (many_entries(57), "...\n"), (many_entries(9), "...\r\n")] {
            let text = text + ends;
            let expected = whole(&text);
            for parts in 2..=7 {
                let split = Tree::parse_in_parts(&text, &Limits::default(), parts);
                assert!(split.as_ref() == Some(&expected), "{parts} parts of {} bytes", text.len());
            }
        }
        // Parts of many runs of nodes (moved a run at a time, their pages given back).
        let text = many_entries(24_000);
        let expected = whole(&text);
        assert!(expected.len() > 4 * JOIN_RUN, "{} nodes", expected.len());
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 2) == Some(expected), "many runs");
        // Nesting as deep as the scanner follows, in a part parsed on a spawned thread
        // (smaller stack than the main thread's).
        let text = format!("{}deep: {{a: {}1{}}}\n", many_entries(60), "[".repeat(120), "]".repeat(120));
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 2) == Some(whole(&text)), "deep");
        // Lines ending in CRLF: positions still count lines.
        let text = many_entries(40).replace('\n', "\r\n");
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 3) == Some(whole(&text)), "CRLF");
        // Keys repeated across parts: the last value, at the first place.
        let text = many_entries(64);
        let t = Tree::parse_in_parts(&text, &Limits::default(), 4).unwrap();
        assert_eq!(t.get("dup").unwrap().as_i64(), Some(61));
        assert_eq!(t.root().unwrap().pairs().unwrap().filter(|(k, _)| k.as_str() == Some("dup")).count(), 1);
    }

    #[test]
    fn parse_in_parts_declines_what_it_cannot_join() {
        let limits = Limits::default();
        let head = many_entries(30);
        let declined = |text: &str| {
            for parts in 2..=4 {
                let split = Tree::parse_in_parts(text, &limits, parts);
                assert!(split.is_none(), "{parts} parts of {:?}...", &text[text.len() - 40..]);
            }
        };
        // An alias to an anchor of an earlier part; a merge key; an anchor given again
        // in a later part (the whole parse's error).
        declined(&format!("{head}{}", "late: *a2\n".repeat(40)));
        let again = format!("{head}{}", "late: &a2 [1]\n".repeat(40));
        declined(&again);
        assert!(Tree::parse(&again, &limits).unwrap_err().0.to_string().contains("duplicate anchor &a2"));
        declined(&format!("{head}{}", "m: {<<: {a: 1}}\n".repeat(40)));
        // A key-like line at column 0 inside a flow collection or a quoted scalar.
        let cut_inside = |inner: &str| format!("{head}tail: [1,\n{inner}\n]\n{}", "x: 1\n".repeat(3));
        let text = cut_inside(&"k: 1,\n".repeat(400));
        assert_eq!(Tree::parse(&text, &limits).is_ok(), Tree::parse_libyaml(&text, &limits).is_ok());
        for parts in 2..=4 {
            if let Some(t) = Tree::parse_in_parts(&text, &limits, parts) {
                assert!(Some(Ok(t)) == Tree::parse_fast_whole(&text, &limits), "{parts} parts");
            }
        }
        declined(&format!("{head}q: \"{}\"\n", "word\n".repeat(400)));
        // The document ends in an early part and more follows: an error, as in PyYAML
        // (a file's tree text ends at its `...`, so this is never a file's).
        let text = format!("{head}...\n{}", "k: 1\n".repeat(400));
        declined(&text);
        let (err, _) = Tree::parse(&text, &limits).unwrap_err();
        assert!(err.to_string().contains("did not find expected <document start>"), "{err}");
        let text = format!("{head}...\n--- {}", "k: 1\n".repeat(400));
        let (err, _) = Tree::parse(&text, &limits).unwrap_err();
        assert!(err.to_string().contains("expected a single document"), "{err}");
        // A root that is not a block mapping, then key-like lines: invalid YAML.
        declined(&format!("--- [a,\n{}b]\n", "k: 1\n".repeat(400)));
        declined(&format!("--- {{a: 1}}\n{}", "k: 1\n".repeat(400)));
        declined(&format!("---\n- a\n{}", "k: 1\n".repeat(400)));
        // An error in a later part; the whole parse reports it, at its place.
        let text = format!("{head}{}bad: !!int x\n", "k: 1\n".repeat(400));
        declined(&text);
        let (err, pos) = Tree::parse(&text, &limits).unwrap_err();
        assert!(matches!(err, TreeError::BadScalar { .. }), "{err:?}");
        assert_eq!(pos.map(|p| p.0), Some(text.lines().count()));
        // Too many nodes altogether, though each part has few enough.
        let small = Limits { max_nodes: whole(&head).len() - 5, ..Limits::default() };
        assert!(Tree::parse_in_parts(&head, &small, 2).is_none());
    }

    #[test]
    fn tags_scalars_and_order() {
        let t = parse(
            "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\nb: yes\na: 1e5\nc: !!int '12'\nd: !<tag:x.org:y-1.0> 017\n...\n",
        );
        let root = t.root().unwrap();
        assert_eq!(root.tag(), Some("tag:stsci.edu:asdf/core/asdf-1.1.0"));
        let keys: Vec<String> = root.pairs().unwrap().map(|(k, _)| k.key_text()).collect();
        assert_eq!(keys, ["b", "a", "c", "d"]);
        assert_eq!(root.key("b").unwrap().as_bool(), Some(true));
        assert_eq!(root.key("a").unwrap().as_str(), Some("1e5"));
        assert_eq!(root.key("c").unwrap().as_i64(), Some(12));
        let d = root.key("d").unwrap();
        assert_eq!((d.tag(), d.as_str()), (Some("tag:x.org:y-1.0"), Some("017")));
        // Core tags at the versions the standards define, and only those.
        let t = parse(
            "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---\na: !core/ndarray-1.0.0 {}\nb: !core/ndarray-1.2.0 {}\nc: !core/ndarray-1.1.*a0 {}\nd: !core/ndarray-1.1 {}\ne: !core/ndarrays-1.0.0 {}\nf: !core/ndarray-7.1.0 {}\n",
        );
        let is_array: Vec<bool> =
            t.root().unwrap().pairs().unwrap().map(|(_, v)| v.is_asdf_tag("core/ndarray")).collect();
        assert_eq!(is_array, [true, true, false, false, false, false]);
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

    #[test]
    fn anchors_share_and_recursion_terminates() {
        let t = parse("a: &x [1, 2]\nb: *x\nc: &r [1, *r]\n");
        let root = t.root().unwrap();
        assert_eq!(root.key("a").unwrap().id(), root.key("b").unwrap().id());
        let c = root.key("c").unwrap();
        assert_eq!(c.index(1).unwrap().id(), c.id());
        let mut n = 0;
        t.walk(|_, _| n += 1);
        assert_eq!(n, 6);
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
    fn merge_keys_and_duplicates() {
        let t = parse("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nd: {k: 1, k: 2}\n");
        let m = t.get("m").unwrap();
        let got: Vec<(String, i64)> = m.pairs().unwrap().map(|(k, v)| (k.key_text(), v.as_i64().unwrap())).collect();
        assert_eq!(got, [("x".to_string(), 1), ("y".to_string(), 3)]);
        assert_eq!(t.get("d/k").unwrap().as_i64(), Some(2));
        assert_eq!(t.get("d").unwrap().pairs().unwrap().len(), 1);
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

    #[test]
    fn parser_panics_become_errors() {
        let r = Tree::parse("a: [!foo, 1]\n", &Limits::default());
        if let Err((e, _)) = r {
            assert!(matches!(e, TreeError::Syntax(_)));
        }
    }

    #[test]
    fn depth_limit() {
        let limits = Limits { max_depth: 100, ..Limits::default() };
        let err = Tree::parse(&"[".repeat(150), &limits).unwrap_err();
        assert_eq!(err.0, TreeError::TooDeep(100));
        // Far deeper than any limit: an error, not a stack overflow.
        assert!(Tree::parse(&"[".repeat(200_000), &Limits::default()).is_err());
        let block: String = (0..2000).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert_eq!(Tree::parse(&block, &Limits::default()).unwrap_err().0, TreeError::TooDeep(1000));
    }
}
