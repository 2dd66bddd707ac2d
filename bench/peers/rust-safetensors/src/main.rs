//! st-harness times the safetensors crate on one file. Each load opens the
//! file, maps it (memmap2), runs `SafeTensors::deserialize` over the mapping,
//! looks one tensor up by name (`SafeTensors::tensor`) and unmaps it. With
//! `parse` the file is mapped once and each load is deserialize + lookup.
//!
//! Usage:
//!
//!     st-harness FILE TENSOR N [parse]       N loads; one JSON line (median, min in µs)
//!     st-harness FILE TENSOR serve [parse]   for each line N on stdin, N loads; one line of ns times
//!     st-harness FILE TENSOR stat [parse]    resident memory and allocations of one load, as JSON
//!
//! Allocations are counted by a global allocator that wraps the system's.
use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::File;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use memmap2::Mmap;
use safetensors::SafeTensors;

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn map(path: &str) -> Mmap {
    let f = File::open(path).expect("open");
    unsafe { Mmap::map(&f) }.expect("mmap")
}

/// One load: deserialize the mapping and look name up.
fn parse(buf: &[u8], name: &str) {
    let st = SafeTensors::deserialize(buf).expect("deserialize");
    let v = st.tensor(name).expect("lookup");
    std::hint::black_box(v.data().as_ptr());
}

fn load(path: &str, name: &str, mapped: Option<&Mmap>) {
    match mapped {
        Some(m) => parse(m, name),
        None => {
            let m = map(path);
            parse(&m, name);
        }
    }
}

fn run(path: &str, name: &str, mapped: Option<&Mmap>, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t0 = Instant::now();
            load(path, name, mapped);
            t0.elapsed().as_nanos() as f64
        })
        .collect()
}

fn rss_kib() -> i64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix("Rss:") {
            return rest.trim().trim_end_matches("kB").trim().parse().unwrap_or(-1);
        }
    }
    -1
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: st-harness FILE TENSOR N|serve|stat [parse]");
        std::process::exit(2);
    }
    let (path, name, mode) = (&args[1], &args[2], args[3].as_str());
    let parse_only = args.get(4).map(|s| s == "parse").unwrap_or(false);
    let peer = if parse_only { "rust-safetensors-parse" } else { "rust-safetensors" };
    let rss0 = rss_kib();
    let mapped = if parse_only { Some(map(path)) } else { None };
    match mode {
        "stat" => {
            let a0 = ALLOCS.load(Ordering::Relaxed);
            let m = match &mapped {
                Some(_) => None,
                None => Some(map(path)),
            };
            let buf: &[u8] = mapped.as_ref().or(m.as_ref()).unwrap();
            let st = SafeTensors::deserialize(buf).expect("deserialize");
            st.tensor(name).expect("lookup");
            let a1 = ALLOCS.load(Ordering::Relaxed);
            let rss1 = rss_kib();
            for _ in 0..1000 {
                std::hint::black_box(st.tensor(name).expect("lookup"));
            }
            let a2 = ALLOCS.load(Ordering::Relaxed);
            println!(
                "{{\"peer\":\"{}\",\"rss_before_kib\":{},\"rss_after_open_kib\":{},\"allocs_per_open\":{},\"allocs_per_lookup\":{},\"tensors\":{}}}",
                peer, rss0, rss1, a1 - a0, (a2 - a1) as f64 / 1000.0, st.len()
            );
        }
        "serve" => {
            let stdin = std::io::stdin();
            let mut out = std::io::stdout().lock();
            for line in stdin.lock().lines() {
                let line = line.expect("stdin");
                let n: usize = match line.trim().parse() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        eprintln!("st-harness: want a positive count, got {:?}", line);
                        std::process::exit(1);
                    }
                };
                let t = run(path, name, mapped.as_ref(), n);
                let s: Vec<String> = t.iter().map(|x| format!("{}", *x as i64)).collect();
                writeln!(out, "{}", s.join(" ")).unwrap();
                out.flush().unwrap();
            }
        }
        _ => {
            let n: usize = mode.parse().expect("N");
            run(path, name, mapped.as_ref(), n.min(10));
            let mut t = run(path, name, mapped.as_ref(), n);
            t.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{{\"peer\":\"{}\",\"iters\":{},\"median_us\":{:.2},\"min_us\":{:.2}}}",
                peer, n, t[n / 2] / 1e3, t[0] / 1e3
            );
        }
    }
}
