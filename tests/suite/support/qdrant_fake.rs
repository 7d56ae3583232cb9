//! Qdrant misbehaving on demand, which a real server cannot be made to do: unavailable (nothing listens on
//! the port) and slow (a listener that accepts connections and never answers). Everything else about the
//! Qdrant store is tested against a real Qdrant (`FAULT_TEST_QDRANT_URL`, see `index::qdrant`).

use std::sync::{Arc, Mutex};

/// A gRPC URL on 127.0.0.1 where nothing listens.
pub fn unavailable_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// A "Qdrant" that accepts connections and never sends a byte: every request waits for the client's own
/// timeout. Connections are held until this is dropped.
pub struct HungQdrant {
    /// gRPC URL for `--qdrant-url` or a project record.
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl HungQdrant {
    pub async fn start() -> HungQdrant {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                held.lock().unwrap().push(stream);
            }
        });
        HungQdrant { url, task }
    }
}

impl Drop for HungQdrant {
    fn drop(&mut self) {
        self.task.abort();
    }
}
