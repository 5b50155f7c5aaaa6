//! Byte sizes as users write them (`64MiB`, `1GB`, `1048576`) and as people read them, and
//! durations (`90s`, `1h30m`).

use crate::error::{Error, Result};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;
const PIB: u64 = 1 << 50;

/// Parses a size in bytes.
///
/// Accepted forms: a plain non-negative integer (bytes), or a number (decimals allowed)
/// followed by a unit, case-insensitive, with optional whitespace between:
///
/// | unit | bytes |
/// |---|---|
/// | `B` | 1 |
/// | `K`, `KB`, `KiB` | 2^10 |
/// | `M`, `MB`, `MiB` | 2^20 |
/// | `G`, `GB`, `GiB` | 2^30 |
/// | `T`, `TB`, `TiB` | 2^40 |
/// | `P`, `PB`, `PiB` | 2^50 |
///
/// Every unit is a power of 1024, as Spark's `JavaUtils.byteStringAsBytes` reads table
/// properties such as `delta.targetFileSize = '100mb'` (104,857,600 bytes) and as Databricks
/// users write them. Unlike Spark, a fraction is accepted (`1.5g`), rounded to whole bytes.
///
/// # Errors
/// [`Error::InvalidOption`] naming `option` when the text is empty, negative, has an unknown
/// unit, or overflows `u64`.
///
/// # Examples
/// ```
/// use delta_layout::Setting;
/// use delta_layout::size::parse_size;
/// assert_eq!(parse_size(Setting::TargetFileSize, "64MiB")?, 64 << 20);
/// assert_eq!(parse_size(Setting::TargetFileSize, "1GB")?, 1 << 30);
/// let property = Setting::TableProperty("delta.targetFileSize".into());
/// assert_eq!(parse_size(property, "100mb")?, 104_857_600);
/// assert_eq!(parse_size(Setting::TargetFileSize, "1.5k")?, 1536);
/// assert_eq!(parse_size(Setting::TargetFileSize, "4096")?, 4096);
/// # Ok::<(), delta_layout::Error>(())
/// ```
pub fn parse_size(option: crate::Setting, text: &str) -> Result<u64> {
    let bad = |message: String| Error::invalid_option(option.clone(), message);
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(bad(format!(
            "'{text}' is not a size (expected bytes or a number with a unit such as 64MiB or 1GB)"
        )));
    }
    let multiplier = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => TIB,
        "p" | "pb" | "pib" => PIB,
        other => {
            return Err(bad(format!(
                "unknown unit '{other}' in '{text}' (use B, K, M, G, T, P, optionally followed by B or iB; all powers of 1024)"
            )));
        }
    };
    if multiplier == 1 && number.contains('.') {
        return Err(bad(format!("'{text}' is not a whole number of bytes")));
    }
    if let Ok(whole) = number.parse::<u64>() {
        return whole
            .checked_mul(multiplier)
            .ok_or_else(|| bad(format!("'{text}' does not fit in 64 bits")));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| bad(format!("'{number}' is not a number")))?;
    #[expect(
        clippy::cast_precision_loss,
        reason = "units are at most 2^50, exact in f64"
    )]
    let bytes = (value * multiplier as f64).round();
    if !(0.0..=9.0e18).contains(&bytes) {
        return Err(bad(format!("'{text}' does not fit in 64 bits")));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "range checked just above"
    )]
    Ok(bytes as u64)
}

/// `n` followed by `noun`, plural unless `n` is 1: `1 file`, `2 files`, `0 files`.
///
/// # Examples
/// ```
/// assert_eq!(delta_layout::size::count(1, "file"), "1 file");
/// assert_eq!(delta_layout::size::count(3, "small file"), "3 small files");
/// ```
#[must_use]
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Formats `bytes` for people: `512 B`, `1.5 KiB`, `64.0 MiB`, `1.2 GiB` (binary units).
///
/// # Examples
/// ```
/// assert_eq!(delta_layout::size::format_size(64 << 20), "64.0 MiB");
/// assert_eq!(delta_layout::size::format_size(100), "100 B");
/// ```
#[must_use]
pub fn format_size(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let value = bytes as f64;
    match bytes {
        b if b < KIB => format!("{b} B"),
        b if b < MIB => format!("{:.1} KiB", value / 1024.0),
        b if b < GIB => format!("{:.1} MiB", value / 1_048_576.0),
        b if b < TIB => format!("{:.1} GiB", value / 1_073_741_824.0),
        _ => format!("{:.1} TiB", value / 1_099_511_627_776.0),
    }
}

/// `bytes` as a size option takes it, exactly: `1GiB`, `64MiB`, `48KiB` when a whole number
/// of the unit, else the plain number of bytes; [`parse_size`] reads it back to `bytes`.
#[must_use]
pub fn exact_size(bytes: u64) -> String {
    for (unit, name) in [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// A byte count that is an average or an estimate (`f64`), rounded to whole bytes: 0 below
/// 0, `u64::MAX` above it.
#[must_use]
pub fn whole_bytes(bytes: f64) -> u64 {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "rounded, and saturating as float-to-int casts do"
    )]
    let whole = bytes.max(0.0).round() as u64;
    whole
}

/// Parses a duration: a plain non-negative number (seconds), or one or more parts of a
/// number (decimals allowed) and a unit, case-insensitive, written together or apart:
/// `ms`, `s` (`sec`), `m` (`min`), `h` (`hr`), `d` (`day`), e.g. `90s`, `45m`, `1h30m`,
/// `2.5h`. Units as systemd's `systemd.time` and Go's `time.ParseDuration` write them.
///
/// # Errors
/// [`Error::InvalidOption`] naming `option` when the text is empty, negative, has an
/// unknown unit or a unit without a number, or does not fit.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use delta_layout::Setting;
/// use delta_layout::size::parse_duration;
/// assert_eq!(parse_duration(Setting::MaxDuration, "90")?, Duration::from_secs(90));
/// assert_eq!(parse_duration(Setting::MaxDuration, "1h30m")?, Duration::from_secs(5400));
/// assert_eq!(parse_duration(Setting::MaxDuration, "2.5 h")?, Duration::from_secs(9000));
/// assert_eq!(parse_duration(Setting::MaxDuration, "250ms")?, Duration::from_millis(250));
/// assert!(parse_duration(Setting::MaxDuration, "3 weeks").is_err());
/// # Ok::<(), delta_layout::Error>(())
/// ```
pub fn parse_duration(option: crate::Setting, text: &str) -> Result<std::time::Duration> {
    let bad = |why: &str| {
        Error::invalid_option(
            option.clone(),
            format!("'{text}' is not a duration ({why}; e.g. 90s, 45m, 1h30m, 2d)"),
        )
    };
    let lower = text.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(bad("empty"));
    }
    if let Ok(seconds) = lower.parse::<f64>() {
        return if seconds.is_finite() && seconds >= 0.0 {
            std::time::Duration::try_from_secs_f64(seconds).map_err(|_| bad("too long"))
        } else {
            Err(bad("negative or not a number"))
        };
    }
    let mut total = 0.0_f64;
    let mut rest = lower.as_str();
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end]
            .parse()
            .map_err(|_| bad("a unit needs a number before it"))?;
        rest = rest[number_end..].trim_start();
        let unit_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "" => return Err(bad("a number needs a unit after it")),
            _ => return Err(bad("unknown unit")),
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    std::time::Duration::try_from_secs_f64(total).map_err(|_| bad("too long"))
}

/// Parses a retention (`vacuum --retain`) into hours: a plain number is hours (`168`, `0.5`),
/// as Delta's `VACUUM ... RETAIN n HOURS` counts them; anything else is a duration with units
/// as [`parse_duration`] reads them (`7d`, `168h`, `36h30m`).
///
/// # Errors
/// [`Error::InvalidOption`] naming `option` for a negative or non-finite number, or a text
/// [`parse_duration`] refuses.
///
/// # Examples
/// ```
/// use delta_layout::Setting;
/// use delta_layout::size::parse_retention_hours;
/// assert_eq!(parse_retention_hours(Setting::Retain, "168")?, 168.0);
/// assert_eq!(parse_retention_hours(Setting::Retain, "7d")?, 168.0);
/// assert_eq!(parse_retention_hours(Setting::Retain, "90m")?, 1.5);
/// assert!(parse_retention_hours(Setting::Retain, "7x").is_err());
/// assert!(parse_retention_hours(Setting::Retain, "-1").is_err());
/// # Ok::<(), delta_layout::Error>(())
/// ```
pub fn parse_retention_hours(option: crate::Setting, text: &str) -> Result<f64> {
    if let Ok(hours) = text.trim().parse::<f64>() {
        return if hours.is_finite() && hours >= 0.0 {
            Ok(hours + 0.0)
        } else {
            Err(Error::invalid_option(
                option,
                format!("'{text}' is not a number of hours of 0 or more"),
            ))
        };
    }
    Ok(parse_duration(option, text)?.as_secs_f64() / 3600.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sizes_read_back() {
        for bytes in [
            0,
            1,
            1000,
            1024,
            48 << 10,
            64 << 20,
            1 << 30,
            3 << 40,
            (1 << 30) + 1,
        ] {
            let text = exact_size(bytes);
            assert_eq!(
                parse_size(crate::Setting::TargetFileSize, &text).unwrap(),
                bytes,
                "{text}"
            );
        }
        assert_eq!(exact_size(64 << 20), "64MiB");
        assert_eq!(exact_size(1536), "1536");
    }

    #[test]
    fn parses_units_and_plain_bytes() {
        struct Case {
            text: &'static str,
            bytes: u64,
        }
        for Case { text, bytes } in [
            Case {
                text: "0",
                bytes: 0,
            },
            Case {
                text: "1048576",
                bytes: 1_048_576,
            },
            Case {
                text: "64MiB",
                bytes: 64 * MIB,
            },
            Case {
                text: "64 mib",
                bytes: 64 * MIB,
            },
            Case {
                text: "1GB",
                bytes: GIB,
            },
            Case {
                text: "100mb",
                bytes: 104_857_600,
            },
            Case {
                text: "1p",
                bytes: PIB,
            },
            Case {
                text: "1g",
                bytes: GIB,
            },
            Case {
                text: "2TiB",
                bytes: 2 * TIB,
            },
            Case {
                text: "0.5KiB",
                bytes: 512,
            },
            Case {
                text: "10B",
                bytes: 10,
            },
            Case {
                text: "3kb",
                bytes: 3 * KIB,
            },
        ] {
            assert_eq!(
                parse_size(crate::Setting::MinFileSize, text).unwrap(),
                bytes,
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_bad_sizes_naming_the_option() {
        for text in [
            "",
            "MiB",
            "-1",
            "12 parsecs",
            "1.2.3MiB",
            "99999999999999999999",
            "20000000TiB",
        ] {
            let err = parse_size(crate::Setting::TargetFileSize, text).unwrap_err();
            assert!(
                matches!(
                    &err,
                    Error::InvalidOption {
                        option: crate::Setting::TargetFileSize,
                        ..
                    }
                ),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(3 * GIB), "3.0 GiB");
    }
}
