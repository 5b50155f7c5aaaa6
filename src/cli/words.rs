//! How the CLI words the library's settings and errors: each [`Setting`] as its flag. The
//! library names settings in its own words ([`crate::Setting`]); this is the one place
//! that knows the flags.

use crate::{Error, Setting};

/// The flag (or key) of `setting`: `--target-size`, `delta.targetFileSize`, `AWS_REGION`.
pub fn flag(setting: &Setting) -> String {
    let flag = match setting {
        Setting::TargetFileSize => "--target-size",
        Setting::MinFileSize => "--min-file-size",
        Setting::MaxDeletedRatio => "--max-deleted-ratio",
        Setting::PartitionPredicate => "--where",
        Setting::CurveColumns(curve) => return format!("--{curve}"),
        Setting::CubeSize => "--cube-size",
        Setting::Full => "--full",
        Setting::MemoryLimit => "--memory-limit",
        Setting::SpillDirectory => "--temp-dir",
        Setting::Threads => "--threads",
        Setting::ReadConcurrency => "--read-concurrency",
        Setting::Compression => "--compression",
        Setting::Verify => "--verify",
        Setting::TaskSize => "--task-size",
        Setting::Output => "--out",
        Setting::Version => "--version",
        Setting::ReportColumns => "--columns",
        Setting::UniqueColumns => "--unique",
        Setting::Scratch => "--scratch",
        Setting::PredicateFile => "--predicates",
        Setting::Workload => "--workload",
        Setting::Holdout => "--holdout",
        Setting::FileCost => "--file-cost",
        Setting::MinGain => "--min-gain",
        Setting::MaxRewriteBytes => "--max-rewrite-bytes",
        Setting::MaxDuration => "--max-duration",
        Setting::AllowRegression => "--allow-regression",
        Setting::Layouts => "--layout",
        Setting::Sample => "--sample",
        Setting::TargetSizes => "--target-sizes",
        Setting::Selectivity => "--selectivity",
        Setting::Queries => "--queries",
        Setting::Retain => "--retain",
        Setting::RiskBreakingReaders => "--risk-breaking-readers",
        Setting::TableProperty(key) | Setting::StorageOption(key) => return key.clone(),
        Setting::StorageOptions => "--storage-option",
    };
    flag.to_string()
}

/// An error about a flag of the CLI's own (one the library has no setting for).
#[derive(Debug)]
pub struct FlagError {
    /// The flag, as the user wrote it.
    pub flag: String,
    /// What is wrong with its value.
    pub message: String,
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid value for {}: {}", self.flag, self.message)
    }
}

impl std::error::Error for FlagError {}

/// An invalid value of one of the CLI's own flags.
pub fn bad_flag(flag: &str, message: impl Into<String>) -> anyhow::Error {
    FlagError {
        flag: flag.to_string(),
        message: message.into(),
    }
    .into()
}

/// The library's errors about settings in the CLI's words; `None` for other errors.
pub fn error(err: &anyhow::Error) -> Option<String> {
    Some(match err.downcast_ref::<Error>()? {
        Error::InvalidOption { option, message } => {
            format!("invalid value for {}: {message}", flag(option))
        }
        Error::UnknownColumn {
            column,
            setting,
            message,
        } => format!(
            "column '{column}'{} {message}",
            setting
                .as_ref()
                .map(|s| format!(" in {}", flag(s)))
                .unwrap_or_default()
        ),
        Error::ShortRetention {
            hours,
            table_hours,
            property,
            override_with,
        } => format!(
            "invalid value for {}: {hours} hours is below the table's retention of {table_hours} hours ({property}); files that readers of older versions or running writers still need could be deleted. Pass {} to do it anyway",
            flag(&Setting::Retain),
            flag(override_with)
        ),
        Error::LayoutRegression { allow_with, .. } => {
            let line = err.downcast_ref::<Error>()?.to_string();
            line.replace(&allow_with.to_string(), &flag(allow_with))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_errors_are_worded_with_flags() {
        let err = anyhow::Error::from(Error::invalid_option(
            Setting::TargetFileSize,
            "must be greater than 0",
        ));
        assert_eq!(
            error(&err).unwrap(),
            "invalid value for --target-size: must be greater than 0"
        );
        // The library's own words, for other front ends.
        assert_eq!(
            err.to_string(),
            "invalid value for the target file size: must be greater than 0"
        );
        let err = anyhow::Error::from(Error::UnknownColumn {
            column: "x".into(),
            setting: Some(Setting::CurveColumns(crate::curve::Curve::Hilbert.name())),
            message: "does not exist".into(),
        });
        assert_eq!(
            error(&err).unwrap(),
            "column 'x' in --hilbert does not exist"
        );
        let property = Setting::TableProperty("delta.targetFileSize".into());
        assert_eq!(flag(&property), "delta.targetFileSize");
        assert!(error(&anyhow::anyhow!("other")).is_none());
    }
}
