//! serde: any serializable value as nodes of a tree, with YAML's own types. A float stays
//! a float (NaN and the infinities included, which JSON has no room for), an integer key
//! stays an integer, bytes (`serde_bytes`) become `!!binary`, integers beyond 64 bits a
//! big integer. Structs and maps keep their order; enums are tagged as serde's default
//! externally tagged form (`Variant: value`).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;

use num_bigint::BigInt;
use serde::ser::{self, Serialize};

use super::{CompactString, KeyRepr, Node, NodeId, Tree, Value, key_repr};

/// A value serde could not turn into nodes: a mapping key that is not a scalar, or the
/// value's own `Serialize` failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerError(pub String);

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SerError(msg.to_string())
    }
}

/// Adds `value` to `tree` as nodes; returns its root (not attached anywhere).
///
/// An array serde met as `rasdf::write::Ndarray` (a newtype struct of the name
/// [`SERDE_NDARRAY`](crate::ndarray::node::SERDE_NDARRAY)) is a mapping of its
/// `datatype`, `byteorder`, `shape`, `compression` and `data` (`!!binary`) tagged
/// [`PENDING_NDARRAY_TAG`](crate::ndarray::node::PENDING_NDARRAY_TAG): the caller makes
/// it an ndarray node (see `Document::set_serialize`), taking the bytes with
/// [`Tree::take_binary`].
pub(crate) fn to_node<T: Serialize + ?Sized>(tree: &mut Tree, value: &T) -> Result<NodeId, SerError> {
    value.serialize(NodeSer { tree })
}

impl Tree {
    /// The bytes of `!!binary` node `id`, taken out (it is left `null`); `None` for any
    /// other node.
    pub(crate) fn take_binary(&mut self, id: NodeId) -> Option<Vec<u8>> {
        let value = &mut self.nodes.get_mut(id.0 as usize)?.value;
        match std::mem::replace(value, Value::Null) {
            Value::Binary(bytes) => Some(bytes),
            other => {
                *value = other;
                None
            }
        }
    }
}

fn plain(value: Value) -> Node {
    Node { tag: None, value, line: 0, col: 0 }
}

struct NodeSer<'t> {
    tree: &'t mut Tree,
}

impl NodeSer<'_> {
    fn push(self, value: Value) -> Result<NodeId, SerError> {
        Ok(self.tree.push(plain(value)))
    }
}

fn int(i: i128) -> Value {
    i64::try_from(i).map_or_else(|_| Value::BigInt(Box::new(BigInt::from(i))), Value::Int)
}

/// `{variant: value}`, serde's externally tagged enum variant.
fn variant(tree: &mut Tree, name: &str, value: NodeId) -> NodeId {
    let key = tree.push(plain(Value::Str(name.into())));
    tree.push(plain(Value::Map(vec![(key, value)])))
}

/// Serializers of the integers every `i64` holds.
macro_rules! small_ints {
    ($($method:ident : $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result<NodeId, SerError> {
            self.push(Value::Int(v.into()))
        }
    )*};
}

impl<'t> ser::Serializer for NodeSer<'t> {
    type Ok = NodeId;
    type Error = SerError;
    type SerializeSeq = SeqSer<'t>;
    type SerializeTuple = SeqSer<'t>;
    type SerializeTupleStruct = SeqSer<'t>;
    type SerializeTupleVariant = SeqSer<'t>;
    type SerializeMap = MapSer<'t>;
    type SerializeStruct = MapSer<'t>;
    type SerializeStructVariant = MapSer<'t>;

    fn serialize_bool(self, v: bool) -> Result<NodeId, SerError> {
        self.push(Value::Bool(v))
    }
    small_ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32);
    fn serialize_i64(self, v: i64) -> Result<NodeId, SerError> {
        self.push(Value::Int(v))
    }
    fn serialize_i128(self, v: i128) -> Result<NodeId, SerError> {
        self.push(int(v))
    }
    fn serialize_u64(self, v: u64) -> Result<NodeId, SerError> {
        self.push(int(v.into()))
    }
    fn serialize_u128(self, v: u128) -> Result<NodeId, SerError> {
        let value = i128::try_from(v).map_or_else(|_| Value::BigInt(Box::new(BigInt::from(v))), int);
        self.push(value)
    }
    fn serialize_f32(self, v: f32) -> Result<NodeId, SerError> {
        self.push(Value::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<NodeId, SerError> {
        self.push(Value::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<NodeId, SerError> {
        self.push(Value::Str(CompactString::new(v.encode_utf8(&mut [0; 4]))))
    }
    fn serialize_str(self, v: &str) -> Result<NodeId, SerError> {
        self.push(Value::Str(v.into()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<NodeId, SerError> {
        self.push(Value::Binary(v.to_vec()))
    }
    fn serialize_none(self) -> Result<NodeId, SerError> {
        self.push(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<NodeId, SerError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<NodeId, SerError> {
        self.push(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<NodeId, SerError> {
        self.push(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<NodeId, SerError> {
        self.push(Value::Str(variant.into()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<NodeId, SerError> {
        let tree = self.tree;
        let id = value.serialize(NodeSer { tree: &mut *tree })?;
        // An array (`rasdf::write::Ndarray`): marked for the document, which takes its
        // bytes for a block and makes the node an ndarray.
        if name == crate::ndarray::node::SERDE_NDARRAY {
            tree.set_tag(id, Some(crate::ndarray::node::PENDING_NDARRAY_TAG.into()));
        }
        Ok(id)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        value: &T,
    ) -> Result<NodeId, SerError> {
        let inner = value.serialize(NodeSer { tree: &mut *self.tree })?;
        Ok(variant(self.tree, name, inner))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer<'t>, SerError> {
        Ok(SeqSer { tree: self.tree, items: Vec::with_capacity(len.unwrap_or(0).min(4096)), variant: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer<'t>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<SeqSer<'t>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        len: usize,
    ) -> Result<SeqSer<'t>, SerError> {
        let mut s = self.serialize_seq(Some(len))?;
        s.variant = Some(name);
        Ok(s)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapSer<'t>, SerError> {
        Ok(MapSer { tree: self.tree, pairs: Vec::new(), seen: HashMap::new(), key: None, variant: None })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapSer<'t>, SerError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        len: usize,
    ) -> Result<MapSer<'t>, SerError> {
        let mut m = self.serialize_map(Some(len))?;
        m.variant = Some(name);
        Ok(m)
    }
}

/// A sequence (or tuple) being serialized.
pub(crate) struct SeqSer<'t> {
    tree: &'t mut Tree,
    items: Vec<NodeId>,
    /// The variant a tuple variant is tagged with.
    variant: Option<&'static str>,
}

impl SeqSer<'_> {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let id = value.serialize(NodeSer { tree: &mut *self.tree })?;
        self.items.push(id);
        Ok(())
    }

    fn finish(self) -> Result<NodeId, SerError> {
        let seq = self.tree.push(plain(Value::Seq(self.items)));
        Ok(match self.variant {
            Some(name) => variant(self.tree, name, seq),
            None => seq,
        })
    }
}

/// serde's compound traits that each add one item more to a sequence.
macro_rules! seq_items {
    ($($compound:ident :: $add:ident),*) => {$(
        impl ser::$compound for SeqSer<'_> {
            type Ok = NodeId;
            type Error = SerError;
            fn $add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
                self.item(value)
            }
            fn end(self) -> Result<NodeId, SerError> {
                self.finish()
            }
        }
    )*};
}

seq_items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A mapping (or struct) being serialized. A key met again replaces the value at the
/// first key's place, as a Python dict does.
pub(crate) struct MapSer<'t> {
    tree: &'t mut Tree,
    pairs: Vec<(NodeId, NodeId)>,
    seen: HashMap<KeyRepr, usize>,
    /// The key whose value comes next, and its hashable form.
    key: Option<(NodeId, KeyRepr)>,
    /// The variant a struct variant is tagged with.
    variant: Option<&'static str>,
}

impl MapSer<'_> {
    fn key_node(&mut self, key: NodeId) -> Result<(), SerError> {
        let repr = key_repr(&self.tree.nodes[key.0 as usize].value)
            .ok_or_else(|| SerError("a mapping key must be a scalar, not a sequence or a mapping".into()))?;
        self.key = Some((key, repr));
        Ok(())
    }

    fn value_node(&mut self, value: NodeId) -> Result<(), SerError> {
        let (key, repr) = self.key.take().ok_or_else(|| SerError("a mapping value came before its key".into()))?;
        match self.seen.entry(repr) {
            Entry::Occupied(at) => self.pairs[*at.get()].1 = value,
            Entry::Vacant(at) => {
                at.insert(self.pairs.len());
                self.pairs.push((key, value));
            }
        }
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<(), SerError> {
        let key = self.tree.push(plain(Value::Str(name.into())));
        self.key_node(key)?;
        let value = value.serialize(NodeSer { tree: &mut *self.tree })?;
        self.value_node(value)
    }

    fn finish(self) -> Result<NodeId, SerError> {
        if self.key.is_some() {
            return Err(SerError("a mapping key came without its value".into()));
        }
        let map = self.tree.push(plain(Value::Map(self.pairs)));
        Ok(match self.variant {
            Some(name) => variant(self.tree, name, map),
            None => map,
        })
    }
}

impl ser::SerializeMap for MapSer<'_> {
    type Ok = NodeId;
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerError> {
        let key = key.serialize(NodeSer { tree: &mut *self.tree })?;
        self.key_node(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let value = value.serialize(NodeSer { tree: &mut *self.tree })?;
        self.value_node(value)
    }
    fn end(self) -> Result<NodeId, SerError> {
        self.finish()
    }
}

/// serde's struct traits: a field is a key and its value.
macro_rules! struct_fields {
    ($($compound:ident),*) => {$(
        impl ser::$compound for MapSer<'_> {
            type Ok = NodeId;
            type Error = SerError;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), SerError> {
                self.field(name, value)
            }
            fn end(self) -> Result<NodeId, SerError> {
                self.finish()
            }
        }
    )*};
}

struct_fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    enum Shape {
        Point,
        Circle(f64),
        Pair(i32, i32),
        Box { w: u8, h: u8 },
    }

    #[derive(serde::Serialize)]
    struct All {
        zeta: f64,
        alpha: f32,
        nan: f64,
        inf: f64,
        ninf: f32,
        big: u64,
        huge: u128,
        neg: i128,
        keys: BTreeMap<i32, &'static str>,
        flags: BTreeMap<bool, u8>,
        shapes: Vec<Shape>,
        nothing: Option<u8>,
        unit: (),
        c: char,
        tuple: (i8, String),
    }

    /// A flow-style sketch of a subtree.
    fn text(tree: &Tree, id: NodeId) -> String {
        let join = |parts: Vec<String>| parts.join(", ");
        match tree.node(id).value() {
            Value::Seq(items) => format!("[{}]", join(items.iter().map(|&i| text(tree, i)).collect())),
            Value::Map(pairs) => {
                format!(
                    "{{{}}}",
                    join(pairs.iter().map(|&(k, v)| format!("{}: {}", text(tree, k), text(tree, v))).collect())
                )
            }
            Value::Str(s) => s.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn values_keep_their_yaml_types() {
        let mut tree = Tree::default();
        let mut keys = BTreeMap::new();
        keys.insert(10, "ten");
        keys.insert(2, "two");
        let mut flags = BTreeMap::new();
        flags.insert(true, 1);
        let value = All {
            zeta: 0.5,
            alpha: 0.1,
            nan: f64::NAN,
            inf: f64::INFINITY,
            ninf: f32::NEG_INFINITY,
            big: u64::MAX,
            huge: u128::MAX,
            neg: -(1i128 << 100),
            keys,
            flags,
            shapes: vec![Shape::Point, Shape::Circle(2.0), Shape::Pair(1, -1), Shape::Box { w: 3, h: 4 }],
            nothing: None,
            unit: (),
            c: 'é',
            tuple: (-3, "x".into()),
        };
        let id = to_node(&mut tree, &value).unwrap();
        let root = tree.node(id);
        let get = |p: &str| root.get(p).unwrap_or_else(|| panic!("no {p}")).value().clone();
        // Field order, not sorted.
        let names: Vec<String> = root.pairs().unwrap().map(|(k, _)| k.key_text()).collect();
        assert_eq!(names[..3], ["zeta", "alpha", "nan"]);
        assert_eq!(get("zeta"), Value::Float(0.5));
        assert_eq!(get("alpha"), Value::Float(f64::from(0.1f32)));
        assert!(matches!(get("nan"), Value::Float(f) if f.is_nan()));
        assert_eq!(get("inf"), Value::Float(f64::INFINITY));
        assert_eq!(get("ninf"), Value::Float(f64::NEG_INFINITY));
        assert_eq!(get("big"), Value::BigInt(Box::new(BigInt::from(u64::MAX))));
        assert_eq!(get("huge"), Value::BigInt(Box::new(BigInt::from(u128::MAX))));
        assert_eq!(get("neg"), Value::BigInt(Box::new(-(BigInt::from(1u8) << 100u32))));
        // Integer and bool keys stay integers and bools.
        let keys = root.get("keys").unwrap();
        let key_values: Vec<Value> = keys.pairs().unwrap().map(|(k, _)| k.value().clone()).collect();
        assert_eq!(key_values, [Value::Int(2), Value::Int(10)]);
        let flag_keys: Vec<Value> =
            root.get("flags").unwrap().pairs().unwrap().map(|(k, _)| k.value().clone()).collect();
        assert_eq!(flag_keys, [Value::Bool(true)]);
        assert_eq!(
            text(&tree, root.get("shapes").unwrap().id()),
            "[Point, {Circle: 2.0}, {Pair: [1, -1]}, {Box: {w: 3, h: 4}}]"
        );
        assert_eq!(get("nothing"), Value::Null);
        assert_eq!(get("unit"), Value::Null);
        assert_eq!(get("c"), Value::Str("é".into()));
        assert_eq!(text(&tree, root.get("tuple").unwrap().id()), "[-3, x]");
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    enum Kind {
        Plain,
        Scaled(f32),
        Span { from: i64, to: i64 },
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Meta {
        name: String,
        big: u64,
        wide: i128,
        by_id: BTreeMap<u16, Kind>,
        limits: (f64, f64),
        note: Option<String>,
    }

    /// What `to_node` makes, serde reads back as it was.
    #[test]
    fn nodes_deserialize_back_to_the_value() {
        let value = Meta {
            name: "yes".into(),
            big: u64::MAX,
            wide: i128::MIN,
            by_id: [(3, Kind::Plain), (1, Kind::Scaled(0.25)), (2, Kind::Span { from: -1, to: 1 })]
                .into_iter()
                .collect(),
            limits: (f64::NEG_INFINITY, 1e300),
            note: None,
        };
        let mut tree = Tree::default();
        let id = to_node(&mut tree, &value).unwrap();
        assert_eq!(tree.node(id).deserialize::<Meta>().unwrap(), value);
    }

    struct Odd(Vec<(Vec<u8>, u8)>);

    impl Serialize for Odd {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeMap;
            let mut m = s.serialize_map(None)?;
            for (k, v) in &self.0 {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }

    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    #[test]
    fn bytes_repeated_keys_and_keys_that_cannot_be() {
        let mut tree = Tree::default();
        let id = to_node(&mut tree, &Bytes(b"\x00\xffhi")).unwrap();
        assert_eq!(tree.node(id).value(), &Value::Binary(b"\x00\xffhi".to_vec()));
        // A key met again: the last value, at the first key's place.
        let mut m: Vec<(&str, u8)> = vec![("a", 1), ("b", 2), ("a", 3)];
        struct Pairs<'a>(&'a mut Vec<(&'static str, u8)>);
        impl Serialize for Pairs<'_> {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().map(|(k, v)| (*k, *v)))
            }
        }
        let id = to_node(&mut tree, &Pairs(&mut m)).unwrap();
        assert_eq!(text(&tree, id), "{a: 3, b: 2}");
        // A sequence as a key.
        let err = to_node(&mut tree, &Odd(vec![(vec![1], 1)])).unwrap_err();
        assert!(err.0.contains("must be a scalar"), "{err}");
    }
}
