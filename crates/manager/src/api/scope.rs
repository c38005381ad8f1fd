//! What a user who is not an admin sees of shared devices: a device is
//! shared, the sessions and domains on it are not. Snapshots keep only the
//! caller's experiments' sessions, capabilities count only theirs, a
//! collector's capabilities list only their domains, an in-line agent's
//! hide the domain it writes when another experiment holds it, and
//! `dropping` alerts lose the other sessions' details.

use std::collections::HashSet;

use httpkit::ApiResult;
use serde_json::Value;

use crate::app::App;
use crate::auth::caller::Me;
use crate::db::devices::{Device, Kind};
use crate::db::experiments;
use crate::db::monitor::{Alert, Snapshot};
use crate::db::runs;

/// The caller's sessions on `device` (name → may be live); `None` for
/// an admin, who sees everything.
fn sessions(app: &App, me: &Me, device: i64) -> ApiResult<Option<Vec<(String, bool)>>> {
    if me.is_admin() {
        return Ok(None);
    }
    Ok(Some(
        app.db
            .with(|c| runs::sessions_of_user(c, device, me.user.id))?,
    ))
}

/// Keeps in `data.sessions` only the sessions named in `mine`.
fn keep_sessions(data: &mut Value, mine: &HashSet<&str>) {
    if let Some(list) = data.get_mut("sessions").and_then(Value::as_array_mut) {
        list.retain(|s| s["id"].as_str().is_some_and(|id| mine.contains(id)));
    }
}

/// A device's snapshots as the caller may see them.
pub fn snapshots(
    app: &App,
    me: &Me,
    device: i64,
    mut all: Vec<Snapshot>,
) -> ApiResult<Vec<Snapshot>> {
    if let Some(mine) = sessions(app, me, device)? {
        let mine: HashSet<&str> = mine.iter().map(|(s, _)| s.as_str()).collect();
        for s in &mut all {
            keep_sessions(&mut s.data, &mine);
        }
    }
    Ok(all)
}

/// A device as the caller may see it: the capabilities' session count
/// is the caller's live sessions only; a collector lists only the domains
/// of the caller's experiments on it (its `/api/v1/domains` names every
/// tenant's); an in-line agent's `domain` and `streams` are hidden when
/// an experiment the caller is not in holds that domain.
pub fn device(app: &App, me: &Me, mut d: Device) -> ApiResult<Device> {
    let Some(mine) = sessions(app, me, d.id)? else {
        return Ok(d);
    };
    let Some(caps) = d.capabilities.as_object_mut() else {
        return Ok(d);
    };
    if caps.contains_key("sessions") {
        let live = mine.iter().filter(|(_, live)| *live).count();
        caps.insert("sessions".into(), Value::from(live));
    }
    match d.kind {
        Kind::Collector => {
            let own = app.db.with(|c| experiments::list(c, Some(me.user.id)))?;
            let own: HashSet<&str> = own
                .iter()
                .filter(|e| e.collector == Some(d.id))
                .map(|e| e.domain.as_str())
                .collect();
            if let Some(list) = caps.get_mut("domains").and_then(Value::as_array_mut) {
                list.retain(|x| x["name"].as_str().is_some_and(|n| own.contains(n)));
            }
        }
        Kind::Inline => {
            let domain = caps
                .get("domain")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(domain) = domain {
                let all = app.db.with(|c| experiments::list(c, None))?;
                let own = app.db.with(|c| experiments::list(c, Some(me.user.id)))?;
                let theirs = all.iter().any(|e| e.domain == domain)
                    && !own.iter().any(|e| e.domain == domain);
                if theirs {
                    caps.insert("domain".into(), Value::Null);
                    caps.insert("streams".into(), Value::Array(Vec::new()));
                }
            }
        }
        Kind::Capture => {}
    }
    Ok(d)
}

/// Alerts as the caller may see them: a `dropping` alert names the
/// sessions that drop, which may be anyone's; others see only that the
/// device drops.
pub fn alerts(me: &Me, mut all: Vec<Alert>) -> Vec<Alert> {
    if !me.is_admin() {
        for a in all.iter_mut().filter(|a| a.kind == "dropping") {
            if let Some((head, _)) = a.message.split_once(": ") {
                a.message = format!("{head} (the sessions are named to admins)");
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_sessions_are_removed() {
        let mut data = serde_json::json!({"sessions": [
            {"id": "mine-a-1", "experiment": "mine"},
            {"id": "theirs-b-2", "experiment": "theirs"},
            {"experiment": "no id"}]});
        keep_sessions(&mut data, &HashSet::from(["mine-a-1"]));
        assert_eq!(data["sessions"].as_array().unwrap().len(), 1);
        assert!(!data.to_string().contains("theirs"));
    }
}
