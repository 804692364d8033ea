//! Direct I/O on Linux: a second open file description of the file with `O_DIRECT`, and
//! positional writes.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The file opened again with `O_DIRECT`, or `None` where that is refused.
pub(super) fn open_direct(file: &File) -> Option<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    // A second open file description of the same file, so that the first keeps its
    // ordinary (buffered) writes.
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .ok()
}

/// Writes all of `buf` at `offset`.
pub(super) fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    file.write_all_at(buf, offset)
}
