//! OpenAI-compatible provider on `async-openai`: OpenAI, OpenRouter, or any server at a base URL
//! (vLLM, llama.cpp's server, LM Studio, Gemini's OpenAI endpoint, Ollama's /v1).
//!
//! Requests go through our [`ProviderTransport`] (timeout, retries with jitter) plugged into async-openai as its
//! HTTP service, so the crate builds the requests and parses the answers while we own the retry policy.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU16, Ordering},
    },
    task::{Context, Poll},
};

use async_openai::{
    Client,
    config::OpenAIConfig,
    error::OpenAIError,
    middleware::HttpRequestFactory,
    types::{
        chat::{
            ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
            ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage,
            CreateChatCompletionRequest, FinishReason, ResponseFormat, ResponseFormatJsonSchema,
        },
        embeddings::{CreateEmbeddingRequest, EmbeddingInput, EncodingFormat},
    },
};
use futures::future::BoxFuture;
use url::Url;

use super::{
    COMPATIBLE_KEY_ENV, ChatAnswer, ChatModel, Embedder, LlmError, Message, OPENAI_BASE_URL,
    OPENAI_HOST, OPENAI_KEY_ENV, OPENROUTER_BASE_URL, OPENROUTER_HOST, OPENROUTER_KEY_ENV,
    OutputSchema, Provider, Role,
    embed::check_vectors,
    transport::{ProviderTransport, non_empty_env},
};
use crate::redact::redacted;

/// Where the key comes from.
#[derive(Debug, Clone, Copy)]
enum Key {
    /// The provider needs it: a clear error when it is missing.
    Required(&'static str),
    /// Sent when set (local servers usually need none).
    Optional(&'static str),
}

/// An OpenAI-compatible API: its base URL, its key and its name in messages.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    base_url: String,
    key: Key,
    provider: &'static str,
}

impl Endpoint {
    pub(super) fn for_chat(provider: Provider, base_url: Option<&Url>) -> Self {
        match (provider, base_url) {
            (_, Some(base)) => Self::at(base),
            (Provider::OpenRouter, None) => Self {
                base_url: OPENROUTER_BASE_URL.to_owned(),
                key: Key::Required(OPENROUTER_KEY_ENV),
                provider: "OpenRouter",
            },
            (_, None) => Self {
                base_url: OPENAI_BASE_URL.to_owned(),
                key: Key::Required(OPENAI_KEY_ENV),
                provider: "OpenAI",
            },
        }
    }

    /// Embeddings follow the chat endpoint unless --llm-embed-base-url names another server.
    pub(super) fn for_embeddings(
        provider: Provider,
        chat_base: Option<&Url>,
        embed_base: Option<&Url>,
    ) -> Self {
        match embed_base {
            Some(base) => Self::at(base),
            None => Self::for_chat(provider, chat_base),
        }
    }

    /// A base URL gets a provider's key only when it is that provider's own https host; any other server
    /// gets `FAULT_LLM_API_KEY`, and only when it is set, so a key never leaves for a host it was not made for.
    fn at(base: &Url) -> Self {
        let own_host = |host: &str| base.scheme() == "https" && base.host_str() == Some(host);
        let (key, provider) = if own_host(OPENAI_HOST) {
            (Key::Required(OPENAI_KEY_ENV), "OpenAI")
        } else if own_host(OPENROUTER_HOST) {
            (Key::Required(OPENROUTER_KEY_ENV), "OpenRouter")
        } else {
            (
                Key::Optional(COMPATIBLE_KEY_ENV),
                "OpenAI-compatible server",
            )
        };
        Self {
            base_url: base_string(base),
            key,
            provider,
        }
    }

    /// An async-openai client for one call, with the key read now and our transport as its HTTP service.
    fn client(
        &self,
        transport: &ProviderTransport,
    ) -> Result<(Client<OpenAIConfig>, StatusProbe), LlmError> {
        let key = match self.key {
            Key::Required(var) => non_empty_env(var).ok_or(LlmError::MissingKey {
                provider: self.provider,
                var,
            })?,
            Key::Optional(var) => non_empty_env(var).unwrap_or_default(),
        };
        let mut config = OpenAIConfig::new()
            .with_api_base(self.base_url.clone())
            .with_api_key(key.clone());
        if !matches!(self.key, Key::Required(OPENAI_KEY_ENV)) {
            // async-openai reads OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment: OpenAI's only.
            config = config.with_org_id("").with_project_id("");
        }
        let probe = StatusProbe::default();
        let service = RetryingService {
            transport: transport.clone(),
            probe: probe.clone(),
            sends_key: !key.is_empty(),
        };
        let client = Client::build(transport.http().clone(), config).with_http_service(service);
        Ok((client, probe))
    }

    /// OpenAI's strict mode (and OpenRouter's pass-through to it) refuses length keywords; other servers
    /// (llama.cpp, vLLM) turn them into a grammar that keeps a small model from rambling.
    fn refuses_length_keywords(&self) -> bool {
        matches!(self.key, Key::Required(_))
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }
}

fn base_string(url: &Url) -> String {
    url.as_str().trim_end_matches('/').to_owned()
}

/// The HTTP status of the last response, kept because async-openai drops it when an error body is not JSON.
#[derive(Clone, Default)]
struct StatusProbe(Arc<AtomicU16>);

impl StatusProbe {
    fn status(&self) -> Option<u16> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s),
        }
    }
}

/// async-openai's HTTP service: our transport, so retries follow our policy.
#[derive(Clone)]
struct RetryingService {
    transport: ProviderTransport,
    probe: StatusProbe,
    /// async-openai always sends `Authorization`, empty or not; without a key, none is sent.
    sends_key: bool,
}

impl tower::Service<HttpRequestFactory> for RetryingService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = BoxFuture<'static, Result<reqwest::Response, OpenAIError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let transport = self.transport.clone();
        let probe = self.probe.clone();
        let sends_key = self.sends_key;
        Box::pin(async move {
            let response = transport
                .send(|| {
                    let factory = factory.clone();
                    Box::pin(async move {
                        let mut request = factory.build().await?;
                        if !sends_key {
                            request.headers_mut().remove(reqwest::header::AUTHORIZATION);
                        }
                        Ok::<_, OpenAIError>(request)
                    })
                })
                .await?
                .map_err(OpenAIError::Reqwest)?;
            probe.0.store(response.status().as_u16(), Ordering::Relaxed);
            Ok(response)
        })
    }
}

/// Turns an async-openai error into ours, with provider, model and URL.
fn map_error(
    error: OpenAIError,
    endpoint: &Endpoint,
    path: &str,
    model: &str,
    probe: &StatusProbe,
    transport: &ProviderTransport,
) -> LlmError {
    let url = Url::parse(&endpoint.url(path))
        .map(|u| redacted(&u))
        .unwrap_or_else(|_| endpoint.url(path));
    match error {
        OpenAIError::Reqwest(e) if e.is_timeout() => LlmError::Timeout {
            provider: endpoint.provider,
            model: model.to_owned(),
            url,
            secs: transport.policy().timeout.as_secs().max(1),
        },
        OpenAIError::Reqwest(e) => LlmError::Unreachable {
            provider: endpoint.provider,
            model: model.to_owned(),
            url,
            detail: error_chain(&e),
        },
        OpenAIError::ApiError(api) => LlmError::Api {
            provider: endpoint.provider,
            model: model.to_owned(),
            url,
            status: api.status_code.as_u16(),
            message: api.api_error.message,
        },
        OpenAIError::JSONDeserialize(e, content) => {
            tracing::debug!(%content, "unparsable response body");
            match probe.status().filter(|s| !(200..300).contains(s)) {
                Some(status) => LlmError::Api {
                    provider: endpoint.provider,
                    model: model.to_owned(),
                    url,
                    status,
                    message: snippet_of(&content),
                },
                None => LlmError::BadResponse {
                    provider: endpoint.provider,
                    model: model.to_owned(),
                    detail: format!("the response is not the expected JSON ({e})"),
                },
            }
        }
        other => LlmError::BadResponse {
            provider: endpoint.provider,
            model: model.to_owned(),
            detail: other.to_string(),
        },
    }
}

/// The first line of an error body, shortened: enough to act on, never a whole HTML page.
fn snippet_of(body: &str) -> String {
    let line = body.trim().lines().next().unwrap_or("(empty body)");
    let mut short: String = line.chars().take(200).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(super) struct OpenAiChat {
    endpoint: Endpoint,
    model: String,
    max_tokens: Option<u32>,
    transport: ProviderTransport,
}

impl OpenAiChat {
    pub(super) fn new(
        endpoint: Endpoint,
        model: String,
        max_tokens: Option<u32>,
        transport: ProviderTransport,
    ) -> Self {
        Self {
            endpoint,
            model,
            max_tokens,
            transport,
        }
    }

    async fn complete(
        &self,
        messages: &[Message],
        schema: &OutputSchema,
        max_tokens: u32,
    ) -> Result<ChatAnswer, LlmError> {
        let (client, probe) = self.endpoint.client(&self.transport)?;
        let request = CreateChatCompletionRequest {
            model: self.model.clone(),
            messages: messages.iter().map(to_openai_message).collect(),
            max_completion_tokens: Some(max_tokens),
            response_format: Some(ResponseFormat::JsonSchema {
                json_schema: ResponseFormatJsonSchema {
                    description: None,
                    name: schema.name.clone(),
                    schema: if schema.strict && self.endpoint.refuses_length_keywords() {
                        strict_subset(&schema.schema)
                    } else {
                        schema.schema.clone()
                    },
                    strict: Some(schema.strict),
                },
            }),
            ..Default::default()
        };
        tracing::debug!(provider = self.endpoint.provider, model = %self.model,
            messages = messages.len(), schema = %schema.name, "chat request");
        let response = client.chat().create(request).await.map_err(|e| {
            map_error(
                e,
                &self.endpoint,
                "/chat/completions",
                &self.model,
                &probe,
                &self.transport,
            )
        })?;
        let bad = |detail: String| LlmError::BadResponse {
            provider: self.endpoint.provider,
            model: self.model.clone(),
            detail,
        };
        let written = response.usage.as_ref().map(|u| u.completion_tokens);
        let choice = response
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| bad("the answer has no choices".into()))?;
        let cut = choice.finish_reason == Some(FinishReason::Length);
        tracing::info!(provider = self.endpoint.provider, model = %self.model, max_tokens,
            tokens = ?written, finish = ?choice.finish_reason, "answer received");
        match (choice.message.content, choice.message.refusal) {
            (Some(text), _) if !text.trim().is_empty() => Ok(ChatAnswer { text, cut, written }),
            (_, None) if cut => Err(LlmError::Truncated {
                provider: self.endpoint.provider,
                model: self.model.clone(),
                limit: max_tokens,
                written,
            }),
            (_, Some(refusal)) => Err(bad(format!("the model refused: {refusal}"))),
            _ => Err(bad(format!(
                "the answer is empty (finish reason: {:?})",
                choice.finish_reason
            ))),
        }
    }
}

/// The schema without the keywords OpenAI's strict mode refuses; we still validate against the full one.
fn strict_subset(schema: &serde_json::Value) -> serde_json::Value {
    const REFUSED: [&str; 4] = ["minLength", "maxLength", "minItems", "maxItems"];
    match schema {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(key, _)| !REFUSED.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), strict_subset(value)))
            .collect(),
        serde_json::Value::Array(items) => items.iter().map(strict_subset).collect(),
        other => other.clone(),
    }
}

fn to_openai_message(message: &Message) -> ChatCompletionRequestMessage {
    let text = message.content.clone();
    match message.role {
        Role::System => ChatCompletionRequestSystemMessage::from(text).into(),
        Role::User => ChatCompletionRequestUserMessage::from(text).into(),
        Role::Assistant => ChatCompletionRequestAssistantMessage::from(text).into(),
    }
}

impl ChatModel for OpenAiChat {
    fn chat_json<'a>(
        &'a self,
        messages: &'a [Message],
        schema: &'a OutputSchema,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<ChatAnswer, LlmError>> {
        Box::pin(self.complete(messages, schema, max_tokens))
    }

    fn output_limit(&self, budget: u32) -> u32 {
        super::output_limit(self.max_tokens, &self.model, budget)
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &'static str {
        self.endpoint.provider
    }
}

pub(super) struct OpenAiEmbedder {
    endpoint: Endpoint,
    model: String,
    dimension: usize,
    transport: ProviderTransport,
}

impl OpenAiEmbedder {
    pub(super) fn new(
        endpoint: Endpoint,
        model: String,
        dimension: usize,
        transport: ProviderTransport,
    ) -> Self {
        Self {
            endpoint,
            model,
            dimension,
            transport,
        }
    }

    async fn embed_all(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (client, probe) = self.endpoint.client(&self.transport)?;
        let request = CreateEmbeddingRequest {
            model: self.model.clone(),
            input: EmbeddingInput::StringArray(texts.to_vec()),
            encoding_format: Some(EncodingFormat::Float),
            user: None,
            dimensions: None,
        };
        tracing::debug!(provider = self.endpoint.provider, model = %self.model, texts = texts.len(),
            "embeddings request");
        let response = client.embeddings().create(request).await.map_err(|e| {
            let error = map_error(
                e,
                &self.endpoint,
                "/embeddings",
                &self.model,
                &probe,
                &self.transport,
            );
            no_embeddings_hint(error, &self.endpoint)
        })?;
        let mut data = response.data;
        data.sort_by_key(|e| e.index);
        let vectors: Vec<Vec<f32>> = data.into_iter().map(|e| e.embedding).collect();
        check_vectors(
            &self.model,
            self.endpoint.provider,
            self.dimension,
            texts.len(),
            &vectors,
        )?;
        Ok(vectors)
    }
}

/// A 404/405, or a "model not found"-like refusal, from an embeddings endpoint means the provider has no
/// embeddings for this model: say how to point embeddings elsewhere.
fn no_embeddings_hint(error: LlmError, endpoint: &Endpoint) -> LlmError {
    match error {
        LlmError::Api {
            provider,
            model,
            status,
            message,
            ..
        } if status == 404
            || status == 405
            || (status == 400 && message.to_lowercase().contains("model")) =>
        {
            LlmError::NoEmbeddings {
                provider,
                model,
                url: endpoint.url("/embeddings"),
                detail: format!("HTTP {status}: {message}"),
            }
        }
        other => other,
    }
}

impl Embedder for OpenAiEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, LlmError>> {
        Box::pin(self.embed_all(texts))
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn dimension(&self) -> usize {
        self.dimension
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_for(base: &str) -> Option<&'static str> {
        let endpoint = Endpoint::at(&Url::parse(base).unwrap());
        match endpoint.key {
            Key::Required(var) => Some(var),
            Key::Optional(_) => None,
        }
    }

    #[test]
    fn a_provider_key_goes_only_to_its_own_https_host() {
        assert_eq!(key_for("https://api.openai.com/v1"), Some(OPENAI_KEY_ENV));
        assert_eq!(
            key_for("https://openrouter.ai/api/v1"),
            Some(OPENROUTER_KEY_ENV)
        );
        for elsewhere in [
            "http://api.openai.com/v1",
            "https://api.openai.com.example.net/v1",
            "https://openrouter.ai.example.net/api/v1",
            "http://127.0.0.1:8080/v1",
        ] {
            assert_eq!(key_for(elsewhere), None, "{elsewhere}");
        }
        let compatible = Endpoint::at(&Url::parse("http://127.0.0.1:8080/v1").unwrap());
        assert!(matches!(compatible.key, Key::Optional(COMPATIBLE_KEY_ENV)));
    }
}
