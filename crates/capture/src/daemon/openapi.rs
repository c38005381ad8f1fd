//! `GET /api/v1/openapi.json`, generated from the handlers' annotations and
//! the answer types in [`super::views`].

use super::views::{
    Capabilities, CountersView, FileView, FilesView, InterfaceView, LinkTypeView, LogView,
    SessionView, StatusView,
};
use utoipa::OpenApi;

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "streamgauge capture daemon control API",
        description = "Create, start, pause, resume, stop and delete capture sessions; read their state, counters, log and files. See spec/capture-api.md."
    ),
    paths(
        super::api::capabilities,
        super::api::list,
        super::api::create,
        super::api::one,
        super::api::delete,
        super::api::start,
        super::api::pause,
        super::api::resume,
        super::api::stop,
        super::api::status,
        super::api::log,
        super::api::files,
        super::api::download
    ),
    components(schemas(
        Capabilities,
        InterfaceView,
        LinkTypeView,
        SessionView,
        StatusView,
        CountersView,
        LogView,
        FilesView,
        FileView
    ))
)]
pub struct ApiDoc;

/// The OpenAPI 3.1 document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
