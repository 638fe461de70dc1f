//! Metadata documents: OAuth 2.0 Protected Resource Metadata (RFC 9728) and Authorization
//! Server Metadata (RFC 8414, also read from OpenID Connect discovery).
//!
//! Identifier fields (`resource`, `issuer`) are kept byte-exact as received.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Protected Resource Metadata (RFC 9728 section 2), served by an MCP server and read by clients.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource identifier: the canonical URL of the MCP server.
    pub resource: String,
    /// Issuer identifiers of the authorization servers that can issue tokens for this resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How bearer tokens may be presented; MCP servers list only `header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name of the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// A URL of human-readable documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// The JWS algorithms the resource accepts in DPoP proofs (RFC 9728 section 2,
    /// RFC 9449).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the resource accepts only DPoP-bound access tokens (RFC 9728 section 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// Any other members, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProtectedResourceMetadata {
    /// Metadata for `resource` protected by the authorization server `issuer`, with
    /// `bearer_methods_supported: ["header"]`.
    ///
    /// ```
    /// let prm = mcp_auth::ProtectedResourceMetadata::new(
    ///     "https://mcp.example.com/mcp",
    ///     "https://auth.example.com",
    /// )
    /// .with_scopes(["mcp:read", "mcp:write"]);
    /// assert_eq!(prm.authorization_servers, ["https://auth.example.com"]);
    /// ```
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: vec![issuer.into()],
            bearer_methods_supported: Some(vec!["header".to_owned()]),
            ..Self::default()
        }
    }

    /// Sets `scopes_supported`.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }
}

/// Authorization Server Metadata (RFC 8414 section 2; OpenID Connect discovery documents
/// share these members).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier, byte-exact as published.
    pub issuer: String,
    /// The authorization endpoint (absent for servers that only issue tokens by other grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// The token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The dynamic client registration endpoint (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Supported `response_type` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// Supported grant types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Supported PKCE code challenge methods; MCP requires `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Supported client authentication methods at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Supported signing algorithms for `private_key_jwt` client assertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Whether URL-formatted client IDs (Client ID Metadata Documents) are accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// The JWK Set of the server's signing keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The JWS algorithms accepted in DPoP proofs (RFC 9449 section 5.1); its presence means
    /// the server can bind tokens to a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Any other members, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServerMetadata {
    /// Whether `value` is listed in the optional list `list`.
    pub(crate) fn lists(list: &Option<Vec<String>>, value: &str) -> bool {
        list.as_ref().is_some_and(|l| l.iter().any(|v| v == value))
    }

    /// Whether PKCE with `S256` is advertised.
    pub fn supports_s256(&self) -> bool {
        Self::lists(&self.code_challenge_methods_supported, "S256")
    }

    /// Whether `scope` is listed in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        Self::lists(&self.scopes_supported, scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_identifiers_and_extra_members() {
        let json = r#"{"resource":"http://localhost:3000","authorization_servers":["http://localhost:4000/tenant1"],"x":1}"#;
        let prm: ProtectedResourceMetadata = serde_json::from_str(json).unwrap();
        assert_eq!(prm.resource, "http://localhost:3000");
        assert_eq!(prm.authorization_servers, ["http://localhost:4000/tenant1"]);
        assert_eq!(prm.extra.get("x"), Some(&Value::from(1)));
        let back = serde_json::to_string(&prm).unwrap();
        assert_eq!(back, json);
    }

    #[test]
    fn reads_as_metadata() {
        let json = r#"{"issuer":"https://as","token_endpoint":"https://as/t","code_challenge_methods_supported":["plain","S256"],"scopes_supported":["offline_access"]}"#;
        let m: AuthorizationServerMetadata = serde_json::from_str(json).unwrap();
        assert!(m.supports_s256());
        assert!(m.supports_scope("offline_access"));
        assert!(!m.supports_scope("x"));
        let none: AuthorizationServerMetadata = serde_json::from_str(r#"{"issuer":"i"}"#).unwrap();
        assert!(!none.supports_s256());
    }
}
