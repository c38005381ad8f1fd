//! Pre-aggregated M4 tiles, so that `points=N` over any range of a long
//! stream reads O(N log n) summaries from memory and a few hundred short
//! primary-key ranges from the database instead of the whole range.
//!
//! For each (domain, stream, time axis, numeric field) requested, every
//! sender's rows are cut by id into leaves of [`pyramid::LEAF`] rows, each
//! summarised by its first and last id, its minimum and maximum with the
//! lowest id holding them, and its time span; levels of merged pairs sit
//! above the leaves. A request's bucket takes every tile whose rows all
//! fall into it (same bucket formula as the SQL, applied to the tile's
//! earliest and latest timestamp) and reads exactly, from the database,
//! the leaves that straddle one of its boundaries or the range's ends. The
//! answer is therefore the same rows as the exact M4 query, for any
//! bucket boundaries (tests compare both on SQLite and PostgreSQL).
//!
//! Tiles are built on first use (one scan of the id, sender, time and
//! field columns), then kept up to date by reading only rows above the
//! highest id they cover: before each request, and after each commit of
//! the domain when the server's commit feed is given. They live in memory,
//! within [`TileCache::max_bytes`] (least recently used sets are dropped).

pub mod pyramid;
pub mod read;
pub mod set;
pub mod summary;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use omsp::OmlType;

use crate::export::{Column, Conn, ExportError, Kind, Source};
use crate::request::RowsRequest;
use crate::sql::{PgType, Sql, Value};
use crate::state::{Backend, CommitFeed};
use pyramid::Cover;
pub use set::TileSet;
use summary::M4;

/// How long the background catch-up waits after a commit, so that a burst
/// of commits costs one read.
const COALESCE: Duration = Duration::from_millis(200);

/// Identifies a tile set: domain, table, time column, field.
type Key = (String, String, &'static str, String);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every tile set of the API, shared by its requests.
pub struct TileCache {
    /// Opens domains for the background catch-up (`None`: requests catch
    /// up by themselves, as in the benchmark).
    backend: Option<Backend>,
    /// The sets.
    sets: Mutex<HashMap<Key, Arc<Mutex<TileSet>>>>,
    /// Domains whose commits a background task follows.
    watched: Mutex<HashSet<String>>,
    /// Most memory all tile sets may hold (default 256 MiB; 23 MB per
    /// field of a 10-million-row stream, measured).
    pub max_bytes: usize,
}

/// Where a request's tiles come from.
#[derive(Clone, Copy)]
pub struct TileScope<'a> {
    /// The cache.
    pub cache: &'a Arc<TileCache>,
    /// The domain of the request.
    pub domain: &'a str,
    /// Commits of the domain, to keep its tiles current in the background.
    pub feed: Option<&'a Arc<dyn CommitFeed>>,
}

/// The rows M4 keeps, as `(sender, id)` in answer order, and what reading
/// them cost.
#[derive(Debug, Default)]
pub struct Kept {
    /// Ids to return, ordered by sender then id.
    pub ids: BTreeSet<(i64, i64)>,
    /// Rows folded into the tiles by this request (all of them when it
    /// built the tiles).
    pub folded: u64,
    /// Leaves read exactly.
    pub leaves: usize,
}

impl TileCache {
    /// An empty cache; `backend` enables the background catch-up.
    pub fn new(backend: Option<Backend>) -> TileCache {
        TileCache {
            backend,
            sets: Mutex::new(HashMap::new()),
            watched: Mutex::new(HashSet::new()),
            max_bytes: 256 << 20,
        }
    }

    /// The set of `key`, created empty if needed; drops the least recently
    /// used other sets while the cache holds more than `max_bytes`.
    fn set(&self, key: Key, ty: OmlType) -> Arc<Mutex<TileSet>> {
        let mut sets = lock(&self.sets);
        let s = sets
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Mutex::new(TileSet::new(&key.1, key.2, &key.3, ty))))
            .clone();
        loop {
            let mut total = 0;
            let mut oldest: Option<(Instant, Key)> = None;
            for (k, v) in sets.iter() {
                // A set in use is skipped (and not counted): never wait here.
                let Ok(v) = v.try_lock() else { continue };
                total += v.bytes();
                if *k != key && oldest.as_ref().is_none_or(|o| v.used < o.0) {
                    oldest = Some((v.used, k.clone()));
                }
            }
            match oldest {
                Some((_, k)) if total > self.max_bytes => {
                    tracing::info!(domain = %k.0, table = %k.1, field = %k.3, "tiles dropped (memory limit)");
                    sets.remove(&k);
                }
                _ => break,
            }
        }
        s
    }

    /// Sets of `domain`.
    fn sets_of(&self, domain: &str) -> Vec<Arc<Mutex<TileSet>>> {
        lock(&self.sets)
            .iter()
            .filter(|(k, _)| k.0 == domain)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Memory held by all sets, in bytes.
    pub fn bytes(&self) -> usize {
        lock(&self.sets).values().map(|s| lock(s).bytes()).sum()
    }

    /// Statistics of every set: `(domain, table, field, rows, bytes, build time)`.
    pub fn stats(&self) -> Vec<(String, String, String, u64, usize, Duration)> {
        lock(&self.sets)
            .iter()
            .map(|(k, s)| {
                let s = lock(s);
                (
                    k.0.clone(),
                    k.1.clone(),
                    k.3.clone(),
                    s.rows,
                    s.bytes(),
                    s.build_time,
                )
            })
            .collect()
    }

    /// The rows the exact M4 query keeps for `req` on `table` with
    /// `buckets` buckets over `[t0, t1]`, from the tiles (built or brought
    /// up to date first, on `src`). `req` must have no `where` predicate.
    #[allow(clippy::too_many_arguments)]
    pub fn m4(
        self: &Arc<Self>,
        scope: &TileScope<'_>,
        src: &mut Source,
        table: &str,
        req: &RowsRequest,
        fields: &[&Column],
        (t0, t1): (f64, f64),
        buckets: u32,
    ) -> Result<Kept, ExportError> {
        let width = ((t1 - t0) / f64::from(buckets)).max(1e-9);
        let last = i64::from(buckets) - 1;
        // The SQL's formula: CAST(… AS INTEGER) truncates, floor() rounds
        // down; both agree once clamped at 0.
        let bucket = move |t: f64| (((t - t0) / width) as i64).clamp(0, last) as usize;
        let cover = Cover {
            bucket: &bucket,
            from: req.from,
            to: req.to,
        };
        let wanted = senders(src, &req.senders)?;
        if let Source::Postgres(db) = src {
            // The leaf reads look costly to the planner (it cannot know a
            // leaf holds 128 rows) and would be JIT-compiled: about a
            // second, for a statement that runs in milliseconds.
            db.batch_execute("SET jit = off")?;
        }
        let time = req.time.column();
        let mut kept = Kept::default();
        let sets: Vec<(&Column, OmlType, Arc<Mutex<TileSet>>)> = fields
            .iter()
            .filter_map(|&f| {
                let Kind::Field(ty) = f.kind else { return None };
                let key = (
                    scope.domain.to_owned(),
                    table.to_owned(),
                    time,
                    f.name.clone(),
                );
                Some((f, ty, self.set(key, ty)))
            })
            .collect();
        let all: Vec<Arc<Mutex<TileSet>>> = sets.iter().map(|s| s.2.clone()).collect();
        let pg = matches!(src, Source::Postgres(_));
        kept.folded += catch_up(&all, src, scope.ends(pg))?;
        for (f, ty, set) in sets {
            let mut acc: BTreeMap<i64, Vec<Option<M4>>> = BTreeMap::new();
            let mut reads = Vec::new();
            {
                let s = lock(&set);
                for (&sender, p) in &s.senders {
                    if wanted.as_ref().is_some_and(|w| !w.contains(&sender)) {
                        continue;
                    }
                    let a = acc
                        .entry(sender)
                        .or_insert_with(|| vec![None; buckets as usize]);
                    let mut r = Vec::new();
                    p.cover(&cover, a, &mut r);
                    reads.extend(r.into_iter().map(|(lo, hi)| (sender, lo, hi)));
                }
            }
            kept.leaves += reads.len();
            let cols = read::Columns {
                table,
                time,
                field: &f.name,
                ty,
            };
            read::leaves(src, &cols, &reads, |(id, s, t, v)| {
                let Some((t, v)) = t.zip(v) else { return };
                if req.from.is_some_and(|f| t < f) || req.to.is_some_and(|x| t > x) {
                    return;
                }
                if let Some(a) = acc.get_mut(&s) {
                    M4::merge_into(&mut a[bucket(t)], &M4::one(id, t, v));
                }
            })?;
            for (s, a) in acc {
                for m in a.iter().flatten() {
                    kept.ids.extend(m.ids().map(|id| (s, id)));
                }
            }
        }
        if let Some(feed) = scope.feed {
            self.watch(scope.domain, feed);
        }
        Ok(kept)
    }

    /// Earliest and latest timestamp of the senders `req` selects (all
    /// rows with a timestamp), from the tiles of `field` (already built by
    /// a call to [`TileCache::m4`] or built now).
    pub fn span(
        &self,
        scope: &TileScope<'_>,
        src: &mut Source,
        table: &str,
        req: &RowsRequest,
        field: &Column,
    ) -> Result<Option<(f64, f64)>, ExportError> {
        let Kind::Field(ty) = field.kind else {
            return Ok(None);
        };
        let wanted = senders(src, &req.senders)?;
        let key = (
            scope.domain.to_owned(),
            table.to_owned(),
            req.time.column(),
            field.name.clone(),
        );
        let set = self.set(key, ty);
        let mut s = lock(&set);
        let pg = matches!(src, Source::Postgres(_));
        s.catch_up(src, scope.ends(pg))?;
        Ok(s.span
            .iter()
            .filter(|(id, _)| wanted.as_ref().is_none_or(|w| w.contains(id)))
            .map(|(_, &v)| v)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))))
    }

    /// Follows the commits of `domain` in the background, folding new rows
    /// into its tiles shortly after each commit, so requests find them
    /// current. Needs a backend and a tokio runtime; once per domain.
    fn watch(self: &Arc<Self>, domain: &str, feed: &Arc<dyn CommitFeed>) {
        let Some(backend) = self.backend.clone() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !lock(&self.watched).insert(domain.to_owned()) {
            return;
        }
        let mut rx = feed.subscribe(domain);
        let feed = Arc::clone(feed);
        let cache: Weak<TileCache> = Arc::downgrade(self);
        let domain = domain.to_owned();
        rt.spawn(async move {
            let mut conn: Option<Conn> = None;
            while rx.changed().await.is_ok() {
                tokio::time::sleep(COALESCE).await;
                rx.borrow_and_update();
                let sets = match cache.upgrade() {
                    Some(c) => c.sets_of(&domain),
                    None => return,
                };
                if sets.is_empty() {
                    if let Some(c) = cache.upgrade() {
                        lock(&c.watched).remove(&domain);
                    }
                    return;
                }
                let (b, d, f) = (backend.clone(), domain.clone(), feed.clone());
                let done = tokio::task::spawn_blocking(move || {
                    let mut src = match conn {
                        Some(s) => s,
                        None => Conn::new(b.open(&d)?.ok_or_else(|| {
                            ExportError::Invalid(format!("domain {d} disappeared"))
                        })?),
                    };
                    let pg = matches!(*src, Source::Postgres(_));
                    catch_up(&sets, &mut src, set::Ends::of(pg, Some(&*f), &d))?;
                    Ok::<_, ExportError>(src)
                })
                .await;
                conn = match done {
                    Ok(Ok(s)) => Some(s),
                    Ok(Err(e)) => {
                        tracing::warn!(domain = %domain, error = %e, "tile catch-up failed");
                        None
                    }
                    Err(_) => None,
                };
            }
        });
    }
}

/// Catches `sets` up together (see [`set::catch_up_all`]). They are
/// locked in one order (by address) wherever several are held at once, so
/// the background catch-up and requests never wait on each other in a
/// circle.
fn catch_up(
    sets: &[Arc<Mutex<TileSet>>],
    src: &mut Source,
    ends: set::Ends<'_>,
) -> Result<u64, ExportError> {
    let mut sorted: Vec<&Arc<Mutex<TileSet>>> = sets.iter().collect();
    sorted.sort_by_key(|s| Arc::as_ptr(s));
    sorted.dedup_by_key(|s| Arc::as_ptr(s));
    let mut guards: Vec<MutexGuard<'_, TileSet>> = sorted.iter().map(|s| lock(s)).collect();
    let mut refs: Vec<&mut TileSet> = guards.iter_mut().map(|g| &mut **g).collect();
    set::catch_up_all(&mut refs, src, ends)
}

impl TileScope<'_> {
    /// On PostgreSQL (`pg`), `table`'s committed end, if published.
    pub(crate) fn end(&self, pg: bool, table: &str) -> Option<i64> {
        self.ends(pg).end(table)
    }

    /// On PostgreSQL (`pg`), what the writer told of the domain's commits.
    fn ends(&self, pg: bool) -> set::Ends<'_> {
        set::Ends::of(pg, self.feed.map(|f| &**f), self.domain)
    }
}

/// Sender ids selected by `sender=` (names or ids, as the SQL filter
/// matches them); `None` for all.
fn senders(src: &mut Source, names: &[String]) -> Result<Option<BTreeSet<i64>>, ExportError> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut out = BTreeSet::new();
    for n in names {
        let mut sql = Sql::new(src.dialect());
        sql.push("SELECT CAST(id AS TEXT) FROM _senders WHERE name = ");
        sql.bind(Value::Text(n.clone()), PgType::Text);
        for r in src.text_rows(&sql)? {
            if let Some(id) = r[0].as_deref().and_then(|v| v.parse().ok()) {
                out.insert(id);
            }
        }
        if let Ok(id) = n.parse::<i64>() {
            out.insert(id);
        }
    }
    Ok(Some(out))
}
