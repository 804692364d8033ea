//! Opening a remote file ([`OpenOptions::open_url`]): a [`Remote`] read by ranges as a
//! local file is (see the `ranged` module), with what only a remote file has: its URL,
//! and its exploded blocks' files on the server.

use std::sync::Arc;

use crate::error::{Error, Location, Result};
use crate::external::ExternalError;
use crate::remote::{Remote, RemoteError};

use super::source::RangeSource;
use super::{AsdfFile, OpenOptions};

fn remote_error(e: RemoteError) -> Error {
    Error::from(std::io::Error::from(e))
}

impl RangeSource for Remote {
    fn len(&self) -> u64 {
        Remote::len(self)
    }

    fn read_ranges(&self, ranges: &[std::ops::Range<u64>]) -> std::io::Result<Vec<Vec<u8>>> {
        self.fetch(ranges).map_err(std::io::Error::from)
    }

    fn read_range(&self, range: std::ops::Range<u64>) -> std::io::Result<Vec<u8>> {
        self.fetch_one(range).map_err(std::io::Error::from)
    }

    fn read_in_order(
        &self,
        range: std::ops::Range<u64>,
        consume: &mut dyn FnMut(Vec<u8>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.fetch_in_order(range, consume)
    }

    fn check(&self) -> std::io::Result<()> {
        match self.changed_error() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

impl OpenOptions {
    /// Opens a remote file: `http://` or `https://` (a server that answers byte-range
    /// requests) or `s3://bucket/key` (see [`crate::remote::S3Options`], set with
    /// [`OpenOptions::remote`]). The open reads the header, the tree and the block
    /// headers, in three round trips or fewer when the file has a valid block index;
    /// each block's data is fetched when first read. Everything else is as for a local
    /// file, but a remote file has no external blocks.
    ///
    /// # Errors
    /// The server's and the network's errors as I/O errors (a missing object is
    /// `NotFound`; a server that ignores ranges or sends other bytes than asked is
    /// `InvalidData`), and the errors of a local open.
    pub fn open_url(&self, url: &str) -> Result<AsdfFile> {
        self.open_url_within(url, None)
    }

    /// [`OpenOptions::open_url`], the redirects of its requests held to `folder` (see
    /// [`Remote::open_within`]). Errors name the URL as [`crate::remote::redact_url`]
    /// shows it.
    pub(super) fn open_url_within(&self, url: &str, folder: Option<String>) -> Result<AsdfFile> {
        self.open_url_inner(url, folder).map_err(|e| e.in_file(crate::remote::redact_url(url)))
    }

    fn open_url_inner(&self, url: &str, folder: Option<String>) -> Result<AsdfFile> {
        let (remote, ends) =
            Remote::open_within(url, &self.remote, super::ranged::END_BYTES, super::ranged::END_BYTES, folder)
                .map_err(remote_error)?;
        let remote = Arc::new(remote);
        // Errors name the URL (as a local file's name its path).
        let name = std::path::PathBuf::from(remote.url());
        let mut file = self.open_ranged(Arc::clone(&remote) as Arc<dyn RangeSource>, ends, name)?;
        file.remote = Some(remote);
        Ok(file)
    }
}

/// The URL of external source `source` of the remote file at `base` (a relative path,
/// resolved in the file's folder on the server); `None` for the file itself. As for a
/// local file, nothing outside that folder: no scheme, no absolute path, no `..` that
/// climbs out.
pub(super) fn external_url(base: &str, source: &str) -> std::result::Result<Option<String>, ExternalError> {
    let path = source.split('#').next().unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    if path.is_empty() {
        return Ok(None);
    }
    if let Some(colon) = path.find(':') {
        let scheme = &path[..colon];
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            return Err(ExternalError::Scheme(source.into()));
        }
    }
    let decoded = crate::uri::unescape(path);
    if decoded.contains(&0) {
        return Err(ExternalError::Nul(source.into()));
    }
    if decoded.starts_with(b"/") || decoded.starts_with(b"\\") {
        return Err(ExternalError::Absolute(source.into()));
    }
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in decoded.split(|&b| b == b'/' || b == b'\\') {
        match part {
            b"" | b"." => {}
            b".." => {
                if parts.pop().is_none() {
                    return Err(ExternalError::Escapes(source.into()));
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    // The folder: up to the last `/` of the base's path (not of its query or fragment).
    let base = base.split(['?', '#']).next().unwrap_or(base);
    let folder = &base[..base.rfind('/').map_or(base.len(), |i| i + 1)];
    let rel: Vec<String> = parts.iter().map(|p| crate::uri::escape(p, crate::uri::FILE_NAME)).collect();
    Ok(Some(format!("{folder}{}", rel.join("/"))))
}

impl AsdfFile {
    /// The URL of a remote file (which [`AsdfFile::path`] also gives, as a path), as
    /// [`crate::remote::redact_url`] shows it: without its password or signature.
    pub fn url(&self) -> Option<&str> {
        self.remote.as_deref().map(Remote::url)
    }

    /// The remote object of a remote file (its request and byte counts).
    pub fn remote(&self) -> Option<&Remote> {
        self.remote.as_deref()
    }

    /// The remote file named by external source `uri` of remote file `remote` (opened
    /// once), or `None` for the file itself.
    pub(super) fn remote_external(&self, remote: &Remote, uri: &str) -> Result<Option<&AsdfFile>> {
        let Some(url) = external_url(remote.base_url(), uri).map_err(|e| Error::new(e, Location::default()))? else {
            return Ok(None);
        };
        // Its requests' redirects stay in this file's folder, as its name does.
        let folder = remote.folder();
        self.external_file(std::path::PathBuf::from(&url), || self.options.open_url_within(&url, folder)).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::external_url;

    #[test]
    fn external_urls_stay_in_the_folder_of_the_base_path() {
        let url = |base: &str, source: &str| external_url(base, source).ok().flatten();
        assert_eq!(url("http://h/d/f.asdf", "f0000.asdf").as_deref(), Some("http://h/d/f0000.asdf"));
        // A query (a signature holding `/`) is not part of the folder.
        assert_eq!(url("http://h/d/f.asdf?sig=a/b#x/y", "f0000.asdf").as_deref(), Some("http://h/d/f0000.asdf"));
        assert_eq!(url("http://u:p@h/d/f.asdf", "sub/b.asdf").as_deref(), Some("http://u:p@h/d/sub/b.asdf"));
        assert!(external_url("http://h/d/f.asdf", "../f.asdf").is_err());
        assert!(external_url("http://h/d/f.asdf", "http://evil/f.asdf").is_err());
    }
}
