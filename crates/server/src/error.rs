//! Errors: [`ServerError`] for starting and stopping the server, [`ApiError`] for one HTTP
//! request, and [`ApiError::status`], the one place that maps errors to HTTP status codes.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use strata_storage::StorageError;

/// Why the server could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A bad setting (flag, environment variable or config file).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A listener could not be bound or served.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The async runtime or signal handling could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The storage engine failed to open, flush or close.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Damage that stops the start, with what the operator can do about it.
    #[error("{0}")]
    Damaged(String),
}

/// A failed HTTP request: the status comes from the variant, the JSON body from the text.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Malformed request: missing database, bad precision, bad query string, bad gzip.
    #[error("{0}")]
    BadRequest(String),
    /// Missing or wrong credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// Good credentials that do not allow this (the read-only token asked to write).
    #[error("{0}")]
    Forbidden(String),
    /// No such endpoint.
    #[error("{0}")]
    NotFound(String),
    /// Endpoint exists, method does not.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The client paused its request body for longer than the client timeout.
    #[error("{0}")]
    RequestTimeout(String),
    /// Body (or decompressed body) over the cap.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Too many write bytes in flight; the client should retry shortly.
    #[error("{0}")]
    Overloaded(String),
    /// An engine error.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Anything else that is the server's fault.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The one mapping from errors to HTTP status codes: bad data and schema conflicts are
    /// 400, I/O and corruption 500, an unavailable engine or overload 503, a full disk 507.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Storage(e) if e.is_out_of_space() => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::Storage(e) => match e {
                StorageError::Schema(_) | StorageError::Invalid(_) => StatusCode::BAD_REQUEST,
                StorageError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                // A read-only query server on the lake: the request is never allowed here.
                StorageError::ReadOnly(_) => StatusCode::FORBIDDEN,
                StorageError::Io { .. }
                | StorageError::InUse { .. }
                | StorageError::Corrupt { .. }
                | StorageError::Wal(_)
                | StorageError::Series(_)
                | StorageError::Arrow(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }
}

/// Appended to every 507 answer: what happened and what the operator can do.
pub(crate) const OUT_OF_SPACE_HINT: &str = " (no space is left for Strata's data: a full \
     disk, a quota or a file-size limit; writes are refused and queries still answered; free \
     space there, or shorten retention, and writes resume by themselves; rows of a refused \
     write may or may not be stored, and writing them again is safe)";

/// A JSON response: `body` serialized, with the status given.
pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
            tracing::error!("request failed: {self}");
        }
        let mut message = self.to_string();
        if status == StatusCode::INSUFFICIENT_STORAGE {
            message.push_str(OUT_OF_SPACE_HINT);
        }
        let mut response = json_response(status, &serde_json::json!({ "error": message }));
        let headers = response.headers_mut();
        match status {
            StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            StatusCode::INSUFFICIENT_STORAGE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
            }
            StatusCode::UNAUTHORIZED => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"strata\""),
                );
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(
            ApiError::BadRequest("x".into()).status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            ApiError::Storage(StorageError::Invalid("x".into())).status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            ApiError::Storage(StorageError::io(
                "cannot write",
                std::path::Path::new("/x"),
                std::io::Error::other("disk full")
            ))
            .status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        let full = ApiError::Storage(StorageError::io(
            "cannot write",
            std::path::Path::new("/x"),
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        ));
        assert_eq!(full.status(), StatusCode::INSUFFICIENT_STORAGE);
        let response = full.into_response();
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("10"))
        );
        let response = ApiError::Overloaded("busy".into()).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
    }
}
