//! Header values mirrored from the body (2026-07-28 `Mcp-Method`, `Mcp-Name`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::HeaderValue;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Encodes a body value for a header: as is when it is printable ASCII without leading or
/// trailing whitespace, otherwise (or when it looks like the encoded form itself) as
/// `=?base64?<standard Base64 of the UTF-8 bytes>?=`.
pub(crate) fn encode_header_value(value: &str) -> Option<HeaderValue> {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim_matches(' ') == value
        && !(value.starts_with(PREFIX) && value.ends_with(SUFFIX));
    if plain {
        HeaderValue::from_str(value).ok()
    } else {
        let encoded = format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value.as_bytes()));
        HeaderValue::from_str(&encoded).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &str) -> String {
        encode_header_value(v).unwrap().to_str().unwrap().to_owned()
    }

    #[test]
    fn plain_ascii_passes_and_the_rest_is_base64() {
        assert_eq!(enc("tools/call"), "tools/call");
        assert_eq!(enc("us west 1"), "us west 1");
        assert_eq!(enc(""), "");
        assert_eq!(
            enc("file:///path/to/file%20name.txt"),
            "file:///path/to/file%20name.txt"
        );
        assert_eq!(enc(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(enc("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(enc("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?=");
        assert_eq!(
            enc("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }
}
