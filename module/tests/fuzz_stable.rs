//! The fuzz target's body (`um_module::fuzzing::exercise`, also run by
//! `module/fuzz/fuzz_targets/load.rs` under cargo-fuzz) over a few thousand deterministic
//! mutations of the fixtures, on stable Rust: bit flips, bytes set to boundary values, 32- and
//! 64-bit fields overwritten (aimed at the ELF header, the section header table, the symbol
//! table and the relocations, where the parser's offsets and sizes come from), truncation and
//! splicing. Passing means no panic, no abort and no runaway allocation.

mod common;

use common::{ARCHES, MODULES, fixture};
use goblin::elf::Elf;
use um_module::fuzzing::{Depth, exercise};

/// Mutations per fixture (12 fixtures: 6000 runs).
const PER_FIXTURE: usize = 500;

/// xorshift64*: small, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [u64; 12] = [
    0,
    1,
    7,
    0x18,
    0x40,
    0x7f,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x7fff_ffff_ffff_ffff,
    u64::MAX,
];

/// Byte ranges worth aiming at: the ELF header, the section header table, and the symbol
/// and relocation tables.
fn hot_ranges(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut v = vec![(0, 64)];
    if let Ok(elf) = Elf::parse(bytes) {
        let shoff = elf.header.e_shoff as usize;
        v.push((shoff, 64 * elf.section_headers.len()));
        for sh in &elf.section_headers {
            if sh.sh_type == 2 || sh.sh_type == 4 {
                v.push((sh.sh_offset as usize, sh.sh_size as usize));
            }
        }
    }
    v
}

fn mutate(rng: &mut Rng, base: &[u8], hot: &[(usize, usize)], other: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let (start, len) = if rng.below(4) == 0 {
            (0, b.len())
        } else {
            hot[rng.below(hot.len())]
        };
        let pos = (start + rng.below(len.max(1))).min(b.len().saturating_sub(1));
        // Truncation is rare: with the section headers at the end, it mostly tests one check.
        match rng.below(25) {
            0 => b.truncate(pos),
            7..=12 => b[pos] ^= 1 << rng.below(8),
            1 => b[pos] = INTERESTING[rng.below(INTERESTING.len())] as u8,
            2 => {
                let v = INTERESTING[rng.below(INTERESTING.len())] as u32 ^ (rng.below(4) as u32);
                if let Some(s) = b.get_mut(pos..pos + 4) {
                    s.copy_from_slice(&v.to_le_bytes());
                }
            }
            3 => {
                let v = INTERESTING[rng.below(INTERESTING.len())].wrapping_add(rng.below(3) as u64);
                if let Some(s) = b.get_mut(pos..pos + 8) {
                    s.copy_from_slice(&v.to_le_bytes());
                }
            }
            4 => b.truncate(b.len().saturating_sub(rng.below(3))),
            5 => {
                // Splice a chunk of another fixture in.
                let n = 1 + rng.below(64);
                let from = rng.below(other.len());
                for i in 0..n {
                    if let (Some(d), Some(&s)) = (b.get_mut(pos + i), other.get(from + i)) {
                        *d = s;
                    }
                }
            }
            _ => b[pos] = rng.next() as u8,
        }
        if b.is_empty() {
            break;
        }
    }
    b
}

#[test]
fn mutated_fixtures_never_panic() {
    let fixtures: Vec<Vec<u8>> = ARCHES
        .iter()
        .flat_map(|a| MODULES.iter().map(move |m| fixture(a, m)))
        .collect();
    // UM_FUZZ_ITERS=N runs N mutations per fixture instead (a longer local soak).
    let per: usize = std::env::var("UM_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PER_FIXTURE);
    let mut rng = Rng(std::env::var("UM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15));
    let mut depths = [0usize; 3];
    for (i, f) in fixtures.iter().enumerate() {
        // The unmutated fixture goes through the same body, all the way.
        assert_eq!(exercise(f), Depth::Linked);
        let hot = hot_ranges(f);
        let other = &fixtures[(i + 1) % fixtures.len()];
        for _ in 0..per {
            let m = mutate(&mut rng, f, &hot, other);
            // UM_FUZZ_DEBUG=1 prints why each refused mutation was refused.
            if std::env::var("UM_FUZZ_DEBUG").is_ok() {
                if let Err(e) = um_module::ModuleObject::parse(&m) {
                    eprintln!(
                        "REFUSED {}",
                        e.msg
                            .split(|c: char| c.is_ascii_digit())
                            .next()
                            .unwrap_or("")
                    );
                }
            }
            depths[exercise(&m) as usize] += 1;
        }
    }
    let [refused, parsed, linked] = depths;
    assert_eq!(refused + parsed + linked, per * fixtures.len());
    // The mutations must reach the layout and relocation code, not only the header checks.
    assert!(parsed + linked > per * fixtures.len() / 10, "{depths:?}");
    assert!(linked > per * fixtures.len() / 20, "{depths:?}");
    eprintln!("mutations: {refused} refused, {parsed} parsed only, {linked} linked");
}
