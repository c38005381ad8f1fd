//! What a user who is not an admin sees of shared devices: a device is
//! shared, the sessions on it are not. Snapshots keep only the caller's
//! experiments' sessions, capabilities count only theirs, and `dropping`
//! alerts lose the other sessions' details.

use std::collections::HashSet;

use httpkit::ApiResult;
use serde_json::Value;

use crate::app::App;
use crate::auth::caller::Me;
use crate::db::devices::Device;
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
/// is the caller's live sessions only.
pub fn device(app: &App, me: &Me, mut d: Device) -> ApiResult<Device> {
    if let Some(mine) = sessions(app, me, d.id)? {
        if let Some(caps) = d.capabilities.as_object_mut() {
            if caps.contains_key("sessions") {
                let live = mine.iter().filter(|(_, live)| *live).count();
                caps.insert("sessions".into(), Value::from(live));
            }
        }
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
