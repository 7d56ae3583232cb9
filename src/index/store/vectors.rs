//! The in-memory copies of the embedded store's vectors and the exact top-k search over them.
//!
//! The copies of all projects share one ceiling ([`set_cache_ceiling`]): loading a project's copy releases
//! the least recently searched ones until the total fits; a project too large for the ceiling on its own has
//! no copy and is searched from its database row by row, with the same [`Best`] keeping the top k.

use std::{
    cmp::{Ordering, Reverse},
    collections::{BinaryHeap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering as AtomicOrdering},
    },
};

/// A project's decoded vectors. Its own lock is held only to read or swap the copy, never while taking
/// another lock, so the ceiling can release any project's copy while that project is being searched.
pub(super) type CacheSlot = Arc<Mutex<Option<Arc<VectorCache>>>>;

/// Default ceiling of the vector copies of all projects together, in bytes.
pub const DEFAULT_CACHE_CEILING: u64 = 256 * 1024 * 1024;

static CACHE_CEILING: AtomicU64 = AtomicU64::new(DEFAULT_CACHE_CEILING);

/// Sets the ceiling of the vector copies of all projects together (bytes); 0 searches every project
/// straight from its database.
pub fn set_cache_ceiling(bytes: u64) {
    CACHE_CEILING.store(bytes, AtomicOrdering::Relaxed);
}

/// The current ceiling, in bytes.
pub fn cache_ceiling() -> u64 {
    CACHE_CEILING.load(AtomicOrdering::Relaxed)
}

/// The projects holding a vector copy, by file, with their size and when they were last searched.
#[derive(Default)]
pub(super) struct CacheBudget {
    tick: u64,
    held: HashMap<PathBuf, Held>,
}

struct Held {
    bytes: u64,
    last_used: u64,
    slot: CacheSlot,
}

/// The budget shared by every store of the process.
pub(super) fn budget() -> std::sync::MutexGuard<'static, CacheBudget> {
    static BUDGET: OnceLock<Mutex<CacheBudget>> = OnceLock::new();
    BUDGET
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

impl CacheBudget {
    /// Records a use of `file`'s copy (`bytes` big) and releases the least recently used others until all
    /// fit under the ceiling.
    pub(super) fn used(&mut self, file: &Path, bytes: u64, slot: &CacheSlot) {
        self.tick += 1;
        let tick = self.tick;
        // Copies dropped by a write no longer count.
        self.held
            .retain(|_, h| h.slot.lock().unwrap_or_else(|p| p.into_inner()).is_some());
        self.held.insert(
            file.to_path_buf(),
            Held {
                bytes,
                last_used: tick,
                slot: slot.clone(),
            },
        );
        let ceiling = cache_ceiling();
        while self.held.values().map(|h| h.bytes).sum::<u64>() > ceiling {
            let Some(victim) = self
                .held
                .iter()
                .filter(|(path, _)| path.as_path() != file)
                .min_by_key(|(_, h)| h.last_used)
                .map(|(path, _)| path.clone())
            else {
                break;
            };
            if let Some(held) = self.held.remove(&victim) {
                held.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                tracing::debug!(file = %victim.display(), bytes = held.bytes, "vector copy released (ceiling)");
            }
        }
    }

    pub(super) fn forget(&mut self, file: &Path) {
        self.held.remove(file);
    }

    /// Bytes held by all copies (tests and benchmarks).
    fn total(&self) -> u64 {
        self.held.values().map(|h| h.bytes).sum()
    }
}

/// Bytes of vector copies held now, across projects.
pub fn cached_bytes() -> u64 {
    budget().total()
}

/// One project's vectors, decoded, with what a search filters on and the row each came from.
pub(super) struct VectorCache {
    /// The database's `PRAGMA data_version` when the copy was read: another value means it is stale.
    pub(super) data_version: i64,
    pub(super) dimension: usize,
    pub(super) rowids: Vec<i64>,
    pub(super) paths: Vec<Arc<str>>,
    pub(super) languages: Vec<Arc<str>>,
    /// Row-major, `rowids.len() * dimension` floats.
    pub(super) vectors: Vec<f32>,
}

impl VectorCache {
    pub(super) fn bytes(&self) -> u64 {
        (self.vectors.len() * 4 + self.rowids.len() * (8 + 2 * std::mem::size_of::<Arc<str>>()))
            as u64
    }
}

/// What a copy of `rows` vectors of `dimension` floats would take, before loading it.
pub(super) fn estimated_bytes(rows: u64, dimension: usize) -> u64 {
    rows.saturating_mul(dimension as u64 * 4 + 8 + 2 * std::mem::size_of::<Arc<str>>() as u64)
}

/// A score ordered totally, so it can sit in a heap.
#[derive(PartialEq)]
struct Scored(f32, usize);
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

/// The `k` best (score, index) pairs seen so far: a min-heap, so the worst is the one dropped.
pub(super) struct Best {
    k: usize,
    heap: BinaryHeap<Reverse<Scored>>,
}

impl Best {
    pub(super) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// Whether `score` can still enter: a cheap reject before filter and heap work.
    pub(super) fn admits(&self, score: f32) -> bool {
        self.heap.len() < self.k
            || self
                .heap
                .peek()
                .is_some_and(|Reverse(worst)| score > worst.0)
    }

    pub(super) fn push(&mut self, score: f32, index: usize) {
        self.heap.push(Reverse(Scored(score, index)));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// Best first; equal scores by index.
    pub(super) fn into_sorted(self) -> Vec<(usize, f32)> {
        let mut best: Vec<(usize, f32)> = self
            .heap
            .into_iter()
            .map(|Reverse(Scored(s, i))| (i, s))
            .collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        best
    }
}

/// Dot product with eight independent accumulators so the compiler vectorizes it.
#[inline]
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

/// Indices of the `k` best rows of a row-major matrix for `query`, best first, among rows `keep` accepts.
pub(super) fn top_k(
    vectors: &[f32],
    dimension: usize,
    query: &[f32],
    k: usize,
    mut keep: impl FnMut(usize) -> bool,
) -> Vec<(usize, f32)> {
    if k == 0 || dimension == 0 {
        return Vec::new();
    }
    let mut best = Best::new(k);
    for (index, row) in vectors.chunks_exact(dimension).enumerate() {
        let score = dot(row, query);
        if best.admits(score) && keep(index) {
            best.push(score, index);
        }
    }
    best.into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_best_first_and_respects_k() {
        let vectors = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8, -1.0, 0.0];
        let best = top_k(&vectors, 2, &[0.0, 1.0], 2, |_| true);
        assert_eq!(best.iter().map(|b| b.0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(top_k(&vectors, 2, &[0.0, 1.0], 0, |_| true), []);
    }
}
