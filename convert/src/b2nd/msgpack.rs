//! The msgpack that Blosc2 frames are made of: a cursor over the header's and trailer's
//! items, and the values of variable-length metalayers (python-blosc2's `vlmeta`, each
//! one msgpack value).

use super::malformed;
use crate::ConvertError;

/// A cursor over msgpack bytes; errors name the byte offset in the file (`base` plus
/// the position).
pub(crate) struct Msgpack<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
    pub(crate) base: usize,
}

impl<'a> Msgpack<'a> {
    pub(crate) fn new(b: &'a [u8], base: usize) -> Self {
        Msgpack { b, at: 0, base }
    }

    pub(crate) fn pos(&self) -> usize {
        self.base + self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ConvertError> {
        let s = self
            .b
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| malformed(format!("{what} at byte {} runs past its section", self.pos())))?;
        self.at += n;
        Ok(s)
    }

    fn byte(&mut self, what: &str) -> Result<u8, ConvertError> {
        Ok(self.take(1, what)?[0])
    }

    fn be(&mut self, n: usize, what: &str) -> Result<u64, ConvertError> {
        Ok(self.take(n, what)?.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    }

    /// A big-endian length of `n` bytes (a length past the address space fails in the
    /// `take` that follows).
    fn len(&mut self, n: usize, what: &str) -> Result<usize, ConvertError> {
        Ok(usize::try_from(self.be(n, what)?).unwrap_or(usize::MAX))
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ConvertError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn int(&mut self, what: &str) -> Result<i64, ConvertError> {
        let at = self.pos();
        let m = self.byte(what)?;
        let v = match m {
            0x00..=0x7f => i64::from(m),
            0xe0..=0xff => i64::from(i8::from_be_bytes([m])),
            0xcc => i64::from(self.fixed::<1>(what)?[0]),
            0xcd => i64::from(u16::from_be_bytes(self.fixed(what)?)),
            0xce => i64::from(u32::from_be_bytes(self.fixed(what)?)),
            0xcf => i64::try_from(u64::from_be_bytes(self.fixed(what)?))
                .map_err(|_| malformed(format!("{what} at byte {at} is too large")))?,
            0xd0 => i64::from(i8::from_be_bytes(self.fixed(what)?)),
            0xd1 => i64::from(i16::from_be_bytes(self.fixed(what)?)),
            0xd2 => i64::from(i32::from_be_bytes(self.fixed(what)?)),
            0xd3 => i64::from_be_bytes(self.fixed(what)?),
            _ => return Err(malformed(format!("{what} at byte {at} is not an integer (msgpack {m:#04x})"))),
        };
        Ok(v)
    }

    pub(crate) fn array(&mut self, what: &str) -> Result<usize, ConvertError> {
        let at = self.pos();
        match self.byte(what)? {
            m @ 0x90..=0x9f => Ok(usize::from(m & 0x0f)),
            0xdc => Ok(self.len(2, what)?),
            0xdd => Ok(self.len(4, what)?),
            m => Err(malformed(format!("{what} at byte {at} is not a list (msgpack {m:#04x})"))),
        }
    }

    pub(crate) fn map(&mut self, what: &str) -> Result<usize, ConvertError> {
        let at = self.pos();
        match self.byte(what)? {
            m @ 0x80..=0x8f => Ok(usize::from(m & 0x0f)),
            0xde => Ok(self.len(2, what)?),
            0xdf => Ok(self.len(4, what)?),
            m => Err(malformed(format!("{what} at byte {at} is not a map (msgpack {m:#04x})"))),
        }
    }

    pub(crate) fn str(&mut self, what: &str) -> Result<&'a str, ConvertError> {
        let at = self.pos();
        let n = match self.byte(what)? {
            m @ 0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.len(1, what)?,
            0xda => self.len(2, what)?,
            0xdb => self.len(4, what)?,
            m => return Err(malformed(format!("{what} at byte {at} is not a string (msgpack {m:#04x})"))),
        };
        let s = self.take(n, what)?;
        std::str::from_utf8(s).map_err(|_| malformed(format!("{what} at byte {at} is not UTF-8")))
    }

    pub(crate) fn bin(&mut self, what: &str) -> Result<&'a [u8], ConvertError> {
        let at = self.pos();
        let n = match self.byte(what)? {
            0xc4 => self.len(1, what)?,
            0xc5 => self.len(2, what)?,
            0xc6 => self.len(4, what)?,
            m => return Err(malformed(format!("{what} at byte {at} is not bytes (msgpack {m:#04x})"))),
        };
        self.take(n, what)
    }
}

/// One msgpack value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer above `i64::MAX`.
    UInt(u64),
    /// A float (32-bit ones widened).
    Float(f64),
    /// Text.
    Str(String),
    /// Bytes.
    Bin(Vec<u8>),
    /// A list.
    Array(Vec<Value>),
    /// A map, in order.
    Map(Vec<(Value, Value)>),
    /// An extension type: its code and bytes (python-blosc2 codes complex numbers, sets
    /// and NumPy arrays so).
    Ext(i8, Vec<u8>),
}

/// The deepest nesting [`decode`] reads.
const MAX_DEPTH: usize = 64;

impl Msgpack<'_> {
    fn value(&mut self, depth: usize) -> Result<Value, ConvertError> {
        let at = self.pos();
        if depth > MAX_DEPTH {
            return Err(malformed(format!("msgpack nested over {MAX_DEPTH} deep at byte {at}")));
        }
        let m = *self.b.get(self.at).ok_or_else(|| malformed(format!("msgpack ends at byte {at}")))?;
        // Each item takes a byte at least, so no count can pass what is left.
        let count = |n: usize, this: &Self| -> Result<usize, ConvertError> {
            match n <= this.b.len() - this.at {
                true => Ok(n),
                false => Err(malformed(format!("a msgpack list or map of {n} items at byte {at} passes its end"))),
            }
        };
        let v = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xce | 0xd0..=0xd3 => Value::Int(self.int("an integer")?),
            0xcf => {
                self.at += 1;
                let u = u64::from_be_bytes(self.fixed("an integer")?);
                i64::try_from(u).map_or(Value::UInt(u), Value::Int)
            }
            0xc0 => {
                self.at += 1;
                Value::Nil
            }
            0xc2 | 0xc3 => {
                self.at += 1;
                Value::Bool(m == 0xc3)
            }
            0xca => {
                self.at += 1;
                Value::Float(f64::from(f32::from_be_bytes(self.fixed("a float")?)))
            }
            0xcb => {
                self.at += 1;
                Value::Float(f64::from_be_bytes(self.fixed("a float")?))
            }
            0xa0..=0xbf | 0xd9..=0xdb => Value::Str(self.str("text")?.to_string()),
            0xc4..=0xc6 => Value::Bin(self.bin("bytes")?.to_vec()),
            0x90..=0x9f | 0xdc | 0xdd => {
                let n = count(self.array("a list")?, self)?;
                Value::Array((0..n).map(|_| self.value(depth + 1)).collect::<Result<_, _>>()?)
            }
            0x80..=0x8f | 0xde | 0xdf => {
                let n = count(self.map("a map")?, self)?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.value(depth + 1)?;
                    pairs.push((k, self.value(depth + 1)?));
                }
                Value::Map(pairs)
            }
            0xd4..=0xd8 | 0xc7..=0xc9 => {
                self.at += 1;
                let n = match m {
                    0xd4..=0xd8 => 1 << (m - 0xd4),
                    0xc7 => self.len(1, "an extension")?,
                    0xc8 => self.len(2, "an extension")?,
                    _ => self.len(4, "an extension")?,
                };
                let code = i8::from_be_bytes(self.fixed("an extension")?);
                Value::Ext(code, self.take(n, "an extension")?.to_vec())
            }
            _ => return Err(malformed(format!("msgpack byte {m:#04x} at byte {at} starts no value"))),
        };
        Ok(v)
    }
}

/// Decodes the one msgpack value that `bytes` hold.
///
/// # Errors
/// [`ConvertError::Malformed`] for truncated or unknown items, nesting over 64 deep, or
/// bytes after the value.
pub fn decode(bytes: &[u8]) -> Result<Value, ConvertError> {
    let mut m = Msgpack::new(bytes, 0);
    let v = m.value(0)?;
    match m.at == bytes.len() {
        true => Ok(v),
        false => Err(malformed(format!("{} bytes after a msgpack value", bytes.len() - m.at))),
    }
}

/// Appends `v` in msgpack's smallest forms. (Lengths are taken to fit in 32 bits: the
/// writer's texts, bytes and lists come from a file of at most that much tree.)
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    let head = |out: &mut Vec<u8>, n: usize, fix: Option<(u8, usize)>, codes: [u8; 3]| match (fix, n) {
        (Some((base, max)), n) if n <= max => out.push(base | n as u8),
        (_, n) if n <= 0xff && codes[0] != 0 => out.extend_from_slice(&[codes[0], n as u8]),
        (_, n) if n <= 0xffff => {
            out.push(codes[1]);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        (_, n) => {
            out.push(codes[2]);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    };
    match v {
        Value::Nil => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Int(i) => match *i {
            0..=0x7f => out.push(*i as u8),
            -32..=-1 => out.push(*i as u8),
            i if i >= 0 => {
                out.push(0xcf);
                out.extend_from_slice(&(i as u64).to_be_bytes());
            }
            i => {
                out.push(0xd3);
                out.extend_from_slice(&i.to_be_bytes());
            }
        },
        Value::UInt(u) => {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
        Value::Float(f) => {
            out.push(0xcb);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::Str(s) => {
            head(out, s.len(), Some((0xa0, 31)), [0xd9, 0xda, 0xdb]);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bin(b) => {
            head(out, b.len(), None, [0xc4, 0xc5, 0xc6]);
            out.extend_from_slice(b);
        }
        Value::Array(items) => {
            head(out, items.len(), Some((0x90, 15)), [0, 0xdc, 0xdd]);
            items.iter().for_each(|i| encode(i, out));
        }
        Value::Map(pairs) => {
            head(out, pairs.len(), Some((0x80, 15)), [0, 0xde, 0xdf]);
            for (k, v) in pairs {
                encode(k, out);
                encode(v, out);
            }
        }
        Value::Ext(code, data) => {
            match data.len() {
                n @ (1 | 2 | 4 | 8 | 16) => out.push(0xd4 + n.trailing_zeros() as u8),
                n => head(out, n, None, [0xc7, 0xc8, 0xc9]),
            }
            out.push(*code as u8);
            out.extend_from_slice(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_read_other_writers_forms() {
        let v = Value::Map(vec![
            (Value::Str("telescope".into()), Value::Str("JWST".into())),
            (
                Value::Str("n".into()),
                Value::Array(vec![Value::Int(1), Value::Int(-2), Value::Int(300), Value::Int(-70_000)]),
            ),
            (Value::Str("big".into()), Value::UInt(u64::MAX)),
            (Value::Str("x".repeat(40)), Value::Float(0.5)),
            (Value::Nil, Value::Bool(true)),
            (Value::Str("b".into()), Value::Bin(vec![0, 1, 2])),
            (Value::Str("e".into()), Value::Ext(44, vec![0; 16])),
            (Value::Str("e3".into()), Value::Ext(45, vec![7; 3])),
        ]);
        let mut out = Vec::new();
        encode(&v, &mut out);
        assert_eq!(decode(&out).unwrap(), v);
        // What Python's msgpack writes for {"foo": "bar", "n": [1, 2], "f": 1.5 as float32}.
        let py = b"\x83\xa3foo\xa3bar\xa1n\x92\x01\x02\xa1f\xca\x3f\xc0\x00\x00";
        let m = decode(py).unwrap();
        assert_eq!(
            m,
            Value::Map(vec![
                (Value::Str("foo".into()), Value::Str("bar".into())),
                (Value::Str("n".into()), Value::Array(vec![Value::Int(1), Value::Int(2)])),
                (Value::Str("f".into()), Value::Float(1.5)),
            ])
        );
    }

    #[test]
    fn hostile_msgpack_is_an_error() {
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0x91; 100]).is_err());
        assert!(decode(&[0xc1]).is_err());
        assert!(decode(&[0x01, 0x02]).is_err());
        assert!(decode(&[0xc9, 0xff, 0xff, 0xff, 0xff, 1]).is_err());
        for n in 0..20 {
            let _ = decode(&vec![0xdc; n]);
        }
    }
}
