//! JSON errors with stable codes.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// An error answered to an HTTP client.
///
/// The body is `{"error": {"status": 404, "code": "unknown_stream",
/// "message": "...", "details": {...}}}`. `code` is stable snake_case that
/// scripts may match on; `message` is for people and says what to do;
/// `details` carries structured help (for example the list of streams that
/// do exist).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: String,
    /// What went wrong and what to do about it.
    pub message: String,
    /// Structured help, if any (boxed: keeps `Result<T, ApiError>` small).
    pub details: Option<Box<serde_json::Value>>,
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_owned(),
            message: message.into(),
            details: None,
        }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: serde_json::Value) -> ApiError {
        self.details = Some(Box::new(details));
        self
    }

    /// 400: a parameter or body is malformed (`code` names what).
    pub fn bad_request(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404: the named thing does not exist.
    pub fn not_found(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 401: no valid credentials.
    pub fn unauthorized(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, code, message)
    }

    /// 403: valid credentials that do not allow this.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 500: our fault.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// 503: try again later (`code` says why).
    pub fn unavailable(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut error = serde_json::json!({
            "status": self.status.as_u16(),
            "code": self.code,
            "message": self.message,
        });
        if let Some(d) = &self.details {
            error["details"] = (**d).clone();
        }
        serde_json::json!({ "error": error })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut text = self.body().to_string();
        text.push('\n');
        let mut response = (self.status, text).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_status_code_message_details() {
        let e = ApiError::not_found("unknown_stream", "no stream x; see details")
            .with_details(serde_json::json!({"streams": ["a", "b"]}));
        let b = e.body();
        assert_eq!(b["error"]["status"], 404);
        assert_eq!(b["error"]["code"], "unknown_stream");
        assert_eq!(b["error"]["details"]["streams"][1], "b");
    }
}
