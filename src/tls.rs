//! TLS client set-up shared by the proxy (origination towards `https://` upstreams) and the load generator:
//! system roots plus an optional extra CA (PEM).

use std::path::{Path, PathBuf};
use std::sync::Arc;

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

fn add_pem_file(roots: &mut rustls::RootCertStore, path: &Path) -> Result<(), TlsSetupError> {
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| TlsSetupError::ExtraCa {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut added = 0;
    for cert in certs {
        let cert = cert.map_err(|e| TlsSetupError::ExtraCa {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        roots.add(cert).map_err(|e| TlsSetupError::ExtraCa {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(TlsSetupError::ExtraCa {
            path: path.to_path_buf(),
            reason: "no PEM certificate in it".into(),
        });
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
