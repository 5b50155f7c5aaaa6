//! A column's layout as numbers: every file's [min, max] on one axis, the overlap depth and
//! spans, and the distribution of the column's values that the stats imply.
//!
//! The axis is the value itself for numeric types (integers, floats, decimals, dates as days,
//! timestamps as microseconds) and the rank among all files' distinct bounds for the others
//! (strings, booleans). The distribution model spreads each file's rows (`numRecords` minus
//! deleted rows) uniformly over its [min, max] on that axis (a point mass when min = max):
//! the only picture of the data the log gives without reading a file.

use std::cmp::Ordering;

use chrono::{DateTime, NaiveDate};
use deltalake::kernel::{DataType, PrimitiveType};
use rayon::prelude::*;

use crate::predicate::Literal;
use crate::pruning::FileBounds;
use crate::value::Typed;

/// How positions on the axis map back to values.
#[derive(Debug, Clone)]
pub(crate) enum Axis {
    /// The value itself (converted to `f64`).
    Numeric,
    /// The rank among these sorted distinct bounds.
    Rank(Vec<Typed>),
}

/// One column across all files: axis positions and the value distribution.
#[derive(Debug, Clone)]
pub(crate) struct ColumnModel {
    pub data_type: DataType,
    pub axis: Axis,
    /// Per file: the [min, max] position, `None` when unknown or all null.
    pub ranges: Vec<Option<(f64, f64)>>,
    /// Per file: no usable bounds and not all null, so every query reads it.
    pub unknown: Vec<bool>,
    /// Per file: rows, the model's weights.
    pub weights: Vec<f64>,
    /// Sorted distinct breakpoints of the CDF.
    xs: Vec<f64>,
    /// CDF just below each breakpoint, normalized to [0, 1].
    below: Vec<f64>,
    /// CDF at each breakpoint (including its point mass).
    at: Vec<f64>,
}

/// Overlap figures of one column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Overlap {
    pub depth_avg: f64,
    pub depth_max: u64,
    pub span_avg: f64,
    pub min_eq_max: u64,
    pub files_with_range: u64,
}

impl ColumnModel {
    /// Builds the model from each file's bounds and rows.
    pub fn new(data_type: &DataType, bounds: &[FileBounds], rows: &[f64]) -> Self {
        let numeric = bounds
            .iter()
            .filter(|b| b.has_range())
            .all(|b| to_axis(b.min.as_ref()).is_some() && to_axis(b.max.as_ref()).is_some());
        let (axis, ranges) = if numeric && is_numeric(data_type) {
            let position = |v: &Typed| to_axis(Some(v)).unwrap_or(0.0);
            let ranges: Vec<Option<(f64, f64)>> = bounds
                .iter()
                .map(|b| match (&b.min, &b.max) {
                    (Some(min), Some(max)) => {
                        let (lo, hi) = (position(min), position(max));
                        Some((lo.min(hi), lo.max(hi)))
                    }
                    _ => None,
                })
                .collect();
            (Axis::Numeric, ranges)
        } else {
            // Ranks among the distinct bounds: one parallel sort of (value, file, is max),
            // then a scan that numbers the distinct values.
            let mut sorted: Vec<(&Typed, usize, bool)> = Vec::new();
            for (f, b) in bounds.iter().enumerate() {
                if let (true, Some(min), Some(max)) = (b.has_range(), &b.min, &b.max) {
                    sorted.push((min, f, false));
                    sorted.push((max, f, true));
                }
            }
            sorted.par_sort_unstable_by(|a, b| a.0.compare(b.0).unwrap_or(Ordering::Equal));
            let mut values: Vec<Typed> = Vec::new();
            let mut positions: Vec<(f64, f64)> = vec![(0.0, 0.0); bounds.len()];
            for &(value, f, is_max) in &sorted {
                if values
                    .last()
                    .is_none_or(|last| last.compare(value) != Some(Ordering::Equal))
                {
                    values.push(value.clone());
                }
                #[expect(clippy::cast_precision_loss, reason = "ranks of < 2^52 values")]
                let rank = (values.len() - 1) as f64;
                if is_max {
                    positions[f].1 = rank;
                } else {
                    positions[f].0 = rank;
                }
            }
            let ranges = bounds
                .iter()
                .zip(positions)
                .map(|(b, (lo, hi))| match (&b.min, &b.max) {
                    (Some(_), Some(_)) => Some((lo.min(hi), lo.max(hi))),
                    _ => None,
                })
                .collect();
            (Axis::Rank(values), ranges)
        };
        let unknown = bounds
            .iter()
            .map(|b| !b.has_range() && !b.all_null)
            .collect();
        let mut model = Self {
            data_type: data_type.clone(),
            axis,
            ranges,
            unknown,
            weights: rows.to_vec(),
            xs: Vec::new(),
            below: Vec::new(),
            at: Vec::new(),
        };
        model.build_cdf();
        model
    }

    fn build_cdf(&mut self) {
        // (position, point mass, slope change)
        let mut events: Vec<(f64, f64, f64)> = Vec::new();
        for (range, &w) in self.ranges.iter().zip(&self.weights) {
            let Some((a, b)) = *range else { continue };
            if w <= 0.0 {
                continue;
            }
            if b > a {
                let density = w / (b - a);
                events.push((a, 0.0, density));
                events.push((b, 0.0, -density));
            } else {
                events.push((a, w, 0.0));
            }
        }
        // A total order, so the sums do not depend on the order of the files.
        events.sort_unstable_by(|x, y| {
            x.0.total_cmp(&y.0)
                .then(x.1.total_cmp(&y.1))
                .then(x.2.total_cmp(&y.2))
        });
        let total: f64 = events.iter().map(|e| e.1).sum::<f64>()
            + self
                .ranges
                .iter()
                .zip(&self.weights)
                .filter(|(r, w)| matches!(r, Some((a, b)) if b > a) && **w > 0.0)
                .map(|(_, w)| *w)
                .sum::<f64>();
        let (mut cum, mut slope) = (0.0, 0.0);
        for (x, mass, change) in events {
            if let Some(&last) = self.xs.last()
                && last == x
            {
                let i = self.xs.len() - 1;
                self.at[i] += mass;
                cum += mass;
                slope += change;
                continue;
            }
            if let Some(&last) = self.xs.last() {
                cum += slope * (x - last);
            }
            self.xs.push(x);
            self.below.push(cum);
            cum += mass;
            self.at.push(cum);
            slope += change;
        }
        if total > 0.0 {
            for v in self.below.iter_mut().chain(self.at.iter_mut()) {
                *v = (*v / total).clamp(0.0, 1.0);
            }
        }
    }

    /// Whether any file has usable bounds.
    pub fn has_data(&self) -> bool {
        !self.xs.is_empty()
    }

    /// The smallest position `x` with CDF(x) >= q.
    pub fn quantile(&self, q: f64) -> f64 {
        let i = self.at.partition_point(|&a| a < q);
        if i >= self.xs.len() {
            return *self.xs.last().unwrap_or(&0.0);
        }
        if i == 0 || self.below[i] <= q {
            return self.xs[i];
        }
        let (x0, c0, x1, c1) = (self.xs[i - 1], self.at[i - 1], self.xs[i], self.below[i]);
        if c1 <= c0 {
            return x1;
        }
        x0 + (x1 - x0) * ((q - c0) / (c1 - c0))
    }

    /// (CDF strictly below `x`, CDF at `x`).
    pub fn cdf(&self, x: f64) -> (f64, f64) {
        let j = self.xs.partition_point(|&p| p <= x);
        if j == 0 {
            return (0.0, 0.0);
        }
        let j = j - 1;
        if self.xs[j] == x {
            return (self.below[j], self.at[j]);
        }
        if j + 1 >= self.xs.len() {
            return (1.0, 1.0);
        }
        let (x0, c0, x1, c1) = (self.xs[j], self.at[j], self.xs[j + 1], self.below[j + 1]);
        let c = c0 + (c1 - c0) * ((x - x0) / (x1 - x0));
        (c, c)
    }

    /// Overlap depth (average over the value distribution, and maximum), average normalized
    /// span, and files whose min equals their max. Files without bounds count in the depth
    /// (every query reads them) but not in spans.
    pub fn overlap(&self) -> Overlap {
        let known: Vec<(f64, f64, f64)> = self
            .ranges
            .iter()
            .zip(&self.weights)
            .filter_map(|(r, w)| r.map(|(a, b)| (a, b, *w)))
            .collect();
        #[expect(clippy::cast_precision_loss, reason = "file counts")]
        let unknown = self.unknown.iter().filter(|u| **u).count() as f64;
        let mut starts: Vec<f64> = known.iter().map(|k| k.0).collect();
        let mut ends: Vec<f64> = known.iter().map(|k| k.1).collect();
        starts.sort_unstable_by(f64::total_cmp);
        ends.sort_unstable_by(f64::total_cmp);
        let prefix = |v: &[f64]| -> Vec<f64> {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(0.0);
            for x in v {
                out.push(out.last().unwrap_or(&0.0) + x);
            }
            out
        };
        let (start_sums, end_sums) = (prefix(&starts), prefix(&ends));
        // ∫_{-inf}^{x} depth(t) dt, from the starts and ends below x (i and j of them).
        #[expect(clippy::cast_precision_loss, reason = "file counts")]
        let integral = |x: f64, i: usize, j: usize| {
            (x * i as f64 - start_sums[i]) - (x * j as f64 - end_sums[j])
        };
        // The counts at every file's a and b in one sweep over the points in order (not a
        // binary search per point: over a million files those are cache misses).
        let counts = |points: &[f64]| -> Vec<(usize, usize, usize)> {
            let mut order: Vec<usize> = (0..points.len()).collect();
            order.par_sort_unstable_by(|&x, &y| points[x].total_cmp(&points[y]));
            let mut out = vec![(0, 0, 0); points.len()];
            let (mut below, mut at_or_below, mut ended) = (0, 0, 0);
            for k in order {
                let x = points[k];
                while below < starts.len() && starts[below] < x {
                    below += 1;
                }
                at_or_below = at_or_below.max(below);
                while at_or_below < starts.len() && starts[at_or_below] <= x {
                    at_or_below += 1;
                }
                while ended < ends.len() && ends[ended] < x {
                    ended += 1;
                }
                // (starts < x, starts <= x, ends < x)
                out[k] = (below, at_or_below, ended);
            }
            out
        };
        let lows: Vec<f64> = known.iter().map(|k| k.0).collect();
        let highs: Vec<f64> = known.iter().map(|k| k.1).collect();
        let (at_low, at_high) = rayon::join(|| counts(&lows), || counts(&highs));
        let (mut weighted, mut weight) = (0.0, 0.0);
        for (k, &(a, b, w)) in known.iter().enumerate() {
            let depth = if b > a {
                let (i_a, _, j_a) = at_low[k];
                let (i_b, _, j_b) = at_high[k];
                (integral(b, i_b, j_b) - integral(a, i_a, j_a)) / (b - a)
            } else {
                let (_, le, j) = at_low[k];
                #[expect(clippy::cast_precision_loss, reason = "file counts")]
                let depth = (le - j) as f64;
                depth
            };
            weighted += w * depth;
            weight += w;
        }
        let depth_avg = if weight > 0.0 {
            weighted / weight + unknown
        } else {
            unknown
        };
        // Maximum: sweep, starts before ends at one position (closed intervals).
        let mut events: Vec<(f64, i64)> = known
            .iter()
            .flat_map(|&(a, b, _)| [(a, 1), (b, -1)])
            .collect();
        events.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(y.1.cmp(&x.1)));
        let (mut running, mut max) = (0i64, 0i64);
        for (_, change) in events {
            running += change;
            max = max.max(running);
        }
        let (lo, hi) = (
            starts.first().copied().unwrap_or(0.0),
            ends.last().copied().unwrap_or(0.0),
        );
        let width = hi - lo;
        #[expect(clippy::cast_precision_loss, reason = "file counts")]
        let span_avg = if known.is_empty() {
            0.0
        } else if width > 0.0 {
            known.iter().map(|k| (k.1 - k.0) / width).sum::<f64>() / known.len() as f64
        } else {
            0.0
        };
        #[expect(
            clippy::cast_sign_loss,
            clippy::cast_possible_truncation,
            reason = "counts"
        )]
        Overlap {
            depth_avg,
            depth_max: max.max(0) as u64 + unknown as u64,
            span_avg,
            min_eq_max: known.iter().filter(|k| k.0 == k.1).count() as u64,
            files_with_range: known.len() as u64,
        }
    }

    /// The literal for position `x`, rounded `down` or up to a value of the column's type.
    pub fn literal(&self, x: f64, down: bool) -> Literal {
        let round = |x: f64| if down { x.floor() } else { x.ceil() };
        match &self.axis {
            Axis::Rank(values) => {
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a rank in range"
                )]
                let i = (round(x).max(0.0) as usize).min(values.len().saturating_sub(1));
                values.get(i).map_or(Literal::Null, typed_literal)
            }
            Axis::Numeric => match &self.data_type {
                DataType::Primitive(PrimitiveType::Float | PrimitiveType::Double) => {
                    Literal::Number(format!("{x}"))
                }
                DataType::Primitive(PrimitiveType::Decimal(d)) => {
                    let scale = i32::from(d.scale());
                    let factor = 10f64.powi(scale);
                    let v = round(x * factor) / factor;
                    Literal::Number(format!("{v:.prec$}", prec = usize::from(d.scale())))
                }
                DataType::Primitive(PrimitiveType::Date) => {
                    #[expect(clippy::cast_possible_truncation, reason = "days in range")]
                    let days = round(x) as i64;
                    let date = NaiveDate::from_ymd_opt(1970, 1, 1)
                        .and_then(|e| e.checked_add_signed(chrono::Duration::days(days)));
                    date.map_or(Literal::Null, |d| {
                        Literal::String(d.format("%Y-%m-%d").to_string())
                    })
                }
                DataType::Primitive(PrimitiveType::Timestamp | PrimitiveType::TimestampNtz) => {
                    #[expect(clippy::cast_possible_truncation, reason = "micros in range")]
                    let micros = round(x) as i64;
                    DateTime::from_timestamp_micros(micros).map_or(Literal::Null, |t| {
                        Literal::String(t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string())
                    })
                }
                _ => {
                    #[expect(clippy::cast_possible_truncation, reason = "integers in range")]
                    let v = round(x) as i128;
                    Literal::Number(v.to_string())
                }
            },
        }
    }

    /// A tick of an axis `width` wide near position `x`: the nearest value the column's
    /// type can hold (an integer, date, timestamp or rank; a decimal at its scale; a float
    /// at three significant digits of the width), as (that value's position, its literal).
    /// The label is then the value drawn where the tick stands: a quarter of `0.00` to
    /// `0.10` on a `decimal(4,2)` axis is `0.03` at 0.03, not `0.02` at 0.025.
    pub fn tick(&self, x: f64, width: f64) -> (f64, Literal) {
        match (&self.axis, &self.data_type) {
            (Axis::Numeric, DataType::Primitive(PrimitiveType::Float | PrimitiveType::Double)) => {
                let magnitude = width.abs().max(f64::MIN_POSITIVE).log10().floor();
                #[expect(clippy::cast_possible_truncation, reason = "clamped to 0..=15")]
                let decimals = (2.0 - magnitude).clamp(0.0, 15.0) as i32;
                let factor = 10f64.powi(decimals);
                let v = (x * factor).round() / factor;
                (v, Literal::Number(format!("{v}")))
            }
            (Axis::Numeric, DataType::Primitive(PrimitiveType::Decimal(d))) => {
                let factor = 10f64.powi(i32::from(d.scale()));
                let v = (x * factor).round() / factor;
                let text = format!("{v:.prec$}", prec = usize::from(d.scale()));
                (v, Literal::Number(text))
            }
            // Whole values: the rounded position is exact, so rounding it down keeps it.
            _ => {
                let v = x.round();
                (v, self.literal(v, true))
            }
        }
    }

    /// Whether positions stand for whole values (integers, dates, timestamps, ranks), so a
    /// drawn position is rounded to one.
    pub fn discrete(&self) -> bool {
        !matches!(
            (&self.axis, &self.data_type),
            (
                Axis::Numeric,
                DataType::Primitive(
                    PrimitiveType::Float | PrimitiveType::Double | PrimitiveType::Decimal(_)
                )
            )
        )
    }
}

pub(crate) fn typed_literal(value: &Typed) -> Literal {
    match value {
        Typed::Int(i) => Literal::Number(i.to_string()),
        Typed::Float(f) => Literal::Number(format!("{f}")),
        Typed::Text(s) => Literal::String(s.clone()),
        Typed::Bool(b) => Literal::Bool(*b),
        Typed::Date(d) => Literal::String(d.format("%Y-%m-%d").to_string()),
        Typed::Timestamp(t) => Literal::String(t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()),
    }
}

fn is_numeric(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Primitive(
            PrimitiveType::Byte
                | PrimitiveType::Short
                | PrimitiveType::Integer
                | PrimitiveType::Long
                | PrimitiveType::Float
                | PrimitiveType::Double
                | PrimitiveType::Decimal(_)
                | PrimitiveType::Date
                | PrimitiveType::Timestamp
                | PrimitiveType::TimestampNtz
        )
    )
}

/// A numeric value's axis position; `None` for non-numeric or non-finite values.
#[expect(clippy::cast_precision_loss, reason = "an axis position")]
fn to_axis(value: Option<&Typed>) -> Option<f64> {
    let x = match value? {
        Typed::Int(i) => *i as f64,
        Typed::Float(f) => *f,
        Typed::Date(d) => (*d - NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as f64,
        Typed::Timestamp(t) => t.and_utc().timestamp_micros() as f64,
        Typed::Text(_) | Typed::Bool(_) => return None,
    };
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(ranges: &[(i128, i128)]) -> ColumnModel {
        let bounds: Vec<FileBounds> = ranges
            .iter()
            .map(|&(a, b)| FileBounds {
                min: Some(Typed::Int(a)),
                max: Some(Typed::Int(b)),
                upper: Some(Typed::Int(b)),
                ..FileBounds::default()
            })
            .collect();
        let rows = vec![1.0; bounds.len()];
        ColumnModel::new(&DataType::LONG, &bounds, &rows)
    }

    #[test]
    fn disjoint_files_have_depth_one_and_known_spans() {
        // Four files tiling [0, 40] exactly: every point is in one file (the shared
        // endpoints have measure zero), each spans a quarter.
        let m = model(&[(0, 10), (10, 20), (20, 30), (30, 40)]);
        let o = m.overlap();
        assert!((o.depth_avg - 1.0).abs() < 1e-9, "{o:?}");
        assert_eq!(o.depth_max, 2, "closed ranges meet at 10, 20, 30");
        assert!((o.span_avg - 0.25).abs() < 1e-9);
        assert_eq!(o.min_eq_max, 0);
    }

    #[test]
    fn identical_files_have_depth_equal_to_the_file_count() {
        let m = model(&[(0, 100); 5]);
        let o = m.overlap();
        assert!((o.depth_avg - 5.0).abs() < 1e-9);
        assert_eq!(o.depth_max, 5);
        assert!((o.span_avg - 1.0).abs() < 1e-9);
    }

    #[test]
    fn nested_files_match_a_direct_integral() {
        // [0, 100] and [40, 60]: points in the big file see depth 2 on 20% of it, so its
        // average is 1.2; points of the small file all see depth 2. Equal weights: 1.6.
        let m = model(&[(0, 100), (40, 60)]);
        let o = m.overlap();
        assert!((o.depth_avg - 1.6).abs() < 1e-9, "{o:?}");
        assert_eq!(o.depth_max, 2);
        assert!((o.span_avg - 0.6).abs() < 1e-9);
        // Point files count at their point.
        let p = model(&[(5, 5), (0, 10)]);
        let o = p.overlap();
        // Point file: depth 2. Range file: depth 1 almost everywhere. Average 1.5.
        assert!((o.depth_avg - 1.5).abs() < 1e-9, "{o:?}");
        assert_eq!(o.min_eq_max, 1);
    }

    #[test]
    fn quantiles_invert_the_cdf() {
        let m = model(&[(0, 10), (10, 20)]);
        assert!((m.quantile(0.25) - 5.0).abs() < 1e-9);
        assert!((m.quantile(0.75) - 15.0).abs() < 1e-9);
        assert_eq!(m.cdf(5.0), (0.25, 0.25));
        assert_eq!(m.cdf(-1.0), (0.0, 0.0));
        assert_eq!(m.cdf(25.0), (1.0, 1.0));
        let points = model(&[(3, 3), (7, 7)]);
        assert_eq!(points.cdf(3.0), (0.0, 0.5));
        assert_eq!(points.quantile(0.6), 7.0);
        assert_eq!(points.quantile(0.5), 3.0);
    }
}
