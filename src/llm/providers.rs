//! The chat model and the embedder the settings describe, each on its provider with the shared transport.

use std::sync::Arc;

use url::Url;

use super::{
    ChatModel, Embedder, LlmError, LlmSettings, Provider, RetryPolicy, ollama, openai,
    settings::{OLLAMA_DEFAULT_HOST, OLLAMA_HOST_ENV},
    transport,
};

/// The chat model the settings describe. Nothing is sent and no key is read until it is used.
pub fn chat_model(settings: &LlmSettings) -> Result<Arc<dyn ChatModel>, LlmError> {
    chat_model_with_policy(settings, RetryPolicy::from_env()?)
}

/// [`chat_model`] with an explicit timeout and retry policy.
pub fn chat_model_with_policy(
    settings: &LlmSettings,
    policy: RetryPolicy,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let transport = transport::ProviderTransport::new(policy)?;
    let model = settings.chat_model.clone();
    let max_tokens = transport::max_output_tokens_from_env()?;
    Ok(match settings.provider {
        Provider::Ollama => Arc::new(ollama::OllamaChat::new(
            ollama_host(settings.base_url.as_ref())?,
            model,
            max_tokens,
            transport,
        )),
        provider => Arc::new(openai::OpenAiChat::new(
            openai::Endpoint::for_chat(provider, settings.base_url.as_ref()),
            model,
            max_tokens,
            transport,
        )),
    })
}

/// The embedder the settings describe. Nothing is sent and no key is read until it is used.
pub fn embedder(settings: &LlmSettings) -> Result<Arc<dyn Embedder>, LlmError> {
    embedder_with_policy(settings, RetryPolicy::from_env()?)
}

/// [`embedder`] with an explicit timeout and retry policy.
pub fn embedder_with_policy(
    settings: &LlmSettings,
    policy: RetryPolicy,
) -> Result<Arc<dyn Embedder>, LlmError> {
    let transport = transport::ProviderTransport::new(policy)?;
    let model = settings.embed_model.clone();
    let dimension = settings.embed_dimension as usize;
    Ok(match settings.provider {
        Provider::Ollama => Arc::new(ollama::OllamaEmbedder::new(
            ollama_host(
                settings
                    .embed_base_url
                    .as_ref()
                    .or(settings.base_url.as_ref()),
            )?,
            model,
            dimension,
            transport,
        )),
        provider => Arc::new(openai::OpenAiEmbedder::new(
            openai::Endpoint::for_embeddings(
                provider,
                settings.base_url.as_ref(),
                settings.embed_base_url.as_ref(),
            ),
            model,
            dimension,
            transport,
        )),
    })
}

/// The Ollama host: the given URL, else `OLLAMA_HOST` (`host`, `host:port` or a URL), else localhost:11434.
fn ollama_host(base_url: Option<&Url>) -> Result<Url, LlmError> {
    if let Some(url) = base_url {
        return Ok(url.clone());
    }
    let Some(raw) = transport::non_empty_env(OLLAMA_HOST_ENV) else {
        return Url::parse(OLLAMA_DEFAULT_HOST).map_err(|e| LlmError::Config(e.to_string()));
    };
    let with_scheme = if raw.contains("://") {
        raw.clone()
    } else {
        format!("http://{raw}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|e| {
        LlmError::Config(format!(
            "{OLLAMA_HOST_ENV}='{raw}' is not a host or URL ({e})"
        ))
    })?;
    if url.port().is_none() && !raw.contains("://") {
        let _ = url.set_port(Some(11434));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_defaults_to_localhost() {
        let url = ollama_host(Some(&url::Url::parse("http://h:1").unwrap())).unwrap();
        assert_eq!(url.as_str(), "http://h:1/");
    }
}
