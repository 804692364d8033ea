//! Memory-mapped reads that survive the file being cut short under them.
//!
//! A read-only map of a file faults when another process truncates the file (`truncate`,
//! `cp` over it, an editor saving in place) and the reader touches a page past the new
//! end: the kernel sends `SIGBUS`, whose default action kills the process. This module
//! turns that into an error the caller sees:
//!
//! * [`GuardedMap`] owns a read-only map of a file (or of a range of one) and registers
//!   its address range in a process-wide, fixed-capacity, lock-free registry.
//! * The first guarded map installs a `SIGBUS` handler. When a fault lies inside a
//!   registered range, the handler marks that map as faulted and maps anonymous zero
//!   pages over it, from the faulting page to the end of the map, then returns: the
//!   interrupted read resumes and reads zeros. A fault anywhere else goes to the handler
//!   that was installed before (Rust's own, in a Rust program), or to the default action:
//!   a genuine bug still kills the process with `SIGBUS`, as it did without this module.
//! * [`FileBytes`] is what a library opens a file with: a guarded map when the file is
//!   large enough for a map to pay and a guard is available, otherwise the bytes read
//!   into a buffer.
//!
//! # What a guarded read promises
//!
//! * It never dies of `SIGBUS` because the file shrank: a byte whose page vanished reads
//!   as 0. Once a map has faulted, every byte from the first vanished page to the end of
//!   the map reads as 0 for the rest of the map's life ([`Changed::offset`] says where
//!   that starts); bytes before it may still be read from the file.
//! * Bytes read from a map that faulted are not the file's: whoever reads must call
//!   [`GuardedMap::check`] (or [`GuardedMap::faulted`]) *after* reading, and discard what
//!   it computed if that reports a change. A fault is sticky: once faulted, a map stays
//!   faulted. [`GuardedMap::read`] does the read-then-check in one call.
//! * A zero-copy view kept for long (a borrowed array) must be checked again before its
//!   contents are trusted or handed on: a truncation can happen at any time, including
//!   after an earlier check.
//! * A check that passes says only that no read of this map touched a vanished page so
//!   far. It does not say that the file was not rewritten: a file overwritten in place
//!   (same length, or regrown before the reader got to the pages it rewrote) shows its
//!   new bytes through the map with no fault at all, and a page at the end of a file
//!   being rewritten may read as zeros past its momentary end without a fault. That is
//!   the same for `read(2)`: a file that changes while read yields mixed contents. Use a
//!   checksum, or compare the file's length and times before and after, where that
//!   matters.
//! * Bytes handed to the kernel straight from the map (`write(2)` from a map slice, for
//!   example) do not fault: the system call fails with `EFAULT` (an `io::Error` "Bad
//!   address") and the map is not marked.
//!
//! # Costs (measured; see the crate's benchmark)
//!
//! The guard costs nothing on the read path: [`GuardedMap::as_slice`] is the map's own
//! slice, with no check and no indirection (summing a 1 GiB file in the page cache runs
//! at the same speed, about 10 GB/s, through a plain and a guarded map, where `pread`
//! in 4 MiB pieces reaches about 6). Opening registers the range (about 50 ns of atomic
//! operations, plus a 0.2 µs `sigaction` query to see the handler is still in place)
//! and dropping unregisters it, next to `mmap` and `munmap` at 3 to 5 µs each. A handled
//! fault costs 5 µs, or up to 30 µs with every slot taken.
//!
//! # Caveats
//!
//! * Linux only (glibc or musl). Elsewhere [`GuardedMap::open`] reports
//!   [`Unavailable::Unsupported`] and [`FileBytes`] reads into a buffer.
//! * The handler is process-wide. If code installs its own `SIGBUS` handler after the
//!   first guarded map was made (Python's `faulthandler`, which pytest enables, does),
//!   that handler sees the faults first; unless it chains to the one it replaced, maps
//!   already open are no longer guarded. New opens see the replacement and report
//!   [`Unavailable::HandlerReplaced`], so [`FileBytes`] falls back to reading.
//! * When chaining to the previous handler, its `sa_mask` and `SA_RESETHAND` are not
//!   applied.
//! * The handler runs on the signal stack when the thread has one (`SA_ONSTACK`; Rust
//!   gives the threads it starts one), else on the thread's own stack: it needs well
//!   under a kilobyte.
//! * Rust's rules assume memory behind a `&[u8]` does not change. A map of a file that
//!   another process changes breaks that assumption whatever this module does (that is
//!   why mapping is `unsafe`); the guard only turns the crash into zeros and a flag. Code
//!   reading a map must not rely on reading the same byte twice giving the same value
//!   for its memory safety (safe Rust with bounds-checked indexing does not).
//! * The registry holds [`CAPACITY`] maps at once, a quarter of the kernel's default
//!   `vm.max_map_count` (65530 maps in all for a process). A program that keeps many
//!   files open should read the small ones ([`FileBytes`] does below [`MIN_MAP_LEN`])
//!   and drop the maps it no longer reads, not keep one map per file.

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

/// How many guarded maps can be registered at once: a quarter of the maps the kernel
/// grants a process by default (`vm.max_map_count` is 65530). A process whose maps run
/// out fails far from here (an allocation that needs a map fails, and Rust aborts on a
/// failed allocation), so the guarded maps stop well short of the limit and leave the
/// rest to everything else; past it [`FileBytes`] reads files instead. The slots take
/// 640 KiB of zero-initialised static memory, unallocated until used, and the fault
/// handler visits only the slots taken (about 30 µs with all taken, measured).
pub const CAPACITY: usize = 1 << 14;

/// Files shorter than this are read into a buffer by [`FileBytes::open`] rather than
/// mapped. Opening, reading every byte and closing a file in the page cache measured
/// (µs, guarded map / read into a `Vec`): 4 KiB 7.8 / 1.9, 64 KiB 11 / 6.0, 128 KiB
/// 17 / 11, 256 KiB 15 / 22, 1 MiB 46 / 90. A map also costs one of the process's maps
/// and a registry slot, and reading leaves nothing to go wrong later.
pub const MIN_MAP_LEN: u64 = 256 << 10;

/// Why a guarded map could not be made. None of these is an I/O error: the caller can
/// read the file into a buffer instead (as [`FileBytes`] does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// This platform has no guard (it is implemented for Linux with glibc or musl).
    Unsupported,
    /// All [`CAPACITY`] registry slots are taken by live maps.
    RegistryFull,
    /// The `SIGBUS` handler could not be installed; the value is the `errno`.
    HandlerInstall(i32),
    /// Another `SIGBUS` handler replaced this module's after it was installed, so a new
    /// map would not be guarded.
    HandlerReplaced,
    /// The kernel refused the map for lack of maps or address space (`ENOMEM`: the
    /// process reached `vm.max_map_count`, for example).
    MapLimit,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Unsupported => f.write_str("guarded memory maps are not supported on this platform"),
            Unavailable::RegistryFull => {
                write!(f, "all {CAPACITY} guarded memory map slots are in use")
            }
            Unavailable::HandlerInstall(errno) => {
                write!(f, "the SIGBUS handler could not be installed (errno {errno})")
            }
            Unavailable::HandlerReplaced => f.write_str("another SIGBUS handler replaced the memory map guard's"),
            Unavailable::MapLimit => {
                f.write_str("the system refused another memory map (vm.max_map_count or address space)")
            }
        }
    }
}

impl std::error::Error for Unavailable {}

/// The error of [`GuardedMap::open`] and [`GuardedMap::open_range`].
#[derive(Debug)]
pub enum OpenError {
    /// An I/O error: the file's length could not be read, the range lies past its end,
    /// or the map failed for a reason other than a limit.
    Io(io::Error),
    /// No guarded map can be made now; reading the file instead is fine.
    Unavailable(Unavailable),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Io(e) => e.fmt(f),
            OpenError::Unavailable(u) => u.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Io(e) => Some(e),
            OpenError::Unavailable(u) => Some(u),
        }
    }
}

impl From<OpenError> for io::Error {
    fn from(e: OpenError) -> io::Error {
        match e {
            OpenError::Io(e) => e,
            OpenError::Unavailable(u) => io::Error::new(io::ErrorKind::Unsupported, u),
        }
    }
}

/// A guarded map's file shrank while mapped (truncated, or rewritten by another process)
/// and a read touched a page that had vanished, or the kernel could not read a page of it
/// (an I/O error on a network or failing disk is reported the same way): bytes read from
/// the map are not to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    offset: u64,
}

impl Changed {
    /// The offset in the file from which every byte of the map now reads as 0 (the
    /// start of the lowest page found vanished, or of the map if that is later).
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the file changed while it was being read: its bytes from offset {} on were gone \
             (truncated or rewritten by another process, or unreadable)",
            self.offset
        )
    }
}

impl std::error::Error for Changed {}

impl From<Changed> for io::Error {
    fn from(c: Changed) -> io::Error {
        io::Error::new(io::ErrorKind::UnexpectedEof, c)
    }
}

/// One registered map. The handler reads `start` and `end` under the sequence lock
/// `seq` (odd while a writer changes them), so that it never matches a range torn
/// between an old registration and a new one.
struct Slot {
    seq: AtomicUsize,
    /// First address of the map's pages.
    start: AtomicUsize,
    /// One past the last address of the map's pages (0 when the slot is free).
    end: AtomicUsize,
    /// How many faults the handler took in the range since it was registered.
    faults: AtomicU64,
    /// The lowest page address the handler replaced with zeros (`usize::MAX`: none).
    first_fault: AtomicUsize,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            faults: AtomicU64::new(0),
            first_fault: AtomicUsize::new(0),
        }
    }
}

/// The registry: slots, a bitmap of the slots taken, where to look for a free one first,
/// one past the highest slot ever published (the handler scans no further), and how many
/// are taken.
static SLOTS: [Slot; CAPACITY] = [const { Slot::new() }; CAPACITY];
static TAKEN: [AtomicU64; CAPACITY / 64] = [const { AtomicU64::new(0) }; CAPACITY / 64];
static NEXT_WORD: AtomicUsize = AtomicUsize::new(0);
static HIGH: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Takes a free slot, without locks: a claim is one compare-and-swap on a bitmap word,
/// starting from the word that last had room.
fn claim() -> Option<usize> {
    let words = TAKEN.len();
    let hint = NEXT_WORD.load(Ordering::Relaxed) % words;
    for k in 0..words {
        let w = (hint + k) % words;
        let word = &TAKEN[w];
        let mut seen = word.load(Ordering::Relaxed);
        while seen != u64::MAX {
            let bit = (!seen).trailing_zeros();
            match word.compare_exchange_weak(seen, seen | 1 << bit, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => {
                    NEXT_WORD.store(w, Ordering::Relaxed);
                    LIVE.fetch_add(1, Ordering::Relaxed);
                    return Some(w * 64 + bit as usize);
                }
                Err(now) => seen = now,
            }
        }
    }
    None
}

/// Gives a slot back (after [`withdraw`]).
fn release(slot: usize) {
    if let Some(word) = TAKEN.get(slot / 64) {
        word.fetch_and(!(1u64 << (slot % 64)), Ordering::Release);
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Publishes `[start, end)` in a claimed slot, with no fault yet.
fn publish(slot: usize, start: usize, end: usize) {
    let Some(s) = SLOTS.get(slot) else { return };
    HIGH.fetch_max(slot + 1, Ordering::SeqCst);
    let seq = s.seq.load(Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.start.store(start, Ordering::Relaxed);
    s.end.store(end, Ordering::Relaxed);
    s.faults.store(0, Ordering::Relaxed);
    s.first_fault.store(usize::MAX, Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(2), Ordering::Release);
}

/// Empties a claimed slot: the handler no longer matches its range. Must come before
/// the range is unmapped, lest a fault in a new, unguarded map at the same address be
/// taken for one of this map.
fn withdraw(slot: usize) {
    let Some(s) = SLOTS.get(slot) else { return };
    let seq = s.seq.load(Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.start.store(0, Ordering::Relaxed);
    s.end.store(0, Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(2), Ordering::Release);
}

/// How many guarded maps are registered now.
pub fn registered() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Installs the `SIGBUS` handler if it is not yet, and tells whether it is still the one
/// in place. [`GuardedMap::open`] calls it; a program may call it early, before other
/// code installs handlers, so that those chain to this one.
///
/// # Errors
/// Why no guarded map can be made.
pub fn install() -> Result<(), Unavailable> {
    sys::install()
}

/// A read-only, guarded memory map of a file or of a range of one: see the module
/// documentation for what reading it promises. Empty maps take no slot and no map.
pub struct GuardedMap {
    map: Option<Registered>,
    /// The file offset of `as_slice()[0]`.
    offset: u64,
}

/// A map with its slot; the slot is withdrawn before the map is unmapped (fields drop
/// after `drop` runs).
struct Registered {
    map: memmap2::Mmap,
    slot: usize,
    /// The first address of the map's pages, and its offset in the file.
    start: usize,
    start_offset: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        withdraw(self.slot);
        release(self.slot);
    }
}

impl fmt::Debug for GuardedMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedMap")
            .field("offset", &self.offset)
            .field("len", &self.len())
            .field("faults", &self.generation())
            .finish()
    }
}

impl GuardedMap {
    /// Maps the whole of `file` (its length now), read-only and guarded. The file may be
    /// closed afterwards: the map keeps its own reference.
    ///
    /// # Errors
    /// [`OpenError::Io`] when the length cannot be read or the map fails;
    /// [`OpenError::Unavailable`] when no guard is to be had (read the file instead).
    pub fn open(file: &File) -> Result<GuardedMap, OpenError> {
        let len = file.metadata().map_err(OpenError::Io)?.len();
        GuardedMap::map(file, 0, len)
    }

    /// Maps `len` bytes of `file` from byte `offset`, read-only and guarded.
    ///
    /// # Errors
    /// As [`GuardedMap::open`]; also `InvalidInput` when the range goes past the end of
    /// the file (every read there would fault) or does not fit in memory.
    pub fn open_range(file: &File, offset: u64, len: u64) -> Result<GuardedMap, OpenError> {
        let file_len = file.metadata().map_err(OpenError::Io)?.len();
        let end = offset.checked_add(len);
        if end.is_none_or(|end| end > file_len) {
            return Err(OpenError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bytes {offset}..+{len} lie past the end of the file ({file_len} bytes)"),
            )));
        }
        GuardedMap::map(file, offset, len)
    }

    /// Maps a range known to lie inside the file.
    fn map(file: &File, offset: u64, len: u64) -> Result<GuardedMap, OpenError> {
        let Ok(len_usize) = usize::try_from(len) else {
            return Err(OpenError::Io(io::Error::new(io::ErrorKind::InvalidInput, "the range does not fit in memory")));
        };
        if len == 0 {
            return Ok(GuardedMap { map: None, offset });
        }
        sys::install().map_err(OpenError::Unavailable)?;
        let slot = claim().ok_or(OpenError::Unavailable(Unavailable::RegistryFull))?;
        // SAFETY: the map is read-only and private to this value. Another process may
        // still change or truncate the file under it: the handler turns the faults of a
        // truncation into zeros and a flag, and the module documentation says what a
        // reader must check. Nothing in this process writes through the map.
        let mapped = unsafe { memmap2::MmapOptions::new().offset(offset).len(len_usize).map(file) };
        let map = match mapped {
            Ok(map) => map,
            Err(e) => {
                release(slot);
                if e.raw_os_error() == Some(sys::ENOMEM) {
                    return Err(OpenError::Unavailable(Unavailable::MapLimit));
                }
                return Err(OpenError::Io(e));
            }
        };
        let page = sys::page_size();
        let in_page = usize::try_from(offset % page as u64).unwrap_or(0);
        let ptr = map.as_ptr() as usize;
        let start = ptr - in_page;
        let end = (ptr + len_usize).next_multiple_of(page);
        publish(slot, start, end);
        Ok(GuardedMap { map: Some(Registered { map, slot, start, start_offset: offset - in_page as u64 }), offset })
    }

    /// The mapped bytes. After a truncation some may read as zeros: check afterwards
    /// ([`GuardedMap::check`]). Reading costs exactly what reading a plain map costs.
    pub fn as_slice(&self) -> &[u8] {
        match &self.map {
            Some(r) => &r.map,
            None => &[],
        }
    }

    /// Lets the kernel drop the whole pages inside `range` (of [`GuardedMap::as_slice`])
    /// from this process's memory: they stay in the page cache, and a later read faults
    /// them in again with the same bytes (the map is read-only, so no page of it holds
    /// anything of its own). For bytes read once, such as a compressed block being
    /// decoded, so that they do not add to the process's resident memory.
    pub fn release(&self, range: std::ops::Range<usize>) {
        const PAGE: usize = 4096;
        let Some(bytes) = self.as_slice().get(range) else { return };
        let start = (bytes.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (bytes.as_ptr() as usize + bytes.len()) / PAGE * PAGE;
        #[cfg(unix)]
        if end > start {
            // SAFETY: the range lies inside this map (whole pages within `bytes`), which is
            // read-only and file-backed (or, after a fault, zero pages mapped over it): the
            // advice changes what is resident, never what the bytes read as. A failure
            // (a page size other than 4 KiB, say) leaves the pages resident.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }

    /// The number of bytes mapped.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offset in the file of the first mapped byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn slot(&self) -> Option<(&Slot, &Registered)> {
        let r = self.map.as_ref()?;
        Some((SLOTS.get(r.slot)?, r))
    }

    /// How many faults the map has taken since it was made: a number that changes when
    /// the file shrinks under a read. Take it before some work and pass it to
    /// [`GuardedMap::check_since`] after, to learn whether that work read vanished pages.
    pub fn generation(&self) -> u64 {
        // Orders the caller's reads of the map before the load (the handler that bumps
        // the count runs in the middle of one of those reads).
        fence(Ordering::SeqCst);
        self.slot().map_or(0, |(s, _)| s.faults.load(Ordering::SeqCst))
    }

    /// Whether a read of the map ever touched a page the file no longer had. Once true,
    /// it stays true.
    pub fn faulted(&self) -> bool {
        self.generation() != 0
    }

    /// `Ok` if no read of the map touched a vanished page yet.
    ///
    /// # Errors
    /// [`Changed`] when one did: what was read is not the file's.
    pub fn check(&self) -> Result<(), Changed> {
        self.check_since(0)
    }

    /// `Ok` if the map took no fault since [`GuardedMap::generation`] returned
    /// `generation`. Faults are sticky: bytes read before that and after a fault (from
    /// [`Changed::offset`] on) are zeros too, so [`GuardedMap::check`] is the one to use
    /// unless the map is known to have faulted already and only a later window matters.
    ///
    /// # Errors
    /// [`Changed`] when it did.
    pub fn check_since(&self, generation: u64) -> Result<(), Changed> {
        if self.generation() == generation { Ok(()) } else { Err(self.changed()) }
    }

    /// Runs `read` over the mapped bytes and checks the map afterwards.
    ///
    /// # Errors
    /// [`Changed`] when a read touched a vanished page (before or during `read`): its
    /// result is then dropped.
    pub fn read<R>(&self, read: impl FnOnce(&[u8]) -> R) -> Result<R, Changed> {
        let out = read(self.as_slice());
        self.check().map(|()| out)
    }

    fn changed(&self) -> Changed {
        let offset = match self.slot() {
            Some((s, r)) => {
                let first = s.first_fault.load(Ordering::SeqCst);
                let from = r.start_offset.saturating_add(first.saturating_sub(r.start) as u64);
                from.clamp(self.offset, self.offset + self.len() as u64)
            }
            None => self.offset,
        };
        Changed { offset }
    }
}

/// The bytes of a file: a guarded map, or read into a buffer when the file is small or
/// no guard is to be had. What a library keeps of an opened file.
#[derive(Debug)]
pub enum FileBytes {
    /// Mapped and guarded: check after reading ([`FileBytes::check`]).
    Mapped(GuardedMap),
    /// Read into memory at open: immune to later changes of the file.
    Read(Vec<u8>),
    /// A remote object's length, of which only the parts fetched at open are present:
    /// the rest reads as zeros (see `AsdfFile`'s remote reading).
    #[cfg(feature = "remote")]
    Sparse(super::remote::SparseBytes),
}

impl FileBytes {
    /// Maps `file` if it has at least [`MIN_MAP_LEN`] bytes and a guard is available;
    /// otherwise reads it.
    ///
    /// # Errors
    /// I/O errors; `UnexpectedEof` if the file shrinks while read.
    pub fn open(file: &File) -> io::Result<FileBytes> {
        FileBytes::open_with(file, MIN_MAP_LEN)
    }

    /// As [`FileBytes::open`], mapping files of at least `min_map_len` bytes
    /// (`u64::MAX`: never map).
    ///
    /// # Errors
    /// As [`FileBytes::open`].
    pub fn open_with(file: &File, min_map_len: u64) -> io::Result<FileBytes> {
        let len = file.metadata()?.len();
        if len >= min_map_len {
            match GuardedMap::map(file, 0, len) {
                Ok(map) => return Ok(FileBytes::Mapped(map)),
                Err(OpenError::Unavailable(_)) => {}
                Err(OpenError::Io(e)) => return Err(e),
            }
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "the file does not fit in memory"))?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, format!("no memory for the file's {len} bytes")))?;
        bytes.resize(len, 0);
        sys::read_exact_at(file, &mut bytes).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was being read")
            }
            _ => e,
        })?;
        Ok(FileBytes::Read(bytes))
    }

    /// The bytes (see [`GuardedMap::as_slice`] for a mapped file).
    pub fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m.as_slice(),
            FileBytes::Read(v) => v,
            #[cfg(feature = "remote")]
            FileBytes::Sparse(s) => s.as_slice(),
        }
    }

    /// Drops the pages of `range` from the process's memory when the bytes are mapped
    /// (see [`GuardedMap::release`]); nothing when they were read.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let FileBytes::Mapped(m) = self {
            m.release(range);
        }
    }

    /// Whether the bytes are mapped.
    pub fn is_mapped(&self) -> bool {
        matches!(self, FileBytes::Mapped(_))
    }

    /// `Ok` unless the bytes are mapped and a read touched a page the file no longer had.
    ///
    /// # Errors
    /// [`Changed`] as [`GuardedMap::check`].
    pub fn check(&self) -> Result<(), Changed> {
        match self {
            FileBytes::Mapped(m) => m.check(),
            _ => Ok(()),
        }
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
mod sys {
    //! The handler and what it needs: Linux.

    use super::{SLOTS, TAKEN, Unavailable};
    use std::ffi::c_void;
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::FileExt;
    use std::ptr;
    use std::sync::Once;
    use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering, fence};

    pub(super) const ENOMEM: i32 = libc::ENOMEM;

    static INSTALL: Once = Once::new();
    /// 0 once installed, else the `errno` of the failure (-1: not tried yet).
    static INSTALL_ERRNO: AtomicI32 = AtomicI32::new(-1);
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    /// The handler in place before ours, and its flags.
    static PREV_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
    static PREV_FLAGS: AtomicI32 = AtomicI32::new(0);

    pub(super) fn page_size() -> usize {
        PAGE.load(Ordering::Relaxed)
    }

    pub(super) fn read_exact_at(file: &File, buf: &mut [u8]) -> io::Result<()> {
        file.read_exact_at(buf, 0)
    }

    fn ours() -> libc::sighandler_t {
        on_sigbus as *const () as libc::sighandler_t
    }

    /// The current `SIGBUS` action, or the `errno` of the failure.
    fn current() -> Result<libc::sigaction, i32> {
        // SAFETY: an all-zero `sigaction` is a valid value of the plain C struct.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a query (null new action) into a valid, writable struct.
        let rc = unsafe { libc::sigaction(libc::SIGBUS, ptr::null(), &mut old) };
        if rc == 0 { Ok(old) } else { Err(io::Error::last_os_error().raw_os_error().unwrap_or(-1)) }
    }

    fn install_once() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(page) = usize::try_from(page)
            && page.is_power_of_two()
        {
            PAGE.store(page, Ordering::Relaxed);
        }
        // The previous action is saved before ours is installed, so that the handler
        // never runs without knowing where to chain.
        let old = match current() {
            Ok(old) => old,
            Err(errno) => {
                INSTALL_ERRNO.store(errno, Ordering::SeqCst);
                return;
            }
        };
        PREV_FLAGS.store(old.sa_flags, Ordering::SeqCst);
        PREV_HANDLER.store(old.sa_sigaction, Ordering::SeqCst);
        // SAFETY: an all-zero `sigaction` is a valid value of the plain C struct.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = ours();
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
        // SAFETY: `sa_mask` is a valid, writable signal set.
        unsafe { libc::sigemptyset(&mut new.sa_mask) };
        let mut replaced = old;
        // SAFETY: `new` is a complete action whose handler has the SA_SIGINFO signature
        // and is async-signal-safe; `replaced` is writable.
        let rc = unsafe { libc::sigaction(libc::SIGBUS, &new, &mut replaced) };
        if rc != 0 {
            INSTALL_ERRNO.store(io::Error::last_os_error().raw_os_error().unwrap_or(-1), Ordering::SeqCst);
            return;
        }
        // Another thread may have installed a handler between the query and ours.
        if replaced.sa_sigaction != old.sa_sigaction {
            PREV_FLAGS.store(replaced.sa_flags, Ordering::SeqCst);
            PREV_HANDLER.store(replaced.sa_sigaction, Ordering::SeqCst);
        }
        INSTALL_ERRNO.store(0, Ordering::SeqCst);
    }

    pub(super) fn install() -> Result<(), Unavailable> {
        INSTALL.call_once(install_once);
        match INSTALL_ERRNO.load(Ordering::SeqCst) {
            0 => {}
            errno => return Err(Unavailable::HandlerInstall(errno)),
        }
        match current() {
            Ok(now) if now.sa_sigaction == ours() => Ok(()),
            Ok(_) => Err(Unavailable::HandlerReplaced),
            Err(errno) => Err(Unavailable::HandlerInstall(errno)),
        }
    }

    /// The registered range holding `addr`: its slot, start and end. Slots being changed
    /// are skipped (the range of a map being read cannot be: it is registered before the
    /// map is handed out and withdrawn only when the map is dropped).
    pub(super) fn find(addr: usize) -> Option<(usize, usize, usize)> {
        // Only the slots taken, up to the highest ever used: a slot is taken before it
        // is published and given back only after it is withdrawn.
        let words = super::HIGH.load(Ordering::Acquire).div_ceil(64);
        for (w, word) in TAKEN.iter().enumerate().take(words) {
            let mut bits = word.load(Ordering::Acquire);
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let Some(s) = SLOTS.get(i) else { continue };
                let before = s.seq.load(Ordering::Acquire);
                if before & 1 == 1 {
                    continue;
                }
                let start = s.start.load(Ordering::Relaxed);
                let end = s.end.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if s.seq.load(Ordering::Relaxed) != before {
                    continue;
                }
                if start <= addr && addr < end {
                    return Some((i, start, end));
                }
            }
        }
        None
    }

    /// Maps zero pages over `[from, end)`, replacing what was there.
    ///
    /// # Safety
    /// The range must be pages of a registered guarded map: nothing else may live there.
    unsafe fn zero_fill(from: usize, end: usize) -> bool {
        // SAFETY: the caller vouches that the range belongs to a live guarded map, whose
        // memory nothing in this process writes or frees while it is borrowed; the new
        // pages are read-only, like the map they replace.
        let p = unsafe {
            libc::mmap(
                from as *mut c_void,
                end.wrapping_sub(from),
                libc::PROT_READ,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        p != libc::MAP_FAILED
    }

    /// Handles a fault inside a guarded map. Returns false when the fault is not one.
    ///
    /// # Safety
    /// `info` is the handler's `siginfo_t` (or null).
    unsafe fn handle(info: *mut libc::siginfo_t) -> bool {
        if info.is_null() {
            return false;
        }
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let info = unsafe { &*info };
        // Only an access to a page the file no longer backs (BUS_ADRERR: past its end, or
        // a page the kernel could not read). Not a signal sent by a process (si_code <= 0:
        // no fault address), nor an alignment fault (BUS_ADRALN), which would recur on the
        // zero pages forever, nor a hardware memory error.
        if info.si_code != libc::BUS_ADRERR && info.si_code != libc::BUS_OBJERR {
            return false;
        }
        // SAFETY: a kernel-generated SIGBUS carries the sigfault member of the union.
        let addr = unsafe { info.si_addr() } as usize;
        let Some((slot, start, end)) = find(addr) else { return false };
        let Some(s) = SLOTS.get(slot) else { return false };
        let page = page_size();
        let from = addr & !(page.wrapping_sub(1));
        // Flag first: a thread that reads the zeros below must find the flag set.
        s.first_fault.fetch_min(from, Ordering::SeqCst);
        s.faults.fetch_add(1, Ordering::SeqCst);
        // SAFETY: [from, end) and [start, end) lie in the registered range of a live map.
        if unsafe { zero_fill(from, end) } {
            return true;
        }
        // Replacing the tail splits the map in two, which the kernel refuses when the
        // process is at vm.max_map_count; replacing the whole map does not split it.
        s.first_fault.fetch_min(start, Ordering::SeqCst);
        // SAFETY: as above.
        if unsafe { zero_fill(start, end) } {
            return true;
        }
        let msg = b"mapguard: a mapped file shrank and its vanished pages could not be replaced (mmap failed)\n";
        // SAFETY: write(2) is async-signal-safe; the buffer is valid for its length.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        false
    }

    /// Restores the default action.
    fn reset_default(sig: libc::c_int) {
        // SAFETY: an all-zero `sigaction` is SIG_DFL with an empty mask and no flags.
        let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a complete action; sigaction(2) is async-signal-safe.
        unsafe { libc::sigaction(sig, &dfl, ptr::null_mut()) };
    }

    /// Hands a signal that is not a guarded map's fault to the handler in place before
    /// ours, or acts as the default action would.
    ///
    /// # Safety
    /// The arguments are the handler's own.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let prev = PREV_HANDLER.load(Ordering::SeqCst);
        let flags = PREV_FLAGS.load(Ordering::SeqCst);
        // SAFETY: `info` is the kernel's siginfo_t when not null.
        let sent = info.is_null() || unsafe { (*info).si_code } <= 0;
        if prev == libc::SIG_DFL || prev == libc::SIG_IGN {
            if sent {
                if prev == libc::SIG_DFL {
                    reset_default(sig);
                    // SAFETY: raise(3) is async-signal-safe. SIGBUS is not blocked
                    // (SA_NODEFER), so the default action takes place now.
                    unsafe { libc::raise(sig) };
                }
                return;
            }
            // A fault: the kernel ignores neither SIG_IGN nor a blocked signal for it.
            // Returning re-executes the faulting access, which now meets the default
            // action and kills the process with SIGBUS (and its true fault address).
            reset_default(sig);
            return;
        }
        if flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous action was installed with SA_SIGINFO, so its handler
            // has this signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) = unsafe { std::mem::transmute(prev) };
            f(sig, info, ctx);
        } else {
            // SAFETY: without SA_SIGINFO the handler takes the signal number alone.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev) };
            f(sig);
        }
    }

    /// The `SIGBUS` handler: async-signal-safe (atomics and system calls only; no
    /// allocation, no locks, no panics), and it leaves `errno` as it found it.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        // SAFETY: __errno_location returns this thread's errno, valid for its lifetime.
        let errno = unsafe { libc::__errno_location() };
        // SAFETY: as above.
        let saved = unsafe { *errno };
        // SAFETY: `info` is the kernel's, for this signal.
        if !unsafe { handle(info) } {
            // SAFETY: the arguments are the handler's own.
            unsafe { chain(sig, info, ctx) };
        }
        // SAFETY: as above.
        unsafe { *errno = saved };
    }
}

#[cfg(not(all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))))]
mod sys {
    //! No guard: every open falls back to reading.

    use super::Unavailable;
    use std::fs::File;
    use std::io::{self, Read, Seek, SeekFrom};

    pub(super) const ENOMEM: i32 = 12;

    pub(super) fn page_size() -> usize {
        4096
    }

    pub(super) fn install() -> Result<(), Unavailable> {
        Err(Unavailable::Unsupported)
    }

    pub(super) fn read_exact_at(mut file: &File, buf: &mut [u8]) -> io::Result<()> {
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(buf)
    }
}

#[cfg(all(test, target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
#[allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
mod tests {
    //! Tests that fault run in a child process: the test binary itself, re-executed with
    //! the test's exact name and `MAPGUARD_TEST_CHILD` naming it; the parent judges the
    //! child's exit status and what it printed (`REPORT ...` lines).

    use super::*;
    use std::hint::black_box;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::process::ExitStatusExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Barrier, mpsc};
    use std::time::{Duration, Instant};

    const CHILD: &str = "MAPGUARD_TEST_CHILD";
    const PATH: &str = "MAPGUARD_TEST_PATH";
    const PAGE: usize = 4096;

    /// The test's name as libtest knows it (the module path without the crate name).
    fn full_name(test: &str) -> String {
        let path = module_path!();
        let path = path.split_once("::").map_or(path, |(_, rest)| rest);
        format!("{path}::{test}")
    }

    fn in_child(test: &str) -> bool {
        std::env::var(CHILD).is_ok_and(|v| v == test)
    }

    fn child(test: &str) -> Command {
        let mut c = Command::new(std::env::current_exe().expect("the test binary's path"));
        c.args([full_name(test).as_str(), "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, test);
        c
    }

    /// Waits for a child, killing it after two minutes (a handler that loops on its
    /// fault would hang it).
    fn wait(kid: &mut Child) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = kid.try_wait().expect("waiting for the child") {
                return status;
            }
            if started.elapsed() > Duration::from_secs(120) {
                let _ = kid.kill();
                panic!("the child hung: {:?}", kid.wait());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Removes the temporary files a child killed by a signal left behind.
    fn remove_temps_of(pid: u32) {
        let prefix = format!("mapguard-{pid}-");
        for entry in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn run(mut c: Command) -> (ExitStatus, String) {
        let mut kid = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("running the child");
        let drain = |mut r: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = r.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let out = drain(Box::new(kid.stdout.take().expect("piped")));
        let err = drain(Box::new(kid.stderr.take().expect("piped")));
        let status = wait(&mut kid);
        remove_temps_of(kid.id());
        let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
        (status, format!("status {status:?}\n--- stdout\n{out}\n--- stderr\n{err}"))
    }

    fn report(line: &str) {
        println!("REPORT {line}");
        let _ = std::io::stdout().flush();
    }

    /// Nonzero bytes, so that zeros read stand out.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251 + 1) as u8).collect()
    }

    struct Temp(PathBuf);

    impl Temp {
        fn new(tag: &str, bytes: &[u8]) -> Temp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("mapguard-{}-{tag}-{n}", std::process::id()));
            std::fs::write(&path, bytes).expect("writing a temporary file");
            Temp(path)
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn cut(path: &Path, len: u64) {
        std::fs::OpenOptions::new().write(true).open(path).and_then(|f| f.set_len(len)).expect("truncating");
    }

    fn no_core_dump() {
        // SAFETY: prctl(PR_SET_DUMPABLE) has no memory effects.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0) };
    }

    fn all_zero(bytes: &[u8]) -> bool {
        // Slice comparison is memcmp: fast in unoptimised test builds.
        bytes.chunks(1 << 16).all(|c| c == &[0u8; 1 << 16][..c.len()])
    }

    #[test]
    fn plain_read_is_not_faulted() {
        let bytes = pattern(300_000);
        let t = Temp::new("plain", &bytes);
        let f = File::open(&t.0).unwrap();
        let map = GuardedMap::open(&f).unwrap();
        drop(f);
        assert_eq!(map.as_slice(), &bytes[..]);
        assert!(!map.faulted());
        assert_eq!(map.check(), Ok(()));
        assert_eq!(map.generation(), 0);
        assert_eq!(map.read(|b| b.len()), Ok(300_000));
        let range = GuardedMap::open_range(&File::open(&t.0).unwrap(), 5000, 100_000).unwrap();
        assert_eq!(range.as_slice(), &bytes[5000..105_000]);
        assert_eq!(range.offset(), 5000);
        assert!(!range.faulted());
    }

    #[test]
    fn empty_and_out_of_range() {
        let t = Temp::new("empty", b"");
        let map = GuardedMap::open(&File::open(&t.0).unwrap()).unwrap();
        assert!(map.is_empty() && !map.faulted());
        let t = Temp::new("short", &pattern(100));
        let f = File::open(&t.0).unwrap();
        match GuardedMap::open_range(&f, 50, 51) {
            Err(OpenError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::InvalidInput),
            other => panic!("{other:?}"),
        }
        assert!(GuardedMap::open_range(&f, u64::MAX, 2).is_err());
        assert!(GuardedMap::open_range(&f, 100, 0).unwrap().is_empty());
    }

    #[test]
    fn file_bytes_reads_small_files_and_maps_large_ones() {
        let small = Temp::new("small", &pattern(1000));
        let b = FileBytes::open(&File::open(&small.0).unwrap()).unwrap();
        assert!(!b.is_mapped());
        assert_eq!(&b[..], &pattern(1000)[..]);
        let large = Temp::new("large", &pattern(MIN_MAP_LEN as usize));
        let b = FileBytes::open(&File::open(&large.0).unwrap()).unwrap();
        assert!(b.is_mapped());
        assert_eq!(&b[..], &pattern(MIN_MAP_LEN as usize)[..]);
        assert_eq!(b.check(), Ok(()));
        let b = FileBytes::open_with(&File::open(&large.0).unwrap(), u64::MAX).unwrap();
        assert!(!b.is_mapped());
    }

    /// Another thread truncates the file to (not quite) half while this one reads it all.
    #[test]
    fn truncated_to_half_while_reading() {
        const T: &str = "truncated_to_half_while_reading";
        if in_child(T) {
            let len = 1 << 20;
            let half = len / 2 + 123;
            let bytes = pattern(len);
            let t = Temp::new("half", &bytes);
            let map = GuardedMap::open(&File::open(&t.0).unwrap()).unwrap();
            let (go, went) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
            let path = t.0.clone();
            let cutter = {
                let (go, went) = (go.clone(), went.clone());
                std::thread::spawn(move || {
                    go.wait();
                    cut(&path, half as u64);
                    went.wait();
                })
            };
            let mut read = map.as_slice()[..len / 4].to_vec();
            let g = map.generation();
            go.wait();
            went.wait();
            read.extend_from_slice(&map.as_slice()[len / 4..]);
            cutter.join().unwrap();
            let changed = map.check().unwrap_err();
            assert!(map.check_since(g).is_err());
            assert_eq!(read.len(), len);
            assert_eq!(&read[..half], &bytes[..half], "the bytes before the cut are the file's");
            assert_eq!(&map.as_slice()[..half], &bytes[..half], "and still are after the fault");
            assert!(all_zero(&read[half..]), "the bytes after the cut read as zeros");
            assert_eq!(changed.offset(), half.next_multiple_of(PAGE) as u64);
            report(&format!("faulted={} offset={}", map.faulted(), changed.offset()));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(
            text.contains(&format!("REPORT faulted=true offset={}", (524_288 + 123usize).next_multiple_of(PAGE))),
            "{text}"
        );
    }

    /// The parent process truncates the file to 0 while the child reads it over and over.
    #[test]
    fn truncated_to_zero_by_another_process() {
        const T: &str = "truncated_to_zero_by_another_process";
        if in_child(T) {
            let path = std::env::var(PATH).unwrap();
            let map = GuardedMap::open(&File::open(&path).unwrap()).unwrap();
            let mut copy = vec![0; map.len()];
            println!("READY");
            std::io::stdout().flush().unwrap();
            let started = Instant::now();
            let mut passes = 0;
            while !map.faulted() {
                assert!(started.elapsed() < Duration::from_secs(60), "no fault after {passes} passes");
                copy.copy_from_slice(map.as_slice());
                passes += 1;
            }
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "DONE");
            copy.copy_from_slice(map.as_slice());
            let zeros = all_zero(&copy);
            report(&format!("faulted={} zeros={zeros} offset={}", map.faulted(), map.check().unwrap_err().offset()));
            return;
        }
        let t = Temp::new("zero", &pattern(64 << 20));
        let mut c = child(T);
        c.env(PATH, &t.0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut kid = c.spawn().unwrap();
        let mut lines = BufReader::new(kid.stdout.take().unwrap()).lines();
        assert!(lines.by_ref().map_while(Result::ok).any(|l| l.ends_with("READY")));
        std::thread::sleep(Duration::from_millis(30));
        cut(&t.0, 0);
        writeln!(kid.stdin.take().unwrap(), "DONE").unwrap();
        let status = wait(&mut kid);
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut kid.stderr.take().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{status:?} {rest:?} {err}");
        assert!(rest.iter().any(|l| l.ends_with("REPORT faulted=true zeros=true offset=0")), "{rest:?} {err}");
    }

    /// `cp` rewrites the file (truncating it first) over and over while the child reads
    /// it, reopening after each fault; the child must never die, and must see faults.
    #[test]
    fn rewritten_by_cp_while_reading() {
        const T: &str = "rewritten_by_cp_while_reading";
        if in_child(T) {
            let path = std::env::var(PATH).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let stopper = stop.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
                stopper.store(true, Ordering::SeqCst);
            });
            println!("READY");
            std::io::stdout().flush().unwrap();
            let (mut passes, mut faults) = (0, 0);
            let mut copy = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let map = GuardedMap::open(&File::open(&path).unwrap()).unwrap();
                copy.resize(map.len(), 0);
                match map.read(|b| copy.copy_from_slice(b)).map(|()| black_box(&copy).len()) {
                    Ok(_) => passes += 1,
                    Err(changed) => {
                        let from = (changed.offset() - map.offset()) as usize;
                        assert!(all_zero(&map.as_slice()[from..]), "zeros from {from} on");
                        faults += 1;
                        println!("FAULT {}", changed.offset());
                        std::io::stdout().flush().unwrap();
                    }
                }
            }
            report(&format!("passes={passes} faults={faults}"));
            return;
        }
        let source = Temp::new("cp-source", &pattern(8 << 20));
        let target = Temp::new("cp-target", &pattern(8 << 20));
        let mut c = child(T);
        c.env(PATH, &target.0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut kid = c.spawn().unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = kid.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        while !rx.recv_timeout(Duration::from_secs(60)).unwrap().ends_with("READY") {}
        let started = Instant::now();
        let (mut copies, mut faults) = (0, 0);
        while faults < 3 && copies < 2000 && started.elapsed() < Duration::from_secs(60) {
            let status = Command::new("cp").arg(&source.0).arg(&target.0).status().unwrap();
            assert!(status.success());
            copies += 1;
            faults += rx.try_iter().filter(|l| l.contains("FAULT ")).count();
        }
        writeln!(kid.stdin.take().unwrap(), "STOP").unwrap();
        let status = wait(&mut kid);
        reader.join().unwrap();
        let rest: Vec<String> = rx.try_iter().collect();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut kid.stderr.take().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{status:?} {rest:?} {err}");
        assert!(faults > 0, "no fault in {copies} copies: {rest:?}");
        println!("{copies} copies, {faults} faults seen, {rest:?}");
    }

    /// A fault outside any guarded map still kills the process with SIGBUS, while a
    /// guarded map is alive and the handler installed.
    #[test]
    fn unguarded_fault_still_kills() {
        const T: &str = "unguarded_fault_still_kills";
        if in_child(T) {
            no_core_dump();
            let guarded_file = Temp::new("guarded", &pattern(1 << 16));
            let guarded = GuardedMap::open(&File::open(&guarded_file.0).unwrap()).unwrap();
            let plain_file = Temp::new("plain", &pattern(1 << 16));
            // SAFETY: a test of what a fault in an unguarded map does.
            let plain = unsafe { memmap2::Mmap::map(&File::open(&plain_file.0).unwrap()) }.unwrap();
            cut(&plain_file.0, 0);
            report("about to read");
            // black_box: an optimised build would drop a copy nobody reads.
            let copy = black_box(plain.to_vec());
            report(&format!("survived {} {}", copy.len(), guarded.faulted()));
            return;
        }
        let (status, text) = run(child(T));
        assert_eq!(status.signal(), Some(libc::SIGBUS), "{text}");
        assert!(text.contains("REPORT about to read") && !text.contains("survived"), "{text}");
    }

    extern "C" fn exit_42(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut std::ffi::c_void) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(42) }
    }

    fn set_handler(f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut std::ffi::c_void)) {
        // SAFETY: a zeroed sigaction is valid; the handler has the SA_SIGINFO signature.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = f as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()), 0);
        }
    }

    /// A handler installed before the guard's gets the faults outside guarded maps.
    #[test]
    fn chains_to_previous_handler() {
        const T: &str = "chains_to_previous_handler";
        if in_child(T) {
            no_core_dump();
            set_handler(exit_42);
            let g = Temp::new("guarded", &pattern(1 << 16));
            let guarded = GuardedMap::open(&File::open(&g.0).unwrap()).unwrap();
            cut(&g.0, 0);
            let copy = guarded.as_slice().to_vec();
            assert!(guarded.faulted() && all_zero(&copy));
            report("guarded ok");
            let p = Temp::new("plain", &pattern(1 << 16));
            // SAFETY: a test of what a fault in an unguarded map does.
            let plain = unsafe { memmap2::Mmap::map(&File::open(&p.0).unwrap()) }.unwrap();
            cut(&p.0, 0);
            // black_box: an optimised build would drop a copy nobody reads.
            let copy = black_box(plain.to_vec());
            report(&format!("survived {}", copy.len()));
            return;
        }
        let (status, text) = run(child(T));
        assert_eq!(status.code(), Some(42), "{text}");
        assert!(text.contains("REPORT guarded ok") && !text.contains("survived"), "{text}");
    }

    /// With no handler before the guard's (a C host, say: not Rust's), a fault outside
    /// guarded maps and a SIGBUS sent by a process both get the default action.
    #[test]
    fn default_action_when_no_previous_handler() {
        const T: &str = "default_action_when_no_previous_handler";
        if in_child(T) {
            no_core_dump();
            // SAFETY: restoring the default action of SIGBUS.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            let g = Temp::new("guarded", &pattern(1 << 16));
            let guarded = GuardedMap::open(&File::open(&g.0).unwrap()).unwrap();
            cut(&g.0, 0);
            assert!(guarded.read(|b| b.to_vec()).is_err());
            report("guarded ok");
            if std::env::var(PATH).is_ok_and(|m| m == "raise") {
                // SAFETY: raise has no memory effects.
                unsafe { libc::raise(libc::SIGBUS) };
            } else {
                let p = Temp::new("plain", &pattern(1 << 16));
                // SAFETY: a test of what a fault in an unguarded map does.
                let plain = unsafe { memmap2::Mmap::map(&File::open(&p.0).unwrap()) }.unwrap();
                cut(&p.0, 0);
                black_box(&plain.to_vec());
            }
            report("survived");
            return;
        }
        for mode in ["fault", "raise"] {
            let mut c = child(T);
            c.env(PATH, mode);
            let (status, text) = run(c);
            assert_eq!(status.signal(), Some(libc::SIGBUS), "{mode}: {text}");
            assert!(text.contains("REPORT guarded ok") && !text.contains("survived"), "{mode}: {text}");
        }
    }

    /// A handler installed after the guard's: new opens learn it and fall back to reading.
    #[test]
    fn replaced_handler_falls_back_to_reading() {
        const T: &str = "replaced_handler_falls_back_to_reading";
        if in_child(T) {
            let t = Temp::new("replaced", &pattern(1 << 20));
            let f = File::open(&t.0).unwrap();
            assert!(GuardedMap::open(&f).is_ok());
            assert!(FileBytes::open(&f).unwrap().is_mapped());
            set_handler(exit_42);
            let e = GuardedMap::open(&f).unwrap_err();
            assert!(matches!(e, OpenError::Unavailable(Unavailable::HandlerReplaced)), "{e:?}");
            let b = FileBytes::open(&f).unwrap();
            assert!(!b.is_mapped() && b[..] == pattern(1 << 20)[..]);
            report(&format!("fallback {}", io::Error::from(e)));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains("REPORT fallback another SIGBUS handler replaced"), "{text}");
    }

    /// Once a guarded map is dropped, a fault in a plain map made at the very same
    /// address is not taken for the old map's.
    #[test]
    fn dropped_map_no_longer_guards_its_address() {
        const T: &str = "dropped_map_no_longer_guards_its_address";
        if in_child(T) {
            no_core_dump();
            let len = 1 << 16;
            let g = Temp::new("dropped", &pattern(len));
            let guarded = GuardedMap::open(&File::open(&g.0).unwrap()).unwrap();
            let addr = guarded.as_slice().as_ptr();
            drop(guarded);
            let p = Temp::new("plain", &pattern(len));
            let f = File::open(&p.0).unwrap();
            // SAFETY: a new map at an address known free (the dropped map's); the test
            // reads it once.
            let q = unsafe {
                libc::mmap(
                    addr as *mut _,
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED | libc::MAP_FIXED_NOREPLACE,
                    std::os::fd::AsRawFd::as_raw_fd(&f),
                    0,
                )
            };
            assert_eq!(q as usize, addr as usize, "the address is free again");
            cut(&p.0, 0);
            report("about to read");
            // SAFETY: the map is `len` readable bytes (until the truncation faults them).
            let copy = black_box(unsafe { std::slice::from_raw_parts(q as *const u8, len) }.to_vec());
            report(&format!("survived {}", copy.len()));
            return;
        }
        let (status, text) = run(child(T));
        assert_eq!(status.signal(), Some(libc::SIGBUS), "{text}");
        assert!(text.contains("REPORT about to read") && !text.contains("survived"), "{text}");
    }

    /// Guarded maps in several threads; one file is truncated: only its map is flagged.
    #[test]
    fn only_the_truncated_map_is_flagged() {
        const T: &str = "only_the_truncated_map_is_flagged";
        if in_child(T) {
            let threads = 6;
            let len = 1 << 20;
            let bytes = Arc::new(pattern(len));
            let (read_some, cut_done) = (Arc::new(Barrier::new(threads)), Arc::new(Barrier::new(threads)));
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let (bytes, read_some, cut_done) = (bytes.clone(), read_some.clone(), cut_done.clone());
                    std::thread::spawn(move || {
                        let t = Temp::new("threads", &bytes);
                        let map = GuardedMap::open(&File::open(&t.0).unwrap()).unwrap();
                        let mut copy = map.as_slice()[..len / 4].to_vec();
                        read_some.wait();
                        if i == 2 {
                            cut(&t.0, (len / 2) as u64);
                        }
                        cut_done.wait();
                        copy.extend_from_slice(&map.as_slice()[len / 4..]);
                        let ok = if i == 2 {
                            copy[..len / 2] == bytes[..len / 2] && all_zero(&copy[len / 2..])
                        } else {
                            copy[..] == bytes[..]
                        };
                        (map.faulted(), ok)
                    })
                })
                .collect();
            let results: Vec<(bool, bool)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let flags: Vec<bool> = results.iter().map(|r| r.0).collect();
            assert!(results.iter().all(|r| r.1), "contents {results:?}");
            report(&format!("flags={flags:?}"));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains("REPORT flags=[false, false, true, false, false, false]"), "{text}");
    }

    /// A map of a range from an unaligned offset, cut inside the range.
    #[test]
    fn range_map_cut_inside() {
        const T: &str = "range_map_cut_inside";
        if in_child(T) {
            let bytes = pattern(400_000);
            let t = Temp::new("range", &bytes);
            let map = GuardedMap::open_range(&File::open(&t.0).unwrap(), 5000, 300_000).unwrap();
            cut(&t.0, 105_007);
            let copy = map.as_slice().to_vec();
            let changed = map.check().unwrap_err();
            assert_eq!(&copy[..100_007], &bytes[5000..105_007]);
            assert_eq!(&map.as_slice()[..100_007], &bytes[5000..105_007]);
            assert!(all_zero(&copy[100_007..]));
            report(&format!("offset={}", changed.offset()));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains(&format!("REPORT offset={}", 105_007usize.next_multiple_of(PAGE))), "{text}");
    }

    /// The kernel reading a truncated map (write(2) from it) fails with EFAULT: no
    /// signal, no flag.
    #[test]
    fn syscall_from_truncated_map_is_efault() {
        const T: &str = "syscall_from_truncated_map_is_efault";
        if in_child(T) {
            let t = Temp::new("efault", &pattern(1 << 16));
            let map = GuardedMap::open(&File::open(&t.0).unwrap()).unwrap();
            cut(&t.0, 0);
            let out = Temp::new("efault-out", b"");
            let e = File::create(&out.0).unwrap().write_all(map.as_slice()).unwrap_err();
            report(&format!("errno={:?} faulted={}", e.raw_os_error(), map.faulted()));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains(&format!("REPORT errno=Some({}) faulted=false", libc::EFAULT)), "{text}");
    }

    /// Slots are given back on drop: far more maps than slots, one after another.
    #[test]
    fn slots_are_freed_on_drop() {
        const T: &str = "slots_are_freed_on_drop";
        if in_child(T) {
            let t = Temp::new("slots", &pattern(100));
            let f = File::open(&t.0).unwrap();
            for _ in 0..100_000 {
                let map = GuardedMap::open(&f).unwrap();
                assert_eq!(map.len(), 100);
            }
            assert_eq!(registered(), 0);
            let live: Vec<GuardedMap> = (0..1000).map(|_| GuardedMap::open(&f).unwrap()).collect();
            assert_eq!(registered(), 1000);
            drop(live);
            report(&format!("registered={}", registered()));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains("REPORT registered=0"), "{text}");
    }

    /// Not a check: times the registry alone.
    /// `cargo test --release -- --ignored --nocapture registry_timing`
    #[test]
    #[ignore = "timing only"]
    fn registry_timing() {
        // Ranges in the first pages, which nothing maps (vm.mmap_min_addr): no fault of
        // another test can land in them.
        let n = 1_000_000;
        let s = Instant::now();
        for _ in 0..n {
            let slot = claim().unwrap();
            publish(slot, PAGE, 2 * PAGE);
            withdraw(slot);
            release(slot);
        }
        let alone = s.elapsed();
        let held: Vec<usize> = (0..CAPACITY - 64).map(|_| claim().unwrap()).collect();
        let s = Instant::now();
        for _ in 0..n {
            let slot = claim().unwrap();
            publish(slot, PAGE, 2 * PAGE);
            withdraw(slot);
            release(slot);
        }
        let full = s.elapsed();
        let s = Instant::now();
        for _ in 0..1000 {
            assert!(sys::find(PAGE * 3).is_none());
        }
        let scan = s.elapsed() / 1000;
        held.into_iter().for_each(release);
        println!(
            "claim+publish+withdraw+release: {:.1} ns alone, {:.1} ns with {} slots taken; handler scan of all: {:.1} µs",
            alone.as_secs_f64() * 1e9 / n as f64,
            full.as_secs_f64() * 1e9 / n as f64,
            CAPACITY - 64,
            scan.as_secs_f64() * 1e6
        );
    }

    /// A full registry is reported, and FileBytes reads instead.
    #[test]
    fn full_registry_falls_back() {
        const T: &str = "full_registry_falls_back";
        if in_child(T) {
            let held: Vec<usize> = std::iter::from_fn(claim).collect();
            assert_eq!(held.len(), CAPACITY);
            let t = Temp::new("full", &pattern(1 << 20));
            let f = File::open(&t.0).unwrap();
            let e = GuardedMap::open(&f).unwrap_err();
            assert!(matches!(e, OpenError::Unavailable(Unavailable::RegistryFull)), "{e:?}");
            assert!(!FileBytes::open(&f).unwrap().is_mapped());
            release(held[77]);
            let map = GuardedMap::open(&f).unwrap();
            report(&format!("reused={}", map.map.as_ref().unwrap().slot));
            return;
        }
        let (status, text) = run(child(T));
        assert!(status.success(), "{text}");
        assert!(text.contains("REPORT reused=77"), "{text}");
    }
}
