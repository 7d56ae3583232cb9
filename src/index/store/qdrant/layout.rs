//! How a new collection is spread over a Qdrant cluster.

/// How a new collection is spread over a Qdrant cluster; what is `None` is left to Qdrant (1 shard per node at
/// creation, 1 replica, writes acknowledged by 1 replica). Applied when the collection is created only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterLayout {
    /// `shard_number`: the pieces the collection is cut into.
    pub shards: Option<u32>,
    /// `replication_factor`: the copies of each shard, on different nodes.
    pub replication_factor: Option<u32>,
    /// `write_consistency_factor`: the copies that must apply a write before it is acknowledged.
    pub write_consistency: Option<u32>,
}

impl ClusterLayout {
    /// The settings as the flags that set them, and what an existing collection has instead, for each that
    /// differs.
    pub(super) fn differences(
        &self,
        existing: &qdrant_client::qdrant::CollectionParams,
    ) -> Vec<String> {
        let wanted = [
            (
                "--qdrant-shards",
                "shard_number",
                self.shards,
                Some(existing.shard_number),
            ),
            (
                "--qdrant-replication-factor",
                "replication_factor",
                self.replication_factor,
                Some(existing.replication_factor.unwrap_or(1)),
            ),
            (
                "--qdrant-write-consistency",
                "write_consistency_factor",
                self.write_consistency,
                Some(existing.write_consistency_factor.unwrap_or(1)),
            ),
        ];
        wanted
            .into_iter()
            .filter_map(|(flag, field, wanted, has)| match (wanted, has) {
                (Some(wanted), Some(has)) if wanted != has => Some(format!(
                    "{flag} {wanted} asked for, but the collection has {field} {has}"
                )),
                _ => None,
            })
            .collect()
    }
}
