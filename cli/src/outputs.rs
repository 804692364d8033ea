//! Outputs that are inputs: every command that writes refuses, as a usage error (exit
//! code 2), an output that is a file it reads, by whatever path or link it is named
//! (`preview F.asdf P -o F.asdf` would otherwise replace the input with a PNG). The
//! files a command reads are its input and, for an exploded input, the block files its
//! arrays' `source`s name.

use std::path::{Path, PathBuf};

use rasdf::AsdfFile;
use rasdf::file::StorageInfo;

/// Whether `a` and `b` name one file: the same file on disk (through links, `..`, hard
/// links; `same_file` compares device and inode on Unix, the volume serial number and
/// file index on Windows), or, where they do not both exist, the same name in the same
/// folder.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if same_file::is_same_file(a, b).unwrap_or(false) {
        return true;
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
    for array in file.arrays().unwrap_or_default() {
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
