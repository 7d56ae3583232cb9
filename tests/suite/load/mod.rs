//! The load generator: its HTTP/1.1 client, open-model pacing, workloads and Locust as an engine.

mod http_framing;
mod locust;
mod open_model;
mod workloads;
