//! Large files written past the page cache (`O_DIRECT`, Linux).
//!
//! Writing a file of a GiB through the page cache costs a fresh page of kernel memory
//! per 4 KiB written, each faulted in and copied to; on virtual machines and on hosts
//! short of free memory that copy, not the disk, bounds the write (measured here:
//! 360 MB/s buffered against 1.6-2.6 GB/s direct, for 1 GiB). [`DirectWriter`] stages
//! the bytes in one aligned buffer and hands whole aligned pieces to the disk; the
//! unaligned tail and the small patches written after a seek back (block headers whose
//! checksum is known only at the end) go through the page cache as usual, which the
//! kernel keeps coherent with the direct writes. Where direct I/O is refused (`tmpfs`,
//! some network filesystems, a device with larger sectors), everything goes through the
//! page cache: the result is the same file either way. The writes happen on a thread of
//! their own, so that the caller hashes and compresses the next piece meanwhile (a
//! direct write of 8 MiB blocks for 5 ms on the machine measured).
//!
//! That thread is a thread of its own, not a job on the rayon pool: it blocks in the
//! disk's writes for the whole of a file's write, which would take a worker from the
//! compressors (and, with a pool of one thread, wait for work queued behind the write
//! that feeds it). It exists only where direct I/O is used: a write's
//! [`WriteOptions::direct_io`](crate::write::WriteOptions::direct_io) asks for it
//! ([`DirectIo::Auto`](crate::write::DirectIo::Auto) for large files, the default), and
//! only Linux with the feature `linux-tuning` has it (`linux.rs`); elsewhere
//! [`DirectWriter::new`] gives `None` (`portable.rs`) and the file is written through
//! the page cache by the calling thread.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;

#[cfg(all(target_os = "linux", feature = "linux-tuning"))]
mod linux;
#[cfg(all(target_os = "linux", feature = "linux-tuning"))]
use linux::{open_direct, write_at};
#[cfg(not(all(target_os = "linux", feature = "linux-tuning")))]
mod portable;
#[cfg(not(all(target_os = "linux", feature = "linux-tuning")))]
use portable::{open_direct, write_at};

/// Alignment of direct writes: offsets, lengths and the memory written from.
const ALIGN: usize = 4096;

/// Bytes staged before a direct write.
const STAGE: usize = 8 << 20;

/// Staging areas in use at most: one filling while the other is written.
const STAGES: usize = 2;

/// An aligned staging area of `STAGE` bytes.
struct Stage {
    /// `STAGE + ALIGN` bytes; the area is the aligned `STAGE` inside.
    raw: Vec<u8>,
    /// Where the area starts inside `raw`.
    at: usize,
}

impl Stage {
    fn new() -> Stage {
        let raw = vec![0u8; STAGE + ALIGN];
        // At most ALIGN - 1 for a byte vector (its address is a plain integer).
        let at = raw.as_ptr().align_offset(ALIGN).min(ALIGN);
        Stage { raw, at }
    }

    fn area(&self) -> &[u8] {
        &self.raw[self.at..self.at + STAGE]
    }

    fn area_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.at..self.at + STAGE]
    }
}

/// Work for the writing thread, done in the order sent.
enum Job {
    /// The first `len` bytes of a staging area (a multiple of `ALIGN`), at `offset`
    /// (aligned), direct where the filesystem allows; the area is then sent back.
    Direct { stage: Stage, len: usize, offset: u64 },
    /// A few bytes through the page cache: a patch behind the staging area, the tail.
    Buffered { bytes: Vec<u8>, offset: u64 },
}

/// A `Write + Seek` over a file that sends whole aligned pieces past the page cache, on
/// a thread of its own: the caller fills one staging area while the other is written.
/// Call [`DirectWriter::finish`] at the end: it writes what is still staged and reports
/// the writing thread's errors.
pub struct DirectWriter {
    /// The area being filled.
    stage: Stage,
    /// Staging areas made so far (at most `STAGES`).
    made: usize,
    /// Areas back from the writing thread, ready to fill.
    spare: Vec<Stage>,
    /// File offset of the staging area's first byte (a multiple of `ALIGN`).
    start: u64,
    /// Bytes staged.
    len: usize,
    /// The logical position.
    pos: u64,
    /// To the writing thread; `None` once it has been told to end.
    jobs: Option<mpsc::Sender<Job>>,
    /// Staging areas the writing thread is done with.
    done: mpsc::Receiver<Stage>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
}

impl DirectWriter {
    /// A writer at offset 0 of `file` (empty, just created), or `None` where this
    /// platform or filesystem has no direct I/O (only Linux has it, with the feature
    /// `linux-tuning`), or no thread can be started.
    pub fn new(file: &File) -> Option<Self> {
        let direct = open_direct(file)?;
        let buffered = file.try_clone().ok()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let (give_back, done) = mpsc::channel::<Stage>();
        let writer = std::thread::Builder::new()
            .name("rasdf-direct".into())
            .spawn(move || write_jobs(&queue, &give_back, Some(direct), &buffered))
            .ok()?;
        Some(DirectWriter {
            stage: Stage::new(),
            made: 1,
            spare: Vec::new(),
            start: 0,
            len: 0,
            pos: 0,
            jobs: Some(jobs),
            done,
            writer: Some(writer),
        })
    }

    /// Writes out the staged bytes (the aligned part directly, the rest buffered) and
    /// waits for the writing thread to finish.
    pub fn finish(mut self) -> std::io::Result<()> {
        let aligned = self.len / ALIGN * ALIGN;
        let tail = self.stage.area()[aligned..self.len].to_vec();
        if aligned > 0 {
            let stage = std::mem::replace(&mut self.stage, Stage { raw: Vec::new(), at: 0 });
            self.send(Job::Direct { stage, len: aligned, offset: self.start })?;
        }
        if !tail.is_empty() {
            self.send(Job::Buffered { bytes: tail, offset: self.start + aligned as u64 })?;
        }
        self.end()
    }

    /// Tells the writing thread to end and returns its first error.
    fn end(&mut self) -> std::io::Result<()> {
        self.jobs = None;
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the writing thread panicked")),
            None => Ok(()),
        }
    }

    /// The error that stopped the writing thread before it was told to end.
    fn stopped(&mut self) -> std::io::Error {
        match self.end() {
            Err(e) => e,
            Ok(()) => std::io::Error::other("the writing thread ended early"),
        }
    }

    /// Hands `job` to the writing thread; if it has stopped, its error.
    fn send(&mut self, job: Job) -> std::io::Result<()> {
        if self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok()) { Ok(()) } else { Err(self.stopped()) }
    }

    /// Sends the full staging area to be written and starts filling another.
    fn write_out(&mut self) -> std::io::Result<()> {
        let next = match self.spare.pop() {
            Some(stage) => stage,
            None if self.made < STAGES => {
                self.made += 1;
                Stage::new()
            }
            None => self.done.recv().map_err(|mpsc::RecvError| self.stopped())?,
        };
        let full = std::mem::replace(&mut self.stage, next);
        self.send(Job::Direct { stage: full, len: STAGE, offset: self.start })?;
        self.start += STAGE as u64;
        self.len = 0;
        while let Ok(stage) = self.done.try_recv() {
            self.spare.push(stage);
        }
        Ok(())
    }
}

impl Drop for DirectWriter {
    fn drop(&mut self) {
        // Left without `finish` (an error on the way): let the thread end before the
        // file goes.
        let _ = self.end();
    }
}

/// The writing thread: does the jobs in order and gives the staging areas back; stops
/// at the first error, which it returns.
fn write_jobs(
    queue: &mpsc::Receiver<Job>,
    give_back: &mpsc::Sender<Stage>,
    mut direct: Option<File>,
    buffered: &File,
) -> std::io::Result<()> {
    for job in queue {
        match job {
            Job::Direct { stage, len, offset } => {
                let piece = &stage.area()[..len];
                let written_directly = match &direct {
                    Some(d) => match write_at(d, piece, offset) {
                        Ok(()) => true,
                        // Refused (sectors larger than ALIGN): the page cache from now on.
                        Err(e) if e.raw_os_error() == Some(EINVAL) => false,
                        Err(e) => return Err(e),
                    },
                    None => false,
                };
                if !written_directly {
                    direct = None;
                    write_at(buffered, piece, offset)?;
                }
                // The writer may have finished or stopped: then nobody needs it back.
                let _ = give_back.send(stage);
            }
            Job::Buffered { bytes, offset } => write_at(buffered, &bytes, offset)?,
        }
    }
    Ok(())
}

/// What [`DirectWriter::write_hashed`] feeds the bytes it writes to: a hash that may
/// take them as they are copied (one pass over them instead of two).
pub trait CopyHasher {
    /// Hashes `bytes`.
    fn update(&mut self, bytes: &[u8]);
    /// Copies `from` to `to` (of the same length) and hashes the bytes.
    fn update_copying(&mut self, from: &[u8], to: &mut [u8]) {
        to.copy_from_slice(from);
        self.update(from);
    }
}

impl DirectWriter {
    /// Writes all of `buf` and feeds it to `hash`, the bytes hashed as they are copied
    /// into the staging area.
    ///
    /// # Errors
    /// I/O errors of the writing thread.
    pub fn write_hashed(&mut self, mut buf: &[u8], hash: &mut impl CopyHasher) -> std::io::Result<()> {
        while !buf.is_empty() {
            let n = match self.patch(buf)? {
                Some(n) => {
                    hash.update(&buf[..n]);
                    n
                }
                None => self.stage_bytes(buf, |from, to| hash.update_copying(from, to))?,
            };
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Behind the staging area: a patch of bytes already sent, written through the page
    /// cache after the direct writes before it (the writing thread keeps the order),
    /// which the kernel keeps coherent with them. Returns how many bytes of `buf` went,
    /// or `None` when the position is not behind the staging area.
    fn patch(&mut self, buf: &[u8]) -> std::io::Result<Option<usize>> {
        if self.pos >= self.start {
            return Ok(None);
        }
        let n = buf.len().min(usize::try_from(self.start - self.pos).unwrap_or(usize::MAX));
        self.send(Job::Buffered { bytes: buf[..n].to_vec(), offset: self.pos })?;
        self.pos += n as u64;
        Ok(Some(n))
    }

    /// Stages bytes from the start of `buf` (non-empty) at the position, which is not
    /// behind the staging area, with `copy(from, to)`; returns how many.
    fn stage_bytes(&mut self, buf: &[u8], copy: impl FnOnce(&[u8], &mut [u8])) -> std::io::Result<usize> {
        let mut offset = usize::try_from(self.pos - self.start).unwrap_or(usize::MAX);
        while offset > self.len {
            // A seek past the end: the gap reads as zeros, as in a file.
            let gap = (offset - self.len).min(STAGE - self.len);
            self.stage.area_mut()[self.len..self.len + gap].fill(0);
            self.len += gap;
            if self.len == STAGE {
                self.write_out()?;
            }
            offset = usize::try_from(self.pos - self.start).unwrap_or(usize::MAX);
        }
        let n = buf.len().min(STAGE - offset);
        copy(&buf[..n], &mut self.stage.area_mut()[offset..offset + n]);
        self.len = self.len.max(offset + n);
        self.pos += n as u64;
        if self.len == STAGE {
            self.write_out()?;
        }
        Ok(n)
    }
}

impl Write for DirectWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        match self.patch(buf)? {
            Some(n) => Ok(n),
            None => self.stage_bytes(buf, |from, to| to.copy_from_slice(from)),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for DirectWriter {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let end = self.start + self.len as u64;
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => end.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos =
            target.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

const EINVAL: i32 = 22;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Writes, seeks back and patches, past several staging areas, and compares with the
    /// same operations on a vector.
    #[test]
    fn same_bytes_as_a_plain_file() {
        let path = std::env::temp_dir().join(format!("rasdf-direct-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let _cleanup = Cleanup(path.clone());
        let Some(mut w) = DirectWriter::new(&file) else {
            eprintln!("skipped: no direct I/O on this platform or filesystem");
            return;
        };
        let mut expect = std::io::Cursor::new(Vec::new());
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed
        };
        for round in 0u32..40 {
            let len = (next() as usize % (3 << 20)) + usize::from(round % 5 == 0) * STAGE;
            let data: Vec<u8> = (0..len).map(|i| i.to_le_bytes()[0] ^ round.to_le_bytes()[0]).collect();
            let header_at = expect.stream_position().unwrap();
            expect.write_all(b"HEADER--").unwrap();
            expect.write_all(&data).unwrap();
            w.write_all(b"HEADER--").unwrap();
            // Every other round hashed as it is copied: the same bytes, and their MD5.
            if round % 2 == 1 {
                let mut md5 = crate::block::Md5::new();
                w.write_hashed(&data, &mut md5).unwrap();
                assert_eq!(md5.finalize(), crate::block::md5(&data), "round {round}");
            } else {
                w.write_all(&data).unwrap();
            }
            // Patch the header, as the block writer does once the checksum is known
            // (hashed too in some rounds: behind the staging area or inside it).
            for out in [&mut w as &mut dyn WriteSeek, &mut expect] {
                let end = out.stream_position().unwrap();
                out.seek(SeekFrom::Start(header_at)).unwrap();
                out.write_all(&round.to_le_bytes()).unwrap();
                out.seek(SeekFrom::Start(end)).unwrap();
            }
            if round % 3 == 0 {
                let mut md5 = crate::block::Md5::new();
                let end = w.stream_position().unwrap();
                w.seek(SeekFrom::Start(header_at + 4)).unwrap();
                w.write_hashed(b"RE", &mut md5).unwrap();
                w.seek(SeekFrom::Start(end)).unwrap();
                assert_eq!(md5.finalize(), crate::block::md5(b"RE"));
                let at = usize::try_from(header_at).unwrap() + 4;
                expect.get_mut()[at..at + 2].copy_from_slice(b"RE");
            }
        }
        w.finish().unwrap();
        drop(file);
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), expect.get_ref().len());
        assert!(got == *expect.get_ref(), "contents differ");
    }

    /// An error on the writing thread (here: a patch through a handle that cannot
    /// write) comes back from `finish`, and a writer dropped unfinished does not hang.
    #[test]
    fn the_writing_threads_errors_are_reported() {
        let path = std::env::temp_dir().join(format!("rasdf-direct-err-{}", std::process::id()));
        drop(File::create(&path).unwrap());
        let _cleanup = Cleanup(path.clone());
        let read_only = File::open(&path).unwrap();
        let Some(mut w) = DirectWriter::new(&read_only) else {
            eprintln!("skipped: no direct I/O on this platform or filesystem");
            return;
        };
        w.write_all(&vec![1u8; STAGE + 100]).unwrap();
        w.seek(SeekFrom::Start(0)).unwrap();
        // Behind the staging area: a buffered patch, which the read-only handle refuses.
        w.write_all(b"patch").unwrap();
        let err = w.finish().expect_err("the refused patch is reported");
        assert_eq!(err.raw_os_error(), Some(9), "EBADF, got {err}");

        let Some(mut w) = DirectWriter::new(&read_only) else { return };
        w.write_all(&vec![2u8; 3 * STAGE]).unwrap();
        drop(w);
    }

    struct Cleanup(std::path::PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    trait WriteSeek: Write + Seek {}
    impl<T: Write + Seek> WriteSeek for T {}
}
