//! BloscLZ, Blosc's own LZ77 codec (a FastLZ variant): decoding only.
//!
//! A stream is a run of instructions, each opened by a control byte `c` (the first
//! byte's top three bits are a format marker and are ignored):
//! - `c < 32`: a literal, the next `c + 1` bytes copied as they are;
//! - otherwise a match of `(c >> 5) + 2` bytes, plus the following bytes when `c >> 5`
//!   is 7 (each adds its value; a 255 means another follows), copied from `d` bytes
//!   back, `d = ((c & 31) << 8) + next + 1`; when `c & 31` is 31 and that next byte is
//!   255, two more bytes (big-endian) give the far distance `d = 8191 + that + 1`.
//!   Copies may overlap their own output (a distance of 1 repeats one byte).

/// Why a BloscLZ stream does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BloscLzError {
    /// An instruction reads past the end of the input.
    Truncated,
    /// A match reaches before the start of the output.
    BadDistance,
    /// The output would pass its expected size.
    Overflow,
}

/// Decodes `input` into `out`, which it must fill exactly; returns the bytes written.
///
/// # Errors
/// A truncated stream, a distance before the start, or more output than `out` holds.
pub(crate) fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, BloscLzError> {
    let mut ip = 0usize;
    let mut op = 0usize;
    let Some(&first) = input.first() else { return Ok(0) };
    let mut ctrl = usize::from(first & 31);
    ip += 1;
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let high = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let code = *input.get(ip).ok_or(BloscLzError::Truncated)?;
                    ip += 1;
                    len += usize::from(code);
                    if code != 255 {
                        break;
                    }
                }
            }
            let code = usize::from(*input.get(ip).ok_or(BloscLzError::Truncated)?);
            ip += 1;
            let distance = if code == 255 && high == 31 << 8 {
                let far = input.get(ip..ip + 2).ok_or(BloscLzError::Truncated)?;
                ip += 2;
                8191 + usize::from(u16::from_be_bytes([far[0], far[1]])) + 1
            } else {
                high + code + 1
            };
            let count = len + 3;
            if op + count > out.len() {
                return Err(BloscLzError::Overflow);
            }
            if distance > op {
                return Err(BloscLzError::BadDistance);
            }
            let from = op - distance;
            if distance >= count {
                out.copy_within(from..from + count, op);
            } else if distance == 1 {
                let b = out[from];
                out[op..op + count].fill(b);
            } else {
                for i in 0..count {
                    out[op + i] = out[from + i];
                }
            }
            op += count;
        } else {
            let count = ctrl + 1;
            let lit = input.get(ip..ip + count).ok_or(BloscLzError::Truncated)?;
            let dst = out.get_mut(op..op + count).ok_or(BloscLzError::Overflow)?;
            dst.copy_from_slice(lit);
            ip += count;
            op += count;
        }
        match input.get(ip) {
            Some(&c) => {
                ctrl = usize::from(c);
                ip += 1;
            }
            None => return Ok(op),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_matches_runs_and_far_matches() {
        // Literal "abcd" (marker bits set on the first byte), then a match of 5 at
        // distance 4, then a run of 6 at distance 1.
        let stream = [0x20 | 3, b'a', b'b', b'c', b'd', 3 << 5, 3, 4 << 5, 0];
        let mut out = [0u8; 15];
        assert_eq!(decompress(&stream, &mut out), Ok(15));
        assert_eq!(&out, b"abcdabcdaaaaaaa");

        // A long match (len code 7 plus 255 plus 2) at a far distance.
        let mut data = vec![0u8; 9000];
        for (i, b) in data.iter_mut().enumerate() {
            *b = u8::try_from(i % 251).unwrap();
        }
        let mut stream = Vec::new();
        for piece in data.chunks(32) {
            stream.push(u8::try_from(piece.len() - 1).unwrap());
            stream.extend_from_slice(piece);
        }
        // Copy 7 + 2 + 255 + 2 = 266 bytes from 8192 + 7 bytes back.
        stream.extend_from_slice(&[(7 << 5) | 31, 255, 2, 255, 0, 7]);
        let mut out = vec![0u8; 9266];
        assert_eq!(decompress(&stream, &mut out), Ok(9266));
        assert_eq!(out[..9000], data[..]);
        let from = 9000 - (8191 + 7 + 1);
        assert_eq!(out[9000..], data[from..from + 266]);
    }

    #[test]
    fn damaged_streams_are_errors() {
        let mut out = [0u8; 8];
        assert_eq!(decompress(&[3, 1, 2], &mut out), Err(BloscLzError::Truncated));
        assert_eq!(decompress(&[0, 1, 1 << 5, 5], &mut out), Err(BloscLzError::BadDistance));
        assert_eq!(decompress(&[0, 1, 7 << 5, 200, 0], &mut out), Err(BloscLzError::Overflow));
        assert_eq!(decompress(&[0, 1, 7 << 5], &mut out), Err(BloscLzError::Truncated));
        assert_eq!(decompress(&[9, 1, 2], &mut out), Err(BloscLzError::Truncated));
    }
}
