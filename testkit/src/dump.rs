//! The canonical JSON form of a file's tree and array values, the same form as
//! tests/python/dump_tree.py prints for the reference library.

use rasdf::AsdfFile;
use rasdf::ndarray::{Datatype, Element};
use rasdf::tree::{NodeRef, Value};
use serde_json::{Value as J, json};

fn fl(x: f64) -> J {
    if x.is_nan() {
        json!({"$float": "nan"})
    } else if x.is_infinite() {
        json!({"$float": if x > 0.0 { "inf" } else { "-inf" }})
    } else {
        json!({"$float": x})
    }
}

fn datatype(d: &Datatype) -> J {
    match d {
        Datatype::Scalar(s) => json!(s.name()),
        Datatype::Ascii(n) => json!(["ascii", n]),
        Datatype::Ucs4(n) => json!(["ucs4", n]),
        Datatype::Record(fields) => J::Array(
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| json!({"name": f.numpy_name(i), "datatype": datatype(&f.datatype), "shape": f.shape}))
                .collect(),
        ),
    }
}

fn element(e: &Element) -> J {
    match e {
        Element::Bool(b) => json!(b),
        Element::Int(i) => json!({"$int": i.to_string()}),
        Element::UInt(u) => json!({"$int": u.to_string()}),
        Element::Float(f) => fl(*f),
        Element::Complex(r, i) => json!({"$complex": [fl(*r), fl(*i)]}),
        Element::Bytes(b) => json!({"$bytes": b.iter().map(|c| format!("{c:02x}")).collect::<String>()}),
        Element::Str(s) => json!(s),
        Element::Record(v) | Element::List(v) => J::Array(v.iter().map(element).collect()),
    }
}

/// Tags the reference converts to plain Python dicts (their tag is not kept): a few core
/// tags, and YAML's `!!omap` (an `OrderedDict`; rasdf keeps the tag, so that a rewrite
/// writes it again, as the reference writes an `OrderedDict`).
fn converted_to_dict(f: &AsdfFile, node: NodeRef<'_>) -> bool {
    if !listed(f, node) {
        return false;
    }
    ["core/asdf", "core/software", "core/history_entry", "core/extension_metadata", "core/subclass_metadata"]
        .iter()
        .any(|t| node.is_asdf_tag(t))
        || node.tag() == Some("tag:yaml.org,2002:omap")
}

/// The canonical JSON form of `f`: its tree, with every array's values (a file whose
/// arrays cannot all be read panics: see [`dump_file_lenient`]).
pub fn dump_file(f: &AsdfFile) -> J {
    dump_root(f, false)
}

/// [`dump_file`], where a core/ndarray, complex or integer node rasdf cannot read is
/// dumped as its raw tagged node, as the reference leaves a node whose conversion failed
/// (with a warning): for comparing files from elsewhere, not fixtures.
#[allow(dead_code)]
pub fn dump_file_lenient(f: &AsdfFile) -> J {
    dump_root(f, true)
}

fn dump_root(f: &AsdfFile, lenient: bool) -> J {
    let mut walk = Walk { stack: Vec::new(), lenient };
    match f.tree().root() {
        Some(root) => dump(f, root, &mut walk),
        None => json!({"$map": []}),
    }
}

/// The collections being dumped (to spot cycles), and whether nodes that do not convert
/// are dumped raw.
struct Walk {
    stack: Vec<u32>,
    lenient: bool,
}

fn dump(f: &AsdfFile, node: NodeRef<'_>, walk: &mut Walk) -> J {
    let collection = matches!(node.value(), Value::Seq(_) | Value::Map(_));
    if collection && walk.stack.contains(&node.id().0) {
        return json!({"$cycle": true});
    }
    if let Some(j) = converted(f, node, walk).unwrap_or_else(|e| if walk.lenient { None } else { panic!("{e}") }) {
        return j;
    }
    if node.tag() == Some("tag:yaml.org,2002:set")
        && let Some(pairs) = node.pairs()
    {
        // A Python set there: its members, in the Python dumper's canonical order.
        walk.stack.push(node.id().0);
        let mut members: Vec<J> = pairs.map(|(k, _)| dump(f, k, walk)).collect();
        walk.stack.pop();
        members.sort_by_key(canonical);
        return json!({"$set": members});
    }
    if collection {
        walk.stack.push(node.id().0);
    }
    let plain = plain(f, node, walk);
    if collection {
        walk.stack.pop();
    }
    match node.tag() {
        Some(t) if !converted_to_dict(f, node) => json!({"$tag": t, "value": plain}),
        _ => plain,
    }
}

/// The value of a node the reference converts (ndarray, complex, external array,
/// integer), `None` for others; `walk` carries the caller's mode and cycle stack into
/// the nodes it dumps.
fn converted(f: &AsdfFile, node: NodeRef<'_>, walk: &mut Walk) -> Result<Option<J>, String> {
    if !listed(f, node) {
        return Ok(None);
    }
    if node.is_asdf_tag("core/ndarray") {
        let a = f.array_at(node).read_dyn().map_err(|e| e.to_string())?;
        let mask = f.array_at(node).mask(&a).map_err(|e| e.to_string())?;
        return Ok(Some(json!({"$ndarray": {
            "datatype": datatype(&a.datatype),
            "shape": a.shape,
            "values": a.elements().map(|e| element(&e)).collect::<Vec<_>>(),
            "mask": mask,
        }})));
    }
    if node.is_asdf_tag("core/complex") {
        let text = node.as_str().ok_or("a complex that is not a string")?;
        let (r, i) = rasdf::ndarray::parse_complex(text).ok_or("not a complex number")?;
        return Ok(Some(json!({"$complex": [fl(r), fl(i)]})));
    }
    if node.is_asdf_tag("core/externalarray") {
        // The reference's object: `str(fileuri)` and the other three as they are; a
        // node missing one stays a tagged node there (its conversion fails).
        let get = |k: &str| node.get(k);
        let (Some(uri), Some(target), Some(dt), Some(shape)) =
            (get("fileuri"), get("target"), get("datatype"), get("shape"))
        else {
            return Ok(None);
        };
        let uri = match uri.value() {
            Value::Str(s) => s.to_string(),
            Value::Int(i) => i.to_string(),
            _ => return Err("a fileuri that is neither a string nor an integer".into()),
        };
        let shape = match shape.items() {
            Some(items) => items.map(|n| dump(f, n, walk)).collect::<Vec<_>>(),
            None => return Err("a shape that is not a list".into()),
        };
        return Ok(Some(json!({"$external": {
            "fileuri": uri,
            "target": dump(f, target, walk),
            "datatype": dump(f, dt, walk),
            "shape": shape,
        }})));
    }
    if node.is_asdf_tag("core/integer") {
        // Its words, an ndarray the standard does not list, fail its conversion there.
        if node.get("words").is_some_and(|w| !listed(f, w)) {
            return Ok(None);
        }
        return Ok(Some(json!({"$int": f.integer_at(node).map_err(|e| e.to_string())?.to_string()})));
    }
    Ok(None)
}

/// JSON text with sorted keys and Python's `json.dumps` separators (`, ` and `: `), to
/// order set members as the Python dumper does.
fn canonical(j: &J) -> String {
    match j {
        J::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> =
                keys.iter().map(|k| format!("{}: {}", J::String((*k).clone()), canonical(&m[*k]))).collect();
            format!("{{{}}}", items.join(", "))
        }
        J::Array(v) => format!("[{}]", v.iter().map(canonical).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// Whether the reference converts `node`'s core tag: only a version the file's ASDF
/// Standard lists (rasdf reads any version it knows).
fn listed(f: &AsdfFile, node: NodeRef<'_>) -> bool {
    node.in_standard(f.header().standard()) != Some(false)
}

fn plain(f: &AsdfFile, node: NodeRef<'_>, walk: &mut Walk) -> J {
    match node.value() {
        Value::Null => J::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!({"$int": i.to_string()}),
        Value::BigInt(i) => json!({"$int": i.to_string()}),
        Value::Float(x) => fl(*x),
        Value::Str(s) => json!(s.as_str()),
        Value::Binary(b) => json!({"$bytes": b.iter().map(|c| format!("{c:02x}")).collect::<String>()}),
        Value::Timestamp(t) => json!({"$timestamp": rasdf::tree::resolve::parse_timestamp(t).unwrap().isoformat()}),
        Value::Seq(_) => J::Array(node.items().unwrap().map(|n| dump(f, n, walk)).collect()),
        Value::Map(_) => {
            json!({"$map": node.pairs().unwrap().map(|(k, v)| json!([dump(f, k, walk), dump(f, v, walk)])).collect::<Vec<_>>()})
        }
    }
}

/// A dump without the root's `asdf_library` (every writer sets its own) and with the
/// root's keys in sorted order (writers put `asdf_library` and `history` first).
pub fn without_library(mut j: J) -> J {
    if let Some(pairs) = j.get_mut("$map").and_then(J::as_array_mut) {
        pairs.retain(|p| p[0] != json!("asdf_library"));
        pairs.sort_by_key(|p| p[0].to_string());
    }
    j
}

/// The first place two dumps differ, as a path and both values (`a` is rasdf's, `b` the
/// reference's); pairs `skip` accepts are not compared, and are counted in `skipped`.
pub fn diff_skipping(a: &J, b: &J, path: &str, skip: &dyn Fn(&J, &J) -> bool, skipped: &mut usize) -> Option<String> {
    if skip(a, b) {
        *skipped += 1;
        return None;
    }
    match (a, b) {
        (J::Array(x), J::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} items != {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| diff_skipping(p, q, &format!("{path}/{i}"), skip, skipped))
        }
        (J::Object(x), J::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => diff_skipping(p, q, &format!("{path}.{k}"), skip, skipped),
                _ => Some(format!("{path}: key {k} only on one side")),
            })
        }
        _ if a == b => None,
        _ => Some(format!("{path}: rasdf {a} != reference {b}")),
    }
}

/// The first place two dumps differ (see [`diff_skipping`]).
pub fn diff(a: &J, b: &J, path: &str) -> Option<String> {
    diff_skipping(a, b, path, &|_, _| false, &mut 0)
}
