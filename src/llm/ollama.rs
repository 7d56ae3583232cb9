//! Ollama provider: `/api/chat` (structured output through `format`) and `/api/embed`.
//!
//! Requests and answers are `ollama-rs`'s wire types; they travel through our [`ProviderTransport`] so that Ollama
//! gets the same timeout and retry policy as the OpenAI-compatible provider, and errors keep their status.

use futures::future::BoxFuture;
use ollama_rs::{
    generation::{
        chat::{ChatMessage, ChatMessageResponse, MessageRole, request::ChatMessageRequest},
        embeddings::{
            GenerateEmbeddingsResponse,
            request::{EmbeddingsInput, GenerateEmbeddingsRequest},
        },
        parameters::{FormatType, JsonStructure},
    },
    models::ModelOptions,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use url::Url;

use super::{
    ChatAnswer, ChatModel, Embedder, LlmError, Message, OutputSchema, Role, embed::check_vectors,
    transport::ProviderTransport,
};
use crate::redact::redacted;

const PROVIDER: &str = "Ollama";

/// The Ollama host and the shared transport.
#[derive(Debug, Clone)]
struct OllamaApi {
    host: Url,
    transport: ProviderTransport,
}

impl OllamaApi {
    /// `<host>/api/<path>`; a trailing `/v1` (the OpenAI-compatible prefix) is dropped.
    fn url(&self, path: &str) -> String {
        let base = self.host.as_str().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/api/{path}")
    }

    async fn post<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        model: &str,
        body: &Req,
    ) -> Result<Resp, LlmError> {
        let url = self.url(path);
        let shown_url = Url::parse(&url)
            .map(|u| redacted(&u))
            .unwrap_or_else(|_| url.clone());
        let body = serde_json::to_vec(body).map_err(|e| LlmError::Config(e.to_string()))?;
        let http = self.transport.http().clone();
        let response = self
            .transport
            .send(|| {
                let request = http
                    .post(&url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
                    .build();
                Box::pin(async move { request })
            })
            .await
            .map_err(|e| {
                LlmError::Config(format!("cannot build the request to {shown_url}: {e}"))
            })?;
        let response = response.map_err(|e| self.transport_error(e, model, &shown_url))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e, model, &shown_url))?;
        if !status.is_success() {
            return Err(LlmError::Api {
                provider: PROVIDER,
                model: model.to_owned(),
                url: shown_url.clone(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            tracing::debug!(body = %String::from_utf8_lossy(&bytes), "unparsable Ollama answer");
            LlmError::BadResponse {
                provider: PROVIDER,
                model: model.to_owned(),
                detail: format!("the response is not the expected JSON ({e})"),
            }
        })
    }

    fn transport_error(&self, error: reqwest::Error, model: &str, url: &str) -> LlmError {
        if error.is_timeout() {
            LlmError::Timeout {
                provider: PROVIDER,
                model: model.to_owned(),
                url: url.to_owned(),
                secs: self.transport.policy().timeout.as_secs().max(1),
            }
        } else {
            let mut detail = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                detail.push_str(": ");
                detail.push_str(&cause.to_string());
                source = cause.source();
            }
            LlmError::Unreachable {
                provider: PROVIDER,
                model: model.to_owned(),
                url: url.to_owned(),
                detail,
            }
        }
    }
}

/// Ollama's `{"error": "..."}`, else the body's first line.
fn error_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct OllamaErrorBody {
        error: String,
    }
    match serde_json::from_slice::<OllamaErrorBody>(body) {
        Ok(parsed) => parsed.error,
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let line = text.trim().lines().next().unwrap_or("(empty body)");
            line.chars().take(200).collect()
        }
    }
}

pub(super) struct OllamaChat {
    api: OllamaApi,
    model: String,
    max_tokens: Option<u32>,
}

impl OllamaChat {
    pub(super) fn new(
        host: Url,
        model: String,
        max_tokens: Option<u32>,
        transport: ProviderTransport,
    ) -> Self {
        Self {
            api: OllamaApi { host, transport },
            model,
            max_tokens,
        }
    }

    async fn complete(
        &self,
        messages: &[Message],
        schema: &OutputSchema,
        max_tokens: u32,
    ) -> Result<ChatAnswer, LlmError> {
        let messages = messages.iter().map(to_ollama_message).collect();
        let mut request = ChatMessageRequest::new(self.model.clone(), messages);
        let limit = i32::try_from(max_tokens).unwrap_or(i32::MAX);
        request = request.options(ModelOptions::default().num_predict(limit));
        let structure = schemars::Schema::try_from(schema.schema.clone()).map_err(|e| {
            LlmError::Config(format!("schema '{}' is not an object: {e}", schema.name))
        })?;
        request = request.format(FormatType::StructuredJson(Box::new(
            JsonStructure::new_for_schema(structure),
        )));
        tracing::debug!(provider = PROVIDER, model = %self.model,
            schema = %schema.name, "chat request");
        let response: ChatReply = self.api.post("chat", &self.model, &request).await?;
        let cut = response.done_reason.as_deref() == Some("length");
        let written = response
            .response
            .final_data
            .as_ref()
            .map(|d| u32::try_from(d.eval_count).unwrap_or(u32::MAX));
        tracing::info!(provider = PROVIDER, model = %self.model, max_tokens, tokens = ?written,
            finish = ?response.done_reason, "answer received");
        let text = response.response.message.content;
        if text.trim().is_empty() {
            if cut {
                return Err(LlmError::Truncated {
                    provider: PROVIDER,
                    model: self.model.clone(),
                    limit: max_tokens,
                    written,
                });
            }
            return Err(LlmError::BadResponse {
                provider: PROVIDER,
                model: self.model.clone(),
                detail: "the answer is empty".into(),
            });
        }
        Ok(ChatAnswer { text, cut, written })
    }
}

/// Ollama's chat answer with the `done_reason` ollama-rs does not read (`length` when `num_predict` cut it).
#[derive(Deserialize)]
struct ChatReply {
    #[serde(flatten)]
    response: ChatMessageResponse,
    #[serde(default)]
    done_reason: Option<String>,
}

fn to_ollama_message(message: &Message) -> ChatMessage {
    let role = match message.role {
        Role::System => MessageRole::System,
        Role::User => MessageRole::User,
        Role::Assistant => MessageRole::Assistant,
    };
    ChatMessage::new(role, message.content.clone())
}

impl ChatModel for OllamaChat {
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
        PROVIDER
    }
}

pub(super) struct OllamaEmbedder {
    api: OllamaApi,
    model: String,
    dimension: usize,
}

impl OllamaEmbedder {
    pub(super) fn new(
        host: Url,
        model: String,
        dimension: usize,
        transport: ProviderTransport,
    ) -> Self {
        Self {
            api: OllamaApi { host, transport },
            model,
            dimension,
        }
    }

    async fn embed_all(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let request = GenerateEmbeddingsRequest::new(
            self.model.clone(),
            EmbeddingsInput::Multiple(texts.to_vec()),
        );
        tracing::debug!(provider = PROVIDER, model = %self.model, texts = texts.len(), "embeddings request");
        let response: GenerateEmbeddingsResponse =
            self.api.post("embed", &self.model, &request).await?;
        check_vectors(
            &self.model,
            PROVIDER,
            self.dimension,
            texts.len(),
            &response.embeddings,
        )?;
        Ok(response.embeddings)
    }
}

impl Embedder for OllamaEmbedder {
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
