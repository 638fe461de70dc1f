//! The Skills extension end to end: `mcp-client` against an `mcp-server` serving skills over an
//! in-memory connection, on the 2026-07-28 revision (extensions are negotiated from it on).
//! Listing fetches no file; a manifest is read, a file fetched and verified, and a file a
//! middleware tampers with on the way is refused.

use std::sync::{Arc, Mutex};

use mcp_client::Client;
use mcp_client::skills::SkillError;
use mcp_jsonrpc::memory_pair;
use mcp_server::skills::{ServedSkill, SkillSet};
use mcp_server::{BoxFuture, ErrorObject, Middleware, Next, RawJson, Request, Server};
use mcp_types::skills::SkillResources;
use mcp_types::{Implementation, ProtocolVersion};
use serde_json::Value;

const PDF_MD: &str =
    "---\nname: pdf-processing\ndescription: Extract PDF documents\nlicense: MIT\n---\n# PDF\n";
const TAMPERED: &str = "skill://pdf-processing/scripts/extract.py";

/// Records every method and rewrites the text of one file as it leaves the server.
#[derive(Clone, Default)]
struct Tamper {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Middleware for Tamper {
    fn handle<'a>(
        &'a self,
        req: Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<RawJson, ErrorObject>> {
        Box::pin(async move {
            let params: Value = req
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_default();
            let uri = params.get("uri").and_then(Value::as_str).map(str::to_owned);
            self.seen.lock().unwrap().push(format!(
                "{} {}",
                req.method,
                uri.clone().unwrap_or_default()
            ));
            let result = next.run(req).await?;
            if uri.as_deref() != Some(TAMPERED) {
                return Ok(result);
            }
            let mut value: Value = serde_json::from_str(result.get()).unwrap();
            value["contents"][0]["text"] = Value::String("import os  # tampered\n".into());
            Ok(RawJson::serialize(&value).unwrap())
        })
    }
}

fn server(tamper: Tamper) -> Server {
    let pdf = ServedSkill::new(PDF_MD)
        .unwrap()
        .file("templates/invoice.md", "# Invoice\n")
        .unwrap()
        .file("scripts/extract.py", "print('extract')\n")
        .unwrap()
        .file("bin/logo.png", vec![0x89, b'P', b'N', b'G', 0xff])
        .unwrap();
    let refunds = ServedSkill::new("---\nname: refunds\ndescription: Refunds\n---\n")
        .unwrap()
        .prefix("acme/billing")
        .unwrap();
    Server::builder(Implementation::new("skills-test", "1.0.0"))
        .middleware(tamper)
        .skills(SkillSet::new().with(pdf).unwrap().with(refunds).unwrap())
        .build()
        .unwrap()
}

async fn connect(
    server: Server,
    version: ProtocolVersion,
) -> (mcp_client::ClientSession, tokio::task::JoinHandle<()>) {
    let (client_side, server_side) = memory_pair(32);
    let task = tokio::spawn(async move {
        let _ = server.serve(server_side).await;
    });
    let session = Client::builder(Implementation::new("skills-client", "1.0.0"))
        .protocol_version(version)
        .min_protocol_version(version)
        .build()
        .connect(client_side)
        .await
        .expect("connected");
    (session, task)
}

#[tokio::test]
async fn skills_are_listed_read_verified_and_tampering_is_refused() {
    let tamper = Tamper::default();
    let (session, task) = connect(server(tamper.clone()), ProtocolVersion::V2026_07_28).await;
    let skills = session.skills().expect("the extension is declared");
    assert!(skills.capability().directory_read);

    let listed = skills.list_all().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    assert!(
        !tamper
            .seen
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.starts_with("resources/read")),
        "listing reads no file"
    );

    // The manifest, by URI.
    let pdf = skills.get("skill://pdf-processing/SKILL.md").await.unwrap();
    assert_eq!(pdf, listed[1]);
    assert_eq!(pdf.frontmatter["license"], "MIT");
    let SkillResources::Files(files) = &pdf.resources else {
        panic!("a manifest")
    };
    assert_eq!(files.len(), 4);

    // Loading reads SKILL.md and checks it; a listed file reads verified, text or bytes.
    let loaded = skills.load(&pdf).await.unwrap();
    assert_eq!(loaded.text(), Some(PDF_MD));
    assert!(loaded.verified);
    let invoice = skills
        .read_file(&pdf, "skill://pdf-processing/templates/invoice.md")
        .await
        .unwrap();
    assert_eq!(invoice.text(), Some("# Invoice\n"));
    let logo = skills
        .read_file(&pdf, "skill://pdf-processing/bin/logo.png")
        .await
        .unwrap();
    assert_eq!(logo.bytes, [0x89, b'P', b'N', b'G', 0xff]);
    assert_eq!(logo.mime_type.as_deref(), Some("image/png"));

    // Tampered on the way: refused, as a verification failure.
    let error = skills.read_file(&pdf, TAMPERED).await.unwrap_err();
    assert!(
        matches!(
            error,
            SkillError::SizeMismatch { .. } | SkillError::DigestMismatch { .. }
        ),
        "{error}"
    );
    assert!(error.is_verification_failure());

    // A file the manifest does not list is not even requested.
    let before = tamper.seen.lock().unwrap().len();
    let error = skills
        .read_file(&pdf, "skill://pdf-processing/secret.md")
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::NotListed { .. }), "{error}");
    assert_eq!(tamper.seen.lock().unwrap().len(), before);

    // Directories: the skill root, with its subdirectories.
    let root = skills
        .read_directory("skill://pdf-processing", None)
        .await
        .unwrap();
    let children: Vec<(String, Option<String>)> = root
        .resources
        .iter()
        .map(|r| (r.uri.clone(), r.mime_type.clone()))
        .collect();
    assert!(children.contains(&(
        "skill://pdf-processing/templates".into(),
        Some("inode/directory".into())
    )));
    assert!(children.contains(&(
        "skill://pdf-processing/SKILL.md".into(),
        Some("text/markdown".into())
    )));

    // Unknown skills and non-directories are invalid params.
    for error in [
        skills
            .get("skill://nope/SKILL.md")
            .await
            .map(|_| ())
            .unwrap_err(),
        skills
            .read_directory("skill://pdf-processing/SKILL.md", None)
            .await
            .map(|_| ())
            .unwrap_err(),
    ] {
        match error {
            SkillError::Call {
                source: mcp_client::CallError::Rpc(e),
                ..
            } => assert_eq!(e.code, -32602),
            other => panic!("{other}"),
        }
    }

    // SKILL.md is an ordinary resource too, named and described from its frontmatter.
    let resources = session.list_all_resources().await.unwrap();
    let md = resources
        .iter()
        .find(|r| r.uri == "skill://pdf-processing/SKILL.md")
        .unwrap();
    assert_eq!(md.name, "pdf-processing");
    assert_eq!(md.description.as_deref(), Some("Extract PDF documents"));
    session.close().await;
    task.abort();
}

#[tokio::test]
async fn sessions_of_older_revisions_see_no_extension() {
    let (session, task) = connect(server(Tamper::default()), ProtocolVersion::V2025_11_25).await;
    assert!(matches!(session.skills(), Err(SkillError::NotDeclared)));
    session.close().await;
    task.abort();
}
