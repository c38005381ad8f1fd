//! The manager's own database on both backends (SQLite file, PostgreSQL
//! in a throwaway cluster), through a real manager over HTTP: every
//! resource is written and read back (sites, devices with capabilities
//! from a real capture daemon, users, tokens, experiments and members,
//! configurations with edit conflicts, runs and their events, monitoring
//! snapshots, the audit log), constraint violations answer 409 the same
//! way, and a restarted manager keeps its data without migrating again.
//! On PostgreSQL: managers starting together migrate once (advisory
//! lock), values keep their types, and a server that goes away answers
//! 503 until it is back, then the manager connects again.

mod common;

use std::time::Duration;

use capture::daemon::{Daemon, DaemonConfig};
use common::{code, open_db, start_on, wait_for, Api, Backend, ADMIN_PW};
use manager::db::{self, Db, Violation};
use serde_json::json;

crate::on_both_backends!(
    every_resource_round_trips,
    restart_keeps_data_and_migrates_once
);

fn every_resource_round_trips(b: Backend) {
    // A daemon that is never asked to capture (no privileges needed): its
    // capabilities validate configurations.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut dcfg = DaemonConfig::new(&["lo"], dir.path().join("capture"));
    dcfg.listen = "127.0.0.1:0".parse().unwrap();
    dcfg.plain_http = true;
    let token_file = dcfg.effective_token_file();
    let daemon = rt.block_on(Daemon::start(dcfg)).unwrap();
    // The token the daemon created on first start, as the manager's credential `tap`.
    let token = httpkit::token_init::own_token(&token_file)
        .unwrap()
        .unwrap();
    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, format!("tap {token}\n")).unwrap();

    let t = start_on(b, |c| {
        c.monitor_interval = Duration::from_millis(200);
        c.credentials = Some(creds.clone());
    });
    let admin = Api::login(&t.base, "admin", ADMIN_PW);

    // Sites and devices; names are unique.
    let site = admin.ok(
        "/api/v1/sites",
        json!({"name": "lab", "description": "ü ✓"}),
    );
    let (s, v) = admin.post("/api/v1/sites", json!({"name": "lab"}));
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
    let dev = json!({"name": "tap", "kind": "capture", "site": site["id"],
        "hostname": "127.0.0.1", "port": daemon.local_addr().port(), "credential_ref": "tap"});
    let tap = admin.ok("/api/v1/devices", dev.clone())["id"]
        .as_i64()
        .unwrap();
    let (s, v) = admin.post("/api/v1/devices", dev.clone());
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
    let d = admin.ok(&format!("/api/v1/devices/{tap}/refresh"), json!({}));
    assert_eq!(d["capabilities"]["interfaces"][0]["name"], "lo", "{d}");
    assert!(d["last_seen_unix_s"].as_i64().unwrap() > 1_700_000_000);
    let mut edit = dev.clone();
    edit["description"] = json!("east tap");
    edit["version"] = json!(1);
    let (s, v) = admin.put(&format!("/api/v1/devices/{tap}"), edit.clone());
    assert_eq!((s, v["version"].as_i64()), (200, Some(2)), "{v}");
    let (s, v) = admin.put(&format!("/api/v1/devices/{tap}"), edit);
    assert_eq!((s, code(&v)), (409, "edit_conflict"), "{v}");
    assert_eq!(v["error"]["details"]["current"]["description"], "east tap");
    let (_, sites) = admin.get("/api/v1/sites");
    assert_eq!(sites[0]["description"], "ü ✓");
    let (s, _) = admin.delete(&format!("/api/v1/sites/{}", site["id"]));
    assert_eq!(s, 200);
    let (_, d) = admin.get(&format!("/api/v1/devices/{tap}"));
    assert_eq!(d["site"], json!(null), "ON DELETE SET NULL");

    // Users and tokens.
    for u in ["alice", "bob"] {
        admin.ok(
            "/api/v1/users",
            json!({"username": u, "password": format!("{u}-password")}),
        );
    }
    let (s, v) = admin.post(
        "/api/v1/users",
        json!({"username": "alice", "password": "another-password"}),
    );
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
    let alice = Api::login(&t.base, "alice", "alice-password");
    let tok = alice.ok("/api/v1/tokens", json!({"name": "script"}));
    let script = Api::with_token(&t.base, tok["secret"].as_str().unwrap());
    let (s, mine) = script.get("/api/v1/tokens");
    assert_eq!(s, 200);
    assert_eq!(mine[0]["user"], "alice");
    assert!(mine[0]["last_used_unix_s"].as_i64().is_some(), "{mine}");
    let (s, all) = admin.get("/api/v1/tokens");
    assert_eq!(
        (s, all.as_array().unwrap().len()),
        (200, 1),
        "admin sees all"
    );

    // Experiments with members; configurations with edit conflicts.
    let e = script.ok(
        "/api/v1/experiments",
        json!({"name": "store test", "description": "naïve — 東京"}),
    );
    let eid = e["id"].as_i64().unwrap();
    let (s, v) = alice.post("/api/v1/experiments", json!({"name": "store test"}));
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
    for _ in 0..2 {
        // Adding a member twice is no error (ON CONFLICT DO NOTHING).
        alice.ok(
            &format!("/api/v1/experiments/{eid}/members"),
            json!({"username": "bob"}),
        );
    }
    let (_, e) = alice.get(&format!("/api/v1/experiments/{eid}"));
    assert_eq!(
        (e["members"].clone(), e["description"].clone()),
        (json!(["bob"]), json!("naïve — 東京"))
    );
    let (_, bobs) = Api::login(&t.base, "bob", "bob-password").get("/api/v1/experiments");
    assert_eq!(bobs.as_array().unwrap().len(), 1, "members see it: {bobs}");
    let configs = format!("/api/v1/experiments/{eid}/configs");
    let cfg = json!({"name": "east", "device": tap, "session": {"interface": "lo", "snaplen": 128},
        "metadata": {"purpose": "test", "n": 1.5}});
    let cid = alice.ok(&configs, cfg.clone())["id"].as_i64().unwrap();
    let (s, v) = alice.post(&configs, cfg.clone());
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
    let mut c2 = cfg.clone();
    c2["version"] = json!(1);
    c2["metadata"] = json!({"purpose": "edited"});
    let (s, v) = alice.put(&format!("/api/v1/configs/{cid}"), c2.clone());
    assert_eq!((s, v["version"].as_i64()), (200, Some(2)), "{v}");
    let (s, v) = alice.put(&format!("/api/v1/configs/{cid}"), c2);
    assert_eq!((s, code(&v)), (409, "edit_conflict"), "{v}");
    alice.ok(
        &format!("/api/v1/configs/{cid}/copy"),
        json!({"name": "east-2"}),
    );
    let (_, list) = alice.get(&configs);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["east", "east-2"]);

    // Runs (created only: nothing runs on the daemon) and their events.
    let run = alice.ok(
        &format!("/api/v1/experiments/{eid}/runs"),
        json!({"config": cid}),
    );
    let rid = run["id"].as_i64().unwrap();
    assert_eq!(
        (run["state"].as_str(), run["devices"][0]["state"].as_str()),
        (Some("created"), Some("created"))
    );
    let (_, log) = alice.get(&format!("/api/v1/runs/{rid}/log"));
    assert!(
        log["events"][0]["time_unix_s"].as_f64().unwrap() > 1.7e9,
        "{log}"
    );
    assert!(
        log["events"][0]["message"]
            .as_str()
            .unwrap()
            .contains("version 2"),
        "{log}"
    );

    // Deleting what is still in use is refused the same way.
    let (s, v) = alice.delete(&format!("/api/v1/configs/{cid}"));
    assert_eq!((s, code(&v)), (409, "conflict"), "a run uses it: {v}");
    let (s, v) = admin.delete(&format!("/api/v1/devices/{tap}"));
    assert_eq!(
        (s, code(&v)),
        (409, "conflict"),
        "configurations use it: {v}"
    );
    let alice_id = alice.get("/api/v1/session").1["user"]["id"]
        .as_i64()
        .unwrap();
    let (s, v) = admin.delete(&format!("/api/v1/users/{alice_id}"));
    assert_eq!(
        (s, code(&v)),
        (409, "conflict"),
        "she owns an experiment: {v}"
    );

    // Monitoring snapshots.
    wait_for("snapshots", || {
        let (_, v) = alice.get(&format!("/api/v1/devices/{tap}/snapshots?since=0"));
        v.as_array().is_some_and(|a| a.len() >= 2)
    });
    let (_, snaps) = alice.get(&format!("/api/v1/devices/{tap}/snapshots?since=0"));
    let last = &snaps.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["status"], "up");
    assert!(last["latency_ms"].as_f64().unwrap() > 0.0, "{last}");
    assert!(last["data"]["sessions"].is_array(), "{last}");
    assert_eq!(alice.get("/api/v1/alerts").1, json!([]));

    // Deleting the experiment takes its configurations and runs along.
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{eid}"));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["stopped_runs"], json!([]), "nothing ran: {v}");
    assert_eq!(alice.get(&format!("/api/v1/runs/{rid}")).0, 404);
    assert_eq!(alice.get(&format!("/api/v1/configs/{cid}")).0, 404);
    let (s, _) = admin.delete(&format!("/api/v1/users/{alice_id}"));
    assert_eq!(s, 200, "no longer an owner");
    let (s, _) = admin.delete(&format!("/api/v1/devices/{tap}"));
    assert_eq!(s, 200, "no longer used");
    assert_eq!(
        script.get("/api/v1/experiments").0,
        401,
        "her token went with her"
    );

    // The audit log, newest first.
    let (_, log) = admin.get("/api/v1/audit?limit=100");
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions[..3],
        ["device.delete", "user.delete", "experiment.delete"],
        "{actions:?}"
    );
    for a in [
        "site.create",
        "device.update",
        "config.update",
        "config.copy",
        "run.create",
        "token.create",
    ] {
        assert!(actions.contains(&a), "{a} in {actions:?}");
    }
    let ids: Vec<i64> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    drop(t);
    rt.block_on(daemon.shutdown());
}

fn restart_keeps_data_and_migrates_once(b: Backend) {
    let t = start_on(b, |_| {});
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    admin.ok(
        "/api/v1/users",
        json!({"username": "carol", "password": "carol-password"}),
    );
    let carol = Api::login(&t.base, "carol", "carol-password");
    let e = carol.ok("/api/v1/experiments", json!({"name": "kept"}));
    let migrations = |t: &common::TestManager| open_db(t).run(db::migrations::applied).unwrap();
    let before = migrations(&t);
    assert_eq!(before.len(), db::migrations::MIGRATIONS.len());
    assert_eq!(before.last().unwrap().0, db::migrations::latest());
    // A new second, so a re-applied migration would show.
    std::thread::sleep(Duration::from_millis(1100));
    let t = t.restart(|c| c.admin_password = Some("not-used-again".into()));
    assert_eq!(migrations(&t), before, "nothing migrated again");
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let (_, users) = admin.get("/api/v1/users");
    assert_eq!(
        users.as_array().unwrap().len(),
        2,
        "no second bootstrap: {users}"
    );
    let carol = Api::login(&t.base, "carol", "carol-password");
    let (s, v) = carol.get(&format!("/api/v1/experiments/{}", e["id"]));
    assert_eq!((s, v["name"].as_str()), (200, Some("kept")), "{v}");
    let (_, log) = admin.get("/api/v1/audit?limit=100");
    assert!(log.to_string().contains("experiment.create"), "{log}");
    // The first run's cookie is still a session in the database.
    assert_eq!(admin.get("/api/v1/session").0, 200);
}

#[test]
fn postgres_managers_starting_together_migrate_once() {
    let target = common::new_pg_database();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let t = target.clone();
            std::thread::spawn(move || Db::connect(&t).map(|_| ()).map_err(|e| e.to_string()))
        })
        .collect();
    for th in threads {
        th.join().unwrap().unwrap();
    }
    let db = Db::connect(&target).unwrap();
    let applied = db.run(db::migrations::applied).unwrap();
    assert_eq!(
        applied.len(),
        db::migrations::MIGRATIONS.len(),
        "{applied:?}"
    );
}

#[test]
fn postgres_values_keep_their_types_and_errors_map_like_sqlite() {
    let pg = Db::connect(&common::new_pg_database()).unwrap();
    let lite = Db::memory().unwrap();
    for db in [&pg, &lite] {
        let (id, row) = db
            .run(|c| {
                let id = c.insert(
                    "INSERT INTO devices (name, kind, hostname, port, capabilities, last_seen_unix_s)
                     VALUES (?1, 'capture', ?2, ?3, ?4, ?5) RETURNING id",
                    ("ü", "::1", 65535u16, None::<String>, i64::MAX),
                )?;
                let row = c.query_row(
                    "SELECT name, port, capabilities, last_seen_unix_s, version FROM devices WHERE id = ?1",
                    [id],
                    |r| {
                        Ok((
                            r.get::<String>(0)?,
                            r.get::<u16>(1)?,
                            r.get::<Option<String>>(2)?,
                            r.get::<i64>(3)?,
                            r.get::<i64>(4)?,
                        ))
                    },
                )?;
                Ok((id, row))
            })
            .unwrap();
        assert_eq!(row, ("ü".into(), 65535, None, i64::MAX, 1), "{db:?}");
        // Booleans and floating times of a run.
        let (flag, time) = db
            .run(|c| {
                let u = manager::db::users::create(c, "x", "h", manager::db::users::Role::User)?;
                let e = manager::db::experiments::create(c, "e", "e", u.id, None, "")?;
                let cfg = c.insert(
                    "INSERT INTO configs (experiment, name, device, storage, session, metadata)
                     VALUES (?1, 'c', ?2, '{}', '{}', '{}') RETURNING id",
                    (e, id),
                )?;
                let run = manager::db::runs::create(c, e, cfg, &[id], |r| format!("s{r}"))?;
                manager::db::runs::set_device(c, run, id, "running", None, true)?;
                manager::db::runs::event(c, run, "x")?;
                let r = manager::db::runs::get(c, run)?.unwrap();
                let ev = manager::db::runs::events(c, run)?;
                assert_eq!(manager::db::runs::live_sessions(c, e)?, [(run, id)]);
                Ok((r.devices[0].created_on_device, ev[0].time_unix_s))
            })
            .unwrap();
        assert!(flag);
        assert!(time > 1.7e9, "{time}");
        // The same violations, mapped the same way.
        let dup = db
            .run(|c| c.execute("INSERT INTO sites (name) VALUES ('a'), ('a')", ()))
            .unwrap_err();
        assert!(
            matches!(dup.violation(), Some(Violation::Unique(_))),
            "{dup}"
        );
        let fk = db
            .run(|c| c.execute("DELETE FROM devices WHERE id = ?1", [id]))
            .unwrap_err();
        assert!(matches!(fk.violation(), Some(Violation::Other(_))), "{fk}");
        assert_eq!(db::api_error(fk).status, 409);
        let check = db
            .run(|c| {
                c.execute(
                    "INSERT INTO users (username, password_hash, role, created_unix_s)
                     VALUES ('y', 'h', 'root', 0)",
                    (),
                )
            })
            .unwrap_err();
        assert_eq!(db::api_error(check).code, "conflict");
        // A failed transaction leaves nothing behind.
        let r = db.tx(|c| {
            c.execute("INSERT INTO sites (name) VALUES ('tx')", ())?;
            c.execute("INSERT INTO sites (name) VALUES ('tx')", ())
        });
        assert_eq!(r.unwrap_err().status, 409);
        let n: i64 = db
            .run(|c| c.query_one("SELECT count(*) FROM sites WHERE name = 'tx'", ()))
            .unwrap();
        assert_eq!(n, 0, "{db:?}");
    }
    // An integer that does not fit the column is an error, never truncated.
    let e = pg
        .run(|c| c.execute("UPDATE devices SET port = ?1", [1i64 << 40]))
        .unwrap_err();
    assert!(e.to_string().contains("int4"), "{e}");
}

#[test]
fn postgres_outage_answers_503_then_reconnects() {
    // A cluster of its own: stopping the shared one would fail the others.
    let cluster = pgtemp::Cluster::start().unwrap();
    cluster.psql("postgres", "CREATE DATABASE outage OWNER oml");
    let url = format!("postgres://oml@127.0.0.1:{}/outage", cluster.port);
    let t = common::start_with(
        tempfile::tempdir().unwrap(),
        manager::db::DbTarget::parse(&url).unwrap(),
        |c| c.monitor_interval = Duration::from_secs(3600),
    );
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    admin.ok("/api/v1/experiments", json!({"name": "before"}));
    cluster.stop("fast").unwrap();
    let (s, v) = admin.get("/api/v1/experiments");
    assert_eq!((s, code(&v)), (503, "database_unavailable"), "{v}");
    assert!(!v.to_string().contains("password"), "{v}");
    cluster.restart().unwrap();
    let (s, v) = admin.get("/api/v1/experiments");
    assert_eq!(s, 200, "connected again: {v}");
    assert_eq!(v[0]["name"], "before");
}
