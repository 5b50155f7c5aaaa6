//! Z-order (Morton) keys: bit interleaving.
//!
//! Source: G. M. Morton, "A computer oriented geodetic data base and a new technique in file
//! sequencing" (IBM, 1966).
//!
//! # Encoding
//! With `n` coordinates of `b` bits each, the key holds `n * b` bits, most significant first:
//! bit `b-1` of coordinate 0, bit `b-1` of coordinate 1, ..., bit `b-1` of coordinate `n-1`,
//! then bit `b-2` of coordinate 0, and so on. Coordinate 0 is the most significant within
//! each group, so with one coordinate the key is the coordinate itself.
//!
//! ```text
//!   x = 0b10, y = 0b01 (b = 2)  ->  key = x1 y1 x0 y0 = 0b1001
//! ```

/// Coordinates up to which [`interleave`] spreads bits by table.
const TABLE_DIMENSIONS: usize = 6;

/// `SPREAD[n][b]`: the 8 bits of `b` moved to bits `0, n, 2n, ..., 7n` (a byte's bits as
/// they land in an `n`-coordinate key).
static SPREAD: [[u64; 256]; TABLE_DIMENSIONS + 1] = spread_tables();

const fn spread_tables() -> [[u64; 256]; TABLE_DIMENSIONS + 1] {
    let mut tables = [[0u64; 256]; TABLE_DIMENSIONS + 1];
    let mut n = 1;
    while n <= TABLE_DIMENSIONS {
        let mut byte = 0;
        while byte < 256 {
            let mut spread = 0u64;
            let mut i = 0;
            while i < 8 {
                if (byte >> i) & 1 == 1 {
                    spread |= 1 << (i * n);
                }
                i += 1;
            }
            tables[n][byte] = spread;
            byte += 1;
        }
        n += 1;
    }
    tables
}

/// Interleaves the low `bits` bits of each coordinate into one key (see the module docs).
/// Up to six coordinates, each byte of a coordinate is spread by a table lookup
/// (`SPREAD`); more go bit by bit.
///
/// # Panics
/// Debug builds assert `coords.len() * bits <= 64`; the caller sizes `bits` with
/// [`super::bits_per_dimension`].
#[must_use]
pub fn interleave(coords: &[u32], bits: u32) -> u64 {
    debug_assert!(coords.len() as u64 * u64::from(bits) <= 64);
    let n = coords.len();
    if n == 0 || n > TABLE_DIMENSIONS {
        return interleave_bits(coords, bits);
    }
    let mask = u32::MAX.checked_shr(32 - bits.min(32)).unwrap_or(0);
    let table = &SPREAD[n];
    let mut key = 0u64;
    for (j, &c) in coords.iter().enumerate() {
        let c = c & mask;
        let mut spread = 0u64;
        for (k, byte) in c.to_le_bytes().into_iter().enumerate() {
            if byte != 0 {
                // Bit 8k + i of the coordinate goes to bit (8k + i) * n.
                spread |= table[usize::from(byte)] << (8 * k * n);
            }
        }
        key |= spread << (n - 1 - j);
    }
    key
}

/// [`interleave`] bit by bit.
fn interleave_bits(coords: &[u32], bits: u32) -> u64 {
    let mut key = 0u64;
    for bit in (0..bits).rev() {
        for &c in coords {
            key = (key << 1) | u64::from((c >> bit) & 1);
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_spread_equals_bit_by_bit() {
        let mut state = 3u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 32) as u32
        };
        for n in 1..=TABLE_DIMENSIONS {
            let most = u32::try_from(64 / n).unwrap().min(32);
            for bits in [1, 2, 7, 8, 9, most - 1, most] {
                for _ in 0..2_000 {
                    // Bits above `bits` are ignored by both.
                    let coords: Vec<u32> = (0..n).map(|_| next()).collect();
                    assert_eq!(
                        interleave(&coords, bits),
                        interleave_bits(&coords, bits),
                        "{coords:?}, {bits} bits"
                    );
                }
            }
        }
    }

    #[test]
    fn matches_the_zorder_crate() {
        // The zorder crate puts coordinate 0 in the least significant position of each bit
        // group; ours puts it in the most significant one, so the coordinates are reversed.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 32) as u32
        };
        for _ in 0..10_000 {
            let (a, b) = (next(), next());
            assert_eq!(interleave(&[a, b], 32), zorder::index_of([b, a]));
            let c: Vec<u16> = (0..4).map(|_| (next() >> 16) as u16).collect();
            let ours = interleave(&c.iter().map(|&x| u32::from(x)).collect::<Vec<_>>(), 16);
            assert_eq!(ours, zorder::index_of([c[3], c[2], c[1], c[0]]));
        }
    }

    #[test]
    fn monotone_in_each_dimension() {
        let mut state = 11u64;
        let mut next = |bound: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            ((state >> 33) as u32) % bound
        };
        for dims in 1..=6u32 {
            let bits = super::super::bits_per_dimension(dims as usize);
            let max = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            for _ in 0..2_000 {
                let mut c: Vec<u32> = (0..dims).map(|_| next(max)).collect();
                let d = next(dims) as usize;
                let before = interleave(&c, bits);
                c[d] += 1;
                assert!(interleave(&c, bits) > before, "dims {dims}");
            }
        }
        assert_eq!(interleave(&[0b10, 0b01], 2), 0b1001);
        assert_eq!(interleave(&[12345], 16), 12345);
    }
}
