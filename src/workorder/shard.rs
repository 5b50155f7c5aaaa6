//! Sharded work orders: an order's input files split over several documents, so that a worker
//! reads only the files of its bins.
//!
//! An order holds about 0.5 KB per input file (its `add` action with stats), so at a million
//! files one document would weigh 0.5 to 3 GB, read whole by every worker. A sharded order is a
//! *head* document (a [`WorkOrder`] whose `files` is empty and whose `shards` lists the shard
//! documents) and shard documents of at most `files_per_shard` consecutive input files each
//! (kind [`SHARD_KIND`]). The head keeps the plan, whose bins index the files by their
//! position in the whole order, so a worker reads the head, then only the shards that hold its
//! bins' files. Each shard's fingerprint is in the head, and the head's fingerprint covers
//! them, so a shard altered, swapped or taken from another order is refused.
//!
//! Shards are written beside the head (`plan.json` -> `plan.files-00000.json`, ...), before it,
//! so a head that can be read has its shards in place. Source: `../shared/SCALEOUT.md` §2.1
//! (the plan is a file, sharded, a task carries only the plan's URI and its bin ids).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, OrderFile, WorkOrder, digest, parse_document};
use crate::error::{Error, Result};
use crate::table::StorageOptions;

/// The `kind` of a shard document of a sharded work order.
pub const SHARD_KIND: &str = "delta-layout.plan-files";
/// Default input files per shard document ([`write_order`]): about 5 MB of JSON with a few
/// stats columns. Orders with no more files are written as one document.
pub const DEFAULT_FILES_PER_SHARD: usize = 10_000;

/// A shard of a sharded order, as its head lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileShard {
    /// The shard document's file name, beside the head (`plan.files-00000.json`).
    pub name: String,
    /// Position in the whole order of the shard's first file.
    pub first_file: usize,
    /// How many files the shard holds (consecutive positions from `first_file`).
    pub files: usize,
    /// The shard document's fingerprint ([`ShardDocument::compute_fingerprint`]).
    pub fingerprint: String,
}

/// A shard document: consecutive input files of a sharded order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardDocument {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// [`SHARD_KIND`].
    pub kind: String,
    /// The order's run id.
    pub run_id: String,
    /// Position in the whole order of the first file.
    pub first_file: usize,
    /// The files.
    pub files: Vec<OrderFile>,
    /// xxHash64 (16 hex digits) of the run id, first position and files, keys sorted.
    pub fingerprint: String,
}

impl ShardDocument {
    /// The fingerprint of the shard's content.
    ///
    /// # Errors
    /// [`Error::Json`] when it cannot be serialized.
    pub fn compute_fingerprint(&self) -> Result<String> {
        let value = serde_json::to_value((&self.run_id, self.first_file, &self.files)).map_err(
            |source| Error::Json {
                context: "fingerprinting a work order shard".into(),
                source,
            },
        )?;
        Ok(digest(&value))
    }
}

impl WorkOrder {
    /// Splits the order into a head and shard documents of at most `files_per_shard` files
    /// each, named after `name` (the head's file name: `plan.json` -> `plan.files-00000.json`).
    /// The head's fingerprint is new: results of the sharded order carry it. An order with no
    /// more than `files_per_shard` files, or `files_per_shard` 0, stays one document (no
    /// shards).
    ///
    /// # Errors
    /// [`Error::Json`] when a document cannot be serialized.
    pub fn shard(
        &self,
        files_per_shard: usize,
        name: &str,
    ) -> Result<(WorkOrder, Vec<ShardDocument>)> {
        if files_per_shard == 0 || self.files.len() <= files_per_shard || !self.shards.is_empty() {
            return Ok((self.clone(), Vec::new()));
        }
        let file = name.rsplit('/').next().unwrap_or(name);
        let stem = if file.to_ascii_lowercase().ends_with(".json") {
            &file[..file.len() - ".json".len()]
        } else {
            file
        };
        let mut head = self.clone();
        head.files = Vec::new();
        let mut shards = Vec::new();
        for (number, (first, end)) in self.shard_ranges(files_per_shard).into_iter().enumerate() {
            let chunk = &self.files[first..end];
            let mut shard = ShardDocument {
                format_version: FORMAT_VERSION,
                kind: SHARD_KIND.to_string(),
                run_id: self.plan.run_id.clone(),
                first_file: first,
                files: chunk.to_vec(),
                fingerprint: String::new(),
            };
            shard.fingerprint = shard.compute_fingerprint()?;
            head.shards.push(FileShard {
                name: format!("{stem}.files-{number:05}.json"),
                first_file: shard.first_file,
                files: chunk.len(),
                fingerprint: shard.fingerprint.clone(),
            });
            shards.push(shard);
        }
        head.fingerprint = head.compute_fingerprint()?;
        Ok((head, shards))
    }

    /// The file ranges `[first, end)` of the shards: consecutive, at most `files_per_shard`
    /// files each, cut between bins where a bin fits (files are in bin order, so a bin of at
    /// most `files_per_shard` files lies in one shard), and inside a larger bin every
    /// `files_per_shard` files.
    fn shard_ranges(&self, files_per_shard: usize) -> Vec<(usize, usize)> {
        let total = self.files.len();
        let mut ranges = Vec::new();
        let (mut start, mut end) = (0, 0);
        let bin_ends = self
            .plan
            .bins()
            .filter_map(|b| b.files.iter().max().map(|&i| i + 1))
            .chain(std::iter::once(total));
        for bin_end in bin_ends {
            let bin_end = bin_end.min(total);
            if bin_end <= end {
                continue;
            }
            if bin_end - start > files_per_shard && end > start {
                ranges.push((start, end));
                start = end;
            }
            end = bin_end;
            while end - start > files_per_shard {
                ranges.push((start, start + files_per_shard));
                start += files_per_shard;
            }
        }
        if end > start {
            ranges.push((start, end));
        }
        ranges
    }

    /// The positions of the files the bins `bin_ids` read.
    fn files_of(&self, bin_ids: &BTreeSet<usize>) -> BTreeSet<usize> {
        self.plan
            .bins()
            .filter(|b| bin_ids.contains(&b.id))
            .flat_map(|b| b.files.iter().copied())
            .collect()
    }

    /// The order of a head and the shards it lists, restricted to `bin_ids` (all of the plan's
    /// when `None`): the plan keeps those bins only, and `files` the files they read,
    /// re-indexed. `shards` maps a shard's position in [`WorkOrder::shards`] to its document.
    fn assemble(
        mut self,
        bin_ids: Option<&BTreeSet<usize>>,
        shards: &BTreeMap<usize, ShardDocument>,
    ) -> Result<WorkOrder> {
        if let Some(bin_ids) = bin_ids {
            let before = self.plan.bins().count();
            for partition in &mut self.plan.partitions {
                partition.bins.retain(|b| bin_ids.contains(&b.id));
            }
            self.plan.partitions.retain(|p| !p.bins.is_empty());
            self.partial = self.plan.bins().count() < before;
        }
        let all: BTreeSet<usize> = self.plan.bins().map(|b| b.id).collect();
        let wanted = self.files_of(&all);
        let mut position = BTreeMap::new();
        let mut files = Vec::with_capacity(wanted.len());
        for &index in &wanted {
            let shard = self
                .shards
                .iter()
                .position(|s| (s.first_file..s.first_file + s.files).contains(&index))
                .and_then(|s| shards.get(&s))
                .ok_or_else(|| Error::WorkOrder {
                    document: format!("the work order of run {}", self.plan.run_id),
                    message: format!("lists no shard holding its input file {index}"),
                })?;
            files.push(shard.files[index - shard.first_file].clone());
            position.insert(index, files.len() - 1);
        }
        for partition in &mut self.plan.partitions {
            for bin in &mut partition.bins {
                for index in &mut bin.files {
                    *index = position[index];
                }
            }
        }
        self.files = files;
        self.shards = Vec::new();
        Ok(self)
    }
}

/// Writes `order` to `location` (see [`super::write_document`]): as one document, or, when
/// it has more than `files_per_shard` input files (0: never), as a head at `location` and
/// shard documents beside it, written first. Returns the order as written: its fingerprint is
/// the one results must carry.
///
/// # Errors
/// As [`super::write_document`]; [`Error::Json`].
pub async fn write_order(
    order: &WorkOrder,
    location: &str,
    storage_options: &StorageOptions,
    files_per_shard: usize,
) -> Result<WorkOrder> {
    let (head, shards) = order.shard(files_per_shard, location)?;
    // Every place first: the order is written whole or not at all.
    for listed in &head.shards {
        super::document::check_writable(&beside(location, &listed.name), storage_options)?;
    }
    super::document::check_writable(location, storage_options)?;
    for (shard, listed) in shards.iter().zip(&head.shards) {
        let text = serde_json::to_string(shard).map_err(|source| Error::Json {
            context: "writing a work order shard".into(),
            source,
        })?;
        super::write_document(&beside(location, &listed.name), storage_options, &text).await?;
    }
    let text = if head.shards.is_empty() {
        head.to_json()?
    } else {
        // Machines read it: compact (a bin lists its files' positions).
        serde_json::to_string(&head).map_err(|source| Error::Json {
            context: "writing the work order".into(),
            source,
        })?
    };
    super::write_document(location, storage_options, &text).await?;
    Ok(head)
}

/// Reads the work order at `location` for the bins `bin_ids` (all when `None`): the head (or
/// the only document), then the shards that hold those bins' files, each checked against the
/// head. The order returned holds those bins and their files only (re-indexed), and the
/// head's fingerprint; read for some bins, it executes them but is refused by
/// [`super::commit`].
///
/// # Errors
/// [`Error::WorkOrder`] when a document cannot be read or is not valid (see
/// [`WorkOrder::from_json`]), a bin is not in the plan, or a shard is not the one the head
/// lists (altered, swapped, or of another order).
pub async fn read_order(
    location: &str,
    storage_options: &StorageOptions,
    bin_ids: Option<&[usize]>,
) -> Result<WorkOrder> {
    let text = super::read_document(location, storage_options, "work order").await?;
    let order = WorkOrder::from_json(&text, location)?;
    let wanted: Option<BTreeSet<usize>> = bin_ids.map(|ids| ids.iter().copied().collect());
    if let Some(wanted) = &wanted {
        order.check_bins(wanted)?;
    }
    if order.shards.is_empty() {
        return Ok(order);
    }
    let all: BTreeSet<usize> = order.plan.bins().map(|b| b.id).collect();
    let files = order.files_of(wanted.as_ref().unwrap_or(&all));
    let mut documents = BTreeMap::new();
    for (number, listed) in order.shards.iter().enumerate() {
        if files
            .range(listed.first_file..listed.first_file + listed.files)
            .next()
            .is_none()
        {
            continue;
        }
        documents.insert(
            number,
            read_shard(location, storage_options, &order, listed).await?,
        );
    }
    order.assemble(wanted.as_ref(), &documents)
}

async fn read_shard(
    location: &str,
    storage_options: &StorageOptions,
    order: &WorkOrder,
    listed: &FileShard,
) -> Result<ShardDocument> {
    let name = shard_name(&listed.name).map_err(|message| Error::WorkOrder {
        document: format!("work order '{location}'"),
        message,
    })?;
    let shard_location = beside(location, name);
    let text = super::read_document(&shard_location, storage_options, "work order shard").await?;
    let document = format!("work order shard '{shard_location}'");
    let shard: ShardDocument = parse_document(&text, SHARD_KIND, &document, "work order shard")?;
    let wrong = |message: String| Error::WorkOrder {
        document: document.clone(),
        message,
    };
    if shard.run_id != order.plan.run_id {
        return Err(wrong(format!(
            "belongs to run {}, not to run {}; plan again",
            shard.run_id, order.plan.run_id
        )));
    }
    let computed = shard.compute_fingerprint()?;
    if computed != listed.fingerprint
        || shard.fingerprint != listed.fingerprint
        || shard.first_file != listed.first_file
        || shard.files.len() != listed.files
    {
        return Err(wrong(format!(
            "is not the shard the work order lists (fingerprint {} listed, {computed} computed); it was altered or replaced: plan again",
            listed.fingerprint
        )));
    }
    Ok(shard)
}

/// A shard name from a head: a plain `.json` file name, so that it resolves beside the head.
fn shard_name(name: &str) -> std::result::Result<&str, String> {
    if name.is_empty()
        || name.contains(['/', '\\', '?', '#'])
        || name == "."
        || name == ".."
        || !name.ends_with(".json")
    {
        return Err(format!(
            "lists a shard named '{name}', which is not a file name ending in .json"
        ));
    }
    Ok(name)
}

/// `name` in the directory (or object prefix) of `location`.
fn beside(location: &str, name: &str) -> String {
    match location.rfind('/') {
        Some(slash) => format!("{}{name}", &location[..=slash]),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_resolve_beside_the_head() {
        assert_eq!(
            beside("plan.json", "plan.files-00000.json"),
            "plan.files-00000.json"
        );
        assert_eq!(
            beside("s3://bucket/runs/plan.json", "plan.files-00001.json"),
            "s3://bucket/runs/plan.files-00001.json"
        );
        assert_eq!(
            beside("/tmp/a/p.json", "p.files-00002.json"),
            "/tmp/a/p.files-00002.json"
        );
        assert!(shard_name("../x.json").is_err());
        assert!(shard_name("a/b.json").is_err());
        assert!(shard_name("x.parquet").is_err());
        assert!(shard_name("plan.files-00000.json").is_ok());
    }
}
