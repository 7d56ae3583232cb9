//! The relay with nothing to do: no fault planned, no events, no report, between this process's stdio and a
//! child server. Each direction is one thread that reads a line and writes it on at once, with no task or
//! channel between them, so the proxy costs a call what a process that only copies bytes costs it. Lines keep
//! their bound, and the session ends as the core's does.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
};

use tokio::sync::mpsc;

use super::pump::reading_failed;
use super::server::{ServerCommand, ServerSide, ServerStderr, spawn_child};
use super::{RelayError, core::EXIT_GRACE};
use crate::mcp_wire::lines::{self, LineError};

/// Which side ended, and the message over the bound that ended it, if one did.
enum Ended {
    Client(Option<LineError>),
    Server(Option<LineError>),
}

/// Runs the session until either side closes; the server gets [`EXIT_GRACE`] to exit after its input closed.
pub(super) async fn run(command: &ServerCommand, stderr: &ServerStderr) -> Result<(), RelayError> {
    let mut process = spawn_child(command, stderr)?;
    let pipes = process
        .child
        .stdin
        .take()
        .zip(process.child.stdout.take())
        .map(|(stdin, stdout)| {
            Ok::<_, std::io::Error>((stdin.into_owned_fd()?, stdout.into_owned_fd()?))
        })
        .transpose()
        .map_err(|source| RelayError::Spawn {
            command: command.line(),
            source,
        })?;
    let Some((to_server, from_server)) = pipes else {
        return Ok(());
    };
    let (ended_tx, mut ended) = mpsc::unbounded_channel();
    let client_done = ended_tx.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut to_server = File::from(to_server);
        let error = copy_lines(&mut stdin.lock(), &mut to_server);
        // Told before the server's input closes: a server that exits at once must not be the first end seen,
        // or a message over the bound would end the session as if the client had closed it.
        let _ = client_done.send(Ended::Client(error));
        drop(to_server);
    });
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(64 * 1024, File::from(from_server));
        let error = copy_lines(&mut reader, &mut std::io::stdout().lock());
        let _ = ended_tx.send(Ended::Server(error));
    });
    let (failure, client_ended) = match ended.recv().await {
        Some(Ended::Client(error)) => (error.map(RelayError::ClientMessage), true),
        Some(Ended::Server(error)) => (
            error.map(|error| {
                tracing::error!("mcp-proxy: the server's messages cannot be relayed: {error}");
                RelayError::ServerMessage(error)
            }),
            false,
        ),
        None => (None, false),
    };
    ServerSide::Child(process).stop(EXIT_GRACE).await;
    if client_ended {
        // The server's last answers are still being written to the client: its side ends once they are out.
        let _ = tokio::time::timeout(EXIT_GRACE, ended.recv()).await;
    }
    failure.map_or(Ok(()), Err)
}

/// Copies whole lines from `reader` to `writer`, each written as soon as it is read, until the reader ends or
/// either side fails; a line over the bound is returned (a broken pipe ends the copy like an end of file).
fn copy_lines(reader: &mut impl BufRead, writer: &mut impl Write) -> Option<LineError> {
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines::read_line_blocking(reader, &mut line) {
            Ok(false) => return None,
            Ok(true) => {
                if writer
                    .write_all(&line)
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    return None;
                }
            }
            Err(error) => return reading_failed(error),
        }
    }
}
