//! Progress messages of a long call, which the MCP layer turns into notifications.

/// Sends progress messages of a long call; the MCP layer turns them into notifications.
#[derive(Debug, Clone, Default)]
pub struct ProgressReporter {
    sender: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl ProgressReporter {
    pub fn new(sender: tokio::sync::mpsc::UnboundedSender<String>) -> Self {
        Self {
            sender: Some(sender),
        }
    }

    pub fn report(&self, message: impl Into<String>) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(message.into());
        }
    }
}
