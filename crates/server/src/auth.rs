//! Token auth as InfluxDB clients send it: `Authorization: Token <t>` (2.x),
//! `Authorization: Bearer <t>`, HTTP Basic with the token as password, or the 1.x query
//! parameters `u`/`p` with the token as `p`.
//!
//! Two tokens: `--auth-token` may do anything; `--read-only-token` (for dashboards) may
//! query and read `/metrics` but not write, create, alter, drop or delete ([`Access`]).

use std::collections::HashMap;

use axum::http::{HeaderMap, header};

use crate::config::ServerConfig;
use crate::error::ApiError;

/// What a request's credentials allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Everything (the auth token, or auth is off).
    Full,
    /// Queries and metrics only (the read-only token).
    ReadOnly,
}

impl Access {
    /// `Ok` unless this is read-only access; `what` names the refused action.
    pub fn require_write(self, what: &str) -> Result<(), ApiError> {
        match self {
            Access::Full => Ok(()),
            Access::ReadOnly => Err(ApiError::Forbidden(format!(
                "the read-only token cannot {what}; use the auth token"
            ))),
        }
    }
}

/// Checks a request's credentials against the server's tokens (`auth_token`, and
/// `read_only_token` which needs it); with no auth token, auth is off.
pub fn check(
    config: &ServerConfig,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Result<Access, ApiError> {
    if config.auth_token.is_none() {
        return Ok(Access::Full);
    }
    match offered_secret(headers, query) {
        Some(secret) => token_access(config, &secret)
            .ok_or_else(|| ApiError::Unauthorized("authorization failed: wrong token".into())),
        None => Err(ApiError::Unauthorized(
            "authorization required: send \"Authorization: Token <token>\", Bearer, Basic, or the u/p query parameters"
                .into(),
        )),
    }
}

/// What `secret` allows when auth is on: everything for the auth token, queries for the
/// read-only token, nothing (`None`) for anything else.
pub fn token_access(config: &ServerConfig, secret: &str) -> Option<Access> {
    let token = config.auth_token.as_deref()?;
    if constant_time_eq(secret.as_bytes(), token.as_bytes()) {
        Some(Access::Full)
    } else if config
        .read_only_token
        .as_deref()
        .is_some_and(|ro| constant_time_eq(secret.as_bytes(), ro.as_bytes()))
    {
        Some(Access::ReadOnly)
    } else {
        None
    }
}

/// Whether `secret` is the auth token (TCP connections, which only write, accept no other).
pub fn is_write_token(config: &ServerConfig, secret: &str) -> bool {
    config
        .auth_token
        .as_deref()
        .is_some_and(|token| constant_time_eq(secret.as_bytes(), token.as_bytes()))
}

/// The secret a request offers, from the first of: Authorization header, `p` parameter.
fn offered_secret(headers: &HeaderMap, query: &HashMap<String, String>) -> Option<String> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().ok()?.trim();
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let rest = rest.trim();
        return match scheme.to_ascii_lowercase().as_str() {
            "token" | "bearer" => Some(rest.to_owned()),
            "basic" => {
                let decoded = base64_decode(rest)?;
                let text = String::from_utf8(decoded).ok()?;
                let (_user, password) = text.split_once(':')?;
                Some(password.to_owned())
            }
            _ => None,
        };
    }
    query.get("p").cloned()
}

/// Compares without an early exit, so the time taken does not reveal a matching prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Standard base64 (RFC 4648, padding optional). Written here because Basic auth is its
/// only use and it is twenty lines.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= value(*c)? << (18 - 6 * i);
        }
        let [_, a, b, c] = acc.to_be_bytes();
        out.push(a);
        if chunk.len() > 2 {
            out.push(b);
        }
        if chunk.len() > 3 {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(auth).expect("header"),
        );
        h
    }

    #[test]
    fn base64() {
        assert_eq!(
            base64_decode("dXNlcjpzZWNyZXQ=").as_deref(),
            Some(&b"user:secret"[..])
        );
        assert_eq!(base64_decode("YQ").as_deref(), Some(&b"a"[..]));
        assert_eq!(base64_decode("YWI=").as_deref(), Some(&b"ab"[..]));
        assert_eq!(base64_decode("YWJj").as_deref(), Some(&b"abc"[..]));
        assert_eq!(base64_decode("!!!!"), None);
    }

    fn config(token: Option<&str>, read_only: Option<&str>) -> ServerConfig {
        ServerConfig {
            auth_token: token.map(str::to_owned),
            read_only_token: read_only.map(str::to_owned),
            ..ServerConfig::default()
        }
    }

    #[test]
    fn every_form_is_accepted_and_wrong_ones_refused() {
        let none = HashMap::new();
        let off = config(None, None);
        let on = config(Some("s3"), None);
        let full = Some(Access::Full);
        assert_eq!(check(&off, &HeaderMap::new(), &none).ok(), full);
        assert!(check(&on, &HeaderMap::new(), &none).is_err());
        assert_eq!(check(&on, &headers("Token s3"), &none).ok(), full);
        assert_eq!(check(&on, &headers("Bearer s3"), &none).ok(), full);
        assert!(check(&on, &headers("Token s4"), &none).is_err());
        // "user:s3"
        assert_eq!(check(&on, &headers("Basic dXNlcjpzMw=="), &none).ok(), full);
        let query = HashMap::from([
            ("u".to_owned(), "x".to_owned()),
            ("p".to_owned(), "s3".to_owned()),
        ]);
        assert_eq!(check(&on, &HeaderMap::new(), &query).ok(), full);
        let wrong = HashMap::from([("p".to_owned(), "nope".to_owned())]);
        assert!(check(&on, &HeaderMap::new(), &wrong).is_err());
    }

    #[test]
    fn the_read_only_token_reads_only() {
        let none = HashMap::new();
        let both = config(Some("s3"), Some("ro"));
        let access = check(&both, &headers("Token ro"), &none).expect("accepted");
        assert_eq!(access, Access::ReadOnly);
        let refused = access.require_write("write").expect_err("read-only");
        assert_eq!(refused.status(), axum::http::StatusCode::FORBIDDEN);
        assert!(refused.to_string().contains("cannot write"), "{refused}");
        let full = check(&both, &headers("Token s3"), &none).expect("accepted");
        assert!(full.require_write("write").is_ok());
        assert!(is_write_token(&both, "s3"));
        assert!(!is_write_token(&both, "ro"));
        assert!(!is_write_token(&config(None, None), ""));
    }
}
