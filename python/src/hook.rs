//! What `rasdf.asdf_hook` runs in Rust for asdf's own calls: its blocks decoded into the
//! arrays asdf hands out, and compressed (with their MD5) for asdf's block writer, with
//! the GIL released and on the pool's threads.
//!
//! Each function is strict: what it cannot do exactly as asdf would (a stream asdf reads
//! differently, bytes that end early) is an error, on which the Python side calls
//! asdf's own function for that call instead.

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use rasdf::block::codec::{self, Compression, HashOf};

/// The codec of a block header's label (`"lz4"`, `"zlib"`, `b"bzp2"` ...), as asdf
/// strips it of NULs.
fn codec_of(label: &str) -> PyResult<Compression> {
    let bytes = label.as_bytes();
    if bytes.is_empty() || bytes.len() > 4 {
        return Err(PyValueError::new_err(format!("no codec {label:?}")));
    }
    let mut four = [0u8; 4];
    four[..bytes.len()].copy_from_slice(bytes);
    match Compression::from_label(four) {
        Compression::None | Compression::Other(_) => Err(PyValueError::new_err(format!("no codec {label:?}"))),
        c => Ok(c),
    }
}

fn block_err(e: rasdf::block::BlockError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Stored bytes rasdf would read otherwise than asdf does: an LZ4 frame in an `lz4`
/// block (rasdf reads ASDF.jl's; asdf fails), a `bzp2` block holding more than one
/// bzip2 stream, or bytes after its stream (asdf's decoder stops at the first stream's
/// end, and fails or not depending on its reads).
fn read_otherwise(codec: Compression, stored: &[u8]) -> bool {
    match codec {
        Compression::Lz4 => stored.starts_with(&[0x04, 0x22, 0x4d, 0x18]),
        Compression::Bzp2 => !bzip2_alone(stored),
        _ => false,
    }
}

/// Whether `stored` ends with a bzip2 stream's end (its 48-bit magic, CRC and at most
/// seven zero bits of padding) and holds no second stream's start (`BZh1`-`BZh9`, then
/// a block's magic or the end's, at a byte boundary). A chance match only sends the
/// block to asdf's decoder.
fn bzip2_alone(stored: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    for rest in stored.windows(10).skip(1) {
        if rest.starts_with(b"BZh") && (b'1'..=b'9').contains(&rest[3]) && (rest[4..10] == BLOCK || rest[4..10] == END)
        {
            return false;
        }
    }
    // The end: 80 bits (magic and CRC) then 0-7 zero bits, up to the last byte.
    let n = stored.len();
    if n < 14 {
        return false;
    }
    let tail = &stored[n - 11..];
    let mut bits: u128 = 0;
    for &b in tail {
        bits = bits << 8 | u128::from(b);
    }
    let magic = 0x1772_4538_5090u128;
    (0..8).any(|pad| bits & ((1u128 << pad) - 1) == 0 && (bits >> (pad + 32)) & ((1u128 << 48) - 1) == magic)
}

/// Decodes the `used_size` stored bytes of a block compressed with `codec` into `out`
/// (a contiguous uint8 array of the decoded size), with the GIL released: from `data`
/// (bytes) at `offset`, or else read from the open file descriptor `fileno` at `offset`.
///
/// # Errors
/// `ValueError` for anything rasdf does not decode exactly as asdf would.
#[pyfunction]
#[pyo3(signature = (codec, out, used_size, offset, data=None, fileno=None))]
pub(crate) fn hook_decode(
    py: Python<'_>,
    codec: &str,
    out: &Bound<'_, PyArray1<u8>>,
    used_size: u64,
    offset: u64,
    data: Option<&Bound<'_, PyBytes>>,
    fileno: Option<i32>,
) -> PyResult<()> {
    let codec = codec_of(codec)?;
    let mut rw = out.readwrite();
    let out = rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let whole = |stored: &[u8], out: &mut [u8]| -> PyResult<()> {
        if read_otherwise(codec, stored) {
            return Err(PyValueError::new_err("stored bytes asdf reads otherwise"));
        }
        codec::decode_into(codec, stored, out).map_err(block_err)
    };
    if let Some(data) = data {
        let bytes = data.as_bytes();
        let stored = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(used_size).ok())
            .and_then(|(a, n)| bytes.get(a..a.checked_add(n)?))
            .ok_or_else(|| PyValueError::new_err("the stored bytes end early"))?;
        return py.detach(|| whole(stored, out));
    }
    let Some(fd) = fileno else { return Err(PyValueError::new_err("no stored bytes")) };
    if fd < 0 {
        return Err(PyValueError::new_err("no file"));
    }
    decode_file(py, codec, fd, used_size, offset, out, whole)
}

/// The file branch of [`hook_decode`]: positional reads of the descriptor `fd` (Unix;
/// elsewhere an error, so asdf's own function decodes).
#[cfg(unix)]
fn decode_file(
    py: Python<'_>,
    codec: Compression,
    fd: i32,
    used_size: u64,
    offset: u64,
    out: &mut [u8],
    whole: impl Fn(&[u8], &mut [u8]) -> PyResult<()> + Sync,
) -> PyResult<()> {
    use std::os::unix::fs::FileExt;
    py.detach(|| {
        // SAFETY: the descriptor belongs to the caller's open file, which stays open for
        // this call; `ManuallyDrop` never closes it.
        let file = std::mem::ManuallyDrop::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        let mut at = offset;
        let mut read = |buf: &mut [u8]| -> std::io::Result<usize> {
            let n = file.read_at(buf, at)?;
            at += n as u64;
            Ok(n)
        };
        match codec {
            Compression::Lz4 | Compression::Zlib => {
                codec::decode_read_into(codec, &mut read, used_size, out).map_err(block_err)
            }
            _ => {
                let n = usize::try_from(used_size).map_err(|_| PyValueError::new_err("too large"))?;
                let mut stored = codec::zeroed(n).ok_or_else(|| PyValueError::new_err("cannot allocate"))?;
                file.read_exact_at(&mut stored, offset).map_err(|e| PyValueError::new_err(e.to_string()))?;
                whole(&stored, out)
            }
        }
    })
}

#[cfg(not(unix))]
fn decode_file(
    _py: Python<'_>,
    _codec: Compression,
    _fd: i32,
    _used_size: u64,
    _offset: u64,
    _out: &mut [u8],
    _whole: impl Fn(&[u8], &mut [u8]) -> PyResult<()> + Sync,
) -> PyResult<()> {
    Err(PyValueError::new_err("file descriptors are read on Unix only"))
}

/// `data` (a contiguous uint8 array) compressed with `codec` as asdf's own compressor
/// would at its default settings, with the GIL released: the stored bytes handed to
/// `write` (a Python callable, a BytesIO's `write`) in order, a piece of a few megabytes
/// at a time (so they are never held twice), then their length and the MD5 `hash` asks
/// for (`"stored"`, `"data"` or `"none"`: `None`).
///
/// # Errors
/// `ValueError` for a codec rasdf does not write, or an array that is not contiguous;
/// `write`'s own errors. `write` may have had part of the stream then.
#[pyfunction]
pub(crate) fn hook_encode<'py>(
    py: Python<'py>,
    codec: &str,
    data: PyReadonlyArray1<'py, u8>,
    hash: &str,
    write: Py<PyAny>,
) -> PyResult<(u64, Option<Bound<'py, PyBytes>>)> {
    let codec = codec_of(codec)?;
    if !matches!(codec, Compression::Lz4 | Compression::Zlib | Compression::Bzp2) {
        return Err(PyValueError::new_err(format!("{codec} is left to asdf")));
    }
    let hash = match hash {
        "stored" => HashOf::Stored,
        "data" => HashOf::Data,
        "none" => HashOf::Nothing,
        other => return Err(PyValueError::new_err(format!("no hash {other:?}"))),
    };
    let bytes = data.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut failed: Option<PyErr> = None;
    let mut written = 0u64;
    let result = py.detach(|| {
        codec::encode_hashed_to(codec, bytes, hash, &mut |piece: &[u8]| {
            Python::attach(|py| write.bind(py).call1((PyBytes::new(py, piece),)).map(drop)).map_err(|e| {
                failed = Some(e);
                rasdf::block::BlockError::Corrupt { codec, message: "the writer failed".into() }
            })?;
            written += piece.len() as u64;
            Ok(())
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let md5 = result.map_err(block_err)?;
    Ok((written, md5.map(|m| PyBytes::new(py, &m))))
}
