//! Every file pagelab writes (a converted or captured trace, an export of
//! physical references, a graph-cache entry, Leshy's hints, and through
//! the Python bindings every table, figure, report and store export) goes
//! through [`OutFile`]: written whole or not at all, and never over
//! something that is not a file.
//!
//! - The target must be absent, a regular file, or a symbolic link to one
//!   (then the file it points to is replaced and the link kept). A
//!   directory, a named pipe, a device or a socket is refused before
//!   anything is written: renaming a temporary file over a FIFO or over
//!   `/dev/null` (as root) would replace it with a regular file. A file
//!   this process may not write is refused too (renaming over it would
//!   replace what its owner protected).
//! - The data goes to a temporary file beside the target (a hidden name, so
//!   that a directory's listing or `pagelab report` skips it), renamed over
//!   the target by [`OutFile::commit`]. Dropped without a commit (an error,
//!   a panic, Ctrl-C unwinding), the temporary file is removed; killed by a
//!   signal that can be caught, the process removes it first
//!   ([`cleanup`]).
//! - Errors name the user's path, never the temporary one.

pub mod cleanup;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// A file being written: its temporary file beside the target, removed
/// unless committed.
#[derive(Debug)]
pub struct OutFile {
    /// The path the user gave (named in errors).
    target: PathBuf,
    /// Where the rename goes: `target`, or the file a link there points to.
    dest: PathBuf,
    temp: PathBuf,
    guard: Option<cleanup::Guard>,
}

/// Makes temporary names unique within the process (several outputs may
/// be open at once, on several threads).
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl OutFile {
    /// Checks that `target` may be written ([`check_target`]) and creates
    /// its temporary file; returns it open for writing.
    pub fn create(target: &Path) -> Result<(OutFile, File)> {
        let dest = check_target(target)?;
        let temp = temp_name(&dest);
        let guard = cleanup::Guard::file(&temp);
        let file = File::options().write(true).create_new(true).open(&temp).map_err(|e| Error::io(target, e))?;
        Ok((OutFile { target: target.to_path_buf(), dest, temp, guard: Some(guard) }, file))
    }

    /// The temporary file's path, for a writer that opens files by name.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The path the user gave.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file over the target. The caller has flushed
    /// (and closed or synced) what it wrote.
    pub fn commit(mut self) -> Result<()> {
        let renamed = std::fs::rename(&self.temp, &self.dest);
        if renamed.is_ok() {
            self.guard.take();
        }
        renamed.map_err(|e| Error::io(&self.target, e))
    }

    /// An I/O error on the output, named by the user's path.
    pub fn error(&self, e: std::io::Error) -> Error {
        Error::io(&self.target, e)
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.guard.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Where an output to `target` is renamed to: `target` itself when it is
/// absent or a regular file, the file a symbolic link points to; an error
/// for anything else (see the module's text).
pub fn check_target(target: &Path) -> Result<PathBuf> {
    let refuse = |what: &str| {
        Error::io(
            target,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{what}; pagelab writes its outputs only to regular files (give a file name)"),
            ),
        )
    };
    if target.as_os_str().is_empty() || target.file_name().is_none() {
        return Err(refuse("not a file name"));
    }
    let link = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target.to_path_buf()),
        Err(e) => return Err(Error::io(target, e)),
        Ok(m) => m,
    };
    let is_link = link.file_type().is_symlink();
    let meta =
        if is_link { std::fs::metadata(target).map_err(|_| refuse("is a symbolic link to nothing"))? } else { link };
    if let Some(what) = not_a_file(&meta.file_type()) {
        return Err(refuse(what));
    }
    if !may_write(target) {
        return Err(Error::io(target, std::io::Error::from(std::io::ErrorKind::PermissionDenied)));
    }
    if is_link {
        return std::fs::canonicalize(target).map_err(|e| Error::io(target, e));
    }
    Ok(target.to_path_buf())
}

/// What a file type is, when it is not a regular file.
fn not_a_file(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("is a directory")
    } else if t.is_fifo() {
        Some("is a named pipe (FIFO)")
    } else if t.is_char_device() || t.is_block_device() {
        Some("is a device")
    } else if t.is_socket() {
        Some("is a socket")
    } else {
        Some("is not a regular file")
    }
}

/// Whether this process may write the existing file `path` (root may
/// write any).
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `.NAME.PID-N.tmp` beside `dest`: hidden, and unique in the process.
fn temp_name(dest: &Path) -> PathBuf {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    dest.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// Whether `a` and `b` name the same existing file (an output given the
/// path of an input).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Refuses an output that would replace one of the command's inputs.
pub fn check_not_input(target: &Path, inputs: &[&Path]) -> Result<()> {
    match inputs.iter().find(|i| same_file(target, i)) {
        Some(input) => Err(Error::io(
            target,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("is the input {}; give the output another name", input.display()),
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
