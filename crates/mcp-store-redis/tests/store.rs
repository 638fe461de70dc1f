//! The stores against a real redis-server.

use crate::support;

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use mcp_store_redis::{RedisConfig, RedisStore};
use mcp_transport_http::server::{EventStore, SessionRecord, SessionStore};
use support::RedisServer;

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        protocol_version: Some("2025-11-25".to_owned()),
        created_at: SystemTime::now(),
        owner: Some("alice".to_owned()),
        initialize: Some(r#"{"protocolVersion":"2025-11-25"}"#.to_owned()),
    }
}

fn config() -> RedisConfig {
    RedisConfig {
        prefix: "test".to_owned(),
        max_events_per_stream: 4,
        timeout: Duration::from_millis(500),
        ..RedisConfig::default()
    }
}

#[tokio::test]
async fn sessions_round_trip_with_a_ttl() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::connect(&redis.url(), config()).await.unwrap();
    assert!(store.load("s1").await.unwrap().is_none());
    assert!(!store.touch("s1").await.unwrap());
    store.create(record("s1")).await.unwrap();
    let loaded = store.load("s1").await.unwrap().unwrap();
    assert_eq!(loaded.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(loaded.owner.as_deref(), Some("alice"));
    assert_eq!(
        loaded.initialize.as_deref(),
        Some(r#"{"protocolVersion":"2025-11-25"}"#)
    );
    assert!(store.touch("s1").await.unwrap());
    assert!(store.is_shared());

    let client = redis::Client::open(redis.url()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let ttl: i64 = redis::cmd("TTL")
        .arg("test:session:s1")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 30 * 60, "ttl {ttl}");

    store.remove("s1").await.unwrap();
    assert!(store.load("s1").await.unwrap().is_none());
}

#[tokio::test]
async fn events_replay_after_an_id_and_are_capped() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::connect(&redis.url(), config()).await.unwrap();
    assert!(store.replay_after("s", "1", 0).await.unwrap().is_none());
    store.append("s", "1", 0, Bytes::new()).await.unwrap();
    for seq in 1..=6 {
        store
            .append("s", "1", seq, Bytes::from(format!("{{\"n\":{seq}}}")))
            .await
            .unwrap();
    }
    store
        .append("s", "2", 0, Bytes::from_static(b"{}"))
        .await
        .unwrap();
    // Capped at 4 per stream: 3..=6 are left.
    let kept = store.replay_after("s", "1", 0).await.unwrap().unwrap();
    assert_eq!(kept.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5, 6]);
    let after = store.replay_after("s", "1", 4).await.unwrap().unwrap();
    assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), [5, 6]);
    assert_eq!(after[0].data, Bytes::from_static(b"{\"n\":5}"));
    assert!(
        store
            .replay_after("s", "1", 6)
            .await
            .unwrap()
            .unwrap()
            .is_empty()
    );
    store.remove_session("s").await.unwrap();
    assert!(store.replay_after("s", "1", 0).await.unwrap().is_none());
    assert!(store.replay_after("s", "2", 0).await.unwrap().is_none());
}

#[tokio::test]
async fn an_unreachable_redis_fails_within_the_timeout_and_recovers() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::connect(&redis.url(), config()).await.unwrap();
    store.create(record("a")).await.unwrap();
    redis.kill();
    for _ in 0..3 {
        let started = Instant::now();
        assert!(store.load("a").await.is_err());
        assert!(store.append("a", "1", 1, Bytes::new()).await.is_err());
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "two calls took {:?}",
            started.elapsed()
        );
    }
    redis.restart();
    let started = Instant::now();
    loop {
        match store.load("a").await {
            // A restarted Redis has no data: the session is gone, the store works.
            Ok(found) => {
                assert!(found.is_none());
                break;
            }
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(2),
                "not back after 2 s: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Nothing listening at all: connecting fails within the timeout too.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let url = format!("redis://127.0.0.1:{dead}/0");
    assert!(RedisStore::connect(&url, config()).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(2));
}
