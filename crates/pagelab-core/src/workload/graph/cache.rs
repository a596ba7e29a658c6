//! The graph cache: generated Kronecker graphs kept on disk, so that a sweep
//! that runs the same graph many times builds it once.
//!
//! Building a scale-25 graph (1 G directed edges, 4.3 GiB) takes the host
//! about two minutes; reading it back takes seconds. GAPBS's answer is the
//! same: its converter serializes a built graph (`.sg` files) for the
//! kernels to load. A cached graph is the exact CSR the generator would
//! build, so results do not depend on whether the cache was used.
//!
//! Key: (generator version, scale, degree, seed), in the file name and again
//! in the header. [`GENERATOR_VERSION`] changes whenever `kronecker` or the
//! CSR builder would produce a different graph (a test pins a fingerprint
//! of the generator's output to it). A file whose header, length, structure
//! or checksum is wrong is rebuilt, with a warning; a cache that cannot be
//! written costs only the rebuild next time.
//!
//! Where: `PAGELAB_GRAPH_CACHE` names the directory; `off` (or empty)
//! disables the cache; unset means `$XDG_CACHE_HOME/pagelab/graphs`, else
//! `$HOME/.cache/pagelab/graphs`. Only graphs of at least
//! [`MIN_CACHED_SCALE`] are cached: smaller ones build faster than a file
//! is checked.

use super::{kronecker, Csr};
use crate::outfile::OutFile;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Bumped whenever the generator's output changes (see the module comment).
pub const GENERATOR_VERSION: u32 = 1;
/// Graphs below this scale (about 4 s to build) are not cached.
pub const MIN_CACHED_SCALE: u32 = 20;
const MAGIC: &[u8; 8] = b"PLKRONv1";
/// Bytes per read or write call.
const CHUNK: usize = 8 << 20;

/// The generator's inputs: what a cached graph is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphKey {
    pub scale: u32,
    pub degree: u32,
    pub seed: u64,
}

impl GraphKey {
    fn file_name(&self) -> String {
        format!("kron-v{GENERATOR_VERSION}-s{}-d{}-seed{}.plg", self.scale, self.degree, self.seed)
    }

    fn header(&self, g: &Csr) -> [u64; 6] {
        [
            GENERATOR_VERSION as u64,
            self.scale as u64,
            self.degree as u64,
            self.seed,
            g.offsets.len() as u64 - 1,
            g.neigh.len() as u64,
        ]
    }
}

/// The cache directory the environment asks for, if any.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("PAGELAB_GRAPH_CACHE") {
        Some(v) if v.is_empty() || v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
            Some(base.join("pagelab").join("graphs"))
        }
    }
}

/// The Kronecker graph of `key`: from the cache in `dir` when it holds a
/// valid copy, else built (and stored there if the scale is worth it).
pub fn kronecker_cached(key: GraphKey, dir: Option<&Path>) -> Csr {
    let Some(dir) = dir.filter(|_| key.scale >= MIN_CACHED_SCALE) else {
        return kronecker(key.scale, key.degree, key.seed);
    };
    let path = dir.join(key.file_name());
    if path.exists() {
        match load(&path, key) {
            Ok(g) => return g,
            Err(why) => eprintln!("pagelab: graph cache {}: {why}; rebuilding it", path.display()),
        }
    }
    let g = kronecker(key.scale, key.degree, key.seed);
    if let Err(why) = store(&path, key, &g) {
        eprintln!("pagelab: graph cache {}: not written: {why}", path.display());
    }
    g
}

/// Writes `g` to a temporary file beside `path`, then renames it, so that a
/// reader (or a parallel run building the same graph) never sees half a file.
pub fn store(path: &Path, key: GraphKey, g: &Csr) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
        // Estimated before it is written: a cache must not fill the disk
        // (it is an optimisation; the run goes on without it).
        let bytes = 8 * (g.offsets.len() + key.header(g).len()) as u64 + 4 * g.neigh.len() as u64;
        if let Some(free) = free_bytes(dir) {
            if free < bytes + DISK_MARGIN {
                return Err(std::io::Error::other(format!(
                    "it needs {:.1} GiB and {} has {:.1} GiB free (keeping 1 GiB)",
                    bytes as f64 / GIB,
                    dir.display(),
                    free as f64 / GIB
                )));
            }
        }
    }
    // Through OutFile: the temporary file goes on any error and on a
    // signal that ends the process.
    let (out, file) = OutFile::create(path).map_err(std::io::Error::other)?;
    write_file(file, key, g)?;
    out.commit().map_err(std::io::Error::other)
}

/// Free space the cache leaves on its disk.
const DISK_MARGIN: u64 = 1 << 30;
const GIB: f64 = (1u64 << 30) as f64;

/// The bytes an unprivileged process may still write on `dir`'s file
/// system, if the system says.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a statvfs the call fills.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

fn write_file(file: File, key: GraphKey, g: &Csr) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(CHUNK, file);
    let mut sum = Checksum::default();
    let mut put = |bytes: &[u8], out: &mut BufWriter<File>| {
        sum.add(bytes);
        out.write_all(bytes)
    };
    put(MAGIC, &mut out)?;
    for word in key.header(g) {
        put(&word.to_le_bytes(), &mut out)?;
    }
    let mut buf = Vec::with_capacity(CHUNK);
    for part in g.offsets.chunks(CHUNK / 8) {
        buf.clear();
        part.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
        put(&buf, &mut out)?;
    }
    for part in g.neigh.chunks(CHUNK / 4) {
        buf.clear();
        part.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
        put(&buf, &mut out)?;
    }
    out.write_all(&sum.value().to_le_bytes())?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// Reads a cached graph; any mismatch with `key`, a short or long file, a
/// CSR that is not well formed or a wrong checksum is an error.
pub fn load(path: &Path, key: GraphKey) -> Result<Csr, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut r = Reader { inner: BufReader::with_capacity(CHUNK, file), sum: Checksum::default() };
    if &r.bytes::<8>()? != MAGIC {
        return Err("not a pagelab graph file".into());
    }
    let header: Vec<u64> = (0..6).map(|_| r.u64()).collect::<Result<_, _>>()?;
    let (vertices, edges) = (header[4], header[5]);
    let want = [GENERATOR_VERSION as u64, key.scale as u64, key.degree as u64, key.seed];
    if header[..4] != want || vertices != 1 << key.scale {
        return Err(format!("header {header:?} does not match {key:?}"));
    }
    // In u128: a damaged edge count must not overflow the check.
    if len as u128 != 8 + 6 * 8 + 8 * (vertices as u128 + 1) + 4 * edges as u128 + 8 {
        return Err(format!("{len} bytes, not what the header implies"));
    }
    let offsets = r.u64s(vertices as usize + 1)?;
    let neigh = r.u32s(edges as usize)?;
    let expected = r.sum.value();
    if u64::from_le_bytes(r.bytes::<8>()?) != expected {
        return Err("checksum mismatch".into());
    }
    let g = Csr { offsets, neigh };
    well_formed(&g)?;
    Ok(g)
}

/// Offsets start at 0, never decrease and end at the edge count; every
/// neighbour is a vertex.
fn well_formed(g: &Csr) -> Result<(), String> {
    let ok = g.offsets[0] == 0
        && g.offsets.windows(2).all(|w| w[0] <= w[1])
        && *g.offsets.last().unwrap() == g.neigh.len() as u64
        && g.neigh.iter().all(|&v| v < g.vertices());
    ok.then_some(()).ok_or_else(|| "malformed CSR".to_string())
}

struct Reader {
    inner: BufReader<File>,
    sum: Checksum,
}

impl Reader {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut b = [0u8; N];
        self.inner.read_exact(&mut b).map_err(|e| e.to_string())?;
        self.sum.add(&b);
        Ok(b)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.bytes::<8>().map(u64::from_le_bytes)
    }

    fn u64s(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let mut v = Vec::with_capacity(n);
        self.chunks(n * 8, |b| v.extend(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()))))?;
        Ok(v)
    }

    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let mut v = Vec::with_capacity(n);
        self.chunks(n * 4, |b| v.extend(b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()))))?;
        Ok(v)
    }

    /// Reads `len` bytes in chunks of a multiple of 8, handing each to `take`.
    fn chunks(&mut self, mut len: usize, mut take: impl FnMut(&[u8])) -> Result<(), String> {
        let mut buf = vec![0u8; CHUNK.min(len)];
        while len > 0 {
            let n = CHUNK.min(len);
            self.inner.read_exact(&mut buf[..n]).map_err(|e| e.to_string())?;
            self.sum.add(&buf[..n]);
            take(&buf[..n]);
            len -= n;
        }
        Ok(())
    }
}

/// A fast non-cryptographic checksum over the file's bytes (FNV-style over
/// 8-byte words, with the tail bytes folded in one by one): it catches
/// truncation, bit rot and a file of another graph, not an adversary.
#[derive(Default)]
struct Checksum {
    h: u64,
    tail: Vec<u8>,
}

impl Checksum {
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn add(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if !self.tail.is_empty() {
            let take = (8 - self.tail.len()).min(bytes.len());
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.tail.len() < 8 {
                return;
            }
            let word = u64::from_le_bytes(self.tail[..8].try_into().unwrap());
            self.word(word);
            self.tail.clear();
        }
        let words = bytes.chunks_exact(8);
        self.tail.extend_from_slice(words.remainder());
        for w in words {
            self.word(u64::from_le_bytes(w.try_into().unwrap()));
        }
    }

    #[inline]
    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(Self::PRIME).rotate_left(29);
    }

    fn value(&self) -> u64 {
        let mut h = self.h;
        for &b in &self.tail {
            h = (h ^ b as u64).wrapping_mul(Self::PRIME);
        }
        h ^ self.tail.len() as u64
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_free_space_of_a_directory_is_known() {
        let free = super::free_bytes(&std::env::temp_dir()).expect("statvfs of the temporary directory");
        assert!(free > 0);
        assert_eq!(super::free_bytes(Path::new("/no/such/directory")), None);
    }

    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pagelab-graph-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn key(scale: u32) -> GraphKey {
        GraphKey { scale, degree: 8, seed: 3 }
    }

    /// A fingerprint of the generator's output. If this test fails, the
    /// generator or the CSR builder changed its graphs: bump
    /// GENERATOR_VERSION (so stale cached graphs are not read) and update
    /// the fingerprint.
    #[test]
    fn generator_output_is_pinned_to_its_version() {
        let g = kronecker(10, 16, 1);
        let mut sum = Checksum::default();
        g.offsets.iter().for_each(|x| sum.add(&x.to_le_bytes()));
        g.neigh.iter().for_each(|x| sum.add(&x.to_le_bytes()));
        assert_eq!((GENERATOR_VERSION, g.directed_edges(), sum.value()), (1, 21_066, 14_199_340_886_864_914_978));
    }

    #[test]
    fn a_stored_graph_loads_back_identical() {
        let dir = temp_dir("roundtrip");
        let g = kronecker(9, 8, 3);
        let path = dir.join(key(9).file_name());
        store(&path, key(9), &g).unwrap();
        let back = load(&path, key(9)).unwrap();
        assert_eq!((back.offsets, back.neigh), (g.offsets, g.neigh));
        // Another key's file is refused.
        assert!(load(&path, GraphKey { seed: 4, ..key(9) }).unwrap_err().contains("header"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_files_are_refused() {
        let dir = temp_dir("damaged");
        let path = dir.join(key(9).file_name());
        store(&path, key(9), &kronecker(9, 8, 3)).unwrap();
        let good = std::fs::read(&path).unwrap();
        // A flipped bit in the neighbours: only the checksum sees it.
        let mut flipped = good.clone();
        let at = good.len() - 100;
        flipped[at] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert_eq!(load(&path, key(9)).unwrap_err(), "checksum mismatch");
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(load(&path, key(9)).unwrap_err().contains("bytes"));
        // An edge count so large that the expected length would overflow u64.
        let mut huge = good.clone();
        huge[8 + 5 * 8..8 + 6 * 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &huge).unwrap();
        assert!(load(&path, key(9)).unwrap_err().contains("bytes"));
        std::fs::write(&path, b"hello").unwrap();
        assert!(load(&path, key(9)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_cache_is_filled_once_and_repaired() {
        let dir = temp_dir("fill");
        let k = GraphKey { scale: MIN_CACHED_SCALE, degree: 1, seed: 2 };
        let built = kronecker_cached(k, Some(&dir));
        let path = dir.join(k.file_name());
        let stamp = std::fs::metadata(&path).unwrap().modified().unwrap();
        let cached = kronecker_cached(k, Some(&dir));
        assert_eq!((&cached.offsets, &cached.neigh), (&built.offsets, &built.neigh));
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), stamp);
        // A truncated file is rebuilt and rewritten.
        let len = std::fs::metadata(&path).unwrap().len();
        File::options().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
        let repaired = kronecker_cached(k, Some(&dir));
        assert_eq!(repaired.neigh, built.neigh);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        // Small graphs never touch the cache.
        kronecker_cached(key(9), Some(&dir));
        assert!(!dir.join(key(9).file_name()).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn checksum_does_not_depend_on_how_bytes_are_split() {
        let data: Vec<u8> = (0..101u8).collect();
        let mut whole = Checksum::default();
        whole.add(&data);
        let mut parts = Checksum::default();
        for piece in data.chunks(3) {
            parts.add(piece);
        }
        assert_eq!(whole.value(), parts.value());
        let mut other = Checksum::default();
        other.add(&data[1..]);
        assert_ne!(whole.value(), other.value());
    }
}
