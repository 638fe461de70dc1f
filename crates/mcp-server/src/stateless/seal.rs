//! Sealing the `requestState` of multi round-trip requests.
//!
//! Under 2026-07-28 a server that needs input answers `input_required` and forgets the request;
//! whatever it must remember travels to the client and back in `requestState`. The client is
//! not trusted with it: the specification makes the state attacker-controlled input. A
//! [`RequestStateSealer`] therefore seals it with HMAC-SHA256 under a server key, with an
//! expiry and a binding to the request it belongs to (method, tool name or URI, a digest of the
//! arguments and optionally the authenticated principal). Any replica holding the key opens
//! it; nothing is stored on the server.
//!
//! Sealing protects integrity, not confidentiality: the client can decode what it carries (the
//! handler's state and the answers it gave itself). Do not put secrets in handler state.
//!
//! Layout of a sealed state before base64url (no padding), all integers big-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | format version (1) |
//! | 8 | key id (a digest of the key, so a rotated key is found) |
//! | 8 | expiry, milliseconds since the Unix epoch |
//! | 16 | random nonce (two seals of the same state differ) |
//! | 1 + n | method (length, bytes) |
//! | 2 + n | target: tool or prompt name, resource URI (length, bytes) |
//! | 32 | SHA-256 of the canonical JSON of the arguments |
//! | 32 | SHA-256 of the principal, or zeros |
//! | 2 | round number |
//! | rest | JSON `{"s": state, "a": answers, "q": asked}` |
//! | 32 | HMAC-SHA256 of everything before it |

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac_sha256::{HMAC, Hash};
use serde_json::Value;

const FORMAT: u8 = 1;
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 16;
const DIGEST_LEN: usize = 32;
const MAC_LEN: usize = 32;
/// Version, key id, expiry, nonce, two length prefixes, two digests, round, MAC.
const FIXED_LEN: usize =
    1 + KEY_ID_LEN + 8 + NONCE_LEN + 1 + 2 + DIGEST_LEN + DIGEST_LEN + 2 + MAC_LEN;
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A secret key for sealing `requestState`. At least [`SealingKey::MIN_LEN`] bytes; give every
/// replica of a server the same key so that any of them can continue a request.
#[derive(Clone)]
pub struct SealingKey {
    id: [u8; KEY_ID_LEN],
    secret: Arc<[u8]>,
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey")
            .field("id", &B64.encode(self.id))
            .finish_non_exhaustive()
    }
}

/// Why a [`SealingKey`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The secret is shorter than [`SealingKey::MIN_LEN`] bytes.
    TooShort {
        /// The length given.
        len: usize,
    },
    /// The operating system's random source failed.
    Random(String),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::TooShort { len } => write!(
                f,
                "a sealing key needs at least {min} bytes, got {len}",
                min = SealingKey::MIN_LEN
            ),
            KeyError::Random(e) => write!(f, "the system random source failed: {e}"),
        }
    }
}

impl std::error::Error for KeyError {}

impl SealingKey {
    /// The shortest accepted secret, in bytes.
    pub const MIN_LEN: usize = 32;

    /// A key from secret bytes (at least [`MIN_LEN`](Self::MIN_LEN) of them, ideally random).
    pub fn new(secret: impl AsRef<[u8]>) -> Result<Self, KeyError> {
        let secret = secret.as_ref();
        if secret.len() < Self::MIN_LEN {
            return Err(KeyError::TooShort { len: secret.len() });
        }
        let mut id = [0; KEY_ID_LEN];
        id.copy_from_slice(&labelled_digest(b"mcp requestState key id\0", secret)[..KEY_ID_LEN]);
        Ok(Self {
            id,
            secret: secret.into(),
        })
    }

    /// A fresh random key from the operating system. Only this process knows it, so states it
    /// sealed cannot be opened by another replica or after a restart.
    pub fn generate() -> Result<Self, KeyError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        Self::new(secret)
    }
}

/// The request a sealed state belongs to. A state sealed for one binding does not open for
/// another, so an answer given for one call cannot be replayed into a different one.
///
/// The digest of the arguments is computed only when a state is sealed or opened: most
/// requests never need it.
#[derive(Debug, Clone)]
pub struct Binding {
    method: String,
    target: String,
    arguments: BoundArguments,
    digest: std::sync::OnceLock<[u8; DIGEST_LEN]>,
    subject: [u8; DIGEST_LEN],
}

/// The arguments a [`Binding`] holds until their digest is needed.
#[derive(Debug, Clone)]
enum BoundArguments {
    None,
    Value(Value),
    /// The request's JSON text, parsed only if a digest is computed.
    Text(Box<str>),
}

impl PartialEq for Binding {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method
            && self.target == other.target
            && self.subject == other.subject
            && self.arguments_digest() == other.arguments_digest()
    }
}

impl Eq for Binding {}

impl Binding {
    /// A binding to `method` (`tools/call`, `prompts/get`, `resources/read`) and its target
    /// (the tool or prompt name, the resource URI), with no arguments and no principal.
    pub fn new(method: impl Into<String>, target: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            target: target.into(),
            arguments: BoundArguments::None,
            digest: std::sync::OnceLock::new(),
            subject: [0; DIGEST_LEN],
        }
    }

    /// Binds the request's arguments too (absent and `{}` are the same); object key order does
    /// not matter.
    pub fn arguments(mut self, arguments: Option<&Value>) -> Self {
        self.arguments = match arguments {
            Some(v) => BoundArguments::Value(v.clone()),
            None => BoundArguments::None,
        };
        self.digest = std::sync::OnceLock::new();
        self
    }

    /// [`Binding::arguments`] from the request's JSON text, decoded only if a state is sealed or
    /// opened.
    pub(crate) fn arguments_text(mut self, arguments: Option<&str>) -> Self {
        self.arguments = match arguments {
            Some(text) => BoundArguments::Text(text.into()),
            None => BoundArguments::None,
        };
        self.digest = std::sync::OnceLock::new();
        self
    }

    fn arguments_digest(&self) -> [u8; DIGEST_LEN] {
        *self.digest.get_or_init(|| match &self.arguments {
            BoundArguments::None => digest_arguments(None),
            BoundArguments::Value(v) => digest_arguments(Some(v)),
            // Text that does not parse (it came from a parsed request, so it cannot) digests
            // as itself: it matches nothing a client could send.
            BoundArguments::Text(text) => match serde_json::from_str::<Value>(text) {
                Ok(v) => digest_arguments(Some(&v)),
                Err(_) => digest_arguments(Some(&Value::String(text.to_string()))),
            },
        })
    }

    /// Binds the authenticated principal (for example an OAuth subject): another principal
    /// cannot use the state.
    pub fn subject(mut self, subject: &str) -> Self {
        self.subject = labelled_digest(b"mcp requestState subject\0", subject.as_bytes());
        self
    }

    /// The bound method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The bound target.
    pub fn target(&self) -> &str {
        &self.target
    }
}

fn digest_arguments(arguments: Option<&Value>) -> [u8; DIGEST_LEN] {
    let mut canonical = Vec::new();
    match arguments {
        None | Some(Value::Null) => canonical.extend_from_slice(b"{}"),
        Some(v) => write_canonical(v, &mut canonical),
    }
    labelled_digest(b"mcp requestState arguments\0", &canonical)
}

/// SHA-256 of `data` after `label`, which keeps the digests of different uses apart.
fn labelled_digest(label: &[u8], data: &[u8]) -> [u8; DIGEST_LEN] {
    let mut digest = Hash::new();
    digest.update(label);
    digest.update(data);
    digest.finalize()
}

/// JSON with object keys sorted, so the digest does not depend on key order.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::from(k.as_str()).to_string().as_bytes());
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

/// Who a stateless request is made for, as a stable string (an OAuth subject, a user id). Put
/// it into the request's extensions (typically in a [`Middleware`](crate::Middleware) that reads
/// the authenticated principal the transport attached) and every `requestState` sealed for the
/// request is bound to it: another subject cannot continue the request, as the specification
/// asks of servers that authenticate their callers.
///
/// ```
/// use mcp_server::{
///     BoxFuture, ErrorObject, Middleware, Next, RawJson, Request, RequestStateSubject,
/// };
///
/// #[derive(Clone)]
/// struct User(String); // what an authentication layer attached
///
/// struct BindStateToUser;
///
/// impl Middleware for BindStateToUser {
///     fn handle<'a>(
///         &'a self,
///         mut request: Request,
///         next: Next<'a>,
///     ) -> BoxFuture<'a, Result<RawJson, ErrorObject>> {
///         if let Some(user) = request.extensions.get::<User>().cloned() {
///             request.extensions.insert(RequestStateSubject(user.0));
///         }
///         Box::pin(next.run(request))
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestStateSubject(pub String);

/// What a sealed state carries: the round it leads to, the handler's own state and the answers
/// collected in earlier rounds (keyed like the asks they answer).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SealedState {
    /// The number of rounds completed before this state was sealed.
    pub round: u16,
    /// The handler's opaque state (explicit layer), if any.
    pub state: Option<Value>,
    /// Answers from earlier rounds, as the client sent them.
    pub answers: BTreeMap<String, Value>,
    /// What the round that sealed this state asked for: key and method of each input request,
    /// so the answers of the retry are checked against the kind of request they answer.
    pub asked: BTreeMap<String, String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Body {
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    state: Option<Value>,
    #[serde(rename = "a", default, skip_serializing_if = "BTreeMap::is_empty")]
    answers: BTreeMap<String, Value>,
    #[serde(rename = "q", default, skip_serializing_if = "BTreeMap::is_empty")]
    asked: BTreeMap<String, String>,
}

/// Why a `requestState` was refused. Every kind is answered with `-32602`; the kinds exist for
/// logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// Longer than the configured maximum.
    TooLarge {
        /// The size presented or produced.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// Not something this server produced (bad encoding, truncated, unknown format).
    Malformed,
    /// Sealed with a key this server does not hold (any more).
    UnknownKey,
    /// The integrity check failed: the state was modified.
    Tampered,
    /// Older than the configured lifetime.
    Expired,
    /// Sealed for another method.
    WrongMethod {
        /// The method it was sealed for.
        sealed: String,
        /// The method it was presented with.
        presented: String,
    },
    /// Sealed for another tool, prompt or resource.
    WrongTarget {
        /// The target it was sealed for.
        sealed: String,
        /// The target it was presented with.
        presented: String,
    },
    /// Sealed for the same target called with other arguments.
    WrongArguments,
    /// Sealed for another principal.
    WrongSubject,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::TooLarge { size, max } => write!(
                f,
                "requestState is {size} bytes, more than the {max} accepted"
            ),
            StateError::Malformed => f.write_str("requestState is malformed"),
            StateError::UnknownKey => f.write_str("requestState was sealed with an unknown key"),
            StateError::Tampered => f.write_str("requestState failed its integrity check"),
            StateError::Expired => f.write_str("requestState has expired"),
            StateError::WrongMethod { sealed, presented } => {
                write!(f, "requestState belongs to {sealed}, not {presented}")
            }
            StateError::WrongTarget { sealed, presented } => {
                write!(f, "requestState belongs to {sealed:?}, not {presented:?}")
            }
            StateError::WrongArguments => {
                f.write_str("requestState belongs to a call with other arguments")
            }
            StateError::WrongSubject => f.write_str("requestState belongs to another principal"),
        }
    }
}

impl std::error::Error for StateError {}

/// Why a state could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealError {
    /// The sealed form would exceed the configured maximum.
    TooLarge {
        /// The size it would have.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A method or target name is too long to seal (255 / 65535 bytes).
    FieldTooLong(&'static str),
    /// The state is not serializable, or the random source failed.
    Internal(String),
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::TooLarge { size, max } => write!(
                f,
                "the sealed requestState would be {size} bytes, more than the {max} allowed"
            ),
            SealError::FieldTooLong(e) => write!(f, "{e} is too long to seal"),
            SealError::Internal(e) => write!(f, "cannot seal requestState: {e}"),
        }
    }
}

impl std::error::Error for SealError {}

type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

fn system_clock() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Seals and opens `requestState` (HMAC-SHA256, expiry, bound to the request).
///
/// ```
/// use mcp_server::{Binding, RequestStateSealer, SealedState, SealingKey};
/// use std::time::Duration;
///
/// let key = SealingKey::new([7u8; 32])?;
/// let sealer = RequestStateSealer::new(key).ttl(Duration::from_secs(300));
/// let binding = Binding::new("tools/call", "deploy");
/// let state = SealedState { round: 1, ..SealedState::default() };
/// let token = sealer.seal(&binding, &state)?;
/// assert_eq!(sealer.open(&token, &binding)?, state);
/// assert!(sealer.open(&token, &Binding::new("tools/call", "other")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RequestStateSealer {
    current: SealingKey,
    previous: Option<SealingKey>,
    ttl: Duration,
    max_size: usize,
    clock: Clock,
}

/// The server's sealer. Without a configured key its random key is made on first use: most
/// servers never seal a state, and deriving a key (a random secret, then two SHA-256 passes)
/// would otherwise be part of every start.
pub(crate) struct ServerSealer {
    ready: std::sync::OnceLock<RequestStateSealer>,
    /// What a generated key's sealer is made with.
    ttl: Duration,
    max_size: usize,
    previous: Option<SealingKey>,
}

impl ServerSealer {
    /// A sealer with the configured `key`, or one whose key is generated when first needed.
    pub(crate) fn new(
        key: Option<SealingKey>,
        previous: Option<SealingKey>,
        ttl: Duration,
        max_size: usize,
    ) -> Self {
        let this = Self {
            ready: std::sync::OnceLock::new(),
            ttl,
            max_size,
            previous,
        };
        if let Some(key) = key {
            let _ = this.ready.set(this.make(key));
        }
        this
    }

    fn make(&self, key: SealingKey) -> RequestStateSealer {
        let sealer = RequestStateSealer::new(key)
            .ttl(self.ttl)
            .max_size(self.max_size);
        match &self.previous {
            Some(previous) => sealer.previous_key(previous.clone()),
            None => sealer,
        }
    }

    /// The sealer; `Err` only when a key had to be generated and the system random source
    /// failed. Two first uses racing each make a key, and both use the one stored first.
    pub(crate) fn get(&self) -> Result<&RequestStateSealer, KeyError> {
        if let Some(sealer) = self.ready.get() {
            return Ok(sealer);
        }
        let sealer = self.make(SealingKey::generate()?);
        Ok(self.ready.get_or_init(|| sealer))
    }
}

impl fmt::Debug for RequestStateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateSealer")
            .field("current", &self.current)
            .field("previous", &self.previous)
            .field("ttl", &self.ttl)
            .field("max_size", &self.max_size)
            .finish_non_exhaustive()
    }
}

impl RequestStateSealer {
    /// How long a sealed state stays valid unless configured (10 minutes: enough for a person
    /// to answer a form).
    pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
    /// The longest sealed state produced or accepted unless configured (64 KiB).
    pub const DEFAULT_MAX_SIZE: usize = 64 * 1024;

    /// A sealer with one key, the default lifetime and size limit.
    pub fn new(key: SealingKey) -> Self {
        Self {
            current: key,
            previous: None,
            ttl: Self::DEFAULT_TTL,
            max_size: Self::DEFAULT_MAX_SIZE,
            clock: Arc::new(system_clock),
        }
    }

    /// Also opens states sealed with `key`, the key used before a rotation. New states are
    /// always sealed with the current key; drop the previous one once its states have expired.
    pub fn previous_key(mut self, key: SealingKey) -> Self {
        self.previous = Some(key);
        self
    }

    /// How long a sealed state stays valid.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The longest sealed state, in bytes of its encoded form, produced or accepted.
    pub fn max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes;
        self
    }

    /// The configured lifetime.
    pub fn lifetime(&self) -> Duration {
        self.ttl
    }

    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Seals `state` for the request described by `binding`.
    pub fn seal(&self, binding: &Binding, state: &SealedState) -> Result<String, SealError> {
        let method = u8::try_from(binding.method.len())
            .map_err(|_| SealError::FieldTooLong("the method"))?;
        let target = u16::try_from(binding.target.len())
            .map_err(|_| SealError::FieldTooLong("the target"))?;
        let body = serde_json::to_vec(&Body {
            state: state.state.clone(),
            answers: state.answers.clone(),
            asked: state.asked.clone(),
        })
        .map_err(|e| SealError::Internal(e.to_string()))?;
        let raw_len = FIXED_LEN + binding.method.len() + binding.target.len() + body.len();
        let size = (raw_len * 4).div_ceil(3);
        if size > self.max_size {
            return Err(SealError::TooLarge {
                size,
                max: self.max_size,
            });
        }
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Internal(e.to_string()))?;
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let expiry = (self.clock)().saturating_add(ttl_ms);

        let mut raw = Vec::with_capacity(raw_len);
        raw.push(FORMAT);
        raw.extend_from_slice(&self.current.id);
        raw.extend_from_slice(&expiry.to_be_bytes());
        raw.extend_from_slice(&nonce);
        raw.push(method);
        raw.extend_from_slice(binding.method.as_bytes());
        raw.extend_from_slice(&target.to_be_bytes());
        raw.extend_from_slice(binding.target.as_bytes());
        raw.extend_from_slice(&binding.arguments_digest());
        raw.extend_from_slice(&binding.subject);
        raw.extend_from_slice(&state.round.to_be_bytes());
        raw.extend_from_slice(&body);
        let mac = HMAC::mac(&raw, &self.current.secret);
        raw.extend_from_slice(&mac);
        Ok(B64.encode(raw))
    }

    /// Opens a `requestState` presented with the request described by `binding`.
    ///
    /// Checks, in order: size, encoding, key, integrity (constant-time), expiry, then the
    /// binding (method, target, arguments, principal).
    pub fn open(&self, token: &str, binding: &Binding) -> Result<SealedState, StateError> {
        if token.len() > self.max_size {
            return Err(StateError::TooLarge {
                size: token.len(),
                max: self.max_size,
            });
        }
        let raw = B64.decode(token).map_err(|_| StateError::Malformed)?;
        if raw.len() < FIXED_LEN || raw[0] != FORMAT {
            return Err(StateError::Malformed);
        }
        let key = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.id[..] == raw[1..1 + KEY_ID_LEN])
            .ok_or(StateError::UnknownKey)?;
        let (signed, tag) = raw.split_at(raw.len() - MAC_LEN);
        let mut mac = HMAC::new(&key.secret);
        mac.update(signed);
        // Constant-time.
        if !tag.try_into().is_ok_and(|tag| mac.finalize_verify(tag)) {
            return Err(StateError::Tampered);
        }

        let mut r = Reader {
            rest: &signed[1 + KEY_ID_LEN..],
        };
        let expiry = u64::from_be_bytes(r.array()?);
        let _nonce: [u8; NONCE_LEN] = r.array()?;
        let method_len = usize::from(r.array::<1>()?[0]);
        let method = r.str(method_len)?;
        let target_len = usize::from(u16::from_be_bytes(r.array()?));
        let target = r.str(target_len)?;
        let arguments: [u8; DIGEST_LEN] = r.array()?;
        let subject: [u8; DIGEST_LEN] = r.array()?;
        let round = u16::from_be_bytes(r.array()?);
        // Read as text, as every other JSON here is: the sealed body is what `to_vec` wrote.
        let body = std::str::from_utf8(r.rest).map_err(|_| StateError::Malformed)?;
        let body: Body = serde_json::from_str(body).map_err(|_| StateError::Malformed)?;

        if (self.clock)() > expiry {
            return Err(StateError::Expired);
        }
        if method != binding.method {
            return Err(StateError::WrongMethod {
                sealed: method.to_owned(),
                presented: binding.method.clone(),
            });
        }
        if target != binding.target {
            return Err(StateError::WrongTarget {
                sealed: target.to_owned(),
                presented: binding.target.clone(),
            });
        }
        if arguments != binding.arguments_digest() {
            return Err(StateError::WrongArguments);
        }
        if subject != binding.subject {
            return Err(StateError::WrongSubject);
        }
        Ok(SealedState {
            round,
            state: body.state,
            answers: body.answers,
            asked: body.asked,
        })
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StateError> {
        if self.rest.len() < n {
            return Err(StateError::Malformed);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], StateError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn str(&mut self, n: usize) -> Result<&'a str, StateError> {
        std::str::from_utf8(self.take(n)?).map_err(|_| StateError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn key(byte: u8) -> SealingKey {
        SealingKey::new([byte; 32]).unwrap()
    }

    fn state() -> SealedState {
        SealedState {
            round: 2,
            state: Some(json!({"step": 2})),
            answers: BTreeMap::from([(
                "user_name".to_owned(),
                json!({"action": "accept", "content": {"name": "Alice"}}),
            )]),
            asked: BTreeMap::from([("confirm".to_owned(), "elicitation/create".to_owned())]),
        }
    }

    fn binding() -> Binding {
        Binding::new("tools/call", "deploy").arguments(Some(&json!({"env": "prod", "n": 1})))
    }

    #[test]
    fn server_sealer_uses_the_configured_keys_and_generates_one_only_once() {
        let configured =
            ServerSealer::new(Some(key(1)), Some(key(2)), Duration::from_secs(60), 4096);
        let sealer = configured.get().unwrap();
        assert_eq!(sealer.lifetime(), Duration::from_secs(60));
        let token = sealer.seal(&binding(), &state()).unwrap();
        assert_eq!(
            RequestStateSealer::new(key(1))
                .open(&token, &binding())
                .unwrap(),
            state()
        );
        let old = RequestStateSealer::new(key(2))
            .seal(&binding(), &state())
            .unwrap();
        assert_eq!(sealer.open(&old, &binding()).unwrap(), state());

        let generated = ServerSealer::new(None, None, Duration::from_secs(30), 4096);
        assert!(
            generated.ready.get().is_none(),
            "no key is made before it is needed"
        );
        let first = generated.get().unwrap();
        assert!(std::ptr::eq(first, generated.get().unwrap()));
        assert_eq!(first.lifetime(), Duration::from_secs(30));
        let token = first.seal(&binding(), &state()).unwrap();
        assert_eq!(
            generated.get().unwrap().open(&token, &binding()).unwrap(),
            state()
        );
        assert!(
            RequestStateSealer::new(key(1))
                .open(&token, &binding())
                .is_err()
        );
    }

    #[test]
    fn round_trip() {
        let sealer = RequestStateSealer::new(key(1));
        let token = sealer.seal(&binding(), &state()).unwrap();
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(sealer.open(&token, &binding()).unwrap(), state());
        // Argument order does not matter; absent and empty arguments are the same.
        let reordered =
            Binding::new("tools/call", "deploy").arguments(Some(&json!({"n": 1, "env": "prod"})));
        assert!(sealer.open(&token, &reordered).is_ok());
        // Arguments bound as the request's text are the same arguments, whatever their
        // spacing and order; other values are not.
        let text = |t: &str| Binding::new("tools/call", "deploy").arguments_text(Some(t));
        assert!(
            sealer
                .open(&token, &text(r#"{ "n" : 1 , "env":"prod" }"#))
                .is_ok()
        );
        assert!(
            sealer
                .open(&token, &text(r#"{"env":"prod","n":2}"#))
                .is_err()
        );
        assert_eq!(text("{}"), Binding::new("tools/call", "deploy"));
        let empty = SealedState::default();
        let plain = Binding::new("prompts/get", "p");
        let t = sealer.seal(&plain, &empty).unwrap();
        assert_eq!(
            sealer
                .open(
                    &t,
                    &Binding::new("prompts/get", "p").arguments(Some(&json!({})))
                )
                .unwrap(),
            empty
        );
        // Two seals of the same state differ (nonce).
        assert_ne!(t, sealer.seal(&plain, &empty).unwrap());
    }

    #[test]
    fn every_flipped_byte_is_rejected() {
        let sealer = RequestStateSealer::new(key(1));
        let token = sealer.seal(&binding(), &state()).unwrap();
        let raw = B64.decode(&token).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            let err = sealer.open(&B64.encode(&bad), &binding()).unwrap_err();
            let expected = match i {
                0 => StateError::Malformed,
                1..=8 => StateError::UnknownKey,
                _ => StateError::Tampered,
            };
            assert_eq!(err, expected, "byte {i}");
        }
        // What the conformance suite does: append to the token.
        let appended = format!("{token}-TAMPERED");
        assert!(matches!(
            sealer.open(&appended, &binding()),
            Err(StateError::Malformed | StateError::Tampered)
        ));
        assert_eq!(
            sealer.open("not base64!", &binding()),
            Err(StateError::Malformed)
        );
        assert_eq!(sealer.open("", &binding()), Err(StateError::Malformed));
        assert!(matches!(
            sealer.open(&token[..token.len() - 4], &binding()),
            Err(StateError::Malformed | StateError::Tampered)
        ));
    }

    #[test]
    fn expires_on_the_clock() {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let clock = Arc::clone(&now);
        let sealer = RequestStateSealer::new(key(1))
            .ttl(Duration::from_secs(60))
            .with_clock(move || clock.load(Ordering::SeqCst));
        let token = sealer.seal(&binding(), &state()).unwrap();
        now.store(1_060_000, Ordering::SeqCst);
        assert!(
            sealer.open(&token, &binding()).is_ok(),
            "valid up to the expiry"
        );
        now.store(1_060_001, Ordering::SeqCst);
        assert_eq!(sealer.open(&token, &binding()), Err(StateError::Expired));
    }

    #[test]
    fn keys_and_rotation() {
        let old = RequestStateSealer::new(key(1));
        let token = old.seal(&binding(), &state()).unwrap();
        let other = RequestStateSealer::new(key(2));
        assert_eq!(other.open(&token, &binding()), Err(StateError::UnknownKey));
        let rotated = RequestStateSealer::new(key(2)).previous_key(key(1));
        assert_eq!(rotated.open(&token, &binding()).unwrap(), state());
        // New states use the current key: the old sealer cannot open them.
        let fresh = rotated.seal(&binding(), &state()).unwrap();
        assert_eq!(old.open(&fresh, &binding()), Err(StateError::UnknownKey));
        // A replica with the same key opens it.
        let replica = RequestStateSealer::new(key(2));
        assert!(replica.open(&fresh, &binding()).is_ok());
        // A key with the same id but another secret cannot exist in practice; forge one to show
        // that the MAC, not the id, decides.
        let mut forged = key(3);
        forged.id = key(2).id;
        let forger = RequestStateSealer::new(forged);
        let forged_token = forger.seal(&binding(), &state()).unwrap();
        assert_eq!(
            replica.open(&forged_token, &binding()),
            Err(StateError::Tampered)
        );
        assert!(matches!(
            SealingKey::new([0u8; 31]),
            Err(KeyError::TooShort { len: 31 })
        ));
        let a = SealingKey::generate().unwrap();
        let b = SealingKey::generate().unwrap();
        assert_ne!(a.id, b.id);
        assert!(!format!("{a:?}").contains("secret"));
    }

    /// A state sealed by an earlier build (the same key, at the same time) still opens: the
    /// format and its digests and MAC do not change under a rolling upgrade.
    #[test]
    fn opens_a_state_sealed_by_an_earlier_build() {
        const SEALED: &str = "AZbcS69wxY05AAAAAAAJK6hIbu1FeaiWjkudMJYMHdXJCnRvb2xzL2NhbGwABmRlcGxvecwwp\
            lo1BFLY8hQ1J-bIBxyNsKFvjRi5RZXqFQnJaN6cjTo-kdhcvp-S72qsxWSGXbtZUwQE79HYuoeB3hkaVa0AAnsicyI\
            6eyJzdGVwIjoyfSwiYSI6eyJ1c2VyX25hbWUiOnsiYWN0aW9uIjoiYWNjZXB0In19faLTA_BEShKIf-8M9CEVjduK5U\
            yXMQJe4IZnoEvjGLk9";
        let sealer = RequestStateSealer::new(key(7)).with_clock(|| 1_000);
        let alice = binding().subject("alice");
        let opened = sealer.open(SEALED, &alice).unwrap();
        assert_eq!(opened.round, 2);
        assert_eq!(opened.state, Some(json!({"step": 2})));
        assert_eq!(opened.answers["user_name"], json!({"action": "accept"}));
        // A changed byte fails the MAC.
        let mut tampered = SEALED.to_owned();
        tampered.replace_range(40..41, "A");
        assert_eq!(
            sealer.open(&tampered, &alice).unwrap_err(),
            StateError::Tampered
        );
        assert_eq!(
            sealer.open(SEALED, &binding().subject("bob")).unwrap_err(),
            StateError::WrongSubject
        );
    }

    #[test]
    fn bound_to_the_request() {
        let sealer = RequestStateSealer::new(key(1));
        let token = sealer.seal(&binding(), &state()).unwrap();
        assert!(matches!(
            sealer.open(&token, &Binding::new("prompts/get", "deploy")),
            Err(StateError::WrongMethod { .. })
        ));
        assert!(matches!(
            sealer.open(
                &token,
                &Binding::new("tools/call", "other")
                    .arguments(Some(&json!({"env": "prod", "n": 1})))
            ),
            Err(StateError::WrongTarget { .. })
        ));
        assert_eq!(
            sealer.open(
                &token,
                &Binding::new("tools/call", "deploy")
                    .arguments(Some(&json!({"env": "dev", "n": 1})))
            ),
            Err(StateError::WrongArguments)
        );
        assert_eq!(
            sealer.open(&token, &binding().subject("mallory")),
            Err(StateError::WrongSubject)
        );
        let alice = binding().subject("alice");
        let t = sealer.seal(&alice, &state()).unwrap();
        assert!(sealer.open(&t, &alice).is_ok());
        assert_eq!(
            sealer.open(&t, &binding().subject("bob")),
            Err(StateError::WrongSubject)
        );
        assert_eq!(sealer.open(&t, &binding()), Err(StateError::WrongSubject));
    }

    #[test]
    fn size_limits() {
        let sealer = RequestStateSealer::new(key(1)).max_size(300);
        let small = sealer.seal(&binding(), &SealedState::default()).unwrap();
        assert!(small.len() <= 300);
        let big = SealedState {
            state: Some(json!("x".repeat(400))),
            ..SealedState::default()
        };
        assert!(matches!(
            sealer.seal(&binding(), &big),
            Err(SealError::TooLarge { max: 300, .. })
        ));
        // The size computed before encoding is the encoded size.
        let exact = RequestStateSealer::new(key(1));
        for n in 0..8 {
            let s = SealedState {
                state: Some(json!("y".repeat(n))),
                ..SealedState::default()
            };
            let token = exact.seal(&binding(), &s).unwrap();
            let limited = RequestStateSealer::new(key(1)).max_size(token.len());
            assert!(limited.seal(&binding(), &s).is_ok(), "{n}");
            let tighter = RequestStateSealer::new(key(1)).max_size(token.len() - 1);
            assert!(tighter.seal(&binding(), &s).is_err(), "{n}");
        }
        let presented = "A".repeat(301);
        assert_eq!(
            sealer.open(&presented, &binding()),
            Err(StateError::TooLarge {
                size: 301,
                max: 300
            })
        );
        let long = "m".repeat(256);
        assert_eq!(
            RequestStateSealer::new(key(1)).seal(&Binding::new(long, "t"), &SealedState::default()),
            Err(SealError::FieldTooLong("the method"))
        );
    }
}
