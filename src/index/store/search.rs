//! Searching a store: the filter, the hits, and the cosine's unit vectors.

use serde::Serialize;

/// Restricts a search; empty lists mean no restriction.
#[derive(Debug, Clone, Default)]
pub struct SearchFilter {
    pub languages: Vec<String>,
    /// Exact relative paths.
    pub paths: Vec<String>,
}

impl SearchFilter {
    pub fn accepts(&self, path: &str, language: &str) -> bool {
        (self.languages.is_empty() || self.languages.iter().any(|l| l == language))
            && (self.paths.is_empty() || self.paths.iter().any(|p| p == path))
    }
}

/// A search result with its payload.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub path: String,
    pub language: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

/// Scales `v` to unit length (left as is when it is all zeros), so a dot product is the cosine.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
