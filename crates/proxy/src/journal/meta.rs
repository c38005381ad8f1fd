//! The journal's small metadata file: `key value` lines, replaced
//! atomically (written to `meta.tmp`, then renamed over `meta`).

use std::io::Write;
use std::path::Path;

/// What a journal remembers besides its data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// Data offset up to which the data was complete (a tuple boundary)
    /// and synced when this file was written: recovery decodes only after it.
    pub boundary: u64,
    /// Data offset the upstream has acknowledged (everything before it is
    /// stored upstream and may be freed).
    pub acked: u64,
    /// Upstream session generation: bumped when data was dropped (quota) or
    /// the upstream forgot the session, so that upstream offsets restart.
    pub epoch: u32,
    /// Data offset of upstream offset 0 in the current epoch.
    pub epoch_base: u64,
    /// The client ended its session (no more data will come).
    pub closed: bool,
    /// Bytes deleted before the upstream acknowledged them (drop-oldest,
    /// or a gap the upstream reported).
    pub lost: u64,
    /// The client's own session id (spec §3.6), when it sent one.
    pub client_session: Option<String>,
}

impl Meta {
    /// The file's text.
    pub fn encode(&self) -> String {
        let mut s = format!(
            "streamgauge-journal 1\nboundary {}\nacked {}\nepoch {}\nepoch-base {}\nclosed {}\nlost {}\n",
            self.boundary,
            self.acked,
            self.epoch,
            self.epoch_base,
            u8::from(self.closed),
            self.lost
        );
        if let Some(c) = &self.client_session {
            s.push_str(&format!("client-session {c}\n"));
        }
        s
    }

    /// Parses the file's text; unknown keys are errors (a newer format).
    pub fn decode(text: &str) -> Result<Meta, String> {
        let mut lines = text.lines();
        if lines.next() != Some("streamgauge-journal 1") {
            return Err("not a version 1 journal metadata file".into());
        }
        let mut m = Meta::default();
        for line in lines {
            let (k, v) = line
                .split_once(' ')
                .ok_or_else(|| format!("bad line {line:?}"))?;
            let num = || {
                v.parse::<u64>()
                    .map_err(|_| format!("bad value in {line:?}"))
            };
            match k {
                "boundary" => m.boundary = num()?,
                "acked" => m.acked = num()?,
                "epoch" => m.epoch = u32::try_from(num()?).map_err(|_| "bad epoch")?,
                "epoch-base" => m.epoch_base = num()?,
                "closed" => m.closed = num()? != 0,
                "lost" => m.lost = num()?,
                "client-session" => m.client_session = Some(v.to_owned()),
                _ => return Err(format!("unknown key {k:?}")),
            }
        }
        Ok(m)
    }

    /// Writes the file atomically; `sync` forces it (and the rename) to disk.
    pub fn store(&self, dir: &Path, sync: bool) -> std::io::Result<()> {
        let tmp = dir.join("meta.tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(self.encode().as_bytes())?;
        if sync {
            f.sync_data()?;
        }
        std::fs::rename(&tmp, dir.join("meta"))?;
        if sync {
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Reads `dir/meta`.
    pub fn load(dir: &Path) -> Result<Meta, String> {
        let text = std::fs::read_to_string(dir.join("meta")).map_err(|e| format!("meta: {e}"))?;
        Meta::decode(&text)
    }
}

/// Makes a directory's entries (created, renamed, deleted files) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = Meta {
            boundary: 10,
            acked: 5,
            epoch: 2,
            epoch_base: 3,
            closed: true,
            lost: 7,
            client_session: Some("a-b:1".into()),
        };
        assert_eq!(Meta::decode(&m.encode()), Ok(m));
        assert!(Meta::decode("streamgauge-journal 1\nfoo 1\n").is_err());
    }
}
