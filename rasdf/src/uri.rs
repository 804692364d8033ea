//! `%XX` escapes of URIs: external `source` names and YAML tags, through the
//! `percent-encoding` crate (which decodes `%XX` only where both X are hex digits, as
//! Python's `unquote` does: `%+f` stays as it is).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, percent_encode};

/// What a file name keeps as it is in a `source` URI, as the reference's `pathname2url`
/// leaves it: ASCII letters, digits and `-._~`.
pub(crate) const FILE_NAME: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// What a tag keeps as it is: the characters a YAML tag may hold unescaped.
pub(crate) const TAG: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b';')
    .remove(b'/')
    .remove(b'?')
    .remove(b':')
    .remove(b'@')
    .remove(b'&')
    .remove(b'=')
    .remove(b'+')
    .remove(b'$')
    .remove(b',')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'[')
    .remove(b']');

/// `bytes` with every byte of `set` (and every non-ASCII byte) written `%XX`.
pub(crate) fn escape(bytes: &[u8], set: &'static AsciiSet) -> String {
    percent_encode(bytes, set).to_string()
}

/// `s` with its `%XX` escapes decoded, as bytes (a `%` not followed by two hex digits
/// stays as it is).
pub(crate) fn unescape(s: &str) -> Vec<u8> {
    percent_decode_str(s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        let s = escape("a b%é/".as_bytes(), TAG);
        assert_eq!(s, "a%20b%25%C3%A9/");
        assert_eq!(unescape(&s), "a b%é/".as_bytes());
        assert_eq!(escape("my file%.asdf".as_bytes(), FILE_NAME), "my%20file%25.asdf");
    }

    /// As Python's `urllib.parse.unquote`: only `%` and two hex digits decode, at the end
    /// of the text too; a sign is not a digit.
    #[test]
    fn decodes_as_python_unquote() {
        assert_eq!(unescape("%zz%4"), b"%zz%4");
        assert_eq!(unescape("%+f"), b"%+f");
        assert_eq!(unescape("%-1"), b"%-1");
        assert_eq!(unescape("a%41"), b"aA");
        assert_eq!(unescape("%%41"), b"%A");
        assert_eq!(unescape("%e9"), [0xe9]);
    }
}
