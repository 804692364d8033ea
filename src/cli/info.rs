//! `rasdf info FILE`: the tree as `asdftool info` draws it, arrays with shape, datatype
//! and storage; with `--stats`, min, max, mean and NaN count of every array.

use std::io::{self, Write};

use rayon::prelude::*;

use super::Outcome;
use crate::AsdfFile;
use crate::ndarray::stats::{self, Stats};
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
    let mut rows = 0usize;
    let mut hidden = false;
    // (node, name, prefix for children, prefix for this line, depth); iterative so that
    // deep trees cannot overflow the stack; a node on its own path is not entered again.
    let mut stack: Vec<(NodeRef<'_>, String, String, String, Vec<u32>)> =
        vec![(root, "root".into(), String::new(), String::new(), Vec::new())];
    while let Some((node, name, child_prefix, line_prefix, path)) = stack.pop() {
        // Aliases are shown expanded, as the reference shows them; a budget keeps a
        // "billion laughs" tree from printing for ever.
        if options.max_rows.is_some_and(|m| rows >= m) || rows as u64 >= file.limits().max_alias_expansion {
            hidden = true;
            break;
        }
        rows += 1;
        let mut line = format!("{line_prefix}{name} ({})", type_name(node));
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
        if is_array {
            continue;
        }
        let children: Vec<(String, NodeRef<'_>)> = match node.value() {
            Value::Seq(_) => {
                node.items().into_iter().flatten().enumerate().map(|(i, n)| (format!("[{i}]"), n)).collect()
            }
            Value::Map(_) => node.pairs().into_iter().flatten().map(|(k, v)| (k.key_text(), v)).collect(),
            _ => Vec::new(),
        };
        let n = children.len();
        let mut path = path;
        path.push(node.id().0);
        for (i, (cname, child)) in children.into_iter().enumerate().rev() {
            let last = i + 1 == n;
            let lp = format!("{child_prefix}{}", if last { "└─" } else { "├─" });
            let cp = format!("{child_prefix}{}", if last { "  " } else { "│ " });
            stack.push((child, cname, cp, lp, path.clone()));
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
            let r = file.ndarray_at(*node).map_err(|e| e.at_path(p).to_string()).map(|a| {
                let storage = match &a.storage {
                    Storage::Block(n) => format!("block {n}"),
                    Storage::External(u) => format!("external {u}"),
                    Storage::Inline => "inline".into(),
                };
                stats::stats(&a).map(|s| (s, format!("{} {:?} {storage}", a.datatype, a.shape)))
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
