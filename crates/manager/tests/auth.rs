//! Authentication and authorisation through a real manager over HTTP:
//! login and logout, CSRF, API tokens, wrong passwords and the login rate
//! limit, expired sessions, per-experiment visibility (404 for
//! non-members), admin-only endpoints (403), and the audit log.

mod common;

use std::time::Duration;

use common::{code, open_db, start_on, Api, Backend, ADMIN_PW};
use serde_json::json;

crate::on_both_backends!(
    login_csrf_tokens_logout_and_rate_limit,
    expired_session_is_told_apart,
    experiments_are_private_to_members_and_admin_pages_to_admins,
);

fn login_csrf_tokens_logout_and_rate_limit(b: Backend) {
    let t = start_on(b, |_| {});
    let anon = Api::new(&t.base);
    let (s, v) = anon.get("/api/v1/experiments");
    assert_eq!((s, code(&v)), (401, "unauthenticated"));

    let mut a = Api::new(&t.base);
    let (s, v) = a.try_login("admin", "wrong password");
    assert_eq!((s, code(&v)), (401, "invalid_credentials"));
    let (s, v) = a.try_login("nobody", "wrong password");
    assert_eq!(
        (s, code(&v)),
        (401, "invalid_credentials"),
        "same answer for an unknown user"
    );

    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let (s, v) = admin.get("/api/v1/session");
    assert_eq!(s, 200);
    assert_eq!(v["user"]["role"], "admin");
    assert_eq!(
        v["csrf_token"].as_str(),
        admin.csrf.as_deref(),
        "a reloaded page gets its token back"
    );

    // CSRF: the cookie alone does not change state.
    let body = json!({"name": "e1"});
    let (s, v) = admin.send_with(
        "POST",
        "/api/v1/experiments",
        &body,
        false,
        "application/json",
    );
    assert_eq!((s, code(&v)), (403, "csrf_failed"));
    let mut wrong = admin.clone();
    wrong.csrf = Some("0".repeat(64));
    let (s, v) = wrong.post("/api/v1/experiments", body.clone());
    assert_eq!((s, code(&v)), (403, "csrf_failed"));
    let (s, v) = admin.send_with("POST", "/api/v1/experiments", &body, true, "text/plain");
    assert_eq!((s, code(&v)), (415, "json_required"));
    let (s, v) = admin.post("/api/v1/experiments", body);
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["domain"], "e1");
    let (s, v) = admin.send_with(
        "POST",
        "/api/v1/experiments",
        &json!({"nme": 1}),
        true,
        "application/json",
    );
    assert_eq!((s, code(&v)), (422, "invalid_body"), "{v}");

    // API tokens: the secret once, then bearer calls without CSRF.
    let tok = admin.ok("/api/v1/tokens", json!({"name": "script"}));
    let secret = tok["secret"].as_str().unwrap().to_owned();
    let script = Api::with_token(&t.base, &secret);
    let (s, v) = script.post("/api/v1/experiments", json!({"name": "by-script"}));
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["owner"], "admin");
    let (s, listed) = admin.get("/api/v1/tokens");
    assert_eq!(s, 200);
    assert!(
        !listed.to_string().contains(&secret),
        "secrets are never listed"
    );
    let (s, v) = Api::with_token(&t.base, "sgm_nope").get("/api/v1/experiments");
    assert_eq!((s, code(&v)), (401, "invalid_token"));
    let (s, _) = admin.delete(&format!("/api/v1/tokens/{}", tok["id"]));
    assert_eq!(s, 200);
    let (s, _) = script.get("/api/v1/experiments");
    assert_eq!(s, 401, "a revoked token is refused");

    // Logout ends the session on the server, not only in the browser.
    let (s, _) = admin.post("/api/v1/logout", json!({}));
    assert_eq!(s, 200);
    let (s, v) = admin.get("/api/v1/session");
    assert_eq!((s, code(&v)), (401, "unauthenticated"));

    // Four failures for admin from one address (those above were forgiven
    // by admin's login) make the next attempt from it wait (back-off), even
    // with the right password.
    let mut b = Api::new(&t.base);
    for _ in 0..4 {
        assert_eq!(b.try_login("admin", "not the password").0, 401);
    }
    let (s, v) = b.try_login("admin", ADMIN_PW);
    assert_eq!((s, code(&v)), (429, "rate_limited"), "{v}");
    let wait = v["error"]["details"]["retry_after_s"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 301, "{wait}");

    // Every successful change is audited, without secrets (read from the
    // database itself, beside the running manager).
    let rows: Vec<String> = open_db(&t)
        .run(|c| {
            c.query_map(
                "SELECT \"user\", action, object, summary FROM audit ORDER BY id",
                (),
                |r| {
                    Ok(format!(
                        "{} {} {} {}",
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                        r.get::<String>(3)?
                    ))
                },
            )
        })
        .unwrap();
    let all = rows.join("\n");
    for action in [
        "session.login",
        "experiment.create",
        "token.create",
        "token.delete",
        "session.logout",
    ] {
        assert!(all.contains(action), "{action} missing in\n{all}");
    }
    assert!(!all.contains(&secret) && !all.contains(ADMIN_PW), "{all}");
}

fn expired_session_is_told_apart(b: Backend) {
    let t = start_on(b, |c| c.session_ttl = Duration::from_secs(1));
    let a = Api::login(&t.base, "admin", ADMIN_PW);
    assert_eq!(a.get("/api/v1/experiments").0, 200);
    std::thread::sleep(Duration::from_millis(2100));
    let (s, v) = a.get("/api/v1/experiments");
    assert_eq!((s, code(&v)), (401, "session_expired"));
}

fn experiments_are_private_to_members_and_admin_pages_to_admins(b: Backend) {
    let t = start_on(b, |_| {});
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    for u in ["alice", "bob"] {
        let (s, v) = admin.post(
            "/api/v1/users",
            json!({"username": u, "password": format!("{u}-password"), "role": "user"}),
        );
        assert_eq!(s, 201, "{v}");
    }
    let (s, v) = admin.post(
        "/api/v1/users",
        json!({"username": "carol", "password": "short"}),
    );
    assert_eq!((s, code(&v)), (400, "invalid_request"));
    assert!(
        v["error"]["details"]["fields"]["password"].is_string(),
        "{v}"
    );

    let alice = Api::login(&t.base, "alice", "alice-password");
    let bob = Api::login(&t.base, "bob", "bob-password");
    let e = alice.ok("/api/v1/experiments", json!({"name": "wifi handover"}));
    assert_eq!(e["domain"], "wifi_handover");
    let id = e["id"].as_i64().unwrap();

    // Bob cannot tell alice's experiment from one that does not exist.
    let (s, mine) = bob.get("/api/v1/experiments");
    assert_eq!((s, mine.as_array().unwrap().len()), (200, 0));
    let (s1, v1) = bob.get(&format!("/api/v1/experiments/{id}"));
    let (s2, v2) = bob.get("/api/v1/experiments/999999");
    assert_eq!((s1, code(&v1)), (404, "not_found"));
    assert_eq!((s2, code(&v2)), (404, "not_found"));
    for path in ["configs", "runs", "streams"] {
        let (s, _) = bob.get(&format!("/api/v1/experiments/{id}/{path}"));
        assert_eq!(s, 404, "{path}");
    }
    let (s, _) = bob.put(
        &format!("/api/v1/experiments/{id}"),
        json!({"description": "x", "version": 1}),
    );
    assert_eq!(s, 404);

    // Admin-only endpoints.
    for path in ["/api/v1/users", "/api/v1/audit"] {
        let (s, v) = bob.get(path);
        assert_eq!((s, code(&v)), (403, "forbidden"), "{path}");
    }
    let (s, _) = bob.post(
        "/api/v1/devices",
        json!({"name": "d", "kind": "capture", "hostname": "h", "port": 1}),
    );
    assert_eq!(s, 403);
    let (s, _) = bob.post(
        "/api/v1/users",
        json!({"username": "eve", "password": "eve-password"}),
    );
    assert_eq!(s, 403);

    // A member sees it and may not change its settings; the owner may.
    alice.ok(
        &format!("/api/v1/experiments/{id}/members"),
        json!({"username": "bob"}),
    );
    let (s, v) = bob.get(&format!("/api/v1/experiments/{id}"));
    assert_eq!(s, 200);
    assert_eq!(v["members"], json!(["bob"]));
    let (s, v) = bob.put(
        &format!("/api/v1/experiments/{id}"),
        json!({"description": "x", "version": 1}),
    );
    assert_eq!((s, code(&v)), (403, "forbidden"));
    let (s, v) = alice.put(
        &format!("/api/v1/experiments/{id}"),
        json!({"description": "x", "version": 1}),
    );
    assert_eq!(s, 200, "{v}");
    let (s, v) = alice.put(
        &format!("/api/v1/experiments/{id}"),
        json!({"description": "y", "version": 1}),
    );
    assert_eq!((s, code(&v)), (409, "edit_conflict"));
    assert_eq!(v["error"]["details"]["current"]["description"], "x");
    let (s, _) = alice.delete(&format!("/api/v1/experiments/{id}/members/bob"));
    assert_eq!(s, 200);
    assert_eq!(bob.get(&format!("/api/v1/experiments/{id}")).0, 404);
    let (s, all) = admin.get("/api/v1/experiments");
    assert_eq!(
        (s, all.as_array().unwrap().len()),
        (200, 1),
        "admin sees every experiment"
    );

    // Users may change their own password, not their role.
    let me = bob.get("/api/v1/session").1["user"]["id"].as_i64().unwrap();
    let (s, _) = bob.send(
        "PATCH",
        &format!("/api/v1/users/{me}"),
        &json!({"role": "admin"}),
    );
    assert_eq!(s, 403);
    let (s, _) = bob.send(
        "PATCH",
        &format!("/api/v1/users/{me}"),
        &json!({"password": "bob-password-2"}),
    );
    assert_eq!(s, 200);
    assert_eq!(
        bob.get("/api/v1/session").0,
        401,
        "a password change ends sessions"
    );
    Api::login(&t.base, "bob", "bob-password-2");

    // The audit log, newest first, for admins.
    let (s, log) = admin.get("/api/v1/audit?limit=50");
    assert_eq!(s, 200);
    let entries = log.as_array().unwrap();
    let find = |action: &str, user: &str| {
        entries
            .iter()
            .any(|e| e["action"] == action && e["user"] == user)
    };
    assert!(find("experiment.create", "alice"));
    assert!(find("experiment.member_add", "alice"));
    assert!(find("user.update", "bob"));
    assert!(find("user.create", "admin"));
    assert!(
        !log.to_string().contains("bob-password"),
        "no passwords in the audit log"
    );
    let (s, doc) = admin.get("/api/v1/openapi.json");
    assert_eq!(s, 200);
    assert!(
        doc["paths"]["/api/v1/runs/{id}/start"].is_object(),
        "{}",
        doc["paths"]
    );
    let (s, v) = admin.get("/api/v1/nope");
    assert_eq!((s, code(&v)), (404, "no_such_endpoint"));
}
