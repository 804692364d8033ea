//! Outputs that are inputs: every command that writes refuses, as a usage error (exit
//! code 2), an output that is a file it reads, by whatever path or link it is named
//! (`preview F.asdf P -o F.asdf` would otherwise replace the input with a PNG). The
//! files a command reads are its input and, for an exploded input, the block files its
//! arrays' `source`s name.

use std::io::Write;
use std::path::{Path, PathBuf};

use rasdf::AsdfFile;
use rasdf::file::StorageInfo;

/// Whether `a` and `b` name one file: the same file on disk (through links, `..`, hard
/// links: device and inode on Unix; elsewhere the `same_file` crate's volume serial number
/// and file index, for regular files), or, where they do not both exist, the same name in
/// the same folder.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        // Compared without opening either: opening a FIFO waits for a writer.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if (x.dev(), x.ino()) == (y.dev(), y.ino()) {
                return true;
            }
        }
        #[cfg(not(unix))]
        if x.is_file() && y.is_file() && same_file::is_same_file(a, b).unwrap_or(false) {
            return true;
        }
    }
    let resolved = |p: &Path| -> Option<PathBuf> {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    };
    a == b || resolved(a).is_some_and(|r| Some(r) == resolved(b))
}

/// The files reading `file` (opened from `path`) reads: `path` itself and, for an
/// exploded file, each block file its arrays name (those that resolve inside its folder;
/// the others are refused when read).
pub fn inputs_of(path: &Path, file: &AsdfFile) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    let base = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // (A file one of whose arrays cannot be listed names none.)
    let listed: rasdf::Result<Vec<_>> = file.arrays().map(|a| a.info()).collect();
    for array in listed.unwrap_or_default() {
        if let StorageInfo::External { source } = &array.storage
            && let Ok(Some(p)) = rasdf::external::resolve(&base, source)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// `Err` naming the first of `outputs` that is one of `inputs` (standard output, `-`,
/// is never one).
///
/// # Errors
/// The message for the user.
pub fn refuse_inputs(inputs: &[PathBuf], outputs: &[&Path]) -> Result<(), String> {
    for output in outputs.iter().filter(|o| o.as_os_str() != "-") {
        if let Some(input) = inputs.iter().find(|i| same_file(output, i)) {
            let what = if Some(input) == inputs.first() {
                "the input file".to_string()
            } else {
                format!("a block file the input reads ({})", input.display())
            };
            return Err(format!("{} is {what}: choose another output", output.display()));
        }
    }
    Ok(())
}

/// [`refuse_inputs`] for the outputs of a command reading `file`: a usage error
/// ([`rasdf::ErrorKind::Usage`], exit code 2) naming the output.
///
/// # Errors
/// That error.
pub fn refuse(file: &AsdfFile, outputs: &[&Path]) -> rasdf::Result<()> {
    let Some(path) = file.path() else { return Ok(()) };
    refuse_inputs(&inputs_of(path, file), outputs)
        .map_err(|m| rasdf::Error::new(rasdf::ErrorKind::Usage(m), rasdf::Location::default()))
}

/// Whether `target` is written into rather than replaced: `-` (standard output), or an
/// existing FIFO, device or socket. The library writes regular files only (atomically,
/// by a rename); writing into these is the command line's policy.
pub fn is_special(target: &Path) -> bool {
    if target.as_os_str() == "-" {
        return true;
    }
    std::fs::metadata(target).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Opens an existing FIFO, device or socket for writing, without truncating or creating
/// it (a Unix socket is connected to).
pub fn open_special(target: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::OpenOptions::new().write(true).open(target) {
        Ok(f) => Ok(f),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            use std::os::unix::fs::FileTypeExt;
            if !std::fs::metadata(target).is_ok_and(|m| m.file_type().is_socket()) {
                return Err(e);
            }
            let stream = std::os::unix::net::UnixStream::connect(target)?;
            Ok(std::fs::File::from(std::os::fd::OwnedFd::from(stream)))
        }
        Err(e) => Err(e),
    }
}

/// Writes an output with `write`, which writes a regular file at the path it is given
/// (atomically, as the library writes): `target` itself, or, for a special target
/// ([`is_special`]), a file in a private temporary folder (mode 0700, removed after, and
/// on a signal: see [`crate::signals`]) whose bytes are then copied into `target`
/// (standard output, `-`, is `out`). The file keeps `target`'s extension, which may name
/// its format.
///
/// # Errors
/// Those of `write`; I/O errors making the folder or copying, naming the target.
pub fn write_output<E: From<std::io::Error>>(
    target: &Path,
    out: &mut dyn Write,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    if !is_special(target) {
        sweep(target);
        return write(target);
    }
    let dir = PrivateDir::new()?;
    let mut name = std::ffi::OsString::from("output");
    if let Some(ext) = target.extension().filter(|_| target.as_os_str() != "-") {
        name.push(".");
        name.push(ext);
    }
    let file = dir.path.join(name);
    let _registered = crate::signals::register(&file);
    write(&file)?;
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", target.display()));
    let copied = std::fs::File::open(&file).and_then(|mut from| {
        if target.as_os_str() == "-" {
            std::io::copy(&mut from, out).and_then(|_| out.flush())
        } else {
            let mut to = open_special(target)?;
            std::io::copy(&mut from, &mut to).and_then(|_| to.flush())
        }
    });
    let _ = std::fs::remove_file(&file);
    copied.map_err(|e| E::from(named(e)))
}

/// Removes from `target`'s folder the temporary names writers killed between naming a
/// file and renaming it left there ([`rasdf::write::sweep_stale`]), before writing into it.
pub fn sweep(target: &Path) {
    rasdf::write::sweep_stale(target.parent().unwrap_or(Path::new(".")));
}

/// A folder of this process's own in the temporary folder (mode 0700 on Unix), removed
/// (when empty) when dropped, and on a signal.
struct PrivateDir {
    path: PathBuf,
    _registered: crate::signals::Registered,
}

impl PrivateDir {
    fn new() -> std::io::Result<PrivateDir> {
        use std::hash::{BuildHasher, Hasher};
        for _ in 0..16 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            let path = std::env::temp_dir().join(format!("rasdf-out-{:016x}", h.finish()));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => return Ok(PrivateDir { _registered: crate::signals::register(&path), path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free name for a temporary folder"))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_itself_by_any_path_or_link() {
        let dir = std::env::temp_dir().join(format!("rasdf-outputs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let f = dir.join("a.asdf");
        std::fs::write(&f, b"x").unwrap();
        assert!(same_file(&f, &dir.join("sub/../a.asdf")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&f, dir.join("link.asdf")).unwrap();
            assert!(same_file(&dir.join("link.asdf"), &f));
        }
        std::fs::hard_link(&f, dir.join("hard.asdf")).unwrap();
        assert!(same_file(&dir.join("hard.asdf"), &f));
        // Neither exists: the same name in the same folder.
        assert!(same_file(&dir.join("new.png"), &dir.join("sub/../new.png")));
        assert!(!same_file(&dir.join("new.png"), &f));
        let inputs = vec![f.clone()];
        assert!(refuse_inputs(&inputs, &[&dir.join("hard.asdf")]).unwrap_err().contains("the input file"));
        assert!(refuse_inputs(&inputs, &[Path::new("-"), &dir.join("other.asdf")]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
