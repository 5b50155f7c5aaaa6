//! The generated workload: seeded predicates drawn from each column's value distribution as
//! the stats imply it (see the `model` module), so two layouts of one table are measured on
//! the same queries.
//!
//! Per column, half the predicates are equalities on a value drawn from the distribution
//! (a file chosen by rows, a value within its [min, max]) and half are `BETWEEN` ranges
//! covering `selectivity` of the rows (a uniform start quantile). Per pair of columns (when
//! the user names several), the same number of conjunctions of one range on each column.
//! Each query keeps the quantile interval it covers per column, from which the ideal
//! layout's skipping follows: with `n` files of equal rows sorted on the column, the files
//! whose quantile slices meet the interval are read.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::bound::ColumnRef;
use crate::predicate::{CompareOp, Predicate};
use crate::report::ReportOptions;
use crate::report::model::ColumnModel;

/// The kind of a generated predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// `column = value`.
    Equality,
    /// `column BETWEEN low AND high`.
    Range,
    /// A range on each of two columns, joined by `AND`.
    Conjunction,
}

/// One generated predicate.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Its kind.
    pub kind: QueryKind,
    /// Logical paths of the columns it filters.
    pub columns: Vec<Vec<String>>,
    /// The predicate.
    pub predicate: Predicate,
    /// Per column, the quantile interval [low, high] of rows it selects (by the model).
    pub intervals: Vec<(f64, f64)>,
}

impl Query {
    /// Share of `files` files the ideal layout skips: files of equal rows sorted on one of
    /// the query's columns (the best one), reading those whose slice meets the interval.
    #[must_use]
    pub fn ideal_skipped_fraction(&self, files: usize) -> f64 {
        if files == 0 {
            return 0.0;
        }
        #[expect(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "file indices"
        )]
        self.intervals
            .iter()
            .map(|&(low, high)| {
                let n = files as f64;
                let last_index = files - 1;
                let first = ((low * n).floor().max(0.0) as usize).min(last_index);
                let last = (((high * n) - 1e-9).floor().max(0.0) as usize)
                    .min(last_index)
                    .max(first);
                1.0 - (last - first + 1) as f64 / n
            })
            .fold(0.0, f64::max)
    }
}

/// The generated predicates of a report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workload {
    /// Every query, column by column, then pair by pair.
    pub queries: Vec<Query>,
    pairs: Vec<[Vec<String>; 2]>,
}

impl Workload {
    /// Draws the workload. `pairs`: also conjunctions for every pair of columns.
    pub(crate) fn generate(
        models: &[ColumnModel],
        columns: &[ColumnRef],
        options: &ReportOptions,
        pairs: bool,
    ) -> Self {
        let mut queries = Vec::new();
        let equalities = options.queries / 2;
        let ranges = options.queries - equalities;
        for (model, column) in models.iter().zip(columns) {
            if !model.has_data() {
                continue;
            }
            let mut rng = StdRng::seed_from_u64(options.seed ^ fnv(&column.name));
            let picker = FilePicker::new(model);
            for _ in 0..equalities {
                let (predicate, interval) = equality(model, column, &picker, &mut rng);
                queries.push(Query {
                    kind: QueryKind::Equality,
                    columns: vec![column.logical.clone()],
                    predicate,
                    intervals: vec![interval],
                });
            }
            for _ in 0..ranges {
                let (predicate, interval) = range(model, column, options.selectivity, &mut rng);
                queries.push(Query {
                    kind: QueryKind::Range,
                    columns: vec![column.logical.clone()],
                    predicate,
                    intervals: vec![interval],
                });
            }
        }
        let mut pair_list = Vec::new();
        if pairs {
            let with_data: Vec<usize> = (0..models.len())
                .filter(|&c| models[c].has_data())
                .collect();
            for (i, &a) in with_data.iter().enumerate() {
                for &b in &with_data[i + 1..] {
                    pair_list.push([columns[a].logical.clone(), columns[b].logical.clone()]);
                    let mut rng = StdRng::seed_from_u64(
                        options.seed
                            ^ fnv(&columns[a].name)
                            ^ fnv(&columns[b].name).rotate_left(17),
                    );
                    for _ in 0..equalities.max(1) {
                        let (pa, ia) =
                            range(&models[a], &columns[a], options.selectivity, &mut rng);
                        let (pb, ib) =
                            range(&models[b], &columns[b], options.selectivity, &mut rng);
                        queries.push(Query {
                            kind: QueryKind::Conjunction,
                            columns: vec![columns[a].logical.clone(), columns[b].logical.clone()],
                            predicate: Predicate::And(Box::new(pa), Box::new(pb)),
                            intervals: vec![ia, ib],
                        });
                    }
                }
            }
        }
        Self {
            queries,
            pairs: pair_list,
        }
    }

    /// The column pairs with conjunctions (logical paths).
    #[must_use]
    pub fn pairs(&self) -> &[[Vec<String>; 2]] {
        &self.pairs
    }
}

/// Chooses a file with a range, with probability proportional to its rows.
struct FilePicker {
    cumulative: Vec<f64>,
    files: Vec<(f64, f64)>,
}

impl FilePicker {
    fn new(model: &ColumnModel) -> Self {
        let mut cumulative = Vec::new();
        let mut files = Vec::new();
        let mut total = 0.0;
        for (range, w) in model.ranges.iter().zip(&model.weights) {
            if let Some(r) = range {
                total += w.max(0.0);
                cumulative.push(total);
                files.push(*r);
            }
        }
        Self { cumulative, files }
    }

    fn pick(&self, rng: &mut StdRng) -> (f64, f64) {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        if total <= 0.0 {
            return self.files[rng.random_range(0..self.files.len())];
        }
        let x = rng.random::<f64>() * total;
        let i = self.cumulative.partition_point(|&c| c <= x);
        self.files[i.min(self.files.len() - 1)]
    }
}

fn equality(
    model: &ColumnModel,
    column: &ColumnRef,
    picker: &FilePicker,
    rng: &mut StdRng,
) -> (Predicate, (f64, f64)) {
    let (a, b) = picker.pick(rng);
    let mut x = a + (b - a) * rng.random::<f64>();
    if model.discrete() {
        x = x.round().clamp(a, b);
    }
    let predicate = Predicate::Compare {
        column: column.logical.clone(),
        op: CompareOp::Eq,
        value: model.literal(x, true),
    };
    (predicate, model.cdf(x))
}

fn range(
    model: &ColumnModel,
    column: &ColumnRef,
    selectivity: f64,
    rng: &mut StdRng,
) -> (Predicate, (f64, f64)) {
    let start = rng.random::<f64>() * (1.0 - selectivity);
    let mut low = model.quantile(start);
    let mut high = model.quantile((start + selectivity).min(1.0));
    if model.discrete() {
        low = low.floor();
        high = high.ceil();
    }
    let predicate = Predicate::Between {
        column: column.logical.clone(),
        low: model.literal(low, true),
        high: model.literal(high, false),
        negated: false,
    };
    (predicate, (model.cdf(low).0, model.cdf(high).1))
}

/// FNV-1a, so a column's queries depend on its name and the seed, not on its position.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
