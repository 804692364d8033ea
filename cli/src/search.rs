//! `rasdf search FILE [KEY] [--type T] [--value V]`: the tree paths whose key, type and
//! value match, as `asdftool search` (`AsdfFile.search`) finds them:
//! - KEY is a regular expression searched (anywhere, as Python's `re.search`) in the
//!   node's key as Python's `str()` writes it, or its list index (`0`, `1`...);
//! - T is a Python type the node is an instance of (`int` also matches booleans, `dict`
//!   every mapping, `ndarray` the arrays; `str`, `float`, `list`, `bool`, `NoneType`,
//!   `bytes`, `complex`, `datetime`, `date`), or else a regular expression searched in
//!   the node's type name and tag (`core/ndarray`, `unit-1`);
//! - V is read as JSON: a number, `true`, `false` or `null` matches values equal to it
//!   in Python's sense (`1 == 1.0 == True`); a string, or text that is not JSON, is a
//!   regular expression searched in the `str()` of scalar values (not of containers;
//!   nor of arrays, where the reference searches NumPy's printout of the elements).
//!
//! Nodes are listed breadth first, as the reference lists them; an array is one node
//! (its `shape`, `datatype`... are not searched), an aliased node is listed once, and
//! the root is not listed.

use std::collections::{HashSet, VecDeque};
use std::io::{self, Write};

use regex::Regex;

use crate::Outcome;
use rasdf::AsdfFile;
use rasdf::tree::{NodeRef, Value, escape_step};
use rasdf_info::pyrepr::{self, Kind};

/// What to search for; `None` matches anything.
#[derive(Debug, Default)]
pub struct Query {
    /// A regular expression searched in the key (or list index).
    pub key: Option<Regex>,
    /// What the node's type must be.
    pub type_: Option<TypeQuery>,
    /// What the node's value must be.
    pub value: Option<ValueQuery>,
}

/// `--type`.
#[derive(Debug)]
pub enum TypeQuery {
    /// A Python type the node must be an instance of.
    Python(PyType),
    /// A regular expression searched in the type name and the tag.
    Pattern(Regex),
}

/// The Python types `--type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum PyType {
    NoneType,
    Bool,
    Int,
    Float,
    Complex,
    Str,
    Bytes,
    Dict,
    List,
    Datetime,
    Date,
    NdArray,
}

/// `--value`.
#[derive(Debug)]
pub enum ValueQuery {
    /// A regular expression searched in the `str()` of scalars.
    Pattern(Regex),
    /// A JSON scalar the value must equal.
    Equal(serde_json::Value),
}

/// A query that cannot be built: a bad regular expression.
#[derive(Debug)]
pub struct QueryError(pub String);

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QueryError {}

impl Query {
    /// The query of the command line's KEY, `--type` and `--value`.
    ///
    /// # Errors
    /// A regular expression that does not compile.
    pub fn new(key: Option<&str>, type_: Option<&str>, value: Option<&str>) -> Result<Query, QueryError> {
        let regex = |what: &str, p: &str| Regex::new(p).map_err(|e| QueryError(format!("{what} {p:?}: {e}")));
        let key = key.map(|k| regex("key", k)).transpose()?;
        let type_ = match type_ {
            None => None,
            Some(t) => Some(match py_type(t) {
                Some(p) => TypeQuery::Python(p),
                None => TypeQuery::Pattern(regex("--type", t)?),
            }),
        };
        let value = match value {
            None => None,
            Some(v) => Some(match serde_json::from_str::<serde_json::Value>(v) {
                Ok(serde_json::Value::String(s)) => ValueQuery::Pattern(regex("--value", &s)?),
                Ok(j @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => {
                    return Err(QueryError(format!("--value {j}: only a number, true, false, null or text")));
                }
                Ok(j) => ValueQuery::Equal(j),
                Err(_) => ValueQuery::Pattern(regex("--value", v)?),
            }),
        };
        Ok(Query { key, type_, value })
    }
}

/// The Python type a `--type` names (`builtins.int`, `numpy.ndarray` too).
fn py_type(name: &str) -> Option<PyType> {
    let name = name.strip_prefix("builtins.").unwrap_or(name);
    Some(match name {
        "NoneType" | "None" => PyType::NoneType,
        "bool" => PyType::Bool,
        "int" => PyType::Int,
        "float" => PyType::Float,
        "complex" => PyType::Complex,
        "str" => PyType::Str,
        "bytes" => PyType::Bytes,
        "dict" => PyType::Dict,
        "list" => PyType::List,
        "datetime" | "datetime.datetime" => PyType::Datetime,
        "date" | "datetime.date" => PyType::Date,
        "ndarray" | "numpy.ndarray" | "NDArrayType" | "asdf.tags.core.ndarray.NDArrayType" => PyType::NdArray,
        _ => return None,
    })
}

/// One node found.
#[derive(Debug, Clone)]
pub struct Found<'t> {
    /// Its tree path.
    pub path: String,
    /// The node.
    pub node: NodeRef<'t>,
}

/// The nodes of `file` that match `query`, breadth first.
pub fn search<'f>(file: &'f AsdfFile, query: &Query) -> Vec<Found<'f>> {
    let mut found = Vec::new();
    let Some(root) = file.tree().root() else { return found };
    let mut queue: VecDeque<(NodeRef<'f>, String)> = VecDeque::from([(root, String::new())]);
    let mut entered = HashSet::new();
    let mut listed = HashSet::from([root.id()]);
    while let Some((node, path)) = queue.pop_front() {
        if pyrepr::kind(node) == Kind::Array || !entered.insert(node.id()) {
            continue;
        }
        let children: Vec<(String, String, NodeRef<'f>)> = match (node.items(), node.pairs()) {
            (Some(items), _) => items.enumerate().map(|(i, c)| (i.to_string(), i.to_string(), c)).collect(),
            (_, Some(pairs)) if pyrepr::kind(node) != Kind::Leaf => {
                pairs.map(|(k, v)| (pyrepr::str_of(file, k, pyrepr::REPR_MAX).into_owned(), k.key_text(), v)).collect()
            }
            _ => Vec::new(),
        };
        for (key, step, child) in children {
            // A container met again (an alias) is not listed again, as in the reference.
            let container = matches!(child.value(), Value::Map(_) | Value::Seq(_));
            if container && !listed.insert(child.id()) {
                continue;
            }
            let child_path = format!("{path}/{}", escape_step(&step));
            if matches(file, query, &key, child) {
                found.push(Found { path: child_path.clone(), node: child });
            }
            queue.push_back((child, child_path));
        }
    }
    found
}

fn matches(file: &AsdfFile, query: &Query, key: &str, node: NodeRef<'_>) -> bool {
    if let Some(k) = &query.key
        && !k.is_match(key)
    {
        return false;
    }
    if let Some(t) = &query.type_ {
        let ok = match t {
            TypeQuery::Python(p) => is_instance(node, *p),
            TypeQuery::Pattern(r) => r.is_match(pyrepr::type_name(node)) || node.tag().is_some_and(|t| r.is_match(t)),
        };
        if !ok {
            return false;
        }
    }
    match &query.value {
        None => true,
        Some(ValueQuery::Pattern(r)) => {
            pyrepr::kind(node) == Kind::Leaf && r.is_match(&pyrepr::str_of(file, node, pyrepr::REPR_MAX))
        }
        Some(ValueQuery::Equal(j)) => equals_json(node, j),
    }
}

fn is_instance(node: NodeRef<'_>, t: PyType) -> bool {
    let kind = pyrepr::kind(node);
    let name = pyrepr::type_name(node);
    match t {
        PyType::NdArray => kind == Kind::Array,
        PyType::Dict => kind == Kind::Dict,
        PyType::List => kind == Kind::List,
        _ if kind != Kind::Leaf => false,
        PyType::NoneType => matches!(node.value(), Value::Null),
        PyType::Bool => matches!(node.value(), Value::Bool(_)),
        // bool is a subclass of int; `core/integer` is not.
        PyType::Int => matches!(node.value(), Value::Bool(_) | Value::Int(_) | Value::BigInt(_)),
        PyType::Float => matches!(node.value(), Value::Float(_)),
        PyType::Complex => name == "complex",
        PyType::Str => {
            name == "str" || (node.tag().is_some() && matches!(node.value(), Value::Str(_)) && name != "complex")
        }
        PyType::Bytes => name == "bytes",
        PyType::Datetime => name == "datetime",
        // datetime is a subclass of date.
        PyType::Date => name == "date" || name == "datetime",
    }
}

/// Python's `node == value` for a JSON scalar `value`.
fn equals_json(node: NodeRef<'_>, value: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    let number = |v: &Value| -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        match v {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    };
    match (value, node.value()) {
        (J::Null, Value::Null) => true,
        (J::Bool(b), v) => number(v) == Some(f64::from(u8::from(*b))),
        (J::Number(n), Value::Int(i)) if n.is_i64() || n.is_u64() => {
            n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) == Some(i128::from(*i))
        }
        (J::Number(n), v) => n.as_f64().is_some_and(|x| number(v) == Some(x)),
        _ => false,
    }
}

/// Writes the nodes found, one a line: `PATH (TYPE): VALUE`, as `info` shows them (an
/// array by its shape, datatype and storage, a container by its type alone); or as
/// JSON, `{"matches": [{"path", "type", "tag", "value"}]}` (`value` for scalars only, as
/// `info --json` gives it). Returns [`Outcome::Ok`] when something matched, else
/// [`Outcome::Failed`].
///
/// # Errors
/// Only errors writing to `out`.
pub fn report(file: &AsdfFile, found: &[Found<'_>], json: bool, out: &mut impl Write) -> io::Result<Outcome> {
    if json {
        let items: Vec<serde_json::Value> = found
            .iter()
            .map(|f| {
                let mut v =
                    serde_json::json!({ "path": f.path, "type": pyrepr::type_name(f.node), "tag": f.node.tag() });
                if let Some(m) = v.as_object_mut() {
                    match pyrepr::kind(f.node) {
                        Kind::Array => {
                            m.insert("array".into(), rasdf_info::json_array(file, f.node));
                        }
                        Kind::Leaf if !matches!(f.node.value(), Value::Map(_) | Value::Seq(_)) => {
                            m.insert("value".into(), rasdf_info::json_value(file, f.node));
                        }
                        _ => {}
                    }
                }
                v
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &serde_json::json!({ "matches": items }))?;
        writeln!(out)?;
    } else {
        for f in found {
            let ty = pyrepr::type_name(f.node);
            match pyrepr::kind(f.node) {
                Kind::Array => writeln!(out, "{} ({ty}): {}", f.path, rasdf_info::array_text(file, f.node))?,
                Kind::Dict | Kind::List => writeln!(out, "{} ({ty})", f.path)?,
                Kind::Leaf => {
                    let s = pyrepr::str_of(file, f.node, 200);
                    let s = s.replace('\n', "\\n");
                    writeln!(out, "{} ({ty}): {s}", f.path)?;
                }
            }
        }
    }
    Ok(if found.is_empty() { Outcome::Failed } else { Outcome::Ok })
}
