//! Quick measurement of the injection cost, without criterion.
//!
//! Injects the 3-field tuple (int32, double, 16-byte string) into a file
//! destination in rounds of 4096 samples, pausing 3 ms between rounds so that
//! the writer catches up, and prints the best and median round (ns per
//! inject on the application thread). With `SUSTAINED=1` there is no pause:
//! the figure is then the client's end-to-end throughput.
//!
//! ```text
//! cargo run --release -p client --example inject_cost
//! ROUNDS=1000 ENCODING=text SUSTAINED=1 cargo run --release -p client --example inject_cost
//! ```

use std::time::{Duration, Instant};

use client::spec::{ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
use client::Client;
use omsp::{OmlType, ValueRef};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = env("ROUNDS", 300);
    let sustained = env("SUSTAINED", 0) != 0;
    let encoding = match std::env::var("ENCODING").as_deref() {
        Ok("text") => Encoding::Text,
        _ => Encoding::Binary,
    };
    let dir = std::env::temp_dir().join(format!("sg-inject-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let spec = ClientSpec {
        app: "bench".into(),
        id: Some("b".into()),
        domain: Some("bench".into()),
        destinations: vec![DestinationSpec {
            uri: Uri::File(dir.join("out")),
            encoding,
            policy: OverloadPolicy::Block { stall_limit: None },
            bufsize: 64 << 20,
            streams: None,
            instrumentation: true,
            backchannel: Default::default(),
        }],
        instr_interval: Some(Duration::from_secs(1)),
        ..ClientSpec::default()
    };
    let client = Client::new(spec)?;
    let mp = client.add_mp(
        "m",
        &[
            ("i", OmlType::Int32),
            ("d", OmlType::Double),
            ("s", OmlType::String),
        ],
    )?;
    client.start()?;
    let n = 4096u64;
    let mut rounds_ns = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t0 = Instant::now();
        for i in 0..n {
            mp.inject(&[
                ValueRef::Int32(i as i32),
                ValueRef::Double(0.5),
                ValueRef::String("sixteen-chars..!"),
            ])?;
        }
        rounds_ns.push(t0.elapsed().as_nanos() as f64 / n as f64);
        if !sustained {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    client.close()?;
    rounds_ns.sort_by(f64::total_cmp);
    println!(
        "{encoding:?} {}: best {:.1} ns/inject, median {:.1} ns/inject ({} rounds of {n})",
        if sustained { "sustained" } else { "burst" },
        rounds_ns[0],
        rounds_ns[rounds_ns.len() / 2],
        rounds
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
