//! HTTP/1.1 over TCP or TLS, built for measuring.
//!
//! The request is serialized once per run; each exchange writes it and parses the response in place with
//! `httparse`, in the caller's task: no connection task, no channel, no header map per request. That keeps
//! the generator's own cost per request close to `wrk`'s. A connection is kept alive when the response
//! allows it; a request that gets nothing back on a reused connection is retried once on a fresh one, as
//! real clients do when a server has closed an idle connection.

use std::{
    io,
    net::SocketAddr,
    sync::atomic::{AtomicU64, Ordering},
};

use bytes::{Buf, BytesMut};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::TlsConnector;

use crate::http1::{self, BodyDecoder, BodyFraming, FramingError};
use crate::tls::ClientStream;

/// Read buffer per connection; grows only for a larger response head.
const READ_BUFFER: usize = 16 * 1024;

/// What the server answered once the whole body was read.
pub(super) struct Received {
    pub status: u16,
    pub body_bytes: u64,
    /// The body's first bytes, when the request asked to keep them (empty otherwise).
    pub body: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum ExchangeError {
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("TLS handshake with {host}: {source}")]
    Tls { host: String, source: io::Error },
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("connection closed before the response was complete")]
    Closed,
    #[error("invalid HTTP response: {0}")]
    Malformed(#[from] FramingError),
}

/// Where and how connections are opened: the address to dial (the service, or a proxy in front of it) and,
/// for `https`, TLS with the URL's host as server name.
pub(super) struct Connector {
    pub dial: SocketAddr,
    pub tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    pub opened: AtomicU64,
}

impl Connector {
    pub async fn open(&self) -> Result<Connection, ExchangeError> {
        let tcp = TcpStream::connect(self.dial)
            .await
            .map_err(|source| ExchangeError::Connect {
                addr: self.dial,
                source,
            })?;
        // Small requests must not wait for Nagle.
        let _ = tcp.set_nodelay(true);
        let stream = match &self.tls {
            None => ClientStream::Plain(tcp),
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|source| ExchangeError::Tls {
                        host: name.to_str().into_owned(),
                        source,
                    })?;
                ClientStream::Tls(Box::new(tls))
            }
        };
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(Connection {
            stream,
            buffer: BytesMut::with_capacity(READ_BUFFER),
        })
    }
}

/// One kept-alive connection.
pub(super) struct Connection {
    stream: ClientStream,
    buffer: BytesMut,
}

/// The request as it goes on the wire, whether its response can carry a body, and how many of the body's
/// bytes to keep (0: none, the usual case: a body is counted, not kept).
pub(super) struct Wire<'a> {
    pub bytes: &'a [u8],
    pub is_head: bool,
    pub keep_body: usize,
}

/// A failure, and whether the server answered anything before it (then a retry would repeat a request the
/// server may have acted on).
struct ExchangeFailure {
    error: ExchangeError,
    answered: bool,
}

impl Connection {
    /// Sends the request and reads the whole response. Returns the answer and the connection if it can
    /// carry another request.
    async fn exchange(
        mut self,
        wire: &Wire<'_>,
    ) -> Result<(Received, Option<Self>), ExchangeFailure> {
        let before = |error: ExchangeError| ExchangeFailure {
            error,
            answered: false,
        };
        self.stream
            .write_all(wire.bytes)
            .await
            .map_err(|e| before(e.into()))?;
        self.stream.flush().await.map_err(|e| before(e.into()))?;
        let head = self.read_head().await?;
        let framing = head.body(wire.is_head);
        let mut body = Vec::new();
        let body_bytes = self
            .read_body(framing, &mut body, wire.keep_body)
            .await
            .map_err(|error| ExchangeFailure {
                error,
                answered: true,
            })?;
        // Leftover bytes would be a response nobody asked for: do not reuse such a connection.
        let reusable =
            head.keep_alive && framing != BodyFraming::UntilClose && self.buffer.is_empty();
        let answer = Received {
            status: head.status,
            body_bytes,
            body,
        };
        Ok((answer, reusable.then_some(self)))
    }

    /// Reads more bytes into the buffer; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.buffer.capacity() - self.buffer.len() < READ_BUFFER / 4 {
            self.buffer.reserve(READ_BUFFER);
        }
        Ok(self.stream.read_buf(&mut self.buffer).await? > 0)
    }

    /// Reads the final response head (skipping interim 1xx responses).
    async fn read_head(&mut self) -> Result<http1::ResponseHead, ExchangeFailure> {
        let mut answered = false;
        loop {
            match http1::parse_response_head(&self.buffer) {
                Ok(Some(head)) => {
                    self.buffer.advance(head.len);
                    // 100 Continue, 103 Early Hints: the real response follows.
                    if head.is_interim() {
                        answered = true;
                        continue;
                    }
                    return Ok(head);
                }
                Ok(None) => {
                    let more = self.fill().await.map_err(|e| ExchangeFailure {
                        error: e.into(),
                        answered: answered || !self.buffer.is_empty(),
                    })?;
                    if !more {
                        return Err(ExchangeFailure {
                            error: ExchangeError::Closed,
                            answered: answered || !self.buffer.is_empty(),
                        });
                    }
                }
                Err(e) => {
                    return Err(ExchangeFailure {
                        error: e.into(),
                        answered: true,
                    });
                }
            }
        }
    }

    /// Consumes the response body, keeping up to `keep` of its payload bytes in `kept`; returns its payload
    /// size.
    async fn read_body(
        &mut self,
        framing: BodyFraming,
        kept: &mut Vec<u8>,
        keep: usize,
    ) -> Result<u64, ExchangeError> {
        let mut body = BodyDecoder::new(framing);
        loop {
            let step = if keep == 0 {
                body.step(&self.buffer)
            } else {
                body.step_keeping(&self.buffer, kept, keep)
            };
            self.buffer.advance(step.consumed);
            if let Some(error) = step.error {
                return Err(error.into());
            }
            if step.done {
                return Ok(body.payload());
            }
            if !self.fill().await? {
                return if body.ends_at_close() {
                    Ok(body.payload())
                } else {
                    Err(ExchangeError::Closed)
                };
            }
        }
    }
}

/// Runs one request: on `idle` if given, else on a new connection. Returns the answer and the connection
/// to keep for the next request, if it can be kept.
pub(super) async fn exchange(
    idle: Option<Connection>,
    connector: &Connector,
    wire: &Wire<'_>,
) -> (Result<Received, ExchangeError>, Option<Connection>) {
    if let Some(connection) = idle {
        match connection.exchange(wire).await {
            Ok((answer, kept)) => return (Ok(answer), kept),
            // Nothing came back on a reused connection: it was closed under us; retry fresh.
            Err(ExchangeFailure {
                answered: false, ..
            }) => {}
            Err(ExchangeFailure { error, .. }) => return (Err(error), None),
        }
    }
    let connection = match connector.open().await {
        Ok(c) => c,
        Err(e) => return (Err(e), None),
    };
    match connection.exchange(wire).await {
        Ok((answer, kept)) => (Ok(answer), kept),
        Err(ExchangeFailure { error, .. }) => (Err(error), None),
    }
}
