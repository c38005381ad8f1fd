//! A PostgreSQL session the query API opens runs at the nice value of the
//! thread that opened it (the server's HTTP threads are niced), so that
//! readers yield to the writer's session as they do on SQLite.

mod common;

use query::export::Source;
use query::Backend;

/// Nice value of process `pid` (field 19 of /proc/PID/stat).
fn nice_of(pid: i32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(19 - 3).unwrap().parse().unwrap()
}

/// Opens the domain from a thread at `nice`; the session's backend's nice.
fn session_nice(nice: i32) -> i64 {
    let backend = Backend::Postgres(common::pg_options());
    std::thread::spawn(move || {
        // SAFETY: plain integers; lowers this thread's own priority.
        #[allow(unsafe_code)]
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice);
        }
        let mut src = backend.open("prio").unwrap().expect("domain exists");
        let Source::Postgres(c) = &mut src else {
            panic!("a PostgreSQL source")
        };
        let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        nice_of(pid)
    })
    .join()
    .unwrap()
}

#[test]
fn a_readers_session_takes_the_nice_value_of_its_thread() {
    let _db = common::postgres("prio");
    assert_eq!(session_nice(9), 9);
    assert_eq!(session_nice(0), 0, "a thread at 0 leaves the session alone");
}
