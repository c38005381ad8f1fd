//! `GET /api/v1/openapi.json`, generated from the handlers' annotations
//! and the answer types.

use utoipa::OpenApi;

use crate::catalog::{
    DomainInfo, DomainSummary, FieldInfo, MetadataEntry, Sender, SenderClock, StreamInfo,
};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "streamgauge query API",
        description = "Discovery, exact row queries, downsampling, live tails and exports of stored measurement streams."
    ),
    paths(
        crate::routes::domains,
        crate::routes::domain,
        crate::routes::streams,
        crate::routes::stream,
        crate::routes::rows,
        crate::routes::tail
    ),
    components(schemas(
        DomainSummary,
        DomainInfo,
        Sender,
        SenderClock,
        MetadataEntry,
        StreamInfo,
        FieldInfo
    ))
)]
pub struct ApiDoc;

/// The OpenAPI 3.1 document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
