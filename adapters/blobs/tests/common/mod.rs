//! Helpers both backends' tests use.

use std::path::Path;

/// Pseudo-random bytes: no run of them repeats, so a misplaced piece changes the digest.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The names in `dir`; none when it does not exist.
pub fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(list) => list
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}
