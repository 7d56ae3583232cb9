//! Newline-delimited messages (MCP's stdio transport), read one line at a time with a bound on its length,
//! so a peer that writes without ever ending a line cannot make us hold more than one message's worth.

use std::io::BufRead;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::jsonrpc::MAX_MESSAGE_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error(
        "a message of more than {MAX_MESSAGE_BYTES} bytes without a line end (one message is one line of at \
         most that size)"
    )]
    TooLong,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Appends the next line (its newline included) to `line`; `Ok(false)` at the end of the stream with
/// nothing read.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<bool, LineError> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(!line.is_empty());
        }
        let (taken, done) = take(buffer, line)?;
        reader.consume(taken);
        if done {
            return Ok(true);
        }
    }
}

/// [`read_line`] on a blocking reader (our stdin, read on a thread of its own).
pub fn read_line_blocking<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<bool, LineError> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(!line.is_empty());
        }
        let (taken, done) = take(buffer, line)?;
        reader.consume(taken);
        if done {
            return Ok(true);
        }
    }
}

/// Copies the bytes of `buffer` up to its first newline (or all of them) into `line`: how many it took, and
/// whether the line is complete.
fn take(buffer: &[u8], line: &mut Vec<u8>) -> Result<(usize, bool), LineError> {
    let (taken, done) = match buffer.iter().position(|b| *b == b'\n') {
        Some(end) => (end + 1, true),
        None => (buffer.len(), false),
    };
    if line.len() + taken > MAX_MESSAGE_BYTES {
        return Err(LineError::TooLong);
    }
    line.extend_from_slice(&buffer[..taken]);
    Ok((taken, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_whole_and_bounded() {
        let mut reader = tokio::io::BufReader::with_capacity(4, &b"ab\ncdefgh\nlast"[..]);
        let mut lines = Vec::new();
        loop {
            let mut line = Vec::new();
            if !read_line(&mut reader, &mut line).await.unwrap() {
                break;
            }
            lines.push(line);
        }
        assert_eq!(
            lines,
            [b"ab\n".to_vec(), b"cdefgh\n".to_vec(), b"last".to_vec()]
        );

        let flood = vec![b'x'; MAX_MESSAGE_BYTES + 1];
        let mut line = Vec::new();
        let error = read_line_blocking(&mut &flood[..], &mut line).unwrap_err();
        assert!(matches!(error, LineError::TooLong));
        assert!(error.to_string().contains(&MAX_MESSAGE_BYTES.to_string()));
    }
}
