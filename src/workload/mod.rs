//! Workloads: the predicates a table's queries filter it by, each weighted by how often it
//! ran. `recommend` chooses a layout for a workload, `optimize --workload` builds a cut tree
//! along it ([`crate::plan::cuts`]), and `report --workload` scores a layout on it.
//!
//! # The workload file
//! ```text
//! # comments and blank lines are skipped
//! 120<TAB>l_shipdate >= DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07
//! l_returnflag = 'R'   # a comment after a predicate, or -- one in SQL's style
//! ```
//! One predicate per line in the `--where` language ([`crate::predicate`]), over any column
//! of the table, with an optional weight before a tab: the number of times the query ran (a
//! positive integer; 1 without one). The same predicate on several lines counts once with the
//! weights added. A bad line is an error naming the line and what is wrong with it
//! ([`Error::InvalidWorkload`]). `delta-layout workload extract` writes such a file from a
//! query history ([`extract`]).
//!
//! # Training and test queries
//! [`Workload::split`] deals the lines (not the runs: a query seen while choosing must not
//! reappear when scoring) into a training and a test part by a seeded hash of each line's
//! text, so a choice made on one part is scored on queries it never saw.

pub mod extract;

use std::collections::BTreeMap;

use crate::bound::ColumnRef;
use crate::error::{Error, Result};
use crate::predicate::Predicate;
use crate::table::TableView;

/// Default share of the queries held out for scoring ([`Workload::split`]): 0.2.
pub const DEFAULT_HOLDOUT: f64 = 0.2;

/// Share of a workload's runs from which a query is never held out ([`Workload::split`]):
/// 0.25. Holding out a query that carries that much of the runs would lay the table out
/// without its columns and score it on a test part it dominates.
pub const HOLDOUT_KEEPS_SHARE: f64 = 0.25;
/// Default seed of the split into training and test queries.
pub const DEFAULT_SPLIT_SEED: u64 = 42;

/// `line` up to its comment: a `#` or `--` outside quotes (`'...'`, `"..."`, `` `...` ``)
/// and what follows it.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = '\0';
    for (at, c) in line.char_indices() {
        match quote {
            // A doubled quote inside a quoted run closes and reopens it: the same state.
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '\'' | '"' | '`') => quote = Some(c),
            None if c == '#' => return &line[..at],
            None if c == '-' && previous == '-' => return &line[..at - 1],
            None => {}
        }
        previous = if quote.is_none() { c } else { '\0' };
    }
    line
}

/// One query of a workload: a predicate and how many times it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The predicate, parsed.
    pub predicate: Predicate,
    /// Runs of the query, at least 1.
    pub weight: u64,
    /// The 1-based line of the file it was first read from (0 when built in code).
    pub line: usize,
}

/// A weighted set of distinct predicates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workload {
    /// The queries, in order of first appearance; no two have the same predicate text.
    pub queries: Vec<Query>,
    /// Where it was read from, for messages (a file name, or `workload`).
    pub source: String,
}

impl Workload {
    /// Parses a workload file's text (see the module docs). `source` names it in errors.
    ///
    /// # Errors
    /// [`Error::InvalidWorkload`] naming the line: a weight that is not a positive integer,
    /// an empty predicate after a weight, a predicate that does not parse, a weight that
    /// brings the runs in all past `u64::MAX` (so that no total wraps); and when the text
    /// holds no predicate at all (line 0).
    ///
    /// # Examples
    /// ```
    /// use delta_layout::workload::Workload;
    /// let w = Workload::parse("# two queries\n3\tx > 5\ny = 'a'\nx > 5\n", "w.txt")?;
    /// assert_eq!(w.queries.len(), 2);
    /// assert_eq!(w.queries[0].weight, 4);
    /// assert_eq!(w.total_weight(), 5);
    /// # Ok::<(), delta_layout::Error>(())
    /// ```
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let bad = |line: usize, message: String| Error::InvalidWorkload {
            file: source.to_string(),
            line,
            message,
        };
        // A byte order mark, as some editors write, is not part of the first line.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut queries: Vec<Query> = Vec::new();
        let mut by_text: BTreeMap<String, usize> = BTreeMap::new();
        // Runs in all: every sum of weights (a query's, a column's, the workload's) is at most
        // this, so none overflows.
        let mut total: u64 = 0;
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let raw = strip_comment(raw);
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (weight, predicate_text) = match raw.split_once('\t') {
                Some((weight, rest)) if !weight.trim().is_empty() => {
                    let weight = weight.trim();
                    let parsed = weight.parse::<u64>().ok().filter(|w| *w > 0).ok_or_else(|| {
                        bad(
                            line,
                            format!(
                                "the weight '{weight}' before the tab is not a positive integer (the number of times the query ran)"
                            ),
                        )
                    })?;
                    (parsed, rest.trim())
                }
                _ => (1, trimmed),
            };
            if predicate_text.is_empty() {
                return Err(bad(line, "has a weight but no predicate".to_string()));
            }
            total = total.checked_add(weight).ok_or_else(|| {
                bad(
                    line,
                    format!(
                        "the weight {weight} brings the runs in all past {} (the largest count of runs)",
                        u64::MAX
                    ),
                )
            })?;
            let predicate = Predicate::parse(predicate_text).map_err(|e| match e {
                Error::InvalidPredicate { message, .. } => {
                    bad(line, format!("'{predicate_text}': {message}"))
                }
                other => bad(line, other.to_string()),
            })?;
            let key = predicate.to_string();
            match by_text.get(&key) {
                Some(&at) => {
                    // At most `total`: no overflow.
                    queries[at].weight += weight;
                }
                None => {
                    by_text.insert(key, queries.len());
                    queries.push(Query {
                        predicate,
                        weight,
                        line,
                    });
                }
            }
        }
        if queries.is_empty() {
            return Err(bad(0, "holds no predicate".to_string()));
        }
        Ok(Self {
            queries,
            source: source.to_string(),
        })
    }

    /// Reads and parses a workload file.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming [`crate::Setting::Workload`] when the file cannot be
    /// read; everything [`Workload::parse`] returns.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid_option(
                crate::Setting::Workload,
                format!("cannot read '{}': {e}", path.display()),
            )
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The sum of the queries' weights: runs in all.
    #[must_use]
    pub fn total_weight(&self) -> u64 {
        self.queries.iter().map(|q| q.weight).sum()
    }

    /// Checks every query against `table`: each column it names exists and has an order
    /// (min/max stats can describe it), and each literal fits its column's type. Returns
    /// each query's columns, resolved.
    ///
    /// # Errors
    /// [`Error::InvalidWorkload`] naming the line of the first query that does not fit.
    pub fn bind(&self, table: &TableView) -> Result<Vec<Vec<ColumnRef>>> {
        self.queries
            .iter()
            .map(|q| {
                crate::pruning::Pruner::new(table, &q.predicate)
                    .map(|p| p.columns().to_vec())
                    .map_err(|e| Error::InvalidWorkload {
                        file: self.source.clone(),
                        line: q.line,
                        message: format!("'{}': {e}", q.predicate),
                    })
            })
            .collect()
    }

    /// The workload as a file's text: one `weight<TAB>predicate` line per query, in order.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for q in &self.queries {
            out.push_str(&format!("{}\t{}\n", q.weight, q.predicate));
        }
        out
    }

    /// A digest of the queries and weights (xxHash64 of [`Workload::to_text`], 16 hex
    /// digits): equal workloads have equal digests whatever their comments, spacing or line
    /// order. A cut tree records the digest of the workload it was built for.
    #[must_use]
    pub fn digest(&self) -> String {
        let mut lines: Vec<String> = self
            .queries
            .iter()
            .map(|q| format!("{}\t{}", q.weight, q.predicate))
            .collect();
        lines.sort_unstable();
        format!(
            "{:016x}",
            xxhash_rust::xxh64::xxh64(lines.join("\n").as_bytes(), 0)
        )
    }

    /// Splits the queries into a training and a test part: each query goes to the test part
    /// when a seeded hash of its predicate text falls below `holdout` (a share in `[0, 1)`),
    /// so the split does not depend on the order of the lines. With at least two queries,
    /// both parts get one: if the hash gave every query to one part, the query with the
    /// lowest (or highest) hash moves over. A query carrying at least
    /// [`HOLDOUT_KEEPS_SHARE`] of the runs always trains, and the fix-up moves only the
    /// others, unless every query is that heavy (at most 4 queries), where the plain split
    /// applies. `holdout` 0 keeps every query for training and returns an empty test part.
    #[must_use]
    pub fn split(&self, holdout: f64, seed: u64) -> (Workload, Workload) {
        let holdout = if holdout.is_finite() {
            holdout.clamp(0.0, 1.0)
        } else {
            0.0
        };
        #[expect(clippy::cast_precision_loss, reason = "a hash as a share in [0, 1)")]
        let share = |q: &Query| {
            let text = q.predicate.to_string();
            (xxhash_rust::xxh64::xxh64(text.as_bytes(), seed) >> 11) as f64 / (1u64 << 53) as f64
        };
        let shares: Vec<f64> = self.queries.iter().map(share).collect();
        let total = self.total_weight();
        #[expect(clippy::cast_precision_loss, reason = "run counts, a share")]
        let mut heavy: Vec<bool> = self
            .queries
            .iter()
            .map(|q| q.weight as f64 >= HOLDOUT_KEEPS_SHARE * total as f64)
            .collect();
        if heavy.iter().all(|h| *h) {
            heavy.fill(false);
        }
        let mut test: Vec<bool> = shares
            .iter()
            .zip(&heavy)
            .map(|(&s, &h)| s < holdout && !h)
            .collect();
        let light: Vec<usize> = (0..shares.len()).filter(|&i| !heavy[i]).collect();
        if holdout > 0.0 && self.queries.len() >= 2 && !light.is_empty() {
            let lowest = light
                .iter()
                .copied()
                .min_by(|&a, &b| shares[a].total_cmp(&shares[b]));
            let highest = (0..shares.len()).max_by(|&a, &b| shares[a].total_cmp(&shares[b]));
            if test.iter().all(|t| !*t)
                && let Some(i) = lowest
            {
                test[i] = true;
            }
            if test.iter().all(|t| *t)
                && let Some(i) = highest
            {
                test[i] = false;
            }
        }
        let part = |want: bool| Workload {
            queries: self
                .queries
                .iter()
                .zip(&test)
                .filter(|(_, t)| **t == want)
                .map(|(q, _)| q.clone())
                .collect(),
            source: self.source.clone(),
        };
        (part(false), part(true))
    }

    /// Each column the queries filter, with the runs that filter it (a query's weight counted
    /// once per column it names), most used first (ties by name).
    #[must_use]
    pub fn column_use(&self) -> Vec<(Vec<String>, u64)> {
        let mut uses: BTreeMap<Vec<String>, u64> = BTreeMap::new();
        for q in &self.queries {
            for column in q.predicate.columns() {
                *uses.entry(column).or_default() += q.weight;
            }
        }
        let mut out: Vec<(Vec<String>, u64)> = uses.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_after_a_predicate_end_it_outside_quotes() {
        let text = "3\tx = 200 # trailing\ny = 'a#b--c' -- sql style\n`we#ird` > 1 #\nz = 'it''s # here' # and here\n2\tx >= -5--note\n";
        let w = Workload::parse(text, "w.txt").unwrap();
        let texts: Vec<String> = w.queries.iter().map(|q| q.predicate.to_string()).collect();
        assert_eq!(
            texts,
            [
                "x = 200",
                "y = 'a#b--c'",
                "`we#ird` > 1",
                "z = 'it''s # here'",
                "x >= -5"
            ]
        );
        assert_eq!(w.queries[0].weight, 3);
        assert_eq!(w.queries[4].weight, 2);
        // A comment cannot hide a weight's missing predicate.
        let err = Workload::parse("4\t# nothing\n", "w.txt").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn lines_weights_comments_and_duplicates() {
        let text = "\u{feff}# a workload\n\n120\tl_shipdate >= DATE '1995-01-01'\n  x = 1  \n\t y IN (1, 2)\n7 \tx = 1\n# the end\n";
        let w = Workload::parse(text, "w.txt").unwrap();
        assert_eq!(w.queries.len(), 3);
        assert_eq!(w.queries[0].weight, 120);
        assert_eq!(w.queries[0].line, 3);
        // `x = 1` twice: weights added, first line kept.
        assert_eq!(w.queries[1].weight, 8);
        assert_eq!(w.queries[1].line, 4);
        // A leading tab without a weight is no weight.
        assert_eq!(w.queries[2].weight, 1);
        assert_eq!(w.total_weight(), 129);
        let again = Workload::parse(&w.to_text(), "again").unwrap();
        assert_eq!(again.queries.len(), 3);
        assert_eq!(again.digest(), w.digest());
        assert_eq!(
            w.column_use()[0],
            (vec!["l_shipdate".to_string()], 120),
            "{:?}",
            w.column_use()
        );
    }

    #[test]
    fn weights_adding_up_past_u64_are_refused_at_their_line() {
        let half = 1u64 << 63;
        let err = Workload::parse(&format!("{half}\tx = 1\n# c\n{half}\ty = 2\n"), "w.txt")
            .unwrap_err()
            .to_string();
        assert!(err.contains("w.txt") && err.contains("line 3"), "{err}");
        assert!(err.contains(&u64::MAX.to_string()), "{err}");
        // The same predicate twice: refused too, not saturated.
        assert!(Workload::parse(&format!("{half}\tx = 1\n{half}\tx = 1\n"), "w").is_err());
        let w = Workload::parse(&format!("{}\tx = 1\n1\ty = 2\n", u64::MAX - 1), "w").unwrap();
        assert_eq!(w.total_weight(), u64::MAX);
    }

    #[test]
    fn bad_lines_name_the_line() {
        let cases = [
            ("x = 1\n0\tx = 2\n", 2, "weight '0'"),
            ("x = 1\n\n-3\tx = 2\n", 3, "weight '-3'"),
            ("many\tx = 2\n", 1, "weight 'many'"),
            ("5\t   \n", 1, "no predicate"),
            ("x = 1\nx = = 2\n", 2, "'x = = 2'"),
            ("# only comments\n\n", 0, "holds no predicate"),
        ];
        for (text, line, needle) in cases {
            let err = Workload::parse(text, "w.txt").unwrap_err();
            let message = err.to_string();
            match err {
                Error::InvalidWorkload { line: got, .. } => assert_eq!(got, line, "{message}"),
                other => panic!("{other}"),
            }
            assert!(message.contains(needle), "{message}");
            assert!(message.contains("w.txt"), "{message}");
        }
    }

    #[test]
    fn split_is_seeded_by_text_and_keeps_both_parts() {
        let text: String = (0..50).map(|i| format!("{}\tx = {i}\n", i + 1)).collect();
        let w = Workload::parse(&text, "w").unwrap();
        let (train, test) = w.split(0.2, 7);
        assert_eq!(train.queries.len() + test.queries.len(), 50);
        assert!(
            (4..=18).contains(&test.queries.len()),
            "{}",
            test.queries.len()
        );
        // The same split whatever the line order.
        let reversed: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
        let (_, test2) = Workload::parse(&reversed, "w").unwrap().split(0.2, 7);
        let names = |w: &Workload| {
            let mut v: Vec<String> = w.queries.iter().map(|q| q.predicate.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(names(&test), names(&test2));
        // Another seed, another split.
        assert_ne!(names(&test), names(&w.split(0.2, 8).1));
        // Two queries: one each, whatever the share.
        let two = Workload::parse("x = 1\nx = 2\n", "w").unwrap();
        for holdout in [0.01, 0.99] {
            let (a, b) = two.split(holdout, 1);
            assert_eq!((a.queries.len(), b.queries.len()), (1, 1));
        }
        let (all, none) = two.split(0.0, 1);
        assert_eq!((all.queries.len(), none.queries.len()), (2, 0));
    }

    #[test]
    fn a_heavy_query_always_trains() {
        // Seven queries, one with 120 of the 309 runs (39%): whatever the seed and holdout,
        // it trains, and the test part still gets a query.
        let text = "120\tx = 1\n40\tx = 2\n40\tx = 3\n40\tx = 4\n30\tx = 5\n20\tx = 6\n19\tx = 7\n";
        let w = Workload::parse(text, "w").unwrap();
        assert_eq!(w.total_weight(), 309);
        let mut held_out_others = 0;
        for seed in 0..200 {
            for holdout in [0.2, 0.5, 0.99] {
                let (train, test) = w.split(holdout, seed);
                assert!(
                    train.queries.iter().any(|q| q.weight == 120),
                    "seed {seed}, holdout {holdout}: the heaviest query was held out"
                );
                assert!(!test.queries.is_empty(), "seed {seed}, holdout {holdout}");
                assert_eq!(train.queries.len() + test.queries.len(), 7);
                held_out_others += test.queries.len();
            }
        }
        assert!(held_out_others > 200, "{held_out_others}");
    }
}
