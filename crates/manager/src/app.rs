//! The running manager: shared state ([`App`]), first-start bootstrap,
//! the listener, and the monitor task.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt as _;

use crate::auth::ratelimit::LoginLimiter;
use crate::config::ManagerConfig;
use crate::db::users::{self, Role};
use crate::db::{Db, DbError};
use crate::devices::credentials::{Credentials, CredentialsError};

/// State shared by handlers, runs and the monitor.
pub struct App {
    /// The database.
    pub db: Db,
    /// Settings.
    pub config: ManagerConfig,
    /// Device credentials by name.
    pub credentials: Credentials,
    /// Failed logins.
    pub limiter: LoginLimiter,
    /// The threads that hash passwords (a fixed few: parallel logins must not each hold a hash's memory).
    pub hashes: crate::auth::hashpool::HashPool,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .field("credentials", &self.credentials)
            .finish()
    }
}

/// Why the manager could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is unusable.
    #[error("manager configuration: {0}")]
    Config(String),
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The credentials file is unusable.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// Bootstrap, data directory or listener failed.
    #[error("{what}: {reason}")]
    Io {
        /// What was attempted.
        what: String,
        /// Why it failed.
        reason: String,
    },
}

impl App {
    /// Opens the database and the credentials; creates the first admin.
    pub fn open(config: ManagerConfig) -> Result<App, StartError> {
        config.validate().map_err(StartError::Config)?;
        let target = config.db_target();
        if let crate::db::DbTarget::Sqlite(file) = &target {
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| StartError::Io {
                    what: format!("data directory {}", dir.display()),
                    reason: e.to_string(),
                })?;
            }
        }
        let db = Db::connect(&target)?;
        let credentials = match &config.credentials {
            Some(p) => Credentials::load(p)?,
            None => Credentials::default(),
        };
        let app = App {
            db,
            config,
            credentials,
            limiter: LoginLimiter::default(),
            hashes: crate::auth::hashpool::HashPool::new().map_err(|e| StartError::Io {
                what: "password hash threads".into(),
                reason: e.to_string(),
            })?,
        };
        app.bootstrap()?;
        Ok(app)
    }

    /// On an empty database: the user `admin` with the configured
    /// password, or a generated one printed once on standard error.
    fn bootstrap(&self) -> Result<(), StartError> {
        let fail = |e: httpkit::ApiError| StartError::Io {
            what: "first-start admin".into(),
            reason: e.message,
        };
        if self.db.with(users::count).map_err(fail)? > 0 {
            return Ok(());
        }
        let (password, generated) = match &self.config.admin_password {
            Some(p) => (p.clone(), false),
            None => (crate::auth::random_hex(12), true),
        };
        let hash = crate::auth::passwords::hash(&password).map_err(|e| StartError::Io {
            what: "first-start admin".into(),
            reason: e.to_string(),
        })?;
        self.db
            .with(|c| users::create(c, "admin", &hash, Role::Admin))
            .map_err(fail)?;
        crate::audit::record(
            &self.db,
            "manager",
            "user.create",
            "user/admin",
            "first start",
        );
        if generated {
            eprintln!(
                "streamgauge manager: created user 'admin' with password {password} \
                 (shown once; change it with PATCH /api/v1/users/{{id}})"
            );
        }
        Ok(())
    }
}

/// The whole HTTP application: the API under `/api/v1` with the shared
/// guards, and the front end's files for every other path.
pub fn router(app: Arc<App>) -> Router {
    let http = httpkit::HttpConfig {
        // Callers are identified by the manager's own cookie/bearer layer;
        // httpkit's token-file layer must let every peer through.
        access: httpkit::Access {
            authenticator: None,
            public: true,
        },
        allowed_hosts: httpkit::AllowedHosts::new(&app.config.allowed_hosts),
        ..httpkit::HttpConfig::default()
    };
    let api = crate::api::routes()
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            crate::auth::caller::identify,
        ))
        .with_state(app);
    let assets = crate::assets::router();
    // The front end's files come after the shared layers: check their
    // names too (a rebinding page must not be served the UI either).
    let routed = http
        .apply(api)
        .fallback(move |req: Request| front_end(assets.clone(), req));
    http.check_hosts(routed)
}

/// Paths outside the API go to the embedded front end; unknown API paths
/// get the JSON 404.
async fn front_end(assets: Router, req: Request) -> Response {
    if req.uri().path().starts_with("/api/") {
        return httpkit::guard::not_found(req).await.into_response();
    }
    match assets.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// A running manager.
pub struct Manager {
    /// Shared state.
    app: Arc<App>,
    /// The listener's address.
    addr: SocketAddr,
    /// Ends the listener.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The server task.
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The monitor task.
    monitor: Option<crate::monitor::MonitorHandle>,
}

impl Manager {
    /// Opens everything, binds the listener, starts serving and monitoring.
    pub async fn start(mut config: ManagerConfig) -> Result<Manager, StartError> {
        let listen = config.listen;
        let tls = match &config.tls {
            Some((cert, key)) => {
                config.secure_cookies = true;
                Some(
                    httpkit::tls::ServerTls::load(cert, key).map_err(|e| StartError::Io {
                        what: "TLS".into(),
                        reason: e.to_string(),
                    })?,
                )
            }
            None => None,
        };
        let app = tokio::task::spawn_blocking(move || App::open(config))
            .await
            .map_err(|e| StartError::Io {
                what: "opening".into(),
                reason: e.to_string(),
            })??;
        let app = Arc::new(app);
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| StartError::Io {
                what: format!("listening on {listen}"),
                reason: e.to_string(),
            })?;
        let addr = listener.local_addr().map_err(|e| StartError::Io {
            what: "listener address".into(),
            reason: e.to_string(),
        })?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let stop = async {
            let _ = rx.await;
        };
        let app_router = router(Arc::clone(&app));
        let task = match tls {
            Some(tls) => tokio::spawn(httpkit::serve_tls(
                listener,
                app_router,
                httpkit::Budget::default(),
                tls,
                stop,
            )),
            None => tokio::spawn(httpkit::serve(listener, app_router, stop)),
        };
        let monitor = crate::monitor::spawn(Arc::clone(&app));
        tracing::info!(%addr, "manager listening");
        Ok(Manager {
            app,
            addr,
            stop: Some(tx),
            task: Some(task),
            monitor: Some(monitor),
        })
    }

    /// The listener's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The shared state (tests, the CLI's offline subcommands).
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// Stops accepting, lets requests in flight finish (up to 5 s; live
    /// tails are cut), stops the monitor and flushes its stream.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), t).await;
        }
        if let Some(m) = self.monitor.take() {
            m.stop().await;
        }
    }
}
