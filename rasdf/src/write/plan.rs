//! The layout plan of a write: which block (or external file) each array's base goes
//! in, in the reference's order; which views are written alone (`views_only`, zero
//! strides); masks' blocks; and the output tree, where each ndarray node gets its
//! `source` and layout (written by [`crate::ndarray::node`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::document::{Document, PendingArray};
use super::{ArrayStorage, WriteOptions, node, try_buffer, usage};
use crate::block::Compression;
use crate::error::Result;
use crate::ndarray::node::{
    InlineText, LAYOUT_KEYS, NodeLayout, asdf_tagged, layout_pairs, mask_node, source_node, stream_pairs,
};
use crate::ndarray::{NdArray, Source, c_strides};
use crate::tree::overlay::{Children, visit_reachable};
use crate::tree::{ASDF_TAG_PREFIX, NodeArena, NodeId, Overlay, Value};

/// Where each array goes: block numbers for internal bases, file numbers for external
/// ones, and view copies when only views are written.
pub(super) struct Plan {
    /// (base, compression) in block order.
    pub(super) internal: Vec<(usize, Compression)>,
    pub(super) external: Vec<(usize, Compression)>,
    /// base -> block number or external file number.
    pub(super) slot: HashMap<usize, usize>,
    /// base -> the item size of the first array placed in it (blsc shuffles by it).
    pub(super) item_size: HashMap<usize, usize>,
    /// Per base: the view's own bytes when `views_only` made a copy.
    pub(super) view_data: Vec<Option<Vec<u8>>>,
    /// Per array node: (storage, base, layout) after overrides.
    pub(super) arrays: HashMap<NodeId, PendingArray>,
    /// Per array node whose inline nulls go to a block: the base of its mask array.
    pub(super) masks: HashMap<NodeId, usize>,
    /// How external block files are named (see [`Naming`]).
    pub(super) naming: Naming,
}

impl Plan {
    /// The item size of the arrays in base `base` (1 when none was placed there).
    pub(super) fn item_size(&self, base: usize) -> usize {
        self.item_size.get(&base).copied().unwrap_or(1)
    }
}

/// How the block files of an exploded file are named. The reference's names,
/// `<stem>NNNN.asdf`, unless the exploded file being replaced uses them: then
/// `<stem>-NNNN.asdf`, so that no block file of the old set is touched before the new
/// main file is in place. A write killed at any point leaves the old set or the new set
/// whole, never an old main file over some new block files; the old set's block files
/// are removed once the new main file is in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Naming {
    /// `<stem>NNNN.asdf`, as the reference names them.
    #[default]
    Reference,
    /// `<stem>-NNNN.asdf`.
    Alternate,
}

impl Naming {
    /// The naming the next write of the exploded file `main` uses: the one its current
    /// block files (`old`, from [`old_block_files`]) do not.
    pub(super) fn next(main: &Path, old: &[PathBuf]) -> Naming {
        let uses = |naming: Naming| old.iter().any(|p| naming.numbers(main, p));
        if uses(Naming::Reference) && !uses(Naming::Alternate) { Naming::Alternate } else { Naming::Reference }
    }

    /// Block file `n` of `main`.
    pub(super) fn path(self, main: &Path, n: usize) -> PathBuf {
        let mut name = main.file_stem().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
        if self == Naming::Alternate {
            name.push("-");
        }
        name.push(format!("{n:04}.asdf"));
        main.with_file_name(name)
    }

    /// Whether `file` is named as block file of `main` in this naming.
    fn numbers(self, main: &Path, file: &Path) -> bool {
        let (Some(stem), Some(name)) = (main.file_stem(), file.file_name()) else { return false };
        // (The OS's own encoding of both, the bytes on Unix: only the ASCII after the
        // stem is looked at.)
        let rest = name.as_encoded_bytes().strip_prefix(stem.as_encoded_bytes()).unwrap_or_default();
        let rest = match self {
            Naming::Reference => rest,
            Naming::Alternate => rest.strip_prefix(b"-").unwrap_or_default(),
        };
        let digits = rest.strip_suffix(b".asdf").unwrap_or_default();
        digits.len() >= 4 && digits.iter().all(u8::is_ascii_digit) && file.parent() == main.parent()
    }
}

/// The block files, in its folder and named as rasdf and the reference name them, that
/// the exploded file at `main` reads (none when there is no such file).
pub(super) fn old_block_files(main: &Path) -> Vec<PathBuf> {
    let Ok(old) = crate::AsdfFile::open(main) else { return Vec::new() };
    let base = match main.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut files = Vec::new();
    for array in old.arrays() {
        let Some(source) = array.node().key("source").and_then(|s| s.as_str()) else { continue };
        if let Ok(Some(p)) = crate::external::resolve(&base, source) {
            let p = main.with_file_name(p.file_name().unwrap_or_default());
            if [Naming::Reference, Naming::Alternate].iter().any(|n| n.numbers(main, &p)) && !files.contains(&p) {
                files.push(p);
            }
        }
    }
    files
}

/// `<stem>NNNN.asdf` beside `main`, as the reference names external block files (the
/// stem's bytes kept as they are, UTF-8 or not).
pub fn external_path(main: &Path, n: usize) -> PathBuf {
    Naming::Reference.path(main, n)
}

impl PendingArray {
    fn node_layout(&self) -> NodeLayout<'_> {
        NodeLayout {
            datatype: &self.datatype,
            byteorder: self.byteorder,
            shape: &self.shape,
            strides: &self.strides,
            offset: self.offset,
            inline: self.storage == ArrayStorage::Inline,
        }
    }
}

impl Document<'_> {
    pub(super) fn plan(&self, options: &WriteOptions) -> Result<Plan> {
        let mut plan = Plan {
            internal: Vec::new(),
            external: Vec::new(),
            slot: HashMap::new(),
            item_size: HashMap::new(),
            view_data: vec![None; self.bases.len()],
            arrays: HashMap::new(),
            masks: HashMap::new(),
            naming: Naming::Reference,
        };
        // Array nodes in tree order (preorder, as the reference numbers blocks).
        let mut order = Vec::new();
        self.tree.walk(|_, n| {
            if self.arrays.contains_key(&n.id()) {
                order.push(n.id());
            }
        });
        let mut extra_bases: Vec<Vec<u8>> = Vec::new();
        for id in order {
            let mut a = self.arrays[&id].clone();
            if let Some(s) = options.storage {
                a.storage = s;
            }
            let whole = self.bases[a.base].data.len();
            let contiguous = a.strides == c_strides(&a.shape, a.datatype.size()) && a.offset == 0;
            let covers = contiguous && a.shape.iter().product::<usize>() * a.datatype.size() == whole;
            // A stride of 0 is read but not written (the schema forbids it): the view is
            // materialised, as the reference's writer does.
            let zero_stride = a.strides.contains(&0) && a.shape.iter().all(|&d| d > 0);
            if (options.views_only && !covers || zero_stride) && a.storage != ArrayStorage::Inline {
                // Copy just what the view shows into a base of its own.
                let data = &self.bases[a.base].data;
                let view = NdArray::from_layout(&a.datatype, a.byteorder, &a.shape, &a.strides, a.offset, data);
                // (A view of a few bytes may show more elements than memory holds.)
                let len = a.shape.iter().try_fold(a.datatype.size(), |n, &d| n.checked_mul(d));
                let mut bytes = try_buffer(len, "the copy of an array view")?;
                for at in view.byte_offsets() {
                    bytes.extend_from_slice(&data[at..at + a.datatype.size()]);
                }
                extra_bases.push(bytes);
                a.strides = c_strides(&a.shape, a.datatype.size());
                a.offset = 0;
                a.base = self.bases.len() + extra_bases.len() - 1;
            }
            if a.storage != ArrayStorage::Inline {
                let comp = options.compression.unwrap_or_else(|| self.base_compression(a.base));
                let list = if a.storage == ArrayStorage::External { &mut plan.external } else { &mut plan.internal };
                if let std::collections::hash_map::Entry::Vacant(e) = plan.slot.entry(a.base) {
                    e.insert(list.len());
                    list.push((a.base, comp));
                    plan.item_size.insert(a.base, a.datatype.size());
                }
                if let Some(mask) = &a.block_mask {
                    // The mask's block follows the array's, as the reference numbers them.
                    let mut bytes = try_buffer(Some(mask.len()), "an array's mask")?;
                    bytes.extend(mask.iter().map(|&m| u8::from(m)));
                    extra_bases.push(bytes);
                    let base = self.bases.len() + extra_bases.len() - 1;
                    plan.slot.insert(base, list.len());
                    list.push((base, comp));
                    plan.masks.insert(id, base);
                }
            }
            plan.arrays.insert(id, a);
        }
        plan.view_data.extend(extra_bases.into_iter().map(Some));
        Ok(plan)
    }

    fn base_compression(&self, base: usize) -> Compression {
        self.bases.get(base).map_or(Compression::None, |b| b.compression)
    }

    /// The bytes of base `base` as written: the view's own copy when the plan made one.
    pub(super) fn block_bytes<'a>(&'a self, base: usize, plan: &'a Plan) -> &'a [u8] {
        match &plan.view_data[base] {
            Some(v) => v,
            None => &self.bases[base].data,
        }
    }

    /// Refuses a write whose external files would replace the file the document was read
    /// from: exploding `a0000.asdf` to `a.asdf` names the first block file `a0000.asdf`,
    /// and the input would be lost to a file of one block.
    pub(super) fn check_external_names(&self, plan: &Plan, main_path: Option<&Path>) -> Result<()> {
        let (Some(main), Some(from)) = (main_path, &self.read_from) else { return Ok(()) };
        for n in 0..plan.external.len() {
            let path = plan.naming.path(main, n);
            if path.canonicalize().is_ok_and(|p| &p == from) {
                return Err(usage(format!(
                    "external file {n} of {} would be {}, the file being rewritten: choose another output name",
                    main.display(),
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// The tree to emit: ndarray nodes filled in, asdf_library set, big ints as
    /// core/integer, key order as the schemas' propertyOrder asks; and the inline array
    /// data, whose text is written from the arrays' bytes: each array's `data` in the
    /// tree is a placeholder node, written by its [`InlineText`].
    pub(super) fn output_tree<'a>(
        &'a self,
        plan: &'a Plan,
        main: Option<&Path>,
    ) -> Result<(Overlay<'a>, Vec<(NodeId, InlineText<'a>)>)> {
        // Room for what is added: an array's layout keys and values.
        let more = plan.arrays.len().saturating_mul(32).saturating_add(64);
        // The changes sit on top of the document's tree, which is not copied.
        let mut tree = Overlay::with_room(&self.tree, more.min(self.tree.len().saturating_mul(4) + (1 << 20)));
        let mut inline = Vec::new();
        for (&id, a) in &plan.arrays {
            let old_pairs = match tree.value(id) {
                Value::Map(p) => p.clone(),
                _ => Vec::new(),
            };
            let mut pairs = Vec::new();
            let mut put = |tree: &mut Overlay<'_>, k: &str, v: NodeId| {
                let k = tree.push(node(Value::Str(k.into())));
                pairs.push((k, v));
            };
            // Keys other than the layout's stay (unknown extras), the mask first.
            let extra: Vec<(NodeId, NodeId)> = old_pairs
                .iter()
                .copied()
                .filter(|(k, _)| !tree.as_str(*k).is_some_and(|k| k == "mask" || LAYOUT_KEYS.contains(&k)))
                .collect();
            let mut mask = old_pairs.iter().copied().find(|(k, _)| tree.as_str(*k) == Some("mask")).map(|(_, m)| m);
            let data_bytes = self.block_bytes(a.base, plan);
            match a.storage {
                ArrayStorage::Inline => {
                    let arr =
                        NdArray::from_layout(&a.datatype, a.byteorder, &a.shape, &a.strides, a.offset, data_bytes);
                    let data = tree.push(node(Value::Null));
                    inline.push((data, InlineText::new(arr, a.inline_mask.as_deref(), Some(&self.standard))));
                    put(&mut tree, "data", data);
                }
                ArrayStorage::Internal | ArrayStorage::External => {
                    let source = array_source(a.storage, plan.slot[&a.base], main, plan.naming)?;
                    let source_id = source_node(&mut tree, &source);
                    put(&mut tree, "source", source_id);
                    if let Some(&base) = plan.masks.get(&id) {
                        let source = array_source(a.storage, plan.slot[&base], main, plan.naming)?;
                        let source = source_node(&mut tree, &source);
                        let tag = tree.node(id).tag.clone();
                        mask = Some(mask_node(&mut tree, tag, source, &a.shape));
                    }
                }
            }
            if let Some(m) = mask {
                put(&mut tree, "mask", m);
            }
            layout_pairs(&mut tree, &a.node_layout(), &mut pairs);
            pairs.extend(extra);
            tree.set_value(id, Value::Map(pairs));
        }
        if let Some((id, dt, row)) = &self.stream {
            let pairs = stream_pairs(&mut tree, *dt, row);
            tree.set_value(*id, Value::Map(pairs));
        }
        let root = tree.root().ok_or_else(|| usage("no root"))?;
        let lib = software(&mut tree);
        let Value::Map(root_pairs) = tree.value(root).clone() else {
            return Err(usage("the root must be a mapping"));
        };
        let lib_key = tree.push(node(Value::Str("asdf_library".into())));
        let mut pairs = vec![(lib_key, lib)];
        let history: Vec<_> = root_pairs.iter().copied().filter(|(k, _)| tree.as_str(*k) == Some("history")).collect();
        pairs.extend(history);
        pairs.extend(
            root_pairs.into_iter().filter(|(k, _)| !matches!(tree.as_str(*k), Some("asdf_library" | "history"))),
        );
        tree.set_value(root, Value::Map(pairs));
        big_ints_to_integer_tags(&mut tree, &inline);
        Ok((tree, inline))
    }
}

/// The `source` of an array in block `slot` (or external file `slot`, named after `main`).
fn array_source(storage: ArrayStorage, slot: usize, main: Option<&Path>, naming: Naming) -> Result<Source> {
    Ok(if storage == ArrayStorage::External {
        let main = main.ok_or_else(|| usage("external arrays need the main file's path to name their files"))?;
        let p = naming.path(main, slot);
        Source::External(p.file_name().map(crate::external::percent_encode).unwrap_or_default())
    } else {
        Source::Block(i64::try_from(slot).unwrap_or(i64::MAX))
    })
}

/// Ints outside the ASDF literal range [-(2^63 - 2), 2^63 - 1] become core/integer: those
/// the output reaches, apart from inline array data (whose `inline` placeholders its
/// [`InlineText`] writes: its ints stay literals, which the reference reads back).
fn big_ints_to_integer_tags(tree: &mut Overlay<'_>, inline: &[(NodeId, InlineText<'_>)]) {
    let placeholders: std::collections::HashSet<NodeId> = inline.iter().map(|(id, _)| *id).collect();
    let mut ids: Vec<NodeId> = Vec::new();
    let Ok(()) = visit_reachable(&*tree, |id, node| -> std::result::Result<_, std::convert::Infallible> {
        if placeholders.contains(&id) {
            return Ok(Children::Skip);
        }
        match node.value {
            Value::BigInt(_) => ids.push(id),
            Value::Int(i) if i < -(i64::MAX - 1) => ids.push(id),
            _ => {}
        }
        Ok(Children::All)
    });
    for id in ids {
        let v: num_bigint::BigInt = match tree.value(id) {
            Value::BigInt(b) => (**b).clone(),
            Value::Int(i) => (*i).into(),
            _ => continue,
        };
        let (sign, mag) = v.into_parts();
        let words = mag.to_u32_digits();
        let word_nodes = words.iter().map(|&w| tree.push(node(Value::Int(i64::from(w))))).collect();
        let data = tree.push(node(Value::Seq(word_nodes)));
        let k_data = tree.push(node(Value::Str("data".into())));
        let dt = tree.push(node(Value::Str("uint32".into())));
        let k_dt = tree.push(node(Value::Str("datatype".into())));
        let n = tree.push(node(Value::Int(i64::try_from(words.len()).unwrap_or(0))));
        let shape = tree.push(node(Value::Seq(vec![n])));
        let k_shape = tree.push(node(Value::Str("shape".into())));
        let arr = tree
            .push(asdf_tagged("core/ndarray-1.1.0", Value::Map(vec![(k_data, data), (k_dt, dt), (k_shape, shape)])));
        let k_words = tree.push(node(Value::Str("words".into())));
        let s = tree.push(node(Value::Str(if sign == num_bigint::Sign::Minus { "-" } else { "+" }.into())));
        let k_sign = tree.push(node(Value::Str("sign".into())));
        let text = tree
            .push(node(Value::Str(format!("{}{mag}", if sign == num_bigint::Sign::Minus { "-" } else { "" }).into())));
        let k_text = tree.push(node(Value::Str("string".into())));
        tree.set_value(id, Value::Map(vec![(k_words, arr), (k_sign, s), (k_text, text)]));
        tree.set_tag(id, Some(format!("{ASDF_TAG_PREFIX}core/integer-1.1.0")));
    }
}

/// `core/software-1.0.0` naming rasdf.
pub(super) fn software(tree: &mut impl NodeArena) -> NodeId {
    let mut pairs = Vec::new();
    for (k, v) in [
        ("author", "The rasdf developers"),
        ("homepage", "https://crates.io/crates/rasdf"),
        ("name", "rasdf"),
        ("version", env!("CARGO_PKG_VERSION")),
    ] {
        let k = tree.push(node(Value::Str(k.into())));
        let v = tree.push(node(Value::Str(v.into())));
        pairs.push((k, v));
    }
    tree.push(asdf_tagged("core/software-1.0.0", Value::Map(pairs)))
}
