//! bzip2 compression on one thread, by the `bzip2` crate: the writer's interface of
//! `bzp2_parallel_encode` when the feature `parallel-bzip2` is off. The stream is the
//! same either way (the parallel compressor cuts blocks where the serial one does).

use std::io::Write;

/// Declines, always: the caller compresses serially.
pub(crate) fn compress(_data: &[u8], _level: u32) -> Option<Vec<u8>> {
    None
}

/// A bzip2 stream compressed as its input arrives in batches.
pub(crate) struct Stream {
    encoder: bzip2::write::BzEncoder<Vec<u8>>,
}

impl Stream {
    pub(crate) fn new(level: u32) -> Result<Self, String> {
        if !(1..=9).contains(&level) {
            return Err(format!("bzip2 has no level {level}"));
        }
        Ok(Stream { encoder: bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level)) })
    }

    /// Input a batch should hold: two bzip2 blocks of the largest size.
    pub(crate) fn batch_len(&self) -> usize {
        2 * 900_000
    }

    /// Takes the next `batch` of input (the `last` one ends the stream; it may be empty);
    /// returns the bytes this adds to the stream.
    pub(crate) fn feed(&mut self, batch: &[u8], last: bool) -> Result<Vec<u8>, String> {
        self.encoder.write_all(batch).map_err(|e| e.to_string())?;
        if last {
            self.encoder.try_finish().map_err(|e| e.to_string())?;
        }
        Ok(std::mem::take(self.encoder.get_mut()))
    }
}
