//! `recman receive` (issue 42): WAL streamed into a disk repository as the primary writes it.
//! Sync mode loses no acknowledged commit when the primary is lost, async mode nothing it had
//! reported written; a receiver killed mid-segment resumes from its slot without a gap; a
//! receiver on a standby follows its promotion onto the new timeline. Into an S3 repository,
//! the same survives a kill and a cut, and the bucket alone holds what the receiver recorded
//! as flushed when its host is lost with the primary.

mod common;
mod flows;

use common::*;
use flows::*;
use recman_media::testkit::{S3Server, s3_server_or_skip};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

const APP: &str = "recman_main";
const BOUND: Duration = Duration::from_secs(120);

fn wait_until(what: &str, cond: impl FnMut() -> bool, detail: impl Fn() -> String) {
    common::wait_until(what, BOUND, cond, detail);
}

/// A `recman receive` running in the background, its stderr in a file.
struct Receiver {
    child: Child,
    log: PathBuf,
}

impl Receiver {
    fn start(setup: &Setup, log_dir: &Path, extra: &[&str]) -> Receiver {
        Receiver::start_from(setup.args(&[]), log_dir, extra)
    }

    /// A receiver with the global options `base` (repository, cluster, target), then `extra`.
    fn start_from(base: Vec<String>, log_dir: &Path, extra: &[&str]) -> Receiver {
        Receiver::start_env(base, log_dir, extra, &[])
    }

    /// As [`Receiver::start_from`], with `env` set for the receiver.
    fn start_env(
        base: Vec<String>,
        log_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Receiver {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = log_dir.join(format!("receive-{n}.log"));
        let mut args = base;
        args.extend(
            [
                "--db",
                "main",
                "receive",
                "--slot",
                "recman_test",
                "--create-slot",
            ]
            .iter()
            .chain(extra)
            .map(|s| s.to_string()),
        );
        let child = recman_cmd(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Receiver { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {} failed", self.child.id());
    }

    /// SIGTERM, then waits for a clean exit.
    fn stop(mut self) {
        self.signal("-TERM");
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "recman receive ended with {status} after SIGTERM\n{}",
            self.log()
        );
    }

    fn kill(mut self) {
        self.signal("-KILL");
        let _ = self.child.wait();
    }
}

/// The receiver, refused by the primary, says twice that its stream ended (and stays up).
fn wait_refused_twice(rx: &Receiver) {
    wait_until(
        "two refused streams",
        || {
            rx.log()
                .matches("the stream from the primary ended")
                .count()
                >= 2
        },
        || rx.log(),
    );
}

fn streaming(c: &Cluster) -> bool {
    c.try_psql(&format!(
        "select count(*) from pg_stat_replication where application_name = '{APP}' and state = 'streaming'"
    ))
    .map(|v| v == "1")
    .unwrap_or(false)
}

/// What the spool holds, for failure messages.
fn spool_log(setup: &Setup) -> String {
    spool_listing(&setup.repo.join("receive/main"))
}

fn spool_listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                    format!("{} {len}", e.file_name().to_string_lossy())
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    format!("spool {}:\n{}", dir.display(), names.join("\n"))
}

fn archived_names(setup: &Setup) -> Vec<String> {
    setup
        .archivelogs()
        .iter()
        .filter_map(|w| w["name"].as_str().map(str::to_string))
        .collect()
}

/// The archived segments of timeline 1 have no hole between the first and the last.
fn assert_no_gap(setup: &Setup) {
    assert_no_gap_in(&archived_names(setup));
}

fn assert_no_gap_in(names: &[String]) {
    let mut segs: Vec<u64> = names
        .iter()
        .filter(|n| n.len() == 24 && n.starts_with("00000001"))
        .map(|n| {
            let log = u64::from_str_radix(&n[8..16], 16).unwrap();
            let seg = u64::from_str_radix(&n[16..24], 16).unwrap();
            log * 256 + seg
        })
        .collect();
    segs.sort();
    segs.dedup();
    assert!(!segs.is_empty(), "no archived segment at all");
    for w in segs.windows(2) {
        assert_eq!(w[1], w[0] + 1, "archived WAL has a gap: {segs:X?}");
    }
}

fn postmaster_pid(c: &Cluster) -> String {
    std::fs::read_to_string(c.pgdata.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_string()
}

/// The primary is lost: its postmaster killed (SIGKILL) with `load` stopped, then its data
/// directory removed once its backends are gone.
fn lose_primary(c: &Cluster, load: Child) {
    lose_primary_with(c, Some(load));
}

fn lose_primary_with(c: &Cluster, load: Option<Child>) {
    let pid = postmaster_pid(c);
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    if let Some(mut load) = load {
        let _ = load.kill();
        let _ = load.wait();
    }
    wait_until(
        "the killed postmaster's backends to exit",
        || !streaming(c) && !Path::new(&format!("/proc/{pid}")).exists(),
        String::new,
    );
    std::fs::remove_dir_all(&c.pgdata).unwrap();
}

fn restore_latest(setup: &Setup, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let mut args = vec![
        "--repo",
        path_str(&setup.repo),
        "--db",
        "main",
        "restore",
        "database",
        "--to",
        path_str(&to),
    ];
    args.extend_from_slice(extra);
    recman_ok(args);
    (tmp, to)
}

/// Acceptance 1: with the receiver named in synchronous_standby_names, every commit that
/// returned survives the loss of the primary (SIGKILL and its data directory deleted): the
/// restore reads the open segment from the receiver's spool.
#[test]
fn sync_receiver_keeps_every_acknowledged_commit() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let (_logs, log_dir) = new_scratch_dir();
    c.psql("create table acked(id int primary key, pad text)");
    c.pgbench_init(1);
    setup.backup(&[]);

    let rx = Receiver::start(&setup, &log_dir, &["--mode", "sync"]);
    wait_until("the receiver streaming", || streaming(c), || rx.log());
    c.psql(&format!(
        "alter system set synchronous_standby_names = '{APP}'"
    ));
    // The kit turns synchronous_commit off for speed; a commit must wait for the receiver.
    c.psql("alter system set synchronous_commit = on");
    c.psql("select pg_reload_conf()");
    wait_until(
        "the receiver becoming the synchronous standby",
        || {
            c.try_psql(&format!(
                "select sync_state from pg_stat_replication where application_name = '{APP}'"
            ))
            .map(|v| v == "sync")
            .unwrap_or(false)
        },
        || rx.log(),
    );

    // Load beside the counted client, so segments complete while it commits.
    let load = c.pgbench_background(600, 1);
    let mut acked = 0u32;
    let mut switched = String::new();
    for i in 1..=120u32 {
        let sql = format!("insert into acked values ({i}, repeat('x', 2000))");
        if c.try_psql(&sql).is_ok() {
            acked = i;
        } else {
            break;
        }
        if i == 60 {
            switched = c.psql("select pg_walfile_name(pg_switch_wal())");
        }
    }
    assert_eq!(acked, 120, "a commit failed while the primary was up");
    // archive-push ran beside the receiver: a segment both stored is one object, equal, so
    // PostgreSQL's archiver never failed on one the receiver stored first.
    wait_until(
        &format!("the archiver to archive {switched}, which the receiver stores too"),
        || c.psql("select coalesce(last_archived_wal, '') from pg_stat_archiver") >= switched,
        || file_tail(&c.log, 30),
    );
    assert_eq!(
        c.psql("select failed_count from pg_stat_archiver"),
        "0",
        "archive-push failed beside the receiver\n{}",
        file_tail(&c.log, 60)
    );

    // The primary is lost: killed, then its data directory removed.
    lose_primary(c, load);
    let rx_log = rx.log();
    rx.stop();
    let partial = std::fs::read_dir(setup.repo.join("receive/main"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().ends_with(".partial"));
    assert!(partial, "the spool holds no open segment");
    // The primary is gone: the report gives the age of the receiver's last record.
    let rpo = recman_ok([
        "--repo",
        path_str(&setup.repo),
        "--db",
        "main",
        "report",
        "rpo",
    ]);
    assert!(
        rpo.contains("main") && rpo.contains("sync") && rpo.contains("not reachable"),
        "{rpo}"
    );

    let (_keep, to) = restore_latest(&setup, &[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(Duration::from_secs(180));
    r.amcheck_all();
    let missing = r.psql(&format!(
        "select coalesce(string_agg(g::text, ','), '') from generate_series(1, {acked}) g where not exists (select 1 from acked where id = g)"
    ));
    assert_eq!(
        missing,
        "",
        "acknowledged commits are missing after the restore\n{rx_log}\n{}",
        spool_log(&setup)
    );
}

/// Acceptance 2: in async mode (the default) a commit does not wait for the receiver, so the
/// loss of the primary may lose what it had not yet sent; the bound docs/wal.md states is that
/// nothing the receiver had reported written is lost. Each row's commit is followed by the
/// primary's WAL position (an upper bound of its commit record's end); the receiver's reported
/// write position just before the kill then says which rows must survive the restore.
#[test]
fn async_receiver_loses_nothing_it_reported_written() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let (_logs, log_dir) = new_scratch_dir();
    c.psql("create table acked(id int primary key, pad text)");
    c.pgbench_init(1);
    setup.backup(&[]);
    // The kit turns synchronous_commit off for speed: here each commit is flushed locally
    // before it returns, so that the walsender may send it.
    c.psql("alter system set synchronous_commit = on");
    c.psql("select pg_reload_conf()");
    let rx = Receiver::start(&setup, &log_dir, &["--flush-interval", "200"]);
    wait_until("the receiver streaming", || streaming(c), || rx.log());

    let load = c.pgbench_background(600, 1);
    let lsn = |sql: &str| c.psql(sql).trim().to_string();
    let mut rows: Vec<(u32, String)> = Vec::new();
    for i in 1..=120u32 {
        c.psql(&format!(
            "insert into acked values ({i}, repeat('x', 2000))"
        ));
        rows.push((i, lsn("select pg_current_wal_lsn()::text")));
    }
    // What the receiver has reported written, read just before the primary is lost; rows
    // committed before it must survive.
    let written = lsn(&format!(
        "select write_lsn::text from pg_stat_replication where application_name = '{APP}'"
    ));
    let must: Vec<u32> = rows
        .iter()
        .filter(|(_, at)| c.psql(&format!("select '{at}'::pg_lsn <= '{written}'::pg_lsn")) == "t")
        .map(|(i, _)| *i)
        .collect();
    assert!(
        !must.is_empty(),
        "the receiver reported nothing written ({written}) of 120 commits\n{}",
        rx.log()
    );

    lose_primary(c, load);
    let rx_log = rx.log();
    rx.stop();

    let (_keep, to) = restore_latest(&setup, &[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(Duration::from_secs(180));
    r.amcheck_all();
    let present: Vec<u32> = r
        .psql("select coalesce(string_agg(id::text, ',' order by id), '') from acked")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let lost: Vec<u32> = must
        .iter()
        .filter(|i| !present.contains(i))
        .copied()
        .collect();
    assert!(
        lost.is_empty(),
        "rows committed before the receiver's reported write position {written} are missing: {lost:?}\n{rx_log}\n{}",
        spool_log(&setup)
    );
    eprintln!(
        "async: {} of 120 rows within the reported position, {} restored",
        must.len(),
        present.len()
    );
}

/// Acceptance 4: the receiver streams from a standby (its slot there) while neither server
/// archives anything itself; the primary is stopped and the standby promoted: the receiver
/// follows it onto timeline 2 (the history file and the new timeline's segments stored), and a
/// restore of the backup taken on timeline 1 recovers onto timeline 2, equal.
#[test]
fn receiver_follows_a_promoted_standby_onto_its_new_timeline() {
    // Nothing archives but the receiver started below.
    let setup = archiving_nothing();
    let (_logs, log_dir) = new_scratch_dir();
    let c = &setup.cluster;
    c.pgbench_init(1);
    // A standby of the primary (its configuration is the primary's: it archives nothing either),
    // made before the receiver starts, so that its WAL holds where the receiver begins.
    let (_standby_dir, standby) = make_standby(c);
    let base = vec![
        "--repo".to_string(),
        path_str(&setup.repo).to_string(),
        "--pgdata".to_string(),
        path_str(&standby.pgdata).to_string(),
        "--target".to_string(),
        standby.conninfo(),
    ];
    let rx = Receiver::start_from(base, &log_dir, &["--flush-interval", "200"]);
    wait_until(
        "the receiver streaming from the standby",
        || streaming(&standby),
        || rx.log(),
    );
    // The backup waits for its WAL in the catalog: the receiver stores it, through the standby.
    setup.backup(&[]);
    // A standby answers for the receiver's position as a primary does.
    wait_until(
        "the receiver recording its position from the standby",
        || {
            let rpo = setup.ok(&["--db", "main", "report", "rpo", "--json"]);
            serde_json::from_str::<serde_json::Value>(&rpo).unwrap()[0]["mode"] == "async"
        },
        || rx.log(),
    );
    c.psql("create table before_promotion as select g from generate_series(1, 50000) g");
    let primary_end = c.psql("select pg_current_wal_lsn()::text");
    wait_until(
        "the standby to replay the primary's last writes",
        || {
            standby.psql(&format!(
                "select pg_last_wal_replay_lsn() >= '{primary_end}'::pg_lsn"
            )) == "t"
        },
        String::new,
    );
    c.stop();
    run_as_cluster_user_ok(
        Command::new(pg_bin("pg_ctl"))
            .args(["-w", "promote", "-D"])
            .arg(&standby.pgdata),
    );
    assert_eq!(standby.psql("select pg_is_in_recovery()"), "f");
    standby.psql("create table after_promotion as select g from generate_series(1, 50000) g");
    let expected = standby.all_table_checksums();
    let end = standby.psql("select pg_current_wal_insert_lsn()::text");
    let last = standby.psql("select pg_walfile_name(pg_current_wal_lsn())");
    standby.psql("select pg_switch_wal()");
    assert!(last.starts_with("00000002"), "{last}");
    wait_until(
        &format!("timeline 2's segment {last} and history file stored by the receiver"),
        || {
            let names = archived_names(&setup);
            names.contains(&last) && names.iter().any(|n| n == "00000002.history")
        },
        || rx.log(),
    );
    rx.stop();
    setup.ok(&[
        "--db",
        "main",
        "crosscheck",
        "archivelog",
        "all",
        "--verify",
    ]);

    let (_keep, to) = restore_latest(&setup, &["--until-lsn", &end]);
    let r = start_and_compare(&to, &expected);
    assert_eq!(
        r.psql("select timeline_id from pg_control_checkpoint()"),
        "3",
        "recovery should end on a new timeline after timeline 2"
    );
}

/// A registered cluster whose archive_command does nothing: only a receiver archives its WAL.
fn archiving_nothing() -> Setup {
    Setup::with(ClusterOpts {
        extra_conf: vec!["archive_command = '/bin/true'".into()],
        ..Default::default()
    })
}

/// A cluster whose only archiver is a `recman receive` started here (its archive_command
/// does nothing), streaming when this returns; `sql` runs before the receiver starts. The
/// receiver's logs go to the returned directory.
fn with_sole_receiver(sql: &[&str]) -> (Setup, tempfile::TempDir, PathBuf, Receiver) {
    let setup = archiving_nothing();
    let (logs, log_dir) = new_scratch_dir();
    for q in sql {
        setup.cluster.psql(q);
    }
    let rx = Receiver::start(&setup, &log_dir, &["--flush-interval", "200"]);
    wait_until(
        "the receiver streaming",
        || streaming(&setup.cluster),
        || rx.log(),
    );
    (setup, logs, log_dir, rx)
}

/// Acceptance 3 (SIGKILL part): the receiver is the only archiver; killed mid-segment and
/// restarted, it leaves no gap and no damaged object, and PITR to a point written while it was
/// down restores equal.
#[test]
fn killed_receiver_resumes_without_a_gap() {
    // Stored uncompressed, so each phase below writes several segments of WAL.
    let (setup, _logs, log_dir, rx) = with_sole_receiver(&[
        "create table marks(id int primary key, phase text, pad text)",
        "alter table marks alter column pad set storage external",
    ]);
    let c = &setup.cluster;
    // The backup waits for its WAL in the catalog: only the receiver puts it there.
    setup.backup(&[]);
    c.psql(
        "insert into marks select g, 'before', repeat('b', 1000) from generate_series(1, 12000) g",
    );

    // Killed mid-segment: its stream dies with it (the slot is free again).
    rx.kill();
    wait_until(
        "the walsender of the killed receiver to go",
        || !streaming(c),
        || spool_log(&setup),
    );
    c.psql(
        "insert into marks select g, 'down', repeat('d', 1000) from generate_series(12001, 24000) g",
    );
    let expected = c.all_table_checksums();
    let lsn_down = c.psql("select pg_current_wal_insert_lsn()::text");
    c.psql("select pg_switch_wal()");
    c.psql(
        "insert into marks select g, 'after', repeat('a', 1000) from generate_series(24001, 30000) g",
    );

    let rx = Receiver::start(&setup, &log_dir, &["--flush-interval", "200"]);
    wait_until(
        "the restarted receiver streaming",
        || streaming(c),
        || rx.log(),
    );
    // One receiver per database: a second one is refused, naming the first's lock.
    let err = setup.err(&["--db", "main", "receive", "--slot", "recman_other"]);
    assert!(
        err.contains("another recman receive is running") && err.contains("hint"),
        "{err}"
    );
    let mut last = String::new();
    for _ in 0..3 {
        c.psql("insert into marks select g, 'x', 'x' from generate_series(40001, 40010) g on conflict do nothing");
        last = c.psql("select pg_walfile_name(pg_current_wal_lsn())");
        c.psql("select pg_switch_wal()");
    }
    wait_until(
        &format!("segment {last} stored by the receiver"),
        || archived_names(&setup).contains(&last),
        || rx.log(),
    );
    let rpo = setup.ok(&["--db", "main", "report", "rpo", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&rpo).unwrap();
    assert_eq!(rows[0]["mode"], "async", "{rpo}");
    assert!(rows[0]["exposure_bytes"].is_u64(), "{rpo}");
    // REPORT SLO measures the RPO by the receiver's exposure once one has run.
    let slo = setup.ok(&["--db", "main", "report", "slo", "--json"]);
    let slo: serde_json::Value = serde_json::from_str(&slo).unwrap();
    assert_eq!(slo[0]["rpo_source"], "receiver", "{slo:#}");
    assert!(
        slo[0]["rpo_bytes"].is_u64() && slo[0]["rpo_seconds"].is_f64(),
        "{slo:#}"
    );
    let metrics = setup.ok(&["--db", "main", "metrics"]);
    assert!(
        metrics.contains("recman_wal_receive_flushed_lsn_bytes{")
            && metrics.contains("recman_wal_receive_lag_seconds{"),
        "{metrics}"
    );
    rx.stop();

    assert_no_gap(&setup);
    setup.ok(&[
        "--db",
        "main",
        "crosscheck",
        "archivelog",
        "all",
        "--verify",
    ]);
    let (_keep, to) = restore_latest(&setup, &["--until-lsn", &lsn_down]);
    start_and_compare(&to, &expected);
}

/// Acceptance 3 (the cut): the primary refuses the receiver's replication connections and drops
/// the one it had (pg_hba.conf and pg_terminate_backend: the kit's clusters listen on a Unix
/// socket only, so this stands in for a network cut) while segments complete; once it lets
/// the receiver back in, the slot brings what was written meanwhile: no gap, no damaged object,
/// and PITR to a point inside the cut restores equal.
#[test]
fn receiver_catches_up_after_the_primary_refuses_it() {
    let (setup, _logs, _log_dir, rx) = with_sole_receiver(&[
        "create table cut(id int primary key, pad text)",
        "alter table cut alter column pad set storage external",
    ]);
    let c = &setup.cluster;
    setup.backup(&[]);

    let hba = c.pgdata.join("pg_hba.conf");
    let open = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(&hba, format!("local replication all reject\n{open}")).unwrap();
    c.psql("select pg_reload_conf()");
    c.psql(&format!(
        "select pg_terminate_backend(pid) from pg_stat_replication where application_name = '{APP}'"
    ));
    c.psql("insert into cut select g, repeat('c', 1000) from generate_series(1, 12000) g");
    let expected = c.all_table_checksums();
    let lsn_cut = c.psql("select pg_current_wal_insert_lsn()::text");
    c.psql("select pg_switch_wal()");
    // The receiver keeps trying while it is refused, and stays up.
    wait_refused_twice(&rx);
    assert!(!streaming(c));

    std::fs::write(&hba, &open).unwrap();
    c.psql("select pg_reload_conf()");
    wait_until("the receiver streaming again", || streaming(c), || rx.log());
    c.psql("insert into cut select g, 'x' from generate_series(20001, 20010) g");
    let last = c.psql("select pg_walfile_name(pg_switch_wal())");
    wait_until(
        &format!("segment {last} archived"),
        || archived_names(&setup).contains(&last),
        || rx.log(),
    );
    rx.stop();

    assert_no_gap(&setup);
    setup.ok(&[
        "--db",
        "main",
        "crosscheck",
        "archivelog",
        "all",
        "--verify",
    ]);
    let (_keep, to) = restore_latest(&setup, &["--until-lsn", &lsn_cut]);
    start_and_compare(&to, &expected);
}

/// A cluster whose only archiver is a receiver into a repository in a real S3 server (s3s-fs),
/// registered as "main".
struct S3Rx {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    config: PathBuf,
    url: String,
    cluster: Cluster,
}

impl S3Rx {
    fn new(server: &S3Server) -> S3Rx {
        let (tmp, dir) = new_scratch_dir();
        let config = write_s3_config(&dir, server.endpoint(), server, "");
        let cluster = Cluster::init_with(ClusterOpts {
            extra_conf: vec![
                "archive_mode = on".into(),
                "archive_command = '/bin/true'".into(),
                // The kill-and-cut test wants its last rows in a segment that stays open; an
                // autovacuum of the tables it filled writes hint-bit page images (the cluster
                // has checksums) and can fill that segment on a loaded machine.
                "autovacuum = off".into(),
            ],
            ..Default::default()
        });
        let s = S3Rx {
            _dir: tmp,
            url: format!("s3://{}/receive-test", server.bucket()),
            config,
            cluster,
            dir,
        };
        recman_ok(s.repo_args(&s.cache(), &["create", "catalog"]));
        s.ok(&["register", "database", "--name", "main"]);
        s
    }

    /// The cache of the host the receiver runs on; its spool lives under it.
    fn cache(&self) -> PathBuf {
        self.dir.join("cache")
    }

    fn repo_args(&self, cache: &Path, args: &[&str]) -> Vec<String> {
        RemoteRepo {
            config: self.config.clone(),
            url: self.url.clone(),
            cache: cache.to_path_buf(),
        }
        .args(args)
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        let mut v = self.repo_args(
            &self.cache(),
            &[
                "--pgdata",
                path_str(&self.cluster.pgdata),
                "--target",
                &self.cluster.conninfo(),
            ],
        );
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    fn ok(&self, args: &[&str]) -> String {
        recman_ok(self.args(args))
    }

    fn archived_names(&self) -> Vec<String> {
        let out = self.ok(&["list", "archivelog", "--json"]);
        let all: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        all.iter()
            .filter_map(|w| w["name"].as_str().map(str::to_string))
            .collect()
    }

    fn spool_log(&self) -> String {
        spool_listing(&self.cache().join("receive/main"))
    }

    fn start_receiver(&self, log_dir: &Path) -> Receiver {
        let rx = Receiver::start_from(self.args(&[]), log_dir, &["--flush-interval", "200"]);
        wait_until(
            "the receiver streaming",
            || streaming(&self.cluster),
            || format!("{}\n{}", rx.log(), self.spool_log()),
        );
        rx
    }

    /// A restore on another host: a cache of its own, so that only the bucket is read.
    fn restore_elsewhere(&self, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let (tmp, dir) = new_scratch_dir();
        let to = dir.join("restored");
        let mut args = vec!["--db", "main", "restore", "database", "--to", path_str(&to)];
        args.extend_from_slice(extra);
        recman_ok(self.repo_args(&dir.join("cache"), &args));
        (tmp, to)
    }
}

/// Acceptance 5: acceptances 2 and 3 on an S3 repository. The receiver, the only archiver, is
/// killed mid-segment and restarted, then refused by the primary and let back in: no gap, no
/// damaged object, PITR inside the kill restores equal. Then under load the primary and the
/// receiver's host are both lost (SIGKILL, no clean stop, and the restore on another host with
/// an empty cache): every row committed before the position the receiver recorded as flushed
/// is restored from the bucket alone, the open segment assembled from its part objects.
#[test]
fn receiver_into_s3_survives_kill_and_cut_and_keeps_what_it_flushed() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let s = S3Rx::new(&server);
    let c = &s.cluster;
    let (_logs, log_dir) = new_scratch_dir();
    c.psql("create table marks(id int primary key, phase text, pad text)");
    c.psql("alter table marks alter column pad set storage external");
    c.pgbench_init(1);
    let rx = s.start_receiver(&log_dir);
    s.ok(&["backup", "database"]);
    c.psql(
        "insert into marks select g, 'before', repeat('b', 1000) from generate_series(1, 12000) g",
    );

    // Killed mid-segment, then started again.
    rx.kill();
    wait_until(
        "the walsender of the killed receiver to go",
        || !streaming(c),
        || s.spool_log(),
    );
    c.psql(
        "insert into marks select g, 'down', repeat('d', 1000) from generate_series(12001, 24000) g",
    );
    let expected_down = c.all_table_checksums();
    let lsn_down = c.psql("select pg_current_wal_insert_lsn()::text");
    c.psql("select pg_switch_wal()");
    let rx = s.start_receiver(&log_dir);

    // The cut: the primary refuses the receiver and drops its connection.
    let hba = c.pgdata.join("pg_hba.conf");
    let open = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(&hba, format!("local replication all reject\n{open}")).unwrap();
    c.psql("select pg_reload_conf()");
    c.psql(&format!(
        "select pg_terminate_backend(pid) from pg_stat_replication where application_name = '{APP}'"
    ));
    c.psql(
        "insert into marks select g, 'cut', repeat('c', 1000) from generate_series(24001, 36000) g",
    );
    c.psql("select pg_switch_wal()");
    wait_refused_twice(&rx);
    std::fs::write(&hba, &open).unwrap();
    c.psql("select pg_reload_conf()");
    wait_until("the receiver streaming again", || streaming(c), || rx.log());

    // Async loss under load: each row's commit is followed by the primary's WAL position.
    c.psql("create table acked(id int primary key, pad text)");
    c.psql("alter system set synchronous_commit = on");
    c.psql("select pg_reload_conf()");
    let mut load = c.pgbench_background(600, 1);
    let mut rows: Vec<(u32, String)> = Vec::new();
    let mut insert = |i: u32| {
        c.psql(&format!(
            "insert into acked values ({i}, repeat('x', 2000))"
        ));
        rows.push((i, c.psql("select pg_current_wal_lsn()::text")));
    };
    (1..=120).for_each(&mut insert);
    // The last rows go into a fresh segment that stays open: only its parts in the bucket
    // hold them when the receiver's host is lost.
    let _ = load.kill();
    let _ = load.wait();
    c.psql("select pg_switch_wal()");
    (121..=140).for_each(&mut insert);
    let open_segment = c.psql("select pg_walfile_name(pg_current_wal_lsn())");
    let flushed = || {
        let out = s.ok(&["--db", "main", "report", "rpo", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v[0]["flushed_lsn"].as_str().unwrap_or("0/0").to_string()
    };
    let last = rows.last().unwrap().1.clone();
    wait_until(
        "the receiver recording a flushed position past the last counted commit",
        || {
            c.psql(&format!(
                "select '{last}'::pg_lsn <= '{}'::pg_lsn",
                flushed()
            )) == "t"
        },
        || rx.log(),
    );
    let at = flushed();
    let must: Vec<u32> = rows
        .iter()
        .filter(|(_, lsn)| c.psql(&format!("select '{lsn}'::pg_lsn <= '{at}'::pg_lsn")) == "t")
        .map(|(i, _)| *i)
        .collect();
    lose_primary_with(c, None);
    let rx_log = rx.log();
    rx.kill();

    let names = s.archived_names();
    assert_no_gap_in(&names);
    assert!(
        !names.contains(&open_segment),
        "{open_segment} was stored whole: the test meant it to be open"
    );
    s.ok(&[
        "--db",
        "main",
        "crosscheck",
        "archivelog",
        "all",
        "--verify",
    ]);

    let (_keep, to) = s.restore_elsewhere(&[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(Duration::from_secs(180));
    r.amcheck_all();
    let present = r.psql(&format!(
        "select count(*) from acked where id <= {}",
        must.last().copied().unwrap_or(0)
    ));
    assert_eq!(
        present,
        must.len().to_string(),
        "rows committed before the flushed position {at} the receiver recorded are missing from a restore of the bucket alone\n{rx_log}\n{}",
        s.spool_log()
    );
    eprintln!(
        "s3 async: {} of 140 rows within the recorded flushed position {at}, {} restored",
        must.len(),
        r.psql("select count(*) from acked")
    );
    drop(r);

    let (_keep, to) = s.restore_elsewhere(&["--until-lsn", &lsn_down]);
    start_and_compare(&to, &expected_down);
}

/// `recman server --receive main=CONNINFO`: the repository host's server runs the receiver as
/// a service. With the cluster archiving nothing itself, a segment it completes is stored by
/// the server's receiver; a `--receive` without `=` is refused with a hint.
#[test]
fn the_repository_hosts_server_runs_the_receiver() {
    let setup = archiving_nothing();
    let c = &setup.cluster;
    let (_dir, dir) = new_scratch_dir();
    let pki = TestPki::new(&dir, "client");
    let port = free_port();
    let tls = |rest: &[&str]| -> Vec<String> {
        let mut v = pki.server_args(&setup.repo);
        v.extend(["server".to_string(), "--listen".to_string()]);
        v.push(format!("127.0.0.1:{port}"));
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    // A --receive without `=` is refused at start, not left to a server that runs on.
    let err_log = dir.join("refused.log");
    let mut bad = recman_cmd(tls(&["--receive", "main"]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err_log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Deadline::after(Duration::from_secs(30));
    let status = loop {
        if let Some(st) = bad.try_wait().unwrap() {
            break st;
        }
        if deadline.passed() {
            let _ = bad.kill();
            panic!("a server given --receive main (no conninfo) kept running");
        }
        thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(&err_log).unwrap();
    assert!(
        !status.success() && err.contains("give DB=CONNINFO") && err.contains("hint"),
        "{err}"
    );

    let spec = format!("main={}", c.conninfo());
    let server = Server::spawn(
        &tls(&["--receive", &spec]),
        port,
        &dir.join("server.log"),
        &[],
    );
    wait_until(
        "the server's receiver streaming",
        || streaming(c),
        || server.log_text(),
    );
    c.psql("create table t as select g from generate_series(1, 10000) g");
    let last = c.psql("select pg_walfile_name(pg_switch_wal())");
    wait_until(
        &format!("{last} stored by the server's receiver"),
        || archived_names(&setup).contains(&last),
        || server.log_text(),
    );
    assert!(
        server
            .log_text()
            .contains("recman server: receive main: stored wal file"),
        "{}",
        server.log_text()
    );
}

/// recman's own replication connection over TCP, as a DBA's remote primary needs it: TLS with
/// the server's certificate checked (sslmode=verify-full against a test CA) and a SCRAM
/// password from PGPASSWORD; then without TLS and an md5 password. The roles have the
/// REPLICATION attribute and pg_hba.conf lets them in for replication only: the receiver needs
/// nothing else. Each time the walsender
/// serves the receiver's role (over TLS or not, as asked) and a segment the primary completes
/// reaches the archive.
#[test]
fn receiver_streams_over_tls_with_a_scram_password_and_with_md5() {
    let setup = archiving_nothing();
    let c = &setup.cluster;
    let (_logs, log_dir) = new_scratch_dir();
    let (_p, pdir) = new_scratch_dir();
    let pki = TestPki::new(&pdir, "tlsuser");
    c.set_tls(&pki);
    c.psql("set password_encryption = 'scram-sha-256'; create role rx login replication password 'rx-secret'");
    c.psql(
        "set password_encryption = 'md5'; create role rx5 login replication password 'rx5-secret'",
    );
    // Before initdb's trust lines: the first matching line decides.
    let hba = c.pgdata.join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!(
            "hostssl replication rx 127.0.0.1/32 scram-sha-256\n\
             host replication rx5 127.0.0.1/32 md5\n{old}"
        ),
    )
    .unwrap();
    c.restart_on_tcp();
    c.psql("create table shipped(id int, via text)");

    let ca = path_str(&pki.ca);
    for (user, password, tls, ssl) in [
        (
            "rx",
            "rx-secret",
            format!("sslmode=verify-full sslrootcert={ca}"),
            "true",
        ),
        ("rx5", "rx5-secret", "sslmode=disable".to_string(), "false"),
    ] {
        let target = format!(
            "host=localhost hostaddr=127.0.0.1 port={} user={user} dbname=postgres {tls}",
            c.port
        );
        let base = vec![
            "--repo".to_string(),
            path_str(&setup.repo).to_string(),
            "--target".to_string(),
            target,
        ];
        let rx = Receiver::start_env(base, &log_dir, &[], &[("PGPASSWORD", password)]);
        wait_until(&format!("{user} streaming"), || streaming(c), || rx.log());
        assert_eq!(
            c.psql(&format!(
                "select r.usename || ' ' || s.ssl from pg_stat_replication r join pg_stat_ssl s using (pid) where r.application_name = '{APP}'"
            )),
            format!("{user} {ssl}"),
            "the walsender serving the receiver\n{}",
            rx.log()
        );
        c.psql(&format!("insert into shipped values (1, '{user}')"));
        let last = c.psql("select pg_walfile_name(pg_switch_wal())");
        wait_until(
            &format!("segment {last} archived by the receiver as {user}"),
            || archived_names(&setup).contains(&last),
            || rx.log(),
        );
        assert!(
            rx.log().contains(&format!("stored wal file {last}")),
            "the receiver, not archive-push, stored {last}\n{}",
            rx.log()
        );
        rx.stop();
    }
}
