//! N-dimensional Hilbert keys.
//!
//! Source: John Skilling, "Programming the Hilbert curve", AIP Conference Proceedings 707,
//! 381 (2004): the coordinates are transformed in place ("axes to transpose") into the
//! transposed form of the Hilbert index, whose bits are then interleaved most significant
//! first, exactly as [`super::zorder::interleave`] does. Consecutive keys are neighbouring
//! cells: they differ by one in exactly one coordinate. With one coordinate the key is the
//! coordinate itself (a plain sort).

/// The Hilbert index of `coords`, each holding `bits` bits; `coords.len() * bits <= 64`.
#[must_use]
pub fn index(coords: &[u32], bits: u32) -> u64 {
    if coords.len() <= 1 || bits == 0 {
        return coords.first().map_or(0, |&c| u64::from(c));
    }
    // Clustering has at most six coordinates: transform them on the stack.
    let mut stack = [0u32; 6];
    if let Some(x) = stack.get_mut(..coords.len()) {
        x.copy_from_slice(coords);
        axes_to_transpose(x, bits);
        return super::zorder::interleave(x, bits);
    }
    let mut x: Vec<u32> = coords.to_vec();
    axes_to_transpose(&mut x, bits);
    super::zorder::interleave(&x, bits)
}

/// Skilling's `AxestoTranspose`, in place, without data-dependent branches (each bit test
/// becomes a mask: the branches mispredict about half the time on real keys).
fn axes_to_transpose(x: &mut [u32], bits: u32) {
    let Some((first, rest)) = x.split_first_mut() else {
        return;
    };
    let all_if = |set: bool| 0u32.wrapping_sub(u32::from(set));
    let m: u32 = 1 << (bits - 1);
    // Inverse undo excess work.
    let mut x0 = *first;
    let mut q = m;
    while q > 1 {
        let p = q - 1;
        // i = 0: invert the low bits of x[0] when its bit q is set.
        x0 ^= p & all_if(x0 & q != 0);
        for xi in rest.iter_mut() {
            // Bit q set: invert the low bits of x[0]; else exchange them with x[i]'s.
            let set = all_if(*xi & q != 0);
            let t = (x0 ^ *xi) & p & !set;
            x0 ^= (p & set) | t;
            *xi ^= t;
        }
        q >>= 1;
    }
    *first = x0;
    // Gray encode.
    let n = x.len();
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q = m;
    while q > 1 {
        t ^= (q - 1) & all_if(x[n - 1] & q != 0);
        q >>= 1;
    }
    for v in x.iter_mut() {
        *v ^= t;
    }
}

#[cfg(test)]
#[expect(
    clippy::cast_possible_truncation,
    reason = "grids of at most 4096 cells"
)]
mod tests {
    use super::*;

    /// Every cell of a `dims`-dimensional grid of side `2^bits`, ordered by Hilbert index,
    /// must be a permutation of 0..cells whose consecutive cells are unit steps.
    fn check_grid(dims: usize, bits: u32) {
        let side = 1u32 << bits;
        let cells = (side as usize).pow(dims as u32);
        let mut by_index: Vec<Option<Vec<u32>>> = vec![None; cells];
        for cell in 0..cells {
            let mut rest = cell;
            let coords: Vec<u32> = (0..dims)
                .map(|_| {
                    let c = (rest % side as usize) as u32;
                    rest /= side as usize;
                    c
                })
                .collect();
            let h = usize::try_from(index(&coords, bits)).unwrap();
            assert!(h < cells, "index {h} out of range");
            assert!(by_index[h].is_none(), "index {h} taken twice");
            by_index[h] = Some(coords);
        }
        for pair in by_index.windows(2) {
            let (a, b) = (pair[0].as_ref().unwrap(), pair[1].as_ref().unwrap());
            let steps: Vec<u32> = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).collect();
            assert_eq!(steps.iter().sum::<u32>(), 1, "{a:?} -> {b:?} in {dims}d");
        }
    }

    #[test]
    fn consecutive_indices_are_unit_steps_in_2_to_6_dimensions() {
        check_grid(2, 5);
        check_grid(3, 3);
        check_grid(4, 2);
        check_grid(5, 2);
        check_grid(6, 2);
    }

    #[test]
    fn matches_hilbert_2d() {
        // hilbert_2d (Variant::Hilbert) draws the very same curve: its (x, y) is our [x, y].
        for bits in 1..=6u32 {
            let side = 1u32 << bits;
            for x in 0..side {
                for y in 0..side {
                    let theirs = hilbert_2d::xy2h_discrete(
                        x as usize,
                        y as usize,
                        bits as usize,
                        hilbert_2d::Variant::Hilbert,
                    );
                    assert_eq!(
                        index(&[x, y], bits),
                        theirs as u64,
                        "({x}, {y}) order {bits}"
                    );
                }
            }
        }
    }

    #[test]
    fn one_dimension_is_a_plain_sort() {
        for v in [0u32, 1, 2, 1000, u32::MAX] {
            assert_eq!(index(&[v], 32), u64::from(v));
        }
    }
}
