//! Tests of `workload.*` parsing and validation (config.rs).

use super::*;

fn parse(text: &str) -> std::result::Result<WorkloadConfig, String> {
    toml::from_str::<WorkloadConfig>(text).map_err(|e| e.to_string())
}

fn rejected_key(text: &str) -> String {
    let cfg = parse(text).unwrap();
    match cfg.validate("workload") {
        Err(Error::Config { key, .. }) => key,
        other => panic!("{text}: expected a config error, got {other:?}"),
    }
}

#[test]
fn defaults_and_kebab_kinds_parse() {
    let cfg = parse("kind = \"pointer-chase\"\nfootprint = \"64MiB\"").unwrap();
    assert_eq!(cfg.kind, WorkloadKind::PointerChase);
    assert_eq!(cfg.footprint.bytes(), 64 << 20);
    assert_eq!(cfg.accesses, 10_000_000);
    assert_eq!(cfg.node_size.bytes(), 64);
    cfg.validate("workload").unwrap();
    assert_eq!(parse("kind = \"gups\"").unwrap().effective_write_fraction(), 1.0);
    assert_eq!(parse("kind = \"stride\"").unwrap().effective_write_fraction(), 0.0);
}

#[test]
fn unknown_keys_and_names_are_rejected() {
    assert!(parse("kind = \"gups\"\nfootprnt = 5").unwrap_err().contains("footprnt"));
    assert!(parse("kind = \"redis\"").is_err());
    assert!(parse("kernel = \"sssp\"").is_err());
}

#[test]
fn bad_values_name_their_key() {
    let cases = [
        ("write_fraction = 1.5", "workload.write_fraction"),
        ("write_fraction = -0.1", "workload.write_fraction"),
        ("kind = \"stream\"\nwrite_fraction = 0.5", "workload.write_fraction"),
        ("kind = \"kv\"\nwrite_fraction = 0.5", "workload.write_fraction"),
        ("footprint = 100", "workload.footprint"),
        ("footprint = \"100TiB\"", "workload.footprint"),
        ("kind = \"graph\"\nscale = 31", "workload.scale"),
        ("kind = \"graph\"\nscale = 0", "workload.scale"),
        ("kind = \"graph\"\ndegree = 0", "workload.degree"),
        ("kind = \"graph\"\nsources = 0", "workload.sources"),
        ("kind = \"stride\"\nstride = 12", "workload.stride"),
        ("kind = \"pointer-chase\"\nnode_size = 4", "workload.node_size"),
        ("kind = \"pointer-chase\"\nnode_size = \"8MiB\"\nfootprint = \"4MiB\"", "workload.node_size"),
        ("kind = \"kv\"\nzipf_theta = 1.0", "workload.zipf_theta"),
        ("kind = \"kv\"\nhot_fraction = 2.0", "workload.hot_fraction"),
        ("kind = \"kv\"\nhot_ops = -1.0", "workload.hot_ops"),
        ("kind = \"kv\"\nget_ratio = 1.01", "workload.get_ratio"),
        ("kind = \"trace\"\npath = \"t\"\nfast_forward = 5", "workload.fast_forward"),
        ("kind = \"trace\"\npath = \"t\"\nalign = \"2MiB\"", "workload.align"),
        ("kind = \"trace\"\npath = \"t\"\nskip_kernel_init = true", "workload.skip_kernel_init"),
        ("kind = \"trace\"\npath = \"t\"\nfast_forward_mode = \"functional\"", "workload.fast_forward_mode"),
        ("kind = \"trace\"\npath = \"t\"\ninstructions_per_access = 9", "workload.instructions_per_access"),
        ("instructions_per_access = 0", "workload.instructions_per_access"),
        ("kind = \"kv\"\nobjects = 0", "workload.objects"),
        ("kind = \"kv\"\nobject_size = 8", "workload.object_size"),
        ("kind = \"kv\"\nvalue_prefix = 2000", "workload.value_prefix"),
        ("kind = \"gups\"\ncache_oblivious = true", "workload.cache_oblivious"),
        ("kind = \"gups\"\nnonzeros = 3", "workload.nonzeros"),
        ("kind = \"hashjoin\"\nfeatures = 30", "workload.features"),
        ("kind = \"svm\"\nnonzeros = 0", "workload.nonzeros"),
        ("kind = \"svm\"\nnonzeros = 12\nfeatures = 11", "workload.features"),
        ("kind = \"svm\"\nfootprint = 4096\nfeatures = 512", "workload.footprint"),
        ("kind = \"svm\"\nwrite_fraction = 0.5", "workload.write_fraction"),
        ("kind = \"xsbench\"\nfootprint = \"1MiB\"", "workload.footprint"),
        ("kind = \"xapian\"\nfootprint = \"1MiB\"", "workload.footprint"),
        ("kind = \"xapian\"\nzipf_theta = 1.5", "workload.zipf_theta"),
        ("kind = \"blackscholes\"\nwrite_fraction = 0.5", "workload.write_fraction"),
        ("kind = \"gups\"\nbuild_relation = \"1MiB\"", "workload.build_relation"),
        ("kind = \"pgsql-join\"\nbuild_relation = 4096", "workload.build_relation"),
        ("kind = \"pgsql-join\"\nfootprint = 4096", "workload.footprint"),
        ("kind = \"hashjoin\"\nwrite_fraction = 0.5", "workload.write_fraction"),
        ("kind = \"kv\"\nfootprint = 4096\nobject_size = \"1MiB\"", "workload.footprint"),
        ("kind = \"sparse\"\ntouched_pages = 0", "workload.touched_pages"),
        ("kind = \"sparse\"\ntouched_pages = 513", "workload.touched_pages"),
        ("kind = \"sparse\"\nfootprint = \"1MiB\"", "workload.footprint"),
        ("kind = \"trace\"", "workload.path"),
        ("kind = \"gups\"\npath = \"t.trace\"", "workload.path"),
        ("kind = \"gups\"\ninstructions = 5", "workload.instructions"),
        ("kind = \"stream\"\nformat = \"lackey\"", "workload.format"),
        ("kind = \"stream\"\nifetch = true", "workload.ifetch"),
        ("kind = \"gups\"\ngraph_seed = 3", "workload.graph_seed"),
        ("kind = \"gups\"\nalign = \"3MiB\"", "workload.align"),
        ("kind = \"gups\"\nalign = \"64KiB\"", "workload.align"),
        ("kind = \"gups\"\nalign = \"2GiB\"", "workload.align"),
        ("kind = \"pointer-chase\"\nhot_layout = \"scattered\"", "workload.hot_layout"),
        ("kind = \"pointer-chase\"\nhot_set = 8192\nhot_layout = \"scattered\"\nhot_chunk = 100", "workload.hot_chunk"),
        ("kind = \"pointer-chase\"\nhot_set = 4096\nhot_layout = \"scattered\"\nhot_chunk = 8192", "workload.hot_set"),
        ("contents = \"partly-shared\"", "workload.shared.portion"),
        ("contents = \"shared\"\nshared.portion = 0.5", "workload.shared"),
        ("shared.portion = 0.5", "workload.shared"),
        ("contents = \"partly-shared\"\nshared.portion = 1.5", "workload.shared.portion"),
        ("contents = \"partly-shared\"\nshared.portion = 0.5\nshared.degree = -0.1", "workload.shared.degree"),
        ("contents = \"partly-shared\"\nshared.portion = 0.5\nshared.degree = 0.0005", "workload.shared.degree"),
    ];
    for (text, key) in cases {
        assert_eq!(rejected_key(text), key, "{text}");
    }
}

#[test]
fn build_refuses_bad_config_with_the_prefix() {
    let cfg = parse("write_fraction = 3.0").unwrap();
    match super::super::build_generator(&cfg, "run.workloads.0") {
        Err(Error::Config { key, .. }) => assert_eq!(key, "run.workloads.0.write_fraction"),
        other => panic!("{:?}", other.map(|w| w.name().to_string())),
    }
}

#[test]
fn config_round_trips_through_toml() {
    let cfg = parse("kind = \"kv\"\nobjects = 1000\ndistribution = \"hotspot\"").unwrap();
    let text = toml::to_string(&cfg).unwrap();
    let back = parse(&text).unwrap();
    assert_eq!(back.objects, Some(1000));
    assert_eq!(back.distribution, KeyDistribution::Hotspot);
}
