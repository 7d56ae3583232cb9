//! HTTP/1.1 over TCP or TLS with a small pool of kept-alive connections per virtual client.
//!
//! The pool behaves like a browser or `httpx`: reuse an idle connection when there is one, open another
//! when every connection is busy, drop a connection the server closed. A request that fails on a reused
//! connection before any response arrived is retried once on a fresh connection, as real clients do.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{
    Request,
    client::conn::http1::{self, SendRequest},
};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};
use tokio_rustls::{TlsConnector, client::TlsStream};

use super::Target;

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
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
    #[error("request: {0}")]
    Request(#[from] hyper::http::Error),
}

/// Where and how connections are opened: the address to dial (the service, or a proxy in front of it) and,
/// for `https`, TLS with the URL's host as server name.
pub(super) struct Connector {
    pub dial: SocketAddr,
    pub tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    pub opened: AtomicU64,
}

impl Connector {
    async fn open(&self) -> Result<SendRequest<Full<Bytes>>, ExchangeError> {
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
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "load connection ended");
            }
        });
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(sender)
    }
}

/// The connections of one virtual client.
pub(super) struct Pool {
    connector: Arc<Connector>,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Pool {
    pub fn new(connector: Arc<Connector>) -> Self {
        Self {
            connector,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn give_back(&self, sender: SendRequest<Full<Bytes>>) {
        if !sender.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(sender);
        }
    }

    /// Sends one request and reads the whole body.
    pub async fn exchange(&self, target: &Target) -> Result<Answer, ExchangeError> {
        if let Some(mut sender) = self.take_idle()
            && sender.ready().await.is_ok()
        {
            match self.send_on(sender, target).await {
                Ok(answer) => return Ok(answer),
                // Nothing came back on a reused connection: it was closed under us; retry fresh.
                Err(SendError::BeforeResponse(_)) => {}
                Err(SendError::AfterResponse(e)) => return Err(e),
            }
        }
        let sender = self.connector.open().await?;
        self.send_on(sender, target)
            .await
            .map_err(SendError::into_inner)
    }

    async fn send_on(
        &self,
        mut sender: SendRequest<Full<Bytes>>,
        target: &Target,
    ) -> Result<Answer, SendError> {
        let request = target
            .request()
            .map_err(|e| SendError::AfterResponse(e.into()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| SendError::BeforeResponse(e.into()))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut body_bytes = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| SendError::AfterResponse(e.into()))?;
            if let Some(data) = frame.data_ref() {
                body_bytes += data.len() as u64;
            }
        }
        self.give_back(sender);
        Ok(Answer { status, body_bytes })
    }
}

enum SendError {
    BeforeResponse(ExchangeError),
    AfterResponse(ExchangeError),
}

impl SendError {
    fn into_inner(self) -> ExchangeError {
        match self {
            SendError::BeforeResponse(e) | SendError::AfterResponse(e) => e,
        }
    }
}

impl Target {
    fn request(&self) -> Result<Request<Full<Bytes>>, hyper::http::Error> {
        let mut builder = Request::builder()
            .method(self.method.clone())
            .uri(self.path_and_query.as_str());
        if let Some(headers) = builder.headers_mut() {
            headers.insert(hyper::header::HOST, self.host_header.clone());
            for (name, value) in &self.headers {
                headers.insert(name.clone(), value.clone());
            }
        }
        builder.body(Full::new(self.body.clone()))
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
