//! Logins that cannot be raced or exhausted, on a real
//! manager: parallel wrong guesses for one user from one address get
//! through only as often as the back-off allows, and 100 parallel logins
//! keep the process under 100 MB (at most `HASH_SLOTS` argon2 hashes of
//! 19 MiB at once). Prints the figures recorded in docs/benchmarks.md:
//! `cargo test -p manager --test login_load -- --nocapture`.
//!
//! The clients run in a child process (this test binary again, test
//! [`login_clients`]) so that the peak resident set measured is the
//! manager's, not that of 100 client threads.

mod common;

use std::sync::Barrier;
use std::time::Instant;

use common::{start, ADMIN_PW};
use manager::auth::ratelimit::FREE_FAILURES;

/// `VmHWM` (peak resident set) of this process, in MiB: the manager runs
/// in it.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

/// `n` logins at once (after a barrier), from a child process; the
/// statuses. `same` logs in as admin with a wrong password each time,
/// otherwise as `user{i}`.
fn parallel_logins(base: &str, n: usize, same: bool) -> Vec<u16> {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "login_clients",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LOGIN_LOAD", format!("{base} {n} {same}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.split_once("statuses ").map(|(_, s)| s))
        .unwrap_or_else(|| panic!("no statuses from the child: {text}"));
    serde_json::from_str(line).unwrap()
}

/// The child of [`parallel_logins`] (does nothing when run on its own).
#[test]
fn login_clients() {
    let Ok(spec) = std::env::var("LOGIN_LOAD") else {
        return;
    };
    let mut it = spec.split(' ');
    let (base, n, same) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    let who = |i: usize| {
        if same == "true" {
            ("admin".to_owned(), "wrong guess!".to_owned())
        } else {
            (format!("user{i}"), "some password".to_owned())
        }
    };
    let statuses = clients(base, n.parse().unwrap(), who);
    println!("statuses {}", serde_json::to_string(&statuses).unwrap());
}

/// `n` logins at once from threads of this process.
fn clients(base: &str, n: usize, who: impl Fn(usize) -> (String, String)) -> Vec<u16> {
    let barrier = Barrier::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (user, password) = who(i);
                let barrier = &barrier;
                s.spawn(move || {
                    let agent = ureq::Agent::new_with_config(
                        ureq::config::Config::builder()
                            .http_status_as_error(false)
                            .build(),
                    );
                    barrier.wait();
                    agent
                        .post(format!("{base}/api/v1/login"))
                        .content_type("application/json")
                        .send(
                            serde_json::json!({"username": user, "password": password}).to_string(),
                        )
                        .unwrap()
                        .status()
                        .as_u16()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn logins_cannot_be_raced_or_exhausted() {
    let t = start(|_| {});
    let before = peak_rss_mib();

    // 50 wrong guesses at once for admin from one address.
    let statuses = parallel_logins(&t.base, 50, true);
    let passed = statuses.iter().filter(|&&s| s == 401).count();
    let limited = statuses.iter().filter(|&&s| s == 429).count();
    println!(
        "50 parallel wrong guesses: {passed} checked (401), {limited} refused (429); \
         limit {FREE_FAILURES} free failures per (address, user)"
    );
    assert_eq!(passed, FREE_FAILURES as usize, "{statuses:?}");
    assert_eq!(limited, 50 - passed, "{statuses:?}");
    println!("peak RSS after the guesses: {:.0} MiB", peak_rss_mib());

    // 100 logins at once, each its own (address, user) pair: every one is
    // hashed (unknown names cost the same), a few at a time.
    let t0 = Instant::now();
    let statuses = parallel_logins(&t.base, 100, false);
    let took = t0.elapsed();
    assert!(statuses.iter().all(|&s| s == 401), "{statuses:?}");
    let peak = peak_rss_mib();
    println!(
        "100 parallel logins: {:.1} s, peak RSS {peak:.0} MiB (before them {before:.0} MiB)",
        took.as_secs_f64()
    );
    assert!(peak < 100.0, "peak RSS {peak:.0} MiB");
    // No lockout: the owner gets in from the same address once the
    // back-off (1 s after four failures) has passed; a refused try does
    // not lengthen it.
    common::wait_for("admin logs in after the back-off", || {
        common::Api::new(&t.base).try_login("admin", ADMIN_PW).0 == 200
    });
}
