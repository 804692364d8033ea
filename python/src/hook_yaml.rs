//! asdf's YAML dump (`yaml.dump_all` of the tagged tree with asdf's `AsdfDumper`, a
//! PyYAML `CSafeDumper`) done in Rust, for `rasdf.asdf_hook`: the same text, byte for
//! byte.
//!
//! The tagged tree is represented as PyYAML's `SafeRepresenter` and asdf's representers
//! make nodes (keys sorted, flow style for collections of plain scalars, asdf's
//! `flow_style`, `style` and `property_order`, nodes of the same object shared), then
//! serialized as PyYAML's `CEmitter` does (anchors `id001`... in the order of their
//! second sighting, tags implicit where PyYAML's resolver would give them) into the
//! events of libyaml's emitter, here libyaml-safer's port of it. An object of a type
//! this does not represent exactly as PyYAML would is an error, and the Python side then
//! calls PyYAML.

use std::collections::HashMap;

use libyaml_safer::{Emitter, Event, EventData, MappingStyle, Parser, ScalarStyle, SequenceStyle};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use rasdf::tree::numtext::format_float;
use rasdf::tree::resolve::{Resolved, resolve_plain};

const NULL: &str = "tag:yaml.org,2002:null";
const STR: &str = "tag:yaml.org,2002:str";
const BOOL: &str = "tag:yaml.org,2002:bool";
const INT: &str = "tag:yaml.org,2002:int";
const FLOAT: &str = "tag:yaml.org,2002:float";
const BINARY: &str = "tag:yaml.org,2002:binary";
const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";
const SEQ: &str = "tag:yaml.org,2002:seq";
const MAP: &str = "tag:yaml.org,2002:map";
const SET: &str = "tag:yaml.org,2002:set";
const OMAP: &str = "tag:yaml.org,2002:omap";
const MERGE: &str = "tag:yaml.org,2002:merge";
const VALUE: &str = "tag:yaml.org,2002:value";

/// How deep the tree may go (PyYAML's own representer recurses in Python, and fails
/// long before).
const MAX_DEPTH: usize = 2000;

enum Kind {
    Scalar { value: String, style: Option<char> },
    Seq { items: Vec<usize>, flow: bool },
    Map { pairs: Vec<(usize, usize)>, flow: bool },
}

struct Node {
    tag: Option<String>,
    kind: Kind,
}

fn decline(why: impl Into<String>) -> PyErr {
    PyValueError::new_err(why.into())
}

/// Declares [`Type`] and its codes at once: a type's code is its place in the list,
/// which `rasdf.asdf_hook`'s registry of the dumper's types follows.
macro_rules! types {
    ($($name:ident),* $(,)?) => {
        /// What each Python type is, as the dumper's registry says (see `rasdf.asdf_hook`).
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Type {
            $($name),*
        }

        impl Type {
            /// The type of registry code `code`.
            pub(crate) fn of(code: u8) -> Option<Type> {
                const ALL: &[Type] = &[$(Type::$name),*];
                ALL.get(usize::from(code)).copied()
            }
        }
    };
}

types!(
    None,
    Str,
    Bytes,
    Bool,
    Int,
    Float,
    List,
    Dict,
    Set,
    Date,
    DateTime,
    TaggedList,
    TaggedDict,
    TaggedString,
    OrderedDict,
    NpFloat,
    NpInt,
    NpStr,
    NpBytes,
);

struct Rep<'py> {
    py: Python<'py>,
    nodes: Vec<Node>,
    /// Node of each object represented that PyYAML would share (by address; `keep`
    /// holds the objects, so no address is reused meanwhile).
    seen: HashMap<usize, usize>,
    keep: Vec<Bound<'py, PyAny>>,
    types: Bound<'py, PyDict>,
    encodebytes: Bound<'py, PyAny>,
    sorted: Bound<'py, PyAny>,
    type_error: Bound<'py, PyAny>,
}

impl<'py> Rep<'py> {
    fn scalar(&mut self, tag: &str, value: String, style: Option<char>, alias: Option<usize>) -> usize {
        self.push(Node { tag: Some(tag.to_string()), kind: Kind::Scalar { value, style } }, alias)
    }

    fn push(&mut self, node: Node, alias: Option<usize>) -> usize {
        self.nodes.push(node);
        let n = self.nodes.len() - 1;
        if let Some(a) = alias {
            self.seen.insert(a, n);
        }
        n
    }

    fn is_plain(&self, n: usize) -> bool {
        matches!(self.nodes[n].kind, Kind::Scalar { style: None, .. })
    }

    fn represent(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> PyResult<usize> {
        if depth > MAX_DEPTH {
            return Err(decline("too deep"));
        }
        // SafeRepresenter.ignore_aliases: None, (), str, bytes, bool, int, float.
        let ignore = obj.is_none()
            || obj.cast::<PyTuple>().is_ok_and(|t| t.is_empty())
            || obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyBytes>()
            || obj.is_instance_of::<PyInt>()
            || obj.is_instance_of::<PyFloat>();
        let alias = if ignore { None } else { Some(obj.as_ptr() as usize) };
        if let Some(a) = alias {
            if let Some(&n) = self.seen.get(&a) {
                return Ok(n);
            }
            self.keep.push(obj.clone());
        }
        let ty = obj.get_type();
        let code: u8 = match self.types.get_item(&ty)? {
            Some(c) => c.extract()?,
            None => return Err(decline(format!("no representer for {}", ty.name()?))),
        };
        let Some(t) = Type::of(code) else { return Err(decline("unknown type code")) };
        Ok(match t {
            Type::None => self.scalar(NULL, "null".into(), None, alias),
            Type::Str => self.scalar(STR, obj.cast::<PyString>()?.to_cow()?.into_owned(), None, alias),
            Type::Bytes | Type::NpBytes => {
                let text: String = self.encodebytes.call1((obj,))?.call_method1("decode", ("ascii",))?.extract()?;
                self.scalar(BINARY, text, Some('|'), alias)
            }
            Type::Bool => {
                let v = obj.cast::<PyBool>()?.is_true();
                self.scalar(BOOL, if v { "true" } else { "false" }.into(), None, alias)
            }
            Type::Int => self.scalar(INT, int_text(obj)?, None, alias),
            Type::NpInt => {
                let as_int = self.py.get_type::<PyInt>().call1((obj,))?;
                self.scalar(INT, int_text(&as_int)?, None, alias)
            }
            Type::Float | Type::NpFloat => {
                let v: f64 = self.py.get_type::<PyFloat>().call1((obj,))?.extract()?;
                self.scalar(FLOAT, format_float(v), None, alias)
            }
            Type::NpStr => {
                let s = obj.str()?;
                self.scalar(STR, s.to_cow()?.into_owned(), None, alias)
            }
            Type::Date => {
                let text: String = obj.call_method0("isoformat")?.extract()?;
                self.scalar(TIMESTAMP, text, None, alias)
            }
            Type::DateTime => {
                let text: String = obj.call_method1("isoformat", (" ",))?.extract()?;
                self.scalar(TIMESTAMP, text, None, alias)
            }
            Type::TaggedString => {
                let data = obj.getattr("data")?;
                if !data.get_type().is(self.py.get_type::<PyString>()) {
                    return Err(decline("a TaggedString's data is not a str"));
                }
                let style = match obj.getattr("style")?.extract::<Option<String>>().ok().flatten().as_deref() {
                    Some("inline") => Some('"'),
                    Some("folded") => Some('>'),
                    Some("literal") => Some('|'),
                    _ => None,
                };
                let value = data.cast::<PyString>()?.to_cow()?.into_owned();
                let n = self.push(Node { tag: None, kind: Kind::Scalar { value, style } }, alias);
                self.nodes[n].tag = Some(tag_of(obj)?);
                n
            }
            Type::List => self.sequence(Some(SEQ), obj, None, alias, depth)?,
            Type::TaggedList => {
                let flow = flow_style(obj)?;
                let n = self.sequence(None, &obj.getattr("data")?, flow, alias, depth)?;
                self.nodes[n].tag = Some(tag_of(obj)?);
                n
            }
            Type::Dict => self.mapping(Some(MAP), obj, None, alias, depth)?,
            Type::Set => {
                let d = PyDict::new(self.py);
                for k in obj.try_iter()? {
                    d.set_item(k?, self.py.None())?;
                }
                self.mapping(Some(SET), d.as_any(), None, alias, depth)?
            }
            Type::TaggedDict => {
                let flow = flow_style(obj)?;
                let n = self.mapping(None, &obj.getattr("data")?, flow, alias, depth)?;
                self.property_order(n, obj)?;
                self.nodes[n].tag = Some(tag_of(obj)?);
                n
            }
            Type::OrderedDict => {
                // asdf's represent_ordered_mapping: an omap of one-pair mappings.
                let n =
                    self.push(Node { tag: Some(OMAP.into()), kind: Kind::Seq { items: vec![], flow: false } }, alias);
                let mut items = Vec::new();
                for item in obj.call_method0("items")?.try_iter()? {
                    let item = item?;
                    let k = self.represent(&item.get_item(0)?, depth + 1)?;
                    let v = self.represent(&item.get_item(1)?, depth + 1)?;
                    items.push(self.push(
                        Node { tag: Some(OMAP.into()), kind: Kind::Map { pairs: vec![(k, v)], flow: false } },
                        None,
                    ));
                }
                self.nodes[n].kind = Kind::Seq { items, flow: false };
                n
            }
        })
    }

    fn sequence(
        &mut self,
        tag: Option<&str>,
        seq: &Bound<'py, PyAny>,
        flow: Option<bool>,
        alias: Option<usize>,
        depth: usize,
    ) -> PyResult<usize> {
        let n = self.push(Node { tag: tag.map(str::to_string), kind: Kind::Seq { items: vec![], flow: false } }, alias);
        let mut items = Vec::new();
        let mut best = true;
        for item in seq.try_iter()? {
            let i = self.represent(&item?, depth + 1)?;
            best &= self.is_plain(i);
            items.push(i);
        }
        self.nodes[n].kind = Kind::Seq { items, flow: flow.unwrap_or(best) };
        Ok(n)
    }

    fn mapping(
        &mut self,
        tag: Option<&str>,
        map: &Bound<'py, PyAny>,
        flow: Option<bool>,
        alias: Option<usize>,
        depth: usize,
    ) -> PyResult<usize> {
        let n = self.push(Node { tag: tag.map(str::to_string), kind: Kind::Map { pairs: vec![], flow: false } }, alias);
        let items = self.sorted_items(map)?;
        let mut pairs = Vec::with_capacity(items.len());
        let mut best = true;
        for (k, v) in items {
            let k = self.represent(&k, depth + 1)?;
            let v = self.represent(&v, depth + 1)?;
            best &= self.is_plain(k) && self.is_plain(v);
            pairs.push((k, v));
        }
        self.nodes[n].kind = Kind::Map { pairs, flow: flow.unwrap_or(best) };
        Ok(n)
    }

    /// `sorted(list(mapping.items()))`, or the items in their order if that raises
    /// TypeError (PyYAML's sort_keys).
    #[allow(clippy::type_complexity)]
    fn sorted_items(&self, map: &Bound<'py, PyAny>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let list = PyList::new(self.py, map.call_method0("items")?.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
        let str_type = self.py.get_type::<PyString>();
        let mut pairs = Vec::with_capacity(list.len());
        let mut all_str = true;
        for item in list.iter() {
            let t = item.cast::<PyTuple>()?;
            let k = t.get_item(0)?;
            all_str &= k.get_type().is(&str_type);
            pairs.push((k, t.get_item(1)?));
        }
        if all_str {
            let mut keyed: Vec<(String, (Bound<'py, PyAny>, Bound<'py, PyAny>))> = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let s = k.cast::<PyString>()?.to_cow()?.into_owned();
                keyed.push((s, (k, v)));
            }
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(keyed.into_iter().map(|(_, p)| p).collect());
        }
        match self.sorted.call1((&list,)) {
            Ok(s) => {
                let mut out = Vec::with_capacity(pairs.len());
                for item in s.try_iter()? {
                    let item = item?;
                    out.push((item.get_item(0)?, item.get_item(1)?));
                }
                Ok(out)
            }
            Err(e) if e.is_instance(self.py, &self.type_error) => Ok(pairs),
            Err(e) => Err(e),
        }
    }

    /// asdf's represent_mapping: the keys of `property_order` first, in its order (each
    /// that the mapping holds, as often as listed), then the others in their order.
    fn property_order(&mut self, n: usize, obj: &Bound<'py, PyAny>) -> PyResult<()> {
        let order = obj.getattr("property_order")?;
        if !order.is_truthy()? {
            return Ok(());
        }
        let Kind::Map { pairs, .. } = &self.nodes[n].kind else { return Err(decline("not a mapping")) };
        let pairs = pairs.clone();
        let mut by_text: HashMap<&str, (usize, usize)> = HashMap::new();
        for &(k, v) in &pairs {
            let Kind::Scalar { value, .. } = &self.nodes[k].kind else {
                return Err(decline("a key that is no scalar"));
            };
            by_text.insert(value.as_str(), (k, v));
        }
        let mut listed = Vec::new();
        let mut new_pairs = Vec::with_capacity(pairs.len());
        for key in order.try_iter()? {
            let key = key?;
            let Ok(text) = key.cast::<PyString>().map(|s| s.to_string()) else {
                return Err(decline("a property_order entry that is no str"));
            };
            if obj.contains(&key)? {
                new_pairs.push(*by_text.get(text.as_str()).ok_or_else(|| decline("property_order key"))?);
            }
            listed.push(text);
        }
        for &(k, v) in &pairs {
            let Kind::Scalar { value, .. } = &self.nodes[k].kind else { return Err(decline("key")) };
            if !listed.iter().any(|l| l == value) {
                new_pairs.push((k, v));
            }
        }
        let flow = matches!(self.nodes[n].kind, Kind::Map { flow: true, .. });
        self.nodes[n].kind = Kind::Map { pairs: new_pairs, flow };
        Ok(())
    }
}

fn int_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    match obj.extract::<i64>() {
        Ok(v) => Ok(v.to_string()),
        Err(_) => Ok(obj.str()?.to_cow()?.into_owned()),
    }
}

fn tag_of(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    obj.getattr("_tag")?.extract::<Option<String>>()?.ok_or_else(|| decline("a tagged node without a tag"))
}

fn flow_style(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    Ok(match obj.getattr("flow_style")?.extract::<Option<String>>().ok().flatten().as_deref() {
        Some("flow") => Some(true),
        Some("block") => Some(false),
        _ => None,
    })
}

/// The tag PyYAML's resolver gives `value` as a plain scalar (`$` in its patterns also
/// matches before a last line break).
fn plain_tag(value: &str) -> &'static str {
    let tag = |r: Resolved| match r {
        Resolved::Null => NULL,
        Resolved::Bool(_) => BOOL,
        Resolved::Int(_) | Resolved::BigInt(_) => INT,
        Resolved::Float(_) => FLOAT,
        Resolved::Timestamp => TIMESTAMP,
        Resolved::Merge => MERGE,
        Resolved::Value => VALUE,
        Resolved::Str => STR,
    };
    let t = tag(resolve_plain(value));
    if t == STR
        && value.len() > 1
        && let Some(head) = value.strip_suffix('\n')
        && !head.ends_with('\n')
    {
        return tag(resolve_plain(head));
    }
    t
}

/// The text of `root` as asdf's `yaml.dump_all([root], Dumper=AsdfDumper, ...)` writes
/// it, with the `%TAG` directives `tags` (handle, prefix) in their order. `types` maps
/// the Python types represented to their kind (see `rasdf.asdf_hook`).
#[pyfunction]
pub(crate) fn hook_dump<'py>(
    py: Python<'py>,
    root: &Bound<'py, PyAny>,
    tags: Vec<(String, String)>,
    types: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut rep = Rep {
        py,
        nodes: Vec::new(),
        seen: HashMap::new(),
        keep: Vec::new(),
        types: types.clone(),
        encodebytes: py.import("base64")?.getattr("encodebytes")?,
        sorted: py.import("builtins")?.getattr("sorted")?,
        type_error: py.get_type::<pyo3::exceptions::PyTypeError>().into_any(),
    };
    let root = rep.represent(root, 0)?;
    let nodes = std::mem::take(&mut rep.nodes);
    drop(rep);
    let out = py.detach(|| emit(&nodes, root, &tags)).map_err(decline)?;
    Ok(PyBytes::new(py, &out))
}

/// The version and tag directives of a document start, made by parsing them (the
/// emitter's types have no constructors of their own).
fn directives(tags: &[(String, String)]) -> Result<Event, String> {
    let mut text = String::from("%YAML 1.1\n");
    for (h, p) in tags {
        if h.chars().any(char::is_whitespace) || p.chars().any(char::is_whitespace) || p.is_empty() {
            return Err("a tag directive the parser would not read back".into());
        }
        text.push_str(&format!("%TAG {h} {p}\n"));
    }
    text.push_str("--- ~\n");
    let mut input = text.as_bytes();
    let mut parser = Parser::new();
    parser.set_input_string(&mut input);
    loop {
        let e = parser.parse().map_err(|e| e.to_string())?;
        match e.data {
            EventData::DocumentStart { .. } => {
                // The directives in the order given (the parser keeps them so).
                if let EventData::DocumentStart { tag_directives, .. } = &e.data
                    && (tag_directives.len() != tags.len()
                        || tag_directives.iter().zip(tags).any(|(d, (h, p))| &d.handle != h || &d.prefix != p))
                {
                    return Err("tag directives read back otherwise".into());
                }
                return Ok(e);
            }
            EventData::StreamEnd => return Err("no document start".into()),
            _ => {}
        }
    }
}

fn emit(nodes: &[Node], root: usize, tags: &[(String, String)]) -> Result<Vec<u8>, String> {
    // libyaml's emitter takes characters past U+FFFF for unprintable (it escapes them in
    // double quotes); libyaml-safer's prints them: such text is left to PyYAML.
    let beyond_bmp = |s: &str| s.chars().any(|c| c > '\u{ffff}');
    if nodes.iter().any(|n| {
        n.tag.as_deref().is_some_and(beyond_bmp) || matches!(&n.kind, Kind::Scalar { value, .. } if beyond_bmp(value))
    }) || tags.iter().any(|(h, p)| beyond_bmp(h) || beyond_bmp(p))
    {
        return Err("a character past U+FFFF".into());
    }
    // libyaml-safer's folded scalar looks one character too far when it decides whether
    // a line break is written twice (libyaml writes "a\n\nb" where it writes "a\nb"):
    // folded text with a line break is left to PyYAML.
    if nodes.iter().any(|n| matches!(&n.kind, Kind::Scalar { value, style: Some('>') } if value.contains('\n'))) {
        return Err("folded text with a line break".into());
    }
    // Anchors: PyYAML's CEmitter numbers a node seen a second time, in that order.
    let mut anchors: Vec<Option<Option<u32>>> = vec![None; nodes.len()];
    let mut last = 0u32;
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        match anchors[n] {
            Some(None) => {
                last += 1;
                anchors[n] = Some(Some(last));
            }
            Some(Some(_)) => {}
            None => {
                anchors[n] = Some(None);
                match &nodes[n].kind {
                    Kind::Seq { items, .. } => stack.extend(items.iter().rev()),
                    Kind::Map { pairs, .. } => {
                        for &(k, v) in pairs.iter().rev() {
                            stack.push(v);
                            stack.push(k);
                        }
                    }
                    Kind::Scalar { .. } => {}
                }
            }
        }
    }
    let start = directives(tags)?;
    let mut out = Vec::new();
    {
        let mut emitter = Emitter::new();
        emitter.set_output_string(&mut out);
        emitter.set_unicode(true);
        let err = |e: libyaml_safer::Error| e.to_string();
        emitter.emit(Event::stream_start(libyaml_safer::Encoding::Utf8)).map_err(err)?;
        let EventData::DocumentStart { version_directive, tag_directives, .. } = start.data else {
            return Err("no document start".into());
        };
        emitter.emit(Event::document_start(version_directive, &tag_directives, false)).map_err(err)?;
        let mut done = vec![false; nodes.len()];
        let anchor_of = |n: usize| anchors[n].flatten().map(|a| format!("id{a:03}"));
        // Events in document order, iteratively: `Some(n)` a node to emit, `None` the
        // end of the collection open last.
        let mut todo: Vec<(Option<usize>, bool)> = vec![(Some(root), false)];
        while let Some((item, is_map)) = todo.pop() {
            let Some(n) = item else {
                let end = if is_map { Event::mapping_end() } else { Event::sequence_end() };
                emitter.emit(end).map_err(err)?;
                continue;
            };
            let anchor = anchor_of(n);
            if done[n] {
                let a = anchor.ok_or("an alias without an anchor")?;
                emitter.emit(Event::alias(&a)).map_err(err)?;
                continue;
            }
            done[n] = true;
            let node = &nodes[n];
            let tag = node.tag.as_deref();
            match &node.kind {
                Kind::Scalar { value, style } => {
                    let plain_implicit = tag == Some(plain_tag(value));
                    let quoted_implicit = tag == Some(STR);
                    let style = match style {
                        Some('\'') => ScalarStyle::SingleQuoted,
                        Some('"') => ScalarStyle::DoubleQuoted,
                        Some('|') => ScalarStyle::Literal,
                        Some('>') => ScalarStyle::Folded,
                        _ => ScalarStyle::Plain,
                    };
                    emitter
                        .emit(Event::scalar(anchor.as_deref(), tag, value, plain_implicit, quoted_implicit, style))
                        .map_err(err)?;
                }
                Kind::Seq { items, flow } => {
                    let style = if *flow { SequenceStyle::Flow } else { SequenceStyle::Block };
                    emitter
                        .emit(Event::sequence_start(anchor.as_deref(), tag, tag == Some(SEQ), style))
                        .map_err(err)?;
                    todo.push((None, false));
                    todo.extend(items.iter().rev().map(|&i| (Some(i), false)));
                }
                Kind::Map { pairs, flow } => {
                    let style = if *flow { MappingStyle::Flow } else { MappingStyle::Block };
                    emitter.emit(Event::mapping_start(anchor.as_deref(), tag, tag == Some(MAP), style)).map_err(err)?;
                    todo.push((None, true));
                    for &(k, v) in pairs.iter().rev() {
                        todo.push((Some(v), false));
                        todo.push((Some(k), false));
                    }
                }
            }
        }
        emitter.emit(Event::document_end(false)).map_err(err)?;
        emitter.emit(Event::stream_end()).map_err(err)?;
        emitter.flush().map_err(err)?;
    }
    Ok(out)
}
