//! `rasdf info --json` (feature `json`): what `info` shows as one JSON document; and
//! the JSON of a value and of an array, which `rasdf search --json` shows too.

use std::io::{self, Write};

use rayon::prelude::*;

use crate::InfoOptions;
use crate::pyrepr::{self, Kind};
use rasdf::AsdfFile;
use rasdf::ndarray::{ArrayMeta, Dim, Source};
use rasdf::tree::{NodeId, NodeRef, Value};

/// JSON text of a float: a number when finite, else `"nan"`, `"inf"`, `"-inf"`.
fn json_float(f: f64) -> serde_json::Value {
    serde_json::Number::from_f64(f).map_or_else(|| pyrepr::float_repr(f).into(), serde_json::Value::Number)
}

/// What `info --json` shows of a scalar: JSON's own null, booleans, numbers and strings;
/// anything else (big integers, bytes, dates, complex numbers) as Python's `str()`.
pub fn json_value(file: &AsdfFile, node: NodeRef<'_>) -> serde_json::Value {
    match node.value() {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::Float(f) => json_float(*f),
        Value::Str(s) if !node.is_asdf_tag("core/complex") => s.as_str().into(),
        _ => pyrepr::str_of(file, node, pyrepr::REPR_MAX).into_owned().into(),
    }
}

/// The array `info --json` shows: shape, datatype, byte order and storage, or the
/// reason it is invalid.
pub fn json_array(file: &AsdfFile, node: NodeRef<'_>) -> serde_json::Value {
    use serde_json::json;
    let meta = match ArrayMeta::parse(node) {
        Ok(m) => m,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let shape: Vec<serde_json::Value> = meta
        .shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(v) => (*v).into(),
            Dim::Stream => "*".into(),
        })
        .collect();
    let mut a = json!({
        "shape": shape, "datatype": meta.datatype.to_string(), "byteorder": meta.byteorder.name(),
    });
    let storage = match &meta.source {
        Source::Inline => json!({ "storage": "inline" }),
        Source::External(uri) => json!({ "storage": "external", "source": uri }),
        Source::Fits(spec) => match file.fits().map(|f| f.resolve(spec)) {
            Some(Ok(h)) => json!({ "storage": "fits", "source": format!("fits:{spec}"), "hdu": h.index }),
            _ => json!({ "storage": "fits", "source": format!("fits:{spec}"), "error": "no such HDU" }),
        },
        Source::Block(i) => {
            let n = if *i < 0 { file.blocks().len() as i64 + i } else { *i };
            match usize::try_from(n).ok().and_then(|n| file.blocks().get(n).map(|b| (n, b))) {
                Some((n, b)) => json!({
                    "storage": "block", "block": n, "compression": b.compression.to_string(),
                    "streamed": b.is_streamed(),
                }),
                None => json!({ "storage": "block", "block": i, "error": "no such block" }),
            }
        }
    };
    if let (Some(a), serde_json::Value::Object(s)) = (a.as_object_mut(), storage) {
        a.extend(s);
    }
    a
}

/// Writes what `info` shows as one JSON document (`info --json`; `max_rows` and
/// `max_cols` do not apply):
///
/// `{"asdf_version", "standard", "nodes": [{"path", "type", "tag" (or null), "value"
/// (scalars, unless values are hidden), "len" (containers), "array": {"shape",
/// "datatype", "byteorder", "storage" ("block", "inline", "external", "fits"), "block",
/// "compression", "streamed", "source", "hdu"} (ndarrays)}, then {"path", "alias_of"} for each
/// path that reaches a node listed before (an alias)],
/// "blocks": [{"index", "offset", "flags", "compression", "streamed", "allocated_size",
/// "used_size", "data_size", "checksum"}], "stats": [{"path", "datatype", "shape",
/// "min", "max", "mean", "nan", "masked"} or {"path", "error"}] (with `stats`)}`.
///
/// Nodes come depth first in the tree's order; the keys of an ndarray, and of the
/// objects the reference shows without children (`core/integer`, a set...), are not
/// listed. Returns whether every array's statistics were read, as [`crate::report`].
///
/// # Errors
/// Only errors writing to `out`.
pub fn report_json(file: &AsdfFile, options: &InfoOptions, out: &mut impl Write) -> io::Result<bool> {
    use serde_json::json;
    let h = file.header();
    let mut nodes = Vec::new();
    let mut first_path: std::collections::HashMap<NodeId, String> = std::collections::HashMap::new();
    let mut inside_array: Option<String> = None;
    let tree = file.tree();
    tree.walk(|path, node| {
        let path = path.to_string();
        if let Some(a) = &inside_array {
            if path.starts_with(a.as_str()) && path.as_bytes().get(a.len()) == Some(&b'/') {
                return;
            }
            inside_array = None;
        }
        first_path.insert(node.id(), path.clone());
        let kind = pyrepr::kind(node);
        let mut n = json!({ "path": path, "type": pyrepr::type_name(node), "tag": node.tag() });
        let m = n.as_object_mut().expect("an object");
        if matches!(node.value(), Value::Map(_) | Value::Seq(_)) && !matches!(kind, Kind::Dict | Kind::List) {
            // What the reference makes an object without children of: its keys are not
            // nodes.
            inside_array = Some(path.clone());
        }
        match (kind, node.value()) {
            (Kind::Array, _) => {
                m.insert("array".into(), json_array(file, node));
            }
            (Kind::Leaf, _) if options.show_values => {
                m.insert("value".into(), json_value(file, node));
            }
            (Kind::Leaf, _) => {}
            (_, Value::Map(p)) => {
                m.insert("len".into(), p.len().into());
            }
            (_, Value::Seq(items)) => {
                m.insert("len".into(), items.len().into());
            }
            _ if options.show_values => {
                m.insert("value".into(), json_value(file, node));
            }
            _ => {}
        }
        nodes.push(n);
    });
    // Aliases: a node reached again is listed where it is met, pointing at its first path.
    let mut aliases = Vec::new();
    if let Some(root) = tree.root() {
        let mut stack = vec![(root, String::new())];
        let mut entered = std::collections::HashSet::new();
        while let Some((node, path)) = stack.pop() {
            if !entered.insert(node.id()) || !matches!(pyrepr::kind(node), Kind::Dict | Kind::List) {
                continue;
            }
            let children: Vec<(String, NodeRef<'_>)> = match (node.items(), node.pairs()) {
                (Some(items), _) => items.enumerate().map(|(i, c)| (format!("{path}/{i}"), c)).collect(),
                (_, Some(pairs)) => {
                    pairs.map(|(k, v)| (format!("{path}/{}", rasdf::tree::escape_step(&k.key_text())), v)).collect()
                }
                _ => Vec::new(),
            };
            for (p, c) in children {
                match first_path.get(&c.id()) {
                    Some(first) if *first != p => aliases.push(json!({ "path": p, "alias_of": first })),
                    _ => stack.push((c, p)),
                }
            }
        }
    }
    nodes.extend(aliases);
    let blocks: Vec<serde_json::Value> = file
        .blocks()
        .iter()
        .enumerate()
        .map(|(i, b)| {
            json!({
                "index": i, "offset": b.offset, "flags": b.flags, "compression": b.compression.to_string(),
                "streamed": b.is_streamed(), "allocated_size": b.allocated_size, "used_size": b.used_size,
                "data_size": b.data_size, "checksum": b.checksum.iter().map(|c| format!("{c:02x}")).collect::<String>(),
            })
        })
        .collect();
    let mut doc = json!({
        "asdf_version": h.file_format_version.to_string(), "standard": h.standard_version,
        "nodes": nodes, "blocks": blocks,
    });
    let mut all_read = true;
    if options.stats {
        let stats: Vec<serde_json::Value> = file
            .arrays()
            .collect::<Vec<_>>()
            .par_iter()
            .map(|array| (array.path().unwrap_or_default(), array.stats()))
            .map(|(p, stats)| match stats {
                Ok(a) => {
                    let mut v = json!({ "path": p, "datatype": a.datatype.to_string(), "shape": a.shape });
                    if let (Some(s), Some(m)) = (a.stats, v.as_object_mut()) {
                        m.insert("min".into(), json_float(s.min));
                        m.insert("max".into(), json_float(s.max));
                        m.insert("mean".into(), json_float(s.mean()));
                        m.insert("nan".into(), s.nan.into());
                        m.insert("masked".into(), a.masked.into());
                    }
                    v
                }
                Err(e) => json!({ "path": p, "error": e.at_path(p).to_string() }),
            })
            .collect();
        if stats.iter().any(|s| s.get("error").is_some()) {
            all_read = false;
        }
        doc["stats"] = stats.into();
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(all_read)
}
