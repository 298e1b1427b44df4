//! The last bytes of stdout, kept for the runner (agent CLIs print their usage report last).

use std::collections::VecDeque;

/// Keeps the last `limit` bytes written to it.
#[derive(Debug)]
pub(crate) struct Tail {
    limit: usize,
    bytes: VecDeque<u8>,
}

impl Tail {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            bytes: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(self.limit)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.limit);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_across_chunks() {
        let mut tail = Tail::new(5);
        tail.push(b"abc");
        tail.push(b"defg");
        assert_eq!(tail.into_bytes(), b"cdefg");

        let mut tail = Tail::new(3);
        tail.push(b"0123456789");
        assert_eq!(tail.into_bytes(), b"789");

        let mut tail = Tail::new(0);
        tail.push(b"anything");
        assert!(tail.into_bytes().is_empty());
    }
}
