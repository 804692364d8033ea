//! Validation of a tree against the ASDF Standard's schemas, as `asdftool validate` does
//! it: every node whose tag the file's standard lists (its core manifest) is checked
//! against that tag's schema, the root among them; with [`Schemas`], also every node
//! whose tag an extension enabled for the standard defines, against each of the tag's
//! schemas.
//!
//! The bundled schemas are the standard's own (`schemas/standard/`, from asdf-standard
//! 1.5.0, BSD-3-Clause): the core, fits, time, unit, wcs and base transform ones its
//! manifests reach. The JSON Schema draft 4 keywords (the only ones the reference's
//! validator knows, whatever a schema's `$schema`) are applied as the reference's
//! `jsonschema` validator applies them: a bool is neither an integer nor a number, an
//! integer is a number, a timestamp passes `type: string` only with `format: date-time`,
//! `pattern` searches (it is not anchored), `enum` tells `true` from `1`, `anyOf` stops
//! at the first branch met; plus ASDF's `tag` keyword (`*` matching any text but `/`,
//! `**` any text) and, on `core/ndarray` nodes, `ndim`, `max_ndim` and `datatype` (with
//! `exact_datatype`). A `$ref` of the standard's schemas to one that is not there (the
//! standard's package no longer ships `transform-1.1.0` and `transform-1.2.0`) is taken
//! as met; one of a schema the caller gave is a check that cannot be made. Each pair of a
//! node and a schema is checked once, so aliases (recursive ones too) cost nothing more;
//! checks nested deeper than `MAX_DEPTH` steps are skipped, and a validation stops after
//! `MAX_CHECKS` checks (saying so), so hostile schemas cannot make it run long.
//! Annotations (`default`, `propertyOrder`, `flowStyle`, `examples`...) are not checked;
//! filling defaults is [`super::fill_defaults`]'s job.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::datatype;
use super::extensions::{Schemas, TagMap};
use super::pattern::Patterns;
use crate::limits::Limits;
use crate::tree::{NodeId, NodeRef, SET_TAG, Tree, Value};

/// A node that does not meet its tag's schema, or whose check could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The tree path of the node that failed (JSON Pointer escapes, as elsewhere).
    pub path: String,
    /// What failed.
    pub message: String,
    /// The schema whose check failed (`core/ndarray-1.1.0`).
    pub schema: String,
    /// Whether the node fails, or whether it meets the schema could not be told.
    pub kind: SchemaErrorKind,
}

/// What a [`SchemaError`] says of its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaErrorKind {
    /// The node does not meet the schema.
    Invalid,
    /// Whether the node meets the schema cannot be told: a `pattern` that cannot be
    /// compiled (Python syntax the regex engine has not, such as look-around, or over the
    /// compile budget of a validation), or the validation ran out of its budget. Never a
    /// pass: the tree is not known to be valid.
    CannotCheck,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        let cannot = if self.kind == SchemaErrorKind::CannotCheck { "cannot check: " } else { "" };
        write!(f, "tree path {path}: {cannot}{}", self.message)?;
        if !self.schema.is_empty() {
            write!(f, " (schema {})", self.schema)?;
        }
        Ok(())
    }
}

macro_rules! schemas {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../schemas/standard/", $name, ".yaml")))),*]
    };
}

/// The bundled schemas, by their path under `http://stsci.edu/schemas/asdf/`.
const SCHEMAS: &[(&str, &str)] = schemas![
    "core/asdf-1.0.0",
    "core/asdf-1.1.0",
    "core/column-1.0.0",
    "core/complex-1.0.0",
    "core/constant-1.0.0",
    "core/extension_metadata-1.0.0",
    "core/externalarray-1.0.0",
    "core/history_entry-1.0.0",
    "core/integer-1.0.0",
    "core/integer-1.1.0",
    "core/ndarray-1.0.0",
    "core/ndarray-1.1.0",
    "core/software-1.0.0",
    "core/subclass_metadata-1.0.0",
    "core/table-1.0.0",
    "fits/fits-1.0.0",
    "time/time-1.0.0",
    "time/time-1.1.0",
    "transform/domain-1.0.0",
    "transform/transform-1.0.0",
    "unit/defunit-1.0.0",
    "unit/quantity-1.1.0",
    "unit/unit-1.0.0",
    "wcs/celestial_frame-1.0.0",
    "wcs/celestial_frame-1.1.0",
    "wcs/composite_frame-1.0.0",
    "wcs/composite_frame-1.1.0",
    "wcs/frame-1.0.0",
    "wcs/frame-1.1.0",
    "wcs/icrs_coord-1.1.0",
    "wcs/spectral_frame-1.0.0",
    "wcs/spectral_frame-1.1.0",
    "wcs/step-1.0.0",
    "wcs/step-1.1.0",
    "wcs/step-1.2.0",
    "wcs/wcs-1.0.0",
    "wcs/wcs-1.1.0",
    "wcs/wcs-1.2.0",
];

/// The core manifests: the tags each standard lists, with their schemas.
const MANIFESTS: &[(&str, &str)] = &[
    ("1.0.0", include_str!("../../schemas/standard/manifests/core-1.0.0.yaml")),
    ("1.1.0", include_str!("../../schemas/standard/manifests/core-1.1.0.yaml")),
    ("1.2.0", include_str!("../../schemas/standard/manifests/core-1.2.0.yaml")),
    ("1.3.0", include_str!("../../schemas/standard/manifests/core-1.3.0.yaml")),
    ("1.4.0", include_str!("../../schemas/standard/manifests/core-1.4.0.yaml")),
    ("1.5.0", include_str!("../../schemas/standard/manifests/core-1.5.0.yaml")),
    ("1.6.0", include_str!("../../schemas/standard/manifests/core-1.6.0.yaml")),
];

pub(super) const SCHEMA_PREFIX: &str = "http://stsci.edu/schemas/asdf/";

/// The schemas, by name (`core/ndarray-1.1.0`), and each standard's tags with the name
/// of their schema; each parsed when first needed, so that opening a file (which fills
/// defaults from a few of them) does not parse them all.
struct Catalog {
    schemas: Vec<LazySchema>,
    by_name: HashMap<&'static str, usize>,
    tags: HashMap<&'static str, OnceLock<HashMap<String, usize>>>,
}

struct LazySchema {
    name: &'static str,
    /// `SCHEMA_PREFIX` and the name: the base of its relative `$ref`s.
    uri: String,
    text: &'static str,
    /// `None` if it did not parse: it is missing then, and the `$ref`s to it are taken
    /// as met (a test makes sure every one parses).
    tree: OnceLock<Option<Tree>>,
}

impl Catalog {
    /// The root of schema `doc`.
    fn root(&'static self, doc: usize) -> Option<NodeRef<'static>> {
        let s = &self.schemas[doc];
        s.tree.get_or_init(|| Tree::parse(s.text, &Limits::default()).ok()).as_ref()?.root()
    }

    /// The tags standard `standard` lists, with their schemas' places.
    fn tags(&self, standard: &str) -> Option<&HashMap<String, usize>> {
        let (&standard, cell) = self.tags.get_key_value(standard)?;
        let text = MANIFESTS.iter().find(|(s, _)| *s == standard)?.1;
        Some(cell.get_or_init(|| manifest_tags(text, &self.by_name)))
    }
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let schemas = SCHEMAS
            .iter()
            .map(|&(name, text)| LazySchema {
                name,
                uri: format!("{SCHEMA_PREFIX}{name}"),
                text,
                tree: OnceLock::new(),
            })
            .collect();
        let by_name = SCHEMAS.iter().enumerate().map(|(i, (name, _))| (*name, i)).collect();
        let tags = MANIFESTS.iter().map(|&(standard, _)| (standard, OnceLock::new())).collect();
        Catalog { schemas, by_name, tags }
    })
}

/// A manifest's tags, each with the place of its schema in the catalog.
fn manifest_tags(text: &str, by_name: &HashMap<&'static str, usize>) -> HashMap<String, usize> {
    let Ok(tree) = Tree::parse(text, &Limits::default()) else { return HashMap::new() };
    let Some(list) = tree.root().and_then(|r| r.key("tags")) else { return HashMap::new() };
    let entries: Vec<NodeRef<'_>> = list.items().into_iter().flatten().collect();
    entries
        .into_iter()
        .filter_map(|entry| {
            let tag = entry.key("tag_uri")?.as_str()?;
            let schema = entry.key("schema_uri")?.as_str()?.strip_prefix(SCHEMA_PREFIX)?;
            Some((tag.to_string(), *by_name.get(schema)?))
        })
        .collect()
}

/// The tags the bundled core manifest of `standard` lists, with their schemas' URIs (for
/// [`Schemas`]' tag maps, which start from them).
pub(super) fn core_tags(standard: &str) -> TagMap {
    let c = catalog();
    let Some(tags) = c.tags(standard) else { return TagMap::new() };
    tags.iter().map(|(tag, &doc)| (tag.clone(), vec![c.schemas[doc].uri.clone()])).collect()
}

/// Whether every bundled schema and manifest parses (for the tests).
#[doc(hidden)]
pub fn catalog_is_complete() -> bool {
    let c = catalog();
    // Every schema parses, and every tag of every manifest has its schema here.
    (0..c.schemas.len()).all(|doc| c.root(doc).is_some())
        && MANIFESTS.iter().all(|(s, text)| c.tags(s).is_some_and(|t| t.len() == text.matches("tag_uri:").count()))
}

/// The bundled schemas and the documents of a [`Schemas`], as one list: the bundled ones
/// first, then the added ones.
#[derive(Clone, Copy)]
pub(super) struct Docs<'c> {
    catalog: &'static Catalog,
    extra: &'c Schemas,
    /// Whether the bundled schemas are among the documents ([`validate_strict`] takes the
    /// caller's alone).
    with_bundled: bool,
}

impl<'c> Docs<'c> {
    pub(super) fn new(extra: &'c Schemas) -> Docs<'c> {
        Docs { catalog: catalog(), extra, with_bundled: true }
    }

    fn bundled(&self) -> u32 {
        if !self.with_bundled {
            return 0;
        }
        u32::try_from(self.catalog.schemas.len()).unwrap_or(u32::MAX)
    }

    /// The root of document `doc`; `None` when it does not parse.
    fn root(&self, doc: u32) -> Option<NodeRef<'c>> {
        match doc.checked_sub(self.bundled()) {
            None => self.catalog.root(doc as usize),
            Some(i) => self.extra.docs.get(i as usize)?.tree().ok()?.root(),
        }
    }

    /// Why document `doc` does not parse, when it does not.
    fn broken(&self, doc: u32) -> Option<&'c str> {
        let i = doc.checked_sub(self.bundled())?;
        self.extra.docs.get(i as usize)?.tree().err()
    }

    /// Node `id` of document `doc`.
    fn node(&self, doc: u32, id: NodeId) -> Option<NodeRef<'c>> {
        let root = self.root(doc)?;
        ((id.0 as usize) < root.tree().len()).then(|| root.tree().node(id))
    }

    /// The name of document `doc` in messages (`core/ndarray-1.1.0`, a full URI).
    fn name(&self, doc: u32) -> &'c str {
        match doc.checked_sub(self.bundled()) {
            None => self.catalog.schemas[doc as usize].name,
            Some(i) => self.extra.docs.get(i as usize).map_or("", |d| d.name.as_str()),
        }
    }

    /// The URI the relative `$ref`s of document `doc` resolve against.
    fn base(&self, doc: u32) -> &'c str {
        match doc.checked_sub(self.bundled()) {
            None => self.catalog.schemas[doc as usize].uri.as_str(),
            Some(i) => self.extra.docs.get(i as usize).map_or("", |d| d.base.as_str()),
        }
    }

    /// The document known by `uri`: a bundled one first.
    fn lookup(&self, uri: &str) -> Option<u32> {
        if self.with_bundled
            && let Some(name) = uri.strip_prefix(SCHEMA_PREFIX)
            && let Some(&doc) = self.catalog.by_name.get(name)
        {
            return u32::try_from(doc).ok();
        }
        self.extra.lookup(uri)?.checked_add(self.bundled())
    }

    /// The schema node `reference` names (`#/definitions/x`, `other-1.0.0#/x`, a full
    /// URI), relative to document `from` (`None`: a full URI): its document and node.
    pub(super) fn resolve(&self, from: Option<u32>, reference: &str) -> Result<(u32, NodeRef<'c>), Unresolved> {
        let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let doc = match (target, from) {
            ("", Some(doc)) => Some(doc),
            (_, Some(doc)) => self.lookup(&join_uri(self.base(doc), target)),
            (_, None) => self.lookup(target),
        };
        let doc = doc.ok_or(Unresolved::Missing)?;
        let mut node = match self.root(doc) {
            Some(root) => root,
            None if self.broken(doc).is_some() => return Err(Unresolved::Broken(doc)),
            None => return Err(Unresolved::Missing),
        };
        // A JSON Pointer, `%XX` decoded first, as the reference's resolver reads it.
        let fragment = crate::uri::unescape(fragment);
        let fragment = String::from_utf8_lossy(&fragment);
        for step in fragment.trim_start_matches('/').split('/').filter(|s| !s.is_empty()) {
            let step = step.replace("~1", "/").replace("~0", "~");
            let next = match node.items() {
                Some(_) => step.parse().ok().and_then(|i| node.index(i)),
                None => node.key(&step),
            };
            node = next.ok_or(Unresolved::Missing)?;
        }
        Ok((doc, node))
    }

    /// Whether `uri` (with a fragment or not) names a document known.
    fn knows(&self, uri: &str) -> bool {
        self.lookup(uri.split('#').next().unwrap_or(uri)).is_some()
    }

    /// The URI of the document `reference` (relative to document `from`) names, when no
    /// document is known by it.
    fn unknown_document(&self, from: Option<u32>, reference: &str) -> Option<String> {
        let target = reference.split('#').next().unwrap_or(reference);
        let uri = match from {
            Some(_) if target.is_empty() => return None,
            Some(doc) => join_uri(self.base(doc), target),
            None => target.to_string(),
        };
        self.lookup(&uri).is_none().then_some(uri)
    }
}

/// A reference resolved: the document and node it names, or why none.
type Target = Result<(u32, NodeId), Unresolved>;

/// Why a reference names no schema node.
#[derive(Clone, Copy, Debug)]
pub(super) enum Unresolved {
    /// No document of that URI, or no node at that fragment: taken as met.
    Missing,
    /// The document does not parse: an error.
    Broken(u32),
}

/// `reference` resolved against `base` (RFC 3986, as `urljoin` resolves it for the
/// `http`, `https`, `file` and `asdf` schemes); a reference with a scheme is itself.
fn join_uri(base: &str, reference: &str) -> String {
    let has_scheme = |s: &str| {
        s.split_once(':').is_some_and(|(scheme, _)| {
            scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
    };
    if has_scheme(reference) || reference.is_empty() {
        return reference.to_string();
    }
    // Only a hierarchical base (`scheme://authority/path`) takes relative references.
    let Some((scheme, rest)) = base.split_once("://") else { return reference.to_string() };
    if let Some(net) = reference.strip_prefix("//") {
        return format!("{scheme}://{net}");
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let merged = if reference.starts_with('/') {
        reference.to_string()
    } else {
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{dir}{reference}")
    };
    // Remove the dot segments.
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = merged.split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("{scheme}://{authority}{}", out.join("/"))
}

/// No documents added: the standard's schemas alone.
pub(super) fn no_schemas() -> &'static Schemas {
    static NONE: OnceLock<Schemas> = OnceLock::new();
    NONE.get_or_init(Schemas::new)
}

/// Validates `tree`, a file of ASDF Standard `standard` (`None`: not stated, 1.0.0 as
/// the reference takes it), against the schemas of the tags that standard lists; returns
/// every failure, in tree order. A standard rasdf has no manifest for is not validated.
pub fn validate(tree: &Tree, standard: Option<&str>) -> Vec<SchemaError> {
    validate_with(tree, standard, no_schemas())
}

/// [`validate`] with the extensions of `schemas` too: a node whose tag an extension
/// enabled for `standard` defines is checked against every schema of the tag, as the
/// reference checks it with those extensions installed (see [`Schemas`]).
pub fn validate_with(tree: &Tree, standard: Option<&str>, schemas: &Schemas) -> Vec<SchemaError> {
    let Some(tags) = schemas.tag_map(standard.unwrap_or("1.0.0")) else { return Vec::new() };
    let docs = Docs::new(schemas);
    let mut v = Validator::new(docs, tree, false);
    // Each tag's schemas, resolved when first met.
    let mut resolved: HashMap<&str, Vec<Target>> = HashMap::new();
    walk(tree, |path, node| {
        let Some((tag, uris)) = node.tag().and_then(|t| tags.get_key_value(t)) else { return };
        let targets = resolved
            .entry(tag.as_str())
            .or_insert_with(|| uris.iter().map(|u| docs.resolve(None, u).map(|(d, n)| (d, n.id()))).collect());
        let path = path();
        for target in targets.iter() {
            match *target {
                Ok((doc, id)) => {
                    if let Some(schema) = docs.node(doc, id) {
                        v.check(node, At { schema, doc }, &path, 0);
                    }
                }
                Err(Unresolved::Broken(doc)) => v.broken(doc, &path),
                Err(Unresolved::Missing) => {}
            }
        }
    });
    if v.checks > v.budget {
        v.quiet = 0;
        v.errors.push(SchemaError {
            path: String::new(),
            message: format!("validation stopped after {} checks: the schemas ask for too much work", v.budget),
            schema: String::new(),
            kind: SchemaErrorKind::CannotCheck,
        });
    }
    v.errors
}

/// A schema's document and node.
type Place = (u32, NodeId);

/// What [`validate_strict`] tells of a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Strict {
    /// Valid, every check made as the reference's validator makes it. The annotations
    /// are what that validator stores on the nodes as it checks them (asdf's
    /// `property_order`, `flow_style` and `style`, which its YAML writer follows), at most
    /// one of a kind a node.
    Valid(Vec<Annotated>),
    /// A node fails a schema.
    Invalid,
    /// Not known: a check that cannot be made, or not as the reference makes it (a
    /// schema that is not among the documents, annotations met where the reference's
    /// order decides whether it stores them, two values of one annotation on a node...).
    /// `missing` names the documents needed that are not there.
    Unsure {
        /// The URIs of the documents needed and not there.
        missing: Vec<String>,
    },
}

/// An annotation the reference's validator stores on a node ([`Strict::Valid`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    /// The node.
    pub node: NodeId,
    /// What it stores.
    pub annotation: Annotation,
}

/// The annotations of ASDF's schemas that the reference's validator stores on the node
/// checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Annotation {
    /// `propertyOrder`: the keys a mapping is written with first, in this order.
    PropertyOrder(Vec<String>),
    /// `flowStyle`: how a mapping or sequence is written (`flow`, `block`).
    FlowStyle(String),
    /// `style`: how a string is written (`literal`, `folded`...).
    Style(String),
}

impl Annotation {
    fn kind(&self) -> u8 {
        match self {
            Annotation::PropertyOrder(_) => 0,
            Annotation::FlowStyle(_) => 1,
            Annotation::Style(_) => 2,
        }
    }
}

/// Validates `tree` as asdf's validator validates a tree it is about to write, and tells
/// only what it can be sure of: "valid" only when every check was made as that validator
/// makes it. Every node reached through mappings and sequences (not into a mapping with
/// a `$ref` key) whose tag `tags` lists is checked against each of the tag's schemas, as
/// the reference's extension manager defines them; the schemas are the documents of
/// `schemas` alone (not the bundled ones), as its resource manager holds them. A schema
/// URI, or a `$ref`, that names no document makes it [`Strict::Unsure`], naming the
/// document, where [`validate_with`] takes it as met.
pub fn validate_strict(tree: &Tree, tags: &HashMap<String, Vec<String>>, schemas: &Schemas) -> Strict {
    let docs = Docs { with_bundled: false, ..Docs::new(schemas) };
    let mut v = Validator::new(docs, tree, true);
    // Each tag's schemas, resolved when first met (`Err`: the URI of one not there).
    let mut resolved: HashMap<&str, Vec<Result<Place, &String>>> = HashMap::new();
    walk(tree, |path, node| {
        let Some((tag, uris)) = node.tag().and_then(|t| tags.get_key_value(t)) else { return };
        let targets = resolved.entry(tag.as_str()).or_insert_with(|| {
            uris.iter().map(|u| docs.resolve(None, u).map(|(d, n)| (d, n.id())).map_err(|_| u)).collect()
        });
        for target in targets.iter() {
            match target {
                Ok((doc, id)) => {
                    if let Some(schema) = docs.node(*doc, *id) {
                        v.check(node, At { schema, doc: *doc }, &path(), 0);
                    }
                }
                // asdf warns of a tag's schema it cannot find: its validator tells.
                Err(uri) => v.missing(docs.unknown_document(None, uri).or_else(|| Some((*uri).clone()))),
            }
        }
    });
    let log = v.strict.take().unwrap_or_default();
    if v.errors.iter().any(|e| e.kind == SchemaErrorKind::Invalid) {
        return Strict::Invalid;
    }
    if log.unsure || !v.errors.is_empty() || v.checks > v.budget {
        return Strict::Unsure { missing: log.missing };
    }
    // One of a kind a node: the same one met again is kept once, two that differ are a
    // matter of the order the reference meets them in.
    let mut kept: HashMap<(NodeId, u8), usize> = HashMap::new();
    let mut out: Vec<Annotated> = Vec::new();
    for a in log.annotations {
        match kept.get(&(a.node, a.annotation.kind())) {
            Some(&i) if out[i] == a => {}
            Some(_) => return Strict::Unsure { missing: Vec::new() },
            None => {
                kept.insert((a.node, a.annotation.kind()), out.len());
                out.push(a);
            }
        }
    }
    Strict::Valid(out)
}

/// Every node reachable from the root once (aliases once), depth first, with a maker of
/// its path; not under a mapping with a `$ref` key (a JSON reference, which the
/// reference's validator does not enter).
fn walk<'t>(tree: &'t Tree, mut visit: impl FnMut(&dyn Fn() -> String, NodeRef<'t>)) {
    let Some(root) = tree.root() else { return };
    let mut seen = vec![false; tree.len()];
    // (node, depth, step that reached it: a key node or an index); `steps` holds the
    // steps to the node being visited.
    let mut stack: Vec<(NodeRef<'t>, usize, Result<NodeRef<'t>, usize>)> = vec![(root, 0, Err(0))];
    let mut steps: Vec<Result<NodeRef<'t>, usize>> = Vec::new();
    while let Some((node, depth, step)) = stack.pop() {
        if std::mem::replace(&mut seen[node.id().0 as usize], true) {
            continue;
        }
        steps.truncate(depth.saturating_sub(1));
        if depth > 0 {
            steps.push(step);
        }
        if node.key("$ref").is_some() {
            continue;
        }
        let path = || {
            let mut p = String::new();
            for s in &steps {
                p.push('/');
                match s {
                    Ok(key) => p.push_str(&escape(&key.key_text())),
                    Err(i) => p.push_str(&i.to_string()),
                }
            }
            p
        };
        visit(&path, node);
        match node.value() {
            Value::Seq(items) => {
                for (i, &c) in items.iter().enumerate().rev() {
                    stack.push((tree.node(c), depth + 1, Err(i)));
                }
            }
            Value::Map(pairs) => {
                for &(k, v) in pairs.iter().rev() {
                    stack.push((tree.node(v), depth + 1, Ok(tree.node(k))));
                }
            }
            _ => {}
        }
    }
}

/// The tags of `tree` that [`validate`] has no schema for under standard `standard`
/// (tags no manifest of it lists: an extension's, a core tag of another standard), each
/// with how many nodes carry it, in tag order: what validation did not check. YAML's own
/// tags (`tag:yaml.org,2002:...`) have no schema to have, and are not listed.
pub fn tags_without_schema(tree: &Tree, standard: Option<&str>) -> Vec<(String, usize)> {
    tags_without_schema_with(tree, standard, no_schemas())
}

/// [`tags_without_schema`] with the extensions of `schemas`: a tag they define for the
/// standard, with a schema that is among the documents, is validated (not listed); one
/// defined without a schema, or whose schemas are missing, is listed.
pub fn tags_without_schema_with(tree: &Tree, standard: Option<&str>, schemas: &Schemas) -> Vec<(String, usize)> {
    let tags = schemas.tag_map(standard.unwrap_or("1.0.0"));
    let docs = Docs::new(schemas);
    let mut out: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    tree.walk(|_, node| {
        let Some(tag) = node.tag() else { return };
        if tag.starts_with("tag:yaml.org,2002:") {
            return;
        }
        let checked = tags.and_then(|m| m.get(tag)).is_some_and(|uris| uris.iter().any(|u| docs.knows(u)));
        if !checked {
            *out.entry(tag.to_owned()).or_default() += 1;
        }
    });
    out.into_iter().collect()
}

/// A schema node and the schema document it is in (for `$ref`s relative to it).
#[derive(Clone, Copy)]
struct At<'c> {
    schema: NodeRef<'c>,
    /// The document's place in [`Docs`].
    doc: u32,
}

/// An instance node, a schema document and a node in it, packed as `node << 64 | doc <<
/// 32 | schema node`.
type Pair = u128;

fn pair(node: NodeRef<'_>, at: At<'_>) -> Pair {
    (u128::from(node.id().0) << 64) | (u128::from(at.doc) << 32) | u128::from(at.schema.id().0)
}

/// The hasher of [`Pair`]s: they are distinct numbers already, so one multiply spreads
/// them (the default SipHash took a fifth of the validation time).
#[derive(Default)]
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    // The two halves folded into one (the truncations are the point).
    #[allow(clippy::cast_possible_truncation)]
    fn write_u128(&mut self, n: u128) {
        let folded = (n as u64) ^ ((n >> 64) as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        self.write_u64(folded);
    }
}

struct Validator<'c> {
    docs: Docs<'c>,
    /// (instance node, schema document, schema node) pairs already checked.
    seen: HashSet<Pair, std::hash::BuildHasherDefault<PairHasher>>,
    /// Inside a branch tried for its verdict alone (`anyOf`), failures are only counted.
    quiet: usize,
    /// The pairs of `seen` in the order they were added, so that a branch tried and
    /// dropped (`anyOf`) takes its own back.
    journal: Vec<Pair>,
    /// The `pattern`s and `patternProperties` met, compiled within a shared budget.
    patterns: Patterns,
    /// The verdicts of the pairs tried for their verdict alone ([`Validator::meets`]).
    verdicts: HashMap<Pair, Verdict, std::hash::BuildHasherDefault<PairHasher>>,
    /// Why the verdicts [`Verdict::Unknown`] name are not known.
    reasons: Vec<SchemaError>,
    /// Each `$ref` met (by document and node), resolved.
    refs: HashMap<(u32, NodeId), Target>,
    /// The documents that do not parse already told of.
    broken_told: HashSet<u32>,
    /// The checks that cannot be made already told of (by schema and message).
    unchecked_told: HashSet<(String, String)>,
    errors: Vec<SchemaError>,
    /// Checks made, and how many may be: past the budget nothing more is checked.
    checks: usize,
    budget: usize,
    /// For [`validate_strict`]: what it records beside the errors.
    strict: Option<Box<StrictLog>>,
}

/// What [`validate_strict`] records beside the errors.
#[derive(Default)]
struct StrictLog {
    annotations: Vec<Annotated>,
    /// How many branches tried for their verdict alone the checks are inside, which the
    /// reference's validator stops at their first failure (`not`, and the `oneOf`
    /// branches after the first met): what it stores there depends on its order.
    lazy: usize,
    /// A check not made as the reference's validator makes it.
    unsure: bool,
    /// The documents needed and not there.
    missing: Vec<String>,
}

/// Whether a node meets a schema part, tried alone ([`Validator::meets`]).
#[derive(Clone, Copy)]
enum Verdict {
    Met,
    Failed,
    /// Not known: a check it needs cannot be made, for the reason of that index of
    /// [`Validator::reasons`].
    Unknown(usize),
}

/// How deep the checks nest (`$ref`s, combinators and the instance's own levels, a few
/// steps a level); deeper parts are not checked, so a deep tree cannot exhaust the
/// stack. Inline data 100 levels deep, or a datatype nesting 300 records, goes past it.
const MAX_DEPTH: usize = 256;

/// The checks (pairs of a node and a schema part) one validation makes at most, or
/// [`CHECKS_PER_NODE`] a node of the tree if more: schemas whose alternatives nest
/// (`anyOf` in `anyOf`...) could otherwise ask for exponential work. A validation that
/// runs out says so, as an error.
const MAX_CHECKS: usize = 20_000_000;
const CHECKS_PER_NODE: usize = 2_000;

/// The keywords of a schema part, found in one pass.
#[derive(Default)]
struct Keywords<'c> {
    tag: Option<NodeRef<'c>>,
    kind: Option<NodeRef<'c>>,
    format: Option<NodeRef<'c>>,
    options: Option<NodeRef<'c>>,
    minimum: Option<NodeRef<'c>>,
    maximum: Option<NodeRef<'c>>,
    exclusive_minimum: Option<NodeRef<'c>>,
    exclusive_maximum: Option<NodeRef<'c>>,
    multiple_of: Option<NodeRef<'c>>,
    min_length: Option<NodeRef<'c>>,
    max_length: Option<NodeRef<'c>>,
    pattern: Option<NodeRef<'c>>,
    required: Option<NodeRef<'c>>,
    dependencies: Option<NodeRef<'c>>,
    properties: Option<NodeRef<'c>>,
    pattern_properties: Option<NodeRef<'c>>,
    additional_properties: Option<NodeRef<'c>>,
    min_properties: Option<NodeRef<'c>>,
    max_properties: Option<NodeRef<'c>>,
    items: Option<NodeRef<'c>>,
    additional_items: Option<NodeRef<'c>>,
    min_items: Option<NodeRef<'c>>,
    max_items: Option<NodeRef<'c>>,
    unique_items: Option<NodeRef<'c>>,
    all_of: Option<NodeRef<'c>>,
    any_of: Option<NodeRef<'c>>,
    one_of: Option<NodeRef<'c>>,
    not: Option<NodeRef<'c>>,
    ndim: Option<NodeRef<'c>>,
    max_ndim: Option<NodeRef<'c>>,
    datatype: Option<NodeRef<'c>>,
    exact_datatype: Option<NodeRef<'c>>,
    property_order: Option<NodeRef<'c>>,
    flow_style: Option<NodeRef<'c>>,
    style: Option<NodeRef<'c>>,
}

impl<'c> Keywords<'c> {
    fn of(schema: NodeRef<'c>) -> Keywords<'c> {
        let mut k = Keywords::default();
        for (key, value) in schema.pairs().into_iter().flatten() {
            let Value::Str(key) = key.value() else { continue };
            let slot = match key.as_str() {
                "tag" => &mut k.tag,
                "type" => &mut k.kind,
                "format" => &mut k.format,
                "enum" => &mut k.options,
                "minimum" => &mut k.minimum,
                "maximum" => &mut k.maximum,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "multipleOf" => &mut k.multiple_of,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "pattern" => &mut k.pattern,
                "required" => &mut k.required,
                "dependencies" => &mut k.dependencies,
                "properties" => &mut k.properties,
                "patternProperties" => &mut k.pattern_properties,
                "additionalProperties" => &mut k.additional_properties,
                "minProperties" => &mut k.min_properties,
                "maxProperties" => &mut k.max_properties,
                "items" => &mut k.items,
                "additionalItems" => &mut k.additional_items,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "uniqueItems" => &mut k.unique_items,
                "allOf" => &mut k.all_of,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                "not" => &mut k.not,
                "ndim" => &mut k.ndim,
                "max_ndim" => &mut k.max_ndim,
                "datatype" => &mut k.datatype,
                "exact_datatype" => &mut k.exact_datatype,
                "propertyOrder" => &mut k.property_order,
                "flowStyle" => &mut k.flow_style,
                "style" => &mut k.style,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }
}

/// The tag the reference sees on a node when matching the `tag` keyword: its own, or
/// for an untagged node the YAML tag of its Python type (`None` for a timestamp, which
/// has none).
fn instance_tag(node: NodeRef<'_>) -> Option<&str> {
    if let Some(tag) = node.tag()
        && (!tag.starts_with("tag:yaml.org,2002:") || tag == "tag:yaml.org,2002:omap")
    {
        // A `!!omap` is an `OrderedDict` to the reference, which it names so.
        return Some(tag);
    }
    Some(match node.value() {
        Value::Null => "tag:yaml.org,2002:null",
        Value::Bool(_) => "tag:yaml.org,2002:bool",
        Value::Int(_) | Value::BigInt(_) => "tag:yaml.org,2002:int",
        Value::Float(_) => "tag:yaml.org,2002:float",
        Value::Str(_) | Value::Binary(_) => "tag:yaml.org,2002:str",
        Value::Seq(_) => "tag:yaml.org,2002:seq",
        Value::Map(_) if node.tag() == Some(SET_TAG) => "tag:yaml.org,2002:set",
        Value::Map(_) => "tag:yaml.org,2002:map",
        Value::Timestamp(_) => return None,
    })
}

impl<'c> Validator<'c> {
    /// A validator of `tree` with the documents `docs`; `strict` for [`validate_strict`].
    fn new(docs: Docs<'c>, tree: &Tree, strict: bool) -> Validator<'c> {
        Validator {
            docs,
            seen: HashSet::default(),
            quiet: 0,
            journal: Vec::new(),
            patterns: Patterns::default(),
            verdicts: HashMap::default(),
            reasons: Vec::new(),
            refs: HashMap::new(),
            broken_told: HashSet::new(),
            unchecked_told: HashSet::new(),
            errors: Vec::new(),
            checks: 0,
            budget: MAX_CHECKS.max(tree.len().saturating_mul(CHECKS_PER_NODE)),
            strict: strict.then(Box::default),
        }
    }

    fn fail(&mut self, path: &str, at: At<'_>, message: impl FnOnce() -> String) {
        let kind = SchemaErrorKind::Invalid;
        let error = match self.quiet {
            0 => {
                SchemaError { path: path.to_string(), message: message(), schema: self.docs.name(at.doc).into(), kind }
            }
            _ => SchemaError { path: String::new(), message: String::new(), schema: String::new(), kind },
        };
        self.errors.push(error);
    }

    /// A check of `path` that cannot be made: `pattern` of schema `at` cannot be
    /// searched with, for `why`. Told once per schema and pattern (and in every branch
    /// tried, whose verdict it makes unknown).
    fn cannot_check(&mut self, path: &str, at: At<'_>, pattern: &str, why: &str) {
        let shown = if pattern.chars().count() > 200 {
            format!("{}...", pattern.chars().take(197).collect::<String>())
        } else {
            pattern.to_string()
        };
        let error = SchemaError {
            path: path.to_string(),
            message: format!("the pattern '{shown}': {why}"),
            schema: self.docs.name(at.doc).into(),
            kind: SchemaErrorKind::CannotCheck,
        };
        self.unknown(error);
    }

    /// A `$ref` (node `r`) of a schema the caller gave that names no schema: the checks
    /// it stands for cannot be made (the reference fails to resolve it). One of the
    /// standard's own (which names two transform schemas its package no longer ships) is
    /// taken as met instead.
    fn dangling(&mut self, path: &str, at: At<'_>, r: NodeRef<'_>) {
        let error = SchemaError {
            path: path.to_string(),
            message: format!("the $ref '{}' names no schema among those given", r.key_text()),
            schema: self.docs.name(at.doc).into(),
            kind: SchemaErrorKind::CannotCheck,
        };
        self.unknown(error);
    }

    /// Tells `error` (a check that cannot be made), once per schema and message outside
    /// branches tried.
    fn unknown(&mut self, error: SchemaError) {
        if self.quiet > 0 || self.unchecked_told.insert((error.schema.clone(), error.message.clone())) {
            self.errors.push(error);
        }
    }

    /// Whether `node` meets `at` (errors discarded); each pair's verdict found once, so
    /// that alternatives nested in alternatives cost their sum, not their product. A
    /// branch with no failure but a check that cannot be made is [`Verdict::Unknown`].
    fn meets(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) -> Verdict {
        let pair = pair(node, at);
        if let Some(&known) = self.verdicts.get(&pair) {
            return known;
        }
        let (errors, journal) = (self.errors.len(), self.journal.len());
        self.quiet += 1;
        self.check(node, at, path, depth);
        self.quiet -= 1;
        let found = &self.errors[errors..];
        let ok = if found.iter().any(|e| e.kind == SchemaErrorKind::Invalid) {
            Verdict::Failed
        } else if let Some(e) = found.first() {
            self.reasons.push(e.clone());
            Verdict::Unknown(self.reasons.len() - 1)
        } else {
            Verdict::Met
        };
        self.errors.truncate(errors);
        // A pair checked inside the branch, its errors dropped, is checked anew elsewhere.
        for pair in self.journal.drain(journal..) {
            self.seen.remove(&pair);
        }
        // A check cut short (too deep, out of budget) gives no verdict to keep.
        if depth <= MAX_DEPTH && self.checks <= self.budget {
            self.verdicts.insert(pair, ok);
        }
        ok
    }

    fn check(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            // Deeper than this, the node is not checked (the reference's validator fails
            // with a RecursionError well before).
            self.unsure();
            return;
        }
        self.checks += 1;
        if self.checks > self.budget {
            return;
        }
        let pair = pair(node, at);
        if !self.seen.insert(pair) {
            return;
        }
        self.journal.push(pair);
        let s = at.schema;
        if s.pairs().is_none() {
            return;
        }
        // Draft 4: `$ref` stands alone.
        if let Some(r) = s.key("$ref") {
            match self.reference(at, r) {
                Ok(target) => self.check(node, target, path, depth + 1),
                Err(Unresolved::Broken(doc)) => self.broken(doc, path),
                Err(Unresolved::Missing) => {
                    let missing = r.as_str().and_then(|text| self.docs.unknown_document(Some(at.doc), text));
                    if at.doc >= self.docs.bundled() {
                        self.dangling(path, at, r);
                    }
                    self.missing(missing);
                }
            }
            return;
        }
        let k = Keywords::of(s);
        if self.strict.is_some() {
            self.annotate(node, &k);
        }
        if let Some(pattern) = k.tag.and_then(|t| t.as_str()) {
            match instance_tag(node) {
                Some(tag) if uri_match(pattern, tag) => {
                    if node.tag().is_none_or(|t| t.starts_with("tag:yaml.org,2002:")) {
                        // The reference names an untagged node's tag by its Python type,
                        // which a number of numpy's may not have.
                        self.unsure();
                    }
                }
                tag => {
                    let tag = tag.unwrap_or("an untagged timestamp").to_string();
                    self.fail(path, at, || format!("mismatched tags, wanted '{pattern}', got '{tag}'"));
                }
            }
        }
        if let Some(t) = k.kind {
            let date_time = k.format.and_then(|f| f.as_str()) == Some("date-time");
            let ok = match t.items() {
                Some(mut names) => names.any(|n| n.as_str().is_some_and(|n| has_type(node, n, date_time))),
                None => t.as_str().is_some_and(|n| has_type(node, n, date_time)),
            };
            if !ok {
                self.fail(path, at, || format!("{} is not of type {}", show(node), show(t)));
            }
        }
        if k.options.is_some() && self.strict.is_some() && tagged_within(node) {
            // The reference compares a tagged node inside with its own equality, which
            // the tag takes part in.
            self.unsure();
        }
        if let Some(options) = list(k.options)
            && !options.iter().any(|o| equal(node, *o))
        {
            self.fail(path, at, || format!("{} is not one of the allowed values", show(node)));
        }
        self.numbers(node, at, &k, path);
        self.text(node, at, &k, path);
        self.object(node, at, &k, path, depth);
        self.array(node, at, &k, path, depth);
        if k.ndim.is_some() || k.max_ndim.is_some() || k.datatype.is_some() {
            if !node.tag().is_some_and(|t| uri_match("tag:stsci.edu:asdf/core/ndarray-*", t)) {
                // asdf before 5 applies them to every node (its validators' tag `**`).
                self.unsure();
            }
            self.ndarray(node, at, &k, path);
        }
        if let Some(branches) = list(k.all_of) {
            for b in branches {
                self.check(node, At { schema: b, ..at }, path, depth + 1);
            }
        }
        if let Some(branches) = list(k.any_of) {
            // The reference stops at the first branch met.
            let mut unknown = None;
            let mut met = false;
            for b in branches {
                match self.meets(node, At { schema: b, ..at }, path, depth + 1) {
                    Verdict::Met => {
                        met = true;
                        break;
                    }
                    Verdict::Unknown(why) => unknown = unknown.or(Some(why)),
                    Verdict::Failed => {}
                }
            }
            match (met, unknown) {
                (true, _) => {}
                (false, Some(why)) => self.unknown(self.reasons[why].clone()),
                (false, None) => {
                    self.fail(path, at, || format!("{} is not valid under any of the given schemas", show(node)));
                }
            }
        }
        if let Some(branches) = list(k.one_of) {
            let mut met = 0;
            let mut unknown = None;
            for b in branches {
                // After the first branch met, the reference only asks whether each is.
                let lazy = usize::from(met > 0);
                self.lazy(lazy, true);
                let verdict = self.meets(node, At { schema: b, ..at }, path, depth + 1);
                self.lazy(lazy, false);
                match verdict {
                    Verdict::Met => met += 1,
                    Verdict::Unknown(why) => unknown = unknown.or(Some(why)),
                    Verdict::Failed => {}
                }
            }
            match unknown {
                // Two met fail whatever the others; else an unknown one could make it one, or two.
                Some(why) if met <= 1 => self.unknown(self.reasons[why].clone()),
                _ if met != 1 => self.fail(path, at, || {
                    format!("{} is valid under {met} of the given schemas, not exactly one", show(node))
                }),
                _ => {}
            }
        }
        if let Some(not) = k.not {
            self.lazy(1, true);
            let verdict = self.meets(node, At { schema: not, ..at }, path, depth + 1);
            self.lazy(1, false);
            match verdict {
                Verdict::Met => {
                    self.fail(path, at, || format!("{} must not be valid under the given schema", show(node)));
                }
                Verdict::Unknown(why) => self.unknown(self.reasons[why].clone()),
                Verdict::Failed => {}
            }
        }
    }

    /// A check of [`validate_strict`] not made as the reference's validator makes it.
    fn unsure(&mut self) {
        if let Some(log) = self.strict.as_deref_mut() {
            log.unsure = true;
        }
    }

    /// A schema that is not there (the document `uri`, when known): taken as met, but
    /// not by [`validate_strict`], which names the document.
    fn missing(&mut self, uri: Option<String>) {
        if let Some(log) = self.strict.as_deref_mut() {
            log.unsure = true;
            if let Some(uri) = uri
                && !log.missing.contains(&uri)
            {
                log.missing.push(uri);
            }
        }
    }

    /// Enters (`enter`) or leaves `n` branches tried for their verdict alone.
    fn lazy(&mut self, n: usize, enter: bool) {
        if let Some(log) = self.strict.as_deref_mut() {
            log.lazy = if enter { log.lazy + n } else { log.lazy - n };
        }
    }

    /// What the reference's validator stores on `node` for the annotations of schema
    /// part `k` (`propertyOrder` on a mapping, `flowStyle` on a mapping or sequence,
    /// `style` on a string), recorded for [`validate_strict`].
    fn annotate(&mut self, node: NodeRef<'_>, k: &Keywords<'_>) {
        let Some(log) = self.strict.as_deref_mut() else { return };
        let is_map = matches!(node.value(), Value::Map(_));
        let mut found = Vec::new();
        let mut odd = false;
        if let Some(order) = k.property_order.filter(|_| is_map) {
            match order.items() {
                Some(items) if items.len() == 0 => {}
                Some(items) => {
                    let names: Option<Vec<String>> = items.map(|i| i.as_str().map(str::to_string)).collect();
                    match names {
                        Some(names) if order.tag().is_none() => found.push(Annotation::PropertyOrder(names)),
                        _ => odd = true,
                    }
                }
                None => odd = true,
            }
        }
        if let Some(flow) = k.flow_style.filter(|_| is_map || matches!(node.value(), Value::Seq(_))) {
            match flow.as_str() {
                Some(f) => found.push(Annotation::FlowStyle(f.to_string())),
                None => odd = true,
            }
        }
        if let Some(style) = k.style.filter(|_| matches!(node.value(), Value::Str(_))) {
            match style.as_str() {
                Some(t) => found.push(Annotation::Style(t.to_string())),
                None => odd = true,
            }
        }
        if odd || (log.lazy > 0 && !found.is_empty()) {
            log.unsure = true;
        }
        log.annotations.extend(found.into_iter().map(|annotation| Annotated { node: node.id(), annotation }));
    }

    /// The schema a `$ref` (node `r` of document `at.doc`) names, resolved once.
    fn reference(&mut self, at: At<'c>, r: NodeRef<'c>) -> Result<At<'c>, Unresolved> {
        let key = (at.doc, r.id());
        let docs = self.docs;
        let found = *self.refs.entry(key).or_insert_with(|| {
            let Some(text) = r.as_str() else { return Err(Unresolved::Missing) };
            docs.resolve(Some(at.doc), text).map(|(doc, node)| (doc, node.id()))
        });
        let (doc, id) = found?;
        Ok(At { schema: self.docs.node(doc, id).ok_or(Unresolved::Missing)?, doc })
    }

    /// An error for a schema document that does not parse, once per document (and in
    /// every branch tried, where it counts as a failure).
    fn broken(&mut self, doc: u32, path: &str) {
        let why = self.docs.broken(doc).unwrap_or_default().to_string();
        if self.quiet > 0 || self.broken_told.insert(doc) {
            let name = self.docs.name(doc).to_string();
            let error = SchemaError {
                path: path.to_string(),
                message: format!("the schema does not parse: {why}"),
                schema: name,
                kind: SchemaErrorKind::Invalid,
            };
            self.errors.push(error);
        }
    }

    /// ASDF's `ndim`, `max_ndim` and `datatype`, which apply to `core/ndarray` nodes only.
    fn ndarray(&mut self, node: NodeRef<'_>, at: At<'c>, k: &Keywords<'c>, path: &str) {
        if !node.tag().is_some_and(|t| uri_match("tag:stsci.edu:asdf/core/ndarray-*", t)) {
            return;
        }
        let ndim = datatype::ndim(node);
        let shown = |n: &Result<Option<usize>, String>| match n {
            Ok(Some(n)) => n.to_string(),
            _ => "None".to_string(),
        };
        if let Some(want) = k.ndim {
            let ok = matches!(ndim, Ok(Some(n)) if number(want) == Some(n as f64));
            if !ok {
                let got = shown(&ndim);
                self.fail(path, at, || format!("Wrong number of dimensions: Expected {}, got {got}", show(want)));
            }
        }
        if let Some(max) = k.max_ndim {
            let ok = matches!((&ndim, number(max)), (Ok(Some(n)), Some(m)) if *n as f64 <= m);
            if !ok {
                let got = shown(&ndim);
                self.fail(path, at, || format!("Wrong number of dimensions: Expected max of {}, got {got}", show(max)));
            }
        }
        if let Some(want) = k.datatype {
            let exact = k.exact_datatype.is_some_and(truthy);
            if let Err(why) = datatype::check(node, want, exact) {
                self.fail(path, at, || why);
            }
        }
    }

    fn numbers(&mut self, node: NodeRef<'_>, at: At<'c>, k: &Keywords<'c>, path: &str) {
        let Some(x) = number(node) else { return };
        let bounded = k.minimum.is_some() || k.maximum.is_some() || k.multiple_of.is_some();
        if bounded && x.abs() >= 9_007_199_254_740_992.0 {
            // Python compares integers this large exactly; a float cannot.
            self.unsure();
        }
        let exclusive = |b: Option<NodeRef<'_>>| b.and_then(|b| b.as_bool()).unwrap_or(false);
        if let Some(min) = k.minimum.and_then(number)
            && (x < min || (exclusive(k.exclusive_minimum) && x == min))
        {
            self.fail(path, at, || {
                format!("{} is less than the minimum of {}", show(node), show(k.minimum.unwrap_or(node)))
            });
        }
        if let Some(max) = k.maximum.and_then(number)
            && (x > max || (exclusive(k.exclusive_maximum) && x == max))
        {
            self.fail(path, at, || {
                format!("{} is greater than the maximum of {}", show(node), show(k.maximum.unwrap_or(node)))
            });
        }
        if let Some(m) = k.multiple_of.and_then(number)
            && m != 0.0
        {
            let q = x / m;
            if q.trunc() != q {
                self.fail(path, at, || format!("{} is not a multiple of {m}", show(node)));
            }
        }
    }

    fn text(&mut self, node: NodeRef<'_>, at: At<'c>, k: &Keywords<'c>, path: &str) {
        let Value::Str(text) = node.value() else { return };
        let chars = text.chars().count();
        if let Some(min) = k.min_length.and_then(|n| n.as_i64())
            && (chars as i64) < min
        {
            self.fail(path, at, || format!("{} is too short", show(node)));
        }
        if let Some(max) = k.max_length.and_then(|n| n.as_i64())
            && (chars as i64) > max
        {
            self.fail(path, at, || format!("{} is too long", show(node)));
        }
        if let Some(pattern) = k.pattern.and_then(|p| p.as_str()) {
            match self.patterns.search(pattern, text) {
                Ok(true) => {}
                Ok(false) => self.fail(path, at, || format!("{} does not match '{pattern}'", show(node))),
                Err(why) => self.cannot_check(path, at, pattern, &why),
            }
        }
    }

    fn object(&mut self, node: NodeRef<'_>, at: At<'c>, k: &Keywords<'c>, path: &str, depth: usize) {
        let Some(pairs) = node.pairs() else { return };
        let pairs: Vec<_> = pairs.collect();
        let text_key = |k: &NodeRef<'_>| k.as_str().map(str::to_string);
        let has = |name: &str| pairs.iter().any(|(k, _)| k.as_str() == Some(name));
        if let Some(required) = list(k.required) {
            for name in required.iter().filter_map(|r| r.as_str()) {
                if !has(name) {
                    self.fail(path, at, || format!("'{name}' is a required property"));
                }
            }
        }
        if let Some(min) = k.min_properties.and_then(|n| n.as_i64())
            && (pairs.len() as i64) < min
        {
            self.fail(path, at, || format!("{} does not have enough properties", show(node)));
        }
        if let Some(max) = k.max_properties.and_then(|n| n.as_i64())
            && (pairs.len() as i64) > max
        {
            self.fail(path, at, || format!("{} has too many properties", show(node)));
        }
        if let Some(deps) = map(k.dependencies) {
            for (key, dep) in deps {
                let Some(name) = key.as_str() else { continue };
                if !has(name) {
                    continue;
                }
                match dep.items() {
                    Some(names) => {
                        for other in names.filter_map(|n| n.as_str()) {
                            if !has(other) {
                                self.fail(path, at, || format!("'{other}' is a dependency of '{name}'"));
                            }
                        }
                    }
                    None => self.check(node, At { schema: dep, ..at }, path, depth + 1),
                }
            }
        }
        let properties = k.properties;
        let patterns: Vec<(String, NodeRef<'c>)> = map(k.pattern_properties)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v)))
            .collect();
        let additional = k.additional_properties;
        if properties.is_none() && patterns.is_empty() && additional.is_none() {
            return;
        }
        for (key_node, value) in &pairs {
            let key = text_key(key_node);
            let child = || format!("{path}/{}", escape(&key_node.key_text()));
            let mut matched = false;
            if let Some(sub) = key.as_deref().and_then(|key| properties.and_then(|p| p.key(key))) {
                matched = true;
                self.check(*value, At { schema: sub, ..at }, &child(), depth + 1);
            }
            // Whether a pattern matches the key cannot be told: nor whether the rest applies.
            let mut unknown = false;
            for (pattern, sub) in &patterns {
                let Some(key) = key.as_deref() else { continue };
                match self.patterns.search(pattern, key) {
                    Ok(true) => {
                        matched = true;
                        self.check(*value, At { schema: *sub, ..at }, &child(), depth + 1);
                    }
                    Ok(false) => {}
                    Err(why) => {
                        self.cannot_check(&child(), at, pattern, &why);
                        unknown = true;
                    }
                }
            }
            if matched || unknown {
                continue;
            }
            match additional {
                Some(a) if a.as_bool() == Some(false) => {
                    self.fail(path, at, || format!("additional property '{}' is not allowed", key_node.key_text()));
                }
                Some(a) if a.pairs().is_some() => self.check(*value, At { schema: a, ..at }, &child(), depth + 1),
                _ => {}
            }
        }
    }

    fn array(&mut self, node: NodeRef<'_>, at: At<'c>, k: &Keywords<'c>, path: &str, depth: usize) {
        let Some(items) = node.items() else { return };
        let items: Vec<_> = items.collect();
        if let Some(min) = k.min_items.and_then(|n| n.as_i64())
            && (items.len() as i64) < min
        {
            self.fail(path, at, || format!("{} is too short (at least {min} items)", show(node)));
        }
        if let Some(max) = k.max_items.and_then(|n| n.as_i64())
            && (items.len() as i64) > max
        {
            self.fail(path, at, || format!("{} is too long (at most {max} items)", show(node)));
        }
        if k.unique_items.and_then(|u| u.as_bool()) == Some(true) && !unique(&items) {
            self.fail(path, at, || format!("{} has non-unique elements", show(node)));
        }
        let Some(schema) = k.items else { return };
        match schema.items() {
            // A tuple: each item its own schema, the rest `additionalItems`.
            Some(tuple) => {
                let tuple: Vec<_> = tuple.collect();
                let additional = k.additional_items;
                for (i, item) in items.iter().enumerate() {
                    let child = format!("{path}/{i}");
                    match tuple.get(i) {
                        Some(sub) => self.check(*item, At { schema: *sub, ..at }, &child, depth + 1),
                        None => match additional {
                            Some(a) if a.as_bool() == Some(false) => {
                                self.fail(path, at, || format!("{} has more items than allowed", show(node)));
                                break;
                            }
                            Some(a) if a.pairs().is_some() => {
                                self.check(*item, At { schema: a, ..at }, &child, depth + 1);
                            }
                            _ => {}
                        },
                    }
                }
            }
            None => {
                for (i, item) in items.iter().enumerate() {
                    self.check(*item, At { schema, ..at }, &format!("{path}/{i}"), depth + 1);
                }
            }
        }
    }
}

/// Whether a node below `node` carries a tag: each node looked at once (a recursive
/// alias, a list holding itself, costs no more).
fn tagged_within(node: NodeRef<'_>) -> bool {
    let tree = node.tree();
    let mut seen = HashSet::new();
    let mut stack = vec![node.id()];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let children: Vec<NodeId> = match tree.node(id).value() {
            Value::Seq(items) => items.clone(),
            Value::Map(pairs) => pairs.iter().flat_map(|&(k, v)| [k, v]).collect(),
            _ => continue,
        };
        for c in children {
            if tree.node(c).tag().is_some() {
                return true;
            }
            stack.push(c);
        }
    }
    false
}

/// Python's truth of a schema value (`exact_datatype: true`).
fn truthy(node: NodeRef<'_>) -> bool {
    match node.value() {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::Seq(items) => !items.is_empty(),
        Value::Map(pairs) => !pairs.is_empty(),
        _ => true,
    }
}

/// The items of a sequence node.
fn list<'t>(node: Option<NodeRef<'t>>) -> Option<Vec<NodeRef<'t>>> {
    let node = node?;
    node.items().map(Iterator::collect)
}

/// The pairs of a mapping node.
fn map<'t>(node: Option<NodeRef<'t>>) -> Option<Vec<(NodeRef<'t>, NodeRef<'t>)>> {
    let node = node?;
    node.pairs().map(Iterator::collect)
}

/// Whether `node` is of JSON Schema type `name`, as the reference's validator tells.
fn has_type(node: NodeRef<'_>, name: &str, date_time: bool) -> bool {
    match (name, node.value()) {
        ("object", Value::Map(_)) | ("array", Value::Seq(_)) | ("null", Value::Null) => true,
        ("boolean", Value::Bool(_)) | ("string", Value::Str(_)) => true,
        ("integer" | "number", Value::Int(_) | Value::BigInt(_)) | ("number", Value::Float(_)) => true,
        ("string", Value::Timestamp(_)) => date_time,
        _ => false,
    }
}

/// A number's value, for `minimum` and `maximum`.
fn number(node: NodeRef<'_>) -> Option<f64> {
    match node.value() {
        #[allow(clippy::cast_precision_loss)]
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::BigInt(b) => b.to_string().parse().ok(),
        _ => None,
    }
}

/// Equality as `enum` and `uniqueItems` take it (the reference's validator's `equal`):
/// numbers by value (exactly, as Python compares an `int` and a `float`), `true` not
/// `1`, mappings with the same keys (as Python's keys: `1`, `1.0` and `true` are one)
/// and equal values. A NaN equals nothing, nor (unlike Python's) does a timestamp, nor
/// anything that needs a comparison deeper than [`EQUAL_DEPTH`] or holds itself (a
/// cycle of aliases, where the reference fails). Each pair of lists or mappings is
/// compared once, however many alias paths reach it.
pub(super) fn equal(a: NodeRef<'_>, b: NodeRef<'_>) -> bool {
    Equality::default().height(a, b, 0).is_some()
}

/// How deep [`equal`] looks into lists and mappings.
const EQUAL_DEPTH: usize = 512;

/// One [`equal`] comparison: what it has found of the pairs of lists and mappings met.
#[derive(Default)]
struct Equality {
    /// A pair compared: `Some(height)` when equal (the depth its comparison reached
    /// below it), `None` when not.
    known: HashMap<PairKey, Option<usize>>,
    /// The pairs being compared, from the first down to the current one.
    open: HashSet<PairKey>,
    /// A comparison went deeper than [`EQUAL_DEPTH`] or back into an open pair: the
    /// answer is "not equal", and nothing more is recorded.
    cut: bool,
}

/// Two nodes, each by its tree's address and its id.
type PairKey = (usize, NodeId, usize, NodeId);

impl Equality {
    /// `Some(height)` when `a` and `b` are equal, compared at `depth`.
    fn height(&mut self, a: NodeRef<'_>, b: NodeRef<'_>, depth: usize) -> Option<usize> {
        if self.cut {
            return None;
        }
        if depth > EQUAL_DEPTH {
            self.cut = true;
            return None;
        }
        let nested = |v: &Value| matches!(v, Value::Seq(_) | Value::Map(_));
        if !(nested(a.value()) && nested(b.value())) {
            return scalar_equal(a.value(), b.value()).then_some(0);
        }
        let key: PairKey =
            (std::ptr::from_ref(a.tree()) as usize, a.id(), std::ptr::from_ref(b.tree()) as usize, b.id());
        if let Some(&known) = self.known.get(&key) {
            if known.is_some_and(|h| depth + h > EQUAL_DEPTH) {
                self.cut = true;
                return None;
            }
            return known;
        }
        if !self.open.insert(key) {
            self.cut = true;
            return None;
        }
        let found = self.nested(a, b, depth);
        self.open.remove(&key);
        if !self.cut {
            self.known.insert(key, found);
        }
        found
    }

    /// [`Equality::height`] of two lists or mappings.
    fn nested(&mut self, a: NodeRef<'_>, b: NodeRef<'_>, depth: usize) -> Option<usize> {
        let (ta, tb) = (a.tree(), b.tree());
        let mut height = 0;
        let mut below = |this: &mut Self, p: NodeRef<'_>, q: NodeRef<'_>| {
            this.height(p, q, depth + 1).map(|h| height = height.max(h + 1)).is_some()
        };
        let equal = match (a.value(), b.value()) {
            (Value::Seq(x), Value::Seq(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| below(self, ta.node(*p), tb.node(*q)))
            }
            (Value::Map(x), Value::Map(y)) if x.len() == y.len() => {
                fn text(t: &Tree, k: NodeId) -> Option<&str> {
                    match t.node(k).value() {
                        Value::Str(s) => Some(s.as_str()),
                        _ => None,
                    }
                }
                if x.iter().all(|&(k, _)| text(ta, k).is_some()) && y.iter().all(|&(k, _)| text(tb, k).is_some()) {
                    // Text keys (the usual case) are all different in a mapping: looked up.
                    let by_key: HashMap<&str, NodeId> =
                        y.iter().filter_map(|&(k, v)| Some((text(tb, k)?, v))).collect();
                    x.iter().all(|&(k, v)| {
                        text(ta, k).and_then(|k| by_key.get(k)).is_some_and(|&w| below(self, ta.node(v), tb.node(w)))
                    })
                } else {
                    // Else every pair of each has a pair of the same key and an equal
                    // value in the other (both ways: keys Python takes as one may be two
                    // here).
                    let mut within =
                        |this: &mut Self, from: &[(NodeId, NodeId)], tf: &Tree, to: &[(NodeId, NodeId)], tt: &Tree| {
                            from.iter().all(|&(k, v)| {
                                to.iter().any(|&(k2, v2)| {
                                    this.same_key(tf.node(k), tt.node(k2), depth)
                                        && below(this, tf.node(v), tt.node(v2))
                                })
                            })
                        };
                    within(self, x, ta, y, tb) && within(self, y, tb, x, ta)
                }
            }
            _ => false,
        };
        (equal && !self.cut).then_some(height)
    }

    /// Whether two mapping keys are one key to Python: as [`equal`], but a bool is the
    /// number it is to Python (`true` is `1`).
    fn same_key(&mut self, a: NodeRef<'_>, b: NodeRef<'_>, depth: usize) -> bool {
        match (a.value(), b.value()) {
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Bool(x), other) | (other, Value::Bool(x)) => same_number(&Value::Int(i64::from(*x)), other),
            _ => self.height(a, b, depth + 1).is_some(),
        }
    }
}

/// [`equal`] of two nodes that are not both lists or mappings.
fn scalar_equal(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Binary(x), Value::Binary(y)) => x == y,
        (Value::Seq(_) | Value::Map(_), _) | (_, Value::Seq(_) | Value::Map(_)) => false,
        (x, y) => same_number(x, y),
    }
}

/// Whether two numbers are equal as Python compares them: exactly (`2**53 + 1` is not
/// `2.0**53`).
fn same_number(x: &Value, y: &Value) -> bool {
    // An `int` and a `float`: the float integral and the same integer.
    let int_float = |i: &Value, f: f64| -> bool {
        if !f.is_finite() || f.fract() != 0.0 {
            return false;
        }
        match i {
            // Within the i64 range, the float converts exactly.
            #[allow(clippy::cast_possible_truncation)]
            Value::Int(i) => (-(2f64.powi(63))..2f64.powi(63)).contains(&f) && f as i64 == *i,
            Value::BigInt(b) => format!("{f:.0}") == b.to_string(),
            _ => false,
        }
    };
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::BigInt(a), Value::BigInt(b)) => a == b,
        (Value::Float(a), Value::Float(b)) => a == b,
        (i @ (Value::Int(_) | Value::BigInt(_)), Value::Float(f))
        | (Value::Float(f), i @ (Value::Int(_) | Value::BigInt(_))) => int_float(i, *f),
        _ => false,
    }
}

/// Whether no two of `items` (nodes of one tree) are [`equal`], in n log n: each item
/// hashed on what equality looks at (equal items hash alike), the hashes sorted, and
/// only items of one hash compared.
fn unique(items: &[NodeRef<'_>]) -> bool {
    let Some(first) = items.first() else { return true };
    let hashes = equality_hashes(first.tree(), items.iter().map(|i| i.id()));
    // Items equal to nothing have no hash: each is unique.
    let mut hashed: Vec<(u64, usize)> = hashes.into_iter().enumerate().filter_map(|(i, h)| Some((h?, i))).collect();
    hashed.sort_unstable();
    for run in hashed.chunk_by(|a, b| a.0 == b.0) {
        // Items of one hash are nearly always equal, so the first comparison tells;
        // items that only share a hash are each compared with one of each kind met.
        let mut kinds: Vec<usize> = Vec::new();
        for &(_, i) in run {
            if kinds.iter().any(|&k| equal(items[k], items[i])) {
                return false;
            }
            kinds.push(i);
        }
    }
    true
}

/// For each of `roots`, a hash of what [`equal`] looks at (equal nodes hash alike), or
/// `None` for a node equal to nothing, itself neither: one holding a NaN, a timestamp,
/// `!!binary` or a cycle of aliases, or nested deeper than [`EQUAL_DEPTH`]. Each node
/// is hashed once (a walk with its own stack, after its children), however often
/// aliases reach it.
fn equality_hashes(tree: &Tree, roots: impl Iterator<Item = NodeId>) -> Vec<Option<u64>> {
    use std::hash::{Hash, Hasher};
    /// A node's hash and height; `None` while its children are being hashed (met
    /// again then, it is on a cycle).
    type Done = Option<Option<(u64, usize)>>;
    fn hash_of(value: impl Hash) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        value.hash(&mut h);
        h.finish()
    }
    // Equal numbers are one float; -0.0 is 0.0.
    let number_hash = |x: f64| hash_of((3u8, if x == 0.0 { 0 } else { x.to_bits() }));
    let mut done: HashMap<NodeId, Done> = HashMap::new();
    let mut out = Vec::new();
    for root in roots {
        let mut stack: Vec<(NodeId, bool)> = vec![(root, false)];
        while let Some((id, children_done)) = stack.pop() {
            let node = tree.node(id);
            if !children_done {
                if done.contains_key(&id) {
                    continue;
                }
                let leaf = match node.value() {
                    Value::Null => Some(hash_of(0u8)),
                    Value::Bool(b) => Some(hash_of((1u8, b))),
                    Value::Str(s) => Some(hash_of((2u8, s.as_str()))),
                    // NaN equals nothing.
                    Value::Int(_) | Value::BigInt(_) | Value::Float(_) => {
                        number(node).filter(|x| !x.is_nan()).map(number_hash)
                    }
                    Value::Binary(b) => Some(hash_of((6u8, b))),
                    Value::Timestamp(_) => None,
                    Value::Seq(items) => {
                        done.insert(id, None);
                        stack.push((id, true));
                        stack.extend(items.iter().map(|&c| (c, false)));
                        continue;
                    }
                    Value::Map(pairs) => {
                        done.insert(id, None);
                        stack.push((id, true));
                        stack.extend(pairs.iter().flat_map(|&(k, v)| [(k, false), (v, false)]));
                        continue;
                    }
                };
                done.insert(id, Some(leaf.map(|h| (h, 0))));
                continue;
            }
            // The children are done: the list's or mapping's own hash.
            let child = |c: NodeId| done.get(&c).copied().flatten().flatten();
            let hashed = match node.value() {
                Value::Seq(items) => items.iter().map(|&c| child(c)).collect::<Option<Vec<_>>>().map(|parts| {
                    let height = parts.iter().map(|p| p.1 + 1).max().unwrap_or(0);
                    (hash_of((4u8, parts.iter().map(|p| p.0).collect::<Vec<_>>())), height)
                }),
                Value::Map(pairs) => pairs
                    .iter()
                    .map(|&(k, v)| {
                        // A bool key is its number to Python.
                        let key = match tree.node(k).value() {
                            Value::Bool(b) => Some((number_hash(f64::from(u8::from(*b))), 0)),
                            _ => child(k),
                        };
                        key.zip(child(v))
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(|parts| {
                        let height = parts.iter().map(|(k, v)| k.1.max(v.1) + 1).max().unwrap_or(0);
                        // In any order, each kind of pair once.
                        let mut pairs: Vec<u64> = parts.iter().map(|(k, v)| hash_of((k.0, v.0))).collect();
                        pairs.sort_unstable();
                        pairs.dedup();
                        (hash_of((5u8, parts.len(), pairs)), height)
                    }),
                _ => None,
            };
            done.insert(id, Some(hashed));
        }
        out.push(done.get(&root).copied().flatten().flatten().filter(|&(_, h)| h <= EQUAL_DEPTH).map(|(h, _)| h));
    }
    out
}

/// Whether `uri` matches `pattern` as the reference's `uri_match` tells: `*` matches any
/// text without `/`, `**` any text.
fn uri_match(pattern: &str, uri: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == uri;
    }
    // Which prefixes of `uri` the pattern read so far matches, a pattern byte (or
    // wildcard) at a time: linear in each, whatever the pattern.
    let (p, u) = (pattern.as_bytes(), uri.as_bytes());
    let mut can = vec![false; u.len() + 1];
    can[0] = true;
    let mut i = 0;
    while i < p.len() {
        let mut next = vec![false; u.len() + 1];
        if p[i] == b'*' {
            let any = p.get(i + 1) == Some(&b'*');
            i += if any { 2 } else { 1 };
            for j in 0..=u.len() {
                next[j] = can[j] || (j > 0 && next[j - 1] && (any || u[j - 1] != b'/'));
            }
        } else {
            for j in 0..u.len() {
                next[j + 1] = can[j] && u[j] == p[i];
            }
            i += 1;
        }
        can = next;
    }
    can[u.len()]
}

/// A short form of a node for messages.
pub(super) fn show(node: NodeRef<'_>) -> String {
    show_within(node, 0)
}

/// [`show`], sequences shown three levels deep at most (a sequence holding itself, a
/// recursive alias, is shown once).
fn show_within(node: NodeRef<'_>, depth: usize) -> String {
    let text = match node.value() {
        Value::Str(s) => format!("'{s}'"),
        Value::Seq(_) if depth >= 3 => "[...]".to_string(),
        Value::Seq(items) => {
            let shown: Vec<String> =
                items.iter().take(4).map(|i| show_within(node.tree().node(*i), depth + 1)).collect();
            let more = if items.len() > 4 { ", ..." } else { "" };
            format!("[{}{more}]", shown.join(", "))
        }
        Value::Map(pairs) => format!("a mapping of {} keys", pairs.len()),
        _ => node.key_text(),
    };
    if text.chars().count() > 80 { format!("{}...", text.chars().take(77).collect::<String>()) } else { text }
}

/// A key as a JSON Pointer step.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_and_manifest_parses() {
        assert!(catalog_is_complete());
    }

    #[test]
    fn tag_patterns_match_as_the_reference_matches_them() {
        assert!(uri_match("tag:stsci.edu:asdf/core/ndarray-1.*", "tag:stsci.edu:asdf/core/ndarray-1.1.0"));
        assert!(!uri_match("tag:stsci.edu:asdf/core/ndarray-1.*", "tag:stsci.edu:asdf/core/ndarray-2.0.0"));
        assert!(uri_match("a*b*c", "aXXbYYc") && !uri_match("a*b*c", "aXXbYY") && uri_match("abc", "abc"));
        assert!(!uri_match("abc", "abcd") && uri_match("a*", "a"));
        // `*` stops at `/`; `**` does not.
        assert!(
            !uri_match("asdf://x/tags/*", "asdf://x/tags/a/b-1.0.0") && uri_match("asdf://x/tags/*", "asdf://x/tags/b")
        );
        assert!(uri_match("asdf://x/**", "asdf://x/tags/a/b-1.0.0") && uri_match("a**b*", "a/x/b-1"));
        assert!(!uri_match("a**b*", "a/x/b/1"));
    }

    #[test]
    fn references_join_as_urljoin_joins_them() {
        let b = "asdf://stsci.edu/datamodels/roman/schemas/reference_files/flat-2.0.0";
        assert_eq!(
            join_uri(b, "ref_common-2.0.0"),
            "asdf://stsci.edu/datamodels/roman/schemas/reference_files/ref_common-2.0.0"
        );
        assert_eq!(join_uri(b, "../common-1.0.0"), "asdf://stsci.edu/datamodels/roman/schemas/common-1.0.0");
        assert_eq!(join_uri(b, "./x/y"), "asdf://stsci.edu/datamodels/roman/schemas/reference_files/x/y");
        assert_eq!(join_uri(b, "/a/b"), "asdf://stsci.edu/a/b");
        assert_eq!(
            join_uri(b, "http://stsci.edu/schemas/asdf/core/ndarray-1.0.0"),
            "http://stsci.edu/schemas/asdf/core/ndarray-1.0.0"
        );
        assert_eq!(join_uri("http://h/a/b", "../../../c"), "http://h/c");
        assert_eq!(join_uri("tag:stsci.edu:asdf/x", "y"), "y");
    }
}
