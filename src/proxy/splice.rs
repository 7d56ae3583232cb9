//! Zero-copy pass-through for plain TCP flows without faults: socket → pipe → socket with
//! `splice(2)`, so bulk bytes never enter user space and cost the proxy no copies.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::pipe::{
    PipeFlags, SpliceFlags, fcntl_getpipe_size, fcntl_setpipe_size, pipe_with, splice,
};
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Pipe size asked for: a flow only reaches the splice path once it is moving bulk data, and a large
/// pipe moves it in fewer system calls. The system may cap it (`/proc/sys/fs/pipe-max-size`, per-user
/// pipe limits); the kernel's default size is kept then.
const PIPE_CAPACITY: usize = 1 << 20;

/// The kernel buffer between the two sockets of one flow.
pub(super) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
}

impl Pipe {
    pub(super) fn new() -> io::Result<Self> {
        let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        let capacity = match fcntl_setpipe_size(&write, PIPE_CAPACITY) {
            Ok(size) => size,
            Err(_) => fcntl_getpipe_size(&write)?,
        };
        Ok(Self {
            read,
            write,
            capacity,
        })
    }
}

fn flags() -> SpliceFlags {
    SpliceFlags::MOVE | SpliceFlags::NONBLOCK
}

/// Moves a flow's bytes until EOF (then half-closes the writer) or an error. Counts bytes in
/// `written` and each read in `turns`, as the copying pump does. Reading and writing overlap: the
/// pipe takes more from the source while the sink is still busy, as a socket buffer would.
pub(super) async fn pump(
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
    pipe: Pipe,
    written: &AtomicU64,
    turns: &AtomicU64,
) -> io::Result<()> {
    let source: &TcpStream = reader.as_ref();
    let sink: &TcpStream = writer.as_ref();
    let mut in_pipe = 0usize;
    let mut source_ended = false;
    // A read found no room while the pipe held data: wait for a write before reading again.
    let mut pipe_full = false;
    while !(source_ended && in_pipe == 0) {
        tokio::select! {
            ready = source.readable(), if !source_ended && !pipe_full => {
                ready?;
                let read = || Ok(splice(source, None, &pipe.write, None, pipe.capacity, flags())?);
                // With an empty pipe, "would block" can only mean the socket is drained: let tokio
                // forget its readiness. With data in the pipe it may mean the pipe is full instead.
                let result = if in_pipe == 0 {
                    source.try_io(Interest::READABLE, read)
                } else {
                    read()
                };
                match result {
                    Ok(0) => source_ended = true,
                    Ok(n) => {
                        in_pipe += n;
                        turns.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => pipe_full = in_pipe > 0,
                    Err(e) => return Err(e),
                }
            }
            ready = sink.writable(), if in_pipe > 0 => {
                ready?;
                // The pipe holds data, so "would block" means the socket is full.
                match sink.try_io(Interest::WRITABLE, || {
                    Ok(splice(&pipe.read, None, sink, None, in_pipe, flags())?)
                }) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        in_pipe -= n;
                        pipe_full = false;
                        written.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let _ = writer.shutdown().await;
    Ok(())
}
