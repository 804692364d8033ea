//! The msgpack that Blosc2 frames are made of, read and written by the `rmp` crates: a
//! cursor over the header's and trailer's items (`rmp`'s typed reads, with errors that
//! name the byte offset in the file), and the values of variable-length metalayers
//! (python-blosc2's `vlmeta`, each one msgpack value: [`rmpv::Value`]).

use rmp::decode::{self, DecodeStringError, NumValueReadError};

use super::malformed;
use crate::ConvertError;

/// One msgpack value (`rmpv`'s: text that is not UTF-8 keeps its bytes; the never-used
/// byte 0xc1 reads as nil).
pub use rmpv::Value;

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

    /// Runs `read` on the bytes left, moving past what it took; `kind` names what it
    /// reads for the error of another item.
    fn read<T, E: Into<NumValueReadError>>(
        &mut self,
        what: &str,
        kind: &str,
        read: impl FnOnce(&mut &'a [u8]) -> Result<T, E>,
    ) -> Result<T, ConvertError> {
        let at = self.pos();
        let mut rest = self.b.get(self.at..).unwrap_or_default();
        let left = rest.len();
        let v = read(&mut rest).map_err(|e| match e.into() {
            NumValueReadError::TypeMismatch(m) => {
                malformed(format!("{what} at byte {at} is not {kind} (msgpack {:#04x})", m.to_u8()))
            }
            NumValueReadError::OutOfRange => malformed(format!("{what} at byte {at} is too large")),
            _ => malformed(format!("{what} at byte {at} runs past its section")),
        })?;
        self.at += left - rest.len();
        Ok(v)
    }

    /// `n` bytes (a length past the section fails here, before anything is allocated).
    fn take(&mut self, n: u32, what: &str, at: usize) -> Result<&'a [u8], ConvertError> {
        let end = usize::try_from(n).ok().and_then(|n| self.at.checked_add(n));
        let s = end
            .and_then(|end| self.b.get(self.at..end))
            .ok_or_else(|| malformed(format!("{what} at byte {at} runs past its section")))?;
        self.at += s.len();
        Ok(s)
    }

    pub(crate) fn int(&mut self, what: &str) -> Result<i64, ConvertError> {
        self.read(what, "an integer", decode::read_int)
    }

    pub(crate) fn array(&mut self, what: &str) -> Result<usize, ConvertError> {
        Ok(self.read(what, "a list", decode::read_array_len)? as usize)
    }

    pub(crate) fn map(&mut self, what: &str) -> Result<usize, ConvertError> {
        Ok(self.read(what, "a map", decode::read_map_len)? as usize)
    }

    pub(crate) fn str(&mut self, what: &str) -> Result<&'a str, ConvertError> {
        let at = self.pos();
        let rest = self.b.get(self.at..).unwrap_or_default();
        let (s, tail) = decode::read_str_from_slice(rest).map_err(|e| match e {
            DecodeStringError::TypeMismatch(m) => {
                malformed(format!("{what} at byte {at} is not a string (msgpack {:#04x})", m.to_u8()))
            }
            DecodeStringError::InvalidUtf8(..) => malformed(format!("{what} at byte {at} is not UTF-8")),
            _ => malformed(format!("{what} at byte {at} runs past its section")),
        })?;
        self.at += rest.len() - tail.len();
        Ok(s)
    }

    pub(crate) fn bin(&mut self, what: &str) -> Result<&'a [u8], ConvertError> {
        let at = self.pos();
        let n = self.read(what, "bytes", decode::read_bin_len)?;
        self.take(n, what, at)
    }
}

/// The deepest nesting of lists and maps [`decode()`] reads: `rmpv` counts a level of
/// nesting twice, text and bytes once more.
pub const MAX_DEPTH: usize = 64;

/// Decodes the one msgpack value that `bytes` hold. Bounded for untrusted bytes: lists
/// and maps grow as their items are read (a declared count is never allocated ahead) and
/// text and bytes by at most 64 KiB ahead of what is there, and nesting deeper than
/// [`MAX_DEPTH`] is an error, not a deep recursion.
///
/// # Errors
/// [`ConvertError::Malformed`] for truncated or unknown items, nesting over
/// [`MAX_DEPTH`], or bytes after the value.
pub fn decode(bytes: &[u8]) -> Result<Value, ConvertError> {
    let mut rest = bytes;
    let v = rmpv::decode::read_value_with_max_depth(&mut rest, 2 * MAX_DEPTH + 3).map_err(|e| match e {
        rmpv::decode::Error::DepthLimitExceeded => malformed(format!("msgpack nested over {MAX_DEPTH} deep")),
        e => malformed(format!("msgpack at byte {}: {e}", bytes.len() - rest.len())),
    })?;
    match rest.len() {
        0 => Ok(v),
        n => Err(malformed(format!("{n} bytes after a msgpack value"))),
    }
}

/// `v` in msgpack's smallest forms (`rmpv`'s writer).
#[must_use]
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec fails only when memory runs out, which aborts before.
    rmpv::encode::write_value(&mut out, v).unwrap_or_else(|e| unreachable!("msgpack into a Vec: {e}"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Value {
        Value::from(t)
    }

    #[test]
    fn values_round_trip_and_read_other_writers_forms() {
        let v = Value::Map(vec![
            (s("telescope"), s("JWST")),
            (s("n"), Value::Array(vec![1.into(), (-2).into(), 300.into(), (-70_000).into()])),
            (s("big"), u64::MAX.into()),
            (s(&"x".repeat(40)), 0.5.into()),
            (Value::Nil, true.into()),
            (s("b"), Value::Binary(vec![0, 1, 2])),
            (s("e"), Value::Ext(44, vec![0; 16])),
            (s("e3"), Value::Ext(45, vec![7; 3])),
        ]);
        assert_eq!(decode(&encode(&v)).unwrap(), v);
        // What Python's msgpack writes for {"foo": "bar", "n": [1, 2], "f": 1.5 as float32}.
        let py = b"\x83\xa3foo\xa3bar\xa1n\x92\x01\x02\xa1f\xca\x3f\xc0\x00\x00";
        let want = Value::Map(vec![
            (s("foo"), s("bar")),
            (s("n"), Value::Array(vec![1.into(), 2.into()])),
            (s("f"), Value::F32(1.5)),
        ]);
        assert_eq!(decode(py).unwrap(), want);
        // Smallest forms, as Python's msgpack writes them.
        assert_eq!(encode(&300.into()), [0xcd, 0x01, 0x2c]);
        assert_eq!(encode(&(-70_000).into()), [0xd2, 0xff, 0xfe, 0xee, 0x90]);
    }

    #[test]
    fn hostile_msgpack_is_an_error() {
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0x91; 100]).is_err());
        // The never-used byte 0xc1 reads as nil in rmpv (Python's msgpack refuses it).
        assert_eq!(decode(&[0xc1]).unwrap(), Value::Nil);
        assert!(decode(&[0x01, 0x02]).is_err());
        assert!(decode(&[0xc9, 0xff, 0xff, 0xff, 0xff, 1]).is_err());
        for n in 0..20 {
            let _ = decode(&vec![0xdc; n]);
        }
    }

    /// Ten bytes that declare 2^32 - 1 items, or as many bytes of text, bytes or an
    /// extension: an error once the bytes run out, with nothing of the declared size
    /// allocated (a 2^32-item list of `Value`s would be 128 GiB and abort the test).
    #[test]
    fn declared_lengths_past_the_input_allocate_nothing() {
        for marker in [0xdd, 0xdf, 0xdb, 0xc6] {
            let bytes = [marker, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05];
            assert!(decode(&bytes).is_err(), "{marker:#04x}");
        }
        assert!(decode(&[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05]).is_err());
        // The frame cursor too.
        let mut m = Msgpack::new(&[0xc6, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05], 100);
        assert!(m.bin("content").unwrap_err().to_string().contains("content at byte 100 runs past"));
        let mut m = Msgpack::new(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a', b'b', b'c', b'd', b'e'], 0);
        assert!(m.str("a name").is_err());
        // A count alone is only a number: its readers check it against what they hold.
        assert_eq!(
            Msgpack::new(&[0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5], 0).array("a list").unwrap(),
            0xffff_ffff
        );
    }

    /// Deep nesting is an error, not a stack overflow: 100 000 nested lists (in both
    /// forms) or maps; and the deepest nesting that is read.
    #[test]
    fn deep_nesting_is_an_error() {
        for open in [0x91u8, 0xdc, 0x81] {
            let mut bytes = Vec::new();
            for _ in 0..100_000 {
                match open {
                    0xdc => bytes.extend_from_slice(&[0xdc, 0x00, 0x01]),
                    0x81 => bytes.extend_from_slice(&[0x81, 0xc0]),
                    _ => bytes.push(open),
                }
            }
            bytes.push(0xc0);
            let e = decode(&bytes).unwrap_err().to_string();
            assert!(e.contains("nested over 64 deep"), "{e}");
        }
        // Text inside 64 lists (what the ASDF side writes at most) reads; 65 lists do not.
        let nested = |n: usize| [vec![0x91; n], vec![0xa1, b'x']].concat();
        let mut v = decode(&nested(MAX_DEPTH)).unwrap();
        for _ in 0..MAX_DEPTH {
            v = match v {
                Value::Array(mut items) => items.remove(0),
                v => panic!("{v:?}"),
            };
        }
        assert_eq!(v, s("x"));
        assert!(decode(&nested(MAX_DEPTH + 1)).is_err());
    }

    #[test]
    fn the_cursor_reads_items_and_names_their_place() {
        let mut b = vec![0x93, 0xcd, 0x01, 0x2c, 0xd3];
        b.extend_from_slice(&(-5i64).to_be_bytes());
        b.extend_from_slice(&[0xa2, b'h', b'i', 0xc4, 0x02, 7, 8, 0x81, 0xcf]);
        b.extend_from_slice(&u64::MAX.to_be_bytes());
        let mut m = Msgpack::new(&b, 1000);
        assert_eq!(m.array("a list").unwrap(), 3);
        assert_eq!(m.int("an int").unwrap(), 300);
        assert_eq!(m.int("an int").unwrap(), -5);
        assert_eq!(m.str("a name").unwrap(), "hi");
        assert_eq!(m.bin("content").unwrap(), [7, 8]);
        assert_eq!(m.pos(), 1020);
        let e = m.int("ndim").unwrap_err().to_string();
        assert!(e.contains("ndim at byte 1020 is not an integer (msgpack 0x81)"), "{e}");
        assert_eq!(m.map("a map").unwrap(), 1);
        let e = m.int("a size").unwrap_err().to_string();
        assert!(e.contains("a size at byte 1021 is too large"), "{e}");
        let e = Msgpack::new(&[0xa2, 0xff, 0xfe], 0).str("a name").unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let e = Msgpack::new(&[0xcd, 0x01], 7).int("a size").unwrap_err().to_string();
        assert!(e.contains("a size at byte 7 runs past its section"), "{e}");
    }
}
