//! Embeddings for the source index: the trait, and the check every provider's answer goes through.

use futures::future::BoxFuture;

use super::LlmError;

/// Embeddings for the source index.
pub trait Embedder: Send + Sync {
    /// One vector per text, in order, each of `dimension()` floats.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, LlmError>>;
    /// The embedding model's name, as sent to the provider.
    fn model(&self) -> &str;
    /// The configured vector dimension.
    fn dimension(&self) -> usize;
}

/// Checks that the provider returned `expected_count` vectors of `dimension` floats each.
pub(super) fn check_vectors(
    model: &str,
    provider: &'static str,
    dimension: usize,
    expected_count: usize,
    vectors: &[Vec<f32>],
) -> Result<(), LlmError> {
    if vectors.len() != expected_count {
        return Err(LlmError::BadResponse {
            provider,
            model: model.to_owned(),
            detail: format!("{} vectors for {expected_count} texts", vectors.len()),
        });
    }
    if let Some(bad) = vectors.iter().find(|v| v.len() != dimension) {
        return Err(LlmError::Dimension {
            model: model.to_owned(),
            expected: dimension,
            received: bad.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_dimension_names_model_and_both_sizes() {
        let err = check_vectors("m1", "Ollama", 3, 1, &[vec![0.0; 4]]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("'m1'") && text.contains("dimension 4") && text.contains("expected 3")
        );
    }
}
