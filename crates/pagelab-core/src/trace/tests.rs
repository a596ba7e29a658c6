//! Scenario tests of the trace readers, the writer, detection, info and a
//! trace run through the engine.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::engine::build_workload as build;
use crate::units::VirtAddr;
use crate::workload::testutil::{collect_batches, small_config};
use crate::workload::{Site, Workload, WorkloadConfig, WorkloadKind};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_file(name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Everything a workload emitted, events at global access indices, and
/// its instruction total.
#[derive(Debug, Default, PartialEq)]
struct Flat {
    accesses: Vec<Access>,
    events: Vec<(usize, MapEvent)>,
    instructions: u64,
}

impl Flat {
    fn push(&mut self, b: &Batch) {
        let base = self.accesses.len();
        self.events.extend(b.events.iter().map(|(i, e)| (base + *i as usize, e.clone())));
        self.accesses.extend_from_slice(&b.accesses);
        self.instructions += b.accesses.iter().map(|a| a.instrs as u64).sum::<u64>() + b.trailing_instrs;
    }
}

/// Runs a workload to its end with batches of varying size.
fn drain(w: &mut dyn Workload) -> Flat {
    let mut flat = Flat::default();
    let mut batch = Batch::default();
    let mut max = 1000;
    loop {
        batch.clear();
        let more = w.next_batch(&mut batch, max);
        assert!(batch.accesses.len() <= max);
        flat.push(&batch);
        if !more {
            return flat;
        }
        max = max % 3001 + 7;
    }
}

fn trace_config(path: &Path) -> WorkloadConfig {
    WorkloadConfig { kind: WorkloadKind::Trace, path: Some(path.to_path_buf()), ..WorkloadConfig::default() }
}

fn read_trace(path: &Path, ifetch: bool) -> Result<Flat> {
    let mut cfg = trace_config(path);
    cfg.ifetch = ifetch;
    let mut w = build(&cfg, "workload")?;
    let flat = drain(w.as_mut());
    match w.take_error() {
        Some(e) => Err(e),
        None => Ok(flat),
    }
}

/// Records generator `cfg` into a native file; returns the file and what
/// the generator emitted.
fn record(cfg: &WorkloadConfig, name: &str) -> (PathBuf, Flat) {
    let path = tmp(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = NativeWriter::new(std::io::BufWriter::new(file)).unwrap();
    let mut flat = Flat::default();
    for b in collect_batches(cfg, 777) {
        w.write_batch(&b).unwrap();
        flat.push(&b);
    }
    let (out, totals) = w.finish().unwrap();
    drop(out);
    assert_eq!(totals.accesses, flat.accesses.len() as u64);
    assert_eq!(totals.instructions, flat.instructions);
    (path, flat)
}

fn trace_err(r: Result<impl std::fmt::Debug>) -> (u64, String) {
    match r {
        Err(Error::Trace { offset, msg, .. }) => (offset, msg),
        other => panic!("expected a trace error, got {other:?}"),
    }
}

#[test]
fn native_round_trips_every_generator() {
    for kind in [
        WorkloadKind::Gups,
        WorkloadKind::Stream,
        WorkloadKind::Kv,
        WorkloadKind::Graph,
        WorkloadKind::Stride,
        WorkloadKind::PointerChase,
        WorkloadKind::Sparse,
    ] {
        let cfg = small_config(kind, 3);
        let (path, generated) = record(&cfg, &format!("rt-{}.trace", kind.as_str()));
        let read = read_trace(&path, false).unwrap();
        // The native format keeps no access sites (dependence, program
        // counters): they read back as unknown.
        let unsited: Vec<Access> = generated.accesses.iter().map(|a| a.at(Site::NONE)).collect();
        assert_eq!(read.accesses, unsited, "{kind:?}");
        assert_eq!(read.events, generated.events, "{kind:?}");
        assert_eq!(read.instructions, generated.instructions, "{kind:?}");
    }
}

#[test]
fn native_bytes_of_a_tiny_trace() {
    let path = tmp("tiny.trace");
    let mut w = NativeWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let mmap = MapEvent::Mmap { start: VirtAddr::new(0x1000), len: 8192, writable: true, name: "a".into() };
    w.event(&mmap).unwrap();
    w.access(&Access::load(VirtAddr::new(0x1000), 8, 1)).unwrap();
    w.access(&Access::store(VirtAddr::new(0x1000), 8, 0)).unwrap();
    w.access(&Access::load(VirtAddr::new(0x1008), 8, 1)).unwrap();
    w.instructions(5).unwrap();
    w.finish().unwrap();
    let b = std::fs::read(&path).unwrap();
    assert_eq!(&b[..16], b"PGLTRACE\x02\x00\x00\x00\x00\x00\x00\x00");
    // mmap: type 0 (03), start 0x1000 = 80 20, len 8192 = 80 40, writable,
    // name "a". load: tag op 0 | size 8 (code 3) << 2 | instrs one (2) << 6
    // = 8c, delta +0x1000 zigzagged = 0x2000 = 80 40. store: op 1 | 0x0c |
    // same address 0x20 | instrs zero (1) << 6 = 6d. load: 8c, delta +8 ->
    // 16 = 10. instructions: op 3 | type 3 << 2 = 0f, 5.
    let payload = [0x03, 0x80, 0x20, 0x80, 0x40, 0x01, 0x01, b'a', 0x8c, 0x80, 0x40, 0x6d, 0x8c, 0x10, 0x0f, 0x05];
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(word(16), payload.len() as u32);
    assert_eq!(word(24), 5, "records");
    let mut crc = flate2::Crc::new();
    crc.update(&payload);
    assert_eq!(word(28), crc.sum());
    let clen = word(20) as usize;
    assert_eq!(zstd::bulk::decompress(&b[32..32 + clen], 64).unwrap(), payload);
    let end = &b[32 + clen..];
    assert_eq!(end.len(), 48);
    assert_eq!(&end[..16], &[0; 16]);
    let total = |i: usize| u64::from_le_bytes(end[i..i + 8].try_into().unwrap());
    assert_eq!((total(16), total(24), total(32), total(40)), (5, 3, 7, 0));
    let read = read_trace(&path, false).unwrap();
    assert_eq!(read.events, vec![(0, mmap.clone())]);
    assert_eq!(read.accesses.len(), 3);
    assert_eq!(read.instructions, 7);
    // The same trace in version 1: no fetch count at the end, still read.
    let mut v1 = b.clone();
    v1[8] = 1;
    v1.truncate(v1.len() - 8);
    let p1 = write_file("tiny-v1.trace", &v1);
    let read1 = read_trace(&p1, false).unwrap();
    assert_eq!((read1.events, read1.accesses, read1.instructions), (vec![(0, mmap)], read.accesses, 7));
    // A version 1 header has no flags; a version 3 is refused.
    v1[10] = 1;
    assert!(trace_err(read_trace(&write_file("tiny-v1-flag.trace", &v1), false)).1.contains("version 1"));
    let mut v3 = b.clone();
    v3[8] = 3;
    let (at, msg) = trace_err(read_trace(&write_file("tiny-v3.trace", &v3), false));
    assert_eq!(at, 8);
    assert!(msg.contains("unsupported version 3"), "{msg}");
}

#[test]
fn the_end_record_gives_the_total_before_reading() {
    // A lackey trace with fetches, in native form: 5 data accesses and 3
    // fetches (one per instruction).
    let n = tmp("total.trace");
    convert(&write_file("total.lackey", LACKEY.as_bytes()), &n, None).unwrap();
    let t = native::end_totals(&n).unwrap();
    assert_eq!((t.accesses, t.ifetches, t.instructions), (8, 3, 3));
    let total = |ifetch: bool, instructions: u64| {
        let mut cfg = trace_config(&n);
        cfg.ifetch = ifetch;
        cfg.instructions = instructions;
        let mut w = build(&cfg, "workload").unwrap();
        let expected = w.total_accesses();
        let handed = drain(w.as_mut()).accesses.len() as u64;
        (expected, handed)
    };
    assert_eq!(total(false, 0), (Some(5), 5));
    assert_eq!(total(true, 0), (Some(8), 8));
    // Cut at 2 of 3 instructions: two thirds of the accesses, estimated.
    assert_eq!(total(false, 2).0, Some(3));
    // Compressed, lackey, truncated or version 1: unknown.
    let gz = write_file("total.trace.gz", &compress(Compression::Gzip, &std::fs::read(&n).unwrap()));
    let lackey = write_file("total2.lackey", LACKEY.as_bytes());
    let bytes = std::fs::read(&n).unwrap();
    let cut = write_file("total-cut.trace", &bytes[..bytes.len() - 1]);
    for p in [&gz, &lackey, &cut] {
        assert_eq!(build(&trace_config(p), "workload").unwrap().total_accesses(), None, "{}", p.display());
    }
    assert!(native::end_totals(&cut).is_none());
}

#[test]
fn sequential_stream_costs_at_most_two_bytes_per_access() {
    let mut cfg = small_config(WorkloadKind::Stream, 1);
    cfg.footprint = crate::units::ByteSize(64 << 20);
    cfg.accesses = 2_000_000;
    let (path, flat) = record(&cfg, "seq.trace");
    let bytes = std::fs::metadata(&path).unwrap().len();
    let per = bytes as f64 / flat.accesses.len() as f64;
    assert!(per <= 2.0, "{per} bytes per access");
}

// ---------------------------------------------------------------- errors

fn generated_native(name: &str) -> (PathBuf, Vec<u8>) {
    let mut cfg = small_config(WorkloadKind::Gups, 9);
    cfg.accesses = 400_000;
    let (path, _) = record(&cfg, name);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

#[test]
fn native_truncation_anywhere_is_an_error_with_its_offset() {
    let (_, b) = generated_native("trunc-src.trace");
    let first_block = 16 + 16 + u32::from_le_bytes(b[20..24].try_into().unwrap()) as usize;
    assert!(first_block + 40 < b.len(), "the test needs two blocks");
    let cases = [
        (10, 10, "header"),
        (16, 16, "no end record: a cut at the first block header"),
        (20, 16, "block header"),
        (100, 32, "block"),
        (first_block, first_block as u64, "cut at a block boundary"),
        (b.len() - 30, b.len() as u64 - 40, "end record"),
        (b.len() - 1, b.len() as u64 - 40, "end record"),
    ];
    for (cut, offset, what) in cases {
        let p = write_file("trunc.trace", &b[..cut]);
        let (got, msg) = trace_err(read_trace(&p, false));
        assert!(msg.contains("truncated"), "{what}: {msg}");
        // Offsets name the incomplete part's first missing byte or start.
        assert!(got == offset || got == cut as u64, "{what}: offset {got}, expected {offset} or {cut}: {msg}");
    }
}

#[test]
fn native_corruption_is_an_error_at_its_block() {
    let (_, b) = generated_native("corrupt-src.trace");
    let clen = u32::from_le_bytes(b[20..24].try_into().unwrap()) as usize;
    let second = 32 + clen;
    for (at, block) in [(40, 16), (16 + 8, 16), (second + 30, second as u64)] {
        let mut c = b.clone();
        c[at] ^= 0x40;
        let p = write_file("corrupt.trace", &c);
        let (offset, msg) = trace_err(read_trace(&p, false));
        assert_eq!(offset, block, "{msg}");
        assert!(msg.contains("corrupt"), "{msg}");
    }
    let mut c = b.clone();
    c.push(0);
    let p = write_file("garbage.trace", &c);
    let (offset, msg) = trace_err(read_trace(&p, false));
    assert_eq!(offset, b.len() as u64, "{msg}");
    let mut c = b.clone();
    let n = c.len();
    c[n - 10] ^= 1;
    let p = write_file("totals.trace", &c);
    let (_, msg) = trace_err(read_trace(&p, false));
    assert!(msg.contains("end record"), "{msg}");
}

// -------------------------------------------------------------- champsim

/// Four 64-byte records: a load and a store; no operand; two loads; a
/// store in the second destination slot.
fn champsim_records(layout: ChampSimLayout, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    #[allow(clippy::type_complexity)]
    let ops: [(&[u64], &[(usize, u64)]); 4] =
        [(&[0x1000], &[(0, 0x2000)]), (&[], &[]), (&[0x1008, 0x1010], &[]), (&[], &[(1, 0x3000)])];
    for (k, (srcs, dsts)) in ops.iter().enumerate().take(n) {
        let mut r = vec![0u8; layout.record];
        r[0..8].copy_from_slice(&(0x40_0000u64 + 4 * k as u64).to_le_bytes());
        for (i, a) in srcs.iter().enumerate() {
            let at = layout.src_offset + 8 * i;
            r[at..at + 8].copy_from_slice(&a.to_le_bytes());
        }
        for (i, a) in dsts.iter() {
            let at = layout.dst_offset + 8 * i;
            r[at..at + 8].copy_from_slice(&a.to_le_bytes());
        }
        out.extend_from_slice(&r);
    }
    out
}

fn compress(c: Compression, raw: &[u8]) -> Vec<u8> {
    match c {
        Compression::None => raw.to_vec(),
        Compression::Xz => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Compression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Compression::Zstd => {
            // With a content checksum, as the zstd command line writes
            // frames: without one, corrupt literals decode unnoticed.
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
    }
}

const ALL_COMPRESSIONS: [Compression; 5] =
    [Compression::None, Compression::Xz, Compression::Gzip, Compression::Bzip2, Compression::Zstd];

fn va(a: u64) -> VirtAddr {
    VirtAddr::new(a)
}

#[test]
fn champsim_records_become_loads_stores_and_instructions() {
    for c in ALL_COMPRESSIONS {
        let p = write_file(
            &format!("cs-{}.champsim", c.as_str()),
            &compress(c, &champsim_records(ChampSimLayout::STANDARD, 4)),
        );
        assert_eq!(detect(&p).unwrap(), (TraceFormat::Champsim, c));
        let read = read_trace(&p, false).unwrap();
        // Record 1 has no operand: its instruction goes to record 2's load.
        // Each access carries its record's ip as its site.
        let pc = |k: u64| Site::pc(0x40_0000 + 4 * k);
        assert_eq!(
            read.accesses,
            vec![
                Access::load(va(0x1000), 8, 1).at(pc(0)),
                Access::store(va(0x2000), 8, 0).at(pc(0)),
                Access::load(va(0x1008), 8, 2).at(pc(2)),
                Access::load(va(0x1010), 8, 0).at(pc(2)),
                Access::store(va(0x3000), 8, 1).at(pc(3)),
            ],
            "{c:?}"
        );
        assert_eq!(read.instructions, 4);
        assert!(read.events.is_empty());
        let with_fetch = read_trace(&p, true).unwrap();
        assert_eq!(with_fetch.accesses.len(), 9);
        assert_eq!(
            with_fetch.accesses[3],
            Access { vaddr: va(0x40_0004), kind: AccessKind::IFetch, size: 4, site: Site::NONE, instrs: 1 }
        );
        assert_eq!(with_fetch.instructions, 4);
    }
}

#[test]
fn champsim_cloudsuite_records_are_detected_by_size() {
    let p = write_file("cloud.champsim", &compress(Compression::Xz, &champsim_records(ChampSimLayout::CLOUDSUITE, 4)));
    assert_eq!(detect(&p).unwrap(), (TraceFormat::ChampsimCloudsuite, Compression::Xz));
    let read = read_trace(&p, false).unwrap();
    assert_eq!(read.accesses.len(), 5);
    assert_eq!(read.accesses[4], Access::store(va(0x3000), 8, 1).at(Site::pc(0x40_000c)));
}

#[test]
fn champsim_registers_mark_loads_that_wait_for_the_last_load() {
    // (destination register, source register, load address) per record:
    // A loads into r1; B loads through r1 (A's data: dependent) into r1;
    // C loads through r2, which no load wrote; D loads through r1, which
    // holds B's data while C's is the most recent: independent here.
    let l = ChampSimLayout::STANDARD;
    let mut raw = Vec::new();
    for (k, (dst, src, addr)) in
        [(1u8, 0u8, 0x1000u64), (1, 1, 0x2000), (3, 2, 0x3000), (4, 1, 0x4000)].iter().enumerate()
    {
        let mut r = vec![0u8; l.record];
        r[0..8].copy_from_slice(&(0x40_0000u64 + 4 * k as u64).to_le_bytes());
        r[l.dst_reg_offset] = *dst;
        r[l.src_reg_offset] = *src;
        r[l.src_offset..l.src_offset + 8].copy_from_slice(&addr.to_le_bytes());
        raw.extend_from_slice(&r);
    }
    let p = write_file("deps.champsim", &raw);
    let read = read_trace(&p, false).unwrap();
    let dependent: Vec<bool> = read.accesses.iter().map(|a| a.site.is_dependent()).collect();
    assert_eq!(dependent, [false, true, false, false]);
}

#[test]
fn champsim_truncated_and_corrupt_files_are_errors() {
    let raw = champsim_records(ChampSimLayout::STANDARD, 4);
    let mut cfg = trace_config(&write_file("cs-trunc.champsim", &raw[..200]));
    cfg.format = Some(TraceFormat::Champsim);
    let mut w = build(&cfg, "workload").unwrap();
    drain(w.as_mut());
    let (offset, msg) = trace_err(w.take_error().map_or(Ok(()), Err));
    assert_eq!(offset, 192, "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
    // Detection alone refuses 200 bytes: neither layout divides them.
    assert!(matches!(detect(&cfg.path.clone().unwrap()), Err(Error::Trace { .. })));
    for c in [Compression::Xz, Compression::Gzip, Compression::Bzip2, Compression::Zstd] {
        let z = compress(c, &raw);
        let p = write_file("cs-ztrunc.champsim", &z[..z.len() - 8]);
        let mut cfg = trace_config(&p);
        cfg.format = Some(TraceFormat::Champsim);
        match build(&cfg, "workload") {
            Err(e) => assert!(matches!(e, Error::Trace { .. }), "{c:?}: {e}"),
            Ok(mut w) => {
                drain(w.as_mut());
                assert!(matches!(w.take_error(), Some(Error::Trace { .. })), "{c:?}: truncation not reported");
            }
        }
        let mut z = z.clone();
        let mid = z.len() / 2;
        z[mid] ^= 0xff;
        let p = write_file("cs-zcorrupt.champsim", &z);
        let mut cfg = trace_config(&p);
        cfg.format = Some(TraceFormat::Champsim);
        let outcome = build(&cfg, "workload").map(|mut w| {
            let flat = drain(w.as_mut());
            (flat, w.take_error())
        });
        match outcome {
            Err(e) => assert!(matches!(e, Error::Trace { .. }), "{c:?}: {e}"),
            Ok((_, Some(e))) => assert!(matches!(e, Error::Trace { .. }), "{c:?}: {e}"),
            Ok((flat, None)) => panic!("{c:?}: corruption not reported ({} accesses)", flat.accesses.len()),
        }
    }
}

// ---------------------------------------------------------------- lackey

const LACKEY: &str = "==123== Lackey, an example Valgrind tool\n\
I  00400000,3\n L 00001000,8\nI  00400003,4\n M 00002000,4\n S 00003000,8\nI  00400007,2\n L 00001008,8\n==123== \n";

#[test]
fn lackey_lines_become_accesses() {
    for c in [Compression::None, Compression::Gzip] {
        let p = write_file("l.lackey", &compress(c, LACKEY.as_bytes()));
        assert_eq!(detect(&p).unwrap(), (TraceFormat::Lackey, c));
        let read = read_trace(&p, false).unwrap();
        assert_eq!(
            read.accesses,
            vec![
                Access::load(va(0x1000), 8, 1).at(Site::pc(0x40_0000)),
                Access::load(va(0x2000), 4, 1).at(Site::pc(0x40_0003)),
                Access::store(va(0x2000), 4, 0).at(Site::pc(0x40_0003)),
                Access::store(va(0x3000), 8, 0).at(Site::pc(0x40_0003)),
                Access::load(va(0x1008), 8, 1).at(Site::pc(0x40_0007)),
            ]
        );
        assert_eq!(read.instructions, 3);
    }
}

#[test]
fn lackey_bad_lines_and_truncation_name_the_line() {
    let p = write_file("bad.lackey", LACKEY.replace(" S 00003000", " X 00003000").as_bytes());
    let (line, msg) = trace_err(read_trace(&p, false));
    assert_eq!(line, 6, "{msg}");
    let p = write_file("bad2.lackey", LACKEY.replace("00001008,8", "00001008,").as_bytes());
    assert_eq!(trace_err(read_trace(&p, false)).0, 8);
    let cut = &LACKEY[..LACKEY.len() - 5];
    let p = write_file("cut.lackey", cut.as_bytes());
    let (line, msg) = trace_err(read_trace(&p, false));
    assert_eq!(line, 9, "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
}

/// Lackey output with `--trace-syscalls=yes` lines (formats as valgrind
/// 3.19 prints them): the stack at 0x7ff000 shares its 2 MiB region with
/// the heap at 0x600000, an 8 MiB anonymous mapping is touched, unmapped,
/// and touched again.
const LACKEY_SYSCALLS: &str = "==1== Lackey, an example Valgrind tool\n\
SYSCALL[1,1](12) sys_brk ( 0x0 ) --> [pre-success] Success(0x600000) \n\
I  00400000,3\n S 007ff000,8\n\
SYSCALL[1,1](9) sys_mmap ( 0x0, 8388608, 3, 34, 4294967295, 0 ) --> [pre-success] Success(0x10000000) \n\
I  00400003,4\n S 10000000,8\n S 10001000,8\n\
SYSCALL[1,1](11) sys_munmap ( 0x10000000, 8388608 )[sync] --> Success(0x0) \n\
SYSCALL[1,1](12) sys_brk ( 0x602000 ) --> [pre-success] Success(0x602000) \n\
SYSCALL[1,1](334) unimplemented (by the kernel) syscall: 334! (ni_syscall)\n \
--> [pre-fail] Failure(0x26) \n\
I  00400007,2\n S 00601000,8\n L 10000000,8\n";

#[test]
fn lackey_system_calls_become_partial_mapping_events() {
    let p = write_file("sys.lackey", LACKEY_SYSCALLS.as_bytes());
    let n = tmp("sys.trace");
    convert(&p, &n, None).unwrap();
    let mb8 = 8 << 20;
    for path in [&p, &n] {
        let flat = read_trace(path, false).unwrap();
        assert_eq!(
            flat.events,
            vec![
                (1, MapEvent::Mmap { start: va(0x1000_0000), len: mb8, writable: true, name: "anon".into() }),
                (3, MapEvent::Munmap { start: va(0x1000_0000), len: mb8 }),
                (3, MapEvent::Mmap { start: va(0x60_0000), len: 0x2000, writable: true, name: "brk".into() }),
            ],
            "{}",
            path.display()
        );
        assert_eq!(flat.accesses.len(), 5);
        let i = info(path, None).unwrap();
        assert_eq!((i.map_events, i.partial_maps), (3, true));
        assert!(build(&trace_config(path), "workload").unwrap().partial_mappings());
    }
    // A generator's recording has complete events.
    let (g, _) = generated_native("complete.trace");
    assert!(!info(&g, None).unwrap().partial_maps);
    assert!(!build(&trace_config(&g), "workload").unwrap().partial_mappings());
    // Only flag bit 0 is known.
    let mut bytes = std::fs::read(&n).unwrap();
    assert_eq!(bytes[10..12], [1, 0]);
    bytes[10] = 3;
    let (at, msg) = trace_err(read_trace(&write_file("flag.trace", &bytes), false));
    assert_eq!(at, 10, "{msg}");
    assert!(msg.contains("unknown flags"), "{msg}");
    // A mapping call that cannot be parsed is an error at its line.
    let bad = LACKEY_SYSCALLS.replace("sys_munmap ( 0x10000000, 8388608 )", "sys_munmap ( 0x10000000 )");
    let (line, msg) = trace_err(read_trace(&write_file("badsys.lackey", bad.as_bytes()), false));
    assert_eq!(line, 9, "{msg}");
    assert!(msg.contains("sys_munmap"), "{msg}");
}

#[test]
fn a_captured_trace_replays_its_mappings_beside_automatic_vmas() {
    let p = write_file("replay.lackey", LACKEY_SYSCALLS.as_bytes());
    let machine = "[machine]\nphys_mem = \"256MiB\"\n[run]\ncheck_translations = true\n";
    let text = format!("{machine}[workload]\nkind = \"trace\"\npath = {:?}\n", p.display().to_string());
    let cfg = crate::config::parse_config(&text, "test.toml", &[]).unwrap();
    let mut sim = crate::engine::Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    let s = sim.stats();
    let stat = |k: &str| s.get(k).unwrap_or_else(|| panic!("{k}")).as_f64();
    // Five stores and loads, each a first touch of its page: the stack
    // (automatic VMA), two pages of the mapping, the heap page, and the
    // unmapped page again (a second automatic VMA, counted as such).
    assert_eq!(stat("faults"), 5.0);
    assert_eq!(stat("os.auto_vmas"), 2.0);
    assert_eq!(stat("os.auto_vmas_after_munmap"), 1.0);
    // The munmap of the touched mapping shoots down; the heap replacing
    // the untouched part of the stack's automatic VMA does not.
    assert_eq!(stat("os.shootdowns"), 1.0);
    let vmas: Vec<_> =
        sim.kernel.proc(1).aspace.vmas.iter().map(|v| (v.start.raw(), v.end.raw(), v.name.to_string())).collect();
    assert_eq!(
        vmas,
        [
            (0x60_0000, 0x60_2000, "brk".to_string()),
            (0x60_2000, 0x80_0000, "auto".to_string()),
            (0x1000_0000, 0x1020_0000, "auto".to_string()),
        ]
    );
    // With automatic VMAs off, the stack is a segmentation fault.
    let cfg = crate::config::parse_config(&text, "test.toml", &["os.auto_vma=\"off\"".into()]).unwrap();
    let err = crate::engine::Simulation::new(cfg).unwrap().run().unwrap_err();
    assert!(err.to_string().contains("outside every mapping"), "{err}");
}

// ---------------------------------------------------- detection and info

#[test]
fn detection_refuses_other_text_and_reads_compressed_native() {
    let p = write_file("readme.txt", b"hello world\nthis is not a trace\n");
    assert!(trace_err(detect(&p)).1.contains("not Valgrind"));
    let p = write_file("empty.trace", b"");
    assert!(trace_err(detect(&p)).1.contains("empty"));
    let (_, b) = generated_native("for-gz.trace");
    let p = write_file("native.trace.gz", &compress(Compression::Gzip, &b));
    assert_eq!(detect(&p).unwrap(), (TraceFormat::Native, Compression::Gzip));
    let p = write_file(
        "random.bin",
        &(0..4096u32).map(|i| (crate::workload::mix64(i as u64) >> 7) as u8).collect::<Vec<_>>(),
    );
    assert!(trace_err(detect(&p)).1.contains("workload.format"));
}

#[test]
fn info_of_a_hand_made_lackey_trace() {
    let p = write_file("info.lackey", LACKEY.as_bytes());
    let i = info(&p, None).unwrap();
    assert_eq!((i.instructions, i.loads, i.stores, i.modifies, i.accesses, i.ifetches), (3, 3, 2, 1, 4, 3));
    // Data pages 1, 2, 3 (4 KiB), all in 2 MiB page 0; code in page 0x400.
    assert_eq!((i.pages_4k, i.pages_2m, i.footprint, i.ifetch_pages_4k), (3, 1, 3 * 4096, 1));
    // Lines 0x40, 0x80 (the modify once), 0xc0, then 0x40 again: two other
    // lines since its last touch.
    assert_eq!(i.reuse, ReuseSummary { sampled: 4, cold: 3, median: Some(2), p90: Some(2) });
    // The same numbers from the native conversion.
    let n = tmp("info.trace");
    let s = convert(&p, &n, None).unwrap();
    assert_eq!((s.accesses, s.instructions), (8, 3));
    let j = info(&n, None).unwrap();
    assert_eq!(j.format, "native");
    assert_eq!(TraceInfo { format: i.format.clone(), ..j }, i);
}

// ---------------------------------------------------------------- engine

/// A run's statistics but its requests' (a trace has no request site).
fn run_stats(text: &str) -> String {
    let cfg = crate::config::parse_config(text, "test.toml", &[]).unwrap();
    let mut sim = crate::engine::Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    let mut stats = sim.stats();
    stats.retain(|k, _| !k.starts_with("core0.request"));
    serde_json::to_string(&stats).unwrap()
}

#[test]
fn engine_run_of_a_recorded_trace_equals_the_generator() {
    let workload =
        "kind = \"kv\"\nfootprint = \"8MiB\"\nobjects = 4000\nobject_size = 300\naccesses = 60000\nseed = 4\n";
    // The native format keeps no access sites, on which the interval model
    // (dependence) and the stride prefetcher (program counters) depend:
    // the run is the same under the fixed model without prefetchers only.
    let machine = "[machine]\nphys_mem = \"256MiB\"\ntiming.model = \"fixed\"\nprefetch.enabled = false\n\
                   [run]\nwarmup = 20000\n";
    let cfg: WorkloadConfig = toml::from_str(workload).unwrap();
    let (path, _) = record(&cfg, "engine.trace");
    let direct = run_stats(&format!("{machine}[workload]\n{workload}"));
    let traced =
        run_stats(&format!("{machine}[workload]\nkind = \"trace\"\npath = {:?}\n", path.display().to_string()));
    assert_eq!(traced, direct);
}

#[test]
fn instructions_limit_stops_the_trace() {
    let p = write_file("limit.lackey", LACKEY.as_bytes());
    let mut cfg = trace_config(&p);
    cfg.instructions = 2;
    let mut w = build(&cfg, "workload").unwrap();
    let flat = drain(w.as_mut());
    // Two instructions: the first load, then the modify and the store of
    // the second; the third instruction's load is cut.
    assert_eq!(flat.accesses.len(), 4);
    assert_eq!(flat.instructions, 2);
}

// ------------------------------------------------------------ measurement

#[test]
#[ignore]
fn print_sizes_and_decode_speed() {
    for (label, kind, fp) in [
        ("stream", WorkloadKind::Stream, 256u64 << 20),
        ("gups", WorkloadKind::Gups, 1 << 30),
        ("kv", WorkloadKind::Kv, 1 << 30),
    ] {
        let cfg = WorkloadConfig {
            kind,
            footprint: crate::units::ByteSize(fp),
            accesses: 20_000_000,
            init: crate::workload::InitMode::None,
            ..WorkloadConfig::default()
        };
        let t = std::time::Instant::now();
        let (path, flat) = record(&cfg, &format!("speed-{label}.trace"));
        let wrote = t.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let t = std::time::Instant::now();
        let mut source = open(&path, None).unwrap().source;
        let mut sink = Sink::new(false);
        let mut n = 0;
        loop {
            sink.clear();
            let more = source.fill(&mut sink).unwrap();
            n += sink.batch.accesses.len();
            if !more {
                break;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(n, flat.accesses.len());
        println!(
            "{label:>8}: {:.2} bytes/access, decode {:.1} M accesses/s, generate+encode {:.1} M/s",
            bytes as f64 / n as f64,
            n as f64 / secs / 1e6,
            n as f64 / wrote / 1e6
        );
        let mut w = build(&trace_config(&path), "workload").unwrap();
        let t = std::time::Instant::now();
        let m = drain(w.as_mut()).accesses.len();
        println!("{label:>8}: through TraceWorkload {:.1} M accesses/s", m as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
}
