//! The FNV-1a checksum of the request bodies, which proves every target was sent the same
//! bytes, batch for batch.

/// FNV-1a (64 bits) over every request body in order: equal checksums mean the targets
/// were sent the same bytes, batch for batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checksum {
    state: u64,
    /// Bodies added.
    pub batches: u64,
    /// Bytes added.
    pub bytes: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Self {
            state: 0xcbf2_9ce4_8422_2325,
            batches: 0,
            bytes: 0,
        }
    }
}

impl Checksum {
    /// Adds one body; a body's length is mixed in too, so moving bytes between batches
    /// changes the checksum.
    pub fn add(&mut self, body: &[u8]) {
        let mut state = self.state;
        for &byte in (body.len() as u64).to_le_bytes().iter().chain(body) {
            state = (state ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.state = state;
        self.batches += 1;
        self.bytes += body.len() as u64;
    }

    /// `0x` and sixteen hex digits.
    pub fn hex(&self) -> String {
        format!("{:#018x}", self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_sees_every_byte_and_the_batch_boundaries() {
        let of = |bodies: &[&[u8]]| {
            let mut c = Checksum::default();
            for body in bodies {
                c.add(body);
            }
            c
        };
        let a = of(&[b"cpu a=1 1\n", b"cpu a=2 2\n"]);
        assert_eq!(a, of(&[b"cpu a=1 1\n", b"cpu a=2 2\n"]));
        assert_eq!((a.batches, a.bytes), (2, 20));
        assert_ne!(a.hex(), of(&[b"cpu a=1 1\n", b"cpu a=3 2\n"]).hex());
        assert_ne!(a.hex(), of(&[b"cpu a=2 2\n", b"cpu a=1 1\n"]).hex());
        assert_ne!(a.hex(), of(&[b"cpu a=1 1\ncpu a=2 2\n"]).hex());
        assert_eq!(a.hex().len(), 18);
        assert!(a.hex().starts_with("0x"));
    }
}
