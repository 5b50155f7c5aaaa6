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
    row(&mut page, "files below target", &|r| {
        format!(
            "{} (target {})",
            r.files_below_target,
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

fn histogram(page: &mut String, report: &LayoutReport) {
    let buckets = &report.size_histogram;
    let max = buckets.iter().map(|b| b.files).max().unwrap_or(1).max(1);
    let bar = if buckets.is_empty() {
        PANEL_WIDTH
    } else {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let n = buckets.len() as f64;
        PANEL_WIDTH / n
    };
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{PANEL_WIDTH}\" height=\"{}\" \
         role=\"img\"><title>file-size histogram, version {}</title>",
        PANEL_HEIGHT / 2.0 + 30.0,
        report.version
    );
    for (i, b) in buckets.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let h = (b.files as f64 / max as f64) * (PANEL_HEIGHT / 2.0 - 10.0);
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let x = i as f64 * bar;
        let _ = write!(
            page,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#4a7fb5\">\
             <title>{} files of {} to {}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\">{}</text>",
            x + 1.0,
            PANEL_HEIGHT / 2.0 - h,
            (bar - 2.0).max(1.0),
            b.files,
            format_size(b.lower_bytes),
            format_size(b.upper_bytes),
            x + bar / 2.0,
            PANEL_HEIGHT / 2.0 + 12.0,
            escape(&format_size(b.lower_bytes)),
        );
    }
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
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{PANEL_WIDTH}\" height=\"{}\" \
         role=\"img\"><title>file ranges of {}, version {version}</title>\
         <rect width=\"{PANEL_WIDTH}\" height=\"{PANEL_HEIGHT}\" fill=\"#f6f6f6\"/>",
        PANEL_HEIGHT + 16.0,
        escape(&layout.column)
    );
    for (i, &(a, b)) in layout.ranges.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let y = i as f64 * step;
        let _ = write!(
            page,
            "<rect x=\"{:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#d9534f\"/>",
            a * PANEL_WIDTH,
            ((b - a) * PANEL_WIDTH).max(1.0),
            (step * 0.8).max(0.3)
        );
    }
    let _ = write!(
        page,
        "<text x=\"0\" y=\"{}\" font-size=\"10\">{}</text>\
         <text x=\"{PANEL_WIDTH}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text></svg>\
         <figcaption>version {version}: {} files with bounds{}{}, ordered by min</figcaption></figure>",
        PANEL_HEIGHT + 12.0,
        escape(&layout.axis_labels.0),
        PANEL_HEIGHT + 12.0,
        escape(&layout.axis_labels.1),
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
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{PANEL_WIDTH}\" height=\"90\" role=\"img\">\
         <title>files skipped, {}, version {}</title>",
        escape(&column.column),
        report.version
    );
    let width = PANEL_WIDTH - 200.0;
    for (i, (name, actual, ideal)) in rows.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "pixels")]
        let y = i as f64 * 42.0 + 4.0;
        let _ = write!(
            page,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">{name}</text>\
             <rect x=\"70\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" fill=\"#5cb85c\"><title>skipped {:.1}%</title></rect>\
             <rect x=\"70\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" fill=\"#bbb\"><title>ideal {:.1}%</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{:.1}% (ideal {:.1}%)</text>",
            y + 12.0,
            actual * width,
            actual * 100.0,
            y + 18.0,
            ideal * width,
            ideal * 100.0,
            70.0 + width + 4.0,
            y + 12.0,
            actual * 100.0,
            ideal * 100.0
        );
    }
    let _ = write!(
        page,
        "</svg><figcaption>version {}: share of files skipped (green) against the ideal (grey)</figcaption></figure>",
        report.version
    );
}

/// Escapes text for HTML content and attribute values.
fn escape(text: &str) -> String {
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
