//! Two collection servers writing into one PostgreSQL: the
//! races of a shared catalog, each with exact row counts and per-sender
//! sequences. Both servers run in this process on the test cluster; they
//! share nothing but the database, as two `streamgauge server` processes.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::collections::BTreeMap;

use pgtemp::{shared, unique_domain};
use util::{at_once, join, one_to, senders, seqs, server, Client};

const ROWS: u64 = 2_000;

fn client(addr: std::net::SocketAddr, domain: &str, sender: &str, schema: &str) -> Client {
    Client {
        addr,
        domain: domain.to_owned(),
        sender: sender.to_owned(),
        schema: schema.to_owned(),
        rows: ROWS,
    }
}

/// Ten clients on a domain that does not exist yet, five per server, all
/// at one instant: one database, one `_senders`, one table, ten ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_domain_from_both_servers_at_once() {
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain("race_new");
    let clients = (0..10)
        .map(|i| {
            let addr = if i % 2 == 0 { addr_a } else { addr_b };
            client(addr, &domain, &format!("s{i}"), "1 app_m x:int32")
        })
        .collect();
    join(at_once(clients)).await;
    a.shutdown().await;
    b.shutdown().await;

    let got = seqs(port, &domain, "app_m");
    let want: BTreeMap<String, Vec<i64>> =
        (0..10).map(|i| (format!("s{i}"), one_to(ROWS))).collect();
    assert_eq!(got, want);
    let mut ids: Vec<i32> = senders(port, &domain).into_values().collect();
    ids.sort();
    assert_eq!(ids, (1..=10).collect::<Vec<_>>());
    let meta = util::with_db(port, &domain, |c| {
        let mut n = |sql: &str| c.query_one(sql, &[]).unwrap().get::<_, i64>(0);
        (
            n("SELECT count(*) FROM _experiment_metadata WHERE key = 'start_time'"),
            n("SELECT count(*) FROM _experiment_metadata WHERE key = 'table_app_m'"),
            n("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'app_m%'"),
        )
    });
    assert_eq!(meta, (1, 1, 1), "one start time, one schema row, one table");
}

/// The same sender name on both servers at once gets one id; new senders
/// keep arriving on both while both are busy: no id is given twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn senders_get_one_id_each_whatever_server_sees_them() {
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain("race_senders");
    let mut clients = vec![
        client(addr_a, &domain, "twin", "1 app_m x:int32"),
        client(addr_b, &domain, "twin", "1 app_m x:int32"),
    ];
    for i in 0..16 {
        let addr = if i % 2 == 0 { addr_a } else { addr_b };
        clients.push(client(addr, &domain, &format!("n{i}"), "1 app_m x:int32"));
    }
    join(at_once(clients)).await;
    a.shutdown().await;
    b.shutdown().await;

    let mut got = seqs(port, &domain, "app_m");
    let mut twin = got.remove("twin").expect("twin stored");
    twin.sort();
    let both: Vec<i64> = one_to(ROWS).into_iter().flat_map(|s| [s, s]).collect();
    assert_eq!(twin, both, "both twins' rows, under one sender id");
    assert_eq!(got.len(), 16);
    for (name, s) in &got {
        assert_eq!(s, &one_to(ROWS), "{name}");
    }
    let ids = senders(port, &domain);
    assert_eq!(ids.len(), 17);
    let mut v: Vec<i32> = ids.into_values().collect();
    v.sort();
    assert_eq!(v, (1..=17).collect::<Vec<_>>());
}

/// Two clients declaring one stream with different schemas on the two
/// servers at once: one gets `app_m`, the other `app_m_2`, and both
/// servers agree (the schema rows say which is which).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_conflict_across_servers_is_renamed_once() {
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain("race_schema");
    let mut clients = Vec::new();
    for i in 0..3 {
        clients.push(client(
            addr_a,
            &domain,
            &format!("int{i}"),
            "1 app_m x:int32",
        ));
        clients.push(client(
            addr_b,
            &domain,
            &format!("dbl{i}"),
            "1 app_m y:double",
        ));
    }
    join(at_once(clients)).await;
    a.shutdown().await;
    b.shutdown().await;

    let rows = util::with_db(port, &domain, |c| {
        c.query(
            "SELECT key, value FROM _experiment_metadata WHERE key LIKE 'table_app_m%' ORDER BY key",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect::<Vec<_>>()
    });
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (first, second) = (&rows[0].1, &rows[1].1);
    let int_table = if first.ends_with("x:int32") {
        "app_m"
    } else {
        "app_m_2"
    };
    let dbl_table = if int_table == "app_m" {
        "app_m_2"
    } else {
        "app_m"
    };
    assert!(second.ends_with(if int_table == "app_m" {
        "y:double"
    } else {
        "x:int32"
    }));
    let ints = seqs(port, &domain, int_table);
    let dbls = seqs(port, &domain, dbl_table);
    for i in 0..3 {
        assert_eq!(ints[&format!("int{i}")], one_to(ROWS));
        assert_eq!(dbls[&format!("dbl{i}")], one_to(ROWS));
    }
    assert_eq!((ints.len(), dbls.len()), (3, 3));
}

/// Server A has the domain open (a client is connected) when server B
/// creates a table in it; A's clients of that table are then served from
/// the table B made, not refused with "already exists".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_catalog_is_refreshed() {
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain("race_stale");
    // Holds the domain open on A: header sent, connection kept.
    let mut holder = std::net::TcpStream::connect(addr_a).unwrap();
    let hold = client(addr_a, &domain, "holder", "1 other x:int32");
    let bytes = hold.bytes();
    let header_end = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    std::io::Write::write_all(&mut holder, &bytes[..header_end]).unwrap();
    let d = domain.clone();
    let wait_open = tokio::task::spawn_blocking(move || {
        for _ in 0..200 {
            let opened = std::panic::catch_unwind(|| {
                util::with_db(port, &d, |c| {
                    c.query_one("SELECT to_regclass('other') IS NOT NULL", &[])
                        .map(|r| r.get::<_, bool>(0))
                        .unwrap_or(false)
                })
            });
            if opened.unwrap_or(false) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    });
    // `other` appears once A has opened the domain and registered it.
    assert!(wait_open.await.unwrap(), "server A never opened the domain");
    // B creates app_m.
    join(at_once(vec![client(
        addr_b,
        &domain,
        "on_b",
        "1 app_m x:int32",
    )]))
    .await;
    // A's client of app_m.
    join(at_once(vec![client(
        addr_a,
        &domain,
        "on_a",
        "1 app_m x:int32",
    )]))
    .await;
    drop(holder);
    a.shutdown().await;
    b.shutdown().await;

    let got = seqs(port, &domain, "app_m");
    assert_eq!(got.get("on_b"), Some(&one_to(ROWS)));
    assert_eq!(got.get("on_a"), Some(&one_to(ROWS)));
    let tables = util::with_db(port, &domain, |c| {
        c.query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'app_m%'",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
    });
    assert_eq!(tables, 1);
}
