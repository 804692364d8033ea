//! Writing ndarray nodes: the reverse of [`ArrayMeta::parse`](super::ArrayMeta::parse).
//! An array's layout becomes the keys of a `core/ndarray-1.x` mapping (`source`,
//! `datatype`, `byteorder`, `shape`, `offset`, `strides`), a `mask` of its own, or
//! inline `data` (nested lists of its elements); a streamed array's node declares
//! `source: -1` and a first dimension of `'*'`.
//!
//! The writer ([`crate::write`]) decides where each array goes; this module only says
//! how an ndarray node holds it, as the reference library writes it.

use super::{ByteOrder, Datatype, Element, NdArray, ScalarType, Source, c_strides};
use crate::tree::{ASDF_TAG_PREFIX, Node, NodeArena, NodeId, Value};

/// The keys of an ndarray node that say where its data is and how it is laid out: a
/// write sets them anew (and keeps the others, a `mask` or unknown extras).
pub(crate) const LAYOUT_KEYS: [&str; 7] = ["source", "data", "datatype", "byteorder", "shape", "offset", "strides"];

/// The tag rasdf writes on ndarray nodes.
pub(crate) const NDARRAY_TAG: &str = "core/ndarray-1.1.0";

/// The name of the newtype struct that [`crate::write::Ndarray`] serializes as: the
/// tree's serializer recognizes it and marks the node it makes with
/// [`PENDING_NDARRAY_TAG`], for the document to turn into an ndarray node with a block.
pub(crate) const SERDE_NDARRAY: &str = "$rasdf::private::Ndarray";

/// The tag of a node that holds an array serialized by serde (a mapping of `datatype`,
/// `shape` and `data` bytes) until the document takes its bytes for a block. Not a tag
/// any file holds: nothing with it is ever written.
pub(crate) const PENDING_NDARRAY_TAG: &str = "tag:rasdf.invalid,2025:pending-ndarray";

fn node(value: Value) -> Node {
    Node { tag: None, value, line: 0, col: 0 }
}

fn text(tree: &mut impl NodeArena, s: &str) -> NodeId {
    tree.push(node(Value::Str(s.into())))
}

fn int(tree: &mut impl NodeArena, i: impl TryInto<i64>) -> NodeId {
    tree.push(node(Value::Int(i.try_into().unwrap_or(i64::MAX))))
}

/// A node tagged `!<tag>` of the ASDF tag prefix (`core/ndarray-1.1.0`).
pub(crate) fn asdf_tagged(tag: &str, value: Value) -> Node {
    Node { tag: Some(format!("{ASDF_TAG_PREFIX}{tag}")), value, line: 0, col: 0 }
}

/// An array's layout, as its ndarray node declares it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeLayout<'a> {
    /// The element type.
    pub datatype: &'a Datatype,
    /// The byte order of the block's data.
    pub byteorder: ByteOrder,
    /// The shape.
    pub shape: &'a [usize],
    /// Byte strides.
    pub strides: &'a [isize],
    /// Byte offset of the first element in the block.
    pub offset: usize,
    /// Inline data (no `byteorder`, `offset` nor `strides`).
    pub inline: bool,
}

/// The node of `source`: a block number, or the name of a file (already
/// percent-encoded as a URI reference).
pub(crate) fn source_node(tree: &mut impl NodeArena, source: &Source) -> NodeId {
    match source {
        Source::Block(n) => int(tree, *n),
        Source::External(name) => text(tree, name),
        Source::Inline => tree.push(node(Value::Null)),
    }
}

/// Appends the layout keys of `a` to `pairs`: `datatype`, then (unless inline)
/// `byteorder`, `shape`, then (unless inline) `offset` and `strides` when not the
/// defaults.
pub(crate) fn layout_pairs(tree: &mut impl NodeArena, a: &NodeLayout<'_>, pairs: &mut Vec<(NodeId, NodeId)>) {
    let mut put = |tree: &mut _, k: &str, v: NodeId| {
        let k = text(tree, k);
        pairs.push((k, v));
    };
    let dt = datatype_node(tree, a.datatype);
    put(tree, "datatype", dt);
    if !a.inline {
        // One-byte types are written `big`, as the reference does.
        let order = if a.datatype.size() == 1 || matches!(a.datatype, Datatype::Ascii(_)) {
            ByteOrder::Big
        } else {
            a.byteorder
        };
        let bo = text(tree, order.name());
        put(tree, "byteorder", bo);
    }
    let dims = a.shape.iter().map(|&d| int(tree, d)).collect();
    let shape = tree.push(node(Value::Seq(dims)));
    put(tree, "shape", shape);
    if !a.inline {
        if a.offset != 0 {
            let o = int(tree, a.offset);
            put(tree, "offset", o);
        }
        if a.strides != c_strides(a.shape, a.datatype.size()) && a.shape.iter().all(|&d| d > 0) {
            let s = a.strides.iter().map(|&s| int(tree, s as i64)).collect();
            let s = tree.push(node(Value::Seq(s)));
            put(tree, "strides", s);
        }
    }
}

/// The mask of an array of `shape` as an ndarray node of its own: bool8, C order, at
/// `source`, tagged `tag` (the array's), as the reference writes a masked array's mask.
pub(crate) fn mask_node(tree: &mut impl NodeArena, tag: Option<String>, source: NodeId, shape: &[usize]) -> NodeId {
    let datatype = Datatype::Scalar(ScalarType::Bool8);
    let strides = c_strides(shape, 1);
    let layout = NodeLayout {
        datatype: &datatype,
        byteorder: ByteOrder::Big,
        shape,
        strides: &strides,
        offset: 0,
        inline: false,
    };
    let k = text(tree, "source");
    let mut pairs = vec![(k, source)];
    layout_pairs(tree, &layout, &mut pairs);
    tree.push(Node { tag, value: Value::Map(pairs), line: 0, col: 0 })
}

/// The pairs of a streamed array's node (reference notes 1.11): `source: -1`, its
/// datatype and byte order, and `shape: ['*', <row shape>...]`.
pub(crate) fn stream_pairs(tree: &mut impl NodeArena, datatype: ScalarType, row: &[usize]) -> Vec<(NodeId, NodeId)> {
    let mut pairs = Vec::new();
    let mut put = |tree: &mut _, k: &str, v: NodeId| {
        let k = text(tree, k);
        pairs.push((k, v));
    };
    let source = int(tree, -1);
    put(tree, "source", source);
    let dt = text(tree, datatype.name());
    put(tree, "datatype", dt);
    let order = if datatype.size() == 1 { ByteOrder::Big } else { ByteOrder::NATIVE };
    let bo = text(tree, order.name());
    put(tree, "byteorder", bo);
    let mut dims = vec![text(tree, "*")];
    dims.extend(row.iter().map(|&d| int(tree, d)));
    let shape = tree.push(node(Value::Seq(dims)));
    put(tree, "shape", shape);
    pairs
}

/// Nodes for a datatype: a name, `[ascii, n]`/`[ucs4, n]`, or a record's list of fields.
pub(crate) fn datatype_node(tree: &mut impl NodeArena, d: &Datatype) -> NodeId {
    match d {
        Datatype::Scalar(s) => text(tree, s.name()),
        Datatype::Ascii(n) | Datatype::Ucs4(n) => {
            let kind = text(tree, if matches!(d, Datatype::Ascii(_)) { "ascii" } else { "ucs4" });
            let len = int(tree, *n);
            tree.push(node(Value::Seq(vec![kind, len])))
        }
        Datatype::Record(fields) => {
            let mut items = Vec::with_capacity(fields.len());
            for f in fields {
                let mut pairs = Vec::new();
                if let Some(name) = &f.name {
                    let (k, v) = (text(tree, "name"), text(tree, name.as_str()));
                    pairs.push((k, v));
                }
                let k = text(tree, "datatype");
                let v = datatype_node(tree, &f.datatype);
                pairs.push((k, v));
                if f.datatype.size() > 1 && !matches!(f.datatype, Datatype::Ascii(_) | Datatype::Record(_)) {
                    let (k, v) = (text(tree, "byteorder"), text(tree, f.byteorder.name()));
                    pairs.push((k, v));
                }
                if !f.shape.is_empty() {
                    let k = text(tree, "shape");
                    let dims = f.shape.iter().map(|&d| int(tree, d)).collect();
                    let v = tree.push(node(Value::Seq(dims)));
                    pairs.push((k, v));
                }
                items.push(tree.push(node(Value::Map(pairs))));
            }
            tree.push(node(Value::Seq(items)))
        }
    }
}

/// Nested lists of `a`'s elements (`null` where `mask` says); for a 0-d array the record
/// itself, or `[x]`.
pub(crate) fn inline_data(tree: &mut impl NodeArena, a: &NdArray<'_>, mask: Option<&[bool]>) -> NodeId {
    let leaves: Vec<NodeId> = a
        .elements()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if mask.is_some_and(|m| m.get(i) == Some(&true)) {
                tree.push(node(Value::Null))
            } else {
                element_node(tree, e)
            }
        })
        .collect();
    if a.shape.is_empty() {
        // A 0-d record is written as the record itself (its list of fields), as the
        // reference writes and reads it. Other 0-d arrays as `data: [x]`: a bare
        // `data: 5` is block 5 to the reference (which reads no inline 0-d form).
        if matches!(a.datatype, Datatype::Record(_)) && leaves.len() == 1 {
            return leaves[0];
        }
        return tree.push(node(Value::Seq(leaves)));
    }
    nest(tree, &mut leaves.into_iter(), &a.shape)
}

fn nest(tree: &mut impl NodeArena, it: &mut impl Iterator<Item = NodeId>, shape: &[usize]) -> NodeId {
    let items: Vec<NodeId> = if shape.len() == 1 {
        it.take(shape[0]).collect()
    } else {
        (0..shape[0]).map(|_| nest(tree, it, &shape[1..])).collect()
    };
    tree.push(node(Value::Seq(items)))
}

/// The node for one element of inline data.
pub(crate) fn element_node(tree: &mut impl NodeArena, e: &Element) -> NodeId {
    match e {
        Element::Bool(b) => tree.push(node(Value::Bool(*b))),
        Element::Int(i) => tree.push(node(Value::Int(*i))),
        Element::UInt(u) => match i64::try_from(*u) {
            Ok(i) => tree.push(node(Value::Int(i))),
            Err(_) => tree.push(node(Value::BigInt(Box::new((*u).into())))),
        },
        Element::Float(f) => tree.push(node(Value::Float(*f))),
        Element::Complex(r, i) => {
            tree.push(asdf_tagged("core/complex-1.0.0", Value::Str(crate::tree::numtext::complex_repr(*r, *i).into())))
        }
        Element::Bytes(b) => tree.push(node(Value::Str(String::from_utf8_lossy(b).into()))),
        Element::Str(s) => text(tree, s.as_str()),
        Element::Record(v) | Element::List(v) => {
            let items = v.iter().map(|x| element_node(tree, x)).collect();
            tree.push(node(Value::Seq(items)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::ndarray::ArrayMeta;
    use crate::tree::Tree;

    /// What the writer declares, the reader parses back.
    #[test]
    fn layouts_read_back_as_written() {
        let mut tree = Tree::empty();
        let datatype = Datatype::Scalar(ScalarType::Float32);
        let (shape, strides) = ([3usize, 2], [4isize, 12]);
        let layout = NodeLayout {
            datatype: &datatype,
            byteorder: ByteOrder::Big,
            shape: &shape,
            strides: &strides,
            offset: 8,
            inline: false,
        };
        let source = source_node(&mut tree, &Source::Block(2));
        let k = text(&mut tree, "source");
        let mut pairs = vec![(k, source)];
        layout_pairs(&mut tree, &layout, &mut pairs);
        let id = tree.push(asdf_tagged(NDARRAY_TAG, Value::Map(pairs)));
        tree.set_root(id);
        let meta = ArrayMeta::parse(tree.node(id)).unwrap();
        assert_eq!(meta.source, Source::Block(2));
        assert_eq!(meta.datatype, datatype);
        assert_eq!(meta.byteorder, ByteOrder::Big);
        assert_eq!(meta.offset, 8);
        assert_eq!(meta.strides, Some(vec![4, 12]));
        let l = meta.layout(64, &Limits::default()).unwrap();
        assert_eq!((l.shape, l.strides, l.offset), (shape.to_vec(), strides.to_vec(), 8));
        // A C-order layout declares no strides, and no offset at 0.
        let c = c_strides(&shape, 4);
        let layout = NodeLayout { strides: &c, offset: 0, ..layout };
        let mut pairs = Vec::new();
        layout_pairs(&mut tree, &layout, &mut pairs);
        let keys: Vec<String> = pairs.iter().map(|&(k, _)| tree.node(k).key_text()).collect();
        assert_eq!(keys, ["datatype", "byteorder", "shape"]);
    }

    #[test]
    fn streamed_nodes_declare_a_star() {
        let mut tree = Tree::empty();
        let pairs = stream_pairs(&mut tree, ScalarType::Int16, &[4]);
        let id = tree.push(asdf_tagged(NDARRAY_TAG, Value::Map(pairs)));
        let meta = ArrayMeta::parse(tree.node(id)).unwrap();
        assert_eq!(meta.source, Source::Block(-1));
        assert_eq!(meta.shape, [crate::ndarray::Dim::Stream, crate::ndarray::Dim::Fixed(4)]);
    }
}
