//! Building a [`Tree`] from parser events, libyaml's (through libyaml-safer) or the fast
//! scanner's ([`super::fast`]), as PyYAML's composer and `SafeConstructor`, which the
//! reference uses, build theirs: anchors and aliases, tags and the kinds of node core tags
//! allow, scalars resolved or constructed by their tags, `!!omap`, `!!pairs` and merge
//! keys, duplicate keys merged.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use libyaml_safer::{EventData, Parser, ScalarStyle};

#[cfg(feature = "fast-yaml")]
use super::fast;
use super::resolve::{self, Resolved};
use super::{
    CompactString, MERGE_TAG, Node, NodeId, OMAP_TAG, PAIRS_TAG, ParseError, Tree, TreeError, VALUE_TAG, Value,
    YAML_TAG_PREFIX, dedupe, emit,
};
use crate::Limits;

/// A block scalar's one final line break (not two), which PyYAML's patterns (`$`) still
/// pass: the text without it.
fn strip_one_break(text: &str) -> Option<&str> {
    text.strip_suffix('\n').filter(|t| !t.ends_with('\n'))
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

impl Tree {
    /// Parses the YAML text of a tree (the first document).
    ///
    /// # Errors
    /// [`TreeError`] with the line and column (1-based, inside `text`) where it happened.
    pub fn parse(text: &str, limits: &Limits) -> Result<Tree, ParseError> {
        // Without the feature `fast-yaml`, libyaml alone: the same trees and errors.
        #[cfg(not(feature = "fast-yaml"))]
        return Tree::parse_libyaml(text, limits);
        #[cfg(feature = "fast-yaml")]
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
            .and_then(|tree| within_depth(tree, limits))
    }

    /// [`Tree::parse`] with the fast scanner only; `None` when the text has YAML it
    /// leaves to libyaml. (With the feature `fast-yaml`.)
    #[cfg(feature = "fast-yaml")]
    #[doc(hidden)]
    pub fn parse_fast(text: &str, limits: &Limits) -> Option<Result<Tree, ParseError>> {
        let parsed = match Tree::parse_split(text, limits) {
            Some(tree) => Some(Ok(tree)),
            None => Tree::parse_fast_whole(text, limits),
        };
        parsed.map(|p| p.and_then(|tree| within_depth(tree, limits)))
    }

    /// [`Tree::parse_fast`] on one thread.
    #[cfg(feature = "fast-yaml")]
    pub(crate) fn parse_fast_whole(text: &str, limits: &Limits) -> Option<Result<Tree, ParseError>> {
        let mut b = Builder::new(limits, text.len(), true);
        let done = fast::scan(text, &mut b.sink());
        match done {
            Ok(true) => Some(Ok(b.into_tree())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// `tree`, when no path from its root, aliases followed (not back into a node being
/// walked: a cycle adds nothing), is deeper than `limits.max_depth` (as the text's own
/// nesting may be). Anchors let a path be far deeper than the text: a chain of lists each
/// 900 levels deep whose innermost item is an alias of the one before, the keys put in
/// the order that walks them last first, is a path of 50 000 levels in 100 KB, and every
/// walk that recurses (an emitter, a repr, a diff) would overflow the stack on it.
fn within_depth(tree: Tree, limits: &Limits) -> Result<Tree, ParseError> {
    let Some(root) = tree.root else { return Ok(tree) };
    // No node referred to twice (no alias), and the root by none: the text's nesting,
    // which the parse bounds, is the depth.
    let mut referred = vec![false; tree.nodes.len()];
    referred[root.0 as usize] = true;
    let shared = tree.nodes.iter().any(|n| {
        let mut refer = |c: NodeId| std::mem::replace(&mut referred[c.0 as usize], true);
        match &n.value {
            Value::Seq(items) => items.iter().any(|&c| refer(c)),
            Value::Map(pairs) => pairs.iter().any(|&(k, v)| refer(k) || refer(v)),
            _ => false,
        }
    });
    if !shared {
        return Ok(tree);
    }
    let max = limits.max_depth.saturating_add(1);
    // 0: not met, 1: on the path being walked, 2: done (its height known).
    let mut state = vec![0u8; tree.nodes.len()];
    let mut height = vec![0usize; tree.nodes.len()];
    let children = |id: NodeId| -> &[NodeId] {
        match &tree.nodes[id.0 as usize].value {
            Value::Seq(items) => items,
            _ => &[],
        }
    };
    // Mappings' keys and values, flattened once a mapping is met.
    let mut pairs_of: Vec<Vec<NodeId>> = Vec::new();
    let mut stack: Vec<(NodeId, usize, usize)> = vec![(root, 0, usize::MAX)];
    state[root.0 as usize] = 1;
    while let Some(&mut (id, ref mut next, ref mut pairs)) = stack.last_mut() {
        let node = &tree.nodes[id.0 as usize];
        let child = match &node.value {
            Value::Map(p) => {
                if *pairs == usize::MAX {
                    pairs_of.push(p.iter().flat_map(|&(k, v)| [k, v]).collect());
                    *pairs = pairs_of.len() - 1;
                }
                pairs_of[*pairs].get(*next).copied()
            }
            _ => children(id).get(*next).copied(),
        };
        *next += 1;
        match child {
            Some(c) => match state[c.0 as usize] {
                0 => {
                    state[c.0 as usize] = 1;
                    stack.push((c, 0, usize::MAX));
                }
                2 => {
                    let h = height[c.0 as usize] + 1;
                    height[id.0 as usize] = height[id.0 as usize].max(h);
                }
                _ => {}
            },
            None => {
                let h = height[id.0 as usize].max(1);
                if h > max {
                    return Err((TreeError::TooDeep(limits.max_depth), None));
                }
                height[id.0 as usize] = h;
                state[id.0 as usize] = 2;
                if *pairs != usize::MAX && *pairs + 1 == pairs_of.len() {
                    pairs_of.pop();
                }
                stack.pop();
                if let Some(&(parent, ..)) = stack.last() {
                    height[parent.0 as usize] = height[parent.0 as usize].max(h + 1);
                }
            }
        }
    }
    Ok(tree)
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

pub(super) struct Builder<'l> {
    /// The node arena's pages made present ahead of the parse (large texts only).
    /// First, so that on every path it is stopped before the arena is freed (fields
    /// drop in order).
    prefault: Option<crate::hugepages::Prefault>,
    limits: &'l Limits,
    tree: Tree,
    pub(super) anchors: HashMap<String, NodeId>,
    stack: Vec<Frame>,
    /// Items of the open sequences, innermost last.
    items: Vec<NodeId>,
    /// Pairs of the open mappings, innermost last.
    pairs: Vec<(NodeId, NodeId)>,
    /// Whether any `<<` (a node tagged [`MERGE_TAG`]) was read: a mapping's end looks
    /// for merge keys only then (by their tag).
    pub(super) any_merge: bool,
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

/// `!` alone (non-specific) and the default collection tags add nothing.
fn collection_tag(tag: Option<String>) -> Option<String> {
    tag.filter(|t| !matches!(t.as_str(), "!" | "tag:yaml.org,2002:seq" | "tag:yaml.org,2002:map"))
}

impl<'l> Builder<'l> {
    /// A builder for a text of `text_len` bytes; `helper`: whether a thread may make the
    /// arena's pages present ahead of the parse.
    pub(super) fn new(limits: &'l Limits, text_len: usize, helper: bool) -> Self {
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
    #[cfg(feature = "fast-yaml")]
    pub(super) fn sink<'s, 'a>(&'s mut self) -> impl FnMut(Ev<'a>, (usize, usize)) -> Result<bool, BuildError> + 's {
        let mut stopped = false;
        move |ev, pos| {
            if !stopped && self.event(ev, pos)? == Flow::Stop {
                stopped = true;
            }
            Ok(stopped)
        }
    }

    /// The tree built, the helper stopped.
    pub(super) fn into_tree(mut self) -> Tree {
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
                    let pair = self.add(Node { tag: None, value: Value::Seq(vec![p.0, p.1]), line, col })?;
                    self.tree.tuples.push(pair);
                    out.push(pair);
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

/// Events of the fast scanner, counted (for profiling only).
#[cfg(feature = "fast-yaml")]
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
    use super::super::tests::parse;
    use super::*;

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
