//! `%XX` escapes of URIs: external `source` names and YAML tags.

use std::fmt::Write;

/// `bytes` with every byte but ASCII letters, digits and those in `keep` written `%XX`.
pub(crate) fn escape(bytes: &[u8], keep: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `s` with its `%XX` escapes decoded, as bytes (a `%` not followed by two hex digits
/// stays as it is).
pub(crate) fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        let s = escape("a b%é/".as_bytes(), b"/");
        assert_eq!(s, "a%20b%25%C3%A9/");
        assert_eq!(unescape(&s), "a b%é/".as_bytes());
        assert_eq!(unescape("%zz%4"), b"%zz%4");
    }
}
