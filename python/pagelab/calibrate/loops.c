/* pagelab calibrate's microbenchmarks (x86-64 Linux), compiled at run time
 * with the system's C compiler and run by python/pagelab/calibrate/native.py.
 *
 *   loops cpuid
 *       every CPUID leaf calibrate reads: "cpuid LEAF SUBLEAF EAX EBX ECX EDX"
 *   loops clock REPEATS
 *       the core clock: a chain of dependent adds (one cycle each) timed
 *       against CLOCK_MONOTONIC, the fastest of REPEATS: "clock_ghz X"
 *   loops run 4k|thp BYTES REPEATS [chase] [random]
 *       maps BYTES (MADV_NOHUGEPAGE or MADV_HUGEPAGE, 2 MiB aligned), touches
 *       every 4 KiB page, reports the huge pages it got ("anon_huge_kib N",
 *       from /proc/self/smaps), then times each loop named, the fastest of
 *       timings (see time_loop) after an untimed pass:
 *       "LOOP NS_PER_ACCESS ACCESSES_PER_TIMING TIMINGS"
 *   loops probe 4k|thp PAGE_COUNT... REPEATS
 *       the TLB probe: a chase over the first N pages (4 KiB or 2 MiB) of one
 *       mapping, each page's line at a different offset so that the lines
 *       stay in the caches and only the TLB's reach changes:
 *       "probe N NS_PER_ACCESS ACCESSES_PER_TIMING TIMINGS"
 *
 * The loops (their instruction counts per access are a contract with
 * pagelab's simulation of them, `calibrate/predict.py`):
 *   chase:  one line per 4 KiB page, at offset 0, pages in a random cyclic
 *           order; `mov (p), p` twice then `sub; jnz`: 2 instructions per
 *           access, each load's address the previous load's data.
 *   random: independent loads of random 8-byte words of the same pages,
 *           indices from a 64-bit LCG reduced by multiply-shift (as pagelab's
 *           gups): imul, add, mov, mul, add-from-memory, dec, jnz: 7
 *           instructions per access.
 * Written in inline assembly so that no compiler changes those counts.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096UL
#define HUGE (2UL << 20)
/* The length of one timing: long enough that the clock's resolution and
 * the loop's start do not matter, short enough to fall between two
 * preemptions on a loaded machine (the minimum over many is reported). */
#define CHUNK_NS 2e6
#define LCG_A 6364136223846793005ULL /* Knuth's MMIX LCG */
#define LCG_C 1442695040888963407ULL

static void die(const char *what) {
    fprintf(stderr, "loops: %s\n", what);
    exit(2);
}

/* Wall-clock time. (This thread's CPU time would leave out preemptions,
 * but under this project's hypervisor it ran 3-4 times slow against a
 * chain of one-cycle adds: it cannot be trusted.) */
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void print_cpuid(unsigned leaf, unsigned sub) {
    unsigned a, b, c, d;
    __cpuid_count(leaf, sub, a, b, c, d);
    printf("cpuid %08x %u %08x %08x %08x %08x\n", leaf, sub, a, b, c, d);
}

/* Basic leaves 0, 1, 4 (caches), 0x18 (Intel's TLBs) with their subleaves;
 * the hypervisor's 0x40000000; extended 0x80000000 to 0x80000006 and
 * 0x80000019 (AMD's TLBs, 1 GiB included). */
static int cmd_cpuid(void) {
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    unsigned max_basic = a;
    print_cpuid(0, 0);
    print_cpuid(1, 0);
    for (unsigned sub = 0; max_basic >= 4 && sub < 16; sub++)
        print_cpuid(4, sub);
    if (max_basic >= 0x18) {
        __cpuid_count(0x18, 0, a, b, c, d);
        for (unsigned sub = 0; sub <= a && sub < 32; sub++)
            print_cpuid(0x18, sub);
    }
    print_cpuid(0x40000000, 0);
    __cpuid(0x80000000, a, b, c, d);
    unsigned max_ext = a;
    for (unsigned leaf = 0x80000000; leaf <= max_ext && leaf <= 0x80000006; leaf++)
        print_cpuid(leaf, 0);
    if (max_ext >= 0x80000019)
        print_cpuid(0x80000019, 0);
    return 0;
}

/* 100 dependent register-to-register adds per iteration: 100 cycles on
 * every x86 core of the last two decades (an add's latency is one cycle);
 * the loop's dec/jnz runs beside them. Not `add $1, reg`: Intel's cores
 * since Golden Cove fold chains of immediate adds at rename, and ran them
 * here at "8 GHz". */
static int cmd_clock(int repeats) {
    const uint64_t iterations = 10000; /* a million cycles: under a ms */
    double best = 1e300;
    for (int r = 0; r < repeats; r++) {
        uint64_t x = 0, n = iterations, one = 1;
        double t0 = now_ns();
        __asm__ volatile("1:\n\t"
                         ".rept 100\n\t"
                         "add %2, %0\n\t"
                         ".endr\n\t"
                         "dec %1\n\t"
                         "jnz 1b\n\t"
                         : "+r"(x), "+r"(n)
                         : "r"(one)
                         : "cc");
        double t = now_ns() - t0;
        if (t < best)
            best = t;
    }
    printf("clock_ghz %.4f\n", 100.0 * (double)iterations / best);
    return 0;
}

/* BYTES of anonymous memory at a 2 MiB boundary, advised before the first
 * touch, every 4 KiB page written once. */
static char *map_region(uint64_t bytes, int huge) {
    /* A THP footprint smaller than a huge page lies inside one. */
    if (huge && bytes < HUGE)
        bytes = HUGE;
    char *raw = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        die("mmap failed (not enough memory?)");
    char *base = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
    if (madvise(base, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
        die("madvise failed (a kernel without transparent huge pages?)");
    for (uint64_t off = 0; off < bytes; off += PAGE)
        base[off] = 1;
    return base;
}

/* AnonHugePages of the smaps entry holding `addr`, in KiB (0 if none). */
static long anon_huge_kib(const char *addr) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int inside = 0;
    long kib = 0;
    while (fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
            inside = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
            continue;
        }
        if (inside && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib;
}

/* Links `count` nodes into one random cycle; node i is at `node(i)`.
 * Returns the first node. */
static void *link_cycle(char *base, uint64_t count, uint64_t (*node)(uint64_t)) {
    uint64_t *order = malloc(count * sizeof *order);
    if (!order)
        die("out of memory for the chase's order");
    for (uint64_t i = 0; i < count; i++)
        order[i] = i;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (uint64_t i = count - 1; i > 0; i--) {
        uint64_t j = xorshift(&seed) % (i + 1);
        uint64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < count; i++)
        *(void **)(base + node(order[i])) = base + node(order[(i + 1) % count]);
    void *first = base + node(order[0]);
    free(order);
    return first;
}

static void *chase(void *p, uint64_t n) {
    __asm__ volatile("1:\n\t"
                     "mov (%0), %0\n\t"
                     "mov (%0), %0\n\t"
                     "sub $2, %1\n\t"
                     "jnz 1b\n\t"
                     : "+r"(p), "+r"(n)
                     :
                     : "cc", "memory");
    return p;
}

static uint64_t random_loads(const uint64_t *base, uint64_t words, uint64_t n, uint64_t x) {
    uint64_t sum = 0;
    __asm__ volatile("1:\n\t"
                     "imul %[a], %[x]\n\t"
                     "add %[c], %[x]\n\t"
                     "mov %[x], %%rax\n\t"
                     "mul %[w]\n\t"
                     "add (%[b],%%rdx,8), %[s]\n\t"
                     "dec %[n]\n\t"
                     "jnz 1b\n\t"
                     : [x] "+r"(x), [s] "+r"(sum), [n] "+r"(n)
                     : [a] "r"((uint64_t)LCG_A), [c] "r"((uint64_t)LCG_C), [w] "r"(words), [b] "r"(base)
                     : "rax", "rdx", "cc", "memory");
    return sum;
}

static volatile uint64_t sink;

/* One loop's state between timings: the chase's position, the random
 * loop's generator and sum. */
struct loop {
    int random;
    void *p;
    const uint64_t *words;
    uint64_t count, x, sum;
};

static void run_loop(struct loop *l, uint64_t accesses) {
    if (l->random)
        l->sum += random_loads(l->words, l->count, accesses, l->x++);
    else
        l->p = chase(l->p, accesses);
}

static double time_once(struct loop *l, uint64_t accesses) {
    double t0 = now_ns();
    run_loop(l, accesses);
    return now_ns() - t0;
}

/* ns per access: the fastest of many short timings (chunks of about
 * CHUNK_NS), after an untimed pass over `lap` accesses (one lap of the
 * chase: every page visited once). Chunks short enough to run between two
 * preemptions on a shared machine, and at least `repeats` of them and
 * two laps in all. */
static double time_loop(struct loop *l, uint64_t lap, int repeats) {
    uint64_t warm = lap > (1UL << 16) ? lap : (1UL << 16);
    double est = time_once(l, (warm + 1) & ~1UL) / (double)warm;
    double k = CHUNK_NS / (est > 0.1 ? est : 0.1);
    uint64_t chunk = k < 1024 ? 1024 : k > (1UL << 24) ? (1UL << 24) : (uint64_t)k;
    chunk = (chunk + 1) & ~1UL;
    uint64_t chunks = (2 * lap + chunk - 1) / chunk;
    if (chunks < (uint64_t)repeats)
        chunks = repeats;
    double best = 1e300;
    for (uint64_t c = 0; c < chunks; c++) {
        double t = time_once(l, chunk);
        if (t < best)
            best = t;
    }
    sink = l->sum + (uintptr_t)l->p;
    printf(" %.4f %" PRIu64 " %" PRIu64 "\n", best / (double)chunk, chunk, chunks);
    return best / (double)chunk;
}

static uint64_t page_start(uint64_t i) { return i * PAGE; }

static int parse_huge(const char *s) {
    if (strcmp(s, "4k") == 0)
        return 0;
    if (strcmp(s, "thp") == 0)
        return 1;
    die("page size must be 4k or thp");
    return 0;
}

static int cmd_run(int argc, char **argv) {
    if (argc < 4)
        die("usage: loops run 4k|thp BYTES REPEATS [chase] [random]");
    int huge = parse_huge(argv[0]);
    uint64_t bytes = strtoull(argv[1], NULL, 10);
    int repeats = atoi(argv[2]);
    if (bytes < PAGE || bytes % PAGE || repeats < 1)
        die("BYTES must be a positive multiple of 4096 and REPEATS at least 1");
    char *base = map_region(bytes, huge);
    printf("anon_huge_kib %ld\n", anon_huge_kib(base));
    fflush(stdout);
    uint64_t pages = bytes / PAGE;
    for (int i = 3; i < argc; i++) {
        struct loop l = {0};
        if (strcmp(argv[i], "chase") == 0) {
            l.p = link_cycle(base, pages, page_start);
        } else if (strcmp(argv[i], "random") == 0) {
            l = (struct loop){.random = 1, .words = (const uint64_t *)base, .count = bytes / 8, .x = 1};
        } else {
            die("loops are chase and random");
        }
        printf("%s", argv[i]);
        time_loop(&l, pages, repeats);
        fflush(stdout);
    }
    return 0;
}

/* The probe's node of page i: line i % 64 of the page, and for 2 MiB pages
 * also 4 KiB page (i / 64) % 512 of it, so consecutive pages' lines fall
 * in different cache sets. */
static uint64_t probe_page;
static uint64_t probe_node(uint64_t i) {
    uint64_t off = (i % 64) * 64;
    if (probe_page > PAGE)
        off += ((i / 64) % (probe_page / PAGE)) * PAGE;
    return i * probe_page + off;
}

static int cmd_probe(int argc, char **argv) {
    if (argc < 3)
        die("usage: loops probe 4k|thp PAGE_COUNT... REPEATS");
    int huge = parse_huge(argv[0]);
    probe_page = huge ? HUGE : PAGE;
    int repeats = atoi(argv[argc - 1]);
    uint64_t most = 0;
    for (int i = 1; i < argc - 1; i++) {
        uint64_t n = strtoull(argv[i], NULL, 10);
        if (n < 2)
            die("a probe needs at least 2 pages");
        if (n > most)
            most = n;
    }
    char *base = map_region(most * probe_page, huge);
    printf("anon_huge_kib %ld\n", anon_huge_kib(base));
    for (int i = 1; i < argc - 1; i++) {
        uint64_t n = strtoull(argv[i], NULL, 10);
        struct loop l = {.p = link_cycle(base, n, probe_node)};
        printf("probe %" PRIu64, n);
        time_loop(&l, n, repeats);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "cpuid") == 0)
        return cmd_cpuid();
    if (argc == 3 && strcmp(argv[1], "clock") == 0)
        return cmd_clock(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1);
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "probe") == 0)
        return cmd_probe(argc - 2, argv + 2);
    die("usage: loops cpuid | clock REPEATS | run ... | probe ...");
    return 2;
}
