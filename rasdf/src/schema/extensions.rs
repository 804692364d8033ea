//! Extension schemas: [`Schemas`], documents added at run time to the standard's bundled
//! ones, from folders laid out as the Python packages ship their resources (`rad`,
//! `asdf_transform_schemas`, `asdf_wcs_schemas`, `asdf-astropy`...: manifests and
//! schemas, in any folders below), or given as (URI, text) pairs; and the tags the
//! manifests (extensions) define, with their schemas.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::error::{Error, ErrorKind, Location};
use crate::header::KNOWN_STANDARDS;
use crate::limits::Limits;
use crate::tree::{NodeRef, Tree, Value};

/// The schemas and manifests of extensions, beside the ASDF Standard's own (which rasdf
/// bundles): what [`super::validate_with`] validates the tags of extensions with.
///
/// - A folder ([`Schemas::add_dir`]) is read whole, its sub-folders too: every `.yaml`
///   or `.yml` file is a document known by its `id` (a file without one, such as
///   asdf-standard's `version_map-*.yaml`, is skipped). A document with `extension_uri`
///   and `tags` is a manifest: its tags are defined, each with its `schema_uri` (one or
///   a list), for the files of the ASDF Standards its `asdf_standard_requirement`
///   admits (every one without it), as the reference enables an installed extension.
/// - [`Schemas::add_document`] adds a document under a URI of the caller's (the keys of
///   the reference's resource manager) and [`Schemas::add_extension`] the tags of an
///   extension, so that a caller can pass exactly what the reference has installed.
///
/// **Which wins.** The standard's bundled schemas and core manifests come first: a
/// document with the URI of a bundled schema (asdf-standard's own resources, say) is
/// not used, and a core tag keeps its bundled schema. Among the documents added, the
/// first with a URI wins, and among the extensions the first that defines a tag, in the
/// order they were added (a folder's files in the order of their paths), as the
/// reference takes the first of its enabled extensions that defines a tag.
///
/// A `$ref` is resolved against the `id` of the document it is in (`../common-1.0.0`,
/// `ref_common-1.0.0#/definitions/x`), else taken as the full URI of a document (bundled
/// or added); one that names no document known is taken as met.
///
/// **Parsed when needed.** A schema is known by its top-level `id:` line, found without
/// parsing it, and parsed when a validation first needs it (as the reference loads a
/// resource), so that a folder of a thousand schemas costs a validation only those its
/// tags reach; one that does not parse then is a validation error naming its file.
/// Manifests, and documents whose `id` is not on a line of its own, are parsed as they
/// are added. [`Schemas::parse_all`] parses every document at once.
pub struct Schemas {
    pub(super) docs: Vec<Doc>,
    by_uri: HashMap<String, u32>,
    extensions: Vec<Extension>,
    /// Per standard of [`KNOWN_STANDARDS`], the tags validated and their schemas' URIs;
    /// made when first needed, and again after documents or extensions are added.
    tag_maps: Vec<OnceLock<TagMap>>,
}

/// Each tag defined for a standard, with the URIs of its schemas (none: the tag is
/// defined without a schema, and not validated).
pub(super) type TagMap = HashMap<String, Vec<String>>;

/// A document added.
pub(super) struct Doc {
    /// The base its relative `$ref`s resolve against: its `id`, else its URI.
    pub(super) base: String,
    /// The name shown in errors: the URI without `http://stsci.edu/schemas/asdf/`.
    pub(super) name: String,
    /// Where it came from, for errors: its file, or the URI it was given under.
    origin: String,
    /// The text, until parsed.
    text: String,
    tree: OnceLock<Result<Tree, String>>,
}

impl Doc {
    /// The document's tree, parsed when first asked for; `Err` says why it does not
    /// parse (naming its file), or that its `id` is not the one found on its line.
    pub(super) fn tree(&self) -> Result<&Tree, &str> {
        let parsed = self.tree.get_or_init(|| {
            let tree = Tree::parse(&self.text, &Limits::default()).map_err(|(e, at)| located(&self.origin, &e, at))?;
            let id = tree.root().and_then(|r| r.key("id")).and_then(|i| i.as_str());
            match id {
                Some(id) if id != self.base => Err(format!("{}: its id is {id}, not {}", self.origin, self.base)),
                _ => Ok(tree),
            }
        });
        parsed.as_ref().map_err(String::as_str)
    }

    fn parsed(base: String, origin: String, tree: Tree) -> Doc {
        let name = base.strip_prefix(super::validate::SCHEMA_PREFIX).unwrap_or(&base).to_string();
        Doc { base, name, origin, text: String::new(), tree: OnceLock::from(Ok(tree)) }
    }

    fn lazy(base: String, origin: String, text: String) -> Doc {
        let name = base.strip_prefix(super::validate::SCHEMA_PREFIX).unwrap_or(&base).to_string();
        Doc { base, name, origin, text, tree: OnceLock::new() }
    }
}

/// A parse error as text: where (file or URI, line and column) and what.
fn located(origin: &str, e: &crate::tree::TreeError, at: Option<(usize, usize)>) -> String {
    match at {
        Some((l, c)) => format!("{origin}: line {l}, column {c}: {e}"),
        None => format!("{origin}: {e}"),
    }
}

/// An extension: the standards it is for, and its tags with their schema URIs.
struct Extension {
    requirement: Requirement,
    tags: Vec<(String, Vec<String>)>,
}

impl Default for Schemas {
    fn default() -> Schemas {
        Schemas { docs: Vec::new(), by_uri: HashMap::new(), extensions: Vec::new(), tag_maps: fresh_tag_maps() }
    }
}

fn fresh_tag_maps() -> Vec<OnceLock<TagMap>> {
    KNOWN_STANDARDS.iter().map(|_| OnceLock::new()).collect()
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("documents", &self.docs.len())
            .field("extensions", &self.extensions.len())
            .finish()
    }
}

/// What a file (or a given text) holds, as far as adding it needs to know.
enum Found {
    /// A document whose `id` its own line gives: parsed later.
    Lazy { id: String, text: String },
    /// A document parsed now (a manifest, or an `id` not on a line of its own).
    Parsed(Tree),
}

/// Reads a file of a folder: `Found`, or an error naming it. Only a regular file is
/// read (opened without blocking, so that a FIFO does not hang), and no more than the
/// bytes it had when the folder was listed.
fn read(file: &Listed) -> Result<Found, Error> {
    use std::io::Read;
    let at = || Location::default().with_file(&file.shown);
    let (opened, _) = crate::file::open_regular(&file.real).map_err(|e| Error::new(e, at()))?;
    let mut bytes = Vec::with_capacity(usize::try_from(file.len).unwrap_or(0));
    opened.take(file.len.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::new(e, at()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > file.len {
        return Err(usage_at(&file.shown, format!("it grew past its {} bytes while the folder was read", file.len)));
    }
    let text = String::from_utf8(bytes).map_err(|e| usage_at(&file.shown, format!("not UTF-8: {e}")))?;
    examine(text).map_err(|(e, line)| {
        let mut location = at();
        location.line = line;
        Error::new(e, location)
    })
}

/// A text: lazy when its `id` is on a line of its own and it is no manifest.
fn examine(text: String) -> Result<Found, (crate::tree::TreeError, Option<(usize, usize)>)> {
    match top_level_id(&text) {
        Some(id) => Ok(Found::Lazy { id, text }),
        None => Tree::parse(&text, &Limits::default()).map(Found::Parsed),
    }
}

/// The `id` of a schema written as the Python packages write them, a block mapping at
/// column 0 with an `id: URI` line, found without parsing; `None` for a manifest (an
/// `extension_uri:` line) and for anything else (parsed to be sure).
fn top_level_id(text: &str) -> Option<String> {
    let mut id = None;
    let mut content = false;
    for line in text.lines() {
        let first = line.bytes().next();
        match first {
            None | Some(b' ' | b'#') => continue,
            Some(b'%') if !content => continue,
            _ => {}
        }
        if line.starts_with("---") && !content {
            // `--- !tag` or `--- {...}`: a root written on the marker's line.
            if line.trim_end().len() > 3 {
                return None;
            }
            content = true;
            continue;
        }
        if line.starts_with("---") || line.starts_with("...") {
            break;
        }
        content = true;
        // Every line at column 0 must be a key of the root mapping.
        let (key, value) = line.split_once(':')?;
        if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_$-".contains(&b)) {
            return None;
        }
        match key {
            "extension_uri" | "tags" => return None,
            "id" if id.is_none() => {
                let value = value.trim();
                let value = value.split(" #").next().unwrap_or_default().trim_end();
                let unquoted = match value.as_bytes().first() {
                    Some(b'\'') => value.strip_prefix('\'')?.strip_suffix('\'')?.to_string(),
                    Some(b'"') => value.strip_prefix('"')?.strip_suffix('"')?.to_string(),
                    Some(b'[' | b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'@' | b'`') | None => return None,
                    Some(_) => value.to_string(),
                };
                if unquoted.contains(['\\', '\'', '"']) || unquoted.is_empty() {
                    return None;
                }
                id = Some(unquoted);
            }
            "id" => return None,
            _ => {}
        }
    }
    id
}

impl Schemas {
    /// No documents: validation with these is the standard's alone.
    pub fn new() -> Schemas {
        Schemas::default()
    }

    /// The documents of every folder of `dirs` ([`Schemas::add_dir`]), in that order.
    ///
    /// # Errors
    /// As [`Schemas::add_dir`].
    pub fn from_dirs<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> Result<Schemas, Error> {
        let mut s = Schemas::new();
        for dir in dirs {
            s.add_dir(dir.as_ref())?;
        }
        Ok(s)
    }

    /// Adds every `.yaml` and `.yml` file under `dir` (a folder, read with its
    /// sub-folders, or a single file): each document with an `id` under that URI, each
    /// manifest's tags as an extension's. Returns how many documents it added.
    ///
    /// Only what is inside `dir` is read: a symbolic link is followed when its target
    /// (its real path) is inside the folder's real path, a folder met again through a
    /// link is read once. Only regular files are read, each of at most
    /// [`Schemas::MAX_DOCUMENT_BYTES`], a folder's together at most
    /// [`Schemas::MAX_FOLDER_BYTES`], in at most [`Schemas::MAX_ENTRIES`] files and
    /// folders, [`Schemas::MAX_DEPTH`] deep.
    ///
    /// # Errors
    /// A folder or file that cannot be read, a file that is not UTF-8, a manifest (or a
    /// document whose `id` is not on a line of its own) that is not YAML: the error names
    /// the file, and the line where the YAML fails. (Other documents are parsed when
    /// first needed: [`Schemas::parse_all`].) Also, naming the path: a `.yaml` or `.yml`
    /// that is no regular file (a FIFO, a device, a socket), or larger than its bound;
    /// a symbolic link out of the folder that is named so or leads to a folder (a link
    /// to a file of another name is not read, and not looked at); a folder over its
    /// bounds.
    pub fn add_dir(&mut self, dir: impl AsRef<Path>) -> Result<usize, Error> {
        let dir = dir.as_ref();
        let io = |e: std::io::Error| Error::new(e, Location::default().with_file(dir));
        let root = std::fs::canonicalize(dir).map_err(io)?;
        let meta = std::fs::metadata(&root).map_err(io)?;
        let mut walk = Walk {
            given: dir.to_path_buf(),
            root: root.clone(),
            folders: HashSet::new(),
            seen: HashSet::new(),
            entries: 0,
            bytes: 0,
            files: Vec::new(),
        };
        if meta.is_dir() {
            walk.folder(dir, &root, 0)?;
        } else {
            walk.file(dir, root, &meta)?;
        }
        let files = walk.files;
        let found: Vec<Result<Found, Error>> = files.par_iter().map(read).collect();
        let mut added = 0;
        for (file, found) in files.iter().zip(found) {
            let file = &file.shown;
            let origin = file.display().to_string();
            match found? {
                Found::Lazy { id, text } => added += usize::from(self.insert(Doc::lazy(id, origin, text))),
                Found::Parsed(tree) => {
                    let Some(root) = tree.root() else { continue };
                    let Some(id) = root.key("id").and_then(|i| i.as_str()).map(str::to_string) else { continue };
                    if let Some(ext) = Extension::from_manifest(root).map_err(|m| usage_at(file, m))? {
                        self.extensions.push(ext);
                    }
                    added += usize::from(self.insert(Doc::parsed(id, origin, tree)));
                }
            }
        }
        self.tag_maps = fresh_tag_maps();
        Ok(added)
    }

    /// Adds the document `text` under `uri` (its relative `$ref`s resolve against its
    /// `id`, else `uri`). A manifest added so defines no tags: [`Schemas::add_extension`]
    /// does. Returns whether it was added (not when a document has `uri` already).
    ///
    /// # Errors
    /// Text that is not YAML, when its `id` is not on a line of its own (the error names
    /// `uri`; other texts are parsed when first needed).
    pub fn add_document(&mut self, uri: &str, text: &str) -> Result<bool, Error> {
        let added = self.add_documents(vec![(uri.to_string(), text.to_string())])?;
        Ok(added == 1)
    }

    /// Adds documents given as (URI, text) pairs, each as [`Schemas::add_document`] adds
    /// it. Returns how many were added.
    ///
    /// # Errors
    /// As [`Schemas::add_document`], for the first that fails.
    pub fn add_documents(&mut self, documents: Vec<(String, String)>) -> Result<usize, Error> {
        let found: Vec<_> = documents
            .into_par_iter()
            .map(|(uri, text)| {
                let found = examine(text);
                (uri, found)
            })
            .collect();
        let mut added = 0;
        for (uri, found) in found {
            let doc = match found {
                Ok(Found::Lazy { id, text }) => Doc::lazy(id, uri.clone(), text),
                Ok(Found::Parsed(tree)) => {
                    let base =
                        tree.root().and_then(|r| r.key("id")).and_then(|i| i.as_str()).unwrap_or(&uri).to_string();
                    Doc::parsed(base, uri.clone(), tree)
                }
                Err((e, at)) => {
                    return Err(Error::new(
                        ErrorKind::Usage(located(&format!("schema {uri}"), &e, at)),
                        Location::default(),
                    ));
                }
            };
            added += usize::from(self.insert_as(uri, doc));
        }
        self.tag_maps = fresh_tag_maps();
        Ok(added)
    }

    /// Adds an extension: the ASDF Standards it is for (`requirement`, as the reference's
    /// `asdf_standard_requirement` prints: `>=1.6.0`, `==1.5.0`, `>=1.1.0,<1.6.0`; `None`
    /// or empty: all), and its tags, each with the URIs of its schemas.
    ///
    /// # Errors
    /// A requirement that does not read.
    pub fn add_extension(&mut self, requirement: Option<&str>, tags: Vec<(String, Vec<String>)>) -> Result<(), Error> {
        let requirement = Requirement::parse(requirement.unwrap_or("")).ok_or_else(|| {
            Error::new(ErrorKind::Usage(format!("{requirement:?}: not a version requirement")), Location::default())
        })?;
        self.extensions.push(Extension { requirement, tags });
        self.tag_maps = fresh_tag_maps();
        Ok(())
    }

    /// Parses every document not parsed yet (on every core).
    ///
    /// # Errors
    /// The first document that does not parse, naming its file (or URI) and line.
    pub fn parse_all(&self) -> Result<(), Error> {
        let failed = self.docs.par_iter().filter_map(|d| d.tree().err().map(str::to_string)).collect::<Vec<_>>();
        match failed.into_iter().next() {
            Some(e) => Err(Error::new(ErrorKind::Usage(e), Location::default())),
            None => Ok(()),
        }
    }

    /// How many documents were added.
    pub fn documents(&self) -> usize {
        self.docs.len()
    }

    /// How many extensions (manifests) were added.
    pub fn extensions(&self) -> usize {
        self.extensions.len()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.extensions.is_empty()
    }

    fn insert(&mut self, doc: Doc) -> bool {
        self.insert_as(doc.base.clone(), doc)
    }

    fn insert_as(&mut self, uri: String, doc: Doc) -> bool {
        if self.by_uri.contains_key(&uri) {
            return false;
        }
        let Ok(n) = u32::try_from(self.docs.len()) else { return false };
        self.by_uri.insert(uri, n);
        self.docs.push(doc);
        true
    }

    /// The place of the document known by `uri`.
    pub(super) fn lookup(&self, uri: &str) -> Option<u32> {
        self.by_uri.get(uri).copied()
    }

    /// The tags validated in a file of standard `standard`, with their schemas' URIs:
    /// the bundled core manifest's, then the enabled extensions'. `None` for a standard
    /// rasdf has no manifest for.
    pub(super) fn tag_map(&self, standard: &str) -> Option<&TagMap> {
        let i = KNOWN_STANDARDS.iter().position(|s| *s == standard)?;
        let cell = self.tag_maps.get(i)?;
        Some(cell.get_or_init(|| {
            let mut map = super::validate::core_tags(standard);
            for ext in self.extensions.iter().filter(|e| e.requirement.admits(standard)) {
                for (tag, uris) in &ext.tags {
                    map.entry(tag.clone()).or_insert_with(|| uris.clone());
                }
            }
            map
        }))
    }
}

impl Schemas {
    /// The most bytes a document of a folder may have.
    pub const MAX_DOCUMENT_BYTES: u64 = 16 << 20;
    /// The most bytes the documents of one folder ([`Schemas::add_dir`]) may have together.
    pub const MAX_FOLDER_BYTES: u64 = 256 << 20;
    /// The most files and folders a folder's walk visits.
    pub const MAX_ENTRIES: usize = 100_000;
    /// How deep a folder's walk goes.
    pub const MAX_DEPTH: usize = 64;
}

/// A file of a folder to read.
struct Listed {
    /// Its path as found below the folder given (for errors and origins).
    shown: PathBuf,
    /// Its real path (links resolved), inside the folder's.
    real: PathBuf,
    /// Its size when listed: no more is read.
    len: u64,
}

/// The walk of a folder ([`Schemas::add_dir`]): what it found, and its bounds.
struct Walk {
    /// The folder as given, and its real path.
    given: PathBuf,
    root: PathBuf,
    /// The real paths of the folders and files met, each taken once.
    folders: HashSet<PathBuf>,
    seen: HashSet<PathBuf>,
    entries: usize,
    bytes: u64,
    /// The `.yaml` and `.yml` files, in path order.
    files: Vec<Listed>,
}

impl Walk {
    /// Lists folder `real` (shown as `shown`), its sub-folders too, in path order.
    fn folder(&mut self, shown: &Path, real: &Path, depth: usize) -> Result<(), Error> {
        let io = |e: std::io::Error, p: &Path| Error::new(e, Location::default().with_file(p));
        if depth > Schemas::MAX_DEPTH {
            return Err(usage_at(shown, format!("folders nested more than {} deep: not read", Schemas::MAX_DEPTH)));
        }
        if !self.folders.insert(real.to_path_buf()) {
            // A folder met again through a link: already listed.
            return Ok(());
        }
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(real)
            .map_err(|e| io(e, shown))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| io(e, shown))?;
        names.sort();
        for name in names {
            self.entries += 1;
            if self.entries > Schemas::MAX_ENTRIES {
                return Err(usage_at(
                    &self.given,
                    format!(
                        "more than {} files and folders below it: not read (name the folder of one package's \
                         schemas)",
                        Schemas::MAX_ENTRIES
                    ),
                ));
            }
            let (shown, real) = (shown.join(&name), real.join(&name));
            let yaml = Path::new(&name).extension().is_some_and(|e| e == "yaml" || e == "yml");
            let own = std::fs::symlink_metadata(&real).map_err(|e| io(e, &shown))?;
            let (target, meta) = if own.file_type().is_symlink() {
                let target = match std::fs::canonicalize(&real) {
                    Ok(t) => t,
                    // A link to nothing: an error if it would be read.
                    Err(e) if yaml => return Err(io(e, &shown)),
                    Err(_) => continue,
                };
                let meta = std::fs::metadata(&target).map_err(|e| io(e, &shown))?;
                if !target.starts_with(&self.root) {
                    if yaml || meta.is_dir() {
                        return Err(usage_at(
                            &shown,
                            format!(
                                "a symbolic link to {}, outside the folder {}: not followed",
                                target.display(),
                                self.root.display()
                            ),
                        ));
                    }
                    // A file of another name out of the folder: never read.
                    continue;
                }
                (target, meta)
            } else {
                (real, own)
            };
            if meta.is_dir() {
                self.folder(&shown, &target, depth + 1)?;
            } else if yaml {
                self.file(&shown, target, &meta)?;
            }
        }
        Ok(())
    }

    /// Lists file `real` (shown as `shown`, its metadata `meta`): a regular file within
    /// the bounds, once.
    fn file(&mut self, shown: &Path, real: PathBuf, meta: &std::fs::Metadata) -> Result<(), Error> {
        if !meta.is_file() {
            let what = crate::file::kind_of(meta);
            return Err(usage_at(shown, format!("not a regular file but {what}: not read")));
        }
        if meta.len() > Schemas::MAX_DOCUMENT_BYTES {
            return Err(usage_at(
                shown,
                format!(
                    "{} bytes, over the {} MiB a schema document may have: not read",
                    meta.len(),
                    Schemas::MAX_DOCUMENT_BYTES >> 20
                ),
            ));
        }
        if !self.seen.insert(real.clone()) {
            // The same file through a link: read once.
            return Ok(());
        }
        self.bytes = self.bytes.saturating_add(meta.len());
        if self.bytes > Schemas::MAX_FOLDER_BYTES {
            return Err(usage_at(
                &self.given,
                format!(
                    "its schema documents have more than the {} MiB a folder's may have together: not read",
                    Schemas::MAX_FOLDER_BYTES >> 20
                ),
            ));
        }
        self.files.push(Listed { shown: shown.to_path_buf(), real, len: meta.len() });
        Ok(())
    }
}

fn usage_at(file: &Path, message: String) -> Error {
    Error::new(ErrorKind::Usage(message), Location::default().with_file(file))
}

impl Extension {
    /// The extension a manifest defines; `None` for a document that is no manifest.
    fn from_manifest(root: NodeRef<'_>) -> Result<Option<Extension>, String> {
        let (Some(_), Some(list)) = (root.key("extension_uri"), root.key("tags")) else { return Ok(None) };
        let Some(list) = list.items() else { return Ok(None) };
        let requirement = Requirement::from_node(root.key("asdf_standard_requirement"))
            .ok_or("asdf_standard_requirement is not a version requirement")?;
        let mut tags = Vec::new();
        for entry in list {
            if let Some(tag) = entry.as_str() {
                tags.push((tag.to_string(), Vec::new()));
                continue;
            }
            let Some(tag) = entry.key("tag_uri").and_then(|t| t.as_str()) else { continue };
            let schemas = match entry.key("schema_uri") {
                Some(s) => match s.items() {
                    Some(list) => list.filter_map(|u| u.as_str().map(str::to_string)).collect(),
                    None => s.as_str().map(str::to_string).into_iter().collect(),
                },
                None => Vec::new(),
            };
            tags.push((tag.to_string(), schemas));
        }
        Ok(Some(Extension { requirement, tags }))
    }
}

/// The ASDF Standards an extension is for: every clause must hold.
#[derive(Debug, Clone, Default)]
struct Requirement(Vec<(Op, Version)>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
    /// `~=X.Y.Z`: at least X.Y.Z, below X.(Y+1).
    Compatible,
    /// `==X.Y.*`: the first numbers equal.
    Prefix(usize),
}

type Version = [u64; 3];

fn version(text: &str) -> Option<(Version, usize)> {
    let parts: Vec<&str> = text.trim().split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut v = [0; 3];
    for (slot, p) in v.iter_mut().zip(&parts) {
        *slot = p.parse().ok()?;
    }
    Some((v, parts.len()))
}

impl Requirement {
    /// `>=1.6.0`, `==1.5.0`, `>=1.1.0,<1.6.0`, `""` (any).
    fn parse(text: &str) -> Option<Requirement> {
        let mut clauses = Vec::new();
        for clause in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let (op, rest) = [("~=", Op::Compatible), ("==", Op::Eq), ("!=", Op::Ne), (">=", Op::Ge), ("<=", Op::Le)]
                .into_iter()
                .chain([(">", Op::Gt), ("<", Op::Lt)])
                .find_map(|(p, op)| clause.strip_prefix(p).map(|r| (op, r)))?;
            if op == Op::Eq
                && let Some(prefix) = rest.trim().strip_suffix(".*")
            {
                let (v, n) = version(prefix)?;
                clauses.push((Op::Prefix(n), v));
                continue;
            }
            clauses.push((op, version(rest)?.0));
        }
        Some(Requirement(clauses))
    }

    /// A manifest's `asdf_standard_requirement`: none (any), a version (that one), or
    /// a mapping of `gt`, `gte`, `lt`, `lte`.
    fn from_node(node: Option<NodeRef<'_>>) -> Option<Requirement> {
        let Some(node) = node.filter(|n| !n.is_null()) else { return Some(Requirement::default()) };
        if node.pairs().is_none() {
            return Requirement::parse(&format!("=={}", node.key_text()));
        }
        let mut clauses = Vec::new();
        for (key, op) in [("gt", Op::Gt), ("gte", Op::Ge), ("lt", Op::Lt), ("lte", Op::Le)] {
            let Some(v) = node.key(key) else { continue };
            if matches!(v.value(), Value::Null) {
                continue;
            }
            clauses.push((op, version(&v.key_text())?.0));
        }
        Some(Requirement(clauses))
    }

    fn admits(&self, standard: &str) -> bool {
        let Some((v, _)) = version(standard) else { return false };
        self.0.iter().all(|&(op, w)| match op {
            Op::Eq => v == w,
            Op::Ne => v != w,
            Op::Ge => v >= w,
            Op::Gt => v > w,
            Op::Le => v <= w,
            Op::Lt => v < w,
            Op::Compatible => v >= w && v[..2] == [w[0], w[1]],
            Op::Prefix(n) => v[..n] == w[..n],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_read_as_the_reference_reads_them() {
        let admits = |r: &str, v: &str| Requirement::parse(r).unwrap().admits(v);
        assert!(admits("", "1.0.0") && admits(">=1.6.0", "1.6.0") && !admits(">=1.6.0", "1.5.0"));
        assert!(admits("==1.5.0", "1.5.0") && !admits("==1.5.0", "1.6.0"));
        assert!(admits(">=1.1.0,<1.6.0", "1.5.0") && !admits(">=1.1.0,<1.6.0", "1.6.0"));
        assert!(admits("==1.*", "1.6.0") && admits("~=1.5.0", "1.5.3") && !admits("~=1.5.0", "1.6.0"));
        assert!(Requirement::parse("about 1").is_none());
        let tree = |t: &str| Tree::parse(t, &Limits::default()).unwrap();
        let t = tree("a: {gte: 1.1.0, lt: 1.6.0}\nb: 1.5.0\nc: null\n");
        let r = |k: &str| Requirement::from_node(t.get(k)).unwrap();
        assert!(r("a").admits("1.1.0") && !r("a").admits("1.6.0") && !r("a").admits("1.0.0"));
        assert!(r("b").admits("1.5.0") && !r("b").admits("1.6.0") && r("c").admits("1.0.0"));
    }
}
