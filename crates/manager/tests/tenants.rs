//! Tenant isolation, route by route. Alice and bob each own an experiment
//! on the same real collection server and the same real capture daemon (on
//! `lo`, so as root), with sessions, files, counters, streams and a live
//! tail. Bob, with a browser session and with an API token, tries every
//! route of the manager against alice's experiment, configuration, run,
//! files, streams and the shared devices: each answer must be the expected
//! 403 or 404 (400 for relay paths refused before anything is sent, 200
//! for the shared lists), and no status line, header or body may carry any
//! of the marker strings planted in alice's data, unless bob sent that
//! very string himself.
//!
//! `tenants/routes.rs` lists the routes; `the_route_list_is_the_routers`
//! checks the list against the router's source and the OpenAPI document,
//! and the main test fails for a route no request of bob's went through
//! (`tenants/sweep.rs`). So a new route needs a case before the suite
//! passes. `tenants/world.rs` sets the tenants up, `tenants/sessions.rs`
//! covers sessions of bob's runs' names that are not his runs'.

mod common;
#[path = "tenants/routes.rs"]
mod routes;
#[path = "tenants/sessions.rs"]
mod sessions;
#[path = "tenants/sweep.rs"]
mod sweep;
#[path = "tenants/world.rs"]
mod world;

/// In every string of alice's: finding it anywhere bob looks is a leak.
const TAG: &str = "zq7mk";
const A_DOMAIN: &str = "alicedom_zq7mk";
const A_NAME: &str = "Alice zq7mk study";
const A_DESC: &str = "alicedesc_zq7mk";
const A_CONFIG: &str = "alicecfg_zq7mk";
const A_META: &str = "alicemeta_zq7mk";
const A_STREAM: &str = "alicestream_zq7mk";
const A_ROW: &str = "alicerow_zq7mk";
const A_ROW2: &str = "alicerowlive_zq7mk";
const A_TOKEN: &str = "alicetoken_zq7mk";

#[test]
fn the_route_list_is_the_routers() {
    routes::check();
}

crate::on_both_backends!(bob_gets_nothing_of_alices);

fn bob_gets_nothing_of_alices(b: common::Backend) {
    if !testkit::have_root("a capture daemon on lo (AF_PACKET)") {
        return;
    }
    let mut w = world::World::new(b);
    sweep::sweep(&w);
    sessions::shared_devices(&w);
    // Only SQLite gives a deleted run's id again (PostgreSQL identities
    // never repeat), so only there can a run meet a deleted one's session.
    if b == common::Backend::Sqlite {
        sessions::deleted_experiment(&w);
    }
    sessions::lost_answer(&w);
    sessions::alice_unchanged(&mut w);
    w.finish();
}
