//! ASDF-in-FITS: an ASDF file read from the `ASDF` extension of a FITS file, its
//! `fits:` arrays from the other HDUs (see [`crate::fits`]).

use std::ops::Range;
use std::path::PathBuf;

use super::source::RangeSource;
use super::{AsdfFile, FileBytes, OpenOptions};
use crate::error::{Error, Location, Result};
use crate::fits::{Fits, FitsError, Hdu, HduArray};
use crate::ndarray::{ArrayMeta, Datatype, Dim, NdArray, Source, Storage};
use crate::tree::NodeRef;

/// The FITS file around an ASDF file: its bytes, its HDUs, and which holds the ASDF file.
pub(crate) struct Container {
    /// The whole FITS file (the ASDF file's own bytes are a window of it).
    bytes: FileBytes,
    fits: Fits,
    /// The ASDF extension's HDU, and the bytes of the ASDF file in the FITS file.
    asdf: (usize, Range<u64>),
    /// A FITS file read by ranges (whose `bytes` hold the headers alone), and each HDU's
    /// data read when first used.
    ranged: Option<RangedHdus>,
}

/// A FITS file read by ranges, and each HDU's data once read.
type RangedHdus = (std::sync::Arc<dyn RangeSource>, Vec<std::sync::OnceLock<Vec<u8>>>);

impl AsdfFile {
    /// Opens the ASDF file inside the FITS file `whole`, whose HDUs are `fits` (see
    /// [`crate::fits`]): its bytes a map of the ASDF extension's part of the file when
    /// `whole` is a map, else a copy of them.
    pub(super) fn from_fits(
        whole: FileBytes,
        fits: Fits,
        path: Option<PathBuf>,
        options: OpenOptions,
    ) -> Result<AsdfFile> {
        let (hdu, range) = fits.asdf_extension().map_err(|e| Error::new(e, Location::default()))?;
        let (index, range) = (hdu.index, range);
        let window = match &whole {
            FileBytes::Mapped(m) => FileBytes::Mapped(m.window(range.start, range.end - range.start)?),
            _ => {
                // `asdf_extension` checked the range against the file's length.
                let part = usize::try_from(range.start)
                    .ok()
                    .zip(usize::try_from(range.end).ok())
                    .and_then(|(s, e)| whole.get(s..e))
                    .unwrap_or_default();
                let mut copy = Vec::new();
                copy.try_reserve_exact(part.len()).map_err(|_| {
                    Error::from(std::io::Error::new(
                        std::io::ErrorKind::OutOfMemory,
                        format!("no memory for the ASDF extension's {} bytes", part.len()),
                    ))
                })?;
                copy.extend_from_slice(part);
                FileBytes::Read(copy)
            }
        };
        let mut asdf = AsdfFile::from_parts(window, path, options)?;
        asdf.fits = Some(Box::new(Container { bytes: whole, fits, asdf: (index, range), ranged: None }));
        Ok(asdf)
    }

    /// Makes this ASDF-in-FITS file read its `fits:` arrays' HDU data from `source`
    /// (what it was opened from holds the headers alone).
    pub(super) fn set_ranged_fits(&mut self, source: std::sync::Arc<dyn RangeSource>) {
        if let Some(c) = self.fits.as_mut() {
            let hdus = c.fits.hdus().len();
            c.ranged = Some((source, (0..hdus).map(|_| std::sync::OnceLock::new()).collect()));
        }
    }

    /// The bytes to read HDU `hdu`'s data from, and the HDU as located in them: the
    /// FITS file's own bytes, or, for a file read by ranges, the HDU's data read alone
    /// (once) and the HDU moved to offset 0.
    fn fits_data<'h>(&self, hdu: &'h Hdu) -> std::result::Result<(std::borrow::Cow<'h, Hdu>, &[u8]), Error> {
        if let Some(c) = self.fits.as_ref()
            && let Some((source, fetched)) = &c.ranged
            && let Some(slot) = fetched.get(hdu.index)
        {
            let data = match slot.get() {
                Some(d) => d,
                None => {
                    crate::Limits::check("max_block_bytes", hdu.data_len, self.options.limits.max_block_bytes)
                        .map_err(|e| Error::new(e, Location { file: self.path.clone(), ..Location::default() }))?;
                    let end = hdu.data_at.saturating_add(hdu.data_len).min(source.len());
                    let got = source
                        .read_range(hdu.data_at.min(end)..end)
                        .map_err(|e| Error::from(e).in_file_opt(self.path()))?;
                    slot.get_or_init(|| got)
                }
            };
            let mut moved = hdu.clone();
            moved.data_at = 0;
            return Ok((std::borrow::Cow::Owned(moved), data));
        }
        Ok((std::borrow::Cow::Borrowed(hdu), self.fits_bytes().unwrap_or_default()))
    }

    /// The FITS file holding this ASDF file, when it is one (ASDF-in-FITS): its HDUs.
    /// The ASDF file itself ([`AsdfFile::read_bytes`], and the offsets of its tree and
    /// blocks) is the data of the HDU [`AsdfFile::fits_extension`] names.
    pub fn fits(&self) -> Option<&Fits> {
        self.fits.as_ref().map(|c| &c.fits)
    }

    /// The whole FITS file's bytes, when this ASDF file is inside one (a remote file's:
    /// its headers and the ASDF extension, zeros where the other HDUs' data is).
    pub fn fits_bytes(&self) -> Option<&[u8]> {
        self.fits.as_ref().map(|c| &c.bytes[..])
    }

    /// The number of the HDU holding this ASDF file, and where the ASDF file lies in
    /// the FITS file, when it is inside one.
    pub fn fits_extension(&self) -> Option<(usize, Range<u64>)> {
        self.fits.as_ref().map(|c| c.asdf.clone())
    }

    /// `Ok` unless the FITS file around this one changed since it was opened (read by
    /// ranges), or was cut short (mapped).
    pub(super) fn fits_unchanged(&self) -> Result<()> {
        let Some(c) = &self.fits else { return Ok(()) };
        if let Some((source, _)) = &c.ranged {
            source.check().map_err(|e| Error::from(e).in_file_opt(self.path()))?;
        }
        c.bytes.check().map_err(|e| Error::from(e).in_file_opt(self.path()))
    }

    /// The HDU a `fits:` source names, and how its data reads.
    fn fits_source(&self, spec: &str) -> std::result::Result<(&Hdu, HduArray), FitsError> {
        let c = self.fits.as_ref().ok_or_else(|| FitsError::NotInFits(spec.to_string()))?;
        let hdu = c.fits.resolve(spec)?;
        Ok((hdu, hdu.array()?))
    }

    fn fits_error(&self, node: NodeRef<'_>, e: FitsError) -> Error {
        Error::new(e, Location { line: Some(self.line_of(node)), file: self.path.clone(), ..Location::default() })
    }

    /// The datatype, byte order and shape the `fits:` array at `node` reads as (the
    /// HDU's, whatever the tree declares, as stdatamodels reads it), from its header.
    pub(super) fn fits_shape(&self, node: NodeRef<'_>, spec: &str) -> Result<(HduArray, usize)> {
        let (hdu, a) = self.fits_source(spec).map_err(|e| self.fits_error(node, e))?;
        Ok((a, hdu.index))
    }

    /// The `fits:` array at `node`: the HDU's data in place when it needs no
    /// conversion, else converted as astropy converts it.
    pub(super) fn fits_ndarray(&self, node: NodeRef<'_>, spec: &str) -> Result<NdArray<'_>> {
        let (hdu, a) = self.fits_source(spec).map_err(|e| self.fits_error(node, e))?;
        let (located, whole) = self.fits_data(hdu)?;
        let data = a.read(&located, whole, &self.options.limits).map_err(|e| self.fits_error(node, e));
        let data = self.unchanged(data)?;
        let meta = ArrayMeta {
            source: Source::Fits(spec.to_string()),
            datatype: a.datatype,
            byteorder: a.byteorder,
            shape: a.shape.iter().map(|&d| Dim::Fixed(d as u64)).collect(),
            offset: 0,
            strides: None,
        };
        NdArray::new(&meta, data, Storage::Fits(hdu.index), None, &self.options.limits)
            .map_err(|e| self.array_error(node, e))
    }

    /// Where the `fits:` array at `node` disagrees with its HDU: a message naming what
    /// the tree declares and what the HDU holds (shape, or datatype, byte order aside),
    /// or `None` when they agree or `node` has no `fits:` source. rasdf, as
    /// stdatamodels, reads what the HDU holds; `rasdf check` warns of a disagreement.
    ///
    /// # Errors
    /// A malformed node, a source naming no HDU, an HDU rasdf does not read.
    pub fn fits_disagreement(&self, node: NodeRef<'_>) -> Result<Option<String>> {
        let meta = ArrayMeta::parse(node).map_err(|e| self.array_error(node, e))?;
        let Source::Fits(spec) = &meta.source else { return Ok(None) };
        let (hdu, a) = self.fits_source(spec).map_err(|e| self.fits_error(node, e))?;
        let declared: Vec<Option<u64>> =
            meta.shape.iter().map(|d| if let Dim::Fixed(v) = d { Some(*v) } else { None }).collect();
        let holds: Vec<Option<u64>> = a.shape.iter().map(|&d| Some(d as u64)).collect();
        let show = |s: &[Option<u64>]| {
            let s: Vec<String> = s.iter().map(|d| d.map_or("*".into(), |v| v.to_string())).collect();
            format!("[{}]", s.join(", "))
        };
        let what = if declared != holds {
            let axes: Vec<String> =
                hdu.naxis.iter().enumerate().map(|(i, n)| format!("NAXIS{} = {n}", i + 1)).collect();
            format!("shape {} but the HDU holds {} ({})", show(&declared), show(&holds), axes.join(", "))
        } else if !same_type(&meta.datatype, &a.datatype) {
            format!("datatype {} but the HDU holds {}", meta.datatype, a.datatype)
        } else {
            return Ok(None);
        };
        Ok(Some(format!(
            "source 'fits:{spec}' (HDU {}, {}): the tree declares {what}; the HDU's data is read, as stdatamodels \
             reads it",
            hdu.index,
            hdu.label()
        )))
    }
}

/// Whether two datatypes are the same but for byte order.
fn same_type(a: &Datatype, b: &Datatype) -> bool {
    match (a, b) {
        (Datatype::Record(x), Datatype::Record(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(f, g)| f.name == g.name && f.shape == g.shape && same_type(&f.datatype, &g.datatype))
        }
        _ => a == b,
    }
}
