//! `rasdf extract FILE PATH -o OUT.npy`: the ndarray at a tree path as a NumPy `.npy`
//! file (see [`rasdf_convert::npy`]): every datatype ASDF holds, records, strings and
//! big-endian numbers included, the elements in C order with their bytes as the file
//! stores them. A masked array's data is written as stored (numpy's `.data`), and its
//! mask, as booleans, to `--mask M.npy`. `--raw` writes the elements alone, no header.
//!
//! Each output file is staged and put in place only when whole
//! ([`rasdf::write::Staged`]): a failure leaves no file, nor part of one. `-` writes to
//! the command's output (standard output) instead.

use std::io::Write;
use std::path::Path;

use rasdf::tree::{NodeRef, Value};
use rasdf::write::Staged;
use rasdf::{AsdfFile, ErrorKind, Location};
use rasdf_convert::{Error, Result, npy};

/// Writes the ndarray at `path` of `file` to `output` (a `.npy` file, or its elements
/// alone when `raw`), and its mask to `mask` when given; an output `-` is `out`.
///
/// # Errors
/// [`ErrorKind::Usage`] for both outputs `-`, both naming one file, or an output that is
/// the input file; [`ErrorKind::NotFound`] for a path with no node, a node that is not an
/// ndarray, or a `--mask` of an array with no mask (each naming the path); errors reading
/// the array; I/O errors writing (naming the output).
pub fn run(
    file: &AsdfFile,
    path: &str,
    output: &Path,
    mask: Option<&Path>,
    raw: bool,
    out: &mut impl Write,
) -> Result<()> {
    check_outputs(file, output, mask)?;
    let named = |e: rasdf::Error| e.at_path(path).in_file_opt(file.path());
    let node = file.node_at(path).map_err(named)?;
    if !node.is_asdf_tag("core/ndarray") {
        let why = format!("not an ndarray, but {}", describe(node));
        return Err(named(rasdf::Error::new(ErrorKind::NotFound(why), Location::default())).into());
    }
    // The mask first: an array with none writes nothing.
    let masked = match mask {
        Some(_) => {
            let handle = file.array_at(node);
            let array = handle.read_dyn().map_err(named)?;
            let Some(bools) = handle.mask(&array).map_err(named)? else {
                let why = "the array has no mask (--mask needs a masked array)".to_string();
                return Err(named(rasdf::Error::new(ErrorKind::NotFound(why), Location::default())).into());
            };
            Some((array, bools))
        }
        None => None,
    };
    let data = |mut w: &mut dyn Write| -> Result<()> {
        match &masked {
            Some((array, _)) if raw => Ok(npy::write_raw(array, &mut w)?),
            Some((array, _)) => npy::write_array(array, &mut w),
            None => npy::write_ndarray_once(file, node, raw, &mut w),
        }
    };
    let bools = |mut w: &mut dyn Write| -> Result<()> {
        match &masked {
            Some((_, bools)) if raw => Ok(w.write_all(&bools.iter().map(|&b| u8::from(b)).collect::<Vec<_>>())?),
            Some((array, bools)) => npy::write_bools(bools, &array.shape, &mut w),
            None => Ok(()),
        }
    };
    let mut writes: Vec<(&Path, &WriteTo<'_>)> = vec![(output, &data)];
    if let Some(m) = mask {
        writes.push((m, &bools));
    }
    // The files are filled (a FIFO or device written into), then standard output
    // written, then the files put in place.
    let mut staged = Vec::new();
    for &(target, write) in writes.iter().filter(|(t, _)| !is_stdout(t)) {
        staged.extend(stage(file, path, target, write)?);
    }
    if let Some(&(_, write)) = writes.iter().find(|(t, _)| is_stdout(t)) {
        let mut w = Noted { inner: &mut *out, failed: false };
        let written = write(&mut w).and_then(|()| Ok(w.flush()?));
        match written {
            // A reader that stopped reading (`| head`) wanted no more: nothing is put
            // in place, and nothing said.
            Err(Error::Asdf(e)) if w.failed && is_broken_pipe(&e) => return Ok(()),
            Err(e) if w.failed => return Err(e),
            r => r.map_err(|e| of_input(file, path, e))?,
        }
        file.check_unchanged()?;
    }
    rasdf::write::commit_all(staged).map_err(Error::from)
}

/// What writes one output (the array, or its mask) to a writer.
type WriteTo<'a> = dyn Fn(&mut dyn Write) -> Result<()> + 'a;

/// A staged file for `target`, filled by `write`; `None` for a FIFO, device or socket,
/// written into at once ([`crate::outputs::is_special`]).
fn stage(file: &AsdfFile, path: &str, target: &Path, write: &WriteTo<'_>) -> Result<Option<Staged>> {
    let mut staged = None;
    let sink = if crate::outputs::is_special(target) {
        crate::outputs::open_special(target).map_err(|e| Error::from(rasdf::Error::from(e).in_file(target)))?
    } else {
        crate::outputs::sweep(target);
        staged.insert(Staged::new(target)?).file().try_clone()?
    };
    let mut w = Noted { inner: std::io::BufWriter::with_capacity(1 << 20, sink), failed: false };
    let written = write(&mut w).and_then(|()| Ok(w.flush()?));
    match written {
        Err(e) if w.failed => return Err(e.in_file(target)),
        r => r.map_err(|e| of_input(file, path, e))?,
    }
    drop(w);
    // A file cut short while read reads as zeros: nothing of it is put in place.
    file.check_unchanged()?;
    Ok(staged)
}

/// An error reading the array at `path` of `file`, naming them.
fn of_input(file: &AsdfFile, path: &str, e: Error) -> Error {
    let e = e.at_path(path);
    match file.path() {
        Some(p) => e.in_file(p),
        None => e,
    }
}

fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

fn is_broken_pipe(e: &rasdf::Error) -> bool {
    matches!(e.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

fn usage(msg: String) -> Error {
    Error::Asdf(rasdf::Error::new(ErrorKind::Usage(msg), Location::default()))
}

/// Refuses two outputs on standard output or in one file, and an output that is a file
/// the input reads.
fn check_outputs(file: &AsdfFile, output: &Path, mask: Option<&Path>) -> Result<()> {
    if let Some(m) = mask {
        if is_stdout(m) && is_stdout(output) {
            return Err(usage("-o - and --mask -: only one output can go to standard output".into()));
        }
        if !is_stdout(m) && !is_stdout(output) && crate::outputs::same_file(m, output) {
            return Err(usage(format!("--mask {} is the file of -o: choose another", m.display())));
        }
    }
    let outputs: Vec<&Path> = std::iter::once(output).chain(mask).collect();
    Ok(crate::outputs::refuse(file, &outputs)?)
}

/// What a node that is not an ndarray is, for the error.
fn describe(node: NodeRef<'_>) -> String {
    if let Some(tag) = node.tag() {
        return format!("a {}", tag.strip_prefix("tag:stsci.edu:asdf/").unwrap_or(tag));
    }
    match node.value() {
        Value::Map(_) => "a mapping".into(),
        Value::Seq(_) => "a sequence".into(),
        Value::Str(_) => "a string".into(),
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => "a number".into(),
        Value::Timestamp(_) => "a timestamp".into(),
        Value::Binary(_) => "binary data".into(),
    }
}

/// A writer that tells whether one of its writes failed: an error of the output, not
/// of reading the input.
struct Noted<W> {
    inner: W,
    failed: bool,
}

impl<W: Write> Write for Noted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|_| self.failed = true)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|_| self.failed = true)
    }
}
