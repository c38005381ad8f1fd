//! A fixed pool of threads for password hashes.
//!
//! Each argon2 hash takes 19 MiB. Run on tokio's blocking pool, 100
//! parallel logins grew the manager to 1.19 GB and never gave it back:
//! every new blocking thread got its own malloc arena, which kept its
//! 19 MiB after the hash. A semaphore in front of `spawn_blocking` is not
//! enough (a permit is released before the finished thread is idle
//! again, so the pool still grows). Here [`HASH_THREADS`] threads, made
//! once, do every hash in turn: memory stays near `HASH_THREADS x 19 MiB`
//! and further logins queue (up to [`QUEUE`], then `None`: busy).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Threads hashing at once: two keep two cores busy.
pub const HASH_THREADS: usize = 2;
/// Hashes waiting for a thread before more are refused.
pub const QUEUE: usize = 256;

type Job = Box<dyn FnOnce() + Send>;

/// The pool's queue (the threads end when it is dropped).
#[derive(Debug)]
pub struct HashPool {
    /// Jobs for the threads.
    tx: SyncSender<Job>,
}

fn worker(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match job {
            Ok(job) => job(),
            Err(_) => return, // the pool was dropped
        }
    }
}

/// Makes glibc's malloc serve large blocks (the hashes' 19 MiB) from
/// their own mappings and unmap them when freed. By default glibc raises
/// its mmap threshold after the first such free, and each later hash's
/// 19 MiB then stays in the heap: 4 verifications on one thread left the
/// resident set at 85 MB, 100 logins at 281 MB (measured).
#[allow(unsafe_code)] // one mallopt call, see SAFETY below
fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; a fixed threshold
    // of 1 MiB is in glibc's accepted range (it answers 0 otherwise).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

impl HashPool {
    /// Starts the threads.
    pub fn new() -> std::io::Result<HashPool> {
        return_large_blocks();
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..HASH_THREADS {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("password-hash-{i}"))
                .spawn(move || worker(&rx))?;
        }
        Ok(HashPool { tx })
    }

    /// Runs `f` on a pool thread; `None` when the queue is full (or the
    /// pool stopped): answer "busy".
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (otx, orx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = otx.send(f());
        });
        match self.tx.try_send(job) {
            Ok(()) => orx.await.ok(),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_every_job_on_the_pool_threads() {
        let pool = HashPool::new().unwrap();
        let names: Vec<Option<String>> = futures_join(&pool).await;
        for n in names {
            assert!(n.unwrap().starts_with("password-hash-"));
        }
    }

    async fn futures_join(pool: &HashPool) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(
                pool.run(|| std::thread::current().name().map(str::to_owned))
                    .await
                    .flatten(),
            );
        }
        out
    }
}
