//! `mcp login` and `mcp logout` end to end: the real binary against the bundled example served
//! over Streamable HTTP behind `mcp_auth::ResourceServer`, with the test authorization server
//! of `mcp-auth`'s flow tests (dynamic registration, PKCE, `iss`). The test plays the browser:
//! it opens the address `mcp login` prints and follows the redirect to its loopback listener.

use crate::support;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{Home, wait};
use bytes::Bytes;
use jsonwebtoken::{Algorithm, DecodingKey};
use mcp_auth::{
    HttpClient, HyperHttpClient, JwtVerifier, ProtectedResourceMetadata, ResourceServer,
};
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use support::{AsConfig, SECRET, TestAs};

/// The bundled example on Streamable HTTP, behind a resource server that trusts `issuer`.
async fn protected_example(issuer: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let url = format!("{base}/mcp");
    let verifier = JwtVerifier::new(issuer, url.clone())
        .with_key(DecodingKey::from_secret(SECRET), Algorithm::HS256);
    let rs = ResourceServer::new(
        ProtectedResourceMetadata::new(url.clone(), issuer),
        format!("{base}/.well-known/oauth-protected-resource/mcp"),
        Arc::new(verifier),
    );
    let server = mcp_example::server().expect("the example server");
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(HttpServerConfig::default().path("/mcp"))
        .auth(rs)
        .build();
    tokio::spawn(async move {
        let _ = service
            .serve_with_listener(listener, std::future::pending::<()>())
            .await;
    });
    url
}

/// GETs `url` without following redirects; the `Location` of a redirect.
async fn location(http: &HyperHttpClient, url: &str) -> Option<String> {
    let request = http::Request::get(url).body(Bytes::new()).ok()?;
    let response = http.send(request).await.ok()?;
    response
        .headers()
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Runs `mcp login url --no-browser` with `home`, playing the browser; what it printed.
fn log_in(runtime: &tokio::runtime::Runtime, home: &Home, url: &str) -> String {
    let mut login = home
        .command(&["login", url, "--no-browser"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp login");
    let stderr = login.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let mut lines = BufReader::new(stderr);
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains("/authorize?") {
                let _ = tx.send(line.trim().to_owned());
            }
            all.push_str(&line);
            line.clear();
        }
        let mut rest = String::new();
        let _ = lines.read_to_string(&mut rest);
        all + &rest
    });
    let address = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("mcp login prints the authorization address");
    // The browser: the authorization server redirects to the loopback listener of `mcp login`.
    let http = HyperHttpClient::new().expect("an HTTP client");
    let callback = runtime
        .block_on(location(&http, &address))
        .expect("the authorization server redirects");
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    assert!(callback.contains("code="), "{callback}");
    let answered = runtime.block_on(async {
        let request = http::Request::get(callback.as_str())
            .body(Bytes::new())
            .expect("request");
        http.send(request).await.map(|r| r.status())
    });
    assert_eq!(answered.ok(), Some(http::StatusCode::OK));
    let status = wait(&mut login, Duration::from_secs(60)).expect("mcp login did not finish");
    let said = reader.join().expect("stderr reader");
    assert!(status.success(), "{said}");
    assert!(said.contains(&format!("logged in to {url}")), "{said}");

    said
}

#[test]
fn login_stores_tokens_that_client_commands_use() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (auth, url) = runtime.block_on(async {
        let auth = TestAs::start(AsConfig::default()).await;
        let url = protected_example(&auth.issuer).await;
        (auth, url)
    });
    let home = Home::new("login");
    let other_home = Home::new("login-other");

    // Without a login the server refuses, and the command says what to do.
    let refused = home.run(&["call", "echo", "--arg", "text=hi", "--url", &url]);
    refused.expect_code(3);
    assert!(
        refused
            .stderr
            .contains(&format!("{url} needs authorization: run `mcp login {url}`")),
        "{refused:?}"
    );
    assert!(!refused.stderr.contains("WARN"), "{refused:?}");

    log_in(&runtime, &home, &url);
    // The tokens: one file, readable by the owner only, holding a token for this server.
    let tokens = home.path().join(".config/mcp/tokens.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens)
            .expect("the token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&tokens).expect("read tokens")).expect("JSON");
    assert!(
        stored[&auth.issuer]["tokens"][&url]["access_token"].is_string(),
        "{stored}"
    );
    assert!(
        !auth.log().authorizations.is_empty(),
        "the authorization endpoint was used"
    );

    // Client commands use the stored tokens.
    let echo = home.run(&["call", "echo", "--arg", "text=authorized", "--url", &url]);
    echo.expect_code(0);
    assert_eq!(echo.stdout, "authorized\n");
    let elsewhere = other_home.run(&["call", "echo", "--arg", "text=x", "--url", &url]);
    assert_eq!(
        elsewhere.code,
        Some(3),
        "another user has no tokens: {elsewhere:?}"
    );

    let logout = home.run(&["logout", &url]);
    logout.expect_code(0);
    let after = home.run(&["call", "echo", "--arg", "text=hi", "--url", &url]);
    after.expect_code(3);
    assert!(after.stderr.contains("mcp login"), "{after:?}");
    let again = home.run(&["logout", &url]);
    again.expect_code(2);
}

#[test]
fn a_refused_token_is_refreshed_by_the_next_command() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (auth, url) = runtime.block_on(async {
        let auth = TestAs::start(AsConfig::default()).await;
        let url = protected_example(&auth.issuer).await;
        (auth, url)
    });
    let home = Home::new("refresh");
    log_in(&runtime, &home, &url);
    let tokens = home.path().join(".config/mcp/tokens.json");
    let read = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&tokens).expect("the token file")).expect("JSON")
    };
    let refreshes = || {
        auth.log()
            .tokens
            .iter()
            .filter(|(form, _)| form.get("grant_type").map(String::as_str) == Some("refresh_token"))
            .count()
    };
    // The stored access token goes bad (revoked, or expired early): the server refuses it, and
    // the next command refreshes it with the stored refresh token and goes on.
    let mut stored = read();
    assert!(
        stored[&auth.issuer]["tokens"][&url]["refresh_token"].is_string(),
        "a refresh token was stored: {stored}"
    );
    stored[&auth.issuer]["tokens"][&url]["access_token"] = "no-longer-valid".into();
    std::fs::write(&tokens, serde_json::to_vec(&stored).expect("JSON")).expect("write");
    let before = refreshes();
    let echo = home.run(&["call", "echo", "--arg", "text=refreshed", "--url", &url]);
    echo.expect_code(0);
    assert_eq!(echo.stdout, "refreshed\n");
    assert_eq!(refreshes(), before + 1, "one refresh_token grant");
    let token = read()[&auth.issuer]["tokens"][&url]["access_token"].clone();
    assert!(
        token.is_string() && token != "no-longer-valid",
        "the new token is stored: {token}"
    );
}
