//! Typed errors of queries, and their JSON answers.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::ApiError;
use crate::export::ExportError;

/// Why a query was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// No database for this domain.
    #[error("no domain {domain:?}")]
    UnknownDomain {
        /// What was asked for.
        domain: String,
        /// Domains the caller may read.
        existing: Vec<String>,
    },
    /// No such stream in the domain.
    #[error("no stream {stream:?} in domain {domain:?}")]
    UnknownStream {
        /// The domain.
        domain: String,
        /// What was asked for.
        stream: String,
        /// Streams of the domain.
        existing: Vec<String>,
    },
    /// A parameter names a field the stream does not have.
    #[error("parameter {param}: no field {field:?} in this stream")]
    UnknownField {
        /// The parameter naming it.
        param: &'static str,
        /// What was asked for.
        field: String,
        /// Columns of the stream.
        existing: Vec<String>,
    },
    /// A parameter could not be parsed or is not allowed.
    #[error("parameter {param}: {message}")]
    BadParameter {
        /// Its name.
        param: &'static str,
        /// What is wrong and what is expected.
        message: String,
    },
    /// The query ran out of its time budget and was cancelled.
    #[error("the query ran longer than its budget of {budget:?} and was cancelled")]
    Timeout {
        /// The budget.
        budget: Duration,
    },
    /// The database failed.
    #[error("{0}")]
    Database(ExportError),
}

impl QueryError {
    /// A 400 naming `param`.
    pub fn bad(param: &'static str, message: impl Into<String>) -> QueryError {
        QueryError::BadParameter {
            param,
            message: message.into(),
        }
    }

    /// Classifies a database error (timeouts become [`QueryError::Timeout`]).
    pub fn db(e: ExportError, budget: Option<Duration>) -> QueryError {
        match budget {
            Some(budget) if e.is_timeout() => QueryError::Timeout { budget },
            _ => QueryError::Database(e),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> ApiError {
        let msg = e.to_string();
        match e {
            QueryError::UnknownDomain { existing, .. } => {
                ApiError::not_found("unknown_domain", format!("{msg}: see GET /api/v1/domains"))
                    .with_details(json!({ "domains": existing }))
            }
            QueryError::UnknownStream { existing, .. } => ApiError::not_found(
                "unknown_stream",
                format!("{msg}: pick one of details.streams"),
            )
            .with_details(json!({ "streams": existing })),
            QueryError::UnknownField {
                param, existing, ..
            } => ApiError::not_found(
                "unknown_field",
                format!("{msg}: pick one of details.fields"),
            )
            .with_details(json!({ "parameter": param, "fields": existing })),
            QueryError::BadParameter { param, .. } => ApiError::bad_request("bad_parameter", msg)
                .with_details(json!({ "parameter": param })),
            QueryError::Timeout { budget } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "query_timeout",
                format!("{msg}: narrow the time range, add a limit or use points="),
            )
            .with_details(json!({ "budget_ms": budget.as_millis() as u64 })),
            QueryError::Database(_) => ApiError::internal(format!("database error: {msg}")),
        }
    }
}

impl IntoResponse for QueryError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}
