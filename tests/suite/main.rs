//! The integration tests, one binary so the library is linked once. Each module is one area; the
//! support modules start real servers on 127.0.0.1 and drive the built `fault` binary over MCP.

mod common;
mod index_support;
mod llm_fakes;
mod optional;
mod python_client;
mod qdrant_fake;
mod scenario_support;

mod advice_examples;
mod advice_tools;
mod code_reference_parsers;
mod index_context;
mod index_embedded;
mod index_example;
mod index_progress;
mod index_qdrant;
mod llm_embed;
mod llm_keys;
mod llm_local_e2e;
mod llm_tools_ollama;
mod llm_tools_openai;
mod llm_user_home;
mod load_http_framing;
mod load_open_model;
mod mcp_chaos;
mod mcp_code;
mod mcp_errors;
mod mcp_examples;
mod mcp_http;
mod mcp_load;
mod mcp_proxy;
mod mcp_proxy_determinism;
mod mcp_proxy_http;
mod mcp_proxy_http_session;
mod mcp_proxy_http_upstream;
mod mcp_proxy_python;
mod mcp_proxy_wire;
mod mcp_server;
mod mcp_stdio;
mod mcp_test_server;
mod proxy_cli;
mod proxy_faults;
mod report_figures;
mod robustness;
mod scenario_tools;
