//! Errors the HTTP edge turns into a status code and a JSON body.

use thiserror::Error;

/// Every failure a request can end in. The message is safe to show to the
/// caller: it never carries a secret or an internal detail.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ApiError {
    #[error("{0}")]
    Unauthorized(&'static str),
    /// Authenticated, but not allowed from where it came (a cross-site request).
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    BadRequest(String),
    /// A well-formed request that may not have its way (a button pressed by
    /// someone who may not decide, or too late): why, for the presser.
    #[error("{0}")]
    Refused(String),
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0}")]
    Unavailable(&'static str),
    /// A request body over the route's cap (refused before it is read whole).
    #[error("request body over {0} bytes")]
    TooLarge(usize),
    /// A text over its own limit (an identity document's characters): the
    /// message says which limit.
    #[error("{0}")]
    ContentTooLarge(String),
    /// Over a rate or count limit (failed sign-ins, new guest chats): try
    /// again after `retry_after_secs`.
    #[error("{message}")]
    TooManyRequests { message: &'static str, retry_after_secs: u64 },
    /// The configuration is refused (a token too short): nothing is served.
    #[error("{0}")]
    Misconfigured(String),
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn status(&self) -> u16 {
        match self {
            ApiError::Unauthorized(_) => 401,
            ApiError::Forbidden(_) => 403,
            ApiError::BadRequest(_) => 400,
            ApiError::Refused(_) => 409,
            ApiError::NotFound => 404,
            ApiError::MethodNotAllowed => 405,
            ApiError::Unavailable(_) => 503,
            ApiError::TooLarge(_) | ApiError::ContentTooLarge(_) => 413,
            ApiError::TooManyRequests { .. } => 429,
            ApiError::Misconfigured(_) => 503,
            ApiError::Internal => 500,
        }
    }

    /// The `Retry-After` header's seconds, for the errors that have one.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::TooManyRequests { retry_after_secs, .. } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// The JSON body: `{"error": "..."}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.to_string() })
    }
}

/// The body length a `content-length` header declares (None: none, or not a
/// number, so the body is read as a stream up to the cap), refused past `cap`
/// before any of the body is read.
pub fn declared_length(header: Option<String>, cap: usize) -> Result<Option<u64>, ApiError> {
    match header.and_then(|value| value.parse::<u64>().ok()) {
        Some(length) if length > cap as u64 => Err(ApiError::TooLarge(cap)),
        declared => Ok(declared),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_status_and_a_json_message() {
        let cases = [
            (ApiError::Unauthorized("bad secret"), 401, "bad secret"),
            (ApiError::BadRequest("malformed JSON".into()), 400, "malformed JSON"),
            (ApiError::NotFound, 404, "not found"),
            (ApiError::Refused("already decided".into()), 409, "already decided"),
            (ApiError::Forbidden("cross-site request refused"), 403, "cross-site request refused"),
            (ApiError::TooLarge(1024), 413, "request body over 1024 bytes"),
            (ApiError::ContentTooLarge("SOUL.md is too long".into()), 413, "SOUL.md is too long"),
            (ApiError::TooManyRequests { message: "slow down", retry_after_secs: 7 }, 429, "slow down"),
            (ApiError::Misconfigured("ADMIN_TOKEN is short".into()), 503, "ADMIN_TOKEN is short"),
            (ApiError::Internal, 500, "internal error"),
        ];
        for (error, status, message) in cases {
            assert_eq!(error.status(), status);
            assert_eq!(error.body()["error"], message);
        }
    }

    #[test]
    fn a_declared_length_past_the_cap_is_refused_and_a_missing_or_odd_one_is_none() {
        assert!(matches!(declared_length(Some("11".into()), 10), Err(ApiError::TooLarge(10))));
        assert_eq!(declared_length(Some("10".into()), 10).ok(), Some(Some(10)));
        assert_eq!(declared_length(None, 10).ok(), Some(None));
        assert_eq!(declared_length(Some("ten".into()), 10).ok(), Some(None), "read as a stream, to the cap");
    }
}
