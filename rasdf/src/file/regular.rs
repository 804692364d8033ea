//! Opening only regular files, and naming what a path is instead. On Unix the open does
//! not block (`O_NONBLOCK`), so a FIFO is refused at once instead of waiting for a
//! writer, and FIFOs and sockets are named; elsewhere a plain open (Windows has no
//! FIFOs in the file system), and anything but a file or a folder is "a device".

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// Opens `path` for reading, refusing anything but a regular file, and returns it with its
/// length. A FIFO would block the open and every read until some writer came (an exploded
/// file's `source` may name one), and a device or a folder has no length to map; on Unix
/// the open does not block, so such a path is refused at once.
///
/// # Errors
/// The open's own errors, and `IsADirectory` (a folder) or `InvalidInput` (a FIFO, a
/// socket, a device) naming what the path is instead.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let f = open_without_blocking(path)?;
    let meta = f.metadata()?;
    if meta.is_file() {
        return Ok((f, meta.len()));
    }
    let kind = if meta.is_dir() { io::ErrorKind::IsADirectory } else { io::ErrorKind::InvalidInput };
    Err(io::Error::new(kind, format!("not a regular file but {}", kind_of(&meta))))
}

/// What a path that is no regular file is, for errors: "a folder", "a FIFO (named
/// pipe)", "a socket" or "a device".
pub(crate) fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "a device"
}

#[cfg(unix)]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    File::open(path)
}
