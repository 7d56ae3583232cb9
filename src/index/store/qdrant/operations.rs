//! The store's operations on its collection: created or checked, listed, written file by file, searched
//! without half-rewritten files.

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use futures::{FutureExt, future::BoxFuture};
use qdrant_client::{
    Payload,
    qdrant::{
        Condition, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder, DeletePointsBuilder,
        Distance, FieldType, Filter, PayloadIncludeSelector, PointId, PointStruct, PointsSelector,
        PointsUpdateOperation, QueryPointsBuilder, ScrollPointsBuilder, UpdateBatchPointsBuilder,
        VectorParamsBuilder,
        points_selector::PointsSelectorOneOf,
        points_update_operation::{DeletePoints, Operation, PointStructList, SetPayload},
        vectors_config,
    },
};

use super::{
    client::{QdrantStore, already_exists},
    payload::{META_FIELDS, meta_from_payload, payload_of, point_id_string, string_field},
};
use crate::index::store::{
    CollectionInfo, FileChanges, SearchFilter, SearchHit, StoreError, StoreKind, StoredPoint,
    VectorStore,
};

const SCROLL_PAGE: u32 = 1000;

impl QdrantStore {
    /// `info` when its vectors are `dimension`-sized, else what is wrong and how to fix it.
    fn check_dimension(
        &self,
        info: CollectionInfo,
        dimension: usize,
    ) -> Result<CollectionInfo, StoreError> {
        if info.dimension != dimension {
            return Err(StoreError::DimensionMismatch {
                collection: self.collection.clone(),
                stored: info.dimension,
                configured: dimension,
                fix: format!(
                    "delete the collection with `curl -X DELETE {}` on Qdrant's REST port (usually 6333) and \
                     index again",
                    rest_collection_url(&self.nodes[0].url, &self.collection)
                ),
            });
        }
        Ok(info)
    }

    fn path_filter(paths: &[String]) -> Filter {
        Filter::should(paths.iter().map(|p| Condition::matches("path", p.clone())))
    }
}

/// How long a query that saw a file in two versions keeps asking again: a batch of files applied by a busy
/// Qdrant can take hundreds of milliseconds, and on a starved machine one file of it has stayed half-applied
/// for over 3 s; each retry may also land inside another file of the batch.
const MIXED_VERSION_PATIENCE: Duration = Duration::from_secs(10);
/// The first pause before asking again; each pause doubles, up to [`MIXED_VERSION_LONGEST_PAUSE`].
const MIXED_VERSION_FIRST_PAUSE: Duration = Duration::from_millis(5);
const MIXED_VERSION_LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// The paths of `points` that hold chunks of one file written in two versions of it (at rest, every chunk of
/// a file carries the file's one hash).
fn mixed_paths(points: &[qdrant_client::qdrant::ScoredPoint]) -> HashSet<String> {
    let mut versions: HashMap<String, String> = HashMap::new();
    let mut mixed = HashSet::new();
    for point in points {
        let hash = string_field(&point.payload, "file_hash");
        let path = string_field(&point.payload, "path");
        if *versions.entry(path.clone()).or_insert_with(|| hash.clone()) != hash {
            mixed.insert(path);
        }
    }
    mixed
}

impl VectorStore for QdrantStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Qdrant
    }

    fn location(&self) -> String {
        self.location_text()
    }

    fn collection(&self) -> &str {
        &self.collection
    }

    fn ensure_collection(
        &self,
        dimension: usize,
    ) -> BoxFuture<'_, Result<CollectionInfo, StoreError>> {
        async move {
            if let Some(info) = self.collection_info().await? {
                return self.check_dimension(info, dimension);
            }
            let mut create = CreateCollectionBuilder::new(&self.collection)
                .vectors_config(VectorParamsBuilder::new(dimension as u64, Distance::Cosine));
            if let Some(shards) = self.layout.shards {
                create = create.shard_number(shards);
            }
            if let Some(replication) = self.layout.replication_factor {
                create = create.replication_factor(replication);
            }
            if let Some(consistency) = self.layout.write_consistency {
                create = create.write_consistency_factor(consistency);
            }
            let cannot_create = format!("cannot create collection '{}': ", self.collection);
            let created = self
                .on_a_node(&cannot_create, |c| {
                    let create = create.clone();
                    async move {
                        match c.create_collection(create).await {
                            Ok(_) => Ok(true),
                            Err(e) if already_exists(&e) => Ok(false),
                            Err(e) => Err(e),
                        }
                    }
                    .boxed()
                })
                .await?;
            if !created {
                // Another server indexing the same project created it since we looked: use theirs.
                let info = self
                    .collection_info()
                    .await?
                    .ok_or_else(|| StoreError::Qdrant {
                        url: self.location_text(),
                        message: format!(
                            "collection '{}' was reported to exist, then not found",
                            self.collection
                        ),
                    })?;
                return self.check_dimension(info, dimension);
            }
            let path_index = CreateFieldIndexCollectionBuilder::new(
                &self.collection,
                "path",
                FieldType::Keyword,
            )
            .wait(true);
            self.on_a_node("cannot index field 'path': ", |c| {
                c.create_field_index(path_index.clone()).boxed()
            })
            .await?;
            tracing::info!(collection = %self.collection, dimension, url = %self.location_text(),
                layout = ?self.layout, "created Qdrant collection");
            Ok(CollectionInfo {
                name: self.collection.clone(),
                dimension,
                points: 0,
                notes: Vec::new(),
            })
        }
        .boxed()
    }

    fn collection_info(&self) -> BoxFuture<'_, Result<Option<CollectionInfo>, StoreError>> {
        async move {
            let exists = self
                .on_a_node("", |c| c.collection_exists(self.collection.clone()).boxed())
                .await?;
            if !exists {
                return Ok(None);
            }
            let response = self
                .on_a_node("", |c| c.collection_info(self.collection.clone()).boxed())
                .await?;
            let info = response.result.unwrap_or_default();
            let dimension = info
                .config
                .as_ref()
                .and_then(|c| c.params.as_ref())
                .and_then(|p| p.vectors_config.as_ref())
                .and_then(|v| v.config.as_ref())
                .and_then(|c| match c {
                    vectors_config::Config::Params(params) => Some(params.size as usize),
                    vectors_config::Config::ParamsMap(_) => None,
                })
                .ok_or_else(|| StoreError::Qdrant {
                    url: self.location_text(),
                    message: format!(
                        "collection '{}' has named vectors; expected a single unnamed vector",
                        self.collection
                    ),
                })?;
            let notes = info
                .config
                .as_ref()
                .and_then(|c| c.params.as_ref())
                .map(|params| {
                    self.layout
                        .differences(params)
                        .into_iter()
                        .map(|difference| {
                            format!(
                                "collection '{}' already exists: {difference}; the layout flags apply when a \
                                 collection is created (change an existing one with Qdrant's cluster API)",
                                self.collection
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok(Some(CollectionInfo {
                name: self.collection.clone(),
                dimension,
                points: info.points_count.unwrap_or(0),
                notes,
            }))
        }
        .boxed()
    }

    fn list_points(&self) -> BoxFuture<'_, Result<Vec<StoredPoint>, StoreError>> {
        async move {
            let mut points = Vec::new();
            let mut offset: Option<PointId> = None;
            loop {
                let mut request = ScrollPointsBuilder::new(&self.collection)
                    .limit(SCROLL_PAGE)
                    .with_payload(PayloadIncludeSelector::from(
                        META_FIELDS
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                    ))
                    .with_vectors(false);
                if let Some(offset) = offset.take() {
                    request = request.offset(offset);
                }
                let page = self
                    .on_a_node("", |c| c.scroll(request.clone()).boxed())
                    .await?;
                points.extend(page.result.iter().map(|p| StoredPoint {
                    id: point_id_string(p.id.as_ref()),
                    meta: meta_from_payload(&p.payload),
                }));
                match page.next_page_offset {
                    Some(next) if !page.result.is_empty() => offset = Some(next),
                    _ => break,
                }
            }
            Ok(points)
        }
        .boxed()
    }

    fn apply(&self, files: Vec<FileChanges>) -> BoxFuture<'_, Result<u64, StoreError>> {
        async move {
            // One batch request, each file's operations in order: its new points, its moved lines, its stale
            // points gone, its stamp. Qdrant applies them in that order, together.
            let mut operations = Vec::new();
            let mut deleted = 0u64;
            for file in files {
                if !file.upserts.is_empty() {
                    let points = file
                        .upserts
                        .iter()
                        .map(|p| PointStruct::new(p.id.clone(), p.vector.clone(), payload_of(p)))
                        .collect();
                    operations.push(Operation::Upsert(PointStructList {
                        points,
                        ..Default::default()
                    }));
                }
                for m in file.moves {
                    let mut payload = Payload::with_capacity(2);
                    payload.insert("start_line", i64::from(m.start_line));
                    payload.insert("end_line", i64::from(m.end_line));
                    operations.push(Operation::SetPayload(SetPayload {
                        payload: payload.into(),
                        points_selector: Some(PointsSelector::from(vec![PointId::from(m.id)])),
                        ..Default::default()
                    }));
                }
                if !file.stale_ids.is_empty() {
                    deleted += file.stale_ids.len() as u64;
                    let ids: Vec<PointId> = file.stale_ids.into_iter().map(PointId::from).collect();
                    operations.push(Operation::DeletePoints(DeletePoints {
                        points: Some(PointsSelector::from(ids)),
                        ..Default::default()
                    }));
                }
                if let Some(stamp) = file.stamp {
                    let mut payload = Payload::with_capacity(2);
                    payload.insert("file_hash", stamp.file_hash.as_str());
                    payload.insert("file_chunks", i64::from(stamp.file_chunks));
                    operations.push(Operation::SetPayload(SetPayload {
                        payload: payload.into(),
                        points_selector: Some(
                            PointsSelectorOneOf::from(Self::path_filter(std::slice::from_ref(
                                &stamp.path,
                            )))
                            .into(),
                        ),
                        ..Default::default()
                    }));
                }
            }
            if operations.is_empty() {
                return Ok(0);
            }
            let operations: Vec<PointsUpdateOperation> = operations
                .into_iter()
                .map(|operation| PointsUpdateOperation {
                    operation: Some(operation),
                })
                .collect();
            let request = UpdateBatchPointsBuilder::new(&self.collection, operations).wait(true);
            self.on_a_node("", |c| c.update_points_batch(request.clone()).boxed())
                .await?;
            Ok(deleted)
        }
        .boxed()
    }

    fn delete_paths(&self, paths: Vec<String>) -> BoxFuture<'_, Result<u64, StoreError>> {
        async move {
            if paths.is_empty() {
                return Ok(0);
            }
            let filter = Self::path_filter(&paths);
            let counting = qdrant_client::qdrant::CountPointsBuilder::new(&self.collection)
                .filter(filter.clone())
                .exact(true);
            let count = self
                .on_a_node("", |c| c.count(counting.clone()).boxed())
                .await?
                .result
                .map(|r| r.count)
                .unwrap_or(0);
            let request = DeletePointsBuilder::new(&self.collection)
                .points(filter)
                .wait(true);
            self.on_a_node("", |c| c.delete_points(request.clone()).boxed())
                .await?;
            Ok(count)
        }
        .boxed()
    }

    fn search(
        &self,
        vector: Vec<f32>,
        k: usize,
        filter: SearchFilter,
    ) -> BoxFuture<'_, Result<Vec<SearchHit>, StoreError>> {
        async move {
            let mut must = Vec::new();
            if !filter.languages.is_empty() {
                must.push(Condition::matches("language", filter.languages.clone()));
            }
            if !filter.paths.is_empty() {
                must.push(Condition::matches("path", filter.paths.clone()));
            }
            let mut request = QueryPointsBuilder::new(&self.collection)
                .query(vector)
                .limit(k as u64)
                .with_payload(true);
            if !must.is_empty() {
                request = request.filter(Filter::must(must));
            }
            // Qdrant applies a file's changes as one request but not as one transaction: a query landing inside
            // it can see chunks of both versions of a file, which their file hashes tell apart. Asked again a
            // moment later, it sees the file whole; a file still mixed after that is left out of the answer
            // rather than given half of each version.
            let asked = Instant::now();
            let mut pause = MIXED_VERSION_FIRST_PAUSE;
            let mut points = self
                .on_a_node("", |c| c.query(request.clone()).boxed())
                .await?
                .result;
            let mut mixed = mixed_paths(&points);
            while !mixed.is_empty() && asked.elapsed() < MIXED_VERSION_PATIENCE {
                tracing::debug!(
                    files = mixed.len(),
                    "files were being rewritten during the query; asking again"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MIXED_VERSION_LONGEST_PAUSE);
                points = self
                    .on_a_node("", |c| c.query(request.clone()).boxed())
                    .await?
                    .result;
                mixed = mixed_paths(&points);
            }
            if !mixed.is_empty() {
                tracing::warn!(
                    files = ?mixed,
                    waited_ms = asked.elapsed().as_millis() as u64,
                    "files still being rewritten after waiting: left out of this query's answer"
                );
                points.retain(|p| !mixed.contains(&string_field(&p.payload, "path")));
            }
            Ok(points
                .into_iter()
                .map(|p| {
                    let meta = meta_from_payload(&p.payload);
                    SearchHit {
                        kind: string_field(&p.payload, "kind"),
                        name: string_field(&p.payload, "function"),
                        qualified_name: string_field(&p.payload, "qualified_name"),
                        text: string_field(&p.payload, "text"),
                        path: meta.path,
                        language: meta.language,
                        start_line: meta.start_line,
                        end_line: meta.end_line,
                        score: p.score,
                    }
                })
                .collect())
        }
        .boxed()
    }
}

/// The REST address of `collection` on the Qdrant whose gRPC URL is `grpc_url`: the REST port is only known
/// for the default gRPC port (6334 → 6333); any other is left for the user to fill in.
fn rest_collection_url(grpc_url: &str, collection: &str) -> String {
    match url::Url::parse(grpc_url) {
        Ok(mut url) if url.port_or_known_default() == Some(6334) => {
            let _ = url.set_port(Some(6333));
            format!(
                "{}/collections/{collection}",
                url.as_str().trim_end_matches('/')
            )
        }
        Ok(url) => format!(
            "{}://{}:<REST port>/collections/{collection}",
            url.scheme(),
            url.host_str().unwrap_or("localhost")
        ),
        Err(_) => format!("<Qdrant REST URL>/collections/{collection}"),
    }
}

#[cfg(test)]
mod rest_url_tests {
    use super::rest_collection_url;

    #[test]
    fn the_rest_port_is_named_only_when_it_is_known() {
        assert_eq!(
            rest_collection_url("http://localhost:6334", "code"),
            "http://localhost:6333/collections/code"
        );
        assert_eq!(
            rest_collection_url("http://127.0.0.1:16334/", "code"),
            "http://127.0.0.1:<REST port>/collections/code"
        );
    }
}
