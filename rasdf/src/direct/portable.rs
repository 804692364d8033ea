//! No direct I/O (not Linux, or the feature `linux-tuning` off): no
//! [`DirectWriter`](super::DirectWriter) is ever made.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

/// `None`: no direct I/O here.
pub(super) fn open_direct(_file: &File) -> Option<File> {
    None
}

/// Writes all of `buf` at `offset` (through the file's position).
pub(super) fn write_at(mut file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(buf)
}
