//! Staged writes on Unix: an unnamed temporary file (`O_TMPFILE`, Linux) or a named hidden
//! one in the target's folder, renamed over the target (see the [parent module](super)).

use std::ffi::{CStr, CString};
use std::fmt;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering};

use super::StageOptions;

/// A file write in progress, invisible under the target's name until [`Staged::commit`].
///
/// Dropping it without committing discards the content and leaves the target's folder as it was.
pub struct Staged {
    file: File,
    target: PathBuf,
    sync: bool,
    dest: Dest,
}

enum Dest {
    /// Replace `name` in `dir` by renaming the staged file over it.
    Replace(Replace),
}

struct Replace {
    dir: File,
    name: CString,
    /// The staged file was created by `O_TMPFILE` and has no name until it is prepared.
    unnamed: bool,
    /// The temporary name that currently exists in `dir` and holds the content (removed on drop).
    pending: Option<PendingName>,
}

#[derive(Clone, Copy)]
struct PendingName {
    rand: u64,
    slot: Option<usize>,
}

impl Drop for Replace {
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            let name = temp_name(p.rand);
            // SAFETY: `name` is NUL-terminated and lives across the call; `self.dir` is an open directory.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), name.as_ptr().cast(), 0) };
            unregister(p.slot);
        }
    }
}

impl fmt::Debug for Staged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match &self.dest {
            Dest::Replace(r) if r.unnamed => "unnamed",
            Dest::Replace(_) => "named",
        };
        f.debug_struct("Staged").field("target", &self.target).field("how", &how).field("sync", &self.sync).finish()
    }
}

impl Staged {
    /// Begins a write destined for `path` (see the [module docs](super) for how).
    ///
    /// Errors if the folder cannot be opened or written, if `path` names a folder, or has no file name.
    pub fn new(path: &Path) -> io::Result<Staged> {
        Self::new_impl(path, StageOptions::default(), false)
    }

    /// Like [`Staged::new`], with options.
    pub fn new_with(path: &Path, options: StageOptions) -> io::Result<Staged> {
        Self::new_impl(path, options, false)
    }

    fn new_impl(path: &Path, options: StageOptions, force_named: bool) -> io::Result<Staged> {
        let path = &super::through_links(path)?;
        if let Ok(m) = std::fs::metadata(path) {
            let t = m.file_type();
            if t.is_dir() {
                return Err(with_path(io::Error::from_raw_os_error(libc::EISDIR), "cannot write", path));
            }
            // A FIFO, a device or a socket is not replaced by a file: writing into one is the
            // caller's business (the command line's `-o -` and FIFOs).
            let what = if t.is_fifo() {
                Some("a FIFO")
            } else if t.is_char_device() || t.is_block_device() {
                Some("a device")
            } else if t.is_socket() {
                Some("a socket")
            } else {
                None
            };
            if let Some(what) = what {
                let e = io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, not a regular file"));
                return Err(with_path(e, "cannot replace", path));
            }
        }
        let bytes = path.as_os_str().as_bytes();
        let name = match path.file_name() {
            Some(n) if !bytes.ends_with(b"/") => n,
            _ => return Err(with_path(io::Error::from_raw_os_error(libc::EISDIR), "not a file path:", path)),
        };
        let name = CString::new(name.as_bytes())
            .map_err(|_| with_path(io::ErrorKind::InvalidInput.into(), "NUL byte in file name", path))?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = open_dir(parent).map_err(|e| with_path(e, "cannot open the folder of", path))?;

        if !force_named {
            match open_unnamed(&dir) {
                Ok(file) => {
                    lock(&file);
                    let dest = Dest::Replace(Replace { dir, name, unnamed: true, pending: None });
                    return Ok(Staged { file, target: path.to_path_buf(), sync: options.sync, dest });
                }
                Err(e) if tmpfile_unsupported(&e) => {}
                Err(e) => return Err(with_path(e, "cannot create a temporary file for", path)),
            }
        }
        let (file, pending) =
            create_named(&dir).map_err(|e| with_path(e, "cannot create a temporary file for", path))?;
        lock(&file);
        let dest = Dest::Replace(Replace { dir, name, unnamed: false, pending: Some(pending) });
        Ok(Staged { file, target: path.to_path_buf(), sync: options.sync, dest })
    }

    /// The staged file: a normal read-write [`File`], initially empty. Write, seek, truncate or re-open it at
    /// will; what [`Staged::commit`] puts in place is its whole content from offset 0, whatever the position.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The path this write is destined for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the content in place atomically: afterwards the target holds the whole new content; before, it held
    /// the whole old content (or did not exist).
    ///
    /// On error the target is unchanged and no temporary name is left behind.
    pub fn commit(mut self) -> io::Result<()> {
        self.prepare()?;
        self.finish()
    }

    /// A temporary name for an unnamed file whose target turned out to exist.
    fn prepare_named(&mut self) -> io::Result<()> {
        let Dest::Replace(rep) = &mut self.dest;
        rep.unnamed = false;
        // The target now exists: `prepare` gives the file a temporary name.
        self.prepare()
    }

    /// Everything up to the rename: mode, fsync, and a temporary name in the target's folder.
    fn prepare(&mut self) -> io::Result<()> {
        let Dest::Replace(rep) = &mut self.dest;
        let target = &self.target;
        let mode = target_mode(&rep.dir, &rep.name);
        self.file
            .set_permissions(Permissions::from_mode(mode))
            .map_err(|e| with_path(e, "cannot set the mode of the temporary file for", target))?;
        if self.sync {
            self.file.sync_all().map_err(|e| with_path(e, "cannot sync the temporary file for", target))?;
        }
        // An unnamed file for a target that does not exist yet is linked straight to the
        // target's name in `finish`: no temporary name at all.
        if rep.pending.is_none() && !exists(&rep.dir, &rep.name) {
            return Ok(());
        }
        if rep.pending.is_none() {
            match link_unnamed(&self.file, &rep.dir) {
                Ok(p) => rep.pending = Some(p),
                Err(_) => {
                    // No way to give the unnamed file a name here (no /proc, no privilege for AT_EMPTY_PATH):
                    // copy it into a named temporary file instead.
                    let (mut named, p) = create_named(&rep.dir)
                        .map_err(|e| with_path(e, "cannot create a temporary file for", target))?;
                    rep.pending = Some(p);
                    let copy = (|| {
                        copy_from_start(&self.file, &mut named)?;
                        named.set_permissions(Permissions::from_mode(mode))?;
                        if self.sync {
                            named.sync_all()?;
                        }
                        Ok(())
                    })();
                    copy.map_err(|e: io::Error| with_path(e, "cannot copy the temporary file for", target))?;
                }
            }
        }
        Ok(())
    }

    /// The rename.
    fn finish(self) -> io::Result<()> {
        let Staged { file, target, sync, dest } = self;
        match dest {
            Dest::Replace(mut rep) => {
                if rep.pending.is_none() && rep.unnamed {
                    // A new target: the unnamed file gets the target's name itself. Should the
                    // name have appeared meanwhile (EEXIST), or no way of linking work here,
                    // the file goes through a temporary name as for an existing target.
                    let linked =
                        link_as(&file, &rep.dir, &rep.name, LinkMethod::ProcFd).or_else(|e| match e.raw_os_error() {
                            Some(libc::EEXIST) => Err(e),
                            _ => link_as(&file, &rep.dir, &rep.name, LinkMethod::EmptyPath),
                        });
                    if linked.is_ok() {
                        drop(file);
                        if sync {
                            rep.dir.sync_all().map_err(|e| with_path(e, "cannot sync the folder of", &target))?;
                        }
                        return Ok(());
                    }
                    let mut again = Staged { file, target, sync, dest: Dest::Replace(rep) };
                    again.prepare_named()?;
                    return again.finish();
                }
                let Some(p) = rep.pending else {
                    return Err(with_path(io::ErrorKind::Other.into(), "internal error: unprepared write to", &target));
                };
                let tmp = temp_name(p.rand);
                let dirfd = rep.dir.as_raw_fd();
                // SAFETY: both names are NUL-terminated and outlive the call; `dirfd` is an open directory.
                let r = unsafe { libc::renameat(dirfd, tmp.as_ptr().cast(), dirfd, rep.name.as_ptr()) };
                if r != 0 {
                    // `rep` is dropped on return and removes the temporary name.
                    return Err(with_path(io::Error::last_os_error(), "cannot rename into place", &target));
                }
                rep.pending = None;
                unregister(p.slot);
                drop(file);
                if sync {
                    rep.dir.sync_all().map_err(|e| with_path(e, "cannot sync the folder of", &target))?;
                }
                Ok(())
            }
        }
    }
}

/// Commits several staged writes, in order.
///
/// All files are first prepared (mode, fsync, a temporary name next to each target), then renamed into place one
/// after the other, so the window in which only some targets are replaced is as short as possible. It is not
/// zero: a crash, or an error, between two renames leaves the earlier targets replaced and the later ones not.
/// The caller handles that (e.g. by writing the file that refers to the others last). On error, the writes not
/// yet committed are discarded and leave no temporary file.
pub fn commit_all(staged: Vec<Staged>) -> io::Result<()> {
    let mut staged = staged;
    for s in &mut staged {
        s.prepare()?;
    }
    for s in staged {
        s.finish()?;
    }
    Ok(())
}

/// Whether the symbolic link at `path` (`link`, its metadata) may be followed by a write:
/// not in a sticky folder that anyone may write, unless this process's user or the
/// folder's owner owns it (the kernel's `fs.protected_symlinks` rule for `open(2)`).
pub(super) fn may_follow(path: &Path, link: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(dir) = std::fs::metadata(folder) else { return false };
    let open_sticky = dir.mode() & 0o1002 == 0o1002;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    !open_sticky || link.uid() == me || link.uid() == dir.uid()
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

#[derive(Debug)]
struct Context {
    msg: String,
    source: io::Error,
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.msg, self.source)?;
        if self.source.raw_os_error() == Some(libc::EMFILE) {
            // Every file a write puts in place stays open until all are renamed together.
            write!(f, " (a write holds each file it makes open until the last is done: raise `ulimit -n`)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Context {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Adds "what path" to an error, keeping its kind (the original error stays reachable as `source()`).
fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), Context { msg: format!("{what} {}", path.display()), source: e })
}

// ---------------------------------------------------------------------------------------------------------------
// Temporary names and the registry of pending names

const NAME_PREFIX: &[u8; 7] = b".rasdf-";
const NAME_SUFFIX: &[u8; 4] = b".tmp";
/// Length of a temporary name, without the terminating NUL.
const NAME_LEN: usize = NAME_PREFIX.len() + 16 + NAME_SUFFIX.len();
/// How many random names to try before giving up (a collision is practically impossible unless planted).
const MAX_ATTEMPTS: usize = 64;

/// `.rasdf-<16 hex>.tmp`, NUL-terminated. Pure computation on the stack: async-signal-safe.
fn temp_name(rand: u64) -> [u8; NAME_LEN + 1] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; NAME_LEN + 1];
    let mut i = 0;
    while i < NAME_PREFIX.len() {
        buf[i] = NAME_PREFIX[i];
        i += 1;
    }
    let mut d = 0;
    while d < 16 {
        buf[i] = HEX[((rand >> (60 - 4 * d)) & 0xf) as usize];
        i += 1;
        d += 1;
    }
    let mut s = 0;
    while s < NAME_SUFFIX.len() {
        buf[i] = NAME_SUFFIX[s];
        i += 1;
        s += 1;
    }
    buf
}

#[cfg(test)]
thread_local! {
    /// Test hook: names to use before random ones (popped from the end).
    static FORCED_RAND: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An unpredictable 64-bit value for a temporary name.
fn next_rand() -> u64 {
    #[cfg(test)]
    if let Some(r) = FORCED_RAND.with(|f| f.borrow_mut().pop()) {
        return r;
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), libc::GRND_NONBLOCK) };
        if n == 8 {
            return u64::from_ne_bytes(buf);
        }
    }
    fallback_rand()
}

/// Random enough where getrandom(2) is missing: SipHash, keyed from the OS by `RandomState`, over a counter, the
/// time and the pid.
fn fallback_rand() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish()
}

const SLOTS: usize = 64;
const FREE: u8 = 0;
/// Being filled in or emptied by its owner; the signal path skips it.
const CLAIMED: u8 = 1;
/// Holds a name that may exist on disk.
const READY: u8 = 2;
/// In use by [`remove_pending_files`].
const BUSY: u8 = 3;

/// One pending name: the folder (an fd kept open by its owner while the slot is READY or BUSY) and the random
/// part of the name. Fixed capacity, atomics only: nothing in the signal path allocates, locks or frees.
struct Slot {
    state: AtomicU8,
    dirfd: AtomicI32,
    rand: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Slot { state: AtomicU8::new(FREE), dirfd: AtomicI32::new(-1), rand: AtomicU64::new(0) }
    }
}

static PENDING: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// Records a name that is about to exist. `None` if all slots are taken (the write still works, it just cannot be
/// cleaned up by a signal handler).
fn register(dirfd: RawFd, rand: u64) -> Option<usize> {
    for (i, slot) in PENDING.iter().enumerate() {
        if slot.state.compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            slot.dirfd.store(dirfd, Ordering::Relaxed);
            slot.rand.store(rand, Ordering::Relaxed);
            slot.state.store(READY, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// Forgets a name (after it was renamed or unlinked). Waits while a signal handler on another thread uses it.
fn unregister(slot: Option<usize>) {
    let Some(slot) = slot.and_then(|i| PENDING.get(i)) else { return };
    loop {
        match slot.state.compare_exchange(READY, CLAIMED, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => break,
            Err(BUSY) => {
                std::hint::spin_loop();
                std::thread::yield_now();
            }
            Err(_) => return, // not ours to free (cannot happen)
        }
    }
    slot.dirfd.store(-1, Ordering::Relaxed);
    slot.state.store(FREE, Ordering::Release);
}

/// Removes every temporary file that a pending [`Staged`] write of this process has under a name (the named
/// fallback, and the microseconds between link and rename of a commit).
///
/// Async-signal-safe: it only reads atomics, formats names on the stack and calls `unlinkat(2)`; it allocates
/// nothing and takes no lock; it preserves `errno` (on Linux). Meant for a binary's `SIGINT`/`SIGTERM`/`SIGHUP`
/// handler just before the process dies (the command line's): writes still pending in this process
/// will fail to commit afterwards.
pub fn remove_pending_files() {
    #[cfg(target_os = "linux")]
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    let saved_errno = unsafe { *libc::__errno_location() };
    for slot in PENDING.iter() {
        if slot.state.compare_exchange(READY, BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            let dirfd = slot.dirfd.load(Ordering::Relaxed);
            let name = temp_name(slot.rand.load(Ordering::Relaxed));
            // SAFETY: `name` is NUL-terminated; `dirfd` stays open while the slot is BUSY (its owner waits for
            // READY before closing it). unlinkat is async-signal-safe.
            unsafe { libc::unlinkat(dirfd, name.as_ptr().cast(), 0) };
            slot.state.store(READY, Ordering::Release);
        }
    }
    #[cfg(target_os = "linux")]
    // SAFETY: as above.
    unsafe {
        *libc::__errno_location() = saved_errno
    };
}

// ---------------------------------------------------------------------------------------------------------------
// File system helpers

fn open_dir(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(path)
}

/// Whether `name` exists in `dir` (as anything, a dangling symbolic link included).
fn exists(dir: &File, name: &CStr) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` is valid for writes of a `stat`.
    unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) == 0 }
}

/// Takes an exclusive `flock` on a staged file for as long as it is open: a temporary
/// name whose file nobody holds locked belongs to a writer that died between naming the
/// file and renaming it (a window of microseconds), and the next write in the folder
/// removes it ([`sweep_stale_once`]). Best effort: a filesystem without locks just leaves
/// such a name.
fn lock(file: &File) {
    // SAFETY: `file` is an open descriptor; flock has no other effect on memory.
    let _ = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
}

/// Removes, once per folder and process, the temporary names (`.rasdf-<16 hex>.tmp`) that
/// writers killed between naming a file and renaming it left in the folder `dir`: those
/// whose file no process holds locked. A named fallback file is locked just after it is
/// made, so an empty one is only taken when it is over a minute old. For binaries, before
/// they write into a folder (a library does not sweep its users' folders on its own).
pub fn sweep_stale(dir: &Path) {
    if let Ok(dir) = open_dir(if dir.as_os_str().is_empty() { Path::new(".") } else { dir }) {
        sweep_stale_once(&dir);
    }
}

fn sweep_stale_once(dir: &File) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SWEPT: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);
    let Ok(meta) = dir.metadata() else { return };
    let key = (std::os::unix::fs::MetadataExt::dev(&meta), std::os::unix::fs::MetadataExt::ino(&meta));
    {
        let mut swept = SWEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !swept.get_or_insert_with(HashSet::new).insert(key) {
            return;
        }
    }
    let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd())) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let b = name.as_bytes();
        let ours = b.len() == NAME_LEN
            && b.starts_with(NAME_PREFIX)
            && b.ends_with(NAME_SUFFIX)
            && b[NAME_PREFIX.len()..NAME_LEN - NAME_SUFFIX.len()].iter().all(u8::is_ascii_hexdigit);
        if !ours {
            continue;
        }
        let Ok(cname) = CString::new(b) else { continue };
        remove_if_stale(dir, &cname);
    }
}

/// Removes the temporary name `name` in `dir` when no process holds its file locked.
fn remove_if_stale(dir: &File, name: &CStr) {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: `name` is NUL-terminated; `dir` is an open directory.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return;
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let file = unsafe { File::from_raw_fd(fd) };
    // SAFETY: `file` is an open descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return;
    }
    let Ok(meta) = file.metadata() else { return };
    let young = meta.modified().ok().and_then(|m| m.elapsed().ok()).is_none_or(|age| age.as_secs() < 60);
    if !meta.is_file() || (meta.len() == 0 && young) {
        return;
    }
    // The name still names the file locked above (not one put there since).
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` is valid for writes of a `stat`.
    if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return;
    }
    // SAFETY: fstatat succeeded and filled `st`.
    let st = unsafe { st.assume_init() };
    // `dev_t` is `i32` on macOS, `u64` on Linux: widened as std's `MetadataExt::dev` does.
    #[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
    let st_dev = st.st_dev as u64;
    if st.st_ino != std::os::unix::fs::MetadataExt::ino(&meta) || st_dev != std::os::unix::fs::MetadataExt::dev(&meta) {
        return;
    }
    // SAFETY: `name` is NUL-terminated; `dir` is an open directory.
    unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
}

/// `O_TMPFILE` in `dir`, mode 0600.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_unnamed(dir: &File) -> io::Result<File> {
    let mode: libc::c_uint = 0o600;
    loop {
        // SAFETY: the path is a NUL-terminated literal; `dir` is an open directory.
        let fd = unsafe {
            libc::openat(dir.as_raw_fd(), c".".as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, mode)
        };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            return Ok(unsafe { File::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_unnamed(_dir: &File) -> io::Result<File> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// Errors by which `O_TMPFILE` says "not here" (old kernel, file system without support).
fn tmpfile_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOSYS))
}

/// A new, registered, hidden file with a random name in `dir`: `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600.
fn create_named(dir: &File) -> io::Result<(File, PendingName)> {
    let dirfd = dir.as_raw_fd();
    let mode: libc::c_uint = 0o600;
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    for _ in 0..MAX_ATTEMPTS {
        let rand = next_rand();
        // Registered before it exists, so that no signal can come between creation and registration.
        let slot = register(dirfd, rand);
        let name = temp_name(rand);
        // SAFETY: `name` is NUL-terminated and outlives the call; `dirfd` is an open directory.
        let fd = unsafe { libc::openat(dirfd, name.as_ptr().cast(), flags, mode) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            return Ok((unsafe { File::from_raw_fd(fd) }, PendingName { rand, slot }));
        }
        let e = io::Error::last_os_error();
        unregister(slot);
        if !matches!(e.raw_os_error(), Some(libc::EEXIST | libc::EINTR)) {
            return Err(e);
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name"))
}

#[derive(Clone, Copy, Debug)]
enum LinkMethod {
    /// `linkat(AT_FDCWD, "/proc/self/fd/N", dirfd, name, AT_SYMLINK_FOLLOW)`.
    ProcFd,
    /// `linkat(fd, "", dirfd, name, AT_EMPTY_PATH)`.
    EmptyPath,
}

/// Gives the unnamed `file` the name `name` in `dir`. Fails with `EEXIST` if the name exists (never replaces or
/// follows it).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn link_as(file: &File, dir: &File, name: &CStr, method: LinkMethod) -> io::Result<()> {
    let r = match method {
        LinkMethod::ProcFd => {
            let src = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            // SAFETY: both paths are NUL-terminated and outlive the call; `dir` is an open directory.
            unsafe {
                libc::linkat(libc::AT_FDCWD, src.as_ptr(), dir.as_raw_fd(), name.as_ptr(), libc::AT_SYMLINK_FOLLOW)
            }
        }
        // SAFETY: as above; the empty path with AT_EMPTY_PATH designates `file` itself.
        LinkMethod::EmptyPath => unsafe {
            libc::linkat(file.as_raw_fd(), c"".as_ptr(), dir.as_raw_fd(), name.as_ptr(), libc::AT_EMPTY_PATH)
        },
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn link_as(_file: &File, _dir: &File, _name: &CStr, _method: LinkMethod) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// Links the unnamed `file` to a fresh random (registered) name in `dir`.
fn link_unnamed(file: &File, dir: &File) -> io::Result<PendingName> {
    for _ in 0..MAX_ATTEMPTS {
        let rand = next_rand();
        let slot = register(dir.as_raw_fd(), rand);
        let buf = temp_name(rand);
        let name = CStr::from_bytes_with_nul(&buf).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut r = link_as(file, dir, name, LinkMethod::ProcFd);
        if matches!(&r, Err(e) if e.raw_os_error() != Some(libc::EEXIST)) {
            r = link_as(file, dir, name, LinkMethod::EmptyPath);
        }
        match r {
            Ok(()) => return Ok(PendingName { rand, slot }),
            Err(e) => {
                unregister(slot);
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return Err(e);
                }
            }
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name"))
}

#[allow(clippy::unnecessary_cast)] // mode_t is u32 on Linux, u16 elsewhere
fn mode_bits(m: libc::mode_t) -> u32 {
    m as u32
}

/// The mode a normal create of `name` in `dir` would leave: the existing regular file's permission bits, else
/// `0o666 & !umask`.
fn target_mode(dir: &File, name: &CStr) -> u32 {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` is valid for writes of a `stat`.
    let r = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), 0) };
    if r == 0 {
        // SAFETY: fstatat succeeded and filled `st`.
        let st = unsafe { st.assume_init() };
        if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            return mode_bits(st.st_mode) & 0o777;
        }
    }
    0o666 & !current_umask()
}

/// The process umask, from the `Umask:` line of /proc/self/status (never from umask(2)); 0o022 if unknown.
fn current_umask() -> u32 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("Umask:")
                && let Ok(m) = u32::from_str_radix(v.trim(), 8)
            {
                return m & 0o777;
            }
        }
    }
    0o022
}

/// Copies the whole of `src`, from offset 0 (whatever its position), into `out`.
fn copy_from_start(src: &File, out: &mut impl Write) -> io::Result<u64> {
    clear_o_direct(src);
    let mut buf = vec![0u8; 1 << 18];
    let mut off = 0u64;
    loop {
        let n = match src.read_at(&mut buf, off) {
            Ok(0) => return Ok(off),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        off += n as u64;
    }
}

/// The caller may have set `O_DIRECT` on the staged file; our buffered reads need it off.
fn clear_o_direct(file: &File) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: fcntl on an open fd with integer arguments.
    unsafe {
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_DIRECT != 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = file;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{OsStr, OsString};
    use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    use std::process::{Command, Stdio};
    use std::sync::atomic::AtomicUsize;

    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    /// Serialises the tests that fill the registry of pending names with those that need a free slot.
    static REGISTRY_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A unique folder per test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("rasdf-stage-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir(&p).expect("create scratch folder");
            Scratch(p)
        }
        fn join(&self, name: impl AsRef<OsStr>) -> PathBuf {
            self.0.join(name.as_ref())
        }
        fn list(&self) -> Vec<OsString> {
            listing(&self.0)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// All names in a folder, hidden ones included, sorted.
    fn listing(dir: &Path) -> Vec<OsString> {
        let mut v: Vec<OsString> =
            std::fs::read_dir(dir).expect("read_dir").map(|e| e.expect("dir entry").file_name()).collect();
        v.sort();
        v
    }

    fn is_temp_name(n: &OsStr) -> bool {
        let b = n.as_bytes();
        b.len() == NAME_LEN && b.starts_with(NAME_PREFIX) && b.ends_with(NAME_SUFFIX)
    }

    fn stage(path: &Path, named: bool) -> Staged {
        Staged::new_impl(path, StageOptions::default(), named).expect("stage")
    }

    fn raw_os_error(e: &io::Error) -> Option<i32> {
        e.raw_os_error().or_else(|| e.get_ref()?.downcast_ref::<Context>()?.source.raw_os_error())
    }

    fn mkfifo(p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).expect("cstring");
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo: {}", io::Error::last_os_error());
    }

    #[test]
    fn temp_names_are_fixed_length_hidden_and_random() {
        let n = temp_name(0x0123_4567_89ab_cdef);
        assert_eq!(&n[..NAME_LEN], b".rasdf-0123456789abcdef.tmp");
        assert_eq!(n[NAME_LEN], 0);
        let a = next_rand();
        let b = next_rand();
        assert_ne!(a, b);
        assert_ne!(fallback_rand(), fallback_rand());
    }

    #[test]
    fn o_tmpfile_is_used_when_available() {
        let d = Scratch::new("tmpfile");
        let s = Staged::new(&d.join("out")).expect("stage");
        // On this machine's ext4 O_TMPFILE works: the staging is unnamed. Fails if it silently fell back.
        assert!(matches!(&s.dest, Dest::Replace(r) if r.unnamed), "{s:?}");
        assert!(d.list().is_empty());
    }

    #[test]
    fn content_appears_only_after_commit() {
        for named in [false, true] {
            let d = Scratch::new("only-after");
            let target = d.join("out.asdf");
            let mut s = stage(&target, named);
            s.file().write_all(b"hello world").expect("write");
            assert!(!target.exists(), "target visible before commit (named={named})");
            let names = d.list();
            if named {
                assert_eq!(names.len(), 1);
                assert!(is_temp_name(&names[0]), "{names:?}");
            } else {
                assert!(names.is_empty(), "{names:?}");
            }
            s.commit().expect("commit");
            assert_eq!(std::fs::read(&target).expect("read"), b"hello world");
            assert_eq!(d.list(), vec![OsString::from("out.asdf")]);

            // Replacing an existing file: old content until commit, new content after.
            let mut s = stage(&target, named);
            s.file().write_all(b"second").expect("write");
            assert_eq!(std::fs::read(&target).expect("read"), b"hello world");
            s.commit().expect("commit");
            assert_eq!(std::fs::read(&target).expect("read"), b"second");
            assert_eq!(d.list(), vec![OsString::from("out.asdf")]);
        }
    }

    #[test]
    fn whole_content_from_offset_zero_is_committed() {
        let d = Scratch::new("seek");
        let target = d.join("t");
        let mut s = stage(&target, false);
        s.file().write_all(b"0123456789").expect("write");
        s.file().seek(SeekFrom::Start(2)).expect("seek");
        s.file().write_all(b"ab").expect("write");
        let mut back = String::new();
        s.file().seek(SeekFrom::Start(0)).expect("seek");
        s.file().read_to_string(&mut back).expect("read back");
        assert_eq!(back, "01ab456789");
        s.file().seek(SeekFrom::Start(3)).expect("seek");
        s.commit().expect("commit");
        assert_eq!(std::fs::read(&target).expect("read"), b"01ab456789");
    }

    #[test]
    fn drop_without_commit_leaves_folder_as_before() {
        for named in [false, true] {
            let d = Scratch::new("drop");
            std::fs::write(d.join(".hidden"), b"h").expect("write");
            std::fs::write(d.join("out.asdf"), b"old").expect("write");
            std::fs::write(d.join("other"), b"o").expect("write");
            let before = d.list();
            let mut s = stage(&d.join("out.asdf"), named);
            s.file().write_all(&vec![9u8; 100_000]).expect("write");
            let mut s2 = stage(&d.join("new.asdf"), named);
            s2.file().write_all(b"x").expect("write");
            drop(s);
            drop(s2);
            assert_eq!(d.list(), before, "named={named}");
            assert_eq!(std::fs::read(d.join("out.asdf")).expect("read"), b"old");
        }
    }

    #[test]
    fn planted_symlinks_at_named_fallback_names_are_never_followed() {
        let d = Scratch::new("plant-named");
        let elsewhere = Scratch::new("plant-named-victim");
        let victim = elsewhere.join("victim");
        std::fs::write(&victim, b"precious").expect("write");
        let (r1, r2, r3) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64, 0x9999_aaaa_bbbb_ccccu64);
        let n1 = OsString::from(OsStr::from_bytes(&temp_name(r1)[..NAME_LEN]));
        let n2 = OsString::from(OsStr::from_bytes(&temp_name(r2)[..NAME_LEN]));
        std::os::unix::fs::symlink(&victim, d.join(&n1)).expect("symlink");
        std::os::unix::fs::symlink(elsewhere.join("created-through-link"), d.join(&n2)).expect("symlink");
        FORCED_RAND.with(|f| *f.borrow_mut() = vec![r3, r2, r1]);
        let target = d.join("out");
        let mut s = stage(&target, true);
        assert!(FORCED_RAND.with(|f| f.borrow().is_empty()), "the planted names were not tried");
        s.file().write_all(b"payload").expect("write");
        let mut listed = d.list();
        listed.sort();
        let n3 = OsString::from(OsStr::from_bytes(&temp_name(r3)[..NAME_LEN]));
        let mut expect = vec![n1.clone(), n2.clone(), n3];
        expect.sort();
        assert_eq!(listed, expect);
        s.commit().expect("commit");
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        assert_eq!(elsewhere.list(), vec![OsString::from("victim")]);
        assert_eq!(std::fs::read(&target).expect("read"), b"payload");
        assert!(std::fs::symlink_metadata(d.join(&n1)).expect("lstat").file_type().is_symlink());
        assert!(std::fs::symlink_metadata(d.join(&n2)).expect("lstat").file_type().is_symlink());
        let mut expect = vec![n1, n2, OsString::from("out")];
        expect.sort();
        assert_eq!(d.list(), expect);
    }

    #[test]
    fn planted_symlinks_at_link_names_are_never_followed() {
        let d = Scratch::new("plant-link");
        let elsewhere = Scratch::new("plant-link-victim");
        let victim = elsewhere.join("victim");
        std::fs::write(&victim, b"precious").expect("write");
        let (r1, r2, r3) = (0xdead_beef_0000_0001u64, 0xdead_beef_0000_0002u64, 0xdead_beef_0000_0003u64);
        let n1 = OsString::from(OsStr::from_bytes(&temp_name(r1)[..NAME_LEN]));
        let n2 = OsString::from(OsStr::from_bytes(&temp_name(r2)[..NAME_LEN]));
        std::os::unix::fs::symlink(&victim, d.join(&n1)).expect("symlink");
        std::os::unix::fs::symlink(elsewhere.join("created-through-link"), d.join(&n2)).expect("symlink");
        // An existing target: the file goes through a temporary name (a new one is linked
        // to the target's name at once).
        let target = d.join("out");
        std::fs::write(&target, b"old").expect("write");
        let mut s = stage(&target, false);
        s.file().write_all(b"payload").expect("write");
        FORCED_RAND.with(|f| *f.borrow_mut() = vec![r3, r2, r1]);
        s.commit().expect("commit");
        assert!(FORCED_RAND.with(|f| f.borrow().is_empty()), "the planted names were not tried");
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        assert_eq!(elsewhere.list(), vec![OsString::from("victim")]);
        assert_eq!(std::fs::read(&target).expect("read"), b"payload");
        let mut expect = vec![n1, n2, OsString::from("out")];
        expect.sort();
        assert_eq!(d.list(), expect);
    }

    #[test]
    fn both_link_methods_work_and_refuse_existing_names() {
        for method in [LinkMethod::ProcFd, LinkMethod::EmptyPath] {
            let d = Scratch::new("link-method");
            let dir = open_dir(&d.0).expect("open dir");
            let mut f = open_unnamed(&dir).expect("O_TMPFILE");
            f.write_all(b"linked").expect("write");
            std::os::unix::fs::symlink(d.join("nowhere"), d.join("taken")).expect("symlink");
            let e = link_as(&f, &dir, c"taken", method).expect_err("linked over an existing name");
            assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{method:?}");
            assert!(!d.join("nowhere").exists());
            link_as(&f, &dir, c"fresh", method).expect("link");
            assert_eq!(std::fs::read(d.join("fresh")).expect("read"), b"linked", "{method:?}");
        }
    }

    #[test]
    fn two_stagings_of_one_path_last_commit_wins_whole() {
        for named in [false, true] {
            let d = Scratch::new("two");
            let target = d.join("out");
            let mut a = stage(&target, named);
            let mut b = stage(&target, named);
            a.file().write_all(&vec![b'A'; 1 << 20]).expect("write");
            b.file().write_all(&vec![b'B'; 300_000]).expect("write");
            b.commit().expect("commit b");
            assert_eq!(std::fs::read(&target).expect("read"), vec![b'B'; 300_000]);
            a.commit().expect("commit a");
            assert_eq!(std::fs::read(&target).expect("read"), vec![b'A'; 1 << 20]);
            assert_eq!(d.list(), vec![OsString::from("out")]);
        }
    }

    #[test]
    fn concurrent_commits_from_threads_never_mix() {
        let d = Scratch::new("threads");
        let target = d.join("out");
        std::thread::scope(|sc| {
            for (i, byte) in [b'x', b'y', b'z', b'w'].into_iter().enumerate() {
                let target = &target;
                sc.spawn(move || {
                    for round in 0..20 {
                        let mut s = stage(target, (i + round) % 2 == 0);
                        s.file().write_all(&vec![byte; 64 * 1024 + i]).expect("write");
                        s.commit().expect("commit");
                        let got = std::fs::read(target).expect("read");
                        let first = got[0];
                        assert!(got.iter().all(|&c| c == first), "mixed content");
                        let idx = [b'x', b'y', b'z', b'w'].iter().position(|&c| c == first).expect("known byte");
                        assert_eq!(got.len(), 64 * 1024 + idx, "partial content");
                    }
                });
            }
        });
        assert_eq!(d.list(), vec![OsString::from("out")]);
    }

    #[test]
    fn long_and_non_utf8_names_work() {
        for named in [false, true] {
            let d = Scratch::new("names");
            let long = "n".repeat(255);
            let odd = OsStr::from_bytes(b"caf\xe9-\xff\xfe.asdf");
            for name in [OsStr::new(&long), odd] {
                let target = d.join(name);
                let mut s = stage(&target, named);
                s.file().write_all(name.as_bytes()).expect("write");
                s.commit().expect("commit");
                assert_eq!(std::fs::read(&target).expect("read"), name.as_bytes());
            }
            let mut expect = vec![OsString::from(&long), odd.to_os_string()];
            expect.sort();
            assert_eq!(d.list(), expect);
        }
    }

    #[test]
    fn existing_mode_is_kept() {
        for named in [false, true] {
            for mode in [0o640, 0o755, 0o600, 0o604] {
                let d = Scratch::new("mode");
                let target = d.join("out");
                std::fs::write(&target, b"old").expect("write");
                std::fs::set_permissions(&target, Permissions::from_mode(mode)).expect("chmod");
                let mut s = stage(&target, named);
                s.file().write_all(b"new").expect("write");
                s.commit().expect("commit");
                let m = std::fs::metadata(&target).expect("stat");
                assert_eq!(m.mode() & 0o7777, mode, "named={named}");
                assert_eq!(std::fs::read(&target).expect("read"), b"new");
            }
        }
    }

    #[test]
    fn new_file_mode_is_0666_minus_umask() {
        let umask = current_umask();
        for named in [false, true] {
            let d = Scratch::new("newmode");
            let target = d.join("out");
            let mut s = stage(&target, named);
            s.file().write_all(b"new").expect("write");
            s.commit().expect("commit");
            assert_eq!(std::fs::metadata(&target).expect("stat").mode() & 0o7777, 0o666 & !umask);
        }
    }

    #[test]
    fn a_write_through_a_symlink_replaces_what_it_leads_to() {
        let d = Scratch::new("symlink-target");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        std::fs::write(d.join("sub/real"), b"real").expect("write");
        // A chain: link -> sub/mid -> real (relative to sub), and a dangling one.
        std::os::unix::fs::symlink("real", d.join("sub/mid")).expect("symlink");
        std::os::unix::fs::symlink("sub/mid", d.join("link")).expect("symlink");
        std::os::unix::fs::symlink("sub/new", d.join("dangling")).expect("symlink");
        for named in [false, true] {
            let mut s = stage(&d.join("link"), named);
            s.file().write_all(b"new").expect("write");
            s.commit().expect("commit");
            assert!(std::fs::symlink_metadata(d.join("link")).expect("lstat").file_type().is_symlink());
            assert!(std::fs::symlink_metadata(d.join("sub/mid")).expect("lstat").file_type().is_symlink());
            assert_eq!(std::fs::read(d.join("sub/real")).expect("read"), b"new");
            std::fs::write(d.join("sub/real"), b"real").expect("write");
        }
        let mut s = stage(&d.join("dangling"), false);
        s.file().write_all(b"made").expect("write");
        s.commit().expect("commit");
        assert!(std::fs::symlink_metadata(d.join("dangling")).expect("lstat").file_type().is_symlink());
        assert_eq!(std::fs::read(d.join("sub/new")).expect("read"), b"made");
        assert_eq!(listing(&d.join("sub")), ["mid", "new", "real"]);
        // A loop is an error, and nothing is written.
        std::os::unix::fs::symlink("loop2", d.join("loop1")).expect("symlink");
        std::os::unix::fs::symlink("loop1", d.join("loop2")).expect("symlink");
        let e = Staged::new(&d.join("loop1")).expect_err("a loop");
        assert!(e.to_string().contains("too many levels of symbolic links"), "{e}");
        assert!(std::fs::symlink_metadata(d.join("loop1")).expect("lstat").file_type().is_symlink());
    }

    #[test]
    fn folders_and_bad_paths_are_refused() {
        let d = Scratch::new("dirs");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        assert!(Staged::new(&d.join("sub")).is_err());
        assert!(Staged::new(&d.join("file/")).is_err());
        assert!(Staged::new(&d.join("missing-folder/x")).is_err());
        assert_eq!(d.list(), vec![OsString::from("sub")]);
    }

    #[test]
    fn sync_option_commits_and_cleans() {
        for named in [false, true] {
            let d = Scratch::new("sync");
            let target = d.join("out");
            let mut s = Staged::new_impl(&target, StageOptions { sync: true }, named).expect("stage");
            s.file().write_all(b"durable").expect("write");
            s.commit().expect("commit");
            assert_eq!(std::fs::read(&target).expect("read"), b"durable");
            assert_eq!(d.list(), vec![OsString::from("out")]);
        }
    }

    #[test]
    fn commit_all_commits_in_order_and_cleans_up_on_error() {
        let d1 = Scratch::new("all1");
        let d2 = Scratch::new("all2");
        let mut v = Vec::new();
        for (i, (d, named)) in [(&d1, false), (&d2, true), (&d1, true)].into_iter().enumerate() {
            let mut s = stage(&d.join(format!("f{i}")), named);
            s.file().write_all(format!("content {i}").as_bytes()).expect("write");
            v.push(s);
        }
        commit_all(v).expect("commit_all");
        assert_eq!(std::fs::read(d1.join("f0")).expect("read"), b"content 0");
        assert_eq!(std::fs::read(d2.join("f1")).expect("read"), b"content 1");
        assert_eq!(std::fs::read(d1.join("f2")).expect("read"), b"content 2");
        assert_eq!(d1.list(), vec![OsString::from("f0"), OsString::from("f2")]);

        // The second rename fails (its target became a non-empty folder): the first is done, nothing is left over.
        let mut a = stage(&d1.join("a"), false);
        a.file().write_all(b"a").expect("write");
        let mut b = stage(&d2.join("b"), true);
        b.file().write_all(b"b").expect("write");
        let mut c = stage(&d2.join("c"), false);
        c.file().write_all(b"c").expect("write");
        std::fs::create_dir(d2.join("b")).expect("mkdir");
        std::fs::write(d2.join("b").join("inside"), b"i").expect("write");
        let e = commit_all(vec![a, b, c]).expect_err("rename over a folder");
        assert!(e.to_string().contains("cannot rename"), "{e}");
        assert_eq!(std::fs::read(d1.join("a")).expect("read"), b"a");
        assert_eq!(d1.list(), vec![OsString::from("a"), OsString::from("f0"), OsString::from("f2")]);
        assert_eq!(d2.list(), vec![OsString::from("b"), OsString::from("f1")]);
    }

    #[test]
    fn more_named_stagings_than_registry_slots_work() {
        let _guard = REGISTRY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let d = Scratch::new("many");
        let mut v = Vec::new();
        for i in 0..(SLOTS + 10) {
            let mut s = stage(&d.join(format!("f{i:03}")), true);
            s.file().write_all(&i.to_le_bytes()).expect("write");
            v.push(s);
        }
        assert_eq!(d.list().len(), SLOTS + 10);
        let half = v.split_off(SLOTS / 2);
        drop(half);
        commit_all(v).expect("commit_all");
        let names = d.list();
        assert_eq!(names.len(), SLOTS / 2);
        assert!(names.iter().all(|n| !is_temp_name(n)));
    }

    #[test]
    fn registry_slots_are_freed() {
        let _guard = REGISTRY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let d = Scratch::new("slots");
        for _ in 0..(SLOTS * 3) {
            let mut s = stage(&d.join("x"), true);
            s.file().write_all(b"x").expect("write");
            s.commit().expect("commit");
            let s = stage(&d.join("y"), true);
            drop(s);
        }
        // If slots leaked, registration would now fail for every new name.
        let dir = open_dir(&d.0).expect("open");
        let slot = register(dir.as_raw_fd(), 1);
        assert!(slot.is_some(), "registry is full: slots leak");
        unregister(slot);
    }

    #[test]
    fn fifos_devices_and_sockets_are_refused_not_replaced() {
        let d = Scratch::new("special");
        let fifo = d.join("pipe");
        mkfifo(&fifo);
        let sock = d.join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        for (target, what) in
            [(fifo.as_path(), "a FIFO"), (Path::new("/dev/null"), "a device"), (sock.as_path(), "a socket")]
        {
            let e = Staged::new(target).expect_err("not a regular file");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        assert!(std::fs::symlink_metadata(&fifo).expect("lstat").file_type().is_fifo());
        assert!(std::fs::symlink_metadata(&sock).expect("lstat").file_type().is_socket());
    }

    // ---- Tests in a child process (re-executing this test binary) ----

    const CHILD_ENV: &str = "RASDF_STAGE_TEST_CHILD";
    const DIR_ENV: &str = "RASDF_STAGE_TEST_DIR";

    fn child_test_name() -> String {
        let m = module_path!();
        let rest = m.split_once("::").map_or(m, |(_, r)| r);
        format!("{rest}::child_entry")
    }

    fn spawn_child(mode: &str, dir: &Path) -> std::process::Child {
        Command::new(std::env::current_exe().expect("current_exe"))
            .args(["--exact", &child_test_name(), "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, mode)
            .env(DIR_ENV, dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child")
    }

    fn child_output(mode: &str, dir: &Path) -> (std::process::ExitStatus, String) {
        let out = spawn_child(mode, dir).wait_with_output().expect("child");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status, text)
    }

    /// Waits for the child's "READY" line; returns what it printed.
    fn wait_ready(child: &mut std::process::Child) -> String {
        let stdout = child.stdout.take().expect("stdout");
        let mut seen = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("line");
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("READY") {
                return seen;
            }
        }
        panic!("child never got ready: {seen}");
    }

    /// Not a test by itself: the body of the child processes of the tests below (does nothing without the env).
    #[test]
    fn child_entry() {
        let Ok(mode) = std::env::var(CHILD_ENV) else { return };
        let dir = PathBuf::from(std::env::var_os(DIR_ENV).expect("dir"));
        match mode.as_str() {
            "kill9" | "sigterm-named" => {
                if mode == "sigterm-named" {
                    // What a binary's handler does (see the command line's signals module).
                    extern "C" fn on_term(sig: libc::c_int) {
                        remove_pending_files();
                        // SAFETY: async-signal-safe calls, to die of the signal.
                        unsafe {
                            libc::signal(sig, libc::SIG_DFL);
                            libc::raise(sig);
                        }
                    }
                    // SAFETY: sets a handler in this single-test child.
                    unsafe { libc::signal(libc::SIGTERM, on_term as extern "C" fn(libc::c_int) as libc::sighandler_t) };
                }
                let mut s = stage(&dir.join("big.asdf"), mode == "sigterm-named");
                let chunk = vec![0x5au8; 1 << 20];
                // Writes until killed (rewriting the first 32 MiB over and over, so the disk does not fill).
                for i in 0u64.. {
                    if i % 32 == 0 {
                        s.file().seek(SeekFrom::Start(0)).expect("seek");
                    }
                    s.file().write_all(&chunk).expect("write");
                    if i == 4 {
                        println!("READY");
                        io::stdout().flush().expect("flush");
                    }
                }
            }
            "fsize" | "fsize-named" => {
                // SAFETY: what a binary does (see the command line's signals module), in this child.
                unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
                // SAFETY: plain get/setrlimit on a local struct.
                unsafe {
                    let mut lim: libc::rlimit = std::mem::zeroed();
                    assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim), 0);
                    lim.rlim_cur = 1 << 20;
                    assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
                }
                let mut s = stage(&dir.join("big.asdf"), mode == "fsize-named");
                let e = s.file().write_all(&vec![1u8; 3 << 20]).expect_err("write beyond RLIMIT_FSIZE");
                assert_eq!(raw_os_error(&e), Some(libc::EFBIG), "{e}");
                println!("EFBIG-OK");
                drop(s);
                assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
                println!("CLEAN-OK");
            }
            "umask" => {
                for (mask, expect) in [(0o027, 0o640), (0o002, 0o664), (0o077, 0o600)] {
                    // SAFETY: umask is process-wide: fine in this single-test child.
                    unsafe { libc::umask(mask) };
                    for named in [false, true] {
                        let target = dir.join(format!("m{mask:o}-{named}"));
                        let mut s = stage(&target, named);
                        s.file().write_all(b"x").expect("write");
                        s.commit().expect("commit");
                        let got = std::fs::metadata(&target).expect("stat").mode() & 0o7777;
                        assert_eq!(got, expect, "umask {mask:o} named={named}");
                    }
                }
                println!("UMASK-OK");
            }
            other => panic!("unknown child mode {other}"),
        }
    }

    #[test]
    fn kill_9_during_the_write_leaves_nothing() {
        let d = Scratch::new("kill9");
        let mut child = spawn_child("kill9", &d.0);
        wait_ready(&mut child);
        child.kill().expect("kill -9");
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(d.list().is_empty(), "{:?}", d.list());
    }

    #[test]
    fn sigterm_with_cleanup_handlers_removes_named_temp_files() {
        let d = Scratch::new("sigterm");
        let mut child = spawn_child("sigterm-named", &d.0);
        wait_ready(&mut child);
        let names = d.list();
        assert!(names.len() == 1 && is_temp_name(&names[0]), "expected one named temp file: {names:?}");
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM), "the child must still die of SIGTERM");
        assert!(d.list().is_empty(), "{:?}", d.list());
    }

    #[test]
    fn file_size_limit_gives_efbig_and_leaves_nothing() {
        for mode in ["fsize", "fsize-named"] {
            let d = Scratch::new(mode);
            let (status, text) = child_output(mode, &d.0);
            assert!(status.success() && text.contains("EFBIG-OK") && text.contains("CLEAN-OK"), "{status}: {text}");
            assert!(d.list().is_empty(), "{:?}", d.list());
        }
    }

    #[test]
    fn new_file_mode_follows_the_umask_in_force() {
        let d = Scratch::new("umask");
        let (status, text) = child_output("umask", &d.0);
        assert!(status.success() && text.contains("UMASK-OK"), "{status}: {text}");
    }
}
