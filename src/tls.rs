//! TLS client set-up shared by the proxy (origination towards `https://` upstreams), the load generator and the
//! MCP proxy's upstream client: system roots plus an optional extra CA (PEM), and one clear-or-TLS stream.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Environment variable naming a PEM file of extra trusted CAs (used when the config names none).
pub const EXTRA_CA_ENV: &str = "FAULT_PROXY_EXTRA_CA";

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cannot read the extra CA file {path}: {reason}")]
    ExtraCa { path: PathBuf, reason: String },
    #[error("no trusted root certificate found (system store empty and no extra CA)")]
    NoRoots,
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// Largest extra CA file read: a whole public bundle is about 220 KB.
pub const MAX_EXTRA_CA_BYTES: u64 = 4 << 20;

/// The certificates of the PEM file `path`, read through the one reader of user files: anything but a regular
/// file of at most [`MAX_EXTRA_CA_BYTES`] is refused without blocking (a FIFO) or reading forever (`/dev/zero`).
pub fn extra_ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let refused = |reason: String| TlsSetupError::ExtraCa {
        path: path.to_path_buf(),
        reason,
    };
    let pem =
        crate::files::read_bounded(path, MAX_EXTRA_CA_BYTES).map_err(|e| refused(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refused(e.to_string()))?;
    if certs.is_empty() {
        return Err(refused("no PEM certificate in it".into()));
    }
    Ok(certs)
}

fn add_pem_file(roots: &mut rustls::RootCertStore, path: &Path) -> Result<(), TlsSetupError> {
    for cert in extra_ca_certificates(path)? {
        roots.add(cert).map_err(|e| TlsSetupError::ExtraCa {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    }
    Ok(())
}

/// A connector trusting the system roots and `extra_ca` (else `$FAULT_PROXY_EXTRA_CA`).
pub fn connector(extra_ca: Option<&Path>) -> Result<tokio_rustls::TlsConnector, TlsSetupError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for err in &native.errors {
        tracing::debug!("system certificate store: {err}");
    }
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    tracing::debug!("system roots: {added} added, {ignored} ignored");
    let env_ca = std::env::var_os(EXTRA_CA_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    if let Some(path) = extra_ca.map(Path::to_path_buf).or(env_ca) {
        add_pem_file(&mut roots, &path)?;
    }
    if roots.is_empty() {
        return Err(TlsSetupError::NoRoots);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A client connection in clear or in TLS: the load generator's and the MCP proxy's upstream connections.
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Connection for ClientStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
