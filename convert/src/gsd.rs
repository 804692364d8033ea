//! GSD (General Simulation Data, glotzerlab): a 256-byte header, an index of 32-byte
//! entries (frame, N, location, M, name id, type, flags), a name list, and the chunks:
//! each an N x M matrix in C order, in the file's (little-endian) byte order.
//!
//! Files of version 0.3, 1.x (names in 64-byte slots) and 2.x (names NUL-separated)
//! are read; version 2.1 is written, as gsd 2.0 to 5.x write it. The index ends at its
//! first entry with location 0; its frames never decrease. In ASDF a file is the tree
//!
//! ```yaml
//! gsd: {application: ..., schema: hoomd, schema_version: [1, 4], file_version: [2, 1]}
//! frames:
//! - {configuration/step: !core/ndarray-1.1.0 ..., log/text: some text}
//! ```
//!
//! with each chunk under its own name, an array of shape `[N]` when M is 1 and `[N, M]`
//! otherwise, and a text chunk (type 11) as its string, as `gsd.fl` reads them. A
//! hoomd file's frames keep only the chunks written in them (the schema's fallback to
//! frame 0 is the reader's business, not the file's).

use super::ConvertError;
use rasdf::ndarray::{Datatype, ScalarType};

/// The magic number.
pub const MAGIC: u64 = 0x65DF_65DF_65DF_65DF;
/// The file version rasdf writes: 2.1.
pub const VERSION_WRITTEN: u32 = 0x0002_0001;
/// The type id of text.
pub const TYPE_CHARACTER: u8 = 11;
const HEADER_LEN: usize = 256;
const FORMAT: &str = "GSD";

fn malformed(what: impl Into<String>) -> ConvertError {
    ConvertError::Malformed { format: FORMAT, what: what.into() }
}

/// The header of a GSD file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GsdHeader {
    /// Byte offset of the index.
    pub index_location: u64,
    /// Entries the index has room for.
    pub index_allocated_entries: u64,
    /// Byte offset of the name list.
    pub namelist_location: u64,
    /// Size of the name list in 64-byte segments.
    pub namelist_allocated_entries: u64,
    /// `(major << 16) | minor` of the schema.
    pub schema_version: u32,
    /// `(major << 16) | minor` of the file format.
    pub gsd_version: u32,
    /// The application that wrote the file.
    pub application: String,
    /// The schema's name (`hoomd`).
    pub schema: String,
}

/// One chunk of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The frame.
    pub frame: u64,
    /// The chunk's name.
    pub name: String,
    /// The type id (1-10 numbers, 11 text).
    pub type_id: u8,
    /// Rows.
    pub n: u64,
    /// Columns.
    pub m: u32,
    /// The data, N x M elements in C order.
    pub data: &'a [u8],
}

/// A GSD file read: its header, and its chunks in index order, as gsd reads them: a
/// chunk whose name is also an earlier name of the list, or whose frame and name an
/// earlier entry already has, is hidden by it (gsd finds a name's first id, then one
/// entry of that frame), so it is left out.
#[derive(Debug, Clone)]
pub struct GsdFile<'a> {
    /// The header.
    pub header: GsdHeader,
    /// The chunks, frame by frame.
    pub chunks: Vec<Chunk<'a>>,
    /// Frames: one more than the last chunk's frame.
    pub frames: u64,
}

/// The numeric type of a type id (`None` for text and unknown ids).
pub fn scalar_of(type_id: u8) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match type_id {
        1 => UInt8,
        2 => UInt16,
        3 => UInt32,
        4 => UInt64,
        5 => Int8,
        6 => Int16,
        7 => Int32,
        8 => Int64,
        9 => Float32,
        10 => Float64,
        _ => return None,
    })
}

/// The type id of a datatype GSD holds.
pub fn type_of(datatype: &Datatype) -> Option<u8> {
    (1..=10).find(|&t| scalar_of(t).map(Datatype::Scalar).as_ref() == Some(datatype))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn text(field: &[u8], what: &str) -> Result<String, ConvertError> {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8(field[..end].to_vec()).map_err(|_| malformed(format!("header: the {what} is not UTF-8")))
}

impl GsdHeader {
    /// Reads the header at the start of `file`.
    ///
    /// # Errors
    /// No magic number; a version rasdf does not read; a file shorter than a header.
    pub fn parse(file: &[u8]) -> Result<GsdHeader, ConvertError> {
        if file.len() < 8 || u64_at(file, 0) != MAGIC {
            return Err(ConvertError::NotFormat { format: FORMAT, why: "no GSD magic number at byte 0".into() });
        }
        if file.len() < HEADER_LEN {
            return Err(malformed(format!("header: the file ends at byte {} inside it", file.len())));
        }
        let u32_at = |at: usize| u32::from_le_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]);
        let gsd_version = u32_at(44);
        if gsd_version != 3 && !(0x0001_0000..0x0003_0000).contains(&gsd_version) {
            return Err(ConvertError::Unsupported(format!(
                "GSD file version {}.{} is not read (0.3, 1.x and 2.x are)",
                gsd_version >> 16,
                gsd_version & 0xffff
            )));
        }
        Ok(GsdHeader {
            index_location: u64_at(file, 8),
            index_allocated_entries: u64_at(file, 16),
            namelist_location: u64_at(file, 24),
            namelist_allocated_entries: u64_at(file, 32),
            schema_version: u32_at(40),
            gsd_version,
            application: text(&file[48..112], "application")?,
            schema: text(&file[112..176], "schema")?,
        })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        for w in [MAGIC, self.index_location, self.index_allocated_entries, self.namelist_location] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.namelist_allocated_entries.to_le_bytes());
        out.extend_from_slice(&self.schema_version.to_le_bytes());
        out.extend_from_slice(&self.gsd_version.to_le_bytes());
        for (s, len) in [(&self.application, 64), (&self.schema, 64)] {
            let mut field = s.as_bytes()[..s.len().min(len - 1)].to_vec();
            field.resize(len, 0);
            out.extend_from_slice(&field);
        }
        out.resize(HEADER_LEN, 0);
        out
    }
}

/// The byte range `[at, at + len)` of `file`, or an error naming `what`.
fn range<'a>(file: &'a [u8], at: u64, len: Option<u64>, what: &str) -> Result<&'a [u8], ConvertError> {
    let end = len.and_then(|l| at.checked_add(l)).filter(|&e| e <= file.len() as u64);
    let span = end.and_then(|e| Some((usize::try_from(at).ok()?, usize::try_from(e).ok()?)));
    match span {
        Some((from, to)) => Ok(&file[from..to]),
        None => Err(malformed(format!(
            "{what} at byte {at}: {} bytes do not fit in a file of {}",
            len.map_or("too many".into(), |l| l.to_string()),
            file.len()
        ))),
    }
}

impl<'a> GsdFile<'a> {
    /// Reads a GSD file from its bytes; the chunks borrow them.
    ///
    /// # Errors
    /// [`ConvertError::NotFormat`] without the magic; [`ConvertError::Malformed`] for an
    /// index or name list outside the file, an entry that is not valid (unknown type,
    /// flags set, a name id past the list, data outside the file, a frame smaller than
    /// the one before), with its byte offset.
    pub fn parse(file: &'a [u8]) -> Result<GsdFile<'a>, ConvertError> {
        let header = GsdHeader::parse(file)?;
        let names = read_names(file, &header)?;
        let index = range(file, header.index_location, header.index_allocated_entries.checked_mul(32), "the index")?;
        let mut chunks = Vec::new();
        let mut last_frame = 0;
        let mut seen = std::collections::HashSet::new();
        for (i, e) in index.chunks_exact(32).enumerate() {
            let at = header.index_location + 32 * i as u64;
            let (frame, n, location) = (u64_at(e, 0), u64_at(e, 8), u64_at(e, 16));
            if location == 0 {
                break;
            }
            let m = u32::from_le_bytes([e[24], e[25], e[26], e[27]]);
            let id = u16::from_le_bytes([e[28], e[29]]);
            let (type_id, flags) = (e[30], e[31]);
            let bad = |why: String| malformed(format!("index entry {i} at byte {at}: {why}"));
            let size = match (type_id, scalar_of(type_id)) {
                (TYPE_CHARACTER, _) => 1,
                (_, Some(t)) => t.size() as u64,
                _ => return Err(bad(format!("unknown type {type_id}"))),
            };
            if flags != 0 {
                return Err(bad(format!("flags {flags} (must be 0)")));
            }
            let name = names.get(usize::from(id)).ok_or_else(|| bad(format!("name id {id} of {}", names.len())))?;
            if frame < last_frame {
                return Err(bad(format!("frame {frame} after frame {last_frame}")));
            }
            if frame >= header.index_allocated_entries {
                return Err(bad(format!("frame {frame} past the index's {} entries", header.index_allocated_entries)));
            }
            last_frame = frame;
            let len = n.checked_mul(u64::from(m)).and_then(|c| c.checked_mul(size));
            let data = range(file, location, len, &format!("the data of index entry {i}"))?;
            if seen.insert((frame, name.as_str())) {
                chunks.push(Chunk { frame, name: name.clone(), type_id, n, m, data });
            }
        }
        let frames = chunks.last().map_or(0, |c| c.frame + 1);
        Ok(GsdFile { header, chunks, frames })
    }
}

fn read_names(file: &[u8], header: &GsdHeader) -> Result<Vec<String>, ConvertError> {
    let block =
        range(file, header.namelist_location, header.namelist_allocated_entries.checked_mul(64), "the name list")?;
    let utf8 = |b: &[u8]| {
        String::from_utf8(b.to_vec())
            .map_err(|_| malformed(format!("the name list at byte {}: a name is not UTF-8", header.namelist_location)))
    };
    let mut names = Vec::new();
    if header.gsd_version >= 0x0002_0000 {
        if block.last().is_some_and(|&c| c != 0) {
            return Err(malformed(format!(
                "the name list at byte {}: its last byte is not 0",
                header.namelist_location
            )));
        }
        for name in block.split(|&c| c == 0) {
            if name.is_empty() {
                break;
            }
            names.push(utf8(name)?);
        }
    } else {
        for slot in block.chunks_exact(64) {
            let end = slot.iter().position(|&c| c == 0).unwrap_or(64);
            if end == 0 {
                break;
            }
            names.push(utf8(&slot[..end])?);
        }
    }
    Ok(names)
}

/// A chunk to write.
#[derive(Debug, Clone)]
pub struct ChunkOut {
    /// The frame.
    pub frame: u64,
    /// The name.
    pub name: String,
    /// The type id.
    pub type_id: u8,
    /// Rows.
    pub n: u64,
    /// Columns.
    pub m: u32,
    /// N x M elements, little-endian, C order.
    pub data: Vec<u8>,
}

/// A chunk to lay out with [`Layout::new`]: what the index says of it, its data to come.
#[derive(Debug, Clone)]
pub struct ChunkPlan {
    /// The frame.
    pub frame: u64,
    /// The name.
    pub name: String,
    /// The type id.
    pub type_id: u8,
    /// Rows.
    pub n: u64,
    /// Columns.
    pub m: u32,
    /// The bytes of its data.
    pub bytes: u64,
}

/// A GSD 2.1 file of `chunks` (in frame order), in memory: see [`Layout`].
///
/// # Errors
/// As [`Layout::new`].
pub fn encode(
    application: &str,
    schema: &str,
    schema_version: u32,
    chunks: &[ChunkOut],
) -> Result<Vec<u8>, ConvertError> {
    let plans: Vec<ChunkPlan> = chunks
        .iter()
        .map(|c| ChunkPlan {
            frame: c.frame,
            name: c.name.clone(),
            type_id: c.type_id,
            n: c.n,
            m: c.m,
            bytes: c.data.len() as u64,
        })
        .collect();
    let layout = Layout::new(application, schema, schema_version, &plans)?;
    let mut out = Vec::new();
    layout
        .write_to(&mut out, |i, w| w.write_all(&chunks[i].data))
        .map_err(|e| ConvertError::Unsupported(e.to_string()))?;
    Ok(out)
}

/// A GSD 2.1 file laid out before its data: header, index (sorted by frame and name,
/// as gsd sorts it), name list, then each chunk's data in the index's order.
#[derive(Debug)]
pub struct Layout {
    /// Header, index and name list.
    head: Vec<u8>,
    /// The chunks in the order their data comes, with their sizes.
    order: Vec<(usize, u64)>,
}

impl Layout {
    /// Lays out a file of `chunks` (in frame order).
    ///
    /// # Errors
    /// More than 65 535 names, frames out of order, a name that is empty or has a NUL,
    /// frames far past the chunks.
    pub fn new(
        application: &str,
        schema: &str,
        schema_version: u32,
        chunks: &[ChunkPlan],
    ) -> Result<Layout, ConvertError> {
        let mut names: Vec<&str> = Vec::new();
        let mut ids = Vec::with_capacity(chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            if c.name.is_empty() || c.name.contains('\0') {
                return Err(ConvertError::Unsupported(format!("GSD chunk name {:?}: empty or with a NUL", c.name)));
            }
            if i > 0 && c.frame < chunks[i - 1].frame {
                return Err(ConvertError::Unsupported("GSD chunks must come in frame order".into()));
            }
            let id = match names.iter().position(|n| *n == c.name) {
                Some(id) => id,
                None => {
                    names.push(&c.name);
                    names.len() - 1
                }
            };
            ids.push(
                u16::try_from(id).map_err(|_| ConvertError::Unsupported("GSD holds at most 65 535 names".into()))?,
            );
        }
        let frames = chunks.last().map_or(0, |c| c.frame.saturating_add(1));
        // The index needs a slot per frame: frames far past the chunks would be mostly
        // empty index.
        if frames > (chunks.len() as u64).saturating_mul(2).saturating_add(1 << 20) {
            return Err(ConvertError::Unsupported(format!(
                "GSD frame {} with only {} chunks",
                frames - 1,
                chunks.len()
            )));
        }
        let slots = (chunks.len() as u64 + 1).max(frames).max(128);
        let index_len = usize::try_from(32 * slots).map_err(|_| ConvertError::Unsupported("too many frames".into()))?;
        let mut namelist: Vec<u8> = names.iter().flat_map(|n| n.bytes().chain([0])).collect();
        namelist.push(0);
        namelist.resize(namelist.len().div_ceil(64).max(16) * 64, 0);
        let index_location = HEADER_LEN as u64;
        let namelist_location = index_location + 32 * slots;
        let mut location = namelist_location + namelist.len() as u64;
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&i| (chunks[i].frame, ids[i]));
        let header = GsdHeader {
            index_location,
            index_allocated_entries: slots,
            namelist_location,
            namelist_allocated_entries: namelist.len() as u64 / 64,
            schema_version,
            gsd_version: VERSION_WRITTEN,
            application: application.into(),
            schema: schema.into(),
        };
        let mut head = header.to_bytes();
        head.reserve(index_len + namelist.len());
        for &i in &order {
            let c = &chunks[i];
            head.extend_from_slice(&c.frame.to_le_bytes());
            head.extend_from_slice(&c.n.to_le_bytes());
            // An empty chunk still needs a location other than 0 (which ends the index).
            head.extend_from_slice(&location.to_le_bytes());
            head.extend_from_slice(&c.m.to_le_bytes());
            head.extend_from_slice(&ids[i].to_le_bytes());
            head.extend_from_slice(&[c.type_id, 0]);
            location = location.saturating_add(c.bytes);
        }
        head.resize(HEADER_LEN + index_len, 0);
        head.extend_from_slice(&namelist);
        Ok(Layout { head, order: order.into_iter().map(|i| (i, chunks[i].bytes)).collect() })
    }

    /// Writes the file to `w`: header, index and name list, then `data(i, w)` for each
    /// chunk `i` in the index's order, which must write its `bytes`; one chunk at a
    /// time, so the file is never held whole.
    ///
    /// # Errors
    /// Write errors; a chunk whose data is not its `bytes` long (naming it).
    pub fn write_to<W: std::io::Write>(
        &self,
        w: &mut W,
        mut data: impl FnMut(usize, &mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        w.write_all(&self.head)?;
        for &(i, bytes) in &self.order {
            let mut counted = Counted { w: &mut *w, n: 0 };
            data(i, &mut counted)?;
            if counted.n != bytes {
                return Err(std::io::Error::other(format!(
                    "GSD chunk {i} wrote {} bytes of data, not {bytes}",
                    counted.n
                )));
            }
        }
        Ok(())
    }
}

/// A writer that counts the bytes through it.
struct Counted<'w, W> {
    w: &'w mut W,
    n: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.w.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
