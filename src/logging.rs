//! Logging to stderr or `--log-file`; stdout belongs to the MCP protocol and is never written here.

use std::{fs::OpenOptions, io::IsTerminal, path::Path, sync::Mutex};

use tracing_subscriber::{EnvFilter, fmt};

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error(
        "--log-level '{filter}' is not a valid filter ({source}); use error, warn, info, debug, trace or e.g. fault=debug"
    )]
    Filter {
        filter: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("cannot open --log-file {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}

/// Installs the global subscriber. Logs go to `log_file` (appended) when given, else to stderr.
pub fn init(log_file: Option<&Path>, filter: &str) -> Result<(), LoggingError> {
    let env_filter = EnvFilter::builder()
        .parse(filter)
        .map_err(|source| LoggingError::Filter {
            filter: filter.to_owned(),
            source,
        })?;
    let builder = fmt().with_env_filter(env_filter).with_target(true);
    match log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| LoggingError::File {
                    path: path.display().to_string(),
                    source,
                })?;
            builder
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .init();
        }
        // Colour only for a person at a terminal; clients that capture stderr get plain text.
        None => builder
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .init(),
    }
    Ok(())
}
