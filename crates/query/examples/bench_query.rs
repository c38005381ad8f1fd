//! Runs `query::bench` on SQLite and a throwaway PostgreSQL cluster:
//! `cargo run --release -p query --example bench_query -- [ROWS] [--exact]`
//! (`streamgauge bench query` runs the same function).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rows = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|r| r.parse().expect("ROWS must be a number"))
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let cluster = pgtemp::Cluster::start().expect("PostgreSQL cluster");
    cluster.watch_process(std::process::id()).expect("watchdog");
    let mut opts = query::bench::BenchOptions::new(dir.path().to_owned());
    opts.rows = rows;
    opts.exact = args.iter().any(|a| a == "--exact");
    opts.append = rows / 100;
    opts.pg = Some(store::PgOptions {
        host: "127.0.0.1".into(),
        port: cluster.port,
        user: "oml".into(),
        ..store::PgOptions::default()
    });
    let report = query::bench::run(&opts).expect("benchmark");
    println!("{report}");
}
