//! One client session to a server outside a chaos run, for what calls a server as its clients would (`fault
//! mcp-scan`), built on the run's own harness.

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{ChaosError, ChaosSpec, Harness, ServerUnderTest};
use crate::{
    mcp_load::{self, CallLoad},
    mcp_proxy::plan::Plan,
    mcp_wire::client::McpClient,
    report::chaos::record::Schemas,
};

/// One client session to the server, handshaken, for what calls a server as its clients would (`fault
/// mcp-scan`): behind the proxy with `plan` (a command server behind its relay, which ends its process group
/// when the connection is closed or dropped; a URL server behind an HTTP front when the plan has faults).
pub struct Connection {
    harness: Harness,
    client: Arc<McpClient>,
    schemas: Arc<Schemas>,
}

impl Connection {
    pub async fn open(
        server: &ServerUnderTest,
        plan: Plan,
        start_timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Self, ChaosError> {
        let spec = ChaosSpec {
            server: server.clone(),
            plan,
            load: CallLoad {
                calls: Vec::new(),
                pace: mcp_load::CallPace::Repeat(0),
                num_clients: 1,
                concurrency: 1,
                policy: mcp_load::CallPolicy {
                    timeout: start_timeout,
                    retries: 0,
                    backoff: Duration::ZERO,
                },
                as_tasks: false,
            },
            baseline: false,
            sessions: 1,
            start_timeout,
        };
        let mut harness = Harness::start(&spec, true).await?;
        let schemas = harness
            .handshake(server, false, start_timeout, cancel)
            .await?;
        let (Some(session), Some(schemas)) = (harness.sessions.first(), schemas.into_iter().next())
        else {
            return Err(ChaosError::ServerStart {
                reason: "no session was opened".into(),
                diagnostics: String::new(),
            });
        };
        Ok(Self {
            client: session.client.clone(),
            harness,
            schemas,
        })
    }

    pub fn client(&self) -> &Arc<McpClient> {
        &self.client
    }

    /// The output schemas and annotations of the tools the handshake listed.
    pub fn schemas(&self) -> &Arc<Schemas> {
        &self.schemas
    }

    /// The last lines the server wrote on stderr (a command server), for evidence of a crash.
    pub fn stderr(&self) -> String {
        self.harness
            .sessions
            .first()
            .map(|s| s.stderr.text())
            .unwrap_or_default()
    }

    /// Closes the session and ends a command server.
    pub async fn close(self) {
        self.harness.stop().await;
    }
}
