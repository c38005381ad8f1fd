//! Runs `query::bench` on SQLite and a throwaway PostgreSQL cluster:
//! `cargo run --release -p query --example bench_query -- [ROWS]`
//! (the lead wires the same function to `streamgauge bench query`).

fn main() {
    let rows = std::env::args()
        .nth(1)
        .map(|r| r.parse().expect("ROWS must be a number"))
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let cluster = pgtemp::Cluster::start().expect("PostgreSQL cluster");
    cluster.watch_process(std::process::id()).expect("watchdog");
    let mut opts = query::bench::BenchOptions::new(dir.path().to_owned());
    opts.rows = rows;
    opts.pg = Some(store::PgOptions {
        host: "127.0.0.1".into(),
        port: cluster.port,
        user: "oml".into(),
        ..store::PgOptions::default()
    });
    let report = query::bench::run(&opts).expect("benchmark");
    println!("{report}");
}
