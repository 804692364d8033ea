//! rasdf's errors as Python exceptions: `FileNotFoundError` and the other `OSError`s for
//! what the system refused, `rasdf.AsdfError` (a `ValueError`) for what is wrong with a
//! file, with its location as attributes.

use pyo3::exceptions::{
    PyConnectionError, PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError,
    PyPermissionError, PyTimeoutError,
};
use pyo3::prelude::*;

pyo3::create_exception!(
    rasdf,
    AsdfError,
    pyo3::exceptions::PyValueError,
    "A damaged, malformed or refused ASDF file (or a write that cannot be made). The \
     attributes `file`, `block`, `offset`, `path` and `line` say where, when known \
     (else `None`)."
);

/// The Python exception for `e`.
pub(crate) fn to_pyerr(py: Python<'_>, e: rasdf::Error) -> PyErr {
    let message = e.to_string();
    let (kind, loc) = e.into_parts();
    if let rasdf::ErrorKind::Io(io) = &kind {
        let file = loc.file.as_ref().map(|p| p.display().to_string());
        if is_remote(io) {
            return remote_error(py, io, file);
        }
        let errno = io.raw_os_error();
        let text = match errno {
            Some(_) => strip_os_suffix(&io.to_string()),
            None => io.to_string(),
        };
        // A folder is EISDIR to Python, though rasdf's own check found it, not open(2);
        // an error no system call gave has no errno (`None`, never 0).
        let errno = errno.or((io.kind() == std::io::ErrorKind::IsADirectory).then_some(EISDIR));
        let err = match io.kind() {
            std::io::ErrorKind::NotFound => py.get_type::<PyFileNotFoundError>(),
            std::io::ErrorKind::PermissionDenied => py.get_type::<PyPermissionError>(),
            std::io::ErrorKind::IsADirectory => py.get_type::<PyIsADirectoryError>(),
            std::io::ErrorKind::NotADirectory => py.get_type::<PyNotADirectoryError>(),
            std::io::ErrorKind::AlreadyExists => py.get_type::<PyFileExistsError>(),
            // A remote file's network and server errors.
            std::io::ErrorKind::TimedOut => py.get_type::<PyTimeoutError>(),
            std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionReset => py.get_type::<PyConnectionError>(),
            _ if errno.is_some() => py.get_type::<PyOSError>(),
            // Not the system's: a file cut short, a short read.
            _ => return asdf_error(py, message, &loc),
        };
        return match errno {
            Some(n) => PyErr::from_type(err, (n, text, file)),
            // No errno: `OSError(message)`, its errno `None`, the file named in the message
            // (a `filename` would make Python print `[Errno None] None: ...`).
            None => PyErr::from_type(
                err,
                (match &file {
                    Some(f) => format!("{f}: {text}"),
                    None => text,
                },),
            ),
        };
    }
    asdf_error(py, message, &loc)
}

/// Whether `io` is a remote file's error (the server's or the network's).
fn is_remote(io: &std::io::Error) -> bool {
    io.get_ref().is_some_and(|e| e.is::<rasdf::remote::RemoteError>())
}

/// A remote file's error (its URL shown without credentials, as rasdf shows every URL):
/// `TimeoutError` (errno `ETIMEDOUT`), `FileNotFoundError` (a 404: `ENOENT`),
/// `PermissionError` (401, 403: `EACCES`), `ConnectionError`, or `OSError` (a server
/// error, an answer rasdf cannot use, a redirect not followed, a file that changed while
/// it was read); `errno` is `None` where no errno fits, never 0.
fn remote_error(py: Python<'_>, io: &std::io::Error, file: Option<String>) -> PyErr {
    use std::io::ErrorKind as K;
    let text = io.to_string();
    let errno_named = |name: &str| -> Option<i32> { py.import("errno").ok()?.getattr(name).ok()?.extract().ok() };
    let errno = match io.kind() {
        K::TimedOut => errno_named("ETIMEDOUT"),
        K::NotFound => errno_named("ENOENT"),
        K::PermissionDenied => errno_named("EACCES"),
        _ => None,
    };
    match errno {
        Some(n) => {
            let args = (n, text, file);
            match io.kind() {
                K::TimedOut => PyTimeoutError::new_err(args),
                K::NotFound => PyFileNotFoundError::new_err(args),
                _ => PyPermissionError::new_err(args),
            }
        }
        // The message alone (it names the URL): `errno`, `strerror` and `filename` None.
        None => match io.kind() {
            K::TimedOut => PyTimeoutError::new_err(text),
            K::NotFound => PyFileNotFoundError::new_err(text),
            K::PermissionDenied => PyPermissionError::new_err(text),
            K::ConnectionAborted | K::ConnectionRefused | K::ConnectionReset => PyConnectionError::new_err(text),
            _ => PyOSError::new_err(text),
        },
    }
}

/// Linux's EISDIR.
const EISDIR: i32 = 21;

/// `Permission denied (os error 13)` without its `(os error 13)`: Python says the
/// number itself.
fn strip_os_suffix(text: &str) -> String {
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text.to_string(),
    }
}

fn asdf_error(py: Python<'_>, message: String, loc: &rasdf::Location) -> PyErr {
    let err = AsdfError::new_err(message);
    let value = err.value(py);
    let set = |name: &str, v: Bound<'_, PyAny>| {
        let _ = value.setattr(name, v);
    };
    let none = || py.None().into_bound(py);
    set("file", loc.file.as_ref().map_or_else(none, |f| f.display().to_string().into_pyobject(py).unwrap().into_any()));
    set("block", loc.block.map_or_else(none, |b| b.into_pyobject(py).unwrap().into_any()));
    set("offset", loc.offset.map_or_else(none, |o| o.into_pyobject(py).unwrap().into_any()));
    set("path", loc.path.as_ref().map_or_else(none, |p| p.into_pyobject(py).unwrap().into_any()));
    set("line", loc.line.map_or_else(none, |l| l.into_pyobject(py).unwrap().into_any()));
    err
}

/// The error of a closed file's use.
pub(crate) fn closed() -> PyErr {
    Python::attach(|py| asdf_error(py, "I/O operation on a closed ASDF file".into(), &rasdf::Location::default()))
}

/// An `AsdfError` with a message and a tree path.
pub(crate) fn at_path(py: Python<'_>, message: String, path: &str) -> PyErr {
    asdf_error(py, message, &rasdf::Location::path(path))
}

/// `f()`, with a panic inside it (a bug of rasdf's) turned into an `AsdfError` saying so,
/// rather than PyO3's `PanicException`, a `BaseException` that `except Exception` misses.
pub(crate) fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let message = format!("internal error in rasdf (a bug: please report it): {what}");
        Err(asdf_error(py, message, &rasdf::Location::default()))
    })
}
