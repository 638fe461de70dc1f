//! The unified model: `ProtocolVersion`, the method table, projection and tagged unions.

use mcp_types::methods::{self, MethodKind, Request, Sender};
use mcp_types::{
    AudioContent, CallToolResult, ContentBlock, Era, Icon, Project, ProtocolVersion, RequestId,
    ResourceContentsKind, TextContent, Tool, tag,
};
use serde_json::json;

#[test]
fn protocol_versions_are_ordered_and_parse() {
    assert_eq!(ProtocolVersion::ALL.len(), 5);
    assert!(ProtocolVersion::ALL.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ProtocolVersion::LATEST, ProtocolVersion::V2026_07_28);
    for v in ProtocolVersion::ALL {
        assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(*v));
        assert_eq!(v.to_string(), v.as_str());
        assert_eq!(serde_json::to_value(v).unwrap(), json!(v.as_str()));
    }
    assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Session);
    assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Stateless);
    let err = "2099-01-01".parse::<ProtocolVersion>().unwrap_err();
    assert_eq!(err.requested, "2099-01-01");
    assert!(err.to_string().contains("2099-01-01"));
    assert!("".parse::<ProtocolVersion>().is_err());
    assert!(serde_json::from_value::<ProtocolVersion>(json!("2024-11-06")).is_err());
    assert!(serde_json::from_value::<ProtocolVersion>(json!(5)).is_err());
}

#[test]
fn method_table() {
    assert_eq!(methods::CallTool::METHOD, "tools/call");
    let call = methods::lookup("tools/call").unwrap();
    assert_eq!(call.kind, MethodKind::Request);
    assert_eq!(call.sender, Sender::Client);
    assert_eq!(call.revisions, ProtocolVersion::ALL);
    assert_eq!(call.result_type, Some("CallToolResult"));
    let ping = methods::lookup("ping").unwrap();
    assert_eq!(ping.sender, Sender::Both);
    assert!(!ping.available_in(ProtocolVersion::V2026_07_28));
    let init = methods::lookup("initialize").unwrap();
    assert!(init.available_in(ProtocolVersion::V2025_11_25));
    assert!(!init.available_in(ProtocolVersion::V2026_07_28));
    let discover = methods::lookup("server/discover").unwrap();
    assert_eq!(discover.revisions, &[ProtocolVersion::V2026_07_28]);
    let elicit = methods::lookup("elicitation/create").unwrap();
    assert_eq!(elicit.sender, Sender::Server);
    assert!(!elicit.available_in(ProtocolVersion::V2025_03_26));
    assert_eq!(
        methods::lookup("notifications/cancelled").unwrap().kind,
        MethodKind::Notification
    );
    assert!(methods::lookup("tools/cal").is_none());
    assert!(methods::all().windows(2).all(|w| w[0].name < w[1].name));
    let n2024 = methods::for_revision(ProtocolVersion::V2024_11_05).count();
    assert_eq!(n2024, mcp_types::v2024_11_05::METHOD_NAMES.len());
    for rev in ProtocolVersion::ALL {
        for m in methods::for_revision(*rev) {
            assert!(m.available_in(*rev));
        }
    }
    // Typed: the marker ties params and result types together.
    fn result_of<R: Request>(v: serde_json::Value) -> R::Result
    where
        R::Result: serde::de::DeserializeOwned,
    {
        serde_json::from_value(v).unwrap()
    }
    let r: CallToolResult = result_of::<methods::CallTool>(json!({"content": []}));
    assert!(r.content.is_empty());
}

#[test]
fn content_blocks_are_tagged_by_type() {
    let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "a"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
        {"type": "resource", "resource": {"uri": "file:///y", "blob": "AA=="}}
    ]))
    .unwrap();
    assert!(matches!(blocks[0], ContentBlock::Text(_)));
    assert!(matches!(blocks[1], ContentBlock::Image(_)));
    assert!(matches!(blocks[2], ContentBlock::Audio(_)));
    assert!(matches!(blocks[3], ContentBlock::ResourceLink(_)));
    match &blocks[4] {
        ContentBlock::Resource(r) => assert!(matches!(r.resource, ResourceContentsKind::Blob(_))),
        other => panic!("{other:?}"),
    }
    let err = serde_json::from_value::<ContentBlock>(json!({"type": "video"})).unwrap_err();
    assert!(err.to_string().contains("ContentBlock"), "{err}");
    let err = serde_json::from_value::<ContentBlock>(json!({"type": "text"})).unwrap_err();
    assert!(err.to_string().contains("text"), "{err}");
    assert!(serde_json::from_value::<ContentBlock>(json!("text")).is_err());
    assert!(serde_json::from_value::<TextContent>(json!({"type": "image", "text": "a"})).is_err());
}

/// Unions decode alike from every source: text, bytes, a reader, a `Value`, and serde's
/// buffering for `flatten` and `untagged` in a user's own types (where the value is rebuilt
/// as text first).
#[test]
fn unions_decode_alike_from_every_source() {
    #[derive(serde::Deserialize)]
    struct Flattened {
        #[serde(flatten)]
        result: CallToolResult,
        extra: u8,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u8),
        Block(Box<ContentBlock>),
    }

    let text = r#"{"content": [{"type": "text", "text": "a\u00e9"},
        {"text": "b", "type": "text", "annotations": {"priority": 0.5}},
        {"type": "resource", "resource": {"uri": "file:///y", "text": "t"}}], "extra": 7}"#;
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let from_text: CallToolResult = serde_json::from_str(text).unwrap();
    assert_eq!(from_text.content.len(), 3);
    assert!(matches!(&from_text.content[0], ContentBlock::Text(t) if t.text == "a\u{e9}"));
    match &from_text.content[2] {
        ContentBlock::Resource(r) => assert!(matches!(r.resource, ResourceContentsKind::Text(_))),
        other => panic!("{other:?}"),
    }
    let from_bytes: CallToolResult = serde_json::from_slice(text.as_bytes()).unwrap();
    let from_reader: CallToolResult = serde_json::from_reader(text.as_bytes()).unwrap();
    let from_value: CallToolResult = serde_json::from_value(value.clone()).unwrap();
    let from_ref = <CallToolResult as serde::Deserialize>::deserialize(&value).unwrap();
    for other in [from_bytes, from_reader, from_value, from_ref] {
        assert_eq!(other, from_text);
    }
    let flattened: Flattened = serde_json::from_str(text).unwrap();
    assert_eq!(flattened.result.content, from_text.content);
    assert_eq!(flattened.extra, 7);
    let either: Vec<Either> =
        serde_json::from_str(r#"[3, {"type": "text", "text": "c"}]"#).unwrap();
    assert!(matches!(either[0], Either::Number(3)));
    assert!(
        matches!(&either[1], Either::Block(b) if matches!(&**b, ContentBlock::Text(t) if t.text == "c"))
    );
}

/// A variant's error reads as the variant's, with one position: where the union sits in the
/// whole input.
#[test]
fn a_union_error_names_the_union_and_one_position() {
    let err =
        serde_json::from_str::<CallToolResult>(r#"{"content": [{"type": "text", "text": 5}]}"#)
            .unwrap_err()
            .to_string();
    assert!(
        err.starts_with("invalid ContentBlock: invalid type: integer `5`, expected a string"),
        "{err}"
    );
    assert_eq!(err.matches(" at line ").count(), 1, "{err}");
    let err = serde_json::from_str::<ContentBlock>(r#"{"type": "video"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("no variant of ContentBlock has type `video`"),
        "{err}"
    );
    let err = serde_json::from_str::<ContentBlock>("[1]")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("an array matches no variant of ContentBlock"),
        "{err}"
    );
}

/// The generated serde impls read and write as serde's derive did, except that an object never
/// comes as an array.
#[test]
fn structs_and_enums_read_like_the_derive() {
    let err = |text: &str| {
        serde_json::from_str::<TextContent>(text)
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(r#"["text", "a"]"#).starts_with("invalid type: sequence, expected struct TextContent")
    );
    assert!(err(r#"{"type": "text"}"#).starts_with("missing field `text`"));
    assert!(
        err(r#"{"type": "text", "text": "a", "text": "b"}"#).starts_with("duplicate field `text`")
    );
    assert!(err(r#"{"type": "image", "text": "a"}"#).contains(r#"expected the string "text""#));

    // A closed struct skips the names it does not have; an escaped name is still a name.
    let t: TextContent =
        serde_json::from_str(r#"{"t\u0065xt": "a", "x": [1], "type": "text"}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&t).unwrap(),
        r#"{"text":"a","type":"text"}"#
    );

    // An open struct keeps them in `extra`, written after its fields, from text, from a value,
    // and flattened into a user's type (where names arrive as owned strings).
    let text = r#"{"z": [1], "_meta": {"a": 1}, "b\u0032": 2}"#;
    let from_text: mcp_types::EmptyResult = serde_json::from_str(text).unwrap();
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let from_value = <mcp_types::EmptyResult as serde::Deserialize>::deserialize(&value).unwrap();
    #[derive(serde::Deserialize)]
    struct Outer {
        #[serde(flatten)]
        inner: mcp_types::EmptyResult,
    }
    let flattened: Outer = serde_json::from_str(text).unwrap();
    for r in [&from_value, &flattened.inner] {
        assert_eq!(r, &from_text);
    }
    assert_eq!(
        serde_json::to_string(&from_text).unwrap(),
        r#"{"_meta":{"a":1},"b2":2,"z":[1]}"#
    );

    let role = |text: &str| serde_json::from_str::<mcp_types::Role>(text);
    assert_eq!(role(r#""user""#).unwrap(), mcp_types::Role::User);
    assert_eq!(
        serde_json::to_string(&mcp_types::Role::Assistant).unwrap(),
        r#""assistant""#
    );
    assert!(
        role(r#""robot""#)
            .unwrap_err()
            .to_string()
            .starts_with("unknown variant `robot`, expected `assistant` or `user`")
    );
    assert!(
        role("5")
            .unwrap_err()
            .to_string()
            .starts_with("invalid type: integer `5`")
    );
}

#[test]
fn request_ids_are_string_or_integer_never_null() {
    assert_eq!(
        serde_json::from_value::<RequestId>(json!(7)).unwrap(),
        RequestId::Integer(7)
    );
    assert_eq!(
        serde_json::from_value::<RequestId>(json!("a")).unwrap(),
        RequestId::String("a".into())
    );
    assert!(serde_json::from_value::<RequestId>(json!(null)).is_err());
    assert!(serde_json::from_value::<RequestId>(json!(1.5)).is_err());
    assert!(serde_json::from_value::<RequestId>(json!({})).is_err());
}

#[test]
fn numbers_keep_their_form() {
    let p: mcp_types::ProgressNotificationParams =
        serde_json::from_value(json!({"progressToken": 1, "progress": 50, "total": 0.5})).unwrap();
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"progressToken": 1, "progress": 50, "total": 0.5})
    );
}

#[test]
fn projection_clears_what_a_revision_lacks() {
    let icon = Icon {
        src: "https://example.com/i.png".into(),
        mime_type: None,
        sizes: None,
        theme: None,
    };
    let mut tool = Tool {
        icons: Some(vec![icon]),
        title: Some("Weather".into()),
        ..Tool::new("weather", serde_json::Map::new())
    };
    let mut old = tool.clone();
    old.project(ProtocolVersion::V2024_11_05);
    assert_eq!(old.icons, None);
    assert_eq!(old.title, None);
    assert_eq!(old.name, "weather");
    tool.project(ProtocolVersion::V2025_11_25);
    assert!(tool.icons.is_some());
    assert!(tool.title.is_some());

    let audio = ContentBlock::Audio(AudioContent {
        meta: None,
        annotations: None,
        data: "AA==".into(),
        mime_type: "audio/wav".into(),
        r#type: tag::Audio,
    });
    let mut result = CallToolResult {
        structured_content: Some(json!({"a": 1})),
        result_type: Some("complete".into()),
        ..CallToolResult::new(vec![ContentBlock::text("a"), audio])
    };
    let mut r2024 = result.clone();
    r2024.project(ProtocolVersion::V2024_11_05);
    assert_eq!(
        r2024.content.len(),
        1,
        "audio blocks do not exist in 2024-11-05"
    );
    assert_eq!(r2024.structured_content, None);
    assert_eq!(r2024.result_type, None);
    result.project(ProtocolVersion::V2025_03_26);
    assert_eq!(result.content.len(), 2);
    assert_eq!(result.result_type, None);

    // The projected value is valid for the older revision's own type.
    let v = serde_json::to_value(&r2024).unwrap();
    let back: mcp_types::v2024_11_05::CallToolResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(back).unwrap(), v);
}

#[test]
fn constructors() {
    assert_eq!(
        serde_json::to_value(CallToolResult::error("boom")).unwrap(),
        json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
    );
    assert_eq!(mcp_types::Implementation::new("a", "1").name, "a");
}
