//! The ASDF Standard's schemas: [`validate`] checks a tree against them as `asdftool
//! validate` does ([`validate_with`] with extensions' schemas too, a [`Schemas`] loaded
//! from the folders their Python packages ship); and the defaults that the reference library fills into the tree of
//! a file of ASDF Standard 1.5.0 or older as it reads it, which this module fills too.
//!
//! asdf 6.0.0 (`legacy_fill_schema_defaults`, on by default) walks such a tree and, at
//! each node whose tag the file's standard lists, applies that tag's schema following
//! only `allOf`, `items` and `properties`: a mapping that lacks a property with a
//! `default` gets it, appended after the keys written. A mapping with a `$ref` key
//! (a JSON reference) is left alone, with everything under it. The schemas are the
//! standard's own, those [`validate`] uses; the few with a default on such a path are
//! found in them once: `description: ''` and `meta: {}`
//! of a `core/column-1.0.0`, `meta: {}` of a `core/table-1.0.0`, `data: null` of each
//! HDU of a `fits/fits-1.0.0`, and some of the older `wcs` tags.
//!
//! [`crate::OpenOptions`] fills them by default, as the reference does;
//! `OpenOptions::fill_defaults(false)` keeps the tree as written.

mod datatype;
mod extensions;
mod pattern;
mod validate;

pub use extensions::Schemas;
#[doc(hidden)]
pub use validate::catalog_is_complete;
pub use validate::{
    SchemaError, SchemaErrorKind, tags_without_schema, tags_without_schema_with, validate, validate_with,
};

/// Whether Python's `re.search(pattern, text)` finds a match in each of `texts`, as
/// validation searches (for the tests); `Err` says why the pattern cannot be checked.
#[doc(hidden)]
pub fn search_as_python(pattern: &str, texts: &[&str]) -> Result<Vec<bool>, String> {
    let mut p = pattern::Patterns::default();
    texts.iter().map(|t| p.search(pattern, t)).collect()
}

use std::collections::HashSet;

use crate::header::KNOWN_STANDARDS;
use crate::tree::{Node, NodeId, NodeRef, SET_TAG, Tree, Value};

/// The schema of `tag` when standard `standard` lists it and the schema holds a default
/// the walk reaches; none from 1.6.0 on (the reference fills nothing there).
fn default_schema(standard: &str, tag: &str) -> Option<NodeRef<'static>> {
    if standard == "1.6.0" || !KNOWN_STANDARDS.contains(&standard) {
        return None;
    }
    validate::default_schema(standard, tag)
}

/// Whether `schema` holds a `default` of a property on a path of `allOf`, `items` and
/// `properties`, the only keywords the reference's filling follows.
fn reaches_default(schema: NodeRef<'_>) -> bool {
    let Some(pairs) = schema.pairs() else { return false };
    let pairs: Vec<_> = pairs.collect();
    pairs.into_iter().any(|(keyword, part)| match keyword.as_str() {
        Some("allOf") => part.items().is_some_and(|mut subs| subs.any(reaches_default)),
        Some("items") => match part.items() {
            Some(mut subs) => subs.any(reaches_default),
            None => reaches_default(part),
        },
        Some("properties") => {
            part.pairs().is_some_and(|mut p| p.any(|(_, sub)| sub.key("default").is_some() || reaches_default(sub)))
        }
        _ => false,
    })
}

/// Fills into `tree` the schema defaults the reference fills into the tree of a file of
/// ASDF Standard `standard` (none for 1.6.0 and later). Returns how many values it added.
pub fn fill_defaults(tree: &mut Tree, standard: &str) -> usize {
    // Nothing to fill for 1.6.0 and later: no walk of the nodes at all.
    if standard == "1.6.0" || !KNOWN_STANDARDS.contains(&standard) {
        return 0;
    }
    let count = u32::try_from(tree.len()).unwrap_or(u32::MAX);
    let tagged = |id: u32| tree.node(NodeId(id)).tag().and_then(|t| default_schema(standard, t));
    // Most trees hold no tag with a default: one pass over the nodes settles it.
    if !(0..count).any(|i| tagged(i).is_some()) {
        return 0;
    }
    let Some(root) = tree.root() else { return 0 };
    Filler { standard, seen: HashSet::new(), added: 0 }.run(tree, root.id())
}

/// A step of the walk, kept on an explicit stack (trees may be deeper than the call
/// stack) in the order the reference's recursive validator takes them.
enum Step<'c> {
    /// Visit a node under a schema part (`None`: no schema, so every child is visited).
    Visit(NodeId, Option<NodeRef<'c>>),
    /// Apply the keywords of a schema part to a node, from the `next`-th on.
    Apply(NodeId, NodeRef<'c>, usize),
}

struct Filler<'s> {
    /// The file's standard.
    standard: &'s str,
    /// (node, schema part) pairs already visited: aliases and cycles are visited once.
    seen: HashSet<(NodeId, Option<NodeId>)>,
    added: usize,
}

impl<'c> Filler<'c> {
    fn run(mut self, tree: &mut Tree, root: NodeId) -> usize {
        let mut stack = vec![Step::Visit(root, None)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit(id, schema) => self.visit(tree, id, schema, &mut stack),
                Step::Apply(id, schema, next) => self.apply(tree, id, schema, next, &mut stack),
            }
        }
        self.added
    }

    fn visit(&mut self, tree: &Tree, id: NodeId, schema: Option<NodeRef<'c>>, stack: &mut Vec<Step<'c>>) {
        if !self.seen.insert((id, schema.map(|s| s.id()))) {
            return;
        }
        let node = tree.node(id);
        if node.key("$ref").is_some() {
            return;
        }
        // After the node's own tag schema (pushed last, so taken first), the part it came with.
        match schema {
            Some(s) => stack.push(Step::Apply(id, s, 0)),
            None => {
                for child in children(node).into_iter().rev() {
                    stack.push(Step::Visit(child, None));
                }
            }
        }
        if let Some(own) = node.tag().and_then(|t| default_schema(self.standard, t))
            && schema.map(|s| s.id()) != Some(own.id())
        {
            stack.push(Step::Visit(id, Some(own)));
        }
    }

    fn apply(&mut self, tree: &mut Tree, id: NodeId, schema: NodeRef<'c>, next: usize, stack: &mut Vec<Step<'c>>) {
        let Some((keyword, part)) = schema.pairs().and_then(|mut p| p.nth(next)) else { return };
        stack.push(Step::Apply(id, schema, next + 1));
        let node = tree.node(id);
        let mut visits: Vec<(NodeId, NodeRef<'c>)> = Vec::new();
        match keyword.as_str() {
            Some("allOf") => visits.extend(part.items().into_iter().flatten().map(|sub| (id, sub))),
            Some("items") if is_array(node) => {
                let items: Vec<NodeId> = node.items().into_iter().flatten().map(|n| n.id()).collect();
                match part.items() {
                    // A list of schemas: the n-th item under the n-th.
                    Some(subs) => visits.extend(items.into_iter().zip(subs).collect::<Vec<_>>()),
                    None => visits.extend(items.into_iter().map(|item| (item, part))),
                }
            }
            Some("properties") if is_object(node) => {
                for (name, sub) in part.pairs().into_iter().flatten() {
                    let (Some(name), Some(default)) = (name.as_str(), sub.key("default")) else { continue };
                    if tree.node(id).key(name).is_none() {
                        let k = tree.push(Node { tag: None, value: Value::Str(name.into()), line: 0, col: 0 });
                        let v = copy_in(tree, default);
                        tree.push_pair(id, k, v);
                        self.added += 1;
                    }
                }
                let node = tree.node(id);
                visits.extend(
                    part.pairs()
                        .into_iter()
                        .flatten()
                        .filter_map(|(name, sub)| Some((node.key(name.as_str()?)?.id(), sub))),
                );
            }
            _ => {}
        }
        for (child, sub) in visits.into_iter().rev() {
            stack.push(Step::Visit(child, Some(sub)));
        }
    }
}

/// A Python `dict` once read: a mapping, not a `!!set`.
fn is_object(node: NodeRef<'_>) -> bool {
    matches!(node.value(), Value::Map(_)) && node.tag() != Some(SET_TAG)
}

/// A Python `list` or `tuple` once read: a sequence.
fn is_array(node: NodeRef<'_>) -> bool {
    matches!(node.value(), Value::Seq(_))
}

/// The nodes a walk without a schema goes on to: a mapping's values and a list's items;
/// none under a `!!set` (a Python `set`) or a `!!pairs` item (a tuple there, which the
/// reference's walk stops at).
fn children(node: NodeRef<'_>) -> Vec<NodeId> {
    if node.tree().is_tuple(node.id()) {
        return Vec::new();
    }
    match node.tag() {
        Some(SET_TAG) => Vec::new(),
        _ => match node.value() {
            Value::Map(pairs) => pairs.iter().map(|&(_, v)| v).collect(),
            Value::Seq(items) => items.clone(),
            _ => Vec::new(),
        },
    }
}

/// A copy of the catalog's node `src` (a default value) added to `tree`.
fn copy_in(tree: &mut Tree, src: NodeRef<'_>) -> NodeId {
    let value = match src.value() {
        Value::Seq(items) => Value::Seq(items.iter().map(|&i| copy_in(tree, src.tree().node(i))).collect()),
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|&(k, v)| (copy_in(tree, src.tree().node(k)), copy_in(tree, src.tree().node(v))))
                .collect(),
        ),
        other => other.clone(),
    };
    tree.push(Node { tag: src.tag().map(str::to_string), value, line: 0, col: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Tree {
        Tree::parse(text, &crate::Limits::default()).unwrap()
    }

    fn keys(t: &Tree, path: &str) -> Vec<String> {
        t.get(path).unwrap().pairs().unwrap().map(|(k, _)| k.as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn the_tags_with_defaults_are_those_the_reference_fills() {
        let has = |standard: &str, tag: &str| default_schema(standard, &format!("tag:stsci.edu:asdf/{tag}")).is_some();
        for tag in ["core/column-1.0.0", "core/table-1.0.0", "fits/fits-1.0.0"] {
            assert!(has("1.5.0", tag) && has("1.0.0", tag) && !has("1.6.0", tag), "{tag}");
        }
        // Defaults only under `anyOf` (ndarray, time) are never filled; a tag another
        // standard lists is not this one's.
        for tag in ["core/ndarray-1.0.0", "time/time-1.1.0", "core/asdf-1.1.0", "core/software-1.0.0"] {
            assert!(!has("1.5.0", tag), "{tag}");
        }
        assert!(has("1.0.0", "wcs/step-1.0.0") && !has("1.5.0", "wcs/step-1.0.0"));
    }

    #[test]
    fn columns_and_tables_get_their_defaults_after_the_keys_written() {
        let text = "t: !<tag:stsci.edu:asdf/core/table-1.0.0>\n  columns:\n  \
                    - !<tag:stsci.edu:asdf/core/column-1.0.0> {name: a, data: [1], meta: {x: 1}}\n";
        let mut t = tree(text);
        assert_eq!(fill_defaults(&mut t, "1.5.0"), 2);
        assert_eq!(keys(&t, "t"), ["columns", "meta"]);
        assert_eq!(keys(&t, "t/columns/0"), ["name", "data", "meta", "description"]);
        assert_eq!(t.get("t/columns/0/description").unwrap().as_str(), Some(""));
        assert_eq!(t.get("t/columns/0/meta/x").unwrap().as_i64(), Some(1));
        // Standard 1.6.0 fills nothing, nor does a tag the standard does not list.
        let mut t = tree(text);
        assert_eq!(fill_defaults(&mut t, "1.6.0"), 0);
        let mut t = tree("s: !<tag:stsci.edu:asdf/wcs/step-1.0.0> {frame: a}\n");
        assert_eq!(fill_defaults(&mut t, "1.5.0"), 0);
        assert_eq!(fill_defaults(&mut t, "1.0.0"), 1);
        assert!(t.get("s/transform").unwrap().is_null());
    }

    #[test]
    fn nested_properties_items_and_all_of_are_followed() {
        let text = "f: !<tag:stsci.edu:asdf/fits/fits-1.0.0>\n- {header: []}\n- 7\n\
                    - !<tag:stsci.edu:asdf/core/table-1.0.0> {columns: []}\n\
                    c: !<tag:stsci.edu:asdf/wcs/icrs_coord-1.1.0> {ra: {value: 1}, dec: 5}\n\
                    s: !<tag:stsci.edu:asdf/wcs/spectral_frame-1.1.0> {name: x}\n";
        let mut t = tree(text);
        assert_eq!(fill_defaults(&mut t, "1.1.0"), 6);
        assert!(t.get("f/0/data").unwrap().is_null());
        // The item's own tag first, then the fits schema.
        assert_eq!(keys(&t, "f/2"), ["columns", "meta", "data"]);
        assert_eq!(keys(&t, "c/ra"), ["value", "unit", "wrap_angle"]);
        assert_eq!(t.get("c/ra/wrap_angle").unwrap().as_str(), Some("360 deg"));
        assert_eq!(t.get("s/reference_position").unwrap().as_str(), Some("geocenter"));
    }

    #[test]
    fn references_are_left_and_cycles_visited_once() {
        let col = "!<tag:stsci.edu:asdf/core/column-1.0.0>";
        let text = format!(
            "r: {{$ref: 'x.asdf#/a', c: {col} {{name: a}}}}\n\
             a: &a {col} {{name: c, self: *a}}\nb: *a\n"
        );
        let mut t = tree(&text);
        assert_eq!(fill_defaults(&mut t, "1.5.0"), 2);
        assert!(t.get("r/c/description").is_none());
        assert_eq!(keys(&t, "a"), ["name", "self", "description", "meta"]);
    }

    #[test]
    fn a_deep_tree_does_not_exhaust_the_stack() {
        let depth = 100_000;
        let mut t = Tree::empty();
        let mut inner = t.push(Node {
            tag: Some("tag:stsci.edu:asdf/core/table-1.0.0".into()),
            value: Value::Map(Vec::new()),
            line: 0,
            col: 0,
        });
        for _ in 0..depth {
            inner = t.push(Node { tag: None, value: Value::Seq(vec![inner]), line: 0, col: 0 });
        }
        t.set_root(inner);
        assert_eq!(fill_defaults(&mut t, "1.5.0"), 1);
    }
}
