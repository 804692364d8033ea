//! `rasdf info FILE`: the tree as `asdftool info` draws it, arrays with shape, datatype
//! and storage; with `--stats`, min, max, mean and NaN count of every array.

use std::io::{self, Write};
use std::rc::Rc;

use rayon::prelude::*;

use super::Outcome;
use crate::AsdfFile;
use crate::ndarray::stats::Stats;
use crate::ndarray::{ArrayMeta, Dim, Source, Storage};
use crate::tree::emit::{format_float, push_float};
use crate::tree::{NodeRef, Value};

/// What `info` shows.
#[derive(Debug, Clone)]
pub struct InfoOptions {
    /// Most node lines of the tree (`None`: all).
    pub max_rows: Option<usize>,
    /// Lines are cut at this many characters (`None`: never).
    pub max_cols: Option<usize>,
    /// Show scalar values.
    pub show_values: bool,
    /// Read every array and print its statistics.
    pub stats: bool,
}

impl Default for InfoOptions {
    /// As `asdftool info`: 24 rows, 120 columns, values shown.
    fn default() -> Self {
        InfoOptions { max_rows: Some(24), max_cols: Some(120), show_values: true, stats: false }
    }
}

/// The Python class name the reference shows for a node.
fn type_name(node: NodeRef<'_>) -> String {
    for (tag, name) in [
        ("core/asdf", "AsdfObject"),
        ("core/software", "Software"),
        ("core/history_entry", "HistoryEntry"),
        ("core/extension_metadata", "ExtensionMetadata"),
        ("core/ndarray", "NDArrayType"),
        ("core/complex", "complex"),
        ("core/integer", "IntegerType"),
    ] {
        if node.is_asdf_tag(tag) {
            return name.into();
        }
    }
    if let Some(t) = node.tag() {
        return t.to_string();
    }
    match node.value() {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::BigInt(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::Binary(_) => "bytes",
        Value::Timestamp(t) => {
            if t.len() == 10 {
                "date"
            } else {
                "datetime"
            }
        }
        Value::Seq(_) => "list",
        Value::Map(_) => "dict",
    }
    .into()
}

fn scalar_text(node: NodeRef<'_>) -> Option<String> {
    Some(match node.value() {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::Float(f) => format_float(*f),
        Value::Str(s) | Value::Timestamp(s) => s.replace('\n', "\\n"),
        Value::Binary(b) => format!("<{} bytes>", b.len()),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

/// "shape=(64, 64), dtype=float32, block 0 (zlib)".
fn array_text(file: &AsdfFile, node: NodeRef<'_>) -> String {
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
        Source::Inline => "inline".to_string(),
        Source::External(uri) => format!("external {uri}"),
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

fn cut(line: String, max: Option<usize>) -> String {
    match max {
        Some(m) if line.chars().count() > m && m > 3 => {
            let s: String = line.chars().take(m - 3).collect();
            s + "..."
        }
        _ => line,
    }
}

/// How a node shown by [`report`] is named in its line.
enum Name<'t> {
    Root,
    Index(usize),
    Key(NodeRef<'t>),
}

/// A node whose children [`report`] shows: their lines' prefix, and the nodes from the
/// root to it (a node on its own path is not entered again).
struct Parent {
    child_prefix: String,
    path: Vec<u32>,
}

/// An array's statistics and a description, `None` for datatypes without statistics,
/// or the error reading it.
type ArrayStats = Result<Option<(Stats, String)>, String>;

/// Writes the tree of `file` to `out`.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report(file: &AsdfFile, options: &InfoOptions, out: &mut impl Write) -> io::Result<Outcome> {
    let Some(root) = file.tree().root() else {
        writeln!(out, "root (AsdfObject)")?;
        return Ok(Outcome::Ok);
    };
    let tree = file.tree();
    let mut rows = 0usize;
    let mut hidden = false;
    // (node, its name, the node it hangs from, whether it is the last child there);
    // iterative so that deep trees cannot overflow the stack. Names and prefixes are
    // made only for the lines shown.
    let mut stack: Vec<(NodeRef<'_>, Name<'_>, Option<Rc<Parent>>, bool)> = vec![(root, Name::Root, None, true)];
    while let Some((node, name, parent, last)) = stack.pop() {
        // Aliases are shown expanded, as the reference shows them; a budget keeps a
        // "billion laughs" tree from printing for ever.
        if options.max_rows.is_some_and(|m| rows >= m) || rows as u64 >= file.limits().max_alias_expansion {
            hidden = true;
            break;
        }
        rows += 1;
        let (prefix, path): (&str, &[u32]) = parent.as_deref().map_or(("", &[]), |p| (&p.child_prefix, &p.path));
        let mut line = String::with_capacity(prefix.len() + 64);
        line += prefix;
        if parent.is_some() {
            line += if last { "└─" } else { "├─" };
        }
        match name {
            Name::Root => line += "root",
            Name::Index(i) => {
                let _ = std::fmt::Write::write_fmt(&mut line, format_args!("[{i}]"));
            }
            Name::Key(k) => line += &k.key_text(),
        }
        line += " (";
        line += &type_name(node);
        line += ")";
        let is_array = node.is_asdf_tag("core/ndarray");
        if is_array {
            line += ": ";
            line += &array_text(file, node);
        } else if options.show_values {
            if let Some(v) = scalar_text(node) {
                line += ": ";
                line += &v;
            }
        }
        if path.contains(&node.id().0) {
            line += " (recursive reference)";
            writeln!(out, "{}", cut(line, options.max_cols))?;
            continue;
        }
        writeln!(out, "{}", cut(line, options.max_cols))?;
        if is_array || !matches!(node.value(), Value::Seq(_) | Value::Map(_)) {
            continue;
        }
        let mut child_prefix = String::with_capacity(prefix.len() + 8);
        child_prefix += prefix;
        if parent.is_some() {
            child_prefix += if last { "  " } else { "│ " };
        }
        let here = Some(Rc::new(Parent { child_prefix, path: path.iter().copied().chain([node.id().0]).collect() }));
        match node.value() {
            Value::Seq(items) => {
                let n = items.len();
                for (i, &c) in items.iter().enumerate().rev() {
                    stack.push((tree.node(c), Name::Index(i), here.clone(), i + 1 == n));
                }
            }
            Value::Map(pairs) => {
                let n = pairs.len();
                for (i, &(k, v)) in pairs.iter().enumerate().rev() {
                    stack.push((tree.node(v), Name::Key(tree.node(k)), here.clone(), i + 1 == n));
                }
            }
            _ => {}
        }
    }
    if hidden {
        writeln!(out, "Some nodes not shown.")?;
    }
    let mut outcome = Outcome::Ok;
    if options.stats {
        writeln!(out, "Arrays:")?;
        let arrays = file.ndarray_nodes();
        let one = |(p, node): &(String, NodeRef<'_>)| {
            let r = file.ndarray_stats_at(*node).map_err(|e| e.at_path(p).to_string()).map(|a| {
                let storage = match &a.storage {
                    Storage::Block(n) => format!("block {n}"),
                    Storage::External(u) => format!("external {u}"),
                    Storage::Inline => "inline".into(),
                };
                a.stats.map(|s| (s, format!("{} {:?} {storage}", a.datatype, a.shape)))
            });
            (p.clone(), r)
        };
        // Small data is reduced on this thread: starting the pool's threads would cost
        // more than they save (500 arrays of 128 bytes: about a millisecond).
        let bytes = file.blocks().iter().fold(0u64, |n, b| n.saturating_add(b.data_size));
        let results: Vec<(String, ArrayStats)> =
            if bytes < 16 << 20 { arrays.iter().map(one).collect() } else { arrays.par_iter().map(one).collect() };
        for (p, r) in results {
            let p = if p.is_empty() { "/".to_string() } else { p };
            match r {
                Ok(Some((s, what))) => {
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
                    let _ = std::fmt::Write::write_fmt(&mut line, format_args!(" nan={}\n", s.nan));
                    out.write_all(line.as_bytes())?;
                }
                Ok(None) => writeln!(out, "  {p}: no statistics for this datatype")?,
                Err(e) => {
                    writeln!(out, "  {p}: error: {e}")?;
                    outcome = Outcome::Failed;
                }
            }
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(yaml: &str, options: &InfoOptions) -> String {
        let bytes = format!(
            "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{yaml}...\n"
        );
        let file = crate::OpenOptions::new().from_bytes(bytes.into_bytes()).unwrap();
        let mut out = Vec::new();
        report(&file, options, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Names, types, values and the tree's drawing; a node inside itself is shown once
    /// more, marked, and not entered.
    #[test]
    fn draws_the_tree() {
        let yaml = "a: &x\n  b: [1, two, {c: null}]\n  self: *x\nd: 1.5\n3: yes\n";
        let all = InfoOptions { max_rows: None, ..Default::default() };
        let expected = "\
root (AsdfObject)
├─a (dict)
│ ├─b (list)
│ │ ├─[0] (int): 1
│ │ ├─[1] (str): two
│ │ └─[2] (dict)
│ │   └─c (NoneType): None
│ └─self (dict) (recursive reference)
├─d (float): 1.5
└─3 (bool): True
";
        assert_eq!(shown(yaml, &all), expected);
        let few = InfoOptions { max_rows: Some(3), show_values: false, ..Default::default() };
        assert_eq!(shown(yaml, &few), "root (AsdfObject)\n├─a (dict)\n│ ├─b (list)\nSome nodes not shown.\n");
        let narrow = InfoOptions { max_rows: None, max_cols: Some(12), ..Default::default() };
        assert!(shown(yaml, &narrow).lines().all(|l| l.chars().count() <= 12));
    }
}
