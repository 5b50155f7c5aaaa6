//! Size-bounded bin-packing of the files of one partition.
//!
//! # Algorithm
//! Best-fit decreasing (Johnson 1973; at most 11/9 OPT + 6/9 bins, like first-fit decreasing):
//! 1. Sort the items by size, largest first (ties: smaller index first, so the result is
//!    deterministic).
//! 2. For each item, put it into the open bin with the *least* remaining capacity that still
//!    fits it; open a new bin when none does. An item larger than the capacity gets a bin of
//!    its own.
//! 3. Inside each bin, items are listed by index (log order); bins are ordered by their
//!    smallest index.
//!
//! Open bins live in a `BTreeSet` keyed by remaining capacity, so packing `n` items is
//! `O(n log n)`.

use std::collections::BTreeSet;

/// Packs items (`(index, size_bytes)`) into bins of at most `capacity_bytes` each.
///
/// Returns the bins as lists of item indices. Every index appears in exactly one bin. A bin's
/// total exceeds `capacity_bytes` only when it holds a single item larger than the capacity.
#[must_use]
pub fn pack(items: &[(usize, u64)], capacity_bytes: u64) -> Vec<Vec<usize>> {
    let mut order: Vec<(usize, u64)> = items.to_vec();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut bins: Vec<Vec<usize>> = Vec::new();
    // (remaining capacity, bin number)
    let mut open: BTreeSet<(u64, usize)> = BTreeSet::new();
    for (index, size) in order {
        if size >= capacity_bytes {
            bins.push(vec![index]);
            continue;
        }
        let fit = open.range((size, 0)..).next().copied();
        match fit {
            Some((remaining, bin)) => {
                open.remove(&(remaining, bin));
                bins[bin].push(index);
                let left = remaining - size;
                if left > 0 {
                    open.insert((left, bin));
                }
            }
            None => {
                bins.push(vec![index]);
                let left = capacity_bytes - size;
                if left > 0 {
                    open.insert((left, bins.len() - 1));
                }
            }
        }
    }
    for bin in &mut bins {
        bin.sort_unstable();
    }
    bins.sort_by_key(|bin| bin[0]);
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(items: &[(usize, u64)], bins: &[Vec<usize>]) -> Vec<u64> {
        bins.iter()
            .map(|b| {
                b.iter()
                    .map(|i| items.iter().find(|x| x.0 == *i).unwrap().1)
                    .sum()
            })
            .collect()
    }

    #[test]
    fn every_item_once_and_bins_within_capacity() {
        // A deterministic pseudo-random sequence (LCG), no external RNG needed.
        let mut state: u64 = 42;
        let items: Vec<(usize, u64)> = (0..2000)
            .map(|i| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                (i, 1 + (state >> 33) % 120)
            })
            .collect();
        let bins = pack(&items, 100);
        let mut seen: Vec<usize> = bins.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..2000).collect::<Vec<_>>());
        for (bin, total) in bins.iter().zip(totals(&items, &bins)) {
            assert!(total <= 100 || bin.len() == 1, "{bin:?} holds {total}");
        }
        // Lower bound on the optimum: total size / capacity (items > capacity count alone).
        let big = items.iter().filter(|x| x.1 >= 100).count();
        let small: u64 = items.iter().filter(|x| x.1 < 100).map(|x| x.1).sum();
        let lower = big + usize::try_from(small.div_ceil(100)).unwrap();
        assert!(
            bins.len() * 9 <= lower * 11 + 9,
            "{} bins vs bound {lower}",
            bins.len()
        );
    }

    #[test]
    fn packs_exactly_when_sizes_allow() {
        let items = [(0, 60), (1, 40), (2, 30), (3, 70), (4, 50), (5, 50)];
        let bins = pack(&items, 100);
        assert_eq!(bins, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
        assert_eq!(totals(&items, &bins), vec![100, 100, 100]);
    }

    #[test]
    fn oversized_items_stand_alone() {
        let bins = pack(&[(0, 500), (1, 10), (2, 20)], 100);
        assert_eq!(bins, vec![vec![0], vec![1, 2]]);
        assert!(pack(&[], 100).is_empty());
    }
}
