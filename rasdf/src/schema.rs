//! The ASDF Standard's schemas: [`validate`] checks a tree against them as `asdftool
//! validate` does ([`validate_with`] with extensions' schemas too, a [`Schemas`] loaded
//! from the folders their Python packages ship); and the defaults that the reference library fills into the tree of
//! a file of ASDF Standard 1.5.0 or older as it reads it, which this module fills too.
//!
//! asdf 6.0.0 (`legacy_fill_schema_defaults`, on by default) walks such a tree and, at
//! each node whose tag the file's standard lists, applies that tag's schema following
//! only `allOf`, `items` and `properties`: a mapping that lacks a property with a
//! `default` gets it, appended after the keys written. A mapping with a `$ref` key
//! (a JSON reference) is left alone, with everything under it. [`fill_defaults`] takes
//! the standard's own schemas, those [`validate`] uses: `description: ''` and `meta:
//! {}` of a `core/column-1.0.0`, `meta: {}` of a `core/table-1.0.0`, `data: null` of
//! each HDU of a `fits/fits-1.0.0`, and some of the older `wcs` tags.
//! [`fill_defaults_with`] takes the extensions' of a [`Schemas`] too, as the reference
//! fills with its installed extensions (a rotation's `direction`, a gwcs step's
//! `transform: null`, an astropy table's `qtable: false`...), every schema of a tag.
//!
//! [`crate::OpenOptions`] fills the standard's by default, as the reference does;
//! `OpenOptions::fill_defaults(false)` keeps the tree as written.

mod datatype;
mod extensions;
mod pattern;
mod validate;

pub use extensions::Schemas;
#[doc(hidden)]
pub use validate::catalog_is_complete;
pub use validate::{
    Annotated, Annotation, SchemaError, SchemaErrorKind, Strict, tags_without_schema, tags_without_schema_with,
    validate, validate_strict, validate_with,
};

/// Whether Python's `re.search(pattern, text)` finds a match in each of `texts`, as
/// validation searches (for the tests); `Err` says why the pattern cannot be checked.
#[doc(hidden)]
pub fn search_as_python(pattern: &str, texts: &[&str]) -> Result<Vec<bool>, String> {
    let mut p = pattern::Patterns::default();
    texts.iter().map(|t| p.search(pattern, t)).collect()
}

use std::collections::{HashMap, HashSet};

use crate::header::KNOWN_STANDARDS;
use crate::tree::{Node, NodeId, NodeRef, SET_TAG, Tree, Value};

/// Whether `schema` holds a `default` of a property on a path of `allOf`, `items` and
/// `properties`, the only keywords the reference's filling follows.
fn reaches_default(schema: NodeRef<'_>) -> bool {
    reaches_default_within(schema, &mut HashSet::new())
}

/// [`reaches_default`], each schema node looked into once (a schema whose aliases
/// reach a part by many paths, or from inside itself, costs no more).
fn reaches_default_within(schema: NodeRef<'_>, seen: &mut HashSet<NodeId>) -> bool {
    if !seen.insert(schema.id()) {
        return false;
    }
    let Some(pairs) = schema.pairs() else { return false };
    let pairs: Vec<_> = pairs.collect();
    pairs.into_iter().any(|(keyword, part)| match keyword.as_str() {
        Some("allOf") => part.items().is_some_and(|mut subs| subs.any(|s| reaches_default_within(s, seen))),
        Some("items") => match part.items() {
            Some(mut subs) => subs.any(|s| reaches_default_within(s, seen)),
            None => reaches_default_within(part, seen),
        },
        Some("properties") => part
            .pairs()
            .is_some_and(|mut p| p.any(|(_, sub)| sub.key("default").is_some() || reaches_default_within(sub, seen))),
        _ => false,
    })
}

/// Fills into `tree` the schema defaults the reference fills into the tree of a file of
/// ASDF Standard `standard` (none for 1.6.0 and later), from the standard's schemas.
/// Returns how many values it added.
pub fn fill_defaults(tree: &mut Tree, standard: &str) -> usize {
    fill_defaults_with(tree, standard, validate::no_schemas())
}

/// [`fill_defaults`] with the extensions of `schemas` too, as the reference fills them
/// with those extensions installed: at a node whose tag the standard lists or an
/// extension enabled for it defines, every schema of the tag is followed (through
/// `allOf`, `items` and `properties`, never `$ref`), as `asdf.schema.fill_defaults`
/// does on reading. Returns how many values it added.
pub fn fill_defaults_with(tree: &mut Tree, standard: &str, schemas: &Schemas) -> usize {
    // Nothing to fill for 1.6.0 and later: no walk of the nodes at all.
    if standard == "1.6.0" || !KNOWN_STANDARDS.contains(&standard) {
        return 0;
    }
    let Some(tags) = schemas.tag_map(standard) else { return 0 };
    let docs = validate::Docs::new(schemas);
    let mut filler = Filler { docs, tags, resolved: HashMap::new(), seen: HashSet::new(), added: 0 };
    // Most trees hold no tag whose schema has a default: one pass over the nodes
    // settles it (the tags' schemas resolved once each).
    let count = u32::try_from(tree.len()).unwrap_or(u32::MAX);
    let mut with_default: HashMap<(u32, NodeId), bool> = HashMap::new();
    let any = (0..count).any(|i| {
        let Some(tag) = tree.node(NodeId(i)).tag() else { return false };
        filler.schemas_of(tag).iter().any(|s| *with_default.entry(s.key()).or_insert_with(|| reaches_default(s.node)))
    });
    if !any {
        return 0;
    }
    let Some(root) = tree.root() else { return 0 };
    filler.run(tree, root.id())
}

/// The ASDF Standard to write a tree holding `tags` in (each tag with how many nodes
/// carry it), so that the reference reads back the objects they stand for: it converts
/// a tag only where the file's standard lists it (the standard's core manifest) or an
/// extension enabled for that standard defines it (`schemas`: the extensions installed;
/// [`Schemas::new`] for the standard's alone).
///
/// A tag fits a standard when the standard lists it, when it is a root, ndarray or
/// integer tag the writer writes at the standard's own version, or when no standard
/// (nor any extension of `schemas`) knows it: such a tag reads the same in every one.
/// The standard is `preferred` (the source file's) when every tag fits it, else the
/// newest that every tag fits; when none does, `preferred`, or the one most tagged
/// nodes fit (the newest of those).
pub fn standard_for_tags<'a>(
    tags: impl IntoIterator<Item = (&'a str, usize)>,
    preferred: Option<&str>,
    schemas: &Schemas,
) -> &'static str {
    let maps: Vec<(&'static str, &extensions::TagMap)> =
        KNOWN_STANDARDS.iter().filter_map(|&s| Some((s, schemas.tag_map(s)?))).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (tag, n) in tags {
        if maps.iter().any(|(_, m)| m.contains_key(tag)) {
            *counts.entry(tag).or_default() += n;
        }
    }
    let total: usize = counts.values().sum();
    let score = |standard: &str, map: &extensions::TagMap| -> usize {
        counts.iter().filter(|(t, _)| map.contains_key(**t) || rewritten_for(t, standard)).map(|(_, n)| n).sum()
    };
    let scores: Vec<(&'static str, usize)> = maps.iter().map(|(s, m)| (*s, score(s, m))).collect();
    if let Some(p) = preferred
        && let Some(&(s, n)) = scores.iter().find(|(s, _)| *s == p)
        && n == total
    {
        return s;
    }
    if let Some(&(s, _)) = scores.iter().rev().find(|(_, n)| *n == total) {
        return s;
    }
    if let Some(&(s, _)) = preferred.and_then(|p| scores.iter().find(|(s, _)| *s == p)) {
        return s;
    }
    // The most nodes, the newest of those (`max_by_key` keeps the last of equals).
    scores.iter().max_by_key(|(_, n)| *n).map_or("1.6.0", |(s, _)| s)
}

/// [`standard_for_tags`] of the tags of the nodes reachable from `tree`'s root.
pub fn standard_for_tree(tree: &Tree, preferred: Option<&str>, schemas: &Schemas) -> &'static str {
    let mut tags: HashMap<&str, usize> = HashMap::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeId> = tree.root().map(|r| r.id()).into_iter().collect();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let node = tree.node(id);
        if let Some(tag) = node.tag() {
            *tags.entry(tag).or_default() += 1;
        }
        match node.value() {
            Value::Map(pairs) => stack.extend(pairs.iter().flat_map(|&(k, v)| [k, v])),
            Value::Seq(items) => stack.extend(items.iter().copied()),
            _ => {}
        }
    }
    standard_for_tags(tags, preferred, schemas)
}

/// Whether the writer writes `tag` at the version `standard` lists: a root, ndarray or
/// integer tag of a version some standard defines (see `Emitter::for_standard`).
fn rewritten_for(tag: &str, standard: &str) -> bool {
    let Some((name, version)) = tag.strip_prefix(crate::tree::ASDF_TAG_PREFIX).and_then(|t| t.rsplit_once('-')) else {
        return false;
    };
    let known = match name {
        "core/ndarray" | "core/integer" => matches!(version, "1.0.0" | "1.1.0" | "1.2.0"),
        "core/asdf" => matches!(version, "1.0.0" | "1.1.0"),
        _ => false,
    };
    known && crate::tree::core_tag_version(&name["core/".len()..], standard).is_some()
}

/// A schema part, with the document it is in.
#[derive(Clone, Copy)]
struct Part<'c> {
    doc: u32,
    node: NodeRef<'c>,
}

impl Part<'_> {
    fn key(self) -> (u32, NodeId) {
        (self.doc, self.node.id())
    }
}

/// A step of the walk, kept on an explicit stack (trees may be deeper than the call
/// stack) in the order the reference's recursive validator takes them.
enum Step<'c> {
    /// Visit a node under a schema part (`None`: no schema, so every child is visited).
    Visit(NodeId, Option<Part<'c>>),
    /// Apply the keywords of a schema part to a node, from the `next`-th on.
    Apply(NodeId, Part<'c>, usize),
}

struct Filler<'c> {
    docs: validate::Docs<'c>,
    /// The tags of the file's standard (and enabled extensions), with their schemas' URIs.
    tags: &'c extensions::TagMap,
    /// Each tag's schemas, resolved when first met.
    resolved: HashMap<String, Vec<Part<'c>>>,
    /// (node, schema part) pairs already visited: aliases and cycles are visited once.
    seen: HashSet<(NodeId, Option<(u32, NodeId)>)>,
    added: usize,
}

impl<'c> Filler<'c> {
    /// The schemas of `tag` (none for a tag neither the standard nor an extension
    /// defines, and for schemas not found: the reference warns and goes on).
    fn schemas_of(&mut self, tag: &str) -> Vec<Part<'c>> {
        if let Some(parts) = self.resolved.get(tag) {
            return parts.clone();
        }
        let parts: Vec<Part<'c>> = match self.tags.get(tag) {
            Some(uris) => uris
                .iter()
                .filter_map(|uri| self.docs.resolve(None, uri).ok())
                .map(|(doc, node)| Part { doc, node })
                .collect(),
            None => Vec::new(),
        };
        self.resolved.insert(tag.to_string(), parts.clone());
        parts
    }

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

    fn visit(&mut self, tree: &Tree, id: NodeId, schema: Option<Part<'c>>, stack: &mut Vec<Step<'c>>) {
        if !self.seen.insert((id, schema.map(Part::key))) {
            return;
        }
        let node = tree.node(id);
        if node.key("$ref").is_some() {
            return;
        }
        // After the node's own tag schemas (pushed last, so taken first, in their
        // order), the part it came with.
        match schema {
            Some(s) => stack.push(Step::Apply(id, s, 0)),
            None => {
                for child in children(node).into_iter().rev() {
                    stack.push(Step::Visit(child, None));
                }
            }
        }
        if let Some(tag) = node.tag() {
            let own = self.schemas_of(tag);
            for part in own.into_iter().rev() {
                if schema.map(Part::key) != Some(part.key()) {
                    stack.push(Step::Visit(id, Some(part)));
                }
            }
        }
    }

    fn apply(&mut self, tree: &mut Tree, id: NodeId, schema: Part<'c>, next: usize, stack: &mut Vec<Step<'c>>) {
        let Some((keyword, part)) = schema.node.pairs().and_then(|mut p| p.nth(next)) else { return };
        stack.push(Step::Apply(id, schema, next + 1));
        let doc = schema.doc;
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
            stack.push(Step::Visit(child, Some(Part { doc, node: sub })));
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

/// A copy of the catalog's node `src` (a default value) added to `tree`: a node its
/// aliases reach again is copied once and shared, as in the schema (so a default that
/// holds itself is copied, not followed without end).
fn copy_in(tree: &mut Tree, src: NodeRef<'_>) -> NodeId {
    copy_in_within(tree, src, &mut HashMap::new())
}

fn copy_in_within(tree: &mut Tree, src: NodeRef<'_>, copied: &mut HashMap<NodeId, NodeId>) -> NodeId {
    if let Some(&id) = copied.get(&src.id()) {
        return id;
    }
    let id = tree.push(Node { tag: src.tag().map(str::to_string), value: Value::Null, line: 0, col: 0 });
    copied.insert(src.id(), id);
    let value = match src.value() {
        Value::Seq(items) => {
            Value::Seq(items.iter().map(|&i| copy_in_within(tree, src.tree().node(i), copied)).collect())
        }
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|&(k, v)| {
                    (copy_in_within(tree, src.tree().node(k), copied), copy_in_within(tree, src.tree().node(v), copied))
                })
                .collect(),
        ),
        other => other.clone(),
    };
    tree.set_value(id, value);
    id
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
        let has = |standard: &str, tag: &str| {
            let mut filler = Filler {
                docs: validate::Docs::new(validate::no_schemas()),
                tags: validate::no_schemas().tag_map(standard).unwrap(),
                resolved: HashMap::new(),
                seen: HashSet::new(),
                added: 0,
            };
            standard != "1.6.0"
                && filler.schemas_of(&format!("tag:stsci.edu:asdf/{tag}")).iter().any(|s| reaches_default(s.node))
        };
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

    /// Extension schemas fill as the reference's installed extensions do: every schema
    /// of the tag in order, for the standards the extension admits, under core nodes too.
    #[test]
    fn extension_schemas_fill_their_defaults() {
        let mut schemas = Schemas::new();
        let thing = "%YAML 1.1\n---\nid: asdf://x.org/schemas/thing-1.0.0\ntype: object\n\
                     properties:\n  kind: {default: plain}\n  inner:\n    properties:\n      n: {default: 3}\n...\n";
        let extra = "%YAML 1.1\n---\nid: asdf://x.org/schemas/extra-1.0.0\n\
                     allOf:\n- properties:\n    flag: {default: false}\n- $ref: thing-1.0.0\n...\n";
        schemas.add_document("asdf://x.org/schemas/thing-1.0.0", thing).unwrap();
        schemas.add_document("asdf://x.org/schemas/extra-1.0.0", extra).unwrap();
        let uris = vec!["asdf://x.org/schemas/thing-1.0.0".to_string(), "asdf://x.org/schemas/extra-1.0.0".to_string()];
        schemas.add_extension(Some(">=1.1.0,<1.6.0"), vec![("asdf://x.org/tags/thing-1.0.0".into(), uris)]).unwrap();
        let text = "t: !<asdf://x.org/tags/thing-1.0.0> {inner: {m: 1}}\n\
                    c: !<tag:stsci.edu:asdf/core/column-1.0.0>\n  name: a\n  \
                    data: !<asdf://x.org/tags/thing-1.0.0> {kind: given}\n";
        let mut t = tree(text);
        // The standard's own schemas alone: the column's defaults only.
        assert_eq!(fill_defaults(&mut t, "1.5.0"), 2);
        assert!(t.get("t/kind").is_none());
        let mut t = tree(text);
        assert_eq!(fill_defaults_with(&mut t, "1.5.0", &schemas), 2 + 3 + 1);
        // As the reference's recursion goes: under the first schema, the node's other
        // tag schemas are applied before the first one's own keywords.
        assert_eq!(keys(&t, "t"), ["inner", "flag", "kind"]);
        assert_eq!(keys(&t, "t/inner"), ["m", "n"]);
        assert_eq!(t.get("t/inner/n").unwrap().as_i64(), Some(3));
        // A tagged node under a core node gets its own tag's defaults (`$ref` is not followed).
        assert_eq!(keys(&t, "c/data"), ["kind", "flag"]);
        assert_eq!(t.get("c/data/kind").unwrap().as_str(), Some("given"));
        // The extension admits neither 1.0.0 nor 1.6.0.
        for standard in ["1.0.0", "1.6.0"] {
            let mut t = tree(text);
            fill_defaults_with(&mut t, standard, &schemas);
            assert!(t.get("t/kind").is_none(), "{standard}");
        }
    }

    #[test]
    fn schemas_and_defaults_that_hold_themselves_are_followed_once() {
        // A schema whose `properties` hold themselves, with a default holding itself.
        let mut schemas = Schemas::new();
        let loop_ = "%YAML 1.1\n---\nid: asdf://x.org/schemas/loop-1.0.0\n\
                     properties: &p\n  a: {properties: *p}\n  b: {properties: *p}\n  d: {default: &d [1, *d]}\n...\n";
        schemas.add_document("asdf://x.org/schemas/loop-1.0.0", loop_).unwrap();
        let uris = vec!["asdf://x.org/schemas/loop-1.0.0".to_string()];
        schemas.add_extension(None, vec![("asdf://x.org/tags/loop-1.0.0".into(), uris)]).unwrap();
        let mut t = tree("t: !<asdf://x.org/tags/loop-1.0.0> {a: {b: {}}}\n");
        assert_eq!(fill_defaults_with(&mut t, "1.5.0", &schemas), 3);
        let d = t.get("t/d").unwrap();
        assert_eq!(d.index(0).unwrap().as_i64(), Some(1));
        // The copy holds itself, as the schema's default does.
        assert_eq!(d.index(1).unwrap().id(), d.id());
        assert_eq!(t.get("t/a/b/d").unwrap().index(0).unwrap().as_i64(), Some(1));
    }

    #[test]
    fn the_standard_written_fits_the_tags() {
        let core = Schemas::new();
        let q = "tag:stsci.edu:asdf/unit/quantity-1.1.0";
        let nd = "tag:stsci.edu:asdf/core/ndarray-1.0.0";
        let root = "tag:stsci.edu:asdf/core/asdf-1.1.0";
        let pick = |tags: &[&str], preferred: Option<&str>, s: &Schemas| {
            standard_for_tags(tags.iter().map(|t| (*t, 1)), preferred, s)
        };
        // No tag a standard knows: the preferred one, else the newest.
        assert_eq!(pick(&[], None, &core), "1.6.0");
        assert_eq!(pick(&["asdf://x.org/tags/mine-1.0.0", root, nd], None, &core), "1.6.0");
        assert_eq!(pick(&[nd], Some("1.2.0"), &core), "1.2.0");
        // A quantity-1.1.0: listed by 1.1.0 to 1.5.0.
        assert_eq!(pick(&[q, nd, root], None, &core), "1.5.0");
        assert_eq!(pick(&[q], Some("1.3.0"), &core), "1.3.0");
        assert_eq!(pick(&[q], Some("1.6.0"), &core), "1.5.0");
        assert_eq!(pick(&[q], Some("1.0.0"), &core), "1.5.0");
        // core/integer exists from 1.3.0 on.
        assert_eq!(pick(&["tag:stsci.edu:asdf/core/integer-1.0.0", q], Some("1.1.0"), &core), "1.5.0");
        // An extension's tags, for the standards it admits; none fits both: the
        // preferred one, else the one most nodes fit.
        let mut ext = Schemas::new();
        ext.add_extension(Some(">=1.6.0"), vec![("asdf://x.org/tags/new-1.0.0".into(), Vec::new())]).unwrap();
        let new = "asdf://x.org/tags/new-1.0.0";
        assert_eq!(pick(&[new, nd], None, &ext), "1.6.0");
        assert_eq!(pick(&[new, nd], Some("1.4.0"), &ext), "1.6.0");
        assert_eq!(pick(&[new, q], Some("1.4.0"), &ext), "1.4.0");
        assert_eq!(standard_for_tags([(new, 1), (q, 2)], None, &ext), "1.5.0");
        assert_eq!(standard_for_tags([(new, 3), (q, 2)], None, &ext), "1.6.0");
        let t = tree(&format!("a: !<{q}> {{value: 1}}\nb: [!<{nd}> {{data: [1]}}]\n"));
        assert_eq!(standard_for_tree(&t, None, &core), "1.5.0");
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
