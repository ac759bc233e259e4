//! The one way an edge turns a runtime failure into an answer: logged in
//! full, answered as a bare 500 (the caller learns nothing of the detail).

use crate::api_error::ApiError;
use crate::log_line::LogLine;

use crate::runtime::log::Emit;

/// What an HTTP handler answers: a response, or an API error (a JSON
/// error with its status).
pub type Answer = std::result::Result<worker::Response, ApiError>;

/// Logs a runtime failure and hides its detail from the caller.
pub fn internal(error: impl std::fmt::Display) -> ApiError {
    LogLine::error("internal_error").reason(&error).emit();
    ApiError::Internal
}

/// A runtime failure in a handler is an internal error: `?` logs it (redacted,
/// as every log line is) and answers a bare 500.
impl From<worker::Error> for ApiError {
    fn from(error: worker::Error) -> Self {
        internal(error)
    }
}
