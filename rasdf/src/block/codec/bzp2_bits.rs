//! Bit strings, most significant bit first, as bzip2 lays out its blocks: reading at any
//! bit offset, and writing bits and bytes at any alignment.

/// `n` (at most 56) bits of `data` from bit `p`, most significant first.
pub(super) fn read_bits(data: &[u8], p: u64, n: u32) -> Option<u64> {
    let k = usize::try_from(p / 8).ok()?;
    let s = (p % 8) as u32;
    let bytes = (s + n).div_ceil(8);
    let window = data.get(k..k.checked_add(bytes as usize)?)?;
    let mut acc = 0u64;
    for &byte in window {
        acc = (acc << 8) | u64::from(byte);
    }
    Some((acc >> (bytes * 8 - s - n)) & ((1u64 << n) - 1))
}

/// Bits appended most significant first, at any alignment.
pub(super) struct BitWriter {
    out: Vec<u8>,
    /// Pending bits (the low `n`).
    acc: u64,
    n: u32,
}

impl BitWriter {
    pub(super) fn with_capacity(bytes: usize) -> Self {
        BitWriter { out: Vec::with_capacity(bytes), acc: 0, n: 0 }
    }

    /// Appends the low `count` (at most 56) bits of `value`.
    pub(super) fn bits(&mut self, value: u64, count: u32) {
        self.acc = (self.acc << count) | (value & ((1u64 << count) - 1));
        self.n += count;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n).to_le_bytes()[0]);
        }
    }

    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        if self.n == 0 {
            self.out.extend_from_slice(bytes);
            return;
        }
        // Each byte shifts through the n pending bits.
        let n = self.n;
        let mut acc = self.acc;
        self.out.extend(bytes.iter().map(|&b| {
            acc = (acc << 8) | u64::from(b);
            (acc >> n).to_le_bytes()[0]
        }));
        self.acc = acc & ((1u64 << n) - 1);
    }

    /// Appends bits `a..b` of `src`, at any alignment of either.
    pub(super) fn copy_bits(&mut self, src: &[u8], a: u64, b: u64) -> Option<()> {
        let nbits = b.checked_sub(a)?;
        let whole = nbits / 8;
        let start = usize::try_from(a / 8).ok()?;
        let shift = (a % 8) as u32;
        let len = usize::try_from(whole).ok()?;
        if shift == 0 {
            self.bytes(src.get(start..start.checked_add(len)?)?);
        } else {
            // Each byte of the copy straddles two of `src`.
            let window = src.get(start..start.checked_add(len)?.checked_add(1)?)?;
            for pair in window.windows(2) {
                self.bits(u64::from((pair[0] << shift) | (pair[1] >> (8 - shift))), 8);
            }
        }
        let rest = (nbits % 8) as u32;
        if rest > 0 {
            self.bits(read_bits(src, a + 8 * whole, rest)?, rest);
        }
        Some(())
    }

    /// The whole bytes so far, taken out (the pending bits stay).
    pub(super) fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The bytes, the last padded with zero bits.
    pub(super) fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)).to_le_bytes()[0]);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bits_most_significant_first() {
        let data = [0b1010_0000, 0xff, 0x01];
        assert_eq!(read_bits(&data, 0, 3), Some(0b101));
        assert_eq!(read_bits(&data, 4, 8), Some(0b0000_1111));
        assert_eq!(read_bits(&data, 16, 8), Some(1));
        assert_eq!(read_bits(&data, 20, 8), None);
    }

    #[test]
    fn bit_writer_joins_at_any_alignment() {
        for shift in 0..8u32 {
            let mut w = BitWriter { out: Vec::new(), acc: 0, n: 0 };
            w.bits(0b1, shift.max(1));
            w.bytes(&[0xde, 0xad]);
            w.bits(0b101, 3);
            let got = w.finish();
            let total = u64::from(shift.max(1)) + 16 + 3;
            assert_eq!(read_bits(&got, u64::from(shift.max(1)), 16), Some(0xdead), "shift {shift}");
            assert_eq!(read_bits(&got, total - 3, 3), Some(0b101));
            assert_eq!(got.len() as u64, total.div_ceil(8));
        }
    }

    #[test]
    fn copies_bits_at_any_alignment_of_source_and_destination() {
        let src = [0b1011_0011, 0b0101_1100, 0b1110_0001, 0b0001_1111];
        for lead in 0..8u32 {
            for a in 0..10u64 {
                for b in a..=32 {
                    let mut w = BitWriter::with_capacity(8);
                    w.bits(0, lead);
                    w.copy_bits(&src, a, b).unwrap();
                    let got = w.finish();
                    for i in a..b {
                        assert_eq!(
                            read_bits(&got, u64::from(lead) + i - a, 1),
                            read_bits(&src, i, 1),
                            "lead {lead}, bits {a}..{b}, bit {i}"
                        );
                    }
                }
            }
        }
        assert!(BitWriter::with_capacity(0).copy_bits(&src, 8, 40).is_none(), "beyond the source");
    }
}
