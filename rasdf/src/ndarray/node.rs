//! Writing ndarray nodes: the reverse of [`ArrayMeta::parse`](super::ArrayMeta::parse).
//! An array's layout becomes the keys of a `core/ndarray-1.x` mapping (`source`,
//! `datatype`, `byteorder`, `shape`, `offset`, `strides`), a `mask` of its own, or
//! inline `data` (nested lists of its elements); a streamed array's node declares
//! `source: -1` and a first dimension of `'*'`.
//!
//! The writer ([`crate::write`]) decides where each array goes; this module only says
//! how an ndarray node holds it, as the reference library writes it.

use super::{ByteOrder, Datatype, Element, NdArray, ScalarType, Source, c_strides};
use crate::tree::emit::{SPILL, Verbatim, push_int, push_scalar, push_spaces};
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
        Source::Fits(hdu) => text(tree, &format!("fits:{hdu}")),
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

/// An array's inline data as text: the nested lists of its elements (`null` where the
/// mask says), written element by element straight from the array's bytes into the
/// emitter's output, never as a node an element. The text is the emitter's for the
/// nodes [`inline_data`] makes (flow lists of scalars, block lists of lists), byte for
/// byte; for a 0-d array the record itself, or `[x]`.
pub(crate) struct InlineText<'a> {
    array: NdArray<'a>,
    mask: Option<&'a [bool]>,
    /// The ASDF Standard the tags are written for (see `Emitter::for_standard`).
    standard: Option<&'a str>,
    /// The tag of complex elements.
    complex_tag: String,
}

impl<'a> InlineText<'a> {
    /// The inline data of `array`, `null` where `mask` is true.
    pub(crate) fn new(array: NdArray<'a>, mask: Option<&'a [bool]>, standard: Option<&'a str>) -> Self {
        InlineText { array, mask, standard, complex_tag: format!("{ASDF_TAG_PREFIX}{COMPLEX_TAG}") }
    }
}

/// The state of one [`InlineText::emit`]: where the next element is, and the output.
struct InlineWriter<'a, 'o> {
    text: &'a InlineText<'a>,
    offsets: super::ByteOffsets<'a>,
    /// The C-order number of the next element (its place in the mask).
    index: usize,
    out: &'o mut String,
    spill: &'o mut dyn FnMut(&mut String),
}

/// The element after the last one: a masked or missing element is `null`.
enum Leaf {
    Null,
    Element(Element),
}

impl InlineWriter<'_, '_> {
    fn masked(&self, i: usize) -> bool {
        self.text.mask.is_some_and(|m| m.get(i) == Some(&true))
    }

    /// The next element in C order (`null` if masked).
    fn next_leaf(&mut self) -> Leaf {
        let i = self.index;
        self.index += 1;
        let at = self.offsets.next();
        if self.masked(i) {
            return Leaf::Null;
        }
        let a = &self.text.array;
        match at {
            Some(at) => Leaf::Element(super::datatype::decode_element(&a.datatype, &a.data[at..], a.byteorder)),
            None => Leaf::Null,
        }
    }

    fn spill(&mut self) {
        if self.out.len() >= SPILL {
            (self.spill)(self.out);
        }
    }

    /// A list of the dimensions `dims` (not empty) of the array, from the next element:
    /// the emitter's text of the nodes `nest` makes.
    fn dims(&mut self, dims: &[usize], indent: usize) {
        let n = dims[0];
        if n == 0 {
            // The elements an empty dimension skips (a shape such as [0, 3] has none).
            self.out.push_str(" []\n");
            return;
        }
        if dims.len() > 1 {
            self.out.push('\n');
            for _ in 0..n {
                push_spaces(self.out, indent);
                self.out.push('-');
                self.dims(&dims[1..], indent + 2);
                self.spill();
            }
            return;
        }
        // The last dimension: a flow list when every item is a scalar (a record is a
        // list, so a row of records is a flow list only when all are masked).
        let records = matches!(self.text.array.datatype, Datatype::Record(_));
        if !records || (self.index..self.index + n).all(|i| self.masked(i)) {
            self.out.push_str(" [");
            for k in 0..n {
                if k > 0 {
                    self.out.push_str(", ");
                }
                let leaf = self.next_leaf();
                self.scalar(&leaf);
                if k % 1024 == 1023 {
                    self.spill();
                }
            }
            self.out.push_str("]\n");
        } else {
            self.out.push('\n');
            for _ in 0..n {
                push_spaces(self.out, indent);
                self.out.push('-');
                let leaf = self.next_leaf();
                self.leaf(&leaf, indent + 2);
            }
        }
    }

    /// A scalar leaf's text (a record or subarray is not one).
    fn scalar(&mut self, leaf: &Leaf) {
        match leaf {
            Leaf::Null => self.out.push_str("null"),
            Leaf::Element(e) => push_element_scalar(self.out, e, self.text),
        }
    }

    /// A leaf as the emitter writes its node after `key:` or `-`.
    fn leaf(&mut self, leaf: &Leaf, indent: usize) {
        match leaf {
            Leaf::Element(Element::Record(items) | Element::List(items)) => self.list(items, indent),
            _ => {
                self.out.push(' ');
                self.scalar(leaf);
                self.out.push('\n');
            }
        }
    }

    /// A record's fields or a subarray's items, as the emitter writes the list
    /// [`element_node`] makes of them.
    fn list(&mut self, items: &[Element], indent: usize) {
        if items.is_empty() {
            self.out.push_str(" []\n");
        } else if items.iter().all(|e| !matches!(e, Element::Record(_) | Element::List(_))) {
            self.out.push_str(" [");
            for (k, e) in items.iter().enumerate() {
                if k > 0 {
                    self.out.push_str(", ");
                }
                push_element_scalar(self.out, e, self.text);
            }
            self.out.push_str("]\n");
        } else {
            self.out.push('\n');
            for e in items {
                push_spaces(self.out, indent);
                self.out.push('-');
                match e {
                    Element::Record(v) | Element::List(v) => self.list(v, indent + 2),
                    _ => {
                        self.out.push(' ');
                        push_element_scalar(self.out, e, self.text);
                        self.out.push('\n');
                    }
                }
            }
        }
        self.spill();
    }
}

impl Verbatim for InlineText<'_> {
    fn emit(&self, out: &mut String, indent: usize, spill: &mut dyn FnMut(&mut String)) {
        let a = &self.array;
        let mut w = InlineWriter { text: self, offsets: a.byte_offsets(), index: 0, out, spill };
        if a.shape.is_empty() {
            // A 0-d record is written as the record itself (its list of fields), as the
            // reference writes and reads it. Other 0-d arrays as `data: [x]`: a bare
            // `data: 5` is block 5 to the reference (which reads no inline 0-d form).
            let leaf = w.next_leaf();
            if matches!(a.datatype, Datatype::Record(_)) {
                w.leaf(&leaf, indent);
            } else {
                w.out.push_str(" [");
                w.scalar(&leaf);
                w.out.push_str("]\n");
            }
        } else {
            w.dims(&a.shape, indent);
        }
        w.spill();
    }
}

/// The text of scalar element `e` (not a record nor a subarray): the emitter's for the
/// node [`element_node`] makes of it.
fn push_element_scalar(out: &mut String, e: &Element, text: &InlineText<'_>) {
    match e {
        Element::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Element::Int(i) => push_int(out, *i),
        Element::UInt(u) => match i64::try_from(*u) {
            Ok(i) => push_int(out, i),
            Err(_) => {
                let _ = std::fmt::Write::write_fmt(out, format_args!("{u}"));
            }
        },
        Element::Float(f) => crate::tree::numtext::push_float(out, *f),
        Element::Complex(re, im) => {
            let value = Value::Str(crate::tree::numtext::complex_repr(*re, *im).into());
            push_scalar(out, Some(&text.complex_tag), &value, text.standard);
        }
        Element::Bytes(b) => {
            push_scalar(out, None, &Value::Str(String::from_utf8_lossy(b).into()), text.standard);
        }
        Element::Str(s) => {
            push_scalar(out, None, &Value::Str(s.as_str().into()), text.standard);
        }
        // Not scalars: written as lists by the caller.
        Element::Record(_) | Element::List(_) => {}
    }
}

/// The tag of a complex element of inline data.
const COMPLEX_TAG: &str = "core/complex-1.0.0";

/// Nested lists of `a`'s elements (`null` where `mask` says) as nodes, a node an
/// element; for a 0-d array the record itself, or `[x]`. [`InlineText`] writes their
/// text without making them; this is what its text is checked against.
#[cfg(test)]
pub(crate) fn inline_data(tree: &mut impl NodeArena, a: &NdArray<'_>, mask: Option<&[bool]>) -> NodeId {
    let leaves: Vec<NodeId> = a
        .elements()
        .enumerate()
        .map(|(i, e)| {
            if mask.is_some_and(|m| m.get(i) == Some(&true)) {
                tree.push(node(Value::Null))
            } else {
                element_node(tree, &e)
            }
        })
        .collect();
    if a.shape.is_empty() {
        if matches!(a.datatype, Datatype::Record(_)) && leaves.len() == 1 {
            return leaves[0];
        }
        return tree.push(node(Value::Seq(leaves)));
    }
    nest(tree, &mut leaves.into_iter(), &a.shape)
}

#[cfg(test)]
fn nest(tree: &mut impl NodeArena, it: &mut impl Iterator<Item = NodeId>, shape: &[usize]) -> NodeId {
    let items: Vec<NodeId> = if shape.len() == 1 {
        it.take(shape[0]).collect()
    } else {
        (0..shape[0]).map(|_| nest(tree, it, &shape[1..])).collect()
    };
    tree.push(node(Value::Seq(items)))
}

/// The node for one element of inline data.
#[cfg(test)]
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
            tree.push(asdf_tagged(COMPLEX_TAG, Value::Str(crate::tree::numtext::complex_repr(*r, *i).into())))
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

    /// The emitter's text of `{outer: {data: ...}}` for `a`'s inline data: made of nodes
    /// ([`inline_data`], as rasdf wrote it before), written by [`InlineText`] without
    /// them, and that streamed through a sink a megabyte at a time.
    fn texts(a: &NdArray<'_>, mask: Option<&[bool]>) -> (String, String, Vec<u8>) {
        let emit = |with_nodes: bool| {
            let mut tree = Tree::empty();
            let data = if with_nodes { inline_data(&mut tree, a, mask) } else { tree.push(node(Value::Null)) };
            let k = text(&mut tree, "data");
            let inner = tree.push(asdf_tagged(NDARRAY_TAG, Value::Map(vec![(k, data)])));
            let k = text(&mut tree, "outer");
            let root = tree.push(node(Value::Map(vec![(k, inner)])));
            tree.set_root(root);
            (tree, data)
        };
        let (old_tree, _) = emit(true);
        let old = crate::tree::emit::Emitter::new(&old_tree).for_standard("1.6.0").document();
        let (tree, placeholder) = emit(false);
        let inline = InlineText::new(a.clone(), mask, Some("1.6.0"));
        let verbatim = || std::collections::HashMap::from([(placeholder, &inline as &dyn Verbatim)]);
        let new = crate::tree::emit::Emitter::new(&tree).for_standard("1.6.0").with_verbatim(verbatim()).document();
        let mut sink = Vec::new();
        let n = crate::tree::emit::Emitter::new(&tree)
            .for_standard("1.6.0")
            .with_verbatim(verbatim())
            .write_document("#head\n", &mut sink)
            .unwrap();
        assert_eq!(n, sink.len() as u64);
        (old, new, sink)
    }

    fn assert_same_text(a: &NdArray<'_>, mask: Option<&[bool]>, what: &str) {
        let (old, new, streamed) = texts(a, mask);
        assert!(old == new, "{what}:\n{old}\n---- written from the bytes ----\n{new}");
        assert!(streamed.strip_prefix(b"#head\n") == Some(new.as_bytes()), "{what}: streamed");
    }

    fn field(name: &str, datatype: Datatype, shape: &[usize]) -> crate::ndarray::Field {
        crate::ndarray::Field { name: Some(name.into()), datatype, byteorder: ByteOrder::Big, shape: shape.to_vec() }
    }

    /// Inline data written from the array's bytes is the text its nodes made, for every
    /// datatype (random bits: NaNs, subnormals, huge uint64, text that needs quoting or
    /// is not UTF-8), shapes with empty dimensions, 0-d arrays, views (negative strides,
    /// offsets), masks (a row of records all masked is a flow list of nulls).
    #[test]
    fn inline_text_is_the_text_of_its_nodes() {
        use ScalarType::*;
        let record = Datatype::Record(vec![
            field("a", Datatype::Scalar(Int16), &[]),
            field("b", Datatype::Scalar(Float32), &[2, 2]),
            field("c", Datatype::Ascii(3), &[]),
            field("d", Datatype::Record(vec![field("e", Datatype::Scalar(Complex64), &[])]), &[]),
            field("f", Datatype::Scalar(UInt8), &[0]),
        ]);
        let mut datatypes: Vec<Datatype> = [
            Bool8, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, Float32, Float64, Complex64,
            Complex128,
        ]
        .into_iter()
        .map(Datatype::Scalar)
        .collect();
        datatypes.extend([Datatype::Ascii(4), Datatype::Ucs4(2), Datatype::Ascii(0), record]);
        let shapes: [&[usize]; 7] = [&[], &[0], &[5], &[2, 0], &[0, 3], &[3, 4], &[2, 3, 2]];
        for dt in &datatypes {
            let size = dt.size();
            let bytes = crate::testutil::noise(size * 24 + 64, 3 + size as u64);
            for order in [ByteOrder::Little, ByteOrder::Big] {
                for shape in shapes {
                    let strides = c_strides(shape, size);
                    let a = NdArray::from_layout(dt, order, shape, &strides, 0, &bytes);
                    let what = format!("{dt} {order:?} {shape:?}");
                    assert_same_text(&a, None, &what);
                    let n = shape.iter().product::<usize>();
                    // Every other element masked, then whole rows (and a short mask).
                    let mask: Vec<bool> = (0..n).map(|i| i % 2 == 1).collect();
                    assert_same_text(&a, Some(&mask), &format!("{what}, every other masked"));
                    let last = shape.last().copied().unwrap_or(1).max(1);
                    let mask: Vec<bool> = (0..n.saturating_sub(1)).map(|i| i / last != 1).collect();
                    assert_same_text(&a, Some(&mask), &format!("{what}, rows masked"));
                }
                // A view: the second axis reversed, from an offset.
                let strides = [3 * size as isize, -(size as isize)];
                let a = NdArray::from_layout(dt, order, &[4, 3], &strides, 2 * size + 5, &bytes);
                assert_same_text(&a, None, &format!("{dt} {order:?} a reversed view"));
            }
        }
    }

    /// A million elements (floats of every kind, in rows, and ints in one flow list):
    /// the same text, written through a sink a megabyte at a time.
    #[test]
    fn a_million_elements_are_the_same_text() {
        let floats: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| {
                let x = crate::samples::float(i);
                x.to_le_bytes()
            })
            .collect();
        let dt = Datatype::Scalar(ScalarType::Float64);
        let a = NdArray::from_layout(&dt, ByteOrder::Little, &[1000, 1000], &c_strides(&[1000, 1000], 8), 0, &floats);
        let (old, new, streamed) = texts(&a, None);
        assert!(old == new, "the text of a million floats differs");
        assert!(streamed.strip_prefix(b"#head\n") == Some(new.as_bytes()));
        assert!(new.len() > 10_000_000, "{} bytes", new.len());
        let ints: Vec<u8> = (0..1_000_000i64).flat_map(|i| (i * i - 7_777_777).to_be_bytes()).collect();
        let dt = Datatype::Scalar(ScalarType::Int64);
        let a = NdArray::from_layout(&dt, ByteOrder::Big, &[1_000_000], &[8], 0, &ints);
        let mask: Vec<bool> = (0..1_000_000).map(|i| i % 1000 == 999).collect();
        let (old, new, _) = texts(&a, Some(&mask));
        assert!(old == new, "the text of a million ints differs");
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
