//! A fleet on loopback (issue 19): a database-host agent (`recman server --pgdata`) running as
//! the cluster user, and a backup host: recman as an OS user who cannot read the data
//! directory (`nobody`), with its own repository and its own copies of the TLS files.
//!
//! WAL still has to reach the backup host's repository, which only its user may write (the
//! repository is private: 0750/0640). Until archive-push goes through a repository host, a
//! [`WalShuttle`] does it: the cluster's archive_command copies each segment into a spool
//! directory and a thread of the test pushes it with `recman archive-push` as the backup
//! user.

use std::fs;
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::binary::*;
use crate::cluster::*;
use crate::host::*;
use crate::pki::TestPki;

/// The backup host's OS user: exists on every Debian system, owns nothing of PostgreSQL's.
const BACKUP_USER: &str = "nobody";

fn id_of(flag: &str, user: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .expect("cannot run `id`");
    assert!(
        out.status.success(),
        "missing prerequisite: OS user {user} (the fleet tests' backup host)"
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("numeric id")
}

/// recman as the backup host's user, with its repository and TLS files.
pub struct BackupHost {
    pub uid: u32,
    pub gid: u32,
    /// Its home: the repository, the TLS file copies.
    pub home: PathBuf,
    pub repo: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    _home: TempDir,
}

fn give(path: &Path, uid: u32, gid: u32, mode: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).expect("chown");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

impl BackupHost {
    /// A backup host whose client certificate is the kit's `client_cert` (CN = the name the
    /// PKI was made for); its repository is created.
    pub fn new(pki: &TestPki) -> BackupHost {
        assert!(
            cluster_user().is_some(),
            "the fleet tests need root: the backup host runs as {BACKUP_USER}, the agent as postgres"
        );
        let (uid, gid) = (id_of("-u", BACKUP_USER), id_of("-g", BACKUP_USER));
        let home_dir = tempfile::Builder::new()
            .prefix("recman-backup-host-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let home = home_dir.path().to_path_buf();
        give(&home, uid, gid, 0o700);
        let copy = |from: &Path, name: &str, mode: u32| {
            let to = home.join(name);
            fs::copy(from, &to).expect("copy a TLS file");
            give(&to, uid, gid, mode);
            to
        };
        let host = BackupHost {
            uid,
            gid,
            repo: home.join("repo"),
            cert: copy(&pki.client_cert, "client.crt", 0o644),
            key: copy(&pki.client_key, "client.key", 0o600),
            ca: copy(&pki.ca, "ca.crt", 0o644),
            home,
            _home: home_dir,
        };
        host.ok(["--repo", path_str(&host.repo), "create", "catalog"]);
        host
    }

    /// Copies `cert` and `key` into the home, for a run with another client certificate.
    pub fn other_identity(&self, cert: &Path, key: &Path, name: &str) -> (PathBuf, PathBuf) {
        let c = self.home.join(format!("{name}.crt"));
        let k = self.home.join(format!("{name}.key"));
        fs::copy(cert, &c).expect("copy cert");
        fs::copy(key, &k).expect("copy key");
        give(&c, self.uid, self.gid, 0o644);
        give(&k, self.uid, self.gid, 0o600);
        (c, k)
    }

    /// `--repo R --tls-cert C --tls-key K --tls-ca CA`.
    pub fn base_args(&self) -> Vec<String> {
        [
            "--repo",
            path_str(&self.repo),
            "--tls-cert",
            path_str(&self.cert),
            "--tls-key",
            path_str(&self.key),
            "--tls-ca",
            path_str(&self.ca),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// recman as the backup user, environment scrubbed of PG*/RECMAN_*, cwd its home.
    pub fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(recman_bin());
        cmd.args(args);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("PG") || k.starts_with("RECMAN_") {
                cmd.env_remove(&key);
            }
        }
        cmd.current_dir(&self.home)
            .uid(self.uid)
            .gid(self.gid)
            .env("HOME", &self.home)
            .env("USER", BACKUP_USER)
            .env("LOGNAME", BACKUP_USER);
        cmd
    }

    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = self.cmd(args);
        eprintln!("$ (as {BACKUP_USER}) {}", describe(&cmd));
        cmd.stdin(Stdio::null()).output().expect("run recman")
    }

    /// Runs recman as the backup user; panics with its output unless it succeeds.
    pub fn ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let out = self.run(args);
        assert!(out.status.success(), "recman failed\n{}", show_output(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs recman as the backup user; panics if it succeeds; returns stderr.
    pub fn err<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "recman unexpectedly succeeded\n{}",
            show_output(&out)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Whether the backup user can read `path` (the data directory must stay closed to it).
    pub fn can_read(&self, path: &Path) -> bool {
        Command::new("test")
            .arg("-r")
            .arg(path)
            .uid(self.uid)
            .gid(self.gid)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// A copy of the repository owned by the cluster user, for a local restore as postgres.
    pub fn repo_copy_for_cluster_user(&self) -> (TempDir, PathBuf) {
        let (dir, path) = new_scratch_dir();
        let to = path.join("repo");
        let out = Command::new("cp")
            .arg("-a")
            .arg(&self.repo)
            .arg(&to)
            .output()
            .expect("cp");
        assert!(out.status.success(), "cp -a: {}", show_output(&out));
        chown_tree_to_cluster_user(&to);
        (dir, to)
    }
}

/// `recman server --pgdata` of a cluster, running as the cluster user; killed when dropped.
pub struct Agent {
    child: Child,
    pub url: String,
    pub log: PathBuf,
    _dir: TempDir,
}

impl Agent {
    /// Starts the agent of `cluster` on a free loopback port, allowing `allow` CNs, and waits
    /// until it accepts connections.
    pub fn start(cluster: &Cluster, pki: &TestPki, allow: &[&str]) -> Agent {
        let (dir, path) = new_scratch_dir();
        let log = path.join("agent.log");
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "--pgdata".to_string(),
            path_str(&cluster.pgdata).to_string(),
            // The agent's own session to its cluster, over the unix socket: a backup host
            // without --target starts and stops backups through it.
            "--target".into(),
            cluster.conninfo(),
            "--tls-cert".into(),
            path_str(&pki.server_cert).into(),
            "--tls-key".into(),
            path_str(&pki.server_key).into(),
            "--tls-ca".into(),
            path_str(&pki.ca).into(),
            "server".into(),
            "--listen".into(),
            listen.clone(),
        ];
        for a in allow {
            args.extend(["--allow".to_string(), a.to_string()]);
        }
        let mut cmd = recman_cmd(&args);
        let out = fs::File::create(&log).expect("agent log");
        chown_to_cluster_user(&log);
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out);
        eprintln!("$ {} &", describe(&cmd));
        let mut child = cmd.spawn().expect("start recman server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&listen).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "recman server exited ({status}):\n{}",
                    fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "recman server did not listen on {listen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Agent {
            child,
            url: format!("https://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// What the agent wrote (its refusals name the peer and the CN).
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the agent now (a database host that died).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Carries archived WAL from a spool directory the cluster writes into the backup host's
/// repository (see the module docs); stops when dropped.
pub struct WalShuttle {
    pub spool: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    _dir: TempDir,
}

impl WalShuttle {
    pub fn new() -> WalShuttle {
        let (dir, path) = new_scratch_dir();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod spool");
        WalShuttle {
            spool: path,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            _dir: dir,
        }
    }

    /// The postgresql.conf lines that archive into the spool.
    pub fn conf(&self) -> Vec<String> {
        let s = path_str(&self.spool);
        vec![
            "archive_mode = on".into(),
            format!(
                "archive_command = 'cp %p {s}/%f.part && chmod 0644 {s}/%f.part && mv {s}/%f.part {s}/%f'"
            ),
        ]
    }

    /// Starts pushing what arrives into `host`'s repository.
    pub fn start(&mut self, host: &BackupHost) {
        let stop = self.stop.clone();
        let spool = self.spool.clone();
        let (uid, gid, home, repo) = (host.uid, host.gid, host.home.clone(), host.repo.clone());
        self.thread = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut names: Vec<_> = fs::read_dir(&spool)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .filter(|n| !n.ends_with(".part"))
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                for n in names {
                    let p = spool.join(&n);
                    let out = Command::new(recman_bin())
                        .args(["--repo", path_str(&repo), "archive-push"])
                        .arg(&p)
                        .env_clear()
                        .env("HOME", &home)
                        .current_dir(&home)
                        .uid(uid)
                        .gid(gid)
                        .output();
                    match out {
                        Ok(o) if o.status.success() => {
                            let _ = fs::remove_file(&p);
                        }
                        // Retried at the next turn (a segment archived before the cluster
                        // was registered waits for the registration).
                        Ok(o) => eprintln!(
                            "wal shuttle: archive-push {n}: {}",
                            String::from_utf8_lossy(&o.stderr).trim()
                        ),
                        Err(e) => eprintln!("wal shuttle: {e}"),
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }
}

impl Default for WalShuttle {
    fn default() -> Self {
        WalShuttle::new()
    }
}

impl Drop for WalShuttle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Cluster {
    /// Restarts the server listening on 127.0.0.1 (its port) as well as its socket: a backup
    /// host reaches it over TCP, as it would from another machine.
    pub fn restart_on_tcp(&self) {
        if self.is_running() {
            self.stop();
        }
        let opts = format!(
            "-p {} -c unix_socket_directories='{}' -c listen_addresses='127.0.0.1'",
            self.port,
            self.sockdir.display()
        );
        let mut cmd = self.pg_ctl();
        cmd.arg("-l")
            .arg(&self.log)
            .args(["-w", "-t", "60", "-o", &opts, "start"]);
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure("PostgreSQL did not start on TCP", &show_output(&out))
        );
    }

    /// The conninfo of [`Cluster::restart_on_tcp`]'s listener.
    pub fn tcp_conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}
