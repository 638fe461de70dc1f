//! Notifications from the server, delivered to the application through a callback and a bounded
//! stream.

use std::sync::Arc;

use futures_core::Stream;
use mcp_types::{
    LoggingMessageNotificationParams, ProgressNotificationParams, ResourceUpdatedNotificationParams,
};
use serde_json::Value;
use tokio::sync::broadcast;

/// A notification the server sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/message`: a log message.
    Log(LoggingMessageNotificationParams),
    /// `notifications/progress` for a request that has no progress callback of its own.
    Progress(ProgressNotificationParams),
    /// `notifications/tools/list_changed`.
    ToolListChanged,
    /// `notifications/resources/list_changed`.
    ResourceListChanged,
    /// `notifications/prompts/list_changed`.
    PromptListChanged,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// `notifications/elicitation/complete`: an out-of-band (URL) elicitation finished.
    ElicitationComplete {
        /// The id from the `elicitation/create` request.
        elicitation_id: String,
    },
    /// Any other notification, undecoded.
    Other {
        /// The method name.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
}

impl ServerNotification {
    /// Decodes a notification; a known method whose params do not decode becomes
    /// [`ServerNotification::Other`] so nothing is lost.
    pub(crate) fn decode(method: &str, params: Option<Value>) -> Self {
        fn typed<T: serde::de::DeserializeOwned>(params: &Option<Value>) -> Option<T> {
            serde_json::from_value(
                params
                    .clone()
                    .unwrap_or_else(|| Value::Object(Default::default())),
            )
            .ok()
        }
        let decoded = match method {
            "notifications/message" => typed(&params).map(Self::Log),
            "notifications/progress" => typed(&params).map(Self::Progress),
            "notifications/tools/list_changed" => Some(Self::ToolListChanged),
            "notifications/resources/list_changed" => Some(Self::ResourceListChanged),
            "notifications/prompts/list_changed" => Some(Self::PromptListChanged),
            "notifications/resources/updated" => typed(&params).map(Self::ResourceUpdated),
            "notifications/elicitation/complete" => params
                .as_ref()
                .and_then(|p| p.get("elicitationId"))
                .and_then(Value::as_str)
                .map(|id| Self::ElicitationComplete {
                    elicitation_id: id.to_owned(),
                }),
            _ => None,
        };
        decoded.unwrap_or_else(|| {
            if matches!(
                method,
                "notifications/message"
                    | "notifications/progress"
                    | "notifications/resources/updated"
                    | "notifications/elicitation/complete"
            ) {
                tracing::debug!(method, "notification params did not decode");
            }
            Self::Other {
                method: method.to_owned(),
                params,
            }
        })
    }
}

/// The callback type of [`ClientBuilder::on_notification`](crate::ClientBuilder::on_notification).
pub type NotificationCallback = Arc<dyn Fn(&ServerNotification) + Send + Sync>;

/// A receiver of a session's notifications, from [`ClientSession::notifications`](crate::ClientSession::notifications).
///
/// The buffer is bounded
/// ([`ClientBuilder::notification_buffer`](crate::ClientBuilder::notification_buffer)); a
/// receiver that falls behind skips the oldest notifications (a warning is logged) rather than
/// slowing the connection down. The stream ends when the session closes.
#[derive(Debug)]
pub struct Notifications {
    receiver: broadcast::Receiver<ServerNotification>,
}

impl Notifications {
    pub(crate) fn new(receiver: broadcast::Receiver<ServerNotification>) -> Self {
        Self { receiver }
    }

    /// The next notification, or `None` once the session has closed.
    pub async fn recv(&mut self) -> Option<ServerNotification> {
        loop {
            match self.receiver.recv().await {
                Ok(notification) => return Some(notification),
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(skipped, "notification receiver fell behind; skipped some");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The notifications as a [`Stream`].
    pub fn into_stream(self) -> impl Stream<Item = ServerNotification> + Send + Unpin + 'static {
        Box::pin(futures_util::stream::unfold(self, |mut this| async move {
            this.recv().await.map(|notification| (notification, this))
        }))
    }
}
