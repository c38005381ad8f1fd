//! Sessions over time: visibility while connected, shutdown with clients
//! still connected, reopening, late schemas, the event hook.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

fn count(dir: &std::path::Path, domain: &str, sql: &str) -> i64 {
    common::open_db(dir, domain)
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_visible_within_a_second_while_the_client_stays_connected() {
    let t = common::start().await;
    let mut s = TcpStream::connect(t.addr).unwrap();
    let mut input = common::text_header("live", "s", 1, &["1 a_b x:int32"]);
    for i in 0..100 {
        input.push_str(&format!("0.5\t1\t{i}\t{i}\n"));
    }
    s.write_all(input.as_bytes()).unwrap();
    let dir = t.dir.path().to_owned();
    let n = tokio::task::spawn_blocking(move || {
        common::wait_count(
            &dir,
            "live",
            "SELECT count(*) FROM a_b",
            100,
            Duration::from_secs(1),
        )
    })
    .await
    .unwrap();
    assert_eq!(n, 100);
    drop(s);
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_commits_what_connected_clients_sent() {
    let t = common::start().await;
    let mut clients = Vec::new();
    for c in 0..3 {
        let mut s = TcpStream::connect(t.addr).unwrap();
        let mut input = common::text_header("stop", &format!("c{c}"), 1, &["1 a_b x:int32"]);
        for i in 0..2000 {
            input.push_str(&format!("0.5\t1\t{i}\t{i}\n"));
        }
        s.write_all(input.as_bytes()).unwrap();
        clients.push(s);
    }
    // Clients stay connected; the server is asked to stop.
    tokio::time::sleep(Duration::from_millis(50)).await;
    t.server.shutdown().await;
    assert_eq!(
        count(t.dir.path(), "stop", "SELECT count(*) FROM a_b"),
        6000
    );
    // The server closed the connections.
    for mut s in clients {
        use std::io::Read;
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(s.read(&mut [0u8; 8]).unwrap(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_appends_keeps_start_time_and_renames_conflicts() {
    let t = common::start().await;
    let first = common::text_header("exp", "a", 1000, &["1 app_m x:int32"]) + "1.5\t1\t1\t10\n";
    common::replay_async(t.addr, first.into_bytes()).await;
    // Closed in between (last client left); a later client starts 100 s later
    // and declares app_m differently.
    let second = common::text_header("exp", "b", 1100, &["1 app_m x:int32", "2 app_m_x y:double"])
        + "2.5\t1\t1\t20\n"
        + "2.5\t2\t1\t0.5\n";
    common::replay_async(t.addr, second.into_bytes()).await;
    let third = common::text_header("exp", "c", 1200, &["4 app_m x:double"]) + "0.5\t4\t1\t3.5\n";
    common::replay_async(t.addr, third.into_bytes()).await;
    t.server.shutdown().await;

    let dir = t.dir.path();
    assert_eq!(
        count(
            dir,
            "exp",
            "SELECT CAST(value AS INTEGER) FROM _experiment_metadata WHERE key = 'start_time'"
        ),
        1000
    );
    assert_eq!(
        count(
            dir,
            "exp",
            "SELECT count(*) FROM _experiment_metadata WHERE key = 'start_time'"
        ),
        1
    );
    let db = common::open_db(dir, "exp");
    let rows: Vec<(i64, f64, i64)> = db
        .prepare("SELECT oml_sender_id, oml_ts_client, x FROM app_m ORDER BY oml_tuple_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, [(1, 1.5, 10), (2, 102.5, 20)]);
    let renamed: f64 = db
        .query_row("SELECT x FROM app_m_2", [], |r| r.get(0))
        .unwrap();
    assert_eq!(renamed, 3.5);
    let schema_row: String = db
        .query_row(
            "SELECT value FROM _experiment_metadata WHERE key = 'table_app_m_2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(schema_row, "4 app_m_2 x:double");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_declared_through_schema_0_get_tables_but_no_metadata_row() {
    let t = common::start().await;
    let input = common::text_header(
        "late",
        "s",
        1,
        &["0 _experiment_metadata subject:string key:string value:string"],
    ) + "0.1\t0\t1\t.\tschema\t3 t_late y:uint64 b:[double]\n"
        + "0.2\t3\t1\t18446744073709551615\t2 0.1 1e-300\n"
        + "0.3\t0\t2\t.t_late\tunit\tbytes\n";
    common::replay_async(t.addr, input.into_bytes()).await;
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "late");
    let (y, b): (Vec<u8>, String) = db
        .query_row("SELECT y, b FROM t_late", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(y, u64::MAX.to_be_bytes());
    assert_eq!(b, "[ 0.1, 1e-300 ]");
    let keys: Vec<String> = db
        .prepare("SELECT key FROM _experiment_metadata ORDER BY oml_tuple_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        keys,
        [
            "table__experiment_metadata",
            "start_time",
            "table_t_late",
            "unit"
        ]
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_hook_sees_the_database_lifecycle() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("hook.log");
    let script = scratch.path().join("hook.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho 'OML HOOK READY'\nexec cat > '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hook = script.clone();
    let t = common::start_with(move |c| c.event_hook = Some(hook)).await;
    let input = common::text_header("hooked", "s", 1, &["1 a_b x:int32"]) + "0.1\t1\t1\t1\n";
    common::replay_async(t.addr, input.clone().into_bytes()).await;
    // Wait for the first close before reconnecting, so the sequence is fixed.
    let log2 = log.clone();
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&log2)
            .unwrap_or_default()
            .contains("DBCLOSED")
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    common::replay_async(t.addr, input.into_bytes()).await;
    let data_dir = std::fs::canonicalize(t.dir.path()).unwrap();
    t.server.shutdown().await;
    let uri = format!("file:{}/hooked.sq3", data_dir.display());
    let got = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        got,
        format!("DBCREATED {uri}\nDBCLOSED {uri}\nDBOPENED {uri}\nDBCLOSED {uri}\nEXIT\n")
    );
}
