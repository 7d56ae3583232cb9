//! Zero-copy pass-through for plain TCP flows without faults: socket → pipe → socket with
//! `splice(2)`, so the bytes never enter user space. This is what keeps bulk transfers near the
//! speed of a direct connection.

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
/// `written` and each read in `turns`, as the copying pump does.
pub(super) async fn pump(
    reader: OwnedReadHalf,
    mut writer: OwnedWriteHalf,
    pipe: Pipe,
    written: &AtomicU64,
    turns: &AtomicU64,
) -> io::Result<()> {
    let source: &TcpStream = reader.as_ref();
    loop {
        let filled = loop {
            source.readable().await?;
            let capacity = pipe.capacity;
            match source.try_io(Interest::READABLE, || {
                Ok(splice(source, None, &pipe.write, None, capacity, flags())?)
            }) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        if filled == 0 {
            let _ = writer.shutdown().await;
            return Ok(());
        }
        turns.fetch_add(1, Ordering::Relaxed);
        // The pipe is drained completely before the next read, so it never holds more than one read.
        let sink: &TcpStream = writer.as_ref();
        let mut left = filled;
        while left > 0 {
            sink.writable().await?;
            match sink.try_io(Interest::WRITABLE, || {
                Ok(splice(&pipe.read, None, sink, None, left, flags())?)
            }) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => left -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        written.fetch_add(filled as u64, Ordering::Relaxed);
    }
}
