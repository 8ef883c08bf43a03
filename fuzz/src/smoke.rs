//! A libFuzzer-free smoke loop over the same target: mutates the seed
//! datasets with a fixed-seed PRNG (byte flips, YAML/JSON punctuation,
//! truncations, splices) and feeds each mutant to the loader. Runs on
//! stable: `cargo run --manifest-path fuzz/Cargo.toml --no-default-features
//! --release --bin smoke -- [iterations] [seed]`.

use std::path::Path;
use std::time::Instant;

const PUNCTUATION: &[&[u8]] = &[
    b":", b"-", b"[", b"]", b"{", b"}", b",", b"\"", b"'", b"\n", b"  ", b"*", b"&a", b"*a", b"!!",
    b"|", b">", b"#", b"~", b"null", b"true", b"1e999", b"type: ", b"\\u0000", b"**", b"[-1]",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(5) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 => {
                let p = PUNCTUATION[rng.below(PUNCTUATION.len())];
                data.splice(at..at, p.iter().copied());
            }
            2 => data.truncate(at),
            3 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                let to = (from + rng.below(200)).min(other.len());
                data.splice(at..at, other[from..to].iter().copied());
            }
            _ => {
                let end = (at + rng.below(50)).min(data.len());
                data.drain(at..end);
            }
        }
    }
    data
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let seed: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0x5CAF_F01D);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = Vec::new();
    for dir in [
        root.join("seeds"),
        root.join("../scaffold/tests/fixtures/datasets"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if let Ok(bytes) = std::fs::read(&p) {
                seeds.push(bytes);
            }
        }
    }
    if seeds.is_empty() {
        eprintln!("no seed inputs found next to {}", root.display());
        std::process::exit(2);
    }
    let mut rng = Rng(seed | 1);
    let started = Instant::now();
    for s in &seeds {
        scaffold_fuzz::dataset_loader(s);
    }
    for _ in 0..iterations {
        let input = mutate(&mut rng, &seeds);
        scaffold_fuzz::dataset_loader(&input);
    }
    println!(
        "smoke: {} seeds + {iterations} mutants (seed {seed}) through the dataset loader in {:.1} s, no panic",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
}
