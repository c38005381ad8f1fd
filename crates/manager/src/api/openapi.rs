//! `GET /api/v1/openapi.json`, generated from the handlers' annotations
//! and the request/answer types they use (so the two cannot drift).

use axum::Json;
use utoipa::OpenApi;

use crate::auth::tokens::TokenInfo;
use crate::db::audit::AuditEntry;
use crate::db::configs::{Config, ConfigInput, Storage};
use crate::db::devices::{Device, DeviceInput, Kind, Site};
use crate::db::experiments::Experiment;
use crate::db::monitor::{Alert, Snapshot};
use crate::db::runs::{Run, RunDevice, RunEvent};
use crate::db::users::{Role, User};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "streamgauge manager API",
        description = "Users, API tokens, devices, experiments, capture configurations, runs, live data and monitoring. See spec/manager-api.md."
    ),
    paths(
        super::session::login,
        super::session::logout,
        super::session::current,
        super::users::list,
        super::users::create,
        super::users::patch,
        super::users::remove,
        super::users::tokens,
        super::users::create_token,
        super::users::revoke_token,
        super::devices::sites,
        super::devices::create_site,
        super::devices::delete_site,
        super::devices::list,
        super::devices::one,
        super::devices::create,
        super::devices::certificate,
        super::devices::update,
        super::devices::remove,
        super::devices::refresh,
        super::devices::snapshots,
        super::devices::alerts,
        super::experiments::list,
        super::experiments::create,
        super::experiments::one,
        super::experiments::update,
        super::experiments::remove,
        super::experiments::add_member,
        super::experiments::remove_member,
        super::configs::list,
        super::configs::create,
        super::configs::one,
        super::configs::update,
        super::configs::remove,
        super::configs::copy,
        super::runs::list,
        super::runs::create,
        super::runs::one,
        super::runs::start,
        super::runs::pause,
        super::runs::resume,
        super::runs::stop,
        super::runs::status,
        super::runevents::events,
        super::runs::log,
        super::runs::files,
        super::data::download,
        super::data::streams,
        super::dashboards::list,
        super::dashboards::put,
        super::dashboards::remove,
        super::data::query,
        super::admin::audit
    ),
    components(schemas(
        super::devices::CertificateQuery,
        super::devices::PresentedCertificate,
        User,
        Role,
        super::session::LoginRequest,
        super::session::SessionInfo,
        super::users::NewUser,
        super::users::UserPatch,
        super::users::NewToken,
        super::users::CreatedToken,
        TokenInfo,
        Site,
        Device,
        DeviceInput,
        Kind,
        Snapshot,
        Alert,
        Experiment,
        super::experiments::ExperimentInput,
        super::experiments::NewMember,
        Config,
        ConfigInput,
        Storage,
        super::configs::CopyRequest,
        Run,
        RunDevice,
        RunEvent,
        super::runs::NewRun,
        super::runs::RunStatus,
        super::runs::RunLog,
        super::runs::RunFile,
        super::runevents::PlotEvent,
        crate::db::dashboards::Dashboard,
        super::dashboards::DashboardInput,
        super::runevents::DeviceState,
        super::runevents::RunEvents,
        AuditEntry
    ))
)]
pub struct ApiDoc;

/// The OpenAPI 3.1 document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// Serves the document.
pub async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
