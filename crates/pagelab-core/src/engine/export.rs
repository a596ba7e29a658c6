//! `--export-phys`: every physical reference the caches see, one per line,
//! `R 0x…` (load), `W 0x…` (store), `P 0x…` (page-walk reference), `I 0x…`
//! (instruction fetch); zstd-compressed when the file name ends in `.zst`.
//! Written to `NAME.partial` and renamed on success, so a failed run leaves
//! no half-written file under the requested name.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::core::RefKind;
use crate::error::{Error, Result};

enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

pub struct PhysExport {
    sink: Sink,
    path: PathBuf,
    partial: PathBuf,
    line: Vec<u8>,
    error: Option<std::io::Error>,
}

impl PhysExport {
    pub fn create(path: &Path) -> Result<PhysExport> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = BufWriter::with_capacity(1 << 20, File::create(&partial).map_err(|e| Error::io(&partial, e))?);
        let sink = if path.extension().is_some_and(|e| e == "zst") {
            Sink::Zstd(zstd::Encoder::new(file, 3).map_err(|e| Error::io(path, e))?)
        } else {
            Sink::Plain(file)
        };
        Ok(PhysExport { sink, path: path.to_path_buf(), partial, line: Vec::with_capacity(32), error: None })
    }

    #[inline]
    pub fn write(&mut self, addr: u64, kind: RefKind) {
        let tag = match kind {
            RefKind::Load => b'R',
            RefKind::Store => b'W',
            RefKind::Walk => b'P',
            RefKind::IFetch => b'I',
        };
        self.line.clear();
        self.line.extend_from_slice(&[tag, b' ', b'0', b'x']);
        let digits = 16 - (addr.leading_zeros() / 4).min(15) as usize;
        for i in (0..digits).rev() {
            self.line.push(b"0123456789abcdef"[((addr >> (i * 4)) & 0xf) as usize]);
        }
        self.line.push(b'\n');
        let r = match &mut self.sink {
            Sink::Plain(w) => w.write_all(&self.line),
            Sink::Zstd(w) => w.write_all(&self.line),
        };
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Flushes, closes and renames into place; the first write error, if
    /// any, is reported here and the partial file removed.
    pub fn finish(self) -> Result<()> {
        let flushed = match self.sink {
            Sink::Plain(mut w) => w.flush(),
            Sink::Zstd(w) => w.finish().and_then(|mut f| f.flush()),
        };
        let result = match self.error {
            Some(e) => Err(e),
            None => flushed,
        }
        .and_then(|_| std::fs::rename(&self.partial, &self.path));
        result.map_err(|e| {
            let _ = std::fs::remove_file(&self.partial);
            Error::io(&self.path, e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_hex_and_renamed_on_finish() {
        let dir = std::env::temp_dir().join(format!("pagelab-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("refs.txt");
        let mut e = PhysExport::create(&path).unwrap();
        e.write(0x1f40, RefKind::Load);
        e.write(0, RefKind::Walk);
        e.write(0xdea_dbee_f000, RefKind::Store);
        assert!(!path.exists());
        e.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "R 0x1f40\nP 0x0\nW 0xdeadbeef000\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
