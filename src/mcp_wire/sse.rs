//! Server-sent events, read event by event from a byte stream and rewritten with their other fields
//! (`id`, `event`, `retry`, comments) kept as they were.

/// Splits a byte stream into events as its chunks arrive.
#[derive(Default)]
pub struct EventSplitter {
    buffer: Vec<u8>,
}

impl EventSplitter {
    /// Adds a chunk; returns the events it completed, each with its terminating blank line.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = event_end(&self.buffer) {
            let rest = self.buffer.split_off(end);
            events.push(std::mem::replace(&mut self.buffer, rest));
        }
        events
    }

    /// Bytes of the event not yet complete (to bound what a stream without blank lines can make us keep).
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// What is left once the stream ended (an unterminated event, passed on as it is).
    pub fn rest(self) -> Vec<u8> {
        self.buffer
    }
}

/// The end of the first complete event (after its blank line), if any.
fn event_end(buffer: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    let mut i = 0;
    while i < buffer.len() {
        let eol = match buffer[i] {
            b'\n' => 1,
            b'\r' if buffer.get(i + 1) == Some(&b'\n') => 2,
            // A lone CR ends a line too, unless the stream may still bring its LF.
            b'\r' if i + 1 < buffer.len() => 1,
            b'\r' => return None,
            _ => {
                i += 1;
                continue;
            }
        };
        if i == line_start {
            return Some(i + eol);
        }
        i += eol;
        line_start = i;
    }
    None
}

fn lines(event: &[u8]) -> impl Iterator<Item = &[u8]> {
    event
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

/// The value of a `data:` line, or `None` for another field.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    let value = line.strip_prefix(b"data")?;
    if value.is_empty() {
        return Some(value);
    }
    let value = value.strip_prefix(b":")?;
    Some(value.strip_prefix(b" ").unwrap_or(value))
}

/// The event's data: its `data:` lines joined by newlines (`None` when it has none).
pub fn data(event: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for value in lines(event).filter_map(data_value) {
        match out.as_mut() {
            Some(out) => {
                out.push(b'\n');
                out.extend_from_slice(value);
            }
            None => out = Some(value.to_vec()),
        }
    }
    out
}

/// The event with its data replaced by `data` (one line), every other field kept in place.
pub fn with_data(event: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(event.len() + data.len());
    let mut written = false;
    for line in lines(event) {
        if data_value(line).is_some() {
            if !written {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(data);
                out.push(b'\n');
                written = true;
            }
        } else {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    if !written {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(data);
        out.push(b'\n');
    }
    out.push(b'\n');
    out
}

/// A `message` event carrying `data` (one `data:` line per line of it).
pub fn message_event(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 24);
    out.extend_from_slice(b"event: message\n");
    for line in data.split(|b| *b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut splitter = EventSplitter::default();
        assert!(splitter.push(b"id: 1\ndata: {\"a\"").is_empty());
        let events = splitter.push(b":1}\n\nid: 2\r\ndata: x\r\n\r\n: comment\n");
        assert_eq!(
            events,
            [
                b"id: 1\ndata: {\"a\":1}\n\n".to_vec(),
                b"id: 2\r\ndata: x\r\n\r\n".to_vec()
            ]
        );
        assert_eq!(splitter.rest(), b": comment\n");
    }

    #[test]
    fn data_is_read_and_replaced_keeping_the_other_fields() {
        let event = b"event: message\nid: abc_7\ndata: {\"x\":\ndata: 1}\nretry: 10\n\n";
        assert_eq!(data(event).unwrap(), b"{\"x\":\n1}");
        assert_eq!(
            with_data(event, b"{\"y\":2}"),
            b"event: message\nid: abc_7\ndata: {\"y\":2}\nretry: 10\n\n"
        );
        assert_eq!(data(b"id: 3\ndata:\n\n").unwrap(), b"");
        let event = message_event(b"{\"a\":\n1}");
        assert_eq!(event, b"event: message\ndata: {\"a\":\ndata: 1}\n\n");
        assert_eq!(data(&event).unwrap(), b"{\"a\":\n1}");
        assert!(data(b"id: 3\n\n").is_none());
    }
}
