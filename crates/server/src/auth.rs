//! Token auth as InfluxDB clients send it: `Authorization: Token <t>` (2.x),
//! `Authorization: Bearer <t>`, HTTP Basic with the token as password, or the 1.x query
//! parameters `u`/`p` with the token as `p`.

use std::collections::HashMap;

use axum::http::{HeaderMap, header};

use crate::error::ApiError;

/// Checks a request's credentials against `token`; `None` means auth is off.
pub fn check(
    token: Option<&str>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Result<(), ApiError> {
    let Some(token) = token else {
        return Ok(());
    };
    let offered = offered_secret(headers, query);
    match offered {
        Some(secret) if constant_time_eq(secret.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::Unauthorized("authorization failed: wrong token".into())),
        None => Err(ApiError::Unauthorized(
            "authorization required: send \"Authorization: Token <token>\", Bearer, Basic, or the u/p query parameters"
                .into(),
        )),
    }
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

    #[test]
    fn every_form_is_accepted_and_wrong_ones_refused() {
        let none = HashMap::new();
        assert!(check(None, &HeaderMap::new(), &none).is_ok());
        assert!(check(Some("s3"), &HeaderMap::new(), &none).is_err());
        assert!(check(Some("s3"), &headers("Token s3"), &none).is_ok());
        assert!(check(Some("s3"), &headers("Bearer s3"), &none).is_ok());
        assert!(check(Some("s3"), &headers("Token s4"), &none).is_err());
        // "user:s3"
        assert!(check(Some("s3"), &headers("Basic dXNlcjpzMw=="), &none).is_ok());
        let query = HashMap::from([
            ("u".to_owned(), "x".to_owned()),
            ("p".to_owned(), "s3".to_owned()),
        ]);
        assert!(check(Some("s3"), &HeaderMap::new(), &query).is_ok());
        let wrong = HashMap::from([("p".to_owned(), "nope".to_owned())]);
        assert!(check(Some("s3"), &HeaderMap::new(), &wrong).is_err());
    }
}
