//! The relay's client side: lines in from the client, lines out to it. This process's stdin and stdout are
//! each read and written on a thread of their own (tokio's stdin goes through the blocking pool on every
//! read, a thread per pipe costs nothing and adds no hop); any other byte stream, such as the chaos
//! scenario's in-process client, on two tasks.

use std::io::Write;

use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::mpsc,
};

use super::core::CoreMsg;
use crate::mcp_wire::lines::{self, LineError};

/// Where the relay's client is.
pub enum ClientSide {
    /// This process's stdin and stdout (`fault mcp-proxy`).
    ProcessStdio,
    /// A byte stream each way.
    Stream {
        reader: Box<dyn AsyncRead + Unpin + Send>,
        writer: Box<dyn AsyncWrite + Unpin + Send>,
    },
}

/// The writer of the client's lines, to wait for once the relay is done (what is queued gets flushed).
pub(super) enum ClientWriter {
    Thread(std::thread::JoinHandle<()>),
    Task(tokio::task::JoinHandle<()>),
}

impl ClientWriter {
    pub(super) async fn finish(self) {
        match self {
            ClientWriter::Thread(thread) => {
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
            ClientWriter::Task(task) => {
                let _ = task.await;
            }
        }
    }
}

/// Starts reading the client's lines into the core and writing `to_client`'s lines to the client.
pub(super) fn start(
    client: ClientSide,
    core_tx: mpsc::Sender<CoreMsg>,
    to_client: mpsc::UnboundedReceiver<Vec<u8>>,
) -> ClientWriter {
    match client {
        ClientSide::ProcessStdio => {
            std::thread::spawn(move || read_stdin(&core_tx));
            ClientWriter::Thread(std::thread::spawn(move || write_stdout(to_client)))
        }
        ClientSide::Stream { reader, writer } => {
            tokio::spawn(read_stream(reader, core_tx));
            ClientWriter::Task(tokio::spawn(write_stream(writer, to_client)))
        }
    }
}

fn read_stdin(core_tx: &mpsc::Sender<CoreMsg>) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let error = loop {
        let mut line = Vec::new();
        match lines::read_line_blocking(&mut input, &mut line) {
            Ok(false) => break None,
            Ok(true) => {
                if core_tx.blocking_send(CoreMsg::Client(line)).is_err() {
                    return;
                }
            }
            Err(e) => break reading_failed(e),
        }
    };
    let _ = core_tx.blocking_send(CoreMsg::ClientEof { error });
}

async fn read_stream(reader: Box<dyn AsyncRead + Unpin + Send>, core_tx: mpsc::Sender<CoreMsg>) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let error = loop {
        let mut line = Vec::new();
        match lines::read_line(&mut reader, &mut line).await {
            Ok(false) => break None,
            Ok(true) => {
                if core_tx.send(CoreMsg::Client(line)).await.is_err() {
                    return;
                }
            }
            Err(e) => break reading_failed(e),
        }
    };
    let _ = core_tx.send(CoreMsg::ClientEof { error }).await;
}

/// A read error ends a side like its end of file; a line over the bound is worth reporting.
pub(super) fn reading_failed(error: LineError) -> Option<LineError> {
    match error {
        LineError::TooLong => Some(error),
        LineError::Io(e) => {
            tracing::debug!("mcp-proxy: reading the client's messages: {e}");
            None
        }
    }
}

/// Our stdout, flushed whenever the queue is empty.
fn write_stdout(mut lines: mpsc::UnboundedReceiver<Vec<u8>>) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    while let Some(line) = lines.blocking_recv() {
        if out.write_all(&line).is_err() {
            return;
        }
        while let Ok(line) = lines.try_recv() {
            if out.write_all(&line).is_err() {
                return;
            }
        }
        if out.flush().is_err() {
            return;
        }
    }
    let _ = out.flush();
}

async fn write_stream(
    writer: Box<dyn AsyncWrite + Unpin + Send>,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let mut out = tokio::io::BufWriter::new(writer);
    while let Some(line) = lines.recv().await {
        if out.write_all(&line).await.is_err() {
            return;
        }
        while let Ok(line) = lines.try_recv() {
            if out.write_all(&line).await.is_err() {
                return;
            }
        }
        if out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.shutdown().await;
}
