//! Changes every replica of a server should announce: a [`ChangeBus`] carries them between
//! processes, so that a `subscriptions/listen` stream or a 2025-era GET stream held by one
//! replica hears a change made through another.

use std::sync::Arc;

/// A change announced to clients: a list changed, or a resource was updated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerChange {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
}

impl ServerChange {
    /// A compact text form (`tools`, `resources`, `prompts`, `updated <uri>`), for a bus that
    /// carries bytes.
    pub fn encode(&self) -> String {
        match self {
            ServerChange::ToolsListChanged => "tools".to_owned(),
            ServerChange::ResourcesListChanged => "resources".to_owned(),
            ServerChange::PromptsListChanged => "prompts".to_owned(),
            ServerChange::ResourceUpdated(uri) => format!("updated {uri}"),
        }
    }

    /// The change [`encode`](Self::encode) wrote; `None` for anything else.
    pub fn decode(text: &str) -> Option<ServerChange> {
        match text {
            "tools" => Some(ServerChange::ToolsListChanged),
            "resources" => Some(ServerChange::ResourcesListChanged),
            "prompts" => Some(ServerChange::PromptsListChanged),
            other => other
                .strip_prefix("updated ")
                .map(|uri| ServerChange::ResourceUpdated(uri.to_owned())),
        }
    }
}

/// What a [`ChangeBus`] calls with each change another replica published.
pub type ChangeHandler = Arc<dyn Fn(ServerChange) + Send + Sync>;

/// Carries [`ServerChange`]s between the replicas of a server
/// ([`ServerBuilder::change_bus`](crate::ServerBuilder::change_bus)).
///
/// Every change the server announces is published; every change another replica published is
/// announced here as if it happened here (and not published again). An implementation must not
/// hand a replica its own changes back.
pub trait ChangeBus: Send + Sync + 'static {
    /// Publishes a change to the other replicas; must not block (spawn the I/O).
    fn publish(&self, change: ServerChange);
    /// Starts handing the other replicas' changes to `deliver` (called once, when the server
    /// is built).
    fn subscribe(&self, deliver: ChangeHandler);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_round_trip_as_text() {
        for change in [
            ServerChange::ToolsListChanged,
            ServerChange::ResourcesListChanged,
            ServerChange::PromptsListChanged,
            ServerChange::ResourceUpdated("file:///a b".to_owned()),
        ] {
            assert_eq!(ServerChange::decode(&change.encode()), Some(change));
        }
        assert_eq!(ServerChange::decode("nonsense"), None);
    }
}
