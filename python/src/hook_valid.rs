//! asdf's validation of the tagged tree it is about to write (`schema.validate` in
//! `asdf.yamlutil.dump_tree`), done by rasdf's validator for `rasdf.asdf_hook` where it
//! can be sure of asdf's verdict: the tree is made a rasdf tree (each node remembering
//! its Python object) and checked by `rasdf::schema::validate_strict`. Only "valid" is
//! taken: the annotations asdf's validator would have stored on the nodes
//! (`property_order`, `flow_style`, `style`) are stored on the same objects, and asdf's
//! own validation is not run. Anything else (a node failing a schema, a type asdf's
//! checks treat otherwise, an integer or a mapping key asdf refuses, a schema rasdf does
//! not have) and the Python side runs asdf's own, which then raises or warns as always.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};

use rasdf::schema::{Annotation, Schemas, Strict, validate_strict};
use rasdf::tree::{Node, NodeId, Tree, Value};

use crate::hook_yaml::Type;

/// How deep a tree is checked here; deeper ones are asdf's (whose validator recurses in
/// Python).
const MAX_DEPTH: usize = 200;

/// Why the tree is left to asdf's validation.
struct NotHere;

struct Build<'py> {
    tree: Tree,
    /// The Python object of each node (a key's too).
    objects: Vec<Bound<'py, PyAny>>,
    /// The node of each container met (by address; `objects` holds them alive).
    seen: HashMap<usize, NodeId>,
    types: Bound<'py, PyDict>,
    /// The distinct tags met.
    tags: Vec<String>,
    /// The integers asdf writes (`asdf.constants.MIN_NUMBER`, `MAX_NUMBER`).
    range: (i64, i64),
}

impl<'py> Build<'py> {
    fn push(&mut self, obj: &Bound<'py, PyAny>, tag: Option<String>, value: Value) -> NodeId {
        if let Some(t) = &tag
            && !self.tags.contains(t)
        {
            self.tags.push(t.clone());
        }
        self.objects.push(obj.clone());
        self.tree.push(Node { tag, value, line: 0, col: 0 })
    }

    fn kind(&self, obj: &Bound<'py, PyAny>) -> Result<Type, NotHere> {
        let code = self.types.get_item(obj.get_type()).map_err(|_| NotHere)?.ok_or(NotHere)?;
        Type::of(code.extract().map_err(|_| NotHere)?).ok_or(NotHere)
    }

    fn node(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> Result<NodeId, NotHere> {
        if depth > MAX_DEPTH {
            return Err(NotHere);
        }
        let kind = self.kind(obj)?;
        let container =
            matches!(kind, Type::List | Type::Dict | Type::OrderedDict | Type::TaggedList | Type::TaggedDict);
        if container && let Some(&id) = self.seen.get(&(obj.as_ptr() as usize)) {
            return Ok(id);
        }
        let tag = || -> Result<Option<String>, NotHere> {
            obj.getattr("_tag")
                .and_then(|t| t.extract::<Option<String>>())
                .map_err(|_| NotHere)?
                .ok_or(NotHere)
                .map(Some)
        };
        let value = match kind {
            Type::None => Value::Null,
            Type::Bool => Value::Bool(obj.is_truthy().map_err(|_| NotHere)?),
            Type::Int | Type::NpInt => integer(obj, self.range)?,
            // np.float64 is a float to Python's checks; numpy's other floats compute in
            // their own precision.
            Type::Float => Value::Float(obj.extract().map_err(|_| NotHere)?),
            Type::NpFloat if obj.is_instance_of::<PyFloat>() => Value::Float(obj.extract().map_err(|_| NotHere)?),
            Type::Str | Type::NpStr => Value::Str(text(obj)?.into()),
            Type::TaggedString => {
                let data = obj.getattr("data").map_err(|_| NotHere)?;
                let t = tag()?;
                return Ok(self.push(obj, t, Value::Str(text(&data)?.into())));
            }
            Type::List | Type::TaggedList => {
                let t = if kind == Type::TaggedList { tag()? } else { None };
                let id = self.push(obj, t, Value::Seq(Vec::new()));
                self.seen.insert(obj.as_ptr() as usize, id);
                let data =
                    if kind == Type::TaggedList { obj.getattr("data").map_err(|_| NotHere)? } else { obj.clone() };
                let list = data.cast::<PyList>().map_err(|_| NotHere)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list.iter() {
                    items.push(self.node(&item, depth + 1)?);
                }
                self.tree.set_value(id, Value::Seq(items));
                return Ok(id);
            }
            Type::Dict | Type::OrderedDict | Type::TaggedDict => {
                let t = if kind == Type::TaggedDict { tag()? } else { None };
                let id = self.push(obj, t, Value::Map(Vec::new()));
                self.seen.insert(obj.as_ptr() as usize, id);
                let data =
                    if kind == Type::TaggedDict { obj.getattr("data").map_err(|_| NotHere)? } else { obj.clone() };
                let dict = data.cast::<PyDict>().map_err(|_| NotHere)?;
                let mut pairs = Vec::with_capacity(dict.len());
                for (k, v) in dict.iter() {
                    let key = self.key(&k)?;
                    pairs.push((key, self.node(&v, depth + 1)?));
                }
                self.tree.set_value(id, Value::Map(pairs));
                return Ok(id);
            }
            // Bytes, sets, dates, numpy's other floats and bytes: asdf's checks.
            _ => return Err(NotHere),
        };
        Ok(self.push(obj, None, value))
    }

    /// A mapping key: a str (not a tagged one), an int or a bool, as asdf's check of the
    /// keys admits; a `$ref` key (a JSON reference asdf's validator does not enter) is
    /// asdf's.
    fn key(&mut self, k: &Bound<'py, PyAny>) -> Result<NodeId, NotHere> {
        let value = match self.kind(k)? {
            Type::Str | Type::NpStr => {
                let t = text(k)?;
                if t == "$ref" {
                    return Err(NotHere);
                }
                Value::Str(t.into())
            }
            Type::Int => integer(k, self.range)?,
            Type::Bool => Value::Bool(k.is_truthy().map_err(|_| NotHere)?),
            _ => return Err(NotHere),
        };
        Ok(self.push(k, None, value))
    }
}

fn text(obj: &Bound<'_, PyAny>) -> Result<String, NotHere> {
    Ok(obj.cast::<PyString>().map_err(|_| NotHere)?.to_cow().map_err(|_| NotHere)?.into_owned())
}

/// An integer within asdf's literal range (`asdf.constants.MIN_NUMBER` to
/// `MAX_NUMBER`); others are asdf's to refuse.
fn integer(obj: &Bound<'_, PyAny>, range: (i64, i64)) -> Result<Value, NotHere> {
    match obj.extract::<i64>() {
        Ok(v) if (range.0..=range.1).contains(&v) => Ok(Value::Int(v)),
        _ => Err(NotHere),
    }
}

/// asdf's validation of `root` before a write, where rasdf can be sure of it:
/// `("valid", None)` when the tree is valid (the annotations stored on its objects
/// already), `("missing", [uri, ...])` when schemas rasdf was not given are needed, and
/// `("asdf", None)` when asdf's own validation must judge. `tag_schemas(tag)` gives the
/// schema URIs of a tag asdf's extension manager defines (`None` for another tag);
/// `schemas` holds asdf's resources; `types` is the dumper's registry of types (see
/// `rasdf._asdf_yaml`); `range` the integers asdf writes.
#[pyfunction]
pub(crate) fn hook_validate<'py>(
    py: Python<'py>,
    root: &Bound<'py, PyAny>,
    tag_schemas: &Bound<'py, PyAny>,
    schemas: &Bound<'py, crate::Schemas>,
    types: &Bound<'py, PyDict>,
    range: (i64, i64),
) -> PyResult<(&'static str, Option<Vec<String>>)> {
    let mut b = Build {
        tree: Tree::empty(),
        objects: Vec::new(),
        seen: HashMap::new(),
        types: types.clone(),
        tags: Vec::new(),
        range,
    };
    let Ok(id) = b.node(root, 0) else { return Ok(("asdf", None)) };
    b.tree.set_root(id);
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for tag in &b.tags {
        if let Some(uris) = tag_schemas.call1((tag,))?.extract::<Option<Vec<String>>>()? {
            map.insert(tag.clone(), uris);
        }
    }
    let all: &Schemas = &schemas.get().0;
    let tree = &b.tree;
    let verdict = py.detach(|| validate_strict(tree, &map, all));
    let notes = match verdict {
        Strict::Valid(notes) => notes,
        Strict::Unsure { missing } if !missing.is_empty() => return Ok(("missing", Some(missing))),
        _ => return Ok(("asdf", None)),
    };
    // Where asdf's validator would store an annotation on an object that cannot take it
    // (a dict, a str), it fails: asdf's own validation tells how.
    let mut stores = Vec::with_capacity(notes.len());
    for n in &notes {
        let obj = &b.objects[n.node.0 as usize];
        let kind = b.kind(obj).map_err(|_| pyo3::exceptions::PyValueError::new_err("a node of no type"))?;
        let (name, value) = match (&n.annotation, kind) {
            (Annotation::PropertyOrder(order), Type::TaggedDict) => {
                ("property_order", PyList::new(py, order)?.into_any())
            }
            (Annotation::FlowStyle(f), Type::TaggedDict | Type::TaggedList) => {
                ("flow_style", PyString::new(py, f).into_any())
            }
            (Annotation::Style(s), Type::TaggedString) => ("style", PyString::new(py, s).into_any()),
            _ => return Ok(("asdf", None)),
        };
        stores.push((obj, name, value));
    }
    for (obj, name, value) in stores {
        obj.setattr(name, value)?;
    }
    Ok(("valid", None))
}
