//! MD5 (RFC 1321) by the `md-5` crate (RustCrypto), the checksum of ASDF blocks when the
//! feature `fast-md5` (rasdf's own, `checksum.rs`) is off: the same digests, at about
//! four fifths of the speed (see docs/dependencies.md).

use md5::Digest;

/// An MD5 being computed: feed it with [`Md5::update`], read it with [`Md5::finalize`].
#[derive(Clone, Default)]
pub(crate) struct Md5(md5::Md5);

impl Md5 {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// [`Md5::update`] with `bytes`, copying them into `copy_to` (as long).
    ///
    /// # Panics
    /// If `copy_to` is not as long as `bytes`.
    pub(crate) fn update_copying(&mut self, bytes: &[u8], copy_to: &mut [u8]) {
        copy_to.copy_from_slice(bytes);
        self.0.update(bytes);
    }

    pub(crate) fn finalize(self) -> [u8; 16] {
        self.0.finalize().into()
    }
}

/// The MD5 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> [u8; 16] {
    md5::Md5::digest(bytes).into()
}

impl crate::direct::CopyHasher for Md5 {
    fn update(&mut self, bytes: &[u8]) {
        Md5::update(self, bytes);
    }
    fn update_copying(&mut self, from: &[u8], to: &mut [u8]) {
        Md5::update_copying(self, from, to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_1321_test_suite_and_copies() {
        // RFC 1321, appendix A.5 (a few), whole and fed in parts while copied.
        for (text, want) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ] {
            let hex: String = digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, want, "{text:?}");
            let mut m = Md5::new();
            let mut copy = vec![0u8; text.len()];
            let (a, b) = copy.split_at_mut(text.len() / 2);
            m.update_copying(&text.as_bytes()[..a.len()], a);
            m.update_copying(&text.as_bytes()[a.len()..], b);
            assert_eq!(m.finalize(), digest(text.as_bytes()));
            assert_eq!(copy, text.as_bytes());
        }
    }
}
