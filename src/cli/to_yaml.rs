//! `rasdf to-yaml FILE -o OUT`: the file as pure YAML (every array inline), like
//! `asdftool to_yaml`; tags, anchors and key order are kept, and the reference library
//! reads OUT to the same tree and values. Unlike the reference's own `to_yaml` it also
//! handles 0-d arrays, inline arrays with nulls and nested structured datatypes.

use std::collections::HashMap;

use crate::AsdfFile;
use crate::error::{Error, Result};
use crate::ndarray::{Datatype, Element, NdArray};
use crate::tree::emit::{Emitter, format_float};
use crate::tree::{Node, NodeId, NodeRef, Tree, Value};

/// Python's `repr` of a float inside a complex: no `.0` added (`1`, `1.5`, `1e+20`).
fn complex_part(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format_float(x);
    if let Some(i) = s.find(".0e") {
        return format!("{}{}", &s[..i], &s[i + 2..]);
    }
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// Python's `str(complex)`: `(1+2j)`, `2j`, `(-0+0j)`, `(nan+infj)`.
pub fn complex_repr(re: f64, im: f64) -> String {
    let imag = complex_part(im);
    let imag_signed = if im.is_sign_negative() && !imag.starts_with('-') {
        format!("-{imag}")
    } else if imag.starts_with('-') {
        imag
    } else {
        format!("+{imag}")
    };
    if re == 0.0 && re.is_sign_positive() {
        return format!("{}j", complex_part(im));
    }
    format!("({}{imag_signed}j)", complex_part(re))
}

struct Builder<'a> {
    file: &'a AsdfFile,
    out: Tree,
    map: HashMap<NodeId, NodeId>,
}

fn node(value: Value) -> Node {
    Node { tag: None, value, line: 0, col: 0 }
}

impl Builder<'_> {
    fn add(&mut self, value: Value) -> NodeId {
        self.out.push(node(value))
    }

    fn text(&mut self, s: &str) -> NodeId {
        self.add(Value::Str(s.into()))
    }

    fn element(&mut self, e: &Element) -> NodeId {
        match e {
            Element::Bool(b) => self.add(Value::Bool(*b)),
            Element::Int(i) => self.add(Value::Int(*i)),
            Element::UInt(u) => match i64::try_from(*u) {
                Ok(i) => self.add(Value::Int(i)),
                Err(_) => self.add(Value::BigInt(Box::new((*u).into()))),
            },
            Element::Float(f) => self.add(Value::Float(*f)),
            Element::Complex(r, i) => self.out.push(Node {
                tag: Some(format!("{}core/complex-1.0.0", crate::tree::ASDF_TAG_PREFIX)),
                value: Value::Str(complex_repr(*r, *i)),
                line: 0,
                col: 0,
            }),
            Element::Bytes(b) => self.add(Value::Str(String::from_utf8_lossy(b).into_owned())),
            Element::Str(s) => self.add(Value::Str(s.clone())),
            Element::Record(v) | Element::List(v) => {
                let items = v.iter().map(|x| self.element(x)).collect();
                self.add(Value::Seq(items))
            }
        }
    }

    fn datatype(&mut self, d: &Datatype) -> NodeId {
        match d {
            Datatype::Scalar(s) => self.text(s.name()),
            Datatype::Ascii(n) | Datatype::Ucs4(n) => {
                let kind = self.text(if matches!(d, Datatype::Ascii(_)) { "ascii" } else { "ucs4" });
                let len = self.add(Value::Int(i64::try_from(*n).unwrap_or(i64::MAX)));
                self.add(Value::Seq(vec![kind, len]))
            }
            Datatype::Record(fields) => {
                let mut items = Vec::with_capacity(fields.len());
                for f in fields {
                    let mut pairs = Vec::new();
                    if let Some(name) = &f.name {
                        let (k, v) = (self.text("name"), self.text(name));
                        pairs.push((k, v));
                    }
                    let (k, v) = (self.text("datatype"), self.datatype(&f.datatype));
                    pairs.push((k, v));
                    if !f.shape.is_empty() {
                        let k = self.text("shape");
                        let dims = f
                            .shape
                            .iter()
                            .map(|&d| self.add(Value::Int(i64::try_from(d).unwrap_or(i64::MAX))))
                            .collect();
                        let v = self.add(Value::Seq(dims));
                        pairs.push((k, v));
                    }
                    items.push(self.add(Value::Map(pairs)));
                }
                self.add(Value::Seq(items))
            }
        }
    }

    /// Nested lists of `a`'s elements, `null` where masked.
    fn data(&mut self, a: &NdArray<'_>, mask: Option<&[bool]>) -> NodeId {
        let elements = a.elements();
        let leaves: Vec<NodeId> =
            elements
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    if mask.is_some_and(|m| m.get(i) == Some(&true)) { self.add(Value::Null) } else { self.element(e) }
                })
                .collect();
        if a.shape.is_empty() {
            // `data: [x]` with `shape: []`: a bare `data: 5` would read as a block number.
            return self.add(Value::Seq(leaves));
        }
        self.nest(&mut leaves.into_iter(), &a.shape)
    }

    fn nest(&mut self, it: &mut impl Iterator<Item = NodeId>, shape: &[usize]) -> NodeId {
        let items: Vec<NodeId> = if shape.len() == 1 {
            it.take(shape[0]).collect()
        } else {
            (0..shape[0]).map(|_| self.nest(it, &shape[1..])).collect()
        };
        self.add(Value::Seq(items))
    }

    fn array(&mut self, old: NodeRef<'_>, new: NodeId) -> Result<()> {
        let a = self.file.ndarray_at(old)?;
        // Inline nulls come back as nulls; a `mask` node is kept (inlined) below.
        let inline_mask = a.inline_mask().map(<[bool]>::to_vec);
        let mut pairs = Vec::new();
        let k = self.text("data");
        let v = self.data(&a, inline_mask.as_deref());
        pairs.push((k, v));
        if let Some(mask) = old.key("mask") {
            let k = self.text("mask");
            let v = self.copy(mask)?;
            pairs.push((k, v));
        }
        let k = self.text("datatype");
        let v = self.datatype(&a.datatype);
        pairs.push((k, v));
        let k = self.text("shape");
        let dims = a.shape.iter().map(|&d| self.add(Value::Int(i64::try_from(d).unwrap_or(i64::MAX)))).collect();
        let v = self.add(Value::Seq(dims));
        pairs.push((k, v));
        // Keys the reference does not know stay (block layout keys do not).
        for (k, v) in old.pairs().into_iter().flatten() {
            if !matches!(
                k.as_str(),
                Some("source" | "data" | "mask" | "datatype" | "byteorder" | "shape" | "offset" | "strides")
            ) {
                let (k, v) = (self.copy(k)?, self.copy(v)?);
                pairs.push((k, v));
            }
        }
        self.out.set_value(new, Value::Map(pairs));
        Ok(())
    }

    /// The copy of `c`, made empty and queued in `work` when it is new.
    fn child<'t>(&mut self, c: NodeRef<'t>, work: &mut Vec<(NodeRef<'t>, NodeId)>) -> NodeId {
        if let Some(&id) = self.map.get(&c.id()) {
            return id;
        }
        let id = self.out.push(Node { tag: c.tag().map(str::to_string), value: Value::Null, line: 0, col: 0 });
        self.map.insert(c.id(), id);
        work.push((c, id));
        id
    }

    /// Copies `old` (shared nodes stay shared), inlining ndarrays.
    fn copy(&mut self, old: NodeRef<'_>) -> Result<NodeId> {
        if let Some(&id) = self.map.get(&old.id()) {
            return Ok(id);
        }
        let new = self.out.push(Node { tag: old.tag().map(str::to_string), value: Value::Null, line: 0, col: 0 });
        self.map.insert(old.id(), new);
        // Children are copied with an explicit stack of work so deep trees do not
        // overflow; each entry fills one node whose own entry is already made.
        let mut work = vec![(old, new)];
        while let Some((o, n)) = work.pop() {
            if o.is_asdf_tag("core/ndarray") {
                self.array(o, n)?;
                continue;
            }
            let value = match o.value() {
                Value::Seq(_) => {
                    let mut v = Vec::new();
                    for c in o.items().into_iter().flatten() {
                        v.push(self.child(c, &mut work));
                    }
                    Value::Seq(v)
                }
                Value::Map(_) => {
                    let mut v = Vec::new();
                    for (k, c) in o.pairs().into_iter().flatten() {
                        let kk = self.child(k, &mut work);
                        let vv = self.child(c, &mut work);
                        v.push((kk, vv));
                    }
                    Value::Map(v)
                }
                other => other.clone(),
            };
            self.out.set_value(n, value);
        }
        Ok(new)
    }
}

/// The file's tree with every ndarray made inline.
///
/// # Errors
/// Any error reading an array.
pub fn inline_tree(file: &AsdfFile) -> Result<Tree> {
    let mut b = Builder { file, out: Tree::empty(), map: HashMap::new() };
    if let Some(root) = file.tree().root() {
        let id = b.copy(root)?;
        b.out.set_root(id);
    }
    Ok(b.out)
}

/// The whole YAML-only ASDF file for `file`.
///
/// # Errors
/// Any error reading an array.
pub fn to_yaml(file: &AsdfFile) -> Result<String> {
    let tree = inline_tree(file)?;
    let standard = file.header().standard_version.clone().unwrap_or_else(|| "1.0.0".into());
    let mut out = format!("#ASDF 1.0.0\n#ASDF_STANDARD {standard}\n");
    out += &Emitter::new(&tree).document();
    Ok(out)
}

/// Writes `to_yaml(file)` to `path` through a temporary file in the same folder.
///
/// # Errors
/// Reading arrays, or writing the output.
pub fn write(file: &AsdfFile, path: &std::path::Path) -> Result<()> {
    let text = to_yaml(file)?;
    crate::cli::write_atomically(path, text.as_bytes()).map_err(|e| Error::from(e).in_file(path))
}

#[cfg(test)]
mod tests {
    use super::complex_repr;

    #[test]
    fn complex_as_python_str() {
        assert_eq!(complex_repr(1.0, 2.0), "(1+2j)");
        assert_eq!(complex_repr(0.0, 2.0), "2j");
        assert_eq!(complex_repr(0.0, 0.0), "0j");
        assert_eq!(complex_repr(-0.0, 0.0), "(-0+0j)");
        assert_eq!(complex_repr(f64::NAN, f64::INFINITY), "(nan+infj)");
        assert_eq!(complex_repr(f64::NAN, f64::NEG_INFINITY), "(nan-infj)");
        assert_eq!(complex_repr(0.0, -f64::MAX), "-1.7976931348623157e+308j");
        assert_eq!(complex_repr(1.5, -1e-20), "(1.5-1e-20j)");
    }
}
