//! The text `rasdf info FILE` prints, used by the command line (`rasdf-cli`) and the
//! Python package (`File.info`): the tree as `asdftool info` draws it, arrays with shape,
//! datatype and storage; with `stats`, min, max, mean and NaN count of every array; with
//! `show_blocks`, the block headers as `asdftool info --show-blocks` draws them. With
//! the feature `json`, the same as one JSON document (`report_json`). [`pyrepr`]:
//! Python's `str()` and `repr()` of the objects the reference makes of tree nodes.
//!
//! The drawing follows the reference's renderer (`asdf._display`): nodes are laid out
//! breadth first, so a container met again (an alias) is shown where it is shallowest
//! and marked `(recursive reference)` elsewhere; `max_rows` keeps the shallowest nodes,
//! ending a cut list with `N not shown` and a node whose children are all hidden with
//! `...`; `max_cols` cuts a line to end in ` (truncated)`; values are shown as Python's
//! `str()` shows them, except empty and multi-line strings, which are not shown. Where
//! the reference shows an array as its `shape` and `dtype` children, rasdf shows one
//! line: `shape=(64, 64), dtype=float32, block 0 (zlib)`.
//!
//! The text is as the file holds it: escaping what a terminal would take for control
//! sequences is the caller's (the command line's `terminal` module).
//!
//! ```
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
//! let file = rasdf::AsdfFile::open(path)?;
//! let mut out = Vec::new();
//! let read = rasdf_info::report(&file, &rasdf_info::InfoOptions::default(), &mut out)?;
//! assert!(read && String::from_utf8_lossy(&out).starts_with("root (AsdfObject)\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Write};

use rayon::prelude::*;

#[cfg(feature = "json")]
mod json;
pub mod pyrepr;

#[cfg(feature = "json")]
pub use json::{json_array, json_value, report_json};
use pyrepr::Kind;
use rasdf::AsdfFile;
use rasdf::ndarray::stats::Stats;
use rasdf::ndarray::{ArrayMeta, Dim, Source, Storage};
use rasdf::tree::numtext::push_float;
use rasdf::tree::{NodeId, NodeRef, Value};

/// What `info` shows: [`InfoOptions::default`], then a setter for each field to change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InfoOptions {
    /// Most lines of the tree, the `Some nodes not shown.` line included, as the
    /// reference counts them (`None`: all; fewer than 2: none).
    pub max_rows: Option<usize>,
    /// Lines longer than this are cut to it, ending in ` (truncated)` (`None`: never).
    pub max_cols: Option<usize>,
    /// Show scalar values.
    pub show_values: bool,
    /// Print each block's header as a table after the tree (`asdftool info
    /// --show-blocks`).
    pub show_blocks: bool,
    /// Read every array and print its statistics.
    pub stats: bool,
}

impl Default for InfoOptions {
    /// As `asdftool info`: every line, uncut, values shown.
    fn default() -> Self {
        InfoOptions { max_rows: None, max_cols: None, show_values: true, show_blocks: false, stats: false }
    }
}

impl InfoOptions {
    /// These options with `max_rows` set (see the field).
    #[must_use]
    pub fn max_rows(mut self, max_rows: Option<usize>) -> Self {
        self.max_rows = max_rows;
        self
    }

    /// These options with `max_cols` set (see the field).
    #[must_use]
    pub fn max_cols(mut self, max_cols: Option<usize>) -> Self {
        self.max_cols = max_cols;
        self
    }

    /// These options with `show_values` set (see the field).
    #[must_use]
    pub fn show_values(mut self, show_values: bool) -> Self {
        self.show_values = show_values;
        self
    }

    /// These options with `show_blocks` set (see the field).
    #[must_use]
    pub fn show_blocks(mut self, show_blocks: bool) -> Self {
        self.show_blocks = show_blocks;
        self
    }

    /// These options with `stats` set (see the field).
    #[must_use]
    pub fn stats(mut self, stats: bool) -> Self {
        self.stats = stats;
        self
    }
}

/// "shape=(64, 64), dtype=float32, block 0 (zlib)".
pub fn array_text(file: &AsdfFile, node: NodeRef<'_>) -> String {
    let meta = match ArrayMeta::parse(node) {
        Ok(m) => m,
        Err(e) => return format!("invalid: {e}"),
    };
    let shape: Vec<String> = meta
        .shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(v) => v.to_string(),
            Dim::Stream => "*".into(),
        })
        .collect();
    let shape = if shape.len() == 1 { format!("({},)", shape[0]) } else { format!("({})", shape.join(", ")) };
    let storage = match &meta.source {
        // Inline values are in the tree already: converted here, so that one numpy
        // refuses shows as the array being invalid, as a failed conversion does.
        Source::Inline => match file.array_at(node).read_dyn() {
            Ok(_) => "inline".to_string(),
            Err(e) => return format!("invalid: {}", e.kind()),
        },
        Source::External(uri) => format!("external {uri}"),
        // ASDF-in-FITS: an HDU of the FITS file around the tree.
        Source::Fits(spec) => match file.fits().map(|f| f.resolve(spec)) {
            Some(Ok(h)) => format!("fits:{spec} (HDU {})", h.index),
            _ => format!("fits:{spec} (missing)"),
        },
        Source::Block(i) => {
            let n = if *i < 0 { file.blocks().len() as i64 + i } else { *i };
            match usize::try_from(n).ok().and_then(|n| file.blocks().get(n).map(|b| (n, b))) {
                Some((n, b)) if b.is_streamed() => format!("block {n} (streamed)"),
                Some((n, b)) => format!("block {n} ({})", b.compression),
                None => format!("block {i} (missing)"),
            }
        }
    };
    format!("shape={shape}, dtype={}, {storage}", meta.datatype)
}

/// Cuts `line` as the reference does when it is longer than `max` characters: to its
/// first `max - 12` (a negative count dropping that many from the end, as a Python
/// slice does), then ` (truncated)`.
fn cut(line: &mut String, max: Option<usize>) {
    const MESSAGE: &str = " (truncated)";
    // A line of no more bytes than `max` has no more characters either.
    let Some(max) = max.filter(|&m| line.len() > m) else { return };
    let len = line.chars().count();
    if len <= max {
        return;
    }
    let keep = if max >= MESSAGE.len() { max - MESSAGE.len() } else { len.saturating_sub(MESSAGE.len() - max) };
    let end = line.char_indices().nth(keep).map_or(line.len(), |(at, _)| at);
    line.truncate(end);
    line.push_str(MESSAGE);
}

/// How a node is named in its line.
#[derive(Clone, Copy)]
enum Name {
    Root,
    Index(u32),
    Key(NodeId),
}

/// One node of the drawing (the reference's `NodeSchemaInfo`), in 28 bytes: a drawing
/// holds one for every line of the tree.
struct Info {
    node: NodeId,
    name: Name,
    /// What the reference makes of the node, found once in [`layout`].
    kind: Kind,
    /// Shown before, closer to the root: not entered again.
    recursive: bool,
    /// Its children: `len` of the list from `first` (the list is breadth first).
    first: u32,
    len: u32,
    /// How many of the children are shown (always the first ones).
    shown: u32,
}

impl Info {
    fn new(node: NodeId, name: Name) -> Info {
        Info { node, name, kind: Kind::Leaf, recursive: false, first: 0, len: 0, shown: 0 }
    }

    fn children(&self) -> std::ops::Range<usize> {
        self.first as usize..self.first as usize + self.len as usize
    }
}

/// The drawing's nodes breadth first, as the reference lays them out: a dict, list or
/// array met a second time is marked recursive and not entered, so each is entered once.
fn layout(root: NodeRef<'_>) -> Vec<Info> {
    let tree = root.tree();
    let mut seen = vec![false; tree.len()];
    let mut infos = vec![Info::new(root.id(), Name::Root)];
    let mut i = 0;
    while i < infos.len() {
        let node = tree.node(infos[i].node);
        let kind = pyrepr::kind(node);
        infos[i].kind = kind;
        if kind != Kind::Leaf {
            let id = node.id().0 as usize;
            if seen[id] {
                infos[i].recursive = true;
                i += 1;
                continue;
            }
            seen[id] = true;
        }
        let start = infos.len();
        match (kind, node.value()) {
            (Kind::Dict, Value::Map(pairs)) => infos.extend(pairs.iter().map(|&(k, v)| Info::new(v, Name::Key(k)))),
            (Kind::List, Value::Seq(items)) => {
                infos.extend(items.iter().zip(0..).map(|(&c, n)| Info::new(c, Name::Index(n))));
            }
            _ => {}
        }
        // Node ids are u32, so are counts of children and places in the list.
        let n = u32::try_from(infos.len() - start).unwrap_or(u32::MAX);
        infos[i].first = u32::try_from(start).unwrap_or(u32::MAX);
        infos[i].len = n;
        infos[i].shown = n;
        i += 1;
    }
    infos
}

/// The reference's choice of the nodes to show within `max_rows` lines: level by level
/// from the root, each parent's children while rows are left (one row kept for the root
/// and one for the `Some nodes not shown.` line); a list cut short keeps a row for its
/// `N not shown` line. Returns whether the root is shown.
fn mark_shown(infos: &mut [Info], max_rows: Option<usize>) -> bool {
    let Some(max_rows) = max_rows else { return true };
    if max_rows < 2 {
        return false;
    }
    let mut rows_left = max_rows - 2;
    let mut level = vec![0usize];
    while !level.is_empty() {
        let mut next = Vec::new();
        for &i in &level {
            let children = infos[i].children();
            let n = children.len();
            let shown = if rows_left >= n {
                rows_left -= n;
                n
            } else if rows_left > 1 {
                let k = rows_left - 1;
                rows_left = 0;
                k
            } else {
                0
            };
            infos[i].shown = u32::try_from(shown).unwrap_or(u32::MAX);
            next.extend(children.start..children.start + shown);
        }
        level = next;
    }
    true
}

/// Appends the line of one node, without its prefix, to `line`.
/// `budget`: the bytes of Python reprs still to be shown (an alias bomb's reprs would
/// otherwise fill any disk).
fn node_line(file: &AsdfFile, info: &Info, options: &InfoOptions, budget: &mut usize, line: &mut String) {
    let tree = file.tree();
    let node = tree.node(info.node);
    match info.name {
        Name::Root => line.push_str("root"),
        Name::Index(i) => {
            let _ = std::fmt::Write::write_fmt(line, format_args!("[{i}]"));
        }
        // A key is shown as Python's `str()` of it.
        Name::Key(k) => line.push_str(&pyrepr::str_of(file, tree.node(k), pyrepr::REPR_MAX)),
    }
    line.push_str(" (");
    line.push_str(pyrepr::type_name(node));
    line.push(')');
    if info.kind == Kind::Array {
        line.push_str(": ");
        line.push_str(&array_text(file, node));
    } else if options.show_values && info.len == 0 {
        // Python's `str()` of the node, unless it is empty or more than one line.
        let text = pyrepr::str_of(file, node, (*budget).min(pyrepr::REPR_MAX));
        *budget = budget.saturating_sub(text.len());
        if !text.is_empty() && !pyrepr::is_multiline(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    if info.shown == 0 && info.len > 0 {
        line.push_str(" ...");
    }
    if info.recursive {
        line.push_str(" (recursive reference)");
    }
}

/// The most bytes of Python reprs (of containers shown before) one drawing holds.
const REPRS_MAX: usize = 64 << 20;

/// A step of [`draw`]: a node to draw, or the line that ends a list cut short. `depth`
/// is how many bytes of the prefix buffer belong to its parent's children.
enum Step {
    Node { i: usize, depth: usize, last: bool },
    NotShown { depth: usize, count: usize },
}

/// Draws the shown nodes depth first, as the reference's `_TreeRenderer` does (without
/// its stack: deep trees cannot overflow it); returns whether a node was left out.
///
/// One prefix buffer serves every line: depth first, a node's ancestors' part of it is
/// never changed while the node waits on the stack, so cutting it back to the node's
/// depth gives the node's prefix.
fn draw(file: &AsdfFile, infos: &[Info], options: &InfoOptions, out: &mut impl Write) -> io::Result<bool> {
    let mut elided = false;
    let mut budget = REPRS_MAX;
    let mut prefix = String::new();
    let mut line = String::with_capacity(128);
    let mut steps = vec![Step::Node { i: 0, depth: 0, last: true }];
    while let Some(step) = steps.pop() {
        let (i, depth, last) = match step {
            Step::NotShown { depth, count } => {
                writeln!(out, "{}└─{count} not shown", &prefix[..depth])?;
                continue;
            }
            Step::Node { i, depth, last } => (i, depth, last),
        };
        prefix.truncate(depth);
        line.clear();
        line.push_str(&prefix);
        if i != 0 {
            line.push_str(if last { "└─" } else { "├─" });
            prefix.push_str(if last { "  " } else { "│ " });
        }
        let info = &infos[i];
        node_line(file, info, options, &mut budget, &mut line);
        cut(&mut line, options.max_cols);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        let (n, shown) = (info.len as usize, info.shown as usize);
        elided |= shown < n;
        let depth = prefix.len();
        if shown > 0 && shown < n {
            steps.push(Step::NotShown { depth, count: n - shown });
        }
        // A child is drawn as the last only when all are shown.
        for j in (0..shown).rev() {
            steps.push(Step::Node { i: info.first as usize + j, depth, last: j + 1 == n });
        }
    }
    Ok(elided)
}

/// Writes the block headers as the reference's `--show-blocks` tables.
fn block_tables(file: &AsdfFile, out: &mut impl Write) -> io::Result<()> {
    for (i, b) in file.blocks().iter().enumerate() {
        let label = b.compression.label();
        let compression = if label == [0; 4] {
            "None".to_string()
        } else {
            // Trailing NULs dropped, bytes past ASCII as `\xNN` (Python's
            // `decode("ascii", errors="backslashreplace")`).
            let end = label.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
            let text: String = label[..end]
                .iter()
                .map(|&c| if c.is_ascii() { char::from(c).to_string() } else { format!("\\x{c:02x}") })
                .collect();
            format!("\"{text}\"")
        };
        let checksum: String = b.checksum.iter().map(|c| format!("{c:02x}")).collect();
        // The sizes as the header gives them (for a streamed block rasdf takes the bytes
        // to the end of the file, but the reference shows the fields).
        let field = |at: usize, own: u64| {
            let start = b.offset.saturating_add(at as u64);
            let bytes = file.read_bytes(start..start.saturating_add(8)).ok();
            bytes.and_then(|f| <[u8; 8]>::try_from(&f[..]).ok()).map_or(own, u64::from_be_bytes)
        };
        let rows = [
            ("flags", format!("{:#010x}", b.flags)),
            ("compression", compression),
            ("allocated_size", b.allocated_size.to_string()),
            ("used_size", field(22, b.used_size).to_string()),
            ("data_size", field(30, b.data_size).to_string()),
            ("checksum", checksum),
        ];
        let key_width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0) + 2;
        let val_width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0) + 2;
        let inner = key_width + val_width + 1;
        let title = format!("Block #{i}");
        let centre = |s: &str, w: usize| {
            let pad = w.saturating_sub(s.chars().count());
            format!("{}{s}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
        };
        writeln!(out, "┏{}┓", "━".repeat(inner))?;
        writeln!(out, "┃{}┃", centre(&title, inner))?;
        writeln!(out, "┣{}┯{}┫", "━".repeat(key_width), "━".repeat(val_width))?;
        for (k, v) in &rows {
            writeln!(out, "┃ {k:<w$} │ {} ┃", centre(v, val_width - 2), w = key_width - 2)?;
        }
        writeln!(out, "┗{}┷{}┛", "━".repeat(key_width), "━".repeat(val_width))?;
    }
    Ok(())
}

/// An array's statistics, how many elements its mask masks and a description, `None`
/// for datatypes without statistics, or the error reading it.
type ArrayStats = Result<Option<(Stats, u64, String)>, String>;

/// Writes the tree of `file` to `out` (and what else `options` asks for). Returns
/// whether every array's statistics were read: `false` when one failed (its error is
/// shown in its line; `rasdf info --stats` then exits 1), always `true` without
/// `stats`.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report(file: &AsdfFile, options: &InfoOptions, out: &mut impl Write) -> io::Result<bool> {
    let tree = file.tree();
    let mut hidden = true;
    if let Some(root) = tree.root().filter(|_| options.max_rows.is_none_or(|m| m >= 2)) {
        let mut infos = layout(root);
        if mark_shown(&mut infos, options.max_rows) {
            hidden = draw(file, &infos, options, out)?;
        }
    } else if options.max_rows.is_none_or(|m| m >= 2) {
        // No tree: the reference's empty `AsdfObject`.
        let line = if options.show_values { "root (AsdfObject): {}" } else { "root (AsdfObject)" };
        let mut line = line.to_string();
        cut(&mut line, options.max_cols);
        writeln!(out, "{line}")?;
        hidden = false;
    }
    if hidden {
        writeln!(out, "Some nodes not shown.")?;
    }
    if options.show_blocks {
        block_tables(file, out)?;
    }
    let mut all_read = true;
    if options.stats {
        writeln!(out, "Arrays:")?;
        let arrays: Vec<_> = file.arrays().collect();
        let one = |array: &rasdf::ArrayRef<'_>| {
            let p = array.path().unwrap_or_default();
            let r = array.stats().map_err(|e| e.at_path(p).to_string()).map(|a| {
                let storage = match &a.storage {
                    Storage::Block(n) => format!("block {n}"),
                    Storage::External(u) => format!("external {u}"),
                    Storage::Inline => "inline".into(),
                    Storage::Fits(n) => format!("FITS HDU {n}"),
                };
                a.stats.map(|s| (s, a.masked, format!("{} {:?} {storage}", a.datatype, a.shape)))
            });
            (p.to_string(), r)
        };
        // Small data is reduced on this thread: starting the pool's threads would cost
        // more than they save (500 arrays of 128 bytes: about a millisecond).
        let bytes = file.blocks().iter().fold(0u64, |n, b| n.saturating_add(b.data_size));
        let results: Vec<(String, ArrayStats)> =
            if bytes < 16 << 20 { arrays.iter().map(one).collect() } else { arrays.par_iter().map(one).collect() };
        for (p, r) in results {
            let p = if p.is_empty() { "/".to_string() } else { p };
            match r {
                Ok(Some((s, masked, what))) => {
                    let mut line = String::with_capacity(p.len() + what.len() + 96);
                    line.push_str("  ");
                    line.push_str(&p);
                    line.push_str(": ");
                    line.push_str(&what);
                    line.push_str(": min=");
                    push_float(&mut line, s.min);
                    line.push_str(" max=");
                    push_float(&mut line, s.max);
                    line.push_str(" mean=");
                    push_float(&mut line, s.mean());
                    let _ = std::fmt::Write::write_fmt(&mut line, format_args!(" nan={}", s.nan));
                    if masked > 0 {
                        let _ = std::fmt::Write::write_fmt(&mut line, format_args!(" masked={masked}"));
                    }
                    line.push('\n');
                    out.write_all(line.as_bytes())?;
                }
                Ok(None) => writeln!(out, "  {p}: no statistics for this datatype")?,
                Err(e) => {
                    writeln!(out, "  {p}: error: {e}")?;
                    all_read = false;
                }
            }
        }
    }
    Ok(all_read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(yaml: &str, options: &InfoOptions) -> String {
        let bytes = format!(
            "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{yaml}...\n"
        );
        let file = rasdf::OpenOptions::new().from_bytes(bytes.into_bytes()).unwrap();
        let mut out = Vec::new();
        report(&file, options, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// An array is one line; one whose declarations or inline values do not convert
    /// (numpy refuses 300 as an int8) says why.
    #[test]
    fn arrays_are_one_line_or_invalid() {
        let yaml = "a: !core/ndarray-1.1.0 {data: [1, 2], datatype: int8}\n\
                    b: !core/ndarray-1.1.0 {data: [300], datatype: int8}\n\
                    c: !core/ndarray-1.1.0 {source: 0, datatype: '<f8', byteorder: little, shape: [2]}\n\
                    d: !core/complex-1.0.0 inf-nanj\n";
        let expected = "\
root (AsdfObject)
├─a (NDArrayType): shape=(2,), dtype=int8, inline
├─b (NDArrayType): invalid: inline data: Python integer 300 out of bounds for int8
├─c (NDArrayType): invalid: invalid ndarray: unknown datatype '<f8'
└─d (complex): (inf+nanj)
";
        assert_eq!(shown(yaml, &InfoOptions::default()), expected);
    }

    /// Statistics leave masked elements out, and say how many there are.
    #[test]
    fn stats_of_masked_arrays_leave_the_masked_out() {
        let yaml = "a: !core/ndarray-1.1.0 {data: [1, null, 3, 100], datatype: int16, mask: 100}\n";
        let options = InfoOptions { stats: true, max_rows: Some(1), ..Default::default() };
        let shown = shown(yaml, &options);
        assert!(shown.ends_with("  /a: int16 [4] inline: min=1.0 max=3.0 mean=2.0 nan=0 masked=2\n"), "{shown}");
    }

    /// Names, types, values and the tree's drawing; a node inside itself is shown once
    /// more, marked, and not entered; `--max-rows` keeps the shallowest nodes.
    #[test]
    fn draws_the_tree() {
        let yaml = "a: &x\n  b: [1, two, {c: null}]\n  self: *x\nd: 1.5\n3: yes\n";
        let expected = "\
root (AsdfObject)
├─a (dict)
│ ├─b (list)
│ │ ├─[0] (int): 1
│ │ ├─[1] (str): two
│ │ └─[2] (dict)
│ │   └─c (NoneType): None
│ └─self (dict): {'b': [1, 'two', {'c': None}], 'self': {...}} (recursive reference)
├─d (float): 1.5
└─3 (bool): True
";
        assert_eq!(shown(yaml, &InfoOptions::default()), expected);
        assert!(std::mem::size_of::<Info>() <= 28, "a drawing holds one per line");
        let few = InfoOptions { max_rows: Some(7), show_values: false, ..Default::default() };
        let expected = "\
root (AsdfObject)
├─a (dict)
│ ├─b (list) ...
│ └─self (dict) (recursive reference)
├─d (float)
└─3 (bool)
Some nodes not shown.
";
        assert_eq!(shown(yaml, &few), expected);
        let fewer = InfoOptions { max_rows: Some(4), ..Default::default() };
        assert_eq!(shown(yaml, &fewer), "root (AsdfObject)\n├─a (dict) ...\n└─2 not shown\nSome nodes not shown.\n");
        assert_eq!(shown(yaml, &InfoOptions { max_rows: Some(1), ..Default::default() }), "Some nodes not shown.\n");
        let narrow = InfoOptions { max_cols: Some(20), ..Default::default() };
        let lines: Vec<String> = shown(yaml, &narrow).lines().map(String::from).collect();
        assert_eq!(lines[6], "│ │   └─ (truncated)");
        assert!(lines.iter().all(|l| l.chars().count() <= 20));
    }
}
