//! Source index benchmark (run with `cargo bench --bench index`):
//! - pipeline throughput (chunks/s) with a zero-cost embedder (our own overhead: walk, parse, hash, store)
//!   and with the local embedding server when it answers (`FAULT_BENCH_EMBED_BASE_URL`, default
//!   http://127.0.0.1:18081/v1, model `all-minilm`, 384 dimensions);
//! - re-index time of an unchanged generated 1,000-file tree, against a peer: reading and hashing every file;
//! - query time of the embedded store at 10k and 100k chunks (384 dimensions), against a peer: numpy
//!   brute-force top-k over the same vectors (`FAULT_BENCH_PYTHON`, default python3, needs numpy);
//! - stores: the first index of a 300-file tree with the zero-cost embedder into the embedded store, one Qdrant
//!   (`FAULT_TEST_QDRANT_URL`) and a 3-node Qdrant cluster (`FAULT_TEST_QDRANT_CLUSTER_URLS`, replication
//!   factor 2), also with one of its nodes SIGKILLed (`../shared/qdrant/qdrant.sh cluster kill 3`, restarted
//!   after); each as the median of 3 rounds, against the embedded store.

use std::{
    io::Write,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use fault::{
    code::Language,
    index::{
        IndexSettings, Project, index_project,
        store::{
            ChunkMeta, ChunkPoint, SearchFilter, VectorStore,
            qdrant::{self, ClusterLayout, QdrantStore},
            sqlite::SqliteStore,
        },
    },
    llm::{Embedder, LlmError, LlmSettings},
};
use futures::future::BoxFuture;
use sha2::Digest;
use tokio_util::sync::CancellationToken;

const DIM: usize = 384;

/// Returns pseudo-random unit vectors derived from each text's hash; costs next to nothing.
struct ZeroCostEmbedder;

fn seeded_vector(mut seed: u64, dim: usize) -> Vec<f32> {
    let mut v = Vec::with_capacity(dim);
    for _ in 0..dim {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.push((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

impl Embedder for ZeroCostEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, LlmError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let h = sha2::Sha256::digest(t.as_bytes());
                    seeded_vector(u64::from_le_bytes(h[..8].try_into().unwrap()) | 1, DIM)
                })
                .collect())
        })
    }
    fn model(&self) -> &str {
        "zero-cost"
    }
    fn dimension(&self) -> usize {
        DIM
    }
}

/// `files` Python files of `functions` functions each (plus an import line: one top-level chunk per file).
fn generate_tree(dir: &Path, files: usize, functions: usize) -> PathBuf {
    for f in 0..files {
        let sub = dir.join(format!("pkg_{:02}", f % 20));
        std::fs::create_dir_all(&sub).unwrap();
        let mut source = String::from("import json\n\n\n");
        for g in 0..functions {
            source.push_str(&format!(
                "def handler_{f}_{g}(request, retries=3):\n    \"\"\"Handle request kind {g} of module {f}.\"\"\"\n    \
                 for attempt in range(retries):\n        payload = json.loads(request.body)\n        \
                 if payload.get(\"kind\") == {g}:\n            return payload\n    return None\n\n\n"
            ));
        }
        std::fs::write(sub.join(format!("module_{f:04}.py")), source).unwrap();
    }
    dir.canonicalize().unwrap()
}

async fn run_index(
    root: &Path,
    db: &Path,
    embedder: Arc<dyn Embedder>,
) -> fault::index::IndexSummary {
    let project = Project::at(root).unwrap();
    let store: Arc<dyn VectorStore> = SqliteStore::open(db, &project.collection).unwrap();
    index_into(&project, store, embedder).await.unwrap()
}

async fn index_into(
    project: &Project,
    store: Arc<dyn VectorStore>,
    embedder: Arc<dyn Embedder>,
) -> Result<fault::index::IndexSummary, fault::index::IndexError> {
    index_project(
        project,
        &Language::all().collect::<Vec<_>>(),
        embedder,
        store,
        &IndexSettings::default(),
        None,
        &CancellationToken::new(),
    )
    .await
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The peer of a re-index: read and SHA-256 every file of the tree (the floor of any change detection
/// that looks at contents).
fn read_and_hash_all(root: &Path) -> usize {
    let mut n = 0;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let bytes = std::fs::read(entry.path()).unwrap();
            std::hint::black_box(sha2::Sha256::digest(&bytes));
            n += 1;
        }
    }
    n
}

async fn local_embedder() -> Option<Arc<dyn Embedder>> {
    let base = std::env::var("FAULT_BENCH_EMBED_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:18081/v1".into());
    let probe = tokio::time::timeout(
        Duration::from_secs(2),
        tokio::net::TcpStream::connect(base.trim_start_matches("http://").split('/').next()?),
    )
    .await;
    if !matches!(probe, Ok(Ok(_))) {
        return None;
    }
    let settings = LlmSettings {
        embed_base_url: Some(base.parse().ok()?),
        embed_model: "all-minilm".into(),
        embed_dimension: DIM as u32,
        ..LlmSettings::default()
    };
    fault::llm::embedder(&settings).ok()
}

async fn pipeline_and_reindex(work: &Path) {
    println!("## pipeline (embedded store, {DIM} dimensions)");
    let root = generate_tree(&work.join("tree"), 1000, 5);
    let db = work.join("tree.sqlite3");
    let started = Instant::now();
    let first = run_index(&root, &db, Arc::new(ZeroCostEmbedder)).await;
    let first_time = started.elapsed();
    println!(
        "first index, zero-cost embedder: {} files, {} chunks in {:.0} ms = {:.0} chunks/s (our overhead)",
        first.files_seen,
        first.chunks_embedded,
        ms(first_time),
        first.chunks_embedded as f64 / first_time.as_secs_f64()
    );

    let mut reindex = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let again = run_index(&root, &db, Arc::new(ZeroCostEmbedder)).await;
        reindex.push(started.elapsed());
        assert_eq!(again.chunks_embedded, 0);
    }
    let mut peer = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        std::hint::black_box(read_and_hash_all(&root));
        peer.push(started.elapsed());
    }
    let (reindex, peer) = (median(reindex), median(peer));
    println!(
        "re-index of the unchanged 1,000-file tree: {:.1} ms (goal < 1000 ms); peer read+sha256 of every file: \
         {:.1} ms; ratio {:.2}x",
        ms(reindex),
        ms(peer),
        reindex.as_secs_f64() / peer.as_secs_f64()
    );

    match local_embedder().await {
        None => println!(
            "local embedder: skipped (no server at FAULT_BENCH_EMBED_BASE_URL / 127.0.0.1:18081)"
        ),
        Some(embedder) => {
            let small = generate_tree(&work.join("small"), 20, 5);
            let started = Instant::now();
            let summary = run_index(&small, &work.join("small.sqlite3"), embedder).await;
            let local = started.elapsed();
            let started = Instant::now();
            let zero = run_index(
                &small,
                &work.join("small-zero.sqlite3"),
                Arc::new(ZeroCostEmbedder),
            )
            .await;
            let zero_time = started.elapsed();
            println!(
                "local all-MiniLM-L6-v2: {} chunks in {:.0} ms = {:.1} chunks/s; same tree with the zero-cost \
                 embedder {:.1} ms: embedding is {:.1}% of the pipeline time",
                summary.chunks_embedded,
                ms(local),
                summary.chunks_embedded as f64 / local.as_secs_f64(),
                ms(zero_time),
                100.0 * (1.0 - zero_time.as_secs_f64() / local.as_secs_f64())
            );
            assert_eq!(zero.chunks_embedded, summary.chunks_embedded);
        }
    }
}

fn fill_store(store: &SqliteStore, vectors: &[Vec<f32>]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        store.ensure_collection(DIM).await.unwrap();
        for (batch_index, batch) in vectors.chunks(1000).enumerate() {
            let points = batch
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let n = batch_index * 1000 + i;
                    ChunkPoint {
                        id: format!("{n:036}"),
                        meta: ChunkMeta {
                            path: format!("pkg/module_{}.py", n / 10),
                            language: "python".into(),
                            start_line: 1,
                            end_line: 9,
                            content_hash: n.to_string(),
                            file_hash: String::new(),
                            file_chunks: 10,
                        },
                        kind: "function".into(),
                        name: format!("f{n}"),
                        qualified_name: format!("f{n}"),
                        text: format!("def f{n}(): pass"),
                        vector: v.clone(),
                    }
                })
                .collect();
            store.upsert(points).await.unwrap();
        }
    });
}

/// numpy: load the same vectors, normalize, time `argpartition` top-k of `X @ q` per query.
fn numpy_peer(
    python: &str,
    vectors_file: &Path,
    queries_file: &Path,
    n: usize,
    k: usize,
) -> Option<f64> {
    let script = format!(
        "import numpy as np, time\n\
         X = np.fromfile('{}', dtype='<f4').reshape({n}, {DIM})\n\
         X /= np.linalg.norm(X, axis=1, keepdims=True)\n\
         Q = np.fromfile('{}', dtype='<f4').reshape(-1, {DIM})\n\
         ts = []\n\
         for q in Q:\n\
         \x20   t = time.perf_counter()\n\
         \x20   s = X @ (q / np.linalg.norm(q))\n\
         \x20   top = np.argpartition(-s, {k})[:{k}]\n\
         \x20   top = top[np.argsort(-s[top])]\n\
         \x20   ts.append(time.perf_counter() - t)\n\
         print(sorted(ts)[len(ts)//2] * 1000)\n",
        vectors_file.display(),
        queries_file.display()
    );
    let output = std::process::Command::new(python)
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .args(["-c", &script])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

fn write_f32(path: &Path, vectors: &[Vec<f32>]) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for v in vectors {
        for x in v {
            file.write_all(&x.to_le_bytes()).unwrap();
        }
    }
}

fn queries(work: &Path) {
    println!("## query (embedded store, exact top-10, {DIM} dimensions, 1 thread)");
    let python = std::env::var("FAULT_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let queries: Vec<Vec<f32>> = (0..21)
        .map(|i| seeded_vector(0x9e37_79b9 + i, DIM))
        .collect();
    let queries_file = work.join("queries.f32");
    write_f32(&queries_file, &queries);
    for n in [10_000usize, 100_000] {
        let vectors: Vec<Vec<f32>> = (0..n as u64)
            .map(|i| seeded_vector(i * 2 + 1, DIM))
            .collect();
        let db = work.join(format!("q{n}.sqlite3"));
        let store = SqliteStore::open_uncached(&db, "bench").unwrap();
        let started = Instant::now();
        fill_store(&store, &vectors);
        let fill = started.elapsed();

        let started = Instant::now();
        let first = store
            .search_blocking(queries[0].clone(), 10, &SearchFilter::default())
            .unwrap();
        let cold = started.elapsed();
        assert_eq!(first.len(), 10);
        let mut warm = Vec::new();
        for q in &queries[1..] {
            let started = Instant::now();
            std::hint::black_box(
                store
                    .search_blocking(q.clone(), 10, &SearchFilter::default())
                    .unwrap(),
            );
            warm.push(started.elapsed());
        }
        let warm = median(warm);

        let vectors_file = work.join(format!("v{n}.f32"));
        write_f32(&vectors_file, &vectors);
        let peer = numpy_peer(&python, &vectors_file, &queries_file, n, 10);
        let peer_text = match peer {
            Some(p) => format!("numpy brute force {p:.2} ms; ratio {:.2}x", ms(warm) / p),
            None => format!("numpy peer skipped ({python} without numpy; set FAULT_BENCH_PYTHON)"),
        };
        println!(
            "{n} chunks: insert {:.0} ms; first query (loads the vector cache) {:.1} ms; query median {:.2} ms \
             (goal < 50 ms); {peer_text}",
            ms(fill),
            ms(cold),
            ms(warm)
        );
    }
}

/// `../shared/qdrant/qdrant.sh cluster <words>`; false when the script is not there or fails.
fn qdrant_script(words: &[&str]) -> bool {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/qdrant/qdrant.sh");
    script.is_file()
        && std::process::Command::new("bash")
            .arg(&script)
            .arg("cluster")
            .args(words)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// The median time of 3 first indexes of `root` into fresh collections of the Qdrant at `urls`, or the error
/// of a round that failed.
async fn qdrant_rounds(
    root: &Path,
    urls: &str,
    layout: ClusterLayout,
) -> Result<Duration, fault::index::IndexError> {
    let project = Project::at(root).unwrap();
    let mut times = Vec::new();
    for round in 0..3 {
        let collection = format!("{}_bench_{round}", project.collection);
        let store =
            QdrantStore::connect(urls, None, &collection, layout, qdrant::DEFAULT_TIMEOUT).unwrap();
        let started = Instant::now();
        let summary = index_into(&project, Arc::new(store), Arc::new(ZeroCostEmbedder)).await;
        times.push(started.elapsed());
        let first = urls.split(',').next().unwrap_or(urls);
        let client = qdrant_client::Qdrant::from_url(first)
            .skip_compatibility_check()
            .build()
            .unwrap();
        let _ = client.delete_collection(collection).await;
        let summary = summary?;
        assert_eq!(summary.chunks_total, summary.chunks_embedded);
    }
    Ok(median(times))
}

async fn stores(work: &Path) {
    println!("## stores (first index, zero-cost embedder, 3 rounds each, medians)");
    let root = generate_tree(&work.join("stores"), 300, 5);
    let mut embedded = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let summary = run_index(
            &root,
            &work.join(format!("stores-{round}.sqlite3")),
            Arc::new(ZeroCostEmbedder),
        )
        .await;
        embedded.push(started.elapsed());
        if round == 0 {
            println!(
                "tree: {} files, {} chunks",
                summary.files_seen, summary.chunks_embedded
            );
        }
    }
    let embedded = median(embedded);
    println!("embedded store: {:.0} ms", ms(embedded));
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let single = env("FAULT_TEST_QDRANT_URL");
    match &single {
        Some(url) if QdrantStore::answers(url, None, Duration::from_secs(2)).await => {
            let time = match qdrant_rounds(&root, url, ClusterLayout::default()).await {
                Ok(time) => time,
                Err(e) => return println!("one Qdrant: failed: {e}"),
            };
            println!(
                "one Qdrant: {:.0} ms ({:.2}x the embedded store)",
                ms(time),
                time.as_secs_f64() / embedded.as_secs_f64()
            );
        }
        _ => println!("one Qdrant: skipped (no Qdrant answers at FAULT_TEST_QDRANT_URL)"),
    }
    let Some(cluster) = env("FAULT_TEST_QDRANT_CLUSTER_URLS") else {
        println!("Qdrant cluster: skipped (FAULT_TEST_QDRANT_CLUSTER_URLS is not set)");
        return;
    };
    let layout = ClusterLayout {
        replication_factor: Some(2),
        ..ClusterLayout::default()
    };
    let healthy = match qdrant_rounds(&root, &cluster, layout).await {
        Ok(time) => time,
        Err(e) => return println!("3-node cluster: failed: {e}"),
    };
    println!(
        "3-node cluster, replication factor 2: {:.0} ms ({:.2}x the embedded store)",
        ms(healthy),
        healthy.as_secs_f64() / embedded.as_secs_f64()
    );
    if !qdrant_script(&["kill", "3"]) {
        println!(
            "3-node cluster with node 3 killed: skipped (../shared/qdrant/qdrant.sh not found)"
        );
        return;
    }
    let degraded = qdrant_rounds(&root, &cluster, layout).await;
    let restarted = qdrant_script(&["restart", "3"]);
    let restarted = if restarted {
        ""
    } else {
        "; node 3 did not restart"
    };
    match degraded {
        Ok(degraded) => println!(
            "3-node cluster with node 3 SIGKILLed: {:.0} ms ({:.2}x the healthy cluster){restarted}",
            ms(degraded),
            degraded.as_secs_f64() / healthy.as_secs_f64(),
        ),
        Err(e) => println!("3-node cluster with node 3 SIGKILLed: failed: {e}{restarted}"),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters like a test name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let work = tempfile::tempdir().unwrap();
    if wants("pipeline") {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(pipeline_and_reindex(work.path()));
    }
    if wants("query") {
        queries(work.path());
    }
    if wants("stores") {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(stores(work.path()));
    }
}
