//! serde: deserialize any subtree into user types.

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::{NodeRef, Value};

/// A subtree did not fit the type asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeError {
    /// What did not fit.
    pub message: String,
    /// The path below the subtree's root where it happened.
    pub path: String,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "at {}: {}", self.path, self.message) }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError { message: msg.to_string(), path: String::new() }
    }
}

/// Deepest nesting serde will follow; deeper (or recursive) data is an error.
const MAX_DEPTH: usize = 512;

/// Most nodes one deserialization visits by default (aliases are expanded; this stops
/// "billion laughs").
pub(super) const MAX_VISITS: u64 = 10_000_000;

pub(super) fn from_node<T: DeserializeOwned>(node: NodeRef<'_>, max_visits: u64) -> Result<T, DeError> {
    let visits = std::cell::Cell::new(u64::MAX - max_visits);
    T::deserialize(NodeDe { node, depth: 0, path: String::new(), visits: &visits })
}

struct NodeDe<'t, 'v> {
    node: NodeRef<'t>,
    depth: usize,
    path: String,
    visits: &'v std::cell::Cell<u64>,
}

impl NodeDe<'_, '_> {
    fn err(&self, msg: impl fmt::Display) -> DeError {
        DeError { message: msg.to_string(), path: self.path.clone() }
    }

    fn check_depth(&self) -> Result<(), DeError> {
        // Counts up from u64::MAX - budget; reaching u64::MAX means the budget is spent.
        if self.visits.get() == u64::MAX {
            return Err(self.err("the value expands (through aliases) to more nodes than allowed"));
        }
        self.visits.set(self.visits.get() + 1);
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nested too deeply (or recursive through an alias)"));
        }
        Ok(())
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'_, '_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let tree = self.node.tree();
        let path = self.path.clone();
        let result = match self.node.value() {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::BigInt(i) => visit_big(i, visitor),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Str(s) | Value::Timestamp(s) => visitor.visit_str(s),
            Value::Binary(b) => visitor.visit_bytes(b),
            Value::Seq(items) => {
                self.check_depth()?;
                visitor.visit_seq(Seq {
                    items: items.iter(),
                    tree,
                    depth: self.depth + 1,
                    path: path.clone(),
                    i: 0,
                    visits: self.visits,
                })
            }
            // A core/integer (a tagged mapping) whose words are in the tree is its value.
            Value::Map(pairs) => match core_integer(self.node) {
                Some(i) => visit_big(&i, visitor),
                None => {
                    self.check_depth()?;
                    visitor.visit_map(Map {
                        pairs: pairs.iter(),
                        tree,
                        depth: self.depth + 1,
                        path: path.clone(),
                        value: None,
                        visits: self.visits,
                    })
                }
            },
        };
        result.map_err(|mut e| {
            if e.path.is_empty() {
                e.path = path;
            }
            e
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.node.is_null() { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.node.value() {
            Value::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            // `{Variant: value}`: serde's externally tagged form.
            Value::Map(pairs) if pairs.len() == 1 => {
                let (k, v) = pairs[0];
                let Some(name) = self.node.tree().node(k).as_str() else {
                    return Err(self.err("expected a string naming an enum variant"));
                };
                self.check_depth()?;
                let value = NodeDe {
                    node: self.node.tree().node(v),
                    depth: self.depth + 1,
                    path: format!("{}/{name}", self.path),
                    visits: self.visits,
                };
                visitor.visit_enum(Variant { name, value })
            }
            _ => Err(self.err("expected an enum variant: its name, or a mapping of its name to its value")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// A big integer as the narrowest of serde's integers that holds it (its 64-bit
/// visitors take no 128-bit values), or beyond 128 bits as its digits.
fn visit_big<'de, V: Visitor<'de>>(i: &num_bigint::BigInt, visitor: V) -> Result<V::Value, DeError> {
    if let Ok(v) = i64::try_from(i) {
        visitor.visit_i64(v)
    } else if let Ok(v) = u64::try_from(i) {
        visitor.visit_u64(v)
    } else if let Ok(v) = i128::try_from(i) {
        visitor.visit_i128(v)
    } else if let Ok(v) = u128::try_from(i) {
        visitor.visit_u128(v)
    } else {
        visitor.visit_string(i.to_string())
    }
}

/// The value of a core/integer node whose words are in the tree (a list, or an inline
/// ndarray's `data`, least significant first, as rasdf writes it); `None` for any other
/// node, and for words kept in a block (the file reads those: `AsdfFile::integer_at`).
fn core_integer(node: NodeRef<'_>) -> Option<num_bigint::BigInt> {
    if !node.is_asdf_tag("core/integer") {
        return None;
    }
    let words = node.key("words")?;
    let words = if words.is_asdf_tag("core/ndarray") { words.key("data")? } else { words };
    let words = words.items()?;
    // Beyond this many bits the value is no number serde has, and its digits cost time
    // that grows with the square of its length: left as the mapping it is.
    if words.len() > MAX_INTEGER_WORDS {
        return None;
    }
    let words: Vec<u64> = words.map(|w| w.as_i64().and_then(|w| u64::try_from(w).ok())).collect::<Option<_>>()?;
    Some(super::integer_from_words(&words, super::integer_is_negative(node)?))
}

/// Most words of a core/integer read as a number (4096 bits).
const MAX_INTEGER_WORDS: usize = 128;

/// An enum variant given as `{name: value}`.
struct Variant<'t, 'v> {
    name: &'t str,
    value: NodeDe<'t, 'v>,
}

impl<'de, 't, 'v> de::EnumAccess<'de> for Variant<'t, 'v> {
    type Error = DeError;
    type Variant = NodeDe<'t, 'v>;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, NodeDe<'t, 'v>), DeError> {
        let name: de::value::StrDeserializer<'_, DeError> = self.name.into_deserializer();
        Ok((seed.deserialize(name)?, self.value))
    }
}

impl<'de> de::VariantAccess<'de> for NodeDe<'_, '_> {
    type Error = DeError;
    fn unit_variant(self) -> Result<(), DeError> {
        if self.node.is_null() { Ok(()) } else { Err(self.err("a unit variant holds no value")) }
    }
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, DeError> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_seq(self, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_map(self, visitor)
    }
}

struct Seq<'t, 'v, I> {
    items: I,
    tree: &'t super::Tree,
    depth: usize,
    path: String,
    i: usize,
    visits: &'v std::cell::Cell<u64>,
}

impl<'de, 't, I: Iterator<Item = &'t super::NodeId>> SeqAccess<'de> for Seq<'t, '_, I> {
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DeError> {
        let Some(&id) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}/{}", self.path, self.i);
        self.i += 1;
        if self.depth > MAX_DEPTH {
            return Err(DeError { message: "nested too deeply (or recursive through an alias)".into(), path });
        }
        seed.deserialize(NodeDe { node: self.tree.node(id), depth: self.depth, path, visits: self.visits }).map(Some)
    }
}

struct Map<'t, 'v, I> {
    pairs: I,
    tree: &'t super::Tree,
    depth: usize,
    path: String,
    value: Option<(super::NodeId, String)>,
    visits: &'v std::cell::Cell<u64>,
}

impl<'de, 't, I: Iterator<Item = &'t (super::NodeId, super::NodeId)>> MapAccess<'de> for Map<'t, '_, I> {
    type Error = DeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DeError> {
        let Some(&(k, v)) = self.pairs.next() else {
            return Ok(None);
        };
        let key = self.tree.node(k);
        let path = format!("{}/{}", self.path, key.key_text());
        self.value = Some((v, path.clone()));
        seed.deserialize(NodeDe { node: key, depth: self.depth, path, visits: self.visits }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (v, path) = self
            .value
            .take()
            .ok_or_else(|| DeError { message: "value without key".into(), path: self.path.clone() })?;
        if self.depth > MAX_DEPTH {
            return Err(DeError { message: "nested too deeply (or recursive through an alias)".into(), path });
        }
        seed.deserialize(NodeDe { node: self.tree.node(v), depth: self.depth, path, visits: self.visits })
    }
}

#[cfg(test)]
mod tests {
    use crate::Limits;
    use crate::tree::Tree;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Software {
        name: String,
        version: String,
        homepage: Option<String>,
    }

    #[test]
    fn deserializes_structs_and_reports_paths() {
        let t = Tree::parse("sw: {name: asdf, version: 4.1.0}\nn: [1, 2, x]\n", &Limits::default()).unwrap();
        let sw: Software = t.get("sw").unwrap().deserialize().unwrap();
        assert_eq!(sw, Software { name: "asdf".into(), version: "4.1.0".into(), homepage: None });
        let err = t.get("n").unwrap().deserialize::<Vec<i32>>().unwrap_err();
        assert_eq!(err.path, "/2");
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    enum Shape {
        Point,
        Circle(f64),
        Pair(i32, i32),
        Box { w: u8, h: u8 },
    }

    /// serde's default enum form: a unit variant by name, any other as `{name: value}`.
    #[test]
    fn deserializes_enum_variants() {
        let text = "s: [Point, {Circle: 2.5}, {Pair: [1, -1]}, {Box: {w: 3, h: 4}}]\nbad: [{Circle: 1, Point: null}, {Box: {w: x, h: 1}}]\n";
        let t = Tree::parse(text, &Limits::default()).unwrap();
        let shapes: Vec<Shape> = t.get("s").unwrap().deserialize().unwrap();
        assert_eq!(shapes, [Shape::Point, Shape::Circle(2.5), Shape::Pair(1, -1), Shape::Box { w: 3, h: 4 }]);
        assert!(t.get("bad/0").unwrap().deserialize::<Shape>().is_err(), "two variants at once");
        let err = t.get("bad/1").unwrap().deserialize::<Shape>().unwrap_err();
        assert_eq!(err.path, "/Box/w");
    }

    /// core/integer with its words in the tree (as rasdf writes it) is an integer;
    /// serde's 64-bit targets take what fits them.
    #[test]
    fn deserializes_core_integers_with_words_in_the_tree() {
        let text = "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
            max: !core/integer-1.1.0 {words: !core/ndarray-1.1.0 {data: [4294967295, 4294967295], datatype: uint32, shape: [2]}, sign: +}\n\
            neg: !core/integer-1.1.0 {words: [0, 0, 0, 16], sign: '-'}\n\
            small: !core/integer-1.0.0 {words: [5], sign: '-'}\n\
            in_block: !core/integer-1.1.0 {words: !core/ndarray-1.1.0 {source: 0, datatype: uint32, shape: [2]}, sign: +}\n...\n";
        let t = Tree::parse(text, &Limits::default()).unwrap();
        assert_eq!(t.get("max").unwrap().deserialize::<u64>().unwrap(), u64::MAX);
        assert_eq!(t.get("neg").unwrap().deserialize::<i128>().unwrap(), -(1i128 << 100));
        assert_eq!(t.get("small").unwrap().deserialize::<i8>().unwrap(), -5);
        assert!(t.get("max").unwrap().deserialize::<i64>().is_err(), "beyond i64");
        // Words in a block are the file's to read (AsdfFile::integer_at).
        assert!(t.get("in_block").unwrap().deserialize::<u64>().is_err());
        // Past 128 words: left a mapping (its digits would cost time that grows with the
        // square of its length).
        let words = vec!["1"; 129].join(", ");
        let text = format!(
            "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/integer-1.1.0 {{words: [{words}], sign: +}}\n...\n"
        );
        let t = Tree::parse(&text, &Limits::default()).unwrap();
        assert!(t.root().unwrap().deserialize::<String>().is_err());
        let words = vec!["1"; 128].join(", ");
        let text = format!(
            "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/integer-1.1.0 {{words: [{words}], sign: +}}\n...\n"
        );
        let t = Tree::parse(&text, &Limits::default()).unwrap();
        // Every word 1: the sum of 2^(32 k) for k < 128.
        let one = num_bigint::BigUint::from(1u8);
        let want = ((&one << 4096u32) - &one) / ((&one << 32u32) - &one);
        assert_eq!(t.root().unwrap().deserialize::<String>().unwrap(), want.to_string(), "128 words: digits");
    }

    #[test]
    fn recursion_is_an_error() {
        let t = Tree::parse("a: &r [1, *r]\n", &Limits::default()).unwrap();
        assert!(t.get("a").unwrap().deserialize::<serde_json_like::Any>().is_err());
    }

    mod serde_json_like {
        /// Accepts anything, recursively.
        #[derive(Debug)]
        pub struct Any;
        impl<'de> serde::Deserialize<'de> for Any {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(V)
            }
        }
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Any;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("anything")
            }
            fn visit_i64<E>(self, _: i64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Any, A::Error> {
                while a.next_element::<Any>()?.is_some() {}
                Ok(Any)
            }
        }
    }
}
