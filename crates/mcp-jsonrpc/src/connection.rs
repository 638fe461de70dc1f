//! The transport abstraction: a stream of inbound frames and a sink of outbound frames.

use std::any::{Any, TypeId};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_sink::Sink;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite};
use tokio_util::sync::PollSender;

use crate::codec::{AutoCodec, CodecConfig, ContentLengthCodec, Framing, LineCodec};
use crate::error::{FrameError, TransportError};
use crate::id::Id;
use crate::message::{Frame, Inbound, Message};

/// An outbound frame, with the id of the inbound request it belongs to, if any.
///
/// `related` lets the HTTP transport put a handler's progress and log notifications, and its
/// requests to the peer, on the stream of the POST that carried the request. Transports with a
/// single stream (stdio) ignore it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    /// What to write.
    pub frame: Frame,
    /// The inbound request this frame belongs to.
    pub related: Option<Id>,
}

impl Outbound {
    /// A frame unrelated to any inbound request.
    pub fn new(frame: impl Into<Frame>) -> Self {
        Outbound {
            frame: frame.into(),
            related: None,
        }
    }

    /// A frame that belongs to the inbound request `related`.
    pub fn related(frame: impl Into<Frame>, related: Option<Id>) -> Self {
        Outbound {
            frame: frame.into(),
            related,
        }
    }
}

impl From<Message> for Outbound {
    fn from(value: Message) -> Self {
        Outbound::new(value)
    }
}

/// A small type map carried with inbound frames into handler contexts (for example the HTTP
/// request's parts or an authenticated principal).
///
/// ```
/// use mcp_jsonrpc::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct User(&'static str);
/// let mut ext = Extensions::new();
/// ext.insert(User("ada"));
/// assert_eq!(ext.get::<User>(), Some(&User("ada")));
/// assert_eq!(ext.get::<u8>(), None);
/// ```
///
/// It holds a handful of values at most, so it is a small array searched in order (the first
/// four in the map's own allocation), shared copy-on-write: cloning it (every handler context
/// does) copies no entries. A transport that attaches several values to every request inserts
/// them as one [`ExtensionGroup`]: one allocation instead of one per value.
#[derive(Clone, Default)]
pub struct Extensions {
    entries: Option<Arc<Entries>>,
}

type Entry = (TypeId, Arc<dyn Any + Send + Sync>);

/// How many values live in the map's own allocation; more go to a vector.
const INLINE: usize = 4;

#[derive(Clone, Default)]
struct Entries {
    inline: [Option<Entry>; INLINE],
    more: Vec<Entry>,
    /// The first group, in the map's own allocation (a transport inserts one).
    group: Option<Arc<dyn ExtensionGroup>>,
    /// Later groups, the latest last.
    more_groups: Vec<Arc<dyn ExtensionGroup>>,
}

impl Entries {
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.inline.iter().flatten().chain(&self.more)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.inline.iter_mut().flatten().chain(&mut self.more)
    }

    fn len(&self) -> usize {
        self.iter().count() + self.groups().count()
    }

    /// The groups, the latest first.
    fn groups(&self) -> impl Iterator<Item = &Arc<dyn ExtensionGroup>> {
        self.more_groups.iter().rev().chain(&self.group)
    }
}

/// Values inserted into [`Extensions`] together, with one allocation
/// ([`Extensions::insert_group`]); each member is found by its own type, as if inserted on its
/// own.
///
/// ```
/// use std::any::{Any, TypeId};
/// use mcp_jsonrpc::{ExtensionGroup, Extensions};
///
/// #[derive(Debug, PartialEq)]
/// struct User(&'static str);
/// #[derive(Debug, PartialEq)]
/// struct Tenant(u32);
///
/// struct Caller {
///     user: User,
///     tenant: Tenant,
/// }
///
/// impl ExtensionGroup for Caller {
///     fn member(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
///         if id == TypeId::of::<User>() {
///             Some(&self.user)
///         } else if id == TypeId::of::<Tenant>() {
///             Some(&self.tenant)
///         } else {
///             None
///         }
///     }
/// }
///
/// let mut ext = Extensions::new();
/// ext.insert_group(Caller { user: User("ada"), tenant: Tenant(7) });
/// assert_eq!(ext.get::<User>(), Some(&User("ada")));
/// assert_eq!(ext.get::<Tenant>(), Some(&Tenant(7)));
/// // A value inserted later replaces the member.
/// ext.insert(Tenant(8));
/// assert_eq!(ext.get::<Tenant>(), Some(&Tenant(8)));
/// ```
pub trait ExtensionGroup: Send + Sync + 'static {
    /// The member of type `id`, if the group holds one.
    fn member(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)>;
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts a value, replacing any previous value of the same type (one of a group's
    /// members included).
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        let entries = Arc::make_mut(self.entries.get_or_insert_with(Arc::default));
        let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
        if let Some(entry) = entries.iter_mut().find(|(key, _)| *key == id) {
            entry.1 = value;
            return;
        }
        match entries.inline.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some((id, value)),
            None => entries.more.push((id, value)),
        }
    }

    /// Inserts the members of `group`, replacing any previous values of their types.
    pub fn insert_group<G: ExtensionGroup>(&mut self, group: G) {
        let entries = Arc::make_mut(self.entries.get_or_insert_with(Arc::default));
        // Single values are found before groups: drop those the group replaces.
        for slot in &mut entries.inline {
            if slot
                .as_ref()
                .is_some_and(|(id, _)| group.member(*id).is_some())
            {
                *slot = None;
            }
        }
        entries.more.retain(|(id, _)| group.member(*id).is_none());
        let group: Arc<dyn ExtensionGroup> = Arc::new(group);
        match &entries.group {
            None => entries.group = Some(group),
            Some(_) => entries.more_groups.push(group),
        }
    }

    /// The value of type `T`, if present.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        let entries = self.entries.as_ref()?;
        match entries.iter().find(|(key, _)| *key == id) {
            Some((_, value)) => value.downcast_ref::<T>(),
            None => entries
                .groups()
                .find_map(|group| group.member(id))
                .and_then(|value| value.downcast_ref::<T>()),
        }
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries
            .as_ref()
            .is_none_or(|e| e.iter().next().is_none() && e.group.is_none())
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.entries.as_ref().map_or(0, |e| e.len()))
            .finish()
    }
}

/// One inbound frame as a transport delivers it to the engine.
#[derive(Debug)]
pub struct Incoming {
    /// The decoded frame, or the recoverable error to answer.
    pub frame: Result<Inbound, FrameError>,
    /// Transport-provided context, handed to handlers.
    pub extensions: Extensions,
}

impl From<Result<Inbound, FrameError>> for Incoming {
    fn from(frame: Result<Inbound, FrameError>) -> Self {
        Incoming {
            frame,
            extensions: Extensions::default(),
        }
    }
}

impl From<Frame> for Incoming {
    fn from(frame: Frame) -> Self {
        let inbound = match frame {
            Frame::Single(m) => Ok(Inbound::Single(m)),
            Frame::Batch(b) if b.is_empty() => Err(FrameError::EmptyBatch),
            Frame::Batch(b) => Ok(Inbound::Batch(b.into_iter().map(Ok).collect())),
        };
        inbound.into()
    }
}

/// The inbound half of a [`Connection`]. It ends with `None` on a clean close; an `Err` item is
/// fatal and its text becomes the close reason.
pub type InboundStream = Pin<Box<dyn Stream<Item = Result<Incoming, TransportError>> + Send>>;
/// The outbound half of a [`Connection`].
pub type OutboundSink = Pin<Box<dyn Sink<Outbound, Error = TransportError> + Send>>;

/// A transport connection: what the engine runs over. Transports (stdio, child processes,
/// in-memory pairs, HTTP sessions) build one from any stream of inbound frames and any sink of
/// outbound frames.
///
/// ```
/// use mcp_jsonrpc::{Connection, codec::{CodecConfig, Framing}};
///
/// # async fn f() {
/// let (a, b) = tokio::io::duplex(64 * 1024);
/// let (read, write) = tokio::io::split(a);
/// let conn = Connection::framed(read, write, Framing::Line, CodecConfig::default());
/// # let _ = (conn, b);
/// # }
/// ```
pub struct Connection {
    reader: InboundStream,
    writer: OutboundSink,
    extensions: Extensions,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection from a stream of inbound items and a sink of outbound frames. Items convert
    /// into [`Incoming`] (decoder output does) and errors into [`TransportError`] (I/O errors do).
    pub fn new<R, T, E, W, WE>(reader: R, writer: W) -> Self
    where
        R: Stream<Item = Result<T, E>> + Send + 'static,
        T: Into<Incoming>,
        E: Into<TransportError>,
        W: Sink<Outbound, Error = WE> + Send + 'static,
        WE: Into<TransportError>,
    {
        Connection {
            reader: Box::pin(MapReader { inner: reader }),
            writer: Box::pin(MapWriter { inner: writer }),
            extensions: Extensions::new(),
        }
    }

    /// The same connection, with `value` among what the transport attaches to the connection
    /// as a whole (an [`InletLink`](crate::InletLink), say, for a transport that serves
    /// requests in its own tasks).
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// What the transport attached to the connection as a whole.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// A connection over a byte stream pair with the given framing and limits.
    pub fn framed<Rd, Wr>(reader: Rd, writer: Wr, framing: Framing, config: CodecConfig) -> Self
    where
        Rd: AsyncRead + Send + 'static,
        Wr: AsyncWrite + Send + 'static,
    {
        match framing {
            Framing::Line => Self::with_codec(reader, writer, LineCodec::with_config(config)),
            Framing::ContentLength => {
                Self::with_codec(reader, writer, ContentLengthCodec::with_config(config))
            }
            Framing::Auto => Self::with_codec(reader, writer, AutoCodec::with_config(config)),
        }
    }

    /// A connection over a byte stream pair with a codec; a clone of the codec encodes.
    pub fn with_codec<Rd, Wr, C>(reader: Rd, writer: Wr, codec: C) -> Self
    where
        Rd: AsyncRead + Send + 'static,
        Wr: AsyncWrite + Send + 'static,
        C: Decoder<Item = Result<Inbound, FrameError>, Error = std::io::Error>
            + Encoder<Outbound, Error = std::io::Error>
            + Clone
            + Send
            + 'static,
    {
        let read = FramedRead::new(reader, codec.clone());
        let write = FramedWrite::new(writer, codec);
        Self::new(read, write)
    }

    /// Splits the connection into its halves.
    pub fn into_parts(self) -> (InboundStream, OutboundSink) {
        (self.reader, self.writer)
    }
}

/// Two connected in-memory connections: what one side sends, the other receives, without
/// serialization. Each direction buffers at most `capacity` frames.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use futures_util::{SinkExt, StreamExt};
/// use mcp_jsonrpc::{memory_pair, Inbound, Message, Notification, Outbound};
///
/// let (a, b) = memory_pair(8);
/// let (_a_in, mut a_out) = a.into_parts();
/// let (mut b_in, _b_out) = b.into_parts();
/// let msg = Message::from(Notification::new("hello", None));
/// a_out.send(Outbound::from(msg.clone())).await.unwrap();
/// let got = b_in.next().await.unwrap().unwrap();
/// assert_eq!(got.frame.unwrap(), Inbound::Single(msg));
/// # }
/// ```
pub fn memory_pair(capacity: usize) -> (Connection, Connection) {
    let (a_tx, a_rx) = mpsc::channel::<Outbound>(capacity.max(1));
    let (b_tx, b_rx) = mpsc::channel::<Outbound>(capacity.max(1));
    let a = Connection::new(MemoryReader { rx: b_rx }, MemoryWriter::new(a_tx));
    let b = Connection::new(MemoryReader { rx: a_rx }, MemoryWriter::new(b_tx));
    (a, b)
}

struct MemoryReader {
    rx: mpsc::Receiver<Outbound>,
}

impl Stream for MemoryReader {
    type Item = Result<Incoming, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx
            .poll_recv(cx)
            .map(|o| o.map(|out| Ok(Incoming::from(out.frame))))
    }
}

struct MemoryWriter {
    tx: PollSender<Outbound>,
}

impl MemoryWriter {
    fn new(tx: mpsc::Sender<Outbound>) -> Self {
        MemoryWriter {
            tx: PollSender::new(tx),
        }
    }
}

fn peer_gone<T>(_: T) -> TransportError {
    TransportError::Closed("the in-memory peer was dropped".into())
}

impl Sink<Outbound> for MemoryWriter {
    type Error = TransportError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tx.poll_reserve(cx).map_err(peer_gone)
    }

    fn start_send(mut self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        self.tx.send_item(item).map_err(peer_gone)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tx.close();
        Poll::Ready(Ok(()))
    }
}

pin_project! {
    struct MapReader<R> {
        #[pin]
        inner: R,
    }
}

impl<R, T, E> Stream for MapReader<R>
where
    R: Stream<Item = Result<T, E>>,
    T: Into<Incoming>,
    E: Into<TransportError>,
{
    type Item = Result<Incoming, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project()
            .inner
            .poll_next(cx)
            .map(|o| o.map(|r| r.map(Into::into).map_err(Into::into)))
    }
}

pin_project! {
    struct MapWriter<W> {
        #[pin]
        inner: W,
    }
}

impl<W, WE> Sink<Outbound> for MapWriter<W>
where
    W: Sink<Outbound, Error = WE>,
    WE: Into<TransportError>,
{
    type Error = TransportError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.project().inner.poll_ready(cx).map_err(Into::into)
    }

    fn start_send(self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        self.project().inner.start_send(item).map_err(Into::into)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.project().inner.poll_flush(cx).map_err(Into::into)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.project().inner.poll_close(cx).map_err(Into::into)
    }
}

#[cfg(test)]
mod extensions_tests {
    use super::Extensions;

    #[test]
    fn insert_replaces_and_clones_are_independent() {
        let mut a = Extensions::new();
        assert!(a.is_empty());
        a.insert(1u8);
        a.insert("first");
        a.insert(2u8);
        assert_eq!(a.get::<u8>(), Some(&2));
        assert_eq!(a.get::<&str>(), Some(&"first"));
        let mut b = a.clone();
        b.insert("second");
        b.insert(7u32);
        assert_eq!(a.get::<&str>(), Some(&"first"));
        assert_eq!(a.get::<u32>(), None);
        assert_eq!(b.get::<&str>(), Some(&"second"));
        assert_eq!(b.get::<u8>(), Some(&2));
        assert_eq!(format!("{b:?}"), "Extensions { len: 3 }");
    }

    #[derive(Debug, PartialEq)]
    struct N<const K: usize>(u32);

    #[test]
    fn extensions_hold_any_number_of_types_copy_on_write() {
        let mut ext = Extensions::new();
        assert!(ext.is_empty());
        ext.insert(N::<0>(0));
        ext.insert(N::<1>(1));
        ext.insert(N::<2>(2));
        ext.insert(N::<3>(3));
        // Beyond the inline slots.
        ext.insert(N::<4>(4));
        ext.insert(N::<5>(5));
        assert!(!ext.is_empty());
        assert_eq!(ext.get::<N<0>>(), Some(&N(0)));
        assert_eq!(ext.get::<N<5>>(), Some(&N(5)));
        assert_eq!(ext.get::<u8>(), None);
        // Replacing keeps one value per type, inline or not.
        ext.insert(N::<1>(10));
        ext.insert(N::<5>(50));
        assert_eq!(ext.get::<N<1>>(), Some(&N(10)));
        assert_eq!(ext.get::<N<5>>(), Some(&N(50)));
        assert_eq!(format!("{ext:?}"), "Extensions { len: 6 }");
        // A clone shares until one side writes.
        let before = ext.clone();
        ext.insert(N::<2>(20));
        ext.insert(N::<6>(6));
        assert_eq!(before.get::<N<2>>(), Some(&N(2)));
        assert_eq!(before.get::<N<6>>(), None);
        assert_eq!(ext.get::<N<2>>(), Some(&N(20)));
        assert_eq!(ext.get::<N<6>>(), Some(&N(6)));
    }

    use std::any::{Any, TypeId};

    use super::ExtensionGroup;

    /// Two members and what they answer to.
    struct Pair(N<0>, N<1>);

    impl ExtensionGroup for Pair {
        fn member(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
            if id == TypeId::of::<N<0>>() {
                Some(&self.0)
            } else if id == TypeId::of::<N<1>>() {
                Some(&self.1)
            } else {
                None
            }
        }
    }

    #[test]
    fn the_latest_value_of_a_type_wins_between_groups_and_single_values() {
        let mut ext = Extensions::new();
        ext.insert(N::<0>(100));
        ext.insert(N::<2>(2));
        ext.insert_group(Pair(N(0), N(1)));
        assert!(!ext.is_empty());
        // The group replaced the single value of a member's type, and nothing else.
        assert_eq!(ext.get::<N<0>>(), Some(&N(0)));
        assert_eq!(ext.get::<N<1>>(), Some(&N(1)));
        assert_eq!(ext.get::<N<2>>(), Some(&N(2)));
        assert_eq!(format!("{ext:?}"), "Extensions { len: 2 }");
        let before = ext.clone();
        ext.insert(N::<1>(11));
        assert_eq!(ext.get::<N<1>>(), Some(&N(11)));
        assert_eq!(before.get::<N<1>>(), Some(&N(1)));
        ext.insert_group(Pair(N(20), N(21)));
        assert_eq!(ext.get::<N<0>>(), Some(&N(20)));
        assert_eq!(ext.get::<N<1>>(), Some(&N(21)));
        let mut only = Extensions::new();
        only.insert_group(Pair(N(0), N(1)));
        assert!(!only.is_empty());
        assert_eq!(only.get::<N<3>>(), None);
    }
}
