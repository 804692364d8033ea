//! Validation of a tree against the ASDF Standard's schemas, as `asdftool validate` does
//! it: every node whose tag the file's standard lists (its core manifest) is checked
//! against that tag's schema, the root among them.
//!
//! The schemas are the standard's own (`schemas/standard/`, from asdf-standard 1.5.0,
//! BSD-3-Clause): the core, fits, time, unit, wcs and base transform ones its manifests
//! reach. The JSON Schema draft 4 keywords they use are applied as the reference's
//! `jsonschema` validator applies them: a bool is neither an integer nor a number, an
//! integer is a number, a timestamp passes `type: string` only with `format: date-time`,
//! `pattern` searches (it is not anchored), `enum` tells `true` from `1`; plus ASDF's
//! `tag` keyword (`*` matching any text). A `$ref` to a schema the standard's package
//! no longer ships (`transform-1.1.0`, `transform-1.2.0`) is taken as met. Each pair of
//! a node and a schema is checked once, so aliases (recursive ones too) cost nothing
//! more; checks nested deeper than `MAX_DEPTH` steps are skipped. Annotations (`default`, `propertyOrder`, `flowStyle`, `examples`...) are not
//! checked; filling defaults is [`super::fill_defaults`]'s job.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::limits::Limits;
use crate::tree::{NodeRef, Tree, Value};

/// A node that does not meet its tag's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The tree path of the node that failed (JSON Pointer escapes, as elsewhere).
    pub path: String,
    /// What failed.
    pub message: String,
    /// The schema whose check failed (`core/ndarray-1.1.0`).
    pub schema: String,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        write!(f, "tree path {path}: {} (schema {})", self.message, self.schema)
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

const SCHEMA_PREFIX: &str = "http://stsci.edu/schemas/asdf/";

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
    text: &'static str,
    /// `None` if it did not parse: it is missing then, and the `$ref`s to it are taken
    /// as met (a test makes sure every one parses).
    tree: OnceLock<Option<Tree>>,
    /// Whether a default the reference fills is in it (see [`super::reaches_default`]).
    has_default: OnceLock<bool>,
}

impl Catalog {
    fn name(&self, doc: usize) -> &'static str {
        self.schemas[doc].name
    }

    /// The root of schema `doc`.
    fn root(&self, doc: usize) -> Option<NodeRef<'_>> {
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
            .map(|&(name, text)| LazySchema { name, text, tree: OnceLock::new(), has_default: OnceLock::new() })
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

/// The schema of `tag` in standard `standard`, when the standard lists the tag and the
/// schema holds a default the reference fills (for [`super::fill_defaults`]); the
/// schemas without the word are not parsed.
pub(super) fn default_schema(standard: &str, tag: &str) -> Option<NodeRef<'static>> {
    let c = catalog();
    let &doc = c.tags(standard)?.get(tag)?;
    let s = &c.schemas[doc];
    let has =
        *s.has_default.get_or_init(|| s.text.contains("default:") && c.root(doc).is_some_and(super::reaches_default));
    if has { c.root(doc) } else { None }
}

/// Whether every bundled schema and manifest parses (for the tests).
#[doc(hidden)]
pub fn catalog_is_complete() -> bool {
    let c = catalog();
    // Every schema parses, and every tag of every manifest has its schema here.
    (0..c.schemas.len()).all(|doc| c.root(doc).is_some())
        && MANIFESTS.iter().all(|(s, text)| c.tags(s).is_some_and(|t| t.len() == text.matches("tag_uri:").count()))
}

/// Validates `tree`, a file of ASDF Standard `standard` (`None`: not stated, 1.0.0 as
/// the reference takes it), against the schemas of the tags that standard lists; returns
/// every failure, in tree order. A standard rasdf has no manifest for is not validated.
pub fn validate(tree: &Tree, standard: Option<&str>) -> Vec<SchemaError> {
    let catalog = catalog();
    let Some(tags) = catalog.tags(standard.unwrap_or("1.0.0")) else { return Vec::new() };
    let mut v = Validator {
        catalog,
        seen: HashSet::default(),
        quiet: 0,
        journal: Vec::new(),
        regexes: HashMap::new(),
        errors: Vec::new(),
    };
    tree.walk(|path, node| {
        // A `$ref` mapping in the tree is a JSON reference, not data: the reference
        // skips it.
        if node.key("$ref").is_some() {
            return;
        }
        let Some(&doc) = node.tag().and_then(|t| tags.get(t)) else { return };
        let Some(root) = catalog.root(doc) else { return };
        let path = path.to_string();
        v.check(node, At { schema: root, doc }, &path, 0);
    });
    v.errors
}

/// The tags of `tree` that [`validate`] has no schema for under standard `standard`
/// (tags no manifest of it lists: an extension's, a core tag of another standard), each
/// with how many nodes carry it, in tag order: what validation did not check. YAML's own
/// tags (`tag:yaml.org,2002:...`) have no schema to have, and are not listed.
pub fn tags_without_schema(tree: &Tree, standard: Option<&str>) -> Vec<(String, usize)> {
    let catalog = catalog();
    let tags = catalog.tags(standard.unwrap_or("1.0.0"));
    let mut out: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    tree.walk(|_, node| {
        let Some(tag) = node.tag() else { return };
        if tag.starts_with("tag:yaml.org,2002:") {
            return;
        }
        let checked = tags.and_then(|m| m.get(tag)).is_some_and(|&doc| catalog.root(doc).is_some());
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
    /// The document's place in the catalog.
    doc: usize,
}

/// An instance node, a schema document and a node in it, packed as `node << 32 | doc <<
/// 24 | schema node` (the schemas are far smaller than 2^24 nodes, and fewer than 256).
type Pair = u64;

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
}

struct Validator<'c> {
    catalog: &'c Catalog,
    /// (instance node, schema document, schema node) pairs already checked.
    seen: HashSet<Pair, std::hash::BuildHasherDefault<PairHasher>>,
    /// Inside a branch tried for its verdict alone (`anyOf`), failures are only counted.
    quiet: usize,
    /// The pairs of `seen` in the order they were added, so that a branch tried and
    /// dropped (`anyOf`) takes its own back.
    journal: Vec<Pair>,
    regexes: HashMap<String, Option<regex::Regex>>,
    errors: Vec<SchemaError>,
}

/// How deep the checks nest (`$ref`s, combinators and the instance's own levels, a few
/// steps a level); deeper parts are not checked, so a deep tree cannot exhaust the
/// stack. Inline data 100 levels deep, or a datatype nesting 300 records, goes past it.
const MAX_DEPTH: usize = 256;

impl<'c> Validator<'c> {
    fn fail(&mut self, path: &str, at: At<'_>, message: impl FnOnce() -> String) {
        let error = match self.quiet {
            0 => SchemaError { path: path.to_string(), message: message(), schema: self.catalog.name(at.doc).into() },
            _ => SchemaError { path: String::new(), message: String::new(), schema: String::new() },
        };
        self.errors.push(error);
    }

    /// Whether `node` meets `at` (errors discarded).
    fn meets(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) -> bool {
        let (errors, journal) = (self.errors.len(), self.journal.len());
        self.quiet += 1;
        self.check(node, at, path, depth);
        self.quiet -= 1;
        let ok = self.errors.len() == errors;
        self.errors.truncate(errors);
        // A pair checked inside the branch, its errors dropped, is checked anew elsewhere.
        for pair in self.journal.drain(journal..) {
            self.seen.remove(&pair);
        }
        ok
    }

    fn check(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            // Deeper than this, the node is not checked (the reference's validator fails
            // with a RecursionError well before).
            return;
        }
        let pair = (u64::from(node.id().0) << 32) | ((at.doc as u64) << 24) | u64::from(at.schema.id().0 & 0x00ff_ffff);
        if !self.seen.insert(pair) {
            return;
        }
        self.journal.push(pair);
        let s = at.schema;
        // Draft 4: `$ref` stands alone.
        if let Some(r) = s.key("$ref").and_then(|r| r.as_str()) {
            if let Some(target) = self.resolve(at.doc, r) {
                self.check(node, target, path, depth + 1);
            }
            return;
        }
        if let Some(pattern) = s.key("tag").and_then(|t| t.as_str()) {
            let tag = node.tag().unwrap_or("");
            if !glob_match(pattern, tag) {
                self.fail(path, at, || format!("tag '{tag}' does not match '{pattern}'"));
            }
        }
        if let Some(t) = s.key("type") {
            let date_time = s.key("format").and_then(|f| f.as_str()) == Some("date-time");
            let ok = match t.items() {
                Some(mut names) => names.any(|n| n.as_str().is_some_and(|n| has_type(node, n, date_time))),
                None => t.as_str().is_some_and(|n| has_type(node, n, date_time)),
            };
            if !ok {
                self.fail(path, at, || format!("{} is not of type {}", show(node), show(t)));
            }
        }
        if let Some(options) = list(s.key("enum"))
            && !options.iter().any(|o| equal(node, *o))
        {
            self.fail(path, at, || format!("{} is not one of the allowed values", show(node)));
        }
        self.numbers(node, at, path);
        self.text(node, at, path);
        self.object(node, at, path, depth);
        self.array(node, at, path, depth);
        for (key, all) in [("allOf", true), ("anyOf", false), ("oneOf", false)] {
            let Some(branches) = list(s.key(key)) else { continue };
            if all {
                for b in branches {
                    self.check(node, At { schema: b, ..at }, path, depth + 1);
                }
                continue;
            }
            let met = branches.iter().filter(|b| self.meets(node, At { schema: **b, ..at }, path, depth + 1)).count();
            if key == "anyOf" && met == 0 {
                self.fail(path, at, || format!("{} is not valid under any of the given schemas", show(node)));
            } else if key == "oneOf" && met != 1 {
                self.fail(path, at, || {
                    format!("{} is valid under {met} of the given schemas, not exactly one", show(node))
                });
            }
        }
        if let Some(not) = s.key("not")
            && self.meets(node, At { schema: not, ..at }, path, depth + 1)
        {
            self.fail(path, at, || format!("{} must not be valid under the given schema", show(node)));
        }
    }

    fn numbers(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str) {
        let Some(x) = number(node) else { return };
        let s = at.schema;
        let exclusive = |k: &str| s.key(k).and_then(|b| b.as_bool()).unwrap_or(false);
        if let Some(min) = s.key("minimum").and_then(number)
            && (x < min || (exclusive("exclusiveMinimum") && x == min))
        {
            self.fail(path, at, || {
                format!("{} is less than the minimum of {}", show(node), show(s.key("minimum").unwrap_or(node)))
            });
        }
        if let Some(max) = s.key("maximum").and_then(number)
            && (x > max || (exclusive("exclusiveMaximum") && x == max))
        {
            self.fail(path, at, || {
                format!("{} is greater than the maximum of {}", show(node), show(s.key("maximum").unwrap_or(node)))
            });
        }
    }

    fn text(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str) {
        let Value::Str(text) = node.value() else { return };
        let s = at.schema;
        let chars = text.chars().count();
        if let Some(min) = s.key("minLength").and_then(|n| n.as_i64())
            && (chars as i64) < min
        {
            self.fail(path, at, || format!("{} is too short", show(node)));
        }
        if let Some(max) = s.key("maxLength").and_then(|n| n.as_i64())
            && (chars as i64) > max
        {
            self.fail(path, at, || format!("{} is too long", show(node)));
        }
        if let Some(pattern) = s.key("pattern").and_then(|p| p.as_str()) {
            let re = self.regexes.entry(pattern.to_string()).or_insert_with(|| regex::Regex::new(pattern).ok());
            // A pattern the regex engine cannot take is not checked.
            if re.as_ref().is_some_and(|re| !re.is_match(text)) {
                self.fail(path, at, || format!("{} does not match '{pattern}'", show(node)));
            }
        }
    }

    fn object(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) {
        let Some(pairs) = node.pairs() else { return };
        let pairs: Vec<_> = pairs.collect();
        let s = at.schema;
        let text_key = |k: &NodeRef<'_>| k.as_str().map(str::to_string);
        let has = |name: &str| pairs.iter().any(|(k, _)| k.as_str() == Some(name));
        if let Some(required) = list(s.key("required")) {
            for name in required.iter().filter_map(|r| r.as_str()) {
                if !has(name) {
                    self.fail(path, at, || format!("'{name}' is a required property"));
                }
            }
        }
        if let Some(deps) = map(s.key("dependencies")) {
            for (k, dep) in deps {
                let Some(name) = k.as_str() else { continue };
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
        let properties = s.key("properties");
        let patterns: Vec<(String, NodeRef<'c>)> = map(s.key("patternProperties"))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v)))
            .collect();
        let additional = s.key("additionalProperties");
        for (k, value) in &pairs {
            let key = text_key(k);
            let child = format!("{path}/{}", escape(&k.key_text()));
            let mut matched = false;
            if let Some(sub) = key.as_deref().and_then(|key| properties.and_then(|p| p.key(key))) {
                matched = true;
                self.check(*value, At { schema: sub, ..at }, &child, depth + 1);
            }
            for (pattern, sub) in &patterns {
                let re = self.regexes.entry(pattern.clone()).or_insert_with(|| regex::Regex::new(pattern).ok());
                if key.as_deref().is_some_and(|key| re.as_ref().is_some_and(|re| re.is_match(key))) {
                    matched = true;
                    self.check(*value, At { schema: *sub, ..at }, &child, depth + 1);
                }
            }
            if matched {
                continue;
            }
            match additional {
                Some(a) if a.as_bool() == Some(false) => {
                    self.fail(path, at, || format!("additional property '{}' is not allowed", k.key_text()));
                }
                Some(a) if a.pairs().is_some() => self.check(*value, At { schema: a, ..at }, &child, depth + 1),
                _ => {}
            }
        }
    }

    fn array(&mut self, node: NodeRef<'_>, at: At<'c>, path: &str, depth: usize) {
        let Some(items) = node.items() else { return };
        let items: Vec<_> = items.collect();
        let s = at.schema;
        if let Some(min) = s.key("minItems").and_then(|n| n.as_i64())
            && (items.len() as i64) < min
        {
            self.fail(path, at, || format!("{} is too short (at least {min} items)", show(node)));
        }
        if let Some(max) = s.key("maxItems").and_then(|n| n.as_i64())
            && (items.len() as i64) > max
        {
            self.fail(path, at, || format!("{} is too long (at most {max} items)", show(node)));
        }
        if s.key("uniqueItems").and_then(|u| u.as_bool()) == Some(true) {
            let twice = items.iter().enumerate().any(|(i, a)| items[i + 1..].iter().any(|b| equal(*a, *b)));
            if twice {
                self.fail(path, at, || format!("{} has non-unique elements", show(node)));
            }
        }
        let Some(schema) = s.key("items") else { return };
        match schema.items() {
            // A tuple: each item its own schema, the rest `additionalItems`.
            Some(tuple) => {
                let tuple: Vec<_> = tuple.collect();
                let additional = s.key("additionalItems");
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

    /// The schema a `$ref` in document `doc` names: `#`, `#/definitions/x`, another
    /// document relative to this one (`software-1.0.0`, `../unit/unit-1.0.0`) or by its
    /// full id, with or without a fragment.
    fn resolve(&self, doc: usize, reference: &str) -> Option<At<'c>> {
        let here = self.catalog.name(doc);
        let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let name = if target.is_empty() {
            here.to_string()
        } else if let Some(full) = target.strip_prefix(SCHEMA_PREFIX) {
            full.to_string()
        } else {
            let mut parts: Vec<&str> = here.split('/').collect();
            parts.pop();
            for step in target.split('/') {
                match step {
                    ".." => {
                        parts.pop();
                    }
                    "." | "" => {}
                    s => parts.push(s),
                }
            }
            parts.join("/")
        };
        let &doc = self.catalog.by_name.get(name.as_str())?;
        let mut node = self.catalog.root(doc)?;
        for step in fragment.split('/').filter(|s| !s.is_empty()) {
            let step = step.replace("~1", "/").replace("~0", "~");
            node = match node.items() {
                Some(_) => node.index(step.parse().ok()?)?,
                None => node.key(&step)?,
            };
        }
        Some(At { schema: node, doc })
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

/// Equality as `enum` and `uniqueItems` take it: numbers by value, `true` not `1`.
fn equal(a: NodeRef<'_>, b: NodeRef<'_>) -> bool {
    match (a.value(), b.value()) {
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(a.tree().node(*p), b.tree().node(*q)))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    let (k, v) = (a.tree().node(*k), a.tree().node(*v));
                    y.iter().any(|(k2, v2)| equal(k, b.tree().node(*k2)) && equal(v, b.tree().node(*v2)))
                })
        }
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::BigInt(x), Value::BigInt(y)) => x == y,
        _ => number(a).zip(number(b)).is_some_and(|(x, y)| x == y),
    }
}

/// `*` matches any text, as the reference's `uri_match` takes a tag pattern.
fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A short form of a node for messages.
fn show(node: NodeRef<'_>) -> String {
    let text = match node.value() {
        Value::Str(s) => format!("'{s}'"),
        Value::Seq(items) => {
            let shown: Vec<String> = items.iter().take(4).map(|i| show(node.tree().node(*i))).collect();
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
        assert!(glob_match("tag:stsci.edu:asdf/core/ndarray-1.*", "tag:stsci.edu:asdf/core/ndarray-1.1.0"));
        assert!(!glob_match("tag:stsci.edu:asdf/core/ndarray-1.*", "tag:stsci.edu:asdf/core/ndarray-2.0.0"));
        assert!(glob_match("a*b*c", "aXXbYYc") && !glob_match("a*b*c", "aXXbYY") && glob_match("abc", "abc"));
        assert!(!glob_match("abc", "abcd") && glob_match("a*", "a"));
    }
}
