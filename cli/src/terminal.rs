//! Text from a file shown on a terminal: control characters escaped, so that a hostile
//! file cannot move the cursor, retitle the window, rewrite what was printed before it
//! (`ESC`, `CSI` sequences) or reorder a line (Unicode's bidirectional overrides).
//!
//! What is escaped: the C0 controls but newline and tab, `DEL`, the C1 controls
//! (U+0080 to U+009F), the bidirectional embeddings, overrides and isolates (U+202A to
//! U+202E, U+2066 to U+2069), and bytes that are not UTF-8. Each becomes the escape
//! Python's `repr` writes (`\x1b`, `\x9b`, `\u202e`), or, in JSON, `\u001b` (JSON
//! text stays valid: these characters only ever stand inside its strings).

use std::borrow::Cow;
use std::io::{self, Write};

/// How an escaped character is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escapes {
    /// As Python's `repr`: `\x1b`, `\u202e`.
    Python,
    /// As JSON: `\u001b`.
    Json,
}

/// Whether `c` is escaped.
fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn escape_char(c: char, style: Escapes, out: &mut String) {
    use std::fmt::Write as _;
    let n = u32::from(c);
    let _ = match style {
        Escapes::Python if n <= 0xff => write!(out, "\\x{n:02x}"),
        Escapes::Python => write!(out, "\\u{n:04x}"),
        Escapes::Json => write!(out, "\\u{n:04x}"),
    };
}

/// `s` with its control characters escaped (see the [module](self)).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            escape_char(c, Escapes::Python, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that escapes control characters in the text written through it (see the
/// [module](self)). A UTF-8 sequence cut between two writes is joined first.
pub struct Escaping<W: Write> {
    inner: W,
    style: Escapes,
    /// The start of a UTF-8 sequence that the last write ended inside.
    carry: Vec<u8>,
}

impl<W: Write> Escaping<W> {
    /// Escapes what is written to `inner`.
    pub fn new(inner: W, style: Escapes) -> Self {
        Escaping { inner, style, carry: Vec::new() }
    }

    fn write_text(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let mut escaped = String::new();
        while !bytes.is_empty() {
            let (good, rest) = match std::str::from_utf8(bytes) {
                Ok(s) => (s, &[][..]),
                Err(e) => {
                    let (a, b) = bytes.split_at(e.valid_up_to());
                    // SAFETY-free: `a` is valid UTF-8 by `valid_up_to`.
                    (std::str::from_utf8(a).unwrap_or_default(), b)
                }
            };
            let mut start = 0;
            for (i, c) in good.char_indices() {
                if is_control(c) {
                    self.inner.write_all(&good.as_bytes()[start..i])?;
                    escaped.clear();
                    escape_char(c, self.style, &mut escaped);
                    self.inner.write_all(escaped.as_bytes())?;
                    start = i + c.len_utf8();
                }
            }
            self.inner.write_all(&good.as_bytes()[start..])?;
            if rest.is_empty() {
                break;
            }
            match std::str::from_utf8(rest) {
                // A sequence cut by the end of this write: kept for the next.
                Err(e) if e.error_len().is_none() => {
                    self.carry.extend_from_slice(rest);
                    break;
                }
                _ => {
                    let len = std::str::from_utf8(rest).err().and_then(|e| e.error_len()).unwrap_or(1);
                    for b in &rest[..len] {
                        write!(self.inner, "\\x{b:02x}")?;
                    }
                    bytes = &rest[len..];
                }
            }
        }
        Ok(())
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.carry.is_empty() {
            self.write_text(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(buf);
            self.write_text(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // A sequence never finished: its bytes, escaped.
        for b in std::mem::take(&mut self.carry) {
            write!(self.inner, "\\x{b:02x}")?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(parts: &[&[u8]], style: Escapes) -> String {
        let mut w = Escaping::new(Vec::new(), style);
        for p in parts {
            w.write_all(p).unwrap();
        }
        w.flush().unwrap();
        String::from_utf8(w.inner).unwrap()
    }

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        let text = "a\x1b[31mred\u{9b}2J\u{202e}txt\x7f\tok\né";
        assert_eq!(escape(text), "a\\x1b[31mred\\x9b2J\\u202etxt\\x7f\tok\né");
        assert!(matches!(escape("plain é text\n"), Cow::Borrowed(_)));
        assert_eq!(through(&[text.as_bytes()], Escapes::Python), escape(text));
        assert_eq!(through(&[b"\"a\xc2\x9bb\""], Escapes::Json), "\"a\\u009bb\"");
    }

    #[test]
    fn sequences_cut_between_writes_and_bytes_that_are_not_utf8() {
        let e = "é".as_bytes();
        assert_eq!(through(&[b"x", &e[..1], &e[1..], b"y"], Escapes::Python), "xéy");
        let csi = "\u{9b}".as_bytes();
        assert_eq!(through(&[&csi[..1], &csi[1..]], Escapes::Python), "\\x9b");
        assert_eq!(through(&[b"a\xff\x9bb"], Escapes::Python), "a\\xff\\x9bb");
        assert_eq!(through(&[b"cut\xe2\x80"], Escapes::Python), "cut\\xe2\\x80");
    }
}
