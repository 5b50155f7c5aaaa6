//! Space-filling curves over rank buckets: the pure math of clustering. Knows nothing about
//! Delta.
//!
//! A row's key is computed in two steps: each clustering column's value becomes a bucket
//! number ([`keys`]: quantiles of a seeded sample, nulls first), then the buckets of the row
//! are combined into one `u64` along a Z-order ([`zorder`]) or Hilbert ([`hilbert`]) curve.
//! Sorting rows by key and cutting the order into files gives every file a compact box of
//! the clustering columns. Keys are in-memory sort keys, never persisted.
//!
//! This module is the building block of `optimize --zorder/--hilbert` (the clustering
//! layout, its spill to disk and its incremental cubes come with that command).

pub mod hilbert;
pub mod keys;
pub mod zorder;

/// The most clustering columns a curve takes.
pub const MAX_DIMENSIONS: usize = 6;
/// The most bits (so `2^16` buckets) a column's bucket number uses.
pub const MAX_BITS_PER_DIMENSION: u32 = 16;

/// A space-filling curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    /// Bit interleaving (Morton order).
    ZOrder,
    /// Hilbert order (Skilling's transform): neighbouring keys are neighbouring cells.
    Hilbert,
}

/// Tag naming the cube a file belongs to (Delta Spark's Z-order cube tags).
pub const TAG_CUBE_ID: &str = "ZCUBE_ID";
/// Tag with the JSON list of the clustering columns of the cube.
pub const TAG_CUBE_COLUMNS: &str = "ZCUBE_ZORDER_BY";
/// Tag with the curve of the cube ([`Curve::name`]: `zorder` or `hilbert`).
pub const TAG_CUBE_CURVE: &str = "ZCUBE_ZORDER_CURVE";

impl Curve {
    /// Every curve, in the order options list them.
    pub const ALL: [Curve; 2] = [Curve::ZOrder, Curve::Hilbert];

    /// The curve's name in tags, commits, plans and options: `zorder` or `hilbert`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Curve::ZOrder => "zorder",
            Curve::Hilbert => "hilbert",
        }
    }

    /// The curve named `name` ([`Curve::name`], case-insensitive), `None` for another name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl serde::Serialize for Curve {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Curve {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        Self::parse(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown curve '{name}' (zorder or hilbert)"))
        })
    }
}

/// Bits per column for `dimensions` columns: `floor(64 / dimensions)`, at most
/// [`MAX_BITS_PER_DIMENSION`], so a 6-column key still fits 64 bits.
#[must_use]
pub fn bits_per_dimension(dimensions: usize) -> u32 {
    let dimensions = u32::try_from(dimensions.clamp(1, 64)).unwrap_or(64);
    (64 / dimensions).min(MAX_BITS_PER_DIMENSION)
}

impl Curve {
    /// The key of one row from its bucket numbers (one per column, each below
    /// `2^bits_per_dimension(buckets.len())`). With one column both curves are the bucket
    /// itself, a plain sort.
    #[must_use]
    pub fn key(self, buckets: &[u32]) -> u64 {
        self.key_with_bits(buckets, bits_per_dimension(buckets.len()))
    }

    /// The key of one row from its bucket numbers, each below `2^bits`, with
    /// `buckets.len() * bits <= 64`: a cut tree keeps the key's top bits for its leaf
    /// ([`crate::plan::cuts::CutTree::curve_bits`]).
    #[must_use]
    pub fn key_with_bits(self, buckets: &[u32], bits: u32) -> u64 {
        match self {
            Curve::ZOrder => zorder::interleave(buckets, bits),
            Curve::Hilbert => hilbert::index(buckets, bits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_fill_64_bits_without_exceeding_16_per_column() {
        let expected = [(1, 16), (2, 16), (3, 16), (4, 16), (5, 12), (6, 10)];
        for (dims, bits) in expected {
            assert_eq!(bits_per_dimension(dims), bits);
            assert!(u32::try_from(dims).unwrap() * bits <= 64);
        }
    }

    #[test]
    fn one_column_is_a_plain_sort_for_both_curves() {
        for v in [0u32, 5, 65_535] {
            assert_eq!(Curve::ZOrder.key(&[v]), u64::from(v));
            assert_eq!(Curve::Hilbert.key(&[v]), u64::from(v));
        }
    }
}
