//! Dashboards: saved by the experiment's owner, read by its members,
//! refused to members for writing and hidden from everyone else; bad
//! definitions are refused with what is wrong; deleting the experiment
//! deletes them.

mod common;

use common::{add_users, code, start_on, Api, Backend, ADMIN_PW};
use serde_json::{json, Value};

crate::on_both_backends!(dashboards_are_scoped_like_the_experiment);

fn plot(domain: &str, stream: &str) -> Value {
    json!({"version":1,"title":"t","domain":domain,"stream":stream,"fields":["bytes","volts"],"y2":["volts"],
           "senders":[1],"from":"2026-11-28T21:02:43.250Z","to":"2026-11-28T21:07:43.250Z",
           "time":"server","derive":"none","points":560,"timeaxis":"relative"})
}

fn dashboards_are_scoped_like_the_experiment(b: Backend) {
    let t = start_on(b, |_| {});
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    add_users(&admin, &["alice", "bob", "carol"]);
    let alice = Api::login(&t.base, "alice", "alice-password");
    let e = alice.ok("/api/v1/experiments", json!({"name": "dash"}));
    let (id, domain) = (
        e["id"].as_i64().unwrap(),
        e["domain"].as_str().unwrap().to_owned(),
    );
    alice.ok(
        &format!("/api/v1/experiments/{id}/members"),
        json!({"username": "bob"}),
    );
    let list = format!("/api/v1/experiments/{id}/dashboards");
    let one = format!("{list}/main%20view");

    let body = json!({"plots": [plot(&domain, "s1"), plot(&domain, "s2")]});
    let (s, v) = alice.put(&one, body.clone());
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["name"], "main view");
    assert_eq!(v["updated_by"], "alice");
    assert_eq!(v["plots"], body["plots"], "stored as given");
    // Saved again: replaced, still one.
    let (s, _) = alice.put(&one, json!({"plots": [plot(&domain, "s3")]}));
    assert_eq!(s, 200);

    // A member reads; writing is the owner's.
    let bob = Api::login(&t.base, "bob", "bob-password");
    let (s, v) = bob.get(&list);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["plots"][0]["stream"], "s3");
    let (s, v) = bob.put(&one, body.clone());
    assert_eq!((s, code(&v)), (403, "forbidden"), "{v}");
    let (s, _) = bob.delete(&one);
    assert_eq!(s, 403);

    // Someone else sees no such experiment.
    let carol = Api::login(&t.base, "carol", "carol-password");
    for (s, v) in [carol.get(&list), carol.put(&one, body.clone())] {
        assert_eq!((s, code(&v)), (404, "not_found"), "{v}");
    }

    // Bad definitions: which plot and what is wrong.
    let mut bad = plot("other_domain", "s");
    let (s, v) = alice.put(&one, json!({"plots": [plot(&domain, "s"), bad.clone()]}));
    assert_eq!((s, code(&v)), (400, "invalid_request"), "{v}");
    assert!(
        v["error"]["details"]["fields"]["plots.1"]
            .as_str()
            .unwrap()
            .contains("domain"),
        "{v}"
    );
    bad = plot(&domain, "s");
    bad["derive"] = json!("log");
    let (s, v) = alice.put(&one, json!({"plots": [bad]}));
    assert_eq!(s, 400, "{v}");
    let (s, v) = alice.put(&one, json!({"plots": []}));
    assert_eq!(s, 400, "{v}");
    let (s, v) = alice.put(&format!("{list}/%0A"), body.clone());
    assert_eq!(s, 400, "{v}");
    assert_eq!(
        alice.get(&list).1[0]["plots"][0]["stream"],
        "s3",
        "nothing changed"
    );

    // Admins write too; deleting.
    let (s, _) = admin.put(&format!("{list}/admin%20view"), body.clone());
    assert_eq!(s, 200);
    let (s, _) = alice.delete(&one);
    assert_eq!(s, 204);
    let (s, _) = alice.delete(&one);
    assert_eq!(s, 404);
    assert_eq!(alice.get(&list).1.as_array().unwrap().len(), 1);

    // The experiment's deletion takes its dashboards; a new experiment starts empty.
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{id}"));
    assert!(s == 200 || s == 204, "{s} {v}");
    let e2 = alice.ok("/api/v1/experiments", json!({"name": "dash2"}));
    let (s, v) = alice.get(&format!("/api/v1/experiments/{}/dashboards", e2["id"]));
    assert_eq!((s, v), (200, json!([])));
}
