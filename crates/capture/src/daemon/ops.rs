//! Session operations behind the control API: create, start, pause,
//! resume, stop, delete. Each checks the state machine and the node's
//! limits and returns a typed error the API maps to a status and code.

use super::registry::{Record, State};
use super::worker::{self, Command};
use super::Shared;
use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::policy::PolicyRefusal;
use crate::session::{FlowSink, Session, SessionEnv};
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// Why an operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// No session with that id (or not one the caller may see).
    #[error("no session {0:?}: list yours with GET /api/v1/sessions")]
    NotFound(String),
    /// The node's policy refuses the request.
    #[error(transparent)]
    Policy(#[from] PolicyRefusal),
    /// The request is invalid.
    #[error("{0}")]
    Invalid(String),
    /// The session exists already, or is in the wrong state.
    #[error("{0}")]
    Conflict(String),
    /// The node cannot take more sessions, or the interface cannot be opened.
    #[error("{0}")]
    Unavailable(String),
}

/// The interface a session captures on (validated at create).
fn interface_of(cfg: &SessionConfig) -> String {
    cfg.interface.clone().unwrap_or_default()
}

impl Shared {
    /// Accepts a new session in state `created`.
    pub fn create(
        &self,
        experiment: &str,
        cfg: SessionConfig,
        archive: Vec<String>,
    ) -> Result<(), OpError> {
        if !omsp::names::is_valid_domain(experiment) {
            return Err(OpError::Invalid(format!(
                "experiment {experiment:?} is not a valid domain name (1-63 of [A-Za-z0-9_.-])"
            )));
        }
        let mut cfg = cfg;
        if cfg.interface.is_none() && self.config.interfaces.len() == 1 {
            // One tapped interface: a request may leave it out.
            cfg.interface = Some(self.config.interfaces[0].clone());
        }
        self.policy.check(&cfg)?;
        let iface = interface_of(&cfg);
        if !self.config.interfaces.contains(&iface) {
            return Err(OpError::Invalid(format!(
                "interface {iface:?} is not tapped by this node (see GET /api/v1/capabilities)"
            )));
        }
        if let Some(a) = &cfg.anonymization {
            if !self.keys.contains_key(&a.key) {
                return Err(OpError::Invalid(format!(
                    "anonymisation key {:?} is not configured on this node (known: {:?})",
                    a.key,
                    self.keys.keys().collect::<Vec<_>>()
                )));
            }
        }
        if !archive.is_empty() {
            let known: Vec<String> = self
                .config
                .archive
                .as_ref()
                .map(|a| a.targets.keys().cloned().collect())
                .unwrap_or_default();
            if let Some(t) = archive.iter().find(|t| !known.contains(t)) {
                return Err(OpError::Invalid(format!(
                    "archive target {t:?} is not configured on this node (known: {known:?})"
                )));
            }
        }
        let mut reg = self.lock();
        if reg.sessions.contains_key(&cfg.name) {
            return Err(OpError::Conflict(format!(
                "a session named {:?} exists on this node: choose another name",
                cfg.name
            )));
        }
        if reg.sessions.len() >= self.config.max_sessions {
            return Err(OpError::Unavailable(format!(
                "this node keeps at most {} sessions: delete finished ones",
                self.config.max_sessions
            )));
        }
        let id = cfg.name.clone();
        let mut record = Record::new(experiment.to_string(), cfg);
        record.archive = archive.clone();
        if let Some(link) = &self.archive {
            let mut routes = link.routes.lock().unwrap_or_else(|e| e.into_inner());
            if archive.is_empty() {
                routes.remove(&id);
            } else {
                let route = super::archive::Route {
                    experiment: experiment.to_string(),
                    targets: archive,
                    enqueued: 0,
                };
                routes.insert(id.clone(), route);
            }
        }
        reg.sessions.insert(id.clone(), record);
        reg.save(&id);
        Ok(())
    }

    /// Builds the live session and hands it to its interface's source thread.
    pub fn start(self: &std::sync::Arc<Self>, id: &str) -> Result<(), OpError> {
        let (cfg, experiment) = {
            let reg = self.lock();
            let r = reg
                .sessions
                .get(id)
                .ok_or_else(|| OpError::NotFound(id.into()))?;
            if r.state != State::Created {
                return Err(OpError::Conflict(format!(
                    "session {id} is {:?}: only a created session can start (create a new one to capture again)",
                    r.state
                )));
            }
            (r.config.clone(), r.experiment.clone())
        };
        let iface = interface_of(&cfg);
        let env = SessionEnv {
            data_dir: self.config.data_dir.clone(),
            source: iface.clone(),
            key: cfg
                .anonymization
                .as_ref()
                .and_then(|a| self.keys.get(&a.key).cloned()),
            closed: self.archive.as_ref().and_then(|a| {
                let routed = a
                    .routes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains_key(id);
                if routed {
                    a.sender()
                } else {
                    None
                }
            }),
            flows: self.streams.as_ref().map(|st| {
                let (st, iface) = (std::sync::Arc::clone(st), iface.clone());
                FlowSink::new(move |b| st.send_flows(&experiment, &iface, b))
            }),
        };
        // The interface's source thread first: its link type decides how
        // the session compiles its filter, parses frames and writes files.
        let link = {
            let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            if workers
                .get(&iface)
                .is_some_and(|w| !w.alive.load(Ordering::Acquire))
            {
                if let Some(mut dead) = workers.remove(&iface) {
                    if let Some(t) = dead.thread.take() {
                        let _ = t.join();
                    }
                }
            }
            if !workers.contains_key(&iface) {
                let w = worker::spawn(&iface, std::sync::Arc::clone(self))
                    .map_err(|e| OpError::Unavailable(format!("interface {iface}: {e}")))?;
                workers.insert(iface.clone(), w);
            }
            workers[&iface].link
        };
        // Known from now on, also when the session cannot be built for it.
        if let Some(r) = self.lock().sessions.get_mut(id) {
            r.link = Some(link);
        }
        let mut session =
            Session::new_for(cfg, &env, link).map_err(|e| self.fail(id, e.to_string()))?;
        // Flows of a run ended by a crash come back; from now on a checkpoint per tick.
        let flows_path = super::persist::flows_path(&self.config.data_dir, id);
        match session.keep_flow_checkpoint(flows_path) {
            Ok(0) => {}
            Ok(n) => self.note(
                id,
                format!("{n} active flows restored from the flow checkpoint"),
            ),
            Err(e) => self.note(id, format!("{e}; flows are not checkpointed")),
        }
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(w) = workers.get(&iface).filter(|w| w.link == link) else {
            return Err(self.fail(id, format!("the source thread of {iface} ended")));
        };
        // Running before the thread sees it, so its first counters land on a running record.
        self.set(id, State::Running, None);
        let (ack, added) = oneshot::channel();
        if w.tx.send(Command::Add(Box::new(session), ack)).is_err() {
            return Err(self.fail(id, format!("the source thread of {iface} ended")));
        }
        drop(workers);
        // Answer once the thread has it: a packet sent after the answer is seen.
        if added.blocking_recv().is_err() {
            return Err(self.fail(id, format!("the source thread of {iface} ended")));
        }
        Ok(())
    }

    /// Adds a line to a session's log.
    fn note(&self, id: &str, line: String) {
        tracing::info!(session = %id, "{line}");
        if let Some(r) = self.lock().sessions.get_mut(id) {
            r.log(line);
        }
    }

    /// Marks a session failed and returns the error to answer.
    fn fail(&self, id: &str, why: String) -> OpError {
        self.set(id, State::Failed, Some(why.clone()));
        OpError::Unavailable(format!("session {id} could not start: {why}"))
    }

    /// Pauses (`pause = true`) or resumes a running session.
    pub async fn pause(&self, id: &str, pause: bool) -> Result<(), OpError> {
        let (from, to) = if pause {
            (State::Running, State::Paused)
        } else {
            (State::Paused, State::Running)
        };
        let iface = {
            let mut reg = self.lock();
            let r = reg
                .sessions
                .get_mut(id)
                .ok_or_else(|| OpError::NotFound(id.into()))?;
            if r.state != from {
                return Err(OpError::Conflict(format!(
                    "session {id} is {:?}, not {from:?}",
                    r.state
                )));
            }
            r.set_state(to, None);
            let iface = interface_of(&r.config);
            reg.save(id);
            iface
        };
        let (ack, done) = oneshot::channel();
        let cmd = if pause {
            Command::Pause(id.into(), ack)
        } else {
            Command::Resume(id.into(), ack)
        };
        let sent = {
            let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            workers.get(&iface).is_some_and(|w| w.tx.send(cmd).is_ok())
        };
        if sent {
            // Answer once the source thread applied it (a thread that ended recorded why).
            let _ = done.await;
        }
        Ok(())
    }

    /// Stops a running or paused session: files closed with their metadata.
    pub async fn stop(&self, id: &str) -> Result<Counters, OpError> {
        let iface = {
            let reg = self.lock();
            let r = reg
                .sessions
                .get(id)
                .ok_or_else(|| OpError::NotFound(id.into()))?;
            match r.state {
                State::Running | State::Paused => interface_of(&r.config),
                State::Created => {
                    drop(reg);
                    self.set(id, State::Stopped, None);
                    return Ok(Counters::default());
                }
                _ => return Ok(r.counters),
            }
        };
        let (tx, rx) = oneshot::channel();
        let sent = {
            let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            workers.get(&iface).is_some_and(|w| {
                w.tx.send(Command::Stop {
                    id: id.into(),
                    reply: tx,
                })
                .is_ok()
            })
        };
        let result = if sent { rx.await.ok() } else { None };
        let mut reg = self.lock();
        let r = reg
            .sessions
            .get_mut(id)
            .ok_or_else(|| OpError::NotFound(id.into()))?;
        match result {
            Some(Ok(c)) => {
                r.counters = c;
                r.set_state(State::Stopped, None);
            }
            Some(Err(e)) => r.set_state(State::Failed, Some(format!("stop: {e}"))),
            // The source thread ended on its own and recorded why.
            None => {}
        }
        let c = r.counters;
        reg.save(id);
        Ok(c)
    }

    /// Moves a session to `state` and saves it.
    fn set(&self, id: &str, state: State, reason: Option<String>) {
        let mut reg = self.lock();
        if let Some(r) = reg.sessions.get_mut(id) {
            r.set_state(state, reason);
            reg.save(id);
        }
    }

    /// Stops (if needed) and forgets a session; its files stay on disk.
    pub async fn delete(&self, id: &str) -> Result<(), OpError> {
        self.stop(id).await?;
        let mut reg = self.lock();
        reg.sessions.remove(id);
        reg.save(id);
        Ok(())
    }
}
