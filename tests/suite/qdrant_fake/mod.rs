//! A small in-memory server speaking Qdrant's gRPC API (the service traits generated in `qdrant-client`),
//! enough for the index: health check, collections (exists, create, get, list, delete), points (upsert,
//! delete by ids or filter, scroll, query nearest, set payload, count, create field index). Filters support
//! `must`/`should`/`must_not` keyword and keywords matches, which is what the index sends. Anything else
//! answers UNIMPLEMENTED so a test notices.
#![allow(dead_code)]

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
};

use qdrant_client::qdrant::{
    self as q, collections_server::CollectionsServer, points_server::PointsServer,
    qdrant_server::QdrantServer,
};
use tonic::{Request, Response, Status};

#[derive(Debug, Clone)]
pub struct FakePoint {
    pub vector: Vec<f32>,
    pub payload: HashMap<String, q::Value>,
}

#[derive(Debug, Clone)]
pub struct FakeCollection {
    pub dimension: u64,
    pub distance: i32,
    pub indexed_fields: Vec<String>,
    /// Ordered by id, as Qdrant scrolls.
    pub points: BTreeMap<String, FakePoint>,
}

#[derive(Default)]
pub struct FakeState {
    pub collections: Mutex<HashMap<String, FakeCollection>>,
    /// Every call by method name, for assertions.
    pub calls: Mutex<Vec<String>>,
}

impl FakeState {
    pub fn calls(&self, method: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| *c == method)
            .count()
    }

    pub fn collection(&self, name: &str) -> Option<FakeCollection> {
        self.collections.lock().unwrap().get(name).cloned()
    }

    fn log(&self, method: &str) {
        self.calls.lock().unwrap().push(method.to_owned());
    }
}

pub struct FakeQdrant {
    /// gRPC URL for `--qdrant-url`.
    pub url: String,
    pub state: Arc<FakeState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeQdrant {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Service(Arc<FakeState>);

impl FakeQdrant {
    pub async fn start() -> FakeQdrant {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(FakeState::default());
        let service = Service(state.clone());
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(QdrantServer::new(service.clone()))
                .add_service(CollectionsServer::new(service.clone()))
                .add_service(PointsServer::new(service))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
        });
        FakeQdrant { url, state, task }
    }
}

fn id_string(id: Option<&q::PointId>) -> Result<String, Status> {
    match id.and_then(|p| p.point_id_options.as_ref()) {
        Some(q::point_id::PointIdOptions::Uuid(u)) => Ok(u.clone()),
        Some(q::point_id::PointIdOptions::Num(n)) => Ok(n.to_string()),
        None => Err(Status::invalid_argument("point without id")),
    }
}

fn point_id(id: &str) -> q::PointId {
    q::PointId::from(id.to_owned())
}

#[allow(deprecated)]
fn dense(vectors: Option<&q::Vectors>) -> Result<Vec<f32>, Status> {
    match vectors.and_then(|v| v.vectors_options.as_ref()) {
        Some(q::vectors::VectorsOptions::Vector(v)) => match &v.vector {
            Some(q::vector::Vector::Dense(d)) => Ok(d.data.clone()),
            None if !v.data.is_empty() => Ok(v.data.clone()),
            _ => Err(Status::invalid_argument("only dense vectors are supported")),
        },
        _ => Err(Status::invalid_argument(
            "only a single unnamed vector is supported",
        )),
    }
}

fn keyword(value: &q::Value) -> Option<&str> {
    match &value.kind {
        Some(q::value::Kind::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn condition_holds(
    condition: &q::Condition,
    payload: &HashMap<String, q::Value>,
) -> Result<bool, Status> {
    use q::{condition::ConditionOneOf, r#match::MatchValue};
    match &condition.condition_one_of {
        Some(ConditionOneOf::Field(field)) => {
            let value = payload.get(&field.key).and_then(keyword);
            match field.r#match.as_ref().and_then(|m| m.match_value.as_ref()) {
                Some(MatchValue::Keyword(k)) => Ok(value == Some(k.as_str())),
                Some(MatchValue::Keywords(list)) => {
                    Ok(value.is_some_and(|v| list.strings.iter().any(|s| s == v)))
                }
                _ => Err(Status::unimplemented("only keyword matches are supported")),
            }
        }
        Some(ConditionOneOf::Filter(filter)) => filter_holds(Some(filter), payload),
        _ => Err(Status::unimplemented(
            "only field and nested filter conditions are supported",
        )),
    }
}

fn filter_holds(
    filter: Option<&q::Filter>,
    payload: &HashMap<String, q::Value>,
) -> Result<bool, Status> {
    let Some(filter) = filter else {
        return Ok(true);
    };
    for c in &filter.must {
        if !condition_holds(c, payload)? {
            return Ok(false);
        }
    }
    for c in &filter.must_not {
        if condition_holds(c, payload)? {
            return Ok(false);
        }
    }
    if !filter.should.is_empty() {
        let mut any = false;
        for c in &filter.should {
            any |= condition_holds(c, payload)?;
        }
        if !any {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Ids a points selector picks in `collection`.
fn selected(
    collection: &FakeCollection,
    selector: Option<&q::PointsSelector>,
) -> Result<Vec<String>, Status> {
    use q::points_selector::PointsSelectorOneOf;
    match selector.and_then(|s| s.points_selector_one_of.as_ref()) {
        Some(PointsSelectorOneOf::Points(list)) => {
            list.ids.iter().map(|id| id_string(Some(id))).collect()
        }
        Some(PointsSelectorOneOf::Filter(filter)) => {
            let mut ids = Vec::new();
            for (id, point) in &collection.points {
                if filter_holds(Some(filter), &point.payload)? {
                    ids.push(id.clone());
                }
            }
            Ok(ids)
        }
        None => Err(Status::invalid_argument("no points selector")),
    }
}

fn select_payload(
    payload: &HashMap<String, q::Value>,
    with: Option<&q::WithPayloadSelector>,
) -> HashMap<String, q::Value> {
    use q::with_payload_selector::SelectorOptions;
    match with.and_then(|w| w.selector_options.as_ref()) {
        Some(SelectorOptions::Enable(true)) => payload.clone(),
        Some(SelectorOptions::Include(include)) => payload
            .iter()
            .filter(|(k, _)| include.fields.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Some(SelectorOptions::Exclude(exclude)) => payload
            .iter()
            .filter(|(k, _)| !exclude.fields.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => HashMap::new(),
    }
}

fn updated() -> Response<q::PointsOperationResponse> {
    Response::new(q::PointsOperationResponse {
        result: Some(q::UpdateResult {
            operation_id: Some(0),
            status: q::UpdateStatus::Completed as i32,
        }),
        ..Default::default()
    })
}

impl Service {
    fn with_collection<T>(
        &self,
        name: &str,
        work: impl FnOnce(&mut FakeCollection) -> Result<T, Status>,
    ) -> Result<T, Status> {
        let mut collections = self.0.collections.lock().unwrap();
        let collection = collections
            .get_mut(name)
            .ok_or_else(|| Status::not_found(format!("Collection `{name}` doesn't exist!")))?;
        work(collection)
    }
}

/// Methods the index never calls. Written in the shape `#[async_trait]` gives trait methods, because the
/// attribute does not see inside a macro invocation.
macro_rules! unimplemented_methods {
    ($($name:ident($req:ident) -> $resp:ident;)*) => {
        $(
            fn $name<'life0, 'async_trait>(
                &'life0 self,
                _request: Request<q::$req>,
            ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response<q::$resp>, Status>> + Send + 'async_trait>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                self.0.log(stringify!($name));
                Box::pin(async { Err(Status::unimplemented(concat!("fake Qdrant: ", stringify!($name)))) })
            }
        )*
    };
}

#[tonic::async_trait]
impl q::qdrant_server::Qdrant for Service {
    async fn health_check(
        &self,
        _request: Request<q::HealthCheckRequest>,
    ) -> Result<Response<q::HealthCheckReply>, Status> {
        self.0.log("health_check");
        Ok(Response::new(q::HealthCheckReply {
            title: "qdrant - vector search engine (test stand-in)".into(),
            version: "1.15.0".into(),
            commit: None,
        }))
    }
}

#[tonic::async_trait]
impl q::collections_server::Collections for Service {
    async fn get(
        &self,
        request: Request<q::GetCollectionInfoRequest>,
    ) -> Result<Response<q::GetCollectionInfoResponse>, Status> {
        self.0.log("collection_info");
        let name = request.into_inner().collection_name;
        let info = self.with_collection(&name, |c| {
            Ok(q::CollectionInfo {
                status: q::CollectionStatus::Green as i32,
                config: Some(q::CollectionConfig {
                    params: Some(q::CollectionParams {
                        shard_number: 1,
                        vectors_config: Some(q::VectorsConfig {
                            config: Some(q::vectors_config::Config::Params(q::VectorParams {
                                size: c.dimension,
                                distance: c.distance,
                                ..Default::default()
                            })),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                points_count: Some(c.points.len() as u64),
                ..Default::default()
            })
        })?;
        Ok(Response::new(q::GetCollectionInfoResponse {
            result: Some(info),
            time: 0.0,
        }))
    }

    async fn list(
        &self,
        _request: Request<q::ListCollectionsRequest>,
    ) -> Result<Response<q::ListCollectionsResponse>, Status> {
        self.0.log("list_collections");
        let collections = self.0.collections.lock().unwrap();
        Ok(Response::new(q::ListCollectionsResponse {
            collections: collections
                .keys()
                .map(|name| q::CollectionDescription { name: name.clone() })
                .collect(),
            time: 0.0,
        }))
    }

    async fn create(
        &self,
        request: Request<q::CreateCollection>,
    ) -> Result<Response<q::CollectionOperationResponse>, Status> {
        self.0.log("create_collection");
        let request = request.into_inner();
        let params = match request.vectors_config.and_then(|v| v.config) {
            Some(q::vectors_config::Config::Params(params)) => params,
            _ => {
                return Err(Status::invalid_argument(
                    "a single unnamed vector config is required",
                ));
            }
        };
        let mut collections = self.0.collections.lock().unwrap();
        if collections.contains_key(&request.collection_name) {
            return Err(Status::already_exists(format!(
                "Collection `{}` already exists!",
                request.collection_name
            )));
        }
        collections.insert(
            request.collection_name,
            FakeCollection {
                dimension: params.size,
                distance: params.distance,
                indexed_fields: Vec::new(),
                points: BTreeMap::new(),
            },
        );
        Ok(Response::new(q::CollectionOperationResponse {
            result: true,
            time: 0.0,
        }))
    }

    async fn delete(
        &self,
        request: Request<q::DeleteCollection>,
    ) -> Result<Response<q::CollectionOperationResponse>, Status> {
        self.0.log("delete_collection");
        let removed = self
            .0
            .collections
            .lock()
            .unwrap()
            .remove(&request.into_inner().collection_name)
            .is_some();
        Ok(Response::new(q::CollectionOperationResponse {
            result: removed,
            time: 0.0,
        }))
    }

    async fn collection_exists(
        &self,
        request: Request<q::CollectionExistsRequest>,
    ) -> Result<Response<q::CollectionExistsResponse>, Status> {
        self.0.log("collection_exists");
        let exists = self
            .0
            .collections
            .lock()
            .unwrap()
            .contains_key(&request.into_inner().collection_name);
        Ok(Response::new(q::CollectionExistsResponse {
            result: Some(q::CollectionExists { exists }),
            time: 0.0,
        }))
    }

    unimplemented_methods! {
        update(UpdateCollection) -> CollectionOperationResponse;
        update_aliases(ChangeAliases) -> CollectionOperationResponse;
        list_collection_aliases(ListCollectionAliasesRequest) -> ListAliasesResponse;
        list_aliases(ListAliasesRequest) -> ListAliasesResponse;
        collection_cluster_info(CollectionClusterInfoRequest) -> CollectionClusterInfoResponse;
        update_collection_cluster_setup(UpdateCollectionClusterSetupRequest) -> UpdateCollectionClusterSetupResponse;
        create_shard_key(CreateShardKeyRequest) -> CreateShardKeyResponse;
        delete_shard_key(DeleteShardKeyRequest) -> DeleteShardKeyResponse;
        list_shard_keys(ListShardKeysRequest) -> ListShardKeysResponse;
    }
}

#[tonic::async_trait]
impl q::points_server::Points for Service {
    async fn upsert(
        &self,
        request: Request<q::UpsertPoints>,
    ) -> Result<Response<q::PointsOperationResponse>, Status> {
        self.0.log("upsert");
        let request = request.into_inner();
        self.with_collection(&request.collection_name, |c| {
            for point in request.points {
                let vector = dense(point.vectors.as_ref())?;
                if vector.len() as u64 != c.dimension {
                    return Err(Status::invalid_argument(format!(
                        "Wrong input: Vector dimension error: expected dim: {}, got {}",
                        c.dimension,
                        vector.len()
                    )));
                }
                c.points.insert(
                    id_string(point.id.as_ref())?,
                    FakePoint {
                        vector,
                        payload: point.payload,
                    },
                );
            }
            Ok(())
        })?;
        Ok(updated())
    }

    async fn delete(
        &self,
        request: Request<q::DeletePoints>,
    ) -> Result<Response<q::PointsOperationResponse>, Status> {
        let request = request.into_inner();
        let by_filter = matches!(
            request
                .points
                .as_ref()
                .and_then(|p| p.points_selector_one_of.as_ref()),
            Some(q::points_selector::PointsSelectorOneOf::Filter(_))
        );
        self.0.log(if by_filter {
            "delete_by_filter"
        } else {
            "delete_by_ids"
        });
        self.with_collection(&request.collection_name, |c| {
            for id in selected(c, request.points.as_ref())? {
                c.points.remove(&id);
            }
            Ok(())
        })?;
        Ok(updated())
    }

    async fn set_payload(
        &self,
        request: Request<q::SetPayloadPoints>,
    ) -> Result<Response<q::PointsOperationResponse>, Status> {
        self.0.log("set_payload");
        let request = request.into_inner();
        self.with_collection(&request.collection_name, |c| {
            for id in selected(c, request.points_selector.as_ref())? {
                if let Some(point) = c.points.get_mut(&id) {
                    point.payload.extend(request.payload.clone());
                }
            }
            Ok(())
        })?;
        Ok(updated())
    }

    async fn create_field_index(
        &self,
        request: Request<q::CreateFieldIndexCollection>,
    ) -> Result<Response<q::PointsOperationResponse>, Status> {
        self.0.log("create_field_index");
        let request = request.into_inner();
        self.with_collection(&request.collection_name, |c| {
            c.indexed_fields.push(request.field_name);
            Ok(())
        })?;
        Ok(updated())
    }

    async fn scroll(
        &self,
        request: Request<q::ScrollPoints>,
    ) -> Result<Response<q::ScrollResponse>, Status> {
        self.0.log("scroll");
        let request = request.into_inner();
        let limit = request.limit.unwrap_or(10) as usize;
        let offset = request
            .offset
            .as_ref()
            .map(|o| id_string(Some(o)))
            .transpose()?;
        let (result, next) = self.with_collection(&request.collection_name, |c| {
            let mut page = Vec::new();
            let mut next = None;
            let start = offset.clone().unwrap_or_default();
            for (id, point) in c.points.range(start..) {
                if !filter_holds(request.filter.as_ref(), &point.payload)? {
                    continue;
                }
                if page.len() == limit {
                    next = Some(point_id(id));
                    break;
                }
                page.push(q::RetrievedPoint {
                    id: Some(point_id(id)),
                    payload: select_payload(&point.payload, request.with_payload.as_ref()),
                    ..Default::default()
                });
            }
            Ok((page, next))
        })?;
        Ok(Response::new(q::ScrollResponse {
            next_page_offset: next,
            result,
            ..Default::default()
        }))
    }

    async fn count(
        &self,
        request: Request<q::CountPoints>,
    ) -> Result<Response<q::CountResponse>, Status> {
        self.0.log("count");
        let request = request.into_inner();
        let count = self.with_collection(&request.collection_name, |c| {
            let mut n = 0;
            for point in c.points.values() {
                if filter_holds(request.filter.as_ref(), &point.payload)? {
                    n += 1;
                }
            }
            Ok(n)
        })?;
        Ok(Response::new(q::CountResponse {
            result: Some(q::CountResult { count }),
            ..Default::default()
        }))
    }

    async fn query(
        &self,
        request: Request<q::QueryPoints>,
    ) -> Result<Response<q::QueryResponse>, Status> {
        self.0.log("query");
        let request = request.into_inner();
        let query = match request.query.as_ref().and_then(|q| q.variant.as_ref()) {
            Some(q::query::Variant::Nearest(input)) => match &input.variant {
                Some(q::vector_input::Variant::Dense(d)) => d.data.clone(),
                _ => {
                    return Err(Status::unimplemented(
                        "only dense nearest queries are supported",
                    ));
                }
            },
            _ => return Err(Status::unimplemented("only nearest queries are supported")),
        };
        let limit = request.limit.unwrap_or(10) as usize;
        let result = self.with_collection(&request.collection_name, |c| {
            if query.len() as u64 != c.dimension {
                return Err(Status::invalid_argument(format!(
                    "Wrong input: Vector dimension error: expected dim: {}, got {}",
                    c.dimension,
                    query.len()
                )));
            }
            let norm = |v: &[f32]| {
                v.iter()
                    .map(|x| x * x)
                    .sum::<f32>()
                    .sqrt()
                    .max(f32::MIN_POSITIVE)
            };
            let mut scored = Vec::new();
            for (id, point) in &c.points {
                if !filter_holds(request.filter.as_ref(), &point.payload)? {
                    continue;
                }
                let dot: f32 = point.vector.iter().zip(&query).map(|(a, b)| a * b).sum();
                scored.push((dot / (norm(&point.vector) * norm(&query)), id, point));
            }
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            Ok(scored
                .into_iter()
                .take(limit)
                .map(|(score, id, point)| q::ScoredPoint {
                    id: Some(point_id(id)),
                    payload: select_payload(&point.payload, request.with_payload.as_ref()),
                    score,
                    ..Default::default()
                })
                .collect())
        })?;
        Ok(Response::new(q::QueryResponse {
            result,
            ..Default::default()
        }))
    }

    unimplemented_methods! {
        get(GetPoints) -> GetResponse;
        update_vectors(UpdatePointVectors) -> PointsOperationResponse;
        delete_vectors(DeletePointVectors) -> PointsOperationResponse;
        overwrite_payload(SetPayloadPoints) -> PointsOperationResponse;
        delete_payload(DeletePayloadPoints) -> PointsOperationResponse;
        clear_payload(ClearPayloadPoints) -> PointsOperationResponse;
        delete_field_index(DeleteFieldIndexCollection) -> PointsOperationResponse;
        create_vector_name(CreateVectorNameRequest) -> PointsOperationResponse;
        delete_vector_name(DeleteVectorNameRequest) -> PointsOperationResponse;
        search(SearchPoints) -> SearchResponse;
        search_batch(SearchBatchPoints) -> SearchBatchResponse;
        search_groups(SearchPointGroups) -> SearchGroupsResponse;
        recommend(RecommendPoints) -> RecommendResponse;
        recommend_batch(RecommendBatchPoints) -> RecommendBatchResponse;
        recommend_groups(RecommendPointGroups) -> RecommendGroupsResponse;
        discover(DiscoverPoints) -> DiscoverResponse;
        discover_batch(DiscoverBatchPoints) -> DiscoverBatchResponse;
        update_batch(UpdateBatchPoints) -> UpdateBatchResponse;
        query_batch(QueryBatchPoints) -> QueryBatchResponse;
        query_groups(QueryPointGroups) -> QueryGroupsResponse;
        facet(FacetCounts) -> FacetResponse;
        search_matrix_pairs(SearchMatrixPoints) -> SearchMatrixPairsResponse;
        search_matrix_offsets(SearchMatrixPoints) -> SearchMatrixOffsetsResponse;
    }
}
