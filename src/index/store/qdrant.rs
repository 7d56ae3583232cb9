//! A Qdrant server as the store, over gRPC with `qdrant-client`: one collection per project, cosine distance,
//! a keyword index on `path` so deleting a file's chunks is a filtered delete.

use std::{collections::HashMap, time::Duration};

use futures::{FutureExt, future::BoxFuture};
use qdrant_client::{
    Payload, Qdrant,
    qdrant::{
        Condition, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder, DeletePointsBuilder,
        Distance, FieldType, Filter, PayloadIncludeSelector, PointId, PointStruct, PointsIdsList,
        QueryPointsBuilder, ScrollPointsBuilder, SetPayloadPointsBuilder, UpsertPointsBuilder,
        Value, VectorParamsBuilder, point_id::PointIdOptions, value::Kind, vectors_config,
    },
};

use super::{
    ChunkMeta, ChunkPoint, CollectionInfo, FileStamp, LineMove, SearchFilter, SearchHit,
    StoreError, StoreKind, StoredPoint, VectorStore,
};

/// Fields read back when comparing runs (never the text or the vector).
const META_FIELDS: [&str; 7] = [
    "path",
    "language",
    "start_line",
    "end_line",
    "content_hash",
    "file_hash",
    "file_chunks",
];
const SCROLL_PAGE: u32 = 1000;

pub struct QdrantStore {
    client: Qdrant,
    url: String,
    collection: String,
}

impl QdrantStore {
    /// A client for `url` (gRPC, usually port 6334). Nothing is sent until the first call.
    pub fn connect(
        url: &str,
        api_key: Option<String>,
        collection: &str,
    ) -> Result<QdrantStore, StoreError> {
        let client = Qdrant::from_url(url)
            .api_key(api_key)
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(3))
            // The compatibility check prints to stdout, which carries JSON-RPC here.
            .skip_compatibility_check()
            .build()
            .map_err(|e| StoreError::Qdrant {
                url: crate::redact::redacted_text(url),
                message: crate::redact::redacted_text(&e.to_string()),
            })?;
        Ok(QdrantStore {
            client,
            // Shown in logs, errors and results: without credentials or query.
            url: crate::redact::redacted_text(url),
            collection: collection.to_owned(),
        })
    }

    /// Whether a Qdrant answers a health check at `url` within `within`.
    pub async fn answers(url: &str, api_key: Option<String>, within: Duration) -> bool {
        let Ok(client) = Qdrant::from_url(url)
            .api_key(api_key)
            .timeout(within)
            .connect_timeout(within)
            .skip_compatibility_check()
            .build()
        else {
            return false;
        };
        matches!(
            tokio::time::timeout(within, client.health_check()).await,
            Ok(Ok(_))
        )
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Qdrant {
            url: self.url.clone(),
            // The client's errors quote the address it was given, credentials and all.
            message: crate::redact::redacted_text(&e.to_string()),
        }
    }

    fn path_filter(paths: &[String]) -> Filter {
        Filter::should(paths.iter().map(|p| Condition::matches("path", p.clone())))
    }
}

fn string_field(payload: &HashMap<String, Value>, key: &str) -> String {
    match payload.get(key).and_then(|v| v.kind.as_ref()) {
        Some(Kind::StringValue(s)) => s.clone(),
        _ => String::new(),
    }
}

fn int_field(payload: &HashMap<String, Value>, key: &str) -> u32 {
    match payload.get(key).and_then(|v| v.kind.as_ref()) {
        Some(Kind::IntegerValue(i)) => u32::try_from(*i).unwrap_or(0),
        Some(Kind::DoubleValue(d)) if *d >= 0.0 => *d as u32,
        _ => 0,
    }
}

fn point_id_string(id: Option<&PointId>) -> String {
    match id.and_then(|p| p.point_id_options.as_ref()) {
        Some(PointIdOptions::Uuid(u)) => u.clone(),
        Some(PointIdOptions::Num(n)) => n.to_string(),
        None => String::new(),
    }
}

fn meta_from_payload(payload: &HashMap<String, Value>) -> ChunkMeta {
    ChunkMeta {
        path: string_field(payload, "path"),
        language: string_field(payload, "language"),
        start_line: int_field(payload, "start_line"),
        end_line: int_field(payload, "end_line"),
        content_hash: string_field(payload, "content_hash"),
        file_hash: string_field(payload, "file_hash"),
        file_chunks: int_field(payload, "file_chunks"),
    }
}

fn payload_of(point: &ChunkPoint) -> Payload {
    let mut payload = Payload::with_capacity(11);
    payload.insert("path", point.meta.path.as_str());
    payload.insert("language", point.meta.language.as_str());
    payload.insert("kind", point.kind.as_str());
    payload.insert("function", point.name.as_str());
    payload.insert("qualified_name", point.qualified_name.as_str());
    payload.insert("start_line", i64::from(point.meta.start_line));
    payload.insert("end_line", i64::from(point.meta.end_line));
    payload.insert("content_hash", point.meta.content_hash.as_str());
    payload.insert("file_hash", point.meta.file_hash.as_str());
    payload.insert("file_chunks", i64::from(point.meta.file_chunks));
    payload.insert("text", point.text.as_str());
    payload
}

impl VectorStore for QdrantStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Qdrant
    }

    fn location(&self) -> String {
        self.url.clone()
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
                if info.dimension != dimension {
                    return Err(StoreError::DimensionMismatch {
                        collection: self.collection.clone(),
                        stored: info.dimension,
                        configured: dimension,
                        fix: format!(
                            "delete the collection with `curl -X DELETE {}` on Qdrant's REST port (usually 6333) \
                             and index again",
                            rest_collection_url(&self.url, &self.collection)
                        ),
                    });
                }
                return Ok(info);
            }
            self.client
                .create_collection(
                    CreateCollectionBuilder::new(&self.collection)
                        .vectors_config(VectorParamsBuilder::new(dimension as u64, Distance::Cosine)),
                )
                .await
                .map_err(|e| self.err(format!("cannot create collection '{}': {e}", self.collection)))?;
            self.client
                .create_field_index(
                    CreateFieldIndexCollectionBuilder::new(&self.collection, "path", FieldType::Keyword)
                        .wait(true),
                )
                .await
                .map_err(|e| self.err(format!("cannot index field 'path': {e}")))?;
            tracing::info!(collection = %self.collection, dimension, url = %self.url, "created Qdrant collection");
            Ok(CollectionInfo {
                name: self.collection.clone(),
                dimension,
                points: 0,
            })
        }
        .boxed()
    }

    fn collection_info(&self) -> BoxFuture<'_, Result<Option<CollectionInfo>, StoreError>> {
        async move {
            let exists = self
                .client
                .collection_exists(&self.collection)
                .await
                .map_err(|e| self.err(e))?;
            if !exists {
                return Ok(None);
            }
            let response = self
                .client
                .collection_info(&self.collection)
                .await
                .map_err(|e| self.err(e))?;
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
                .ok_or_else(|| {
                    self.err(format!(
                        "collection '{}' has named vectors; expected a single unnamed vector",
                        self.collection
                    ))
                })?;
            Ok(Some(CollectionInfo {
                name: self.collection.clone(),
                dimension,
                points: info.points_count.unwrap_or(0),
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
                let page = self.client.scroll(request).await.map_err(|e| self.err(e))?;
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

    fn upsert(&self, points: Vec<ChunkPoint>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            if points.is_empty() {
                return Ok(());
            }
            let structs: Vec<PointStruct> = points
                .iter()
                .map(|p| PointStruct::new(p.id.clone(), p.vector.clone(), payload_of(p)))
                .collect();
            self.client
                .upsert_points(UpsertPointsBuilder::new(&self.collection, structs).wait(true))
                .await
                .map_err(|e| self.err(e))?;
            Ok(())
        }
        .boxed()
    }

    fn move_lines(&self, moves: Vec<LineMove>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            for m in moves {
                let mut payload = Payload::with_capacity(2);
                payload.insert("start_line", i64::from(m.start_line));
                payload.insert("end_line", i64::from(m.end_line));
                self.client
                    .set_payload(
                        SetPayloadPointsBuilder::new(&self.collection, payload)
                            .points_selector(PointsIdsList {
                                ids: vec![PointId::from(m.id)],
                            })
                            .wait(true),
                    )
                    .await
                    .map_err(|e| self.err(e))?;
            }
            Ok(())
        }
        .boxed()
    }

    fn stamp_files(&self, stamps: Vec<FileStamp>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            for f in stamps {
                let mut payload = Payload::with_capacity(2);
                payload.insert("file_hash", f.file_hash.as_str());
                payload.insert("file_chunks", i64::from(f.file_chunks));
                self.client
                    .set_payload(
                        SetPayloadPointsBuilder::new(&self.collection, payload)
                            .points_selector(Self::path_filter(std::slice::from_ref(&f.path)))
                            .wait(true),
                    )
                    .await
                    .map_err(|e| self.err(e))?;
            }
            Ok(())
        }
        .boxed()
    }

    fn delete_ids(&self, ids: Vec<String>) -> BoxFuture<'_, Result<u64, StoreError>> {
        async move {
            if ids.is_empty() {
                return Ok(0);
            }
            let count = ids.len() as u64;
            self.client
                .delete_points(
                    DeletePointsBuilder::new(&self.collection)
                        .points(PointsIdsList {
                            ids: ids.into_iter().map(PointId::from).collect(),
                        })
                        .wait(true),
                )
                .await
                .map_err(|e| self.err(e))?;
            Ok(count)
        }
        .boxed()
    }

    fn delete_paths(&self, paths: Vec<String>) -> BoxFuture<'_, Result<u64, StoreError>> {
        async move {
            if paths.is_empty() {
                return Ok(0);
            }
            let filter = Self::path_filter(&paths);
            let count = self
                .client
                .count(
                    qdrant_client::qdrant::CountPointsBuilder::new(&self.collection)
                        .filter(filter.clone())
                        .exact(true),
                )
                .await
                .map_err(|e| self.err(e))?
                .result
                .map(|r| r.count)
                .unwrap_or(0);
            self.client
                .delete_points(
                    DeletePointsBuilder::new(&self.collection)
                        .points(filter)
                        .wait(true),
                )
                .await
                .map_err(|e| self.err(e))?;
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
            let response = self.client.query(request).await.map_err(|e| self.err(e))?;
            Ok(response
                .result
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
