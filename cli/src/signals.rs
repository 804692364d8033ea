//! What the command-line tools set for the whole process, and a library must not: the
//! handling of signals.
//!
//! - `SIGXFSZ` is ignored, so that a write beyond `ulimit -f` fails with `EFBIG` (an error
//!   the library reports and cleans up after) instead of killing the process.
//! - `SIGINT`, `SIGTERM` and `SIGHUP` remove the temporary files of writes under way (the
//!   library's named ones, [`rasdf::write::remove_pending_files`], and the files and
//!   folders registered here: an output staged for standard output or a FIFO, `edit`'s
//!   copy), then end the process of the signal. While an editor runs, a Ctrl-C typed at
//!   the terminal (which reaches the editor too) is the editor's; `SIGTERM` and `SIGHUP`
//!   are passed on to it.
//!
//! - The soft limit of open files is raised to the hard one: a write stages every file
//!   it puts in place (an exploded file's parts) open until all are renamed together, one
//!   descriptor each (and one for its folder), so a file of thousands of arrays needs
//!   thousands at once.
//!
//! Elsewhere than Unix, nothing is installed: a staged write is removed when dropped.

use std::path::Path;

/// Installs the handlers (see the [module](self)); a signal ignored already (`nohup`)
/// stays ignored. Call it early in `main`, before any thread is started.
pub fn install() {
    #[cfg(unix)]
    unix::install();
}

/// A path removed when a signal ends the process, until dropped.
pub struct Registered {
    #[cfg(unix)]
    slot: Option<usize>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        #[cfg(unix)]
        unix::unregister(self.slot);
    }
}

/// Registers `path`, a file or a folder (an empty one: files first, then folders, are
/// removed), to be removed if a signal ends the process while the result lives.
pub fn register(path: &Path) -> Registered {
    #[cfg(unix)]
    return Registered { slot: unix::register(path) };
    #[cfg(not(unix))]
    {
        let _ = path;
        Registered {}
    }
}

/// Marks the editor of process `pid` as running, until dropped (see the [module](self)).
pub struct Editing(());

/// See [`Editing`].
pub fn editing(pid: u32) -> Editing {
    #[cfg(unix)]
    unix::EDITOR.store(i32::try_from(pid).unwrap_or(0), std::sync::atomic::Ordering::SeqCst);
    #[cfg(not(unix))]
    let _ = pid;
    Editing(())
}

impl Drop for Editing {
    fn drop(&mut self) {
        #[cfg(unix)]
        unix::EDITOR.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(unix)]
mod unix {
    use std::ffi::CString;
    use std::path::Path;
    use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

    /// The editor's process id while it runs (0: none).
    pub(super) static EDITOR: AtomicI32 = AtomicI32::new(0);

    const SLOTS: usize = 64;
    /// Registered paths as C strings (null: a free slot). A string is never freed once
    /// stored (a handler on another thread may be reading it): a few bytes a write.
    static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

    pub(super) fn register(path: &Path) -> Option<usize> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
        for (i, slot) in PATHS.iter().enumerate() {
            if slot.compare_exchange(std::ptr::null_mut(), c, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                return Some(i);
            }
        }
        None // every slot taken: the path is then only removed by its owner
    }

    pub(super) fn unregister(slot: Option<usize>) {
        if let Some(s) = slot.and_then(|i| PATHS.get(i)) {
            s.store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }

    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    /// The soft limit of open files raised to the hard one (or to 10 240, macOS's
    /// `OPEN_MAX`, where the system refuses more); left as it is when that fails.
    fn raise_open_files() {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit read and write the local struct only.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= lim.rlim_max {
                return;
            }
            let was = lim.rlim_cur;
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 && was < 10_240 {
                lim.rlim_cur = lim.rlim_max.min(10_240);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
    }

    pub(super) fn install() {
        raise_open_files();
        // SAFETY: zeroed `sigaction`s are valid values; sigaction only reads and writes
        // the structures given.
        unsafe {
            let mut ignore: libc::sigaction = std::mem::zeroed();
            ignore.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ignore.sa_mask);
            libc::sigaction(libc::SIGXFSZ, &ignore, std::ptr::null_mut());
            for sig in SIGNALS {
                let mut was: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut was) != 0 || was.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                    as libc::sighandler_t;
                libc::sigemptyset(&mut sa.sa_mask);
                for s in SIGNALS {
                    libc::sigaddset(&mut sa.sa_mask, s);
                }
                sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    }

    /// Whether a signal's `si_code` says the kernel (the terminal) sent it, not `kill`.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn sent_by_kernel(code: libc::c_int) -> bool {
        code == libc::SI_KERNEL
    }

    /// macOS and the BSDs mark what `kill` and `sigqueue` send `SI_USER` (0x10001) and
    /// `SI_QUEUE` (0x10002) (`<sys/signal.h>`; the libc crate names neither there); what
    /// the terminal sends is neither.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn sent_by_kernel(code: libc::c_int) -> bool {
        !matches!(code, 0x10001 | 0x10002)
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        let editor = EDITOR.load(Ordering::SeqCst);
        // SAFETY: the kernel hands a valid `siginfo_t` to an SA_SIGINFO handler.
        let from_terminal = !info.is_null() && sent_by_kernel(unsafe { (*info).si_code });
        if sig == libc::SIGINT && editor != 0 && from_terminal {
            // Ctrl-C: the editor's (the terminal sends it to the whole foreground group).
            return;
        }
        // SAFETY: kill, unlink, rmdir, signal and raise are async-signal-safe; the
        // strings read are never freed.
        unsafe {
            if editor != 0 {
                libc::kill(editor, sig);
            }
            for remove in [libc::unlink as unsafe extern "C" fn(*const libc::c_char) -> libc::c_int, libc::rmdir] {
                for slot in &PATHS {
                    let p = slot.load(Ordering::SeqCst);
                    if !p.is_null() {
                        remove(p);
                    }
                }
            }
        }
        rasdf::write::remove_pending_files();
        // SAFETY: the default disposition, then the signal again, so that the process
        // dies of it with the usual status.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}
