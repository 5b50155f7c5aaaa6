//! Column values to bucket numbers: the coordinates of the curves.
//!
//! Interleaving raw value bytes clusters badly (strings with a long shared prefix do not
//! sort, a wide column drowns a narrow one, skew wastes most of the key), so each column is
//! first mapped to a *rank bucket* from quantiles of a sample, as Delta Spark's OPTIMIZE
//! ZORDER does with its range ids.
//!
//! # Value order
//! Values are compared through Arrow's row format (`arrow::row`, byte-comparable, the order
//! of `ORDER BY ... NULLS FIRST`), after two normalizations:
//!
//! | type | order |
//! |---|---|
//! | integers of every width, decimals (any precision), dates, timestamps (with or without zone) | numeric |
//! | float, double | numeric; `-0.0` equals `0.0`; every NaN is one value above `+inf` |
//! | string, binary | byte-wise over the whole value (never a prefix), so UTF-8 code-point order |
//! | boolean | `false < true` |
//! | null | below every value: always bucket 0 |
//!
//! # Buckets
//! A column gets at most `2^bits` buckets: bucket 0 for nulls and `2^bits - 1` for values.
//! When the sample has at most that many distinct values, each distinct value gets its own
//! bucket, numbered at the value's middle rank (so the bucket space is spread by rows).
//! Otherwise the cut points are the sample's quantiles *by row* (so skewed columns split
//! evenly by rows), and cut `i` opens bucket `i + 1`. Either way a value's bucket is found by
//! binary search over the cuts and the numbers grow with the cuts, hence `a < b` implies
//! `bucket(a) <= bucket(b)`, and each top bit of a bucket number splits the rows about in
//! half, which is what lets the curve's cells hold equal shares of rows.
//!
//! # Lookup
//! The cuts are kept in the row format (they travel in work orders that way), and are also
//! decoded once into native values: integers, decimals up to 128 bits, dates, times,
//! timestamps, durations and booleans as `i128`; floats as the `i64` of IEEE 754's total order
//! (after the normalization above, so it is the row format's order); strings and binary as
//! bytes. Values of those types are looked up by binary search over the native cuts, with no
//! row-format conversion; other types (`Decimal256`, `Float16`, fixed-size binary, ...) go
//! through the row format. Both paths give the same bucket for every value (tested).

use deltalake::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray, UInt32Array,
};
use deltalake::arrow::compute::SortOptions;
use deltalake::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal32Type, Decimal64Type, Decimal128Type,
    DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType,
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use deltalake::arrow::row::{OwnedRow, RowConverter, SortField};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::column::normalize;
use crate::error::{Error, Result};

/// Default reservoir size per column, rows: 100,000 values give quantiles within about 0.3%
/// of the true ones, in a few megabytes.
pub const DEFAULT_SAMPLE_ROWS: usize = 100_000;

fn converter(data_type: &DataType) -> Result<RowConverter> {
    if matches!(
        data_type,
        DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _)
    ) {
        return Err(Error::Internal(format!(
            "{data_type} is not an orderable clustering type"
        )));
    }
    RowConverter::new(vec![SortField::new_with_options(
        data_type.clone(),
        SortOptions {
            descending: false,
            nulls_first: true,
        },
    )])
    .map_err(|e| Error::arrow("preparing clustering keys", e))
}

/// A uniform, seeded sample of one column's values (Vitter's Algorithm R), kept in Arrow's
/// row format so it holds no reference to the batches it saw.
pub struct Reservoir {
    converter: RowConverter,
    data_type: DataType,
    capacity: usize,
    seen: u64,
    rng: StdRng,
    values: Vec<Option<OwnedRow>>,
}

impl Reservoir {
    /// A reservoir of `capacity` rows for a column of `data_type`, seeded with `seed`.
    ///
    /// # Errors
    /// [`Error::Internal`] for a type that has no order (struct, list, map): callers reject
    /// such columns by name before sampling.
    pub fn new(data_type: &DataType, capacity: usize, seed: u64) -> Result<Self> {
        Ok(Self {
            converter: converter(data_type)?,
            data_type: data_type.clone(),
            capacity: capacity.max(1),
            seen: 0,
            rng: StdRng::seed_from_u64(seed),
            values: Vec::new(),
        })
    }

    /// Offers every value of `array` to the sample.
    ///
    /// # Errors
    /// [`Error::Arrow`] if the array is not of the reservoir's type.
    pub fn add(&mut self, array: &ArrayRef) -> Result<()> {
        // Decide first which rows enter the sample (the decisions depend only on the row
        // count), then convert just those rows.
        let mut picks: Vec<(u32, usize)> = Vec::new(); // (row in array, slot)
        let mut filled = self.values.len();
        for i in 0..array.len() {
            self.seen += 1;
            let slot = if filled < self.capacity {
                filled += 1;
                Some(filled - 1)
            } else {
                usize::try_from(self.rng.random_range(0..self.seen))
                    .ok()
                    .filter(|&j| j < self.capacity)
            };
            if let Some(slot) = slot {
                picks.push((u32::try_from(i).unwrap_or(u32::MAX), slot));
            }
        }
        if picks.is_empty() {
            return Ok(());
        }
        let indices = UInt32Array::from(picks.iter().map(|p| p.0).collect::<Vec<_>>());
        let chosen = deltalake::arrow::compute::take(array.as_ref(), &indices, None)
            .map_err(|e| Error::arrow("sampling clustering values", e))?;
        let normalized = normalize(&chosen);
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(&normalized))
            .map_err(|e| Error::arrow("sampling clustering values", e))?;
        for (k, &(_, slot)) in picks.iter().enumerate() {
            let value = normalized.is_valid(k).then(|| rows.row(k).owned());
            if slot == self.values.len() {
                self.values.push(value);
            } else {
                self.values[slot] = value;
            }
        }
        Ok(())
    }

    /// Values offered so far.
    #[must_use]
    pub fn num_seen(&self) -> u64 {
        self.seen
    }

    /// The sampled values of a `UInt32` column, in sample order (the leaves a cut tree
    /// routed the sampled rows to, drawn beside the clustering columns' reservoirs).
    ///
    /// # Errors
    /// [`Error::Internal`] for a reservoir of another type or holding a null.
    pub fn into_u32(self) -> Result<Vec<u32>> {
        if self.data_type != DataType::UInt32 {
            return Err(Error::Internal(format!(
                "a reservoir of {} read as UInt32",
                self.data_type
            )));
        }
        let rows = self
            .values
            .iter()
            .map(|v| {
                v.as_ref()
                    .map(OwnedRow::row)
                    .ok_or_else(|| Error::Internal("a null in a reservoir of leaves".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let arrays = self
            .converter
            .convert_rows(rows)
            .map_err(|e| Error::arrow("reading sampled leaves", e))?;
        let array = arrays
            .first()
            .ok_or_else(|| Error::Internal("no column decoded".into()))?;
        Ok(array.as_primitive::<UInt32Type>().values().to_vec())
    }

    /// Turns the sample into bucket boundaries with at most `2^bits` buckets.
    #[must_use]
    pub fn into_buckets(self, bits: u32) -> ColumnBuckets {
        self.finish(bits).0
    }

    /// Like [`Reservoir::into_buckets`], and also returns the sampled values in sample order
    /// (`None` for null). Reservoirs with the same seed fed the same number of rows pick the
    /// same row positions, so the samples of several columns line up row by row.
    #[must_use]
    pub fn finish(self, bits: u32) -> (ColumnBuckets, Vec<Option<OwnedRow>>) {
        let bits = bits.clamp(1, super::MAX_BITS_PER_DIMENSION);
        let value_buckets = (1usize << bits) - 1;
        // The values are sorted and counted by reference; only the cuts are copied.
        let mut sorted: Vec<&OwnedRow> = self.values.iter().flatten().collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let mut distinct: Vec<(&OwnedRow, usize, usize)> = Vec::new(); // value, first rank, rows
        for (rank, &value) in sorted.iter().enumerate() {
            match distinct.last_mut() {
                Some((last, _, rows)) if **last == *value => *rows += 1,
                _ => distinct.push((value, rank, 1)),
            }
        }
        let vb = u32::try_from(value_buckets).unwrap_or(u32::MAX);
        let (below, cuts, numbers) = if distinct.len() <= value_buckets {
            // One bucket per value, placed at the value's middle rank so the bucket space is
            // spread by rows (and the curve's top bits split rows evenly), kept strictly
            // increasing with room for every later value.
            let d = distinct.len();
            let mut numbers: Vec<u32> = Vec::with_capacity(d);
            for (j, (_, first, rows)) in distinct.iter().enumerate() {
                let middle =
                    (*first as u128 * 2 + *rows as u128) * u128::from(vb) / (2 * n.max(1) as u128);
                let target = u32::try_from(middle).unwrap_or(vb).clamp(1, vb);
                let floor = numbers.last().map_or(1, |&p| p + 1);
                let ceiling = vb - u32::try_from(d - 1 - j).unwrap_or(0);
                numbers.push(target.max(floor).min(ceiling));
            }
            let below = numbers.first().copied().unwrap_or(1);
            let cuts = distinct
                .iter()
                .skip(1)
                .map(|(v, _, _)| (*v).clone())
                .collect();
            (below, cuts, numbers.into_iter().skip(1).collect())
        } else {
            // Quantiles by row: cut i starts bucket i + 1; among equal cuts the last one wins
            // (a value equal to a cut belongs to the highest bucket whose cut it reaches).
            let mut cuts: Vec<OwnedRow> = Vec::new();
            let mut numbers: Vec<u32> = Vec::new();
            for i in 1..value_buckets {
                let cut = sorted[i * n / value_buckets];
                let number = u32::try_from(i + 1).unwrap_or(vb);
                if cuts.last() == Some(cut) {
                    *numbers.last_mut().expect("parallel to cuts") = number;
                } else {
                    cuts.push(cut.clone());
                    numbers.push(number);
                }
            }
            (1, cuts, numbers)
        };
        (
            ColumnBuckets::new(self.converter, self.data_type, below, cuts, numbers),
            self.values,
        )
    }
}

/// [`ColumnBuckets`] as plain data, to ship in a work order so that every worker keys rows
/// the same way: cut points in Arrow's row format, as lowercase hex. Row-format bytes are only
/// compared, byte-wise; they are meaningful to the same Arrow version, so work orders are read
/// by the release that wrote them only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BucketCuts {
    /// Bucket of values below the first cut.
    pub below: u32,
    /// Cut points, ascending and distinct, row format as hex.
    pub cuts: Vec<String>,
    /// Bucket of values at or above each cut, parallel to `cuts`.
    pub numbers: Vec<u32>,
}

/// The bucket boundaries of one column; maps values to buckets.
pub struct ColumnBuckets {
    converter: RowConverter,
    /// The column's Arrow type (as read), of the cuts and of the values looked up.
    data_type: DataType,
    /// Bucket of values below the first cut.
    below: u32,
    /// Cut points, ascending and distinct.
    cuts: Vec<OwnedRow>,
    /// Bucket of values at or above each cut (and below the next), parallel to `cuts`.
    numbers: Vec<u32>,
    /// The cuts as native values, where the type has a native lookup.
    native: NativeCuts,
}

/// Cut points decoded to native values that compare as their row-format bytes do.
enum NativeCuts {
    /// Integers, decimals, dates, times, timestamps, durations, booleans.
    Integer(Vec<i128>),
    /// [`NativeCuts::Integer`] whose cuts all lie in `(i64::MIN, i64::MAX]`: values are
    /// saturated to `i64`, which keeps every comparison with such a cut, and the search
    /// touches half the memory.
    Integer64(Vec<i64>),
    /// Floats, as [`float_key`] of the value widened to `f64`.
    Float(Vec<i64>),
    /// Strings and binary, compared byte-wise (shorter prefix first).
    Bytes(Vec<Box<[u8]>>),
    /// No native lookup: compare in the row format.
    Rows,
}

/// The order key of a float: IEEE 754's total order as a signed integer, after the
/// normalization of [`normalize`] (`-0.0` to `0.0`, every NaN to one positive NaN, above
/// `+inf`). `f32` values are widened to `f64` first, exactly and in order.
fn float_key(v: f64) -> i64 {
    let v = if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let bits = i64::from_ne_bytes(v.to_bits().to_ne_bytes());
    // Negative floats order backwards by their bits: flip all but the sign bit.
    bits ^ ((bits >> 63).cast_unsigned() >> 1).cast_signed()
}

/// Calls `$body!(array type, native to key)` for the array's type when it has an integer
/// lookup; evaluates to `None` for other types.
macro_rules! integer_types {
    ($data_type:expr, $apply:ident) => {
        match $data_type {
            DataType::Int8 => Some($apply!(Int8Type, i128::from)),
            DataType::Int16 => Some($apply!(Int16Type, i128::from)),
            DataType::Int32 => Some($apply!(Int32Type, i128::from)),
            DataType::Int64 => Some($apply!(Int64Type, i128::from)),
            DataType::UInt8 => Some($apply!(UInt8Type, i128::from)),
            DataType::UInt16 => Some($apply!(UInt16Type, i128::from)),
            DataType::UInt32 => Some($apply!(UInt32Type, i128::from)),
            DataType::UInt64 => Some($apply!(UInt64Type, i128::from)),
            DataType::Date32 => Some($apply!(Date32Type, i128::from)),
            DataType::Date64 => Some($apply!(Date64Type, i128::from)),
            DataType::Decimal32(_, _) => Some($apply!(Decimal32Type, i128::from)),
            DataType::Decimal64(_, _) => Some($apply!(Decimal64Type, i128::from)),
            DataType::Decimal128(_, _) => Some($apply!(Decimal128Type, i128::from)),
            DataType::Time32(TimeUnit::Second) => Some($apply!(Time32SecondType, i128::from)),
            DataType::Time32(TimeUnit::Millisecond) => {
                Some($apply!(Time32MillisecondType, i128::from))
            }
            DataType::Time64(TimeUnit::Microsecond) => {
                Some($apply!(Time64MicrosecondType, i128::from))
            }
            DataType::Time64(TimeUnit::Nanosecond) => {
                Some($apply!(Time64NanosecondType, i128::from))
            }
            DataType::Timestamp(TimeUnit::Second, _) => {
                Some($apply!(TimestampSecondType, i128::from))
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                Some($apply!(TimestampMillisecondType, i128::from))
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                Some($apply!(TimestampMicrosecondType, i128::from))
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                Some($apply!(TimestampNanosecondType, i128::from))
            }
            DataType::Duration(TimeUnit::Second) => Some($apply!(DurationSecondType, i128::from)),
            DataType::Duration(TimeUnit::Millisecond) => {
                Some($apply!(DurationMillisecondType, i128::from))
            }
            DataType::Duration(TimeUnit::Microsecond) => {
                Some($apply!(DurationMicrosecondType, i128::from))
            }
            DataType::Duration(TimeUnit::Nanosecond) => {
                Some($apply!(DurationNanosecondType, i128::from))
            }
            _ => None,
        }
    };
}

/// Each value of a primitive array through `key`, `None` for null.
fn primitive_keys<T: ArrowPrimitiveType, K>(
    array: &dyn Array,
    key: impl Fn(T::Native) -> K,
) -> Vec<Option<K>> {
    let array: &PrimitiveArray<T> = array.as_primitive::<T>();
    (0..array.len())
        .map(|i| array.is_valid(i).then(|| key(array.value(i))))
        .collect()
}

/// Each value of a string or binary array as bytes, `None` for null; `None` for other types.
fn byte_values(array: &dyn Array) -> Option<Vec<Option<&[u8]>>> {
    fn collect<'a>(
        len: usize,
        valid: impl Fn(usize) -> bool,
        value: impl Fn(usize) -> &'a [u8],
    ) -> Vec<Option<&'a [u8]>> {
        (0..len).map(|i| valid(i).then(|| value(i))).collect()
    }
    let len = array.len();
    let valid = |i| array.is_valid(i);
    Some(match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            collect(len, valid, |i| a.value(i).as_bytes())
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            collect(len, valid, |i| a.value(i).as_bytes())
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            collect(len, valid, |i| a.value(i).as_bytes())
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            collect(len, valid, |i| a.value(i))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            collect(len, valid, |i| a.value(i))
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            collect(len, valid, |i| a.value(i))
        }
        _ => return None,
    })
}

impl NativeCuts {
    /// The native form of `cuts` (row format of `data_type`), or [`NativeCuts::Rows`].
    fn decode(converter: &RowConverter, data_type: &DataType, cuts: &[OwnedRow]) -> Self {
        let Ok(arrays) = converter.convert_rows(cuts.iter().map(OwnedRow::row)) else {
            return Self::Rows;
        };
        let Some(array) = arrays.first() else {
            return Self::Rows;
        };
        if array.null_count() > 0 || array.data_type() != data_type {
            return Self::Rows;
        }
        let array = array.as_ref();
        macro_rules! integers {
            ($t:ty, $key:expr) => {
                primitive_keys::<$t, i128>(array, $key)
            };
        }
        let flat = |keys: Vec<Option<i128>>| keys.into_iter().flatten().collect::<Vec<_>>();
        if let Some(keys) = integer_types!(data_type, integers) {
            let cuts = flat(keys);
            let narrow = cuts
                .iter()
                .map(|&c| i64::try_from(c).ok().filter(|&c| c > i64::MIN))
                .collect::<Option<Vec<i64>>>();
            return narrow.map_or(Self::Integer(cuts), Self::Integer64);
        }
        match data_type {
            DataType::Boolean => Self::Integer(
                array
                    .as_boolean()
                    .iter()
                    .flatten()
                    .map(i128::from)
                    .collect(),
            ),
            DataType::Float32 => Self::Float(
                primitive_keys::<Float32Type, i64>(array, |v| float_key(f64::from(v)))
                    .into_iter()
                    .flatten()
                    .collect(),
            ),
            DataType::Float64 => Self::Float(
                primitive_keys::<Float64Type, i64>(array, float_key)
                    .into_iter()
                    .flatten()
                    .collect(),
            ),
            _ => match byte_values(array) {
                Some(values) => Self::Bytes(values.into_iter().flatten().map(Box::from).collect()),
                None => Self::Rows,
            },
        }
    }
}

impl ColumnBuckets {
    fn new(
        converter: RowConverter,
        data_type: DataType,
        below: u32,
        cuts: Vec<OwnedRow>,
        numbers: Vec<u32>,
    ) -> Self {
        let native = NativeCuts::decode(&converter, &data_type, &cuts);
        Self {
            converter,
            data_type,
            below,
            cuts,
            numbers,
            native,
        }
    }

    /// Number of buckets in use, the null bucket included.
    #[must_use]
    pub fn num_buckets(&self) -> usize {
        self.cuts.len() + 2
    }

    fn number_at(&self, position: usize) -> u32 {
        if position == 0 {
            self.below
        } else {
            self.numbers[position - 1]
        }
    }

    /// The boundaries as plain data ([`BucketCuts`]).
    #[must_use]
    pub fn to_cuts(&self) -> BucketCuts {
        BucketCuts {
            below: self.below,
            cuts: self
                .cuts
                .iter()
                .map(|cut| {
                    cut.row()
                        .as_ref()
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect()
                })
                .collect(),
            numbers: self.numbers.clone(),
        }
    }

    /// The boundaries of [`ColumnBuckets::to_cuts`], for values of `data_type` (the Arrow type
    /// of the column as read).
    ///
    /// # Errors
    /// [`Error::Internal`] for a type without order, cuts that are not hex, not ascending, or
    /// not parallel to their bucket numbers.
    pub fn from_cuts(data_type: &DataType, cuts: &BucketCuts) -> Result<Self> {
        let converter = converter(data_type)?;
        let bad = |what: &str| Error::Internal(format!("clustering bucket cuts {what}"));
        if cuts.cuts.len() != cuts.numbers.len() {
            return Err(bad("are not parallel to their bucket numbers"));
        }
        let parser = converter.parser();
        let mut rows: Vec<OwnedRow> = Vec::with_capacity(cuts.cuts.len());
        for text in &cuts.cuts {
            if text.len() % 2 != 0 {
                return Err(bad("are not hex"));
            }
            let bytes = (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16))
                .collect::<std::result::Result<Vec<u8>, _>>()
                .map_err(|_| bad("are not hex"))?;
            let row = parser.parse(&bytes).owned();
            if rows.last().is_some_and(|last| *last >= row) {
                return Err(bad("are not ascending"));
            }
            rows.push(row);
        }
        Ok(Self::new(
            converter,
            data_type.clone(),
            cuts.below,
            rows,
            cuts.numbers.clone(),
        ))
    }

    /// The bucket of one value in row format (`None` for null).
    #[must_use]
    pub fn bucket_of(&self, value: Option<&OwnedRow>) -> u32 {
        value.map_or(0, |v| {
            let position = self.cuts.partition_point(|cut| cut.row() <= v.row());
            self.number_at(position)
        })
    }

    /// The bucket of every value of `array`: 0 for null, else 1 + the cut points at or below
    /// the value.
    ///
    /// # Errors
    /// [`Error::Arrow`] if the array is not of the column's type.
    pub fn buckets(&self, array: &ArrayRef) -> Result<Vec<u32>> {
        if array.data_type() == &self.data_type
            && let Some(buckets) = self.native_buckets(array.as_ref())
        {
            return Ok(buckets);
        }
        self.row_buckets(array)
    }

    /// [`ColumnBuckets::buckets`] by binary search over the native cuts; `None` where the
    /// column has none.
    fn native_buckets(&self, array: &dyn Array) -> Option<Vec<u32>> {
        fn search<K: Ord>(
            buckets: &ColumnBuckets,
            cuts: &[K],
            values: impl Iterator<Item = Option<K>>,
        ) -> Vec<u32> {
            values
                .map(|value| {
                    value.map_or(0, |v| {
                        buckets.number_at(cuts.partition_point(|cut| *cut <= v))
                    })
                })
                .collect()
        }
        macro_rules! integers {
            ($t:ty, $key:expr) => {{
                let a = array.as_primitive::<$t>();
                (0..a.len()).map(move |i| a.is_valid(i).then(|| ($key)(a.value(i))))
            }};
        }
        match &self.native {
            NativeCuts::Integer(cuts) => {
                macro_rules! lookup {
                    ($t:ty, $key:expr) => {
                        search(self, cuts, integers!($t, $key))
                    };
                }
                integer_types!(&self.data_type, lookup).or_else(|| {
                    matches!(self.data_type, DataType::Boolean).then(|| {
                        search(
                            self,
                            cuts,
                            array.as_boolean().iter().map(|v| v.map(i128::from)),
                        )
                    })
                })
            }
            NativeCuts::Integer64(cuts) => {
                let saturate =
                    |v: i128| i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX });
                macro_rules! lookup {
                    ($t:ty, $key:expr) => {
                        search(self, cuts, integers!($t, |v| saturate(($key)(v))))
                    };
                }
                integer_types!(&self.data_type, lookup).or_else(|| {
                    matches!(self.data_type, DataType::Boolean).then(|| {
                        search(
                            self,
                            cuts,
                            array.as_boolean().iter().map(|v| v.map(i64::from)),
                        )
                    })
                })
            }
            NativeCuts::Float(cuts) => match self.data_type {
                DataType::Float32 => Some(search(
                    self,
                    cuts,
                    integers!(Float32Type, |v: f32| float_key(f64::from(v))),
                )),
                DataType::Float64 => Some(search(self, cuts, integers!(Float64Type, float_key))),
                _ => None,
            },
            NativeCuts::Bytes(cuts) => byte_values(array).map(|values| {
                values
                    .into_iter()
                    .map(|value| {
                        value.map_or(0, |v| {
                            self.number_at(cuts.partition_point(|cut| cut.as_ref() <= v))
                        })
                    })
                    .collect()
            }),
            NativeCuts::Rows => None,
        }
    }

    /// [`ColumnBuckets::buckets`] through the row format.
    fn row_buckets(&self, array: &ArrayRef) -> Result<Vec<u32>> {
        let normalized = normalize(array);
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(&normalized))
            .map_err(|e| Error::arrow("computing clustering keys", e))?;
        Ok((0..rows.num_rows())
            .map(|i| {
                if normalized.is_null(i) {
                    return 0;
                }
                let row = rows.row(i);
                let position = self.cuts.partition_point(|cut| cut.row() <= row);
                self.number_at(position)
            })
            .collect())
    }
}

#[cfg(test)]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "test data of known small ranges"
)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use deltalake::arrow::array::{
        BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int8Array,
        Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use deltalake::arrow::compute::kernels::cmp::lt;

    fn buckets_for(array: ArrayRef, bits: u32) -> Vec<u32> {
        let mut reservoir = Reservoir::new(array.data_type(), 1_000, 42).unwrap();
        reservoir.add(&array).unwrap();
        reservoir.into_buckets(bits).buckets(&array).unwrap()
    }

    /// For seeded random pairs: a < b (Arrow's comparison, with the documented float rules)
    /// implies bucket(a) <= bucket(b); nulls are bucket 0.
    fn check_order(array: ArrayRef, bits: u32) {
        let buckets = buckets_for(array.clone(), bits);
        let mut rng = StdRng::seed_from_u64(7);
        let normalized = normalize(&array);
        for _ in 0..3_000 {
            let i = rng.random_range(0..array.len());
            let j = rng.random_range(0..array.len());
            if array.is_null(i) {
                assert_eq!(buckets[i], 0);
                continue;
            }
            if array.is_null(j) {
                continue;
            }
            let a = normalized.slice(i, 1);
            let b = normalized.slice(j, 1);
            let less = lt(&a, &b).unwrap().value(0)
                || (matches!(array.data_type(), DataType::Float32 | DataType::Float64)
                    && b.as_ref()
                        .as_any()
                        .downcast_ref::<Float64Array>()
                        .is_some_and(|x| x.value(0).is_nan())
                    && !a
                        .as_ref()
                        .as_any()
                        .downcast_ref::<Float64Array>()
                        .is_some_and(|x| x.value(0).is_nan()));
            if less {
                assert!(
                    buckets[i] <= buckets[j],
                    "{:?} < {:?} but {} > {}",
                    a,
                    b,
                    buckets[i],
                    buckets[j]
                );
            }
            assert!(buckets[i] >= 1);
        }
    }

    #[test]
    fn buckets_keep_the_order_of_every_type() {
        let mut rng = StdRng::seed_from_u64(1);
        let n = 5_000;
        let mut maybe = |p: f64| rng.random_bool(p);
        let nulls: Vec<bool> = (0..n).map(|_| maybe(0.1)).collect();
        let mut rng = StdRng::seed_from_u64(2);
        let ints: Vec<Option<i64>> = (0..n)
            .map(|i| (!nulls[i]).then(|| rng.random_range(-1_000_000..1_000_000)))
            .collect();
        check_order(Arc::new(Int64Array::from(ints.clone())), 8);
        check_order(
            Arc::new(Int8Array::from(
                (0..n)
                    .map(|i| (!nulls[i]).then_some((i % 256) as u8 as i8))
                    .collect::<Vec<_>>(),
            )),
            4,
        );
        let floats: Vec<Option<f64>> = (0..n)
            .map(|i| {
                (!nulls[i]).then(|| match i % 50 {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => f64::NEG_INFINITY,
                    3 => -0.0,
                    4 => 0.0,
                    _ => rng.random_range(-1e6..1e6),
                })
            })
            .collect();
        check_order(Arc::new(Float64Array::from(floats)), 8);
        let prefix = "x".repeat(40);
        let strings: Vec<Option<String>> = (0..n)
            .map(|i| (!nulls[i]).then(|| format!("{prefix}{:06}", rng.random_range(0..1_000_000))))
            .collect();
        check_order(Arc::new(StringArray::from(strings)), 8);
        let binary: Vec<Option<Vec<u8>>> = (0..n)
            .map(|i| {
                (!nulls[i]).then(|| {
                    (0..rng.random_range(0..6))
                        .map(|_| rng.random::<u8>())
                        .collect()
                })
            })
            .collect();
        check_order(Arc::new(BinaryArray::from_iter(binary)), 6);
        check_order(
            Arc::new(BooleanArray::from(
                (0..n)
                    .map(|i| (!nulls[i]).then_some(i % 3 == 0))
                    .collect::<Vec<_>>(),
            )),
            4,
        );
        check_order(
            Arc::new(Date32Array::from(
                ints.iter()
                    .map(|v| v.map(|x| (x / 100) as i32))
                    .collect::<Vec<_>>(),
            )),
            8,
        );
        check_order(
            Arc::new(TimestampMicrosecondArray::from(ints.clone()).with_timezone("UTC")),
            8,
        );
        check_order(
            Arc::new(
                Decimal128Array::from(
                    ints.iter()
                        .map(|v| v.map(|x| i128::from(x) * 1_000_000_007))
                        .collect::<Vec<_>>(),
                )
                .with_precision_and_scale(38, 4)
                .unwrap(),
            ),
            8,
        );
    }

    /// The native lookup gives every value the bucket the row-format lookup gives, for each
    /// type that has one, with cuts from a sample and cuts read back from a work order.
    #[test]
    fn native_lookup_equals_the_row_format_lookup() {
        use deltalake::arrow::array::{
            BinaryViewArray, BooleanArray, Date32Array, Decimal128Array, DurationNanosecondArray,
            Float32Array, Int8Array, Int64Array, LargeStringArray, StringViewArray,
            Time64MicrosecondArray, TimestampMicrosecondArray, UInt64Array,
        };
        let mut rng = StdRng::seed_from_u64(11);
        let n = 4_000;
        let mut ints: Vec<Option<i64>> = Vec::new();
        for i in 0..n {
            ints.push((i % 13 != 0).then(|| match i % 7 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => rng.random_range(-5_000..5_000),
            }));
        }
        let float = |i: usize, rng: &mut StdRng| match i % 11 {
            0 => f64::NAN,
            1 => -f64::NAN,
            2 => f64::INFINITY,
            3 => f64::NEG_INFINITY,
            4 => -0.0,
            5 => 0.0,
            6 => f64::MIN_POSITIVE / 4.0,
            _ => rng.random_range(-1e3..1e3),
        };
        let floats: Vec<Option<f64>> = (0..n)
            .map(|i| (i % 17 != 0).then(|| float(i, &mut rng)))
            .collect();
        let strings: Vec<Option<String>> = (0..n)
            .map(|i| {
                (i % 19 != 0).then(|| {
                    let len = rng.random_range(0..4);
                    (0..len)
                        .map(|_| ['a', 'b', '\u{e9}', '\0'][rng.random_range(0..4)])
                        .collect()
                })
            })
            .collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ints.clone())),
            Arc::new(Int8Array::from(
                ints.iter().map(|v| v.map(|x| x as i8)).collect::<Vec<_>>(),
            )),
            Arc::new(UInt64Array::from(
                ints.iter()
                    .map(|v| v.map(i64::cast_unsigned))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Date32Array::from(
                ints.iter().map(|v| v.map(|x| x as i32)).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMicrosecondArray::from(ints.clone()).with_timezone("UTC")),
            Arc::new(Time64MicrosecondArray::from(
                ints.iter()
                    .map(|v| v.map(|x| x & i64::MAX))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(DurationNanosecondArray::from(ints.clone())),
            Arc::new(
                Decimal128Array::from(
                    ints.iter()
                        .map(|v| v.map(|x| i128::from(x) * 10_000_000_000_007))
                        .collect::<Vec<_>>(),
                )
                .with_precision_and_scale(38, 3)
                .unwrap(),
            ),
            Arc::new(Float64Array::from(floats.clone())),
            Arc::new(Float32Array::from(
                floats
                    .iter()
                    .map(|v| v.map(|x| x as f32))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(BooleanArray::from(
                ints.iter().map(|v| v.map(|x| x > 0)).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(strings.clone())),
            Arc::new(LargeStringArray::from(strings.clone())),
            Arc::new(StringViewArray::from(strings.clone())),
            Arc::new(BinaryViewArray::from_iter(
                strings.iter().map(|s| s.as_ref().map(String::as_bytes)),
            )),
        ];
        let (mut wide, mut narrow) = (0, 0);
        for array in arrays {
            for bits in [3, 8, 16] {
                // Sample half the rows, so the other half holds values between and beyond
                // the cuts.
                let mut reservoir = Reservoir::new(array.data_type(), 500, 5).unwrap();
                reservoir.add(&array.slice(0, n / 2)).unwrap();
                let sampled = reservoir.into_buckets(bits);
                let read_back =
                    ColumnBuckets::from_cuts(array.data_type(), &sampled.to_cuts()).unwrap();
                for buckets in [&sampled, &read_back] {
                    assert!(
                        !matches!(buckets.native, NativeCuts::Rows),
                        "{} has a native lookup",
                        array.data_type()
                    );
                    wide += usize::from(matches!(buckets.native, NativeCuts::Integer(_)));
                    narrow += usize::from(matches!(buckets.native, NativeCuts::Integer64(_)));
                    let native = buckets.native_buckets(array.as_ref()).unwrap();
                    let rows = buckets.row_buckets(&array).unwrap();
                    assert_eq!(native, rows, "{} with {bits} bits", array.data_type());
                    assert_eq!(buckets.buckets(&array).unwrap(), rows);
                }
            }
        }
        // Both integer lookups ran: cuts beyond i64 (the decimals), and saturated values.
        assert!(wide > 0 && narrow > 0, "{wide} wide, {narrow} narrow");
    }

    #[test]
    fn floats_treat_negative_zero_as_zero_and_nan_above_infinity() {
        let array: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            Some(0.0),
            Some(f64::NAN),
            Some(-f64::NAN),
            Some(f64::INFINITY),
            None,
        ]));
        let b = buckets_for(array, 8);
        assert_eq!(b[0], b[1], "-0.0 and 0.0");
        assert_eq!(b[2], b[3], "NaN of either sign");
        assert!(b[2] > b[4], "NaN above +inf");
        assert_eq!(b[5], 0, "null first");
    }

    #[test]
    fn few_distinct_values_get_a_bucket_each_and_skew_splits_by_rows() {
        let array: ArrayRef = Arc::new(StringArray::from(
            (0..1000)
                .map(|i| Some(["b", "a", "c"][i % 3]))
                .collect::<Vec<_>>(),
        ));
        let b = buckets_for(array, 4);
        assert!(
            b[1] < b[0] && b[0] < b[2],
            "one bucket per value, in order: {b:?}"
        );
        // Spread by rows over the 15 value buckets: a third of the rows each.
        assert_eq!((b[1], b[0], b[2]), (2, 7, 12));

        // 90% of the rows hold one value: the remaining rows still spread over many buckets.
        let skewed: ArrayRef = Arc::new(Int64Array::from(
            (0..10_000i64)
                .map(|i| Some(if i % 10 == 0 { i } else { 5 }))
                .collect::<Vec<_>>(),
        ));
        let mut reservoir = Reservoir::new(&DataType::Int64, 10_000, 1).unwrap();
        reservoir.add(&skewed).unwrap();
        let buckets = reservoir.into_buckets(6);
        assert!(buckets.num_buckets() > 8, "{}", buckets.num_buckets());
    }

    #[test]
    fn sampling_is_seeded_and_uniform() {
        let array: ArrayRef = Arc::new(Int64Array::from((0..100_000i64).collect::<Vec<_>>()));
        let run = |seed| {
            let mut r = Reservoir::new(&DataType::Int64, 1_000, seed).unwrap();
            for chunk in 0..10 {
                r.add(&array.slice(chunk * 10_000, 10_000)).unwrap();
            }
            assert_eq!(r.num_seen(), 100_000);
            r.into_buckets(4).buckets(&array).unwrap()
        };
        assert_eq!(run(3), run(3));
        // 15 value buckets over uniform data: each holds about 1/15 of the rows.
        let b = run(3);
        for bucket in 1..=15u32 {
            let share = b.iter().filter(|&&x| x == bucket).count() as f64 / 100_000.0;
            assert!(
                (share - 1.0 / 15.0).abs() < 0.03,
                "bucket {bucket}: {share}"
            );
        }
    }
}
