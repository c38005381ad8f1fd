//! Readers' PostgreSQL sessions at the readers' CPU priority.
//!
//! `streamgauge server` lowers the priority of the threads that serve HTTP
//! (`--http-nice`) so that readers yield the cores to collection. On
//! SQLite that covers the reads, which run in those threads. On
//! PostgreSQL the reads run in the session's backend process, at the
//! priority PostgreSQL started it with, and a tail or a tile catch-up then
//! competes with the writer's backend as an equal (the readers bench
//! measured 0.59 of ingestion alone). So a session the query API opens
//! takes the nice value of the thread that opens it — when the database
//! runs on this host (a loopback address or a Unix socket), the backend's
//! process is a `postgres` process here (not a process of another PID
//! namespace that shares the number), and the kernel lets us (root, or
//! the same user). Otherwise the session keeps its priority.

use std::net::IpAddr;

use postgres::config::Host;

use crate::export::Pg;

/// Gives `client`'s backend the calling thread's nice value, if that is
/// above 0 and the conditions above hold; `hosts` is what it connected to.
pub fn follow_thread(client: &mut Pg, hosts: &[Host]) {
    if thread_nice() <= 0 || !hosts.iter().all(is_local) {
        return;
    }
    if let Ok(row) = client.query_one("SELECT pg_backend_pid()", &[]) {
        backend_follows_thread(row.get(0), hosts);
    }
}

/// Gives the backend process `pid` (from `pg_backend_pid()` on a
/// connection to `hosts`) the calling thread's nice value, under the
/// conditions above.
pub fn backend_follows_thread(pid: i32, hosts: &[Host]) {
    let nice = thread_nice();
    if nice <= 0 || !hosts.iter().all(is_local) {
        return;
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim_end() != "postgres" {
        return;
    }
    // SAFETY: setpriority takes plain integers and touches no memory.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
    if rc != 0 {
        tracing::debug!(pid, nice, error = %std::io::Error::last_os_error(),
            "could not lower a reader's PostgreSQL session's priority");
        return;
    }
    // And the thread's scheduling policy when it is SCHED_IDLE (`--http-nice
    // 19`): the backend then yields to the writer's at once.
    // SAFETY: sched_getscheduler(0) reads the calling thread's policy;
    // param is a valid sched_param.
    #[allow(unsafe_code)]
    unsafe {
        if libc::sched_getscheduler(0) == libc::SCHED_IDLE {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(pid, libc::SCHED_IDLE, &param);
        }
    }
}

/// The calling thread's nice value.
fn thread_nice() -> i32 {
    // SAFETY: gettid and getpriority take plain integers and only read.
    #[allow(unsafe_code)]
    unsafe {
        libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
    }
}

fn is_local(h: &Host) -> bool {
    match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost" || name.parse::<IpAddr>().is_ok_and(|a| a.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_hosts_servers_count_as_local() {
        assert!(is_local(&Host::Tcp("127.0.0.1".into())));
        assert!(is_local(&Host::Tcp("::1".into())));
        assert!(is_local(&Host::Tcp("localhost".into())));
        assert!(is_local(&Host::Unix("/run/postgresql".into())));
        assert!(!is_local(&Host::Tcp("10.0.0.7".into())));
        assert!(!is_local(&Host::Tcp("db.example.org".into())));
    }
}
