//! The LLM clients and tools against stand-in OpenAI and Ollama servers, and against a real local model.

mod embed;
mod keys;
mod local_e2e;
mod tools_ollama;
mod tools_openai;
mod user_home;
