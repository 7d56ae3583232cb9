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
    pin::Pin,
    sync::atomic::{AtomicU64, Ordering},
    task::{Context, Poll},
};

use bytes::{Buf, BytesMut};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::TcpStream,
};
use tokio_rustls::{TlsConnector, client::TlsStream};

/// Read buffer per connection; grows only for a larger response head.
const READ_BUFFER: usize = 16 * 1024;
/// A response head larger than this is refused.
const MAX_HEAD: usize = 64 * 1024;
/// Header lines parsed per response head.
const MAX_HEADERS: usize = 100;

/// What the server answered once the whole body was read.
pub(super) struct Answer {
    pub status: u16,
    pub body_bytes: u64,
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
    Malformed(String),
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
            None => Stream::Plain(tcp),
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|source| ExchangeError::Tls {
                        host: name.to_str().into_owned(),
                        source,
                    })?;
                Stream::Tls(Box::new(tls))
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
    stream: Stream,
    buffer: BytesMut,
}

/// The request as it goes on the wire, and whether its response can carry a body.
pub(super) struct Wire<'a> {
    pub bytes: &'a [u8],
    pub is_head: bool,
}

/// How the end of a response body is found (RFC 9112 §6.3).
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// A failure, and whether the server answered anything before it (then a retry would repeat a request the
/// server may have acted on).
struct Failure {
    error: ExchangeError,
    answered: bool,
}

impl Connection {
    /// Sends the request and reads the whole response. Returns the answer and the connection if it can
    /// carry another request.
    async fn exchange(mut self, wire: &Wire<'_>) -> Result<(Answer, Option<Self>), Failure> {
        let before = |error: ExchangeError| Failure {
            error,
            answered: false,
        };
        self.stream
            .write_all(wire.bytes)
            .await
            .map_err(|e| before(e.into()))?;
        self.stream.flush().await.map_err(|e| before(e.into()))?;
        let (status, framing, keep_alive) = self.read_head(wire.is_head).await?;
        let after = |error: ExchangeError| Failure {
            error,
            answered: true,
        };
        let body_bytes = match framing {
            Framing::Empty => 0,
            Framing::Length(length) => self.skip_exactly(length).await.map_err(after)?,
            Framing::Chunked => self.skip_chunked().await.map_err(after)?,
            Framing::UntilClose => self.skip_until_close().await.map_err(after)?,
        };
        // Leftover bytes would be a response nobody asked for: do not reuse such a connection.
        let reusable =
            keep_alive && !matches!(framing, Framing::UntilClose) && self.buffer.is_empty();
        Ok((Answer { status, body_bytes }, reusable.then_some(self)))
    }

    /// Reads more bytes into the buffer; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.buffer.capacity() - self.buffer.len() < READ_BUFFER / 4 {
            self.buffer.reserve(READ_BUFFER);
        }
        Ok(self.stream.read_buf(&mut self.buffer).await? > 0)
    }

    /// Parses the status line and headers (skipping interim 1xx responses).
    async fn read_head(&mut self, is_head: bool) -> Result<(u16, Framing, bool), Failure> {
        let mut answered = false;
        loop {
            let parsed = {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut response = httparse::Response::new(&mut headers);
                match response.parse(&self.buffer) {
                    Ok(httparse::Status::Complete(length)) => {
                        Some((length, head_facts(&response, is_head)))
                    }
                    Ok(httparse::Status::Partial) => None,
                    Err(e) => {
                        return Err(Failure {
                            error: ExchangeError::Malformed(e.to_string()),
                            answered: true,
                        });
                    }
                }
            };
            match parsed {
                Some((length, facts)) => {
                    self.buffer.advance(length);
                    let (status, framing, keep_alive) = facts.map_err(|error| Failure {
                        error,
                        answered: true,
                    })?;
                    // 1xx are interim (100 Continue, 103 Early Hints); the real response follows.
                    if (100..200).contains(&status) && status != 101 {
                        answered = true;
                        continue;
                    }
                    return Ok((status, framing, keep_alive));
                }
                None if self.buffer.len() > MAX_HEAD => {
                    return Err(Failure {
                        error: ExchangeError::Malformed(format!(
                            "response head longer than {MAX_HEAD} bytes"
                        )),
                        answered: true,
                    });
                }
                None => {
                    let more = self.fill().await.map_err(|e| Failure {
                        error: e.into(),
                        answered: answered || !self.buffer.is_empty(),
                    })?;
                    if !more {
                        return Err(Failure {
                            error: ExchangeError::Closed,
                            answered: answered || !self.buffer.is_empty(),
                        });
                    }
                }
            }
        }
    }

    /// Consumes exactly `length` body bytes.
    async fn skip_exactly(&mut self, length: u64) -> Result<u64, ExchangeError> {
        let mut left = length;
        loop {
            let here = left.min(self.buffer.len() as u64);
            self.buffer.advance(here as usize);
            left -= here;
            if left == 0 {
                return Ok(length);
            }
            if !self.fill().await? {
                return Err(ExchangeError::Closed);
            }
        }
    }

    /// Consumes a chunked body and its trailers; returns the payload size.
    async fn skip_chunked(&mut self) -> Result<u64, ExchangeError> {
        let mut total = 0u64;
        loop {
            let size = loop {
                match httparse::parse_chunk_size(&self.buffer) {
                    Ok(httparse::Status::Complete((consumed, size))) => {
                        self.buffer.advance(consumed);
                        break size;
                    }
                    Ok(httparse::Status::Partial) => {
                        if !self.fill().await? {
                            return Err(ExchangeError::Closed);
                        }
                    }
                    Err(_) => return Err(ExchangeError::Malformed("invalid chunk size".into())),
                }
            };
            if size == 0 {
                self.skip_trailers().await?;
                return Ok(total);
            }
            self.skip_exactly(size).await?;
            total += size;
            self.expect_line_end().await?;
        }
    }

    async fn expect_line_end(&mut self) -> Result<(), ExchangeError> {
        while self.buffer.len() < 2 {
            if !self.fill().await? {
                return Err(ExchangeError::Closed);
            }
        }
        if &self.buffer[..2] != b"\r\n" {
            return Err(ExchangeError::Malformed(
                "chunk not followed by CRLF".into(),
            ));
        }
        self.buffer.advance(2);
        Ok(())
    }

    /// Skips trailer lines up to the empty line that ends a chunked body.
    async fn skip_trailers(&mut self) -> Result<(), ExchangeError> {
        loop {
            match self.buffer.windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.buffer.advance(2);
                    return Ok(());
                }
                Some(end) => self.buffer.advance(end + 2),
                None if self.buffer.len() > MAX_HEAD => {
                    return Err(ExchangeError::Malformed("trailers too long".into()));
                }
                None => {
                    if !self.fill().await? {
                        return Err(ExchangeError::Closed);
                    }
                }
            }
        }
    }

    async fn skip_until_close(&mut self) -> Result<u64, ExchangeError> {
        let mut total = 0u64;
        loop {
            total += self.buffer.len() as u64;
            self.buffer.clear();
            if !self.fill().await? {
                return Ok(total);
            }
        }
    }
}

/// Status, body framing and keep-alive of a parsed response head.
fn head_facts(
    response: &httparse::Response<'_, '_>,
    is_head: bool,
) -> Result<(u16, Framing, bool), ExchangeError> {
    let status = response
        .code
        .ok_or_else(|| ExchangeError::Malformed("no status code".into()))?;
    let http11 = response.version == Some(1);
    let mut keep_alive = http11;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let parsed: u64 = value.parse().map_err(|_| {
                ExchangeError::Malformed(format!("content-length '{value}' is not a number"))
            })?;
            if length.is_some_and(|l| l != parsed) {
                return Err(ExchangeError::Malformed(
                    "conflicting content-length headers".into(),
                ));
            }
            length = Some(parsed);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    if status == 101 {
        // The connection now speaks another protocol: never reuse it for HTTP.
        keep_alive = false;
    }
    let framing = if is_head || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(length) = length {
        Framing::Length(length)
    } else {
        Framing::UntilClose
    };
    Ok((status, framing, keep_alive))
}

/// Runs one request: on `idle` if given, else on a new connection. Returns the answer and the connection
/// to keep for the next request, if it can be kept.
pub(super) async fn exchange(
    idle: Option<Connection>,
    connector: &Connector,
    wire: &Wire<'_>,
) -> (Result<Answer, ExchangeError>, Option<Connection>) {
    if let Some(connection) = idle {
        match connection.exchange(wire).await {
            Ok((answer, kept)) => return (Ok(answer), kept),
            // Nothing came back on a reused connection: it was closed under us; retry fresh.
            Err(Failure {
                answered: false, ..
            }) => {}
            Err(Failure { error, .. }) => return (Err(error), None),
        }
    }
    let connection = match connector.open().await {
        Ok(c) => c,
        Err(e) => return (Err(e), None),
    };
    match connection.exchange(wire).await {
        Ok((answer, kept)) => (Ok(answer), kept),
        Err(Failure { error, .. }) => (Err(error), None),
    }
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
