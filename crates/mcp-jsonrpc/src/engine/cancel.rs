//! A request's cancellation as its context holds it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// A request's cancellation: the [`CancellationToken`] the engine cancels when the peer
/// cancels the request or the connection closes.
///
/// For the engine's requests the token is made the first time something asks for it (the
/// handler, the engine watching a handler that waits, a cancellation): most requests are
/// answered before anything does, and a token takes a lock to clone and to drop. Clones share
/// the token, made or not. A token given from outside is used as it is.
///
/// ```
/// use mcp_jsonrpc::Cancellation;
/// use tokio_util::sync::CancellationToken;
///
/// let token = CancellationToken::new();
/// let cancellation = Cancellation::from(token.clone());
/// assert!(!cancellation.is_cancelled());
/// token.cancel();
/// assert!(cancellation.is_cancelled());
/// assert!(cancellation.token().is_cancelled());
/// ```
#[derive(Clone)]
pub struct Cancellation(Repr);

#[derive(Clone)]
enum Repr {
    Token(CancellationToken),
    /// Made on first use; shared with the engine's in-flight map, which cancels the same
    /// token.
    Lazy(Arc<OnceLock<CancellationToken>>),
}

impl Cancellation {
    /// One whose token is made on first use.
    pub(crate) fn lazy() -> Self {
        Cancellation(Repr::Lazy(Arc::new(OnceLock::new())))
    }

    /// The token (made now if it was not yet).
    pub fn token(&self) -> &CancellationToken {
        match &self.0 {
            Repr::Token(token) => token,
            Repr::Lazy(cell) => cell.get_or_init(CancellationToken::new),
        }
    }

    /// Whether the request was cancelled (a token not made yet was not).
    pub fn is_cancelled(&self) -> bool {
        match &self.0 {
            Repr::Token(token) => token.is_cancelled(),
            Repr::Lazy(cell) => cell.get().is_some_and(CancellationToken::is_cancelled),
        }
    }

    /// Completes when the request is cancelled.
    pub async fn cancelled(&self) {
        self.token().cancelled().await
    }
}

impl From<CancellationToken> for Cancellation {
    fn from(token: CancellationToken) -> Self {
        Cancellation(Repr::Token(token))
    }
}

impl fmt::Debug for Cancellation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancellation")
            .field("is_cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lazy_token_is_made_once_and_shared_by_clones() {
        let cancellation = Cancellation::lazy();
        let clone = cancellation.clone();
        assert!(!cancellation.is_cancelled());
        let Repr::Lazy(cell) = &cancellation.0 else {
            panic!("lazy")
        };
        assert!(cell.get().is_none(), "not made by asking whether it fired");
        clone.token().cancel();
        assert!(cancellation.is_cancelled());
        assert!(cancellation.token().is_cancelled());
    }
}
