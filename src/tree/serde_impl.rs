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
            Value::BigInt(i) => match i128::try_from(&**i) {
                Ok(v) => visitor.visit_i128(v),
                Err(_) => visitor.visit_string(i.to_string()),
            },
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
            Value::Map(pairs) => {
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
            _ => Err(self.err("expected a string naming an enum variant")),
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
