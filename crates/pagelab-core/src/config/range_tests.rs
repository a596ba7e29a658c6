//! Every bad value is named with what is allowed: for each key in the
//! table, an out-of-range value must give one line that names the key and
//! says the range or the values it takes (issue 39's "done means").

use super::load::parse_config;

const GUPS: &str = "[workload]\nkind = \"gups\"\nfootprint = \"64MiB\"\n";
const DRAM: &[&str] = &["machine.memory.dram.enabled=true"];
const MODULO: &[&str] = &["machine.cache.llc.slice_hash=\"modulo\""];
const STAND_IN: &[&str] = &["machine.cache.llc.slice_hash=\"stand-in\""];
const VIRT: &[&str] = &["virt.enabled=true", "virt.guest_mem=\"1GiB\""];

/// (the context's overrides, the key, the bad value, words that say what
/// is allowed). The context is the workload kind or a virtualized run
/// where the key is read only there.
const CASES: &[(&[&str], &str, &str, &str)] = &[
    (&[], "machine.phys_mem", "\"3\"", "between 4MiB and 1TiB"),
    (&[], "machine.phys_mem", "\"-1GiB\"", "one with a unit B, KiB, MiB, GiB or TiB"),
    (&[], "machine.max_order", "40", "between 9 and 18"),
    (&[], "machine.max_order", "-1", "from 0 to 255"),
    (&[], "machine.cores", "-1", "from 0 to 4294967295"),
    (&[], "machine.paging_levels", "3", "4 or 5"),
    (&[], "machine.freq_ghz", "-1.0", "above 0 and below 100"),
    (&[], "machine.tlb.l2_ways", "0", "1..=1536"),
    (&[], "machine.tlb.l2_entries", "1000", "a multiple of 12 ways"),
    (&[], "machine.pwc.pde_entries", "100000", "at most 32768"),
    (&[], "machine.nested_tlb.entries", "100000", "at most 32768"),
    (&[], "machine.walker.latency", "100000", "at most 1000"),
    (&[], "machine.cache.llc.ways", "0", "1..=64"),
    (&[], "machine.cache.llc.line", "3", "a power of two >= 8"),
    (&[], "machine.cache.llc.size", "\"3\"", "a power-of-two number of sets"),
    (MODULO, "machine.cache.llc.slices", "3", "a power of two; the stand-in hash any count"),
    (
        &["machine.cache.llc.slices=16"],
        "machine.cache.llc.slice_hash",
        "\"intel\"",
        "1, 2, 4 or 8 slices, not 16; the stand-in hash takes any count",
    ),
    (&[], "machine.cache.llc.slices", "0", "1..=65536"),
    (STAND_IN, "machine.cache.llc.slices", "2000", "1..=1024"),
    (&[], "machine.cache.llc.slice_seed", "5", "leave it at 0 or use the stand-in"),
    (&[], "machine.cache.llc.fill", "\"exclusive\"", "`miss` or `victim`"),
    (
        &["machine.cache.llc.fill=\"victim\""],
        "machine.cache.llc.inclusive",
        "true",
        "inclusive = false or fill = \"miss\"",
    ),
    (&[], "machine.cache.llc.way_masks", "[0]", "within the 16 ways"),
    (&[], "machine.timing.base_cpi", "0.0", "above 0"),
    (&[], "machine.timing.mlp", "inf", "finite number above 0"),
    (&[], "machine.ooo.rob", "5000", "between 1 and 4096"),
    (&[], "machine.prefetch.stride_entries", "3", "a power of two from 1 to 4096"),
    (&[], "machine.prefetch.stream_degree", "0", "between 1 and 16"),
    (DRAM, "machine.memory.dram.tck_ns", "0.0", "above 0 and below 100"),
    (DRAM, "machine.memory.dram.wr_ns", "2000.0", "from 0 to below 1000"),
    (DRAM, "machine.memory.dram.cl", "0", "1 to 1000"),
    (DRAM, "machine.memory.dram.row_shift", "3", "from 6 (a line) to 48"),
    (&[], "os.fragmentation.target", "2.0", "[0, 0.999]"),
    (&[], "os.fragmentation.holes", "0", "between 1 and 512"),
    (&[], "os.fragmentation.fmfi", "1.0", "[0, 1)"),
    (&[], "os.thp.max_ptes_none", "600", "at most 511"),
    (&[], "os.thp.pages_to_scan", "0", "at least 1"),
    (&[], "os.thp.scan_sleep_ms", "-1.0", ">= 0"),
    (&[], "os.hugetlb.size", "\"4MiB\"", "\"2MiB\""),
    (&[], "os.hugetlb.pool", "\"3\"", "a multiple of hugetlb.size (2MiB) from 0 to machine.phys_mem"),
    (&[], "os.chp.submappings", "3", "1, 2, 4 or 8"),
    (&[], "os.perforated.max_unmovable", "2.0", "(0, 1]"),
    (&[], "os.perforated.max_filter_bits", "9", "from 0 to 8"),
    (&[], "os.holes.portion", "2.0", "[0, 1]"),
    (&[], "os.faulty_frames", "1.0", "[0, 1)"),
    (&[], "os.elastic.leshy_coverage", "2.0", "(0, 1]"),
    (&[], "os.elastic.leshy_epoch_ms", "0.0", "above 0"),
    (&[], "os.elastic.leshy_epochs", "0", "at least 1"),
    (&[], "os.elastic.vma_threshold_32m", "\"0\"", "at least 2MiB"),
    (&[], "os.hawkeye.access_window_ms", "0.0", "above 0"),
    (&[], "os.fault_cost.base", "-1.0", "non-negative"),
    (&[], "run.quantum", "0", "at least 1"),
    (&[], "run.seed", "18446744073709551616", "from 0 to 18446744073709551615"),
    (&[], "run.fast_forward_cpi", "-1.0", "0 (measured) or a positive number"),
    (&[], "workload.footprint", "\"0\"", "from 4KiB to 64TiB"),
    (&[], "workload.footprint", "\"100TiB\"", "from 4KiB to 64TiB"),
    (&[], "workload.accesses", "-5", "from 0 to 18446744073709551615"),
    (&[], "workload.write_fraction", "2.0", "[0, 1]"),
    (&[], "workload.instructions_per_access", "0", "at least 1"),
    (&[], "workload.align", "\"3\"", "a power of two from 2MiB to 1GiB"),
    (&["workload.kind=kv"], "workload.object_size", "\"0\"", "between 16 B and 1 GiB"),
    (&["workload.kind=kv"], "workload.value_prefix", "\"1TiB\"", "at most object_size (1000)"),
    (&["workload.kind=kv"], "workload.zipf_theta", "1.0", "[0, 1)"),
    (&["workload.kind=kv"], "workload.objects", "0", "1..2^32-1"),
    (&["workload.kind=kv"], "workload.footprint", "\"4KiB\"", "from 1 to 2^32 - 2 objects"),
    (&["workload.kind=pointer-chase"], "workload.node_size", "\"3\"", "a positive multiple of 8 bytes"),
    (&["workload.kind=pointer-chase"], "workload.node_size", "\"1TiB\"", "at most workload.footprint (64MiB)"),
    (&["workload.kind=pointer-chase"], "workload.hot_set", "\"1TiB\"", "at most footprint - node_size"),
    (&["workload.kind=svm"], "workload.footprint", "\"4KiB\"", "at least 8058 bytes"),
    (&["workload.kind=svm", "workload.features=1000"], "workload.footprint", "\"4KiB\"", "at least 8257 bytes"),
    (&["workload.kind=graph"], "workload.degree", "0", "1..=1024"),
    (&["workload.kind=graph"], "workload.scale", "40", "1..=30"),
    (&["workload.kind=graph"], "workload.sources", "0", "at least one"),
    (&["workload.kind=sparse"], "workload.touched_pages", "0", "1..=512"),
    (&["workload.kind=stride"], "workload.stride", "\"0\"", "a positive multiple of 8 bytes"),
    (&["workload.kind=file-read"], "workload.chunk", "\"3\"", "a multiple of 4KiB"),
    (VIRT, "virt.guest_mem", "\"3\"", "between 4MiB and 1TiB"),
    (VIRT, "virt.ept_levels", "2", "4 or 3"),
    (VIRT, "virt.costs.vm_exit", "-1.0", ">= 0"),
    (VIRT, "virt.host.ksm.max_page_sharing", "1", "at least 2"),
    (VIRT, "virt.host.ksm.pages_to_scan", "0", "at least 1"),
    (VIRT, "virt.host.balloon.targets", "[\"3\"]", "a multiple of 4KiB"),
];

/// Words by which a message says what a key allows; a message with none
/// of them names a fault without the remedy.
const ALLOWED_WORDS: &[&str] = &[
    "[",
    "(0,",
    "..=",
    "..2^",
    " to ",
    "one of",
    "at least",
    "at most",
    "power of two",
    "power-of-two",
    "between",
    " or ",
    "above",
    "multiple of",
    ">= 0",
    "non-negative",
];

#[test]
fn each_out_of_range_value_names_its_key_and_what_is_allowed() {
    let mut failures = Vec::new();
    for &(context, key, value, allowed) in CASES {
        let mut overrides: Vec<String> = context.iter().map(|s| s.to_string()).collect();
        overrides.push(format!("{key}={value}"));
        let msg = match parse_config(GUPS, "t.toml", &overrides) {
            Ok(_) => {
                failures.push(format!("{key}={value}: accepted"));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let names_key = msg.contains(&format!("`{key}"));
        let says_allowed = msg.contains(allowed) && ALLOWED_WORDS.iter().any(|w| msg.contains(w));
        if !names_key || !says_allowed || msg.lines().count() != 1 {
            failures.push(format!("{key}={value}: {msg}"));
        }
    }
    assert!(failures.is_empty(), "messages that do not name the key and its range:\n{}", failures.join("\n"));
}

#[test]
fn a_huge_value_is_quoted_short_and_the_allowed_values_still_shown() {
    let long = "g".repeat(10_000);
    let err = parse_config(GUPS, "t.toml", &[format!("workload.kind=\"{long}\"")]).unwrap_err().to_string();
    assert!(err.contains("(10000 characters)"), "{err}");
    assert!(err.contains("`gups`") && err.contains("`pointer-chase`"), "the variants are listed: {err}");
    assert!(err.len() < 1000, "{} characters", err.len());
    let err = parse_config(GUPS, "t.toml", &[format!("machine.phys_mem=\"{long}\"")]).unwrap_err().to_string();
    assert!(err.contains("(10000 characters)") && err.contains("KiB, MiB"), "{err}");
    assert!(err.len() < 400, "{} characters", err.len());
}

#[test]
fn a_huge_key_is_named_short() {
    let long = "k".repeat(10_000);
    for item in [format!("workload.{long}=1"), format!("{long}.x.=1"), format!("workload.{long}")] {
        let err = parse_config(GUPS, "t.toml", &[item]).unwrap_err().to_string();
        assert!(err.contains("… (10"), "{err}");
        assert!(err.len() < 1500 && err.lines().count() == 1, "{} characters: {}", err.len(), &err[..200]);
    }
    let text = format!("{GUPS}{long} = 1\n");
    let err = parse_config(&text, "t.toml", &[]).unwrap_err().to_string();
    assert!(err.contains("(10000 characters)") && err.len() < 1500, "{} characters: {}", err.len(), &err[..200]);
}

#[test]
fn a_newline_in_a_value_is_escaped_and_the_allowed_values_kept() {
    let err = parse_config(GUPS, "t.toml", &["workload.kind=\"a\\nb\"".to_string()]).unwrap_err().to_string();
    assert!(err.contains("`a\\nb`") && err.contains("`gups`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
