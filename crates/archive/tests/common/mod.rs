//! Test harness: real OpenSSH `sshd` and real `moto` S3 server on loopback,
//! started per test in temporary directories and killed on drop.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

/// Returns false (a recorded skip; a failure under CI, see `testkit`) when
/// `tool` is missing.
pub fn have_tool(tool: &str, install_hint: &str) -> bool {
    let found = if tool.contains('/') {
        Path::new(tool).exists()
    } else {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !found {
        testkit::skip(&format!("{tool} is missing (install: {install_hint})"));
    }
    found
}

/// A free TCP port on 127.0.0.1 that stays free for the server a test
/// restarts on it (see `testkit::free_port`).
pub fn free_port() -> u16 {
    testkit::free_port()
}

/// Waits until something accepts connections on 127.0.0.1:port.
pub fn wait_listening(port: u16, timeout: Duration) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < timeout,
            "nothing listening on 127.0.0.1:{port} after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `cond` every 50 ms until true; panics with `what` after `timeout`.
pub async fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kill_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run helper command");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Generates an unencrypted ed25519 key pair at `path` (+ `.pub`).
pub fn keygen(path: &Path) {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(path));
}

/// `SHA256:...` fingerprint of a public key file.
pub fn fingerprint(pub_path: &Path) -> String {
    let out = run(Command::new("ssh-keygen").arg("-lf").arg(pub_path));
    out.split_whitespace()
        .nth(1)
        .expect("fingerprint field")
        .to_string()
}

/// A real OpenSSH server, key-only login for the current user.
pub struct Sshd {
    /// Temp dir with config, keys and the served directory.
    pub dir: tempfile::TempDir,
    /// Listening port.
    pub port: u16,
    /// Client private key accepted by the server.
    pub client_key: PathBuf,
    /// known_hosts file listing the host key for [127.0.0.1]:port.
    pub known_hosts: PathBuf,
    /// Fingerprint of the host key.
    pub host_fingerprint: String,
    /// Directory uploads should go to (absolute, on this machine).
    pub root: PathBuf,
    /// Login name.
    pub user: String,
    child: Option<Child>,
}

impl Sshd {
    /// The `[archive]` section of a capture daemon's configuration with
    /// one SFTP target `lab` on this server (state in `state`; quick
    /// back-off, for tests).
    pub fn daemon_archive_toml(&self, state: &Path) -> String {
        format!(
            r#"[archive]
state_dir = "{state}"
[archive.backoff]
initial_ms = 100
max_ms = 500
[archive.targets.lab]
kind = "sftp"
host = "127.0.0.1"
port = {port}
user = "{user}"
private_key_file = "{key}"
known_hosts_file = "{kh}"
remote_dir = "{root}"
"#,
            state = state.display(),
            port = self.port,
            user = self.user,
            key = self.client_key.display(),
            kh = self.known_hosts.display(),
            root = self.root.display(),
        )
    }

    /// Prepares keys and config for `port` (0 = pick one) without starting.
    pub fn prepare(port: u16) -> Option<Sshd> {
        if !have_tool("/usr/sbin/sshd", "apt-get install openssh-server")
            || !have_tool("ssh-keygen", "apt-get install openssh-client")
        {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = if port == 0 { free_port() } else { port };
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let mut it = host_pub.split_whitespace();
        let (alg, key) = (it.next().unwrap(), it.next().unwrap());
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {alg} {key}\n"),
        )
        .unwrap();
        let user = run(Command::new("id").arg("-un")).trim().to_string();
        let root = d.join("srv");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n\
                 Subsystem sftp internal-sftp\nLogLevel ERROR\n",
                hk = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").ok(); // privilege separation directory
        Some(Sshd {
            host_fingerprint: fingerprint(&d.join("host_key.pub")),
            client_key: d.join("client_key"),
            known_hosts: d.join("known_hosts"),
            root,
            user,
            port,
            dir,
            child: None,
        })
    }

    /// Prepares and starts a server.
    pub fn start_new() -> Option<Sshd> {
        let mut s = Sshd::prepare(0)?;
        s.start();
        Some(s)
    }

    /// Starts (or restarts) the server with the same keys and port.
    pub fn start(&mut self) {
        assert!(self.child.is_none());
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.path().join("sshd.log")).unwrap())
            .process_group(0)
            .spawn()
            .expect("spawn sshd");
        self.child = Some(child);
        wait_listening(self.port, Duration::from_secs(10));
    }

    /// Kills the server and every session process (SIGKILL to the group).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill_group(&mut c);
        }
    }

    /// Sends `SIG<sig>` (e.g. `STOP`, `CONT`) to the server's process
    /// group (the listener and its session processes): `STOP` freezes it
    /// with its socket open, so connections hang without a banner.
    pub fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let ok = Command::new("kill")
                .args([&format!("-{sig}"), "--", &format!("-{}", c.id())])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "kill -{sig} sshd");
        }
    }

    /// Regular files under the served directory (relative names), sorted.
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out.sort();
        out
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(base, &p, out);
        } else {
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A real moto S3 server on loopback.
pub struct Moto {
    /// Listening port.
    pub port: u16,
    /// Enforce request authentication (moto's IAM emulation knows no key,
    /// so every signed request is refused with `InvalidAccessKeyId`).
    pub enforce_auth: bool,
    child: Option<Child>,
}

impl Moto {
    /// Checks that moto is importable, picks a port, does not start.
    pub fn prepare() -> Option<Moto> {
        if !have_tool("python3", "apt-get install python3") {
            return None;
        }
        if !testkit::have_tool(
            "python3",
            &["-c", "import moto.server"],
            "python module moto.server: pip install 'moto[server]'",
        ) {
            return None;
        }
        Some(Moto {
            enforce_auth: false,
            port: free_port(),
            child: None,
        })
    }

    /// Prepares and starts a server.
    pub fn start_new() -> Option<Moto> {
        let mut m = Moto::prepare()?;
        m.start();
        Some(m)
    }

    /// Starts (or restarts, empty) the server on the same port.
    pub fn start(&mut self) {
        assert!(self.child.is_none());
        // A shell watchdog kills moto when our end of its stdin (kept in
        // `Child`) closes, so the shared server (a static, never dropped)
        // dies with the test binary.
        let script = format!(
            "python3 -m moto.server -H 127.0.0.1 -p {} & p=$!; read _ ; kill -9 $p",
            self.port
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .envs(
                self.enforce_auth
                    .then_some(("INITIAL_NO_AUTH_ACTION_COUNT", "0")),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn moto");
        self.child = Some(child);
        wait_listening(self.port, Duration::from_secs(30));
    }

    /// One server shared by the tests of a binary (each test uses its own
    /// bucket); killed when the test binary exits.
    pub fn shared() -> Option<&'static Moto> {
        static SHARED: std::sync::OnceLock<Option<Moto>> = std::sync::OnceLock::new();
        SHARED.get_or_init(Moto::start_new).as_ref()
    }

    /// Kills the server (its data is lost: moto keeps it in memory).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill_group(&mut c);
        }
    }

    /// Sends `SIG<sig>` (e.g. `STOP`, `CONT`) to the server's process group:
    /// `STOP` freezes it with its socket open, so requests hang unanswered.
    pub fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let ok = Command::new("kill")
                .args([&format!("-{sig}"), "--", &format!("-{}", c.id())])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "kill -{sig} moto");
        }
    }

    /// Endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket with a plain `PUT /bucket` (moto accepts it unsigned).
    pub fn create_bucket(&self, bucket: &str) {
        use std::io::{Read, Write};
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        assert!(
            resp.starts_with("HTTP/1.1 200") || resp.starts_with("HTTP/1.0 200"),
            "{resp}"
        );
    }
}

impl Moto {
    /// Every object of `bucket` (key → bytes), read with plain `GET`s, so a
    /// test needs no S3 client. moto checks no signature but refuses an
    /// anonymous object `GET` (object ACL), so the requests carry an
    /// `Authorization` header with a dummy signature.
    pub fn objects(&self, bucket: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
        let list =
            String::from_utf8(self.get(&format!("/{bucket}?list-type=2&max-keys=1000"))).unwrap();
        assert!(
            !list.contains("<IsTruncated>true"),
            "more than 1000 objects"
        );
        list.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split_once("</Key>"))
            .map(|(k, _)| {
                let k = k.replace("&amp;", "&");
                let body = self.get(&format!("/{bucket}/{k}"));
                (k, body)
            })
            .collect()
    }

    /// The body of a `GET` answered 200 (plain or chunked).
    fn get(&self, path: &str) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: AWS4-HMAC-SHA256 \
             Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, \
             Signature=00\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).unwrap();
        let split = resp
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("HTTP header end");
        let head = String::from_utf8_lossy(&resp[..split]).to_ascii_lowercase();
        assert!(
            head.starts_with("http/1.1 200") || head.starts_with("http/1.0 200"),
            "GET {path}: {head}"
        );
        let mut body = &resp[split + 4..];
        if !head.contains("transfer-encoding: chunked") {
            return body.to_vec();
        }
        let mut out = Vec::new();
        loop {
            let eol = body
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size");
            let n = usize::from_str_radix(std::str::from_utf8(&body[..eol]).unwrap().trim(), 16)
                .unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&body[eol + 2..eol + 2 + n]);
            body = &body[eol + 4 + n..];
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Writes `len` pseudo-random bytes (seeded) to `path` and returns them.
pub fn random_file(path: &Path, len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, &data).unwrap();
    data
}
