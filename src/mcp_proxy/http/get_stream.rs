//! A session's GET stream passed event by event, with the proxy's own notifications put between events; and
//! the response body a task feeds, which both streams use.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use tokio::sync::mpsc;

use super::BoxError;
use super::proxy::Streams;
use crate::mcp_wire::sse;

/// A session's GET stream, passed event by event, with the proxy's own notifications put between events.
pub(super) struct GetStream {
    pub(super) session: String,
    /// This stream's entry in the proxy's streams (to remove only its own at the end).
    pub(super) inject: mpsc::UnboundedSender<Bytes>,
    pub(super) injected: mpsc::UnboundedReceiver<Bytes>,
    pub(super) out: mpsc::Sender<Result<Bytes, BoxError>>,
}

impl GetStream {
    pub(super) async fn run(mut self, streams: Streams, mut body: Incoming) {
        let mut splitter = sse::EventSplitter::default();
        loop {
            let chunk = tokio::select! {
                frame = body.frame() => match frame {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => splitter.push(&data).into_iter().map(Bytes::from).collect(),
                        Err(_) => continue,
                    },
                    Some(Err(e)) => {
                        let _ = self.out.send(Err(BoxError::from(e))).await;
                        break;
                    }
                    None => {
                        let rest = std::mem::take(&mut splitter).rest();
                        if !rest.is_empty() {
                            let _ = self.out.send(Ok(Bytes::from(rest))).await;
                        }
                        break;
                    }
                },
                Some(event) = self.injected.recv() => vec![event],
                () = self.out.closed() => break,
            };
            for event in chunk {
                if self.out.send(Ok(event)).await.is_err() {
                    break;
                }
            }
        }
        let mut streams = streams.lock().unwrap_or_else(|p| p.into_inner());
        if streams
            .get(&self.session)
            .is_some_and(|s| s.same_channel(&self.inject))
        {
            streams.remove(&self.session);
        }
    }
}

/// A response body fed by a task; an `Err` aborts it (the client sees the stream break).
pub(super) struct ChannelBody {
    pub(super) rx: mpsc::Receiver<Result<Bytes, BoxError>>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx
            .poll_recv(cx)
            .map(|next| next.map(|chunk| chunk.map(Frame::data)))
    }
}
