//! What each protocol revision has: one table, written once, of the features that came (and
//! went) with a revision and that no method or schema type decides on its own.
//!
//! Whether a *method* exists in a revision is the method table's answer
//! ([`crate::methods::MethodInfo::available_in`]); whether a *field* exists is the generated
//! projection's ([`crate::Project`]). This table holds the rest: behaviour the SDK switches on
//! per revision.
//!
//! ```
//! use mcp_types::{Feature, ProtocolVersion};
//!
//! assert!(ProtocolVersion::V2025_11_25.has(Feature::Icons));
//! assert!(!ProtocolVersion::V2025_06_18.has(Feature::Icons));
//! // Batches came in 2025-03-26 and went in 2025-06-18.
//! assert!(ProtocolVersion::V2025_03_26.has(Feature::Batches));
//! assert!(!ProtocolVersion::V2025_06_18.has(Feature::Batches));
//! assert_eq!(Feature::Batches.removed_in(), Some(ProtocolVersion::V2025_06_18));
//! ```

use crate::ProtocolVersion;

/// A protocol feature that came with a revision (and maybe went with a later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// JSON-RPC batches (arrays of messages), in 2025-03-26 only: from 2025-06-18 on a message
    /// is a single request, notification or response.
    Batches,
    /// Audio content blocks.
    AudioContent,
    /// The `completions` server capability (2024-11-05 had none: any server could complete).
    CompletionsCapability,
    /// The `MCP-Protocol-Version` header on every HTTP request after `initialize`.
    ProtocolVersionHeader,
    /// Structured tool output: `outputSchema` and `structuredContent`.
    StructuredOutput,
    /// Resource links in tool results.
    ResourceLinks,
    /// Elicitation (`elicitation/create`) in form mode.
    Elicitation,
    /// The `mode` member of form elicitation params (`"form"`).
    ElicitationMode,
    /// URL-mode elicitation.
    UrlElicitation,
    /// Tools in sampling requests (`tools`, `toolChoice`).
    SamplingTools,
    /// Icons on implementations, tools, prompts and resources.
    Icons,
    /// Tasks: requests that answer with a handle and are polled.
    Tasks,
    /// The priming event that opens a resumable SSE stream (an event id with empty data), so
    /// that a client can resume before the first message.
    SsePriming,
    /// `application_type` in OAuth dynamic client registration.
    RegistrationApplicationType,
    /// Per-request version and capabilities in `_meta`, no `initialize` (the stateless era).
    StatelessRequests,
}

/// When a feature came and went.
struct Span {
    feature: Feature,
    since: ProtocolVersion,
    removed_in: Option<ProtocolVersion>,
}

const fn span(feature: Feature, since: ProtocolVersion) -> Span {
    Span {
        feature,
        since,
        removed_in: None,
    }
}

/// The table: one row per feature, in the order of the enum.
const FEATURES: [Span; 15] = {
    use Feature as F;
    use ProtocolVersion as V;
    [
        Span {
            feature: F::Batches,
            since: V::V2025_03_26,
            removed_in: Some(V::V2025_06_18),
        },
        span(F::AudioContent, V::V2025_03_26),
        span(F::CompletionsCapability, V::V2025_03_26),
        span(F::ProtocolVersionHeader, V::V2025_06_18),
        span(F::StructuredOutput, V::V2025_06_18),
        span(F::ResourceLinks, V::V2025_06_18),
        span(F::Elicitation, V::V2025_06_18),
        span(F::ElicitationMode, V::V2025_11_25),
        span(F::UrlElicitation, V::V2025_11_25),
        span(F::SamplingTools, V::V2025_11_25),
        span(F::Icons, V::V2025_11_25),
        span(F::Tasks, V::V2025_11_25),
        span(F::SsePriming, V::V2025_11_25),
        span(F::RegistrationApplicationType, V::V2026_07_28),
        span(F::StatelessRequests, V::V2026_07_28),
    ]
};

impl Feature {
    /// Every feature, in declaration order.
    pub const ALL: [Feature; FEATURES.len()] = {
        let mut all = [Feature::Batches; FEATURES.len()];
        let mut i = 0;
        while i < FEATURES.len() {
            all[i] = FEATURES[i].feature;
            i += 1;
        }
        all
    };

    const fn span(self) -> &'static Span {
        &FEATURES[self as usize]
    }

    /// The first revision with the feature.
    pub const fn since(self) -> ProtocolVersion {
        self.span().since
    }

    /// The first revision without it again, when a revision removed it.
    pub const fn removed_in(self) -> Option<ProtocolVersion> {
        self.span().removed_in
    }
}

impl ProtocolVersion {
    /// Whether the revision has `feature`.
    pub const fn has(self, feature: Feature) -> bool {
        let span = feature.span();
        let after_removal = match span.removed_in {
            Some(removed) => self.index() >= removed.index(),
            None => false,
        };
        self.index() >= span.since.index() && !after_removal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Era;
    use crate::methods;

    #[test]
    fn rows_are_in_enum_order() {
        for (i, row) in FEATURES.iter().enumerate() {
            assert_eq!(row.feature as usize, i, "{:?}", row.feature);
            if let Some(removed) = row.removed_in {
                assert!(removed > row.since, "{:?}", row.feature);
            }
        }
        assert_eq!(Feature::ALL.len(), FEATURES.len());
    }

    #[test]
    fn spans() {
        use ProtocolVersion as V;
        let with = |f: Feature| -> Vec<V> { V::ALL.iter().copied().filter(|v| v.has(f)).collect() };
        assert_eq!(with(Feature::Batches), [V::V2025_03_26]);
        assert_eq!(
            with(Feature::ElicitationMode),
            [V::V2025_11_25, V::V2026_07_28]
        );
        assert_eq!(with(Feature::StatelessRequests), [V::V2026_07_28]);
        assert!(
            V::ALL
                .iter()
                .all(|v| !v.has(Feature::Batches) || v.index() == 1)
        );
        for f in Feature::ALL {
            assert!(f.since().has(f), "{f:?}");
        }
    }

    /// Where a method or the era says the same, the table agrees with it.
    #[test]
    fn agrees_with_the_method_table_and_the_eras() {
        let first = |method: &str| methods::lookup(method).unwrap().revisions[0];
        assert_eq!(Feature::Elicitation.since(), first("elicitation/create"));
        assert_eq!(Feature::Tasks.since(), first("tasks/get"));
        for v in ProtocolVersion::ALL {
            assert_eq!(
                v.has(Feature::StatelessRequests),
                v.era() == Era::Stateless,
                "{v}"
            );
        }
    }
}
