//! A libFuzzer-free smoke loop over the same target: mutates the seed
//! datasets with a fixed-seed PRNG (byte flips, YAML/JSON punctuation,
//! truncations, splices; a part repeated up to large sizes, deep nesting,
//! alias bombs, bytes that are not UTF-8) and feeds each mutant to the
//! loader. Runs on
//! stable: `cargo run --manifest-path fuzz/Cargo.toml --no-default-features
//! --release --bin smoke -- [iterations] [seed]`.

use std::path::Path;
use std::time::Instant;

const PUNCTUATION: &[&[u8]] = &[
    b":", b"-", b"[", b"]", b"{", b"}", b",", b"\"", b"'", b"\n", b"  ", b"*", b"&a", b"*a", b"!!",
    b"|", b">", b"#", b"~", b"null", b"true", b"1e999", b"type: ", b"\\u0000", b"**", b"[-1]",
];

/// Nine levels of ten aliases: a billion values from a few hundred bytes.
const ALIAS_BOMB: &[u8] = b"\nlol: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\ni: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";

/// Bytes that are not UTF-8 where they stand: a lone byte of Latin-1, a
/// lead byte without its continuation, a stray continuation, an overlong
/// form, a surrogate.
const NOT_UTF8: &[&[u8]] = &[
    b"\xe9",
    b"\xc3",
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xff\xfe",
];

/// The most a mutant grows to by repetition.
const MAX_LEN: usize = 64 * 1024;

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

/// Repeat a part of `data` from `at` until the input is up to [`MAX_LEN`]
/// long: a large document of the seed's own lines.
fn repeat(rng: &mut Rng, data: &mut Vec<u8>, at: usize) {
    let end = (at + 1 + rng.below(400)).min(data.len());
    if at >= end {
        return;
    }
    let part = data[at..end].to_vec();
    let times = 1 + rng.below(MAX_LEN / part.len());
    let mut grown = Vec::with_capacity(data.len() + part.len() * times);
    grown.extend_from_slice(&data[..end]);
    for _ in 0..times {
        grown.extend_from_slice(&part);
    }
    grown.extend_from_slice(&data[end..]);
    grown.truncate(MAX_LEN.max(data.len()));
    *data = grown;
}

/// Nest what is at `at` in up to 80 levels of flow lists or block
/// mappings, around the cap of 32.
fn nest(rng: &mut Rng, data: &mut Vec<u8>, at: usize) {
    let depth = 1 + rng.below(80);
    if rng.below(2) == 0 {
        data.splice(at..at, std::iter::repeat_n(b'[', depth));
        let end = (at + depth + rng.below(100)).min(data.len());
        data.splice(end..end, std::iter::repeat_n(b']', depth));
    } else {
        let mut block = Vec::new();
        for level in 0..depth {
            block.push(b'\n');
            block.extend(std::iter::repeat_n(b' ', level * 2));
            block.extend_from_slice(b"k:");
        }
        block.extend_from_slice(b" v\n");
        data.splice(at..at, block);
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(9) {
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
            4 => {
                let end = (at + rng.below(50)).min(data.len());
                data.drain(at..end);
            }
            // Large inputs are slow to read: about one mutant in a hundred.
            5 if rng.below(10) == 0 => repeat(rng, &mut data, at),
            5 => {}
            6 => nest(rng, &mut data, at),
            // A bomb is read up to its budget, slow too: as rare.
            7 if rng.below(10) == 0 => data
                .splice(at..at, ALIAS_BOMB.iter().copied())
                .for_each(drop),
            7 => {}
            _ => {
                let b = NOT_UTF8[rng.below(NOT_UTF8.len())];
                data.splice(at..at, b.iter().copied());
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
