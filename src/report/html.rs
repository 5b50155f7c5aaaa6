//! The report as one self-contained HTML page: inline SVG and CSS, no script, no external
//! asset, so it opens from a file or an email attachment.
//!
//! Per column, every file's [min, max] is a horizontal bar, files ordered by min, before and
//! after side by side: the picture used to explain Z-order (overlapping bars are files a
//! query reads together). Below them: the file-size histograms and the share of files
//! skipped beside the ideal.

use std::fmt::Write;

use crate::report::{ColumnLayout, ColumnReport, LayoutReport};
use crate::size::format_size;

const PANEL_WIDTH: f64 = 420.0;
const PANEL_HEIGHT: f64 = 260.0;

/// Renders `after` (with `before` beside it when given) as an HTML page.
#[must_use]
pub fn render(before: Option<&LayoutReport>, after: &LayoutReport) -> String {
    let mut page = String::new();
    let title = format!("delta-layout report: {}", after.table);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:system-ui,sans-serif;margin:24px;color:#222}}\
         table{{border-collapse:collapse}}td,th{{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}}\
         th:first-child,td:first-child{{text-align:left}}.pair{{display:flex;gap:24px;flex-wrap:wrap}}\
         figure{{margin:0}}figcaption{{font-size:13px;color:#555}}h2{{margin-top:32px}}</style>\
         </head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let versions: Vec<&LayoutReport> = before.into_iter().chain([after]).collect();
    page.push_str("<h2>Table</h2>\n<table><tr><th></th>");
    for r in &versions {
        let _ = write!(page, "<th>version {}</th>", r.version);
    }
    page.push_str("</tr>\n");
    let row = |page: &mut String, name: &str, f: &dyn Fn(&LayoutReport) -> String| {
        let _ = write!(page, "<tr><td>{}</td>", escape(name));
        for r in &versions {
            let _ = write!(page, "<td>{}</td>", escape(&f(r)));
        }
        page.push_str("</tr>\n");
    };
    row(&mut page, "files", &|r| r.files.to_string());
    row(&mut page, "bytes", &|r| format_size(r.bytes));
    row(&mut page, "rows", &|r| r.rows.to_string());
    row(&mut page, "files within 20% of the target", &|r| {
        format!(
            "{} (target {})",
            r.files_near_target,
            format_size(r.target_file_bytes)
        )
    });
    page.push_str("</table>\n");

    page.push_str("<h2>File sizes</h2>\n<div class=\"pair\">");
    for r in &versions {
        histogram(&mut page, r);
    }
    page.push_str("</div>\n");

    for column in &after.columns {
        let _ = write!(
            page,
            "<h2>Column <code>{}</code></h2>\n<div class=\"pair\">",
            escape(&column.column)
        );
        for r in &versions {
            if let Some(layout) = r.layouts.iter().find(|l| l.column == column.column) {
                ranges(&mut page, r.version, layout);
            }
        }
        page.push_str("</div>\n<div class=\"pair\">");
        for r in &versions {
            if let Some(c) = r.columns.iter().find(|c| c.column == column.column) {
                skipping(&mut page, r, c);
            }
        }
        page.push_str("</div>\n");
    }
    conjunctions(&mut page, &versions);
    let _ = write!(
        page,
        "<p><small>Estimated from the Delta log's min/max stats: {} generated predicates per column \
         (seed {}, ranges covering {}% of rows). The ideal is the same number of files sorted on \
         that column alone.</small></p>\n</body></html>\n",
        after.queries,
        after.seed,
        after.selectivity * 100.0
    );
    page
}

/// The two-column figures (a range on each column of a pair of `--columns`, as the text
/// report's "conjunctions of two ranges"): per pair, each version's average share of files
/// skipped beside the ideal. Nothing without pairs.
fn conjunctions(page: &mut String, versions: &[&LayoutReport]) {
    let Some(last) = versions.last() else {
        return;
    };
    if last.conjunctions.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Two columns together</h2>\n<table class=\"conjunctions\"><tr><th>a range on each of</th>",
    );
    for r in versions {
        let _ = write!(
            page,
            "<th>version {}: skipped</th><th>ideal</th>",
            r.version
        );
    }
    page.push_str("</tr>\n");
    for pair in &last.conjunctions {
        let _ = write!(page, "<tr><td>{}</td>", escape(&pair.columns.join(" AND ")));
        for r in versions {
            match r.conjunctions.iter().find(|c| c.columns == pair.columns) {
                Some(c) => {
                    let _ = write!(
                        page,
                        "<td>{:.1}%</td><td>{:.1}%</td>",
                        c.skipping.skipped_files_fraction_avg * 100.0,
                        c.skipping.ideal_skipped_files_fraction_avg * 100.0
                    );
                }
                None => page.push_str("<td>-</td><td>-</td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    page.push_str(
        "</table>\n<p><small>Average share of files min/max pruning skips for conjunctions of \
         a range on each column; the ideal: as many files sorted on the better of the two \
         columns alone.</small></p>\n",
    );
}

/// Margins around a plot area, pixels: room for tick labels and axis labels.
const LEFT: f64 = 48.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 44.0;
/// Height of the histogram's plot area, pixels.
const HISTOGRAM_HEIGHT: f64 = 140.0;
/// Width of one character of 10 px sans-serif text, pixels (an upper estimate).
const CHAR_WIDTH: f64 = 6.0;
/// Bar colours: file ranges, histogram bars, skipping, the ideal.
const RANGE_COLOR: &str = "#d9534f";
const HISTOGRAM_COLOR: &str = "#4a7fb5";
const SKIPPED_COLOR: &str = "#5cb85c";
const IDEAL_COLOR: &str = "#bbb";

fn histogram(page: &mut String, report: &LayoutReport) {
    let buckets = &report.size_histogram;
    let max = buckets.iter().map(|b| b.files).max().unwrap_or(1).max(1);
    let ticks = count_ticks(max);
    let top_count = ticks.last().map_or(max, |t| t.0.max(max));
    #[expect(clippy::cast_precision_loss, reason = "pixels")]
    let bar = PANEL_WIDTH / buckets.len().max(1) as f64;
    let (width, height) = (LEFT + PANEL_WIDTH + RIGHT, TOP + HISTOGRAM_HEIGHT + BOTTOM);
    let bottom = TOP + HISTOGRAM_HEIGHT;
    #[expect(clippy::cast_precision_loss, reason = "pixels")]
    let y_of = |files: u64| bottom - files as f64 / top_count as f64 * HISTOGRAM_HEIGHT;
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         role=\"img\" aria-label=\"file-size histogram, version {}\">",
        report.version
    );
    for (count, label) in &ticks {
        let y = y_of(*count);
        let _ = write!(
            page,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
             <text class=\"tick\" x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{label}</text>",
            LEFT + PANEL_WIDTH,
            LEFT - 4.0,
            y + 3.5
        );
    }
    // Bucket labels: every k-th, so that they do not run into each other.
    let widest = buckets
        .iter()
        .map(|b| format_size(b.lower_bytes).len())
        .max()
        .unwrap_or(1);
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a small label stride"
    )]
    let every = ((widest as f64 * CHAR_WIDTH + 6.0) / bar).ceil().max(1.0) as usize;
    for (i, b) in buckets.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let x = LEFT + i as f64 * bar;
        let y = y_of(b.files);
        let _ = write!(
            page,
            "<rect class=\"bucket\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{HISTOGRAM_COLOR}\">\
             <title>{} files of {} to {}</title></rect>\
             <text class=\"count\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            x + 1.0,
            (bar - 2.0).max(1.0),
            bottom - y,
            b.files,
            escape(&format_size(b.lower_bytes)),
            escape(&format_size(b.upper_bytes)),
            x + bar / 2.0,
            y - 3.0,
            b.files,
        );
        if i % every == 0 {
            let _ = write!(
                page,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                x + bar / 2.0,
                bottom + 13.0,
                escape(&format_size(b.lower_bytes)),
            );
        }
    }
    axes(
        page,
        &Axes {
            width: PANEL_WIDTH,
            height: HISTOGRAM_HEIGHT,
            x_label: "file size (power-of-two buckets, from their lower bound)",
            y_label: "files",
        },
    );
    let _ = write!(
        page,
        "</svg><figcaption>version {}: files per size bucket</figcaption></figure>",
        report.version
    );
}

fn ranges(page: &mut String, version: u64, layout: &ColumnLayout) {
    let n = layout.ranges.len().max(1);
    #[expect(clippy::cast_precision_loss, reason = "pixels")]
    let step = PANEL_HEIGHT / n as f64;
    let (width, height) = (LEFT + PANEL_WIDTH + RIGHT, TOP + PANEL_HEIGHT + BOTTOM);
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         role=\"img\" aria-label=\"file ranges of {}, version {version}\">\
         <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{PANEL_WIDTH}\" height=\"{PANEL_HEIGHT}\" fill=\"#f6f6f6\"/>",
        escape(&layout.column)
    );
    for (i, r) in layout.ranges.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let y = TOP + i as f64 * step;
        let (a, b) = r.position;
        let mut tip = format!("{}\nmin: {}\nmax: {}\n", r.path, r.min, r.max);
        if let Some(rows) = r.rows {
            let _ = write!(tip, "rows: {rows}, ");
        }
        let _ = write!(tip, "size: {}", format_size(r.size_bytes));
        let _ = write!(
            page,
            "<rect class=\"file\" x=\"{:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{RANGE_COLOR}\">\
             <title>{}</title></rect>",
            LEFT + a * PANEL_WIDTH,
            ((b - a) * PANEL_WIDTH).max(1.0),
            (step * 0.8).max(0.3),
            escape(&tip)
        );
    }
    // Value ticks: as many of the five as fit side by side.
    let ticks: Vec<(f64, String)> = layout
        .axis_ticks
        .iter()
        .map(|(t, label)| (*t, short_tick(label)))
        .collect();
    let widest = ticks.iter().map(|t| t.1.chars().count()).max().unwrap_or(0);
    #[expect(clippy::cast_precision_loss, reason = "pixels")]
    let label_width = widest as f64 * CHAR_WIDTH + 8.0;
    // The end labels are anchored inside the plot, the others centred on their tick: five
    // fit when a label is at most 1/6 of the width, the ends and the middle one at most 1/3.
    let last = ticks.len().saturating_sub(1);
    let keep: Vec<usize> = if label_width <= PANEL_WIDTH / 6.0 {
        (0..=last).collect()
    } else if label_width <= PANEL_WIDTH / 3.0 {
        vec![0, last / 2, last]
    } else {
        vec![0, last]
    };
    let bottom = TOP + PANEL_HEIGHT;
    for (t, label) in ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, t)| t)
    {
        let x = LEFT + t * PANEL_WIDTH;
        let anchor = if *t <= 0.0 {
            "start"
        } else if *t >= 1.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            page,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom}\" y2=\"{}\" stroke=\"#333\"/>\
             <text class=\"tick\" x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"{anchor}\">{}</text>",
            bottom + 4.0,
            bottom + 14.0,
            escape(label)
        );
    }
    // File ticks: the first, middle and last file in min order, beside their bars.
    if !layout.ranges.is_empty() {
        let files = layout.files_with_range;
        let mut ranks = vec![1, files.div_ceil(2), files];
        ranks.dedup();
        for rank in ranks {
            // The drawn bar of that rank (every k-th file is drawn when there are many).
            let drawn = ((rank - 1) * layout.ranges.len() / files).min(layout.ranges.len() - 1);
            #[expect(clippy::cast_precision_loss, reason = "pixels")]
            let y = TOP + drawn as f64 * step + step * 0.4;
            let _ = write!(
                page,
                "<text class=\"tick\" x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{rank}</text>",
                LEFT - 4.0,
                y + 3.5
            );
        }
    }
    axes(
        page,
        &Axes {
            width: PANEL_WIDTH,
            height: PANEL_HEIGHT,
            x_label: &format!("{} (min to max of each file)", layout.column),
            y_label: "files, ordered by min",
        },
    );
    let _ = write!(
        page,
        "</svg><figcaption>version {version}: {} files with bounds{}{}, ordered by min; \
         hover a bar for its file</figcaption></figure>",
        layout.files_with_range,
        if layout.files_unknown > 0 {
            format!(", {} without", layout.files_unknown)
        } else {
            String::new()
        },
        if layout.ranges.len() < layout.files_with_range {
            format!(" ({} drawn)", layout.ranges.len())
        } else {
            String::new()
        },
    );
}

fn skipping(page: &mut String, report: &LayoutReport, column: &ColumnReport) {
    let rows = [
        (
            "range",
            column.range.skipped_files_fraction_avg,
            column.range.ideal_skipped_files_fraction_avg,
        ),
        (
            "equality",
            column.equality.skipped_files_fraction_avg,
            column.equality.ideal_skipped_files_fraction_avg,
        ),
    ];
    // Name gutter, bar area, value text; the legend sits above the bars.
    let (gutter, width, top) = (70.0, PANEL_WIDTH - 200.0, 26.0);
    let bottom = top + 2.0 * 36.0;
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" \
         aria-label=\"files skipped, {}, version {}\">\
         <g class=\"legend\"><rect x=\"{gutter}\" y=\"4\" width=\"12\" height=\"12\" fill=\"{SKIPPED_COLOR}\"/>\
         <text x=\"{}\" y=\"14\" font-size=\"11\">skipped (estimate)</text>\
         <rect x=\"{}\" y=\"8\" width=\"12\" height=\"6\" fill=\"{IDEAL_COLOR}\"/>\
         <text x=\"{}\" y=\"14\" font-size=\"11\">ideal (sorted on this column)</text></g>",
        LEFT + PANEL_WIDTH + RIGHT,
        bottom + 34.0,
        escape(&column.column),
        report.version,
        gutter + 16.0,
        gutter + 130.0,
        gutter + 146.0,
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = gutter + t * width;
        let _ = write!(
            page,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\" stroke=\"#e4e4e4\"/>\
             <text class=\"tick\" x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}%</text>",
            bottom + 4.0,
            bottom + 14.0,
            t * 100.0
        );
    }
    for (i, (name, actual, ideal)) in rows.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let y = top + i as f64 * 36.0 + 4.0;
        let _ = write!(
            page,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">{name}</text>\
             <rect x=\"{gutter}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{SKIPPED_COLOR}\"><title>{name}: skipped {:.1}%</title></rect>\
             <rect x=\"{gutter}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" fill=\"{IDEAL_COLOR}\"><title>{name}: ideal {:.1}%</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{:.1}% (ideal {:.1}%)</text>",
            y + 12.0,
            actual * width,
            actual * 100.0,
            y + 18.0,
            ideal * width,
            ideal * 100.0,
            gutter + width + 8.0,
            y + 12.0,
            actual * 100.0,
            ideal * 100.0
        );
    }
    let _ = write!(
        page,
        "<line x1=\"{gutter}\" x2=\"{gutter}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"#333\"/>\
         <text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">share of files skipped (%)</text>\
         </svg><figcaption>version {}: share of files min/max pruning skips, against the ideal</figcaption></figure>",
        gutter + width / 2.0,
        bottom + 30.0,
        report.version
    );
}

/// A value-axis label as short as it can be: a timestamp literal without all-zero
/// fractional seconds (`'2023-04-13 23:58:58'`).
fn short_tick(label: &str) -> String {
    match label.strip_suffix(".000000'") {
        Some(head) if head.len() >= 20 => format!("{head}'"),
        _ => label.to_string(),
    }
}

/// A plot area's axis lines and axis labels.
pub(crate) struct Axes<'a> {
    /// Plot area width, pixels (it starts at [`LEFT`], [`TOP`]).
    pub width: f64,
    /// Plot area height, pixels.
    pub height: f64,
    /// Label below the x axis.
    pub x_label: &'a str,
    /// Label left of the y axis, rotated.
    pub y_label: &'a str,
}

/// Draws the x and y axis lines of a plot area at ([`LEFT`], [`TOP`]) and their labels.
pub(crate) fn axes(page: &mut String, a: &Axes<'_>) {
    let bottom = TOP + a.height;
    let _ = write!(
        page,
        "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{bottom}\" y2=\"{bottom}\" stroke=\"#333\"/>\
         <line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{bottom}\" stroke=\"#333\"/>\
         <text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\
         <text class=\"axis-label\" transform=\"translate(12 {}) rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
        LEFT + a.width,
        LEFT + a.width / 2.0,
        bottom + 32.0,
        escape(a.x_label),
        TOP + a.height / 2.0,
        escape(a.y_label),
    );
}

/// Ticks of a count axis from 0 to at least `max`: multiples of 1, 2 or 5 times a power
/// of ten, at most six, as (count, label).
pub(crate) fn count_ticks(max: u64) -> Vec<(u64, String)> {
    let max = max.max(1);
    let mut step = 1u64;
    'search: for power in 0..19 {
        let base = 10u64.pow(power);
        for m in [1, 2, 5] {
            step = base * m;
            if max.div_ceil(step) <= 5 {
                break 'search;
            }
        }
    }
    let top = max.div_ceil(step) * step;
    (0..=top / step)
        .map(|i| (i * step, (i * step).to_string()))
        .collect()
}

/// Ticks of a byte axis from 0 to at least `max` bytes: round multiples of the largest
/// binary unit (B, KiB, MiB, GiB, TiB) below `max`, at most six, as (bytes, label such as
/// `1.5 MiB`).
pub(crate) fn byte_ticks(max: f64) -> Vec<(f64, String)> {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let max = max.max(1.0);
    let mut unit = 0;
    while unit + 1 < UNITS.len() && max >= 1024f64.powi(i32::try_from(unit + 1).unwrap_or(4)) {
        unit += 1;
    }
    let scale = 1024f64.powi(i32::try_from(unit).unwrap_or(4));
    let in_units = max / scale;
    let raw = in_units / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| in_units / s <= 5.0)
        .unwrap_or(10.0 * power);
    let step = if unit == 0 {
        step.max(1.0).ceil()
    } else {
        step
    };
    let count = (in_units / step).ceil();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "at most six ticks"
    )]
    let count = count as u64;
    (0..=count)
        .map(|i| {
            #[expect(clippy::cast_precision_loss, reason = "a small index")]
            let v = i as f64 * step;
            let text = format!("{v:.2}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            (v * scale, format!("{text} {}", UNITS[unit]))
        })
        .collect()
}

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_ticks_are_round_and_cover_the_maximum() {
        let values = |max| -> Vec<u64> { count_ticks(max).into_iter().map(|t| t.0).collect() };
        assert_eq!(values(0), [0, 1]);
        assert_eq!(values(3), [0, 1, 2, 3]);
        assert_eq!(values(7), [0, 2, 4, 6, 8]);
        assert_eq!(values(12), [0, 5, 10, 15]);
        assert_eq!(values(100), [0, 20, 40, 60, 80, 100]);
        assert_eq!(count_ticks(7)[1].1, "2");
    }

    #[test]
    fn byte_ticks_use_binary_units() {
        let labels = |max| -> Vec<String> { byte_ticks(max).into_iter().map(|t| t.1).collect() };
        assert_eq!(
            labels(900.0),
            ["0 B", "200 B", "400 B", "600 B", "800 B", "1000 B"]
        );
        assert_eq!(
            labels(3.0 * 1024.0 * 1024.0),
            ["0 MiB", "1 MiB", "2 MiB", "3 MiB"]
        );
        assert_eq!(
            labels(5_000.0),
            ["0 KiB", "1 KiB", "2 KiB", "3 KiB", "4 KiB", "5 KiB"]
        );
        let ticks = byte_ticks(1.2 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(
            ticks[1],
            (0.25 * 1024.0 * 1024.0 * 1024.0, "0.25 GiB".into())
        );
        assert!(ticks.last().unwrap().0 >= 1.2 * 1024.0 * 1024.0 * 1024.0);
        assert!(ticks.len() <= 6);
    }
}
