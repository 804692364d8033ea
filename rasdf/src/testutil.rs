//! Helpers shared by the unit tests.

pub(crate) use crate::samples::noise;

/// `data` compressed serially into one bzip2 stream, as libbzip2 writes it.
pub(crate) fn bzip(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    e.write_all(data)?;
    e.finish()
}
