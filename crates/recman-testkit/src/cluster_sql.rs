//! What tests do with a running cluster: SQL, readiness, pgbench, data checksums, amcheck.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crate::binary::*;
use crate::cluster::*;
use crate::host::*;

impl Cluster {
    /// Connection string for database `postgres`.
    pub fn conninfo(&self) -> String {
        self.conninfo_db("postgres")
    }

    pub fn conninfo_db(&self, db: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={db}",
            self.sockdir.display(),
            self.port
        )
    }

    pub(crate) fn client(&self, program: &str) -> Command {
        self.client_from(&pg_bin(program))
    }

    /// [`Cluster::client`] for a program at `path` (another major's client tools).
    pub(crate) fn client_from(&self, path: &std::path::Path) -> Command {
        let mut cmd = Command::new(path);
        cmd.arg("-h")
            .arg(&self.sockdir)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-U", "postgres"]);
        as_cluster_user(&mut cmd);
        cmd
    }

    /// Runs SQL in database `db`. Statements run one by one (fed on stdin,
    /// not `-c`), so VACUUM or CREATE DATABASE work; output is unaligned,
    /// tuples only, without the trailing newline.
    pub fn try_psql_db(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut cmd = self.client("psql");
        cmd.args([
            "-X",
            "-A",
            "-t",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            db,
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run psql: {e}"))?;
        let mut stdin = child.stdin.take().unwrap();
        let input = sql.to_owned();
        // A writer thread, so a large script cannot deadlock against a
        // large result filling the stdout pipe.
        let writer = thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let out = child.wait_with_output().map_err(|e| format!("psql: {e}"))?;
        let _ = writer.join();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout)
                .trim_end_matches('\n')
                .to_owned())
        } else {
            Err(format!(
                "psql on port {} db {db} failed ({}):\n{}\nSQL: {sql}",
                self.port,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            ))
        }
    }

    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        self.try_psql_db("postgres", sql)
    }

    /// Like [`Cluster::try_psql_db`], panicking with psql's stderr.
    pub fn psql_db(&self, db: &str, sql: &str) -> String {
        self.try_psql_db(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs SQL in database `postgres`, panicking with psql's stderr.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_db("postgres", sql)
    }

    /// Waits until the server answers pg_isready.
    pub fn wait_ready(&self, timeout: Duration) {
        let start = Instant::now();
        loop {
            let ok = self
                .client("pg_isready")
                .arg("-q")
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return;
            }
            if start.elapsed() > timeout {
                panic!(
                    "{}",
                    self.failure(&format!("not ready after {timeout:?}"), "")
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `pg_is_in_recovery()` is false (recovery finished and the
    /// server promoted itself). Panics with the log tail on timeout or when
    /// the server died.
    pub fn wait_recovery_done(&self, timeout: Duration) {
        let start = Instant::now();
        let mut last;
        loop {
            last = match self.try_psql("select pg_is_in_recovery()") {
                Ok(v) if v == "f" => return,
                Ok(v) => format!("pg_is_in_recovery() = {v}"),
                Err(e) => e,
            };
            if !self.pgdata.join("postmaster.pid").exists() {
                panic!("{}", self.failure("server exited during recovery", &last));
            }
            if start.elapsed() > timeout {
                panic!(
                    "{}",
                    self.failure(&format!("recovery not done after {timeout:?}"), &last)
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// `pgbench -i -s <scale>` into database `postgres`.
    pub fn pgbench_init(&self, scale: u32) {
        let mut cmd = self.client("pgbench");
        cmd.args(["-i", "-q", "-s", &scale.to_string(), "postgres"]);
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure("pgbench -i failed", &show_output(&out))
        );
    }

    /// Starts a pgbench TPC-B-like run for `seconds` with `clients` in the
    /// background (e.g. while a backup runs). Its output goes to
    /// `<dir>/pgbench-<n>.log`; wait on the child (or kill it) yourself.
    /// pgbench exits non-zero if the server goes away under it.
    pub fn pgbench_background(&self, seconds: u32, clients: u32) -> Child {
        static N: Mutex<u32> = Mutex::new(0);
        let n = {
            let mut g = N.lock().unwrap();
            *g += 1;
            *g
        };
        let log_path = self.dir.join(format!("pgbench-{n}.log"));
        let log = fs::File::create(&log_path).expect("create pgbench log");
        let mut cmd = self.client("pgbench");
        cmd.args([
            "-n",
            "-T",
            &seconds.to_string(),
            "-c",
            &clients.to_string(),
            "-j",
            "1",
            "postgres",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("dup pgbench log"))
        .stderr(log);
        eprintln!("$ {} &", describe(&cmd));
        cmd.spawn().expect("spawn pgbench")
    }

    /// Non-system databases that accept connections (always incl. postgres).
    pub fn databases(&self) -> Vec<String> {
        self.psql(
            "select datname from pg_database where datallowconn and not datistemplate \
             order by 1",
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Content fingerprint of every permanent user relation with contents in `db`, keyed
    /// `schema.name`: ordinary and partitioned tables (a parent through its children's rows)
    /// and populated materialized views map to `<rowcount>:<md5 of the sorted row md5s>`;
    /// sequences to `sequence:<value>:<is_called>`, where the value is the one WAL holds (a
    /// sequence logs 32 values ahead, and recovery restores what was logged, so the source's
    /// `last_value + log_cnt * increment` is what its restore shows); and the key
    /// `pg_largeobject` to `<objects>:<md5 of every page>`. Unlogged relations are left out
    /// (recovery empties them by design).
    pub fn table_checksums(&self, db: &str) -> BTreeMap<String, String> {
        let rels = self.psql_db(
            db,
            "select c.relkind::text || format('%I.%I', n.nspname, c.relname) \
             from pg_class c join pg_namespace n on n.oid = c.relnamespace \
             where c.relkind in ('r', 'p', 'm', 'S') and c.relpersistence = 'p' \
               and (c.relkind <> 'm' or c.relispopulated) \
               and n.nspname not in ('pg_catalog', 'information_schema') \
               and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp%' \
             order by 1",
        );
        let mut queries = vec![(
            "pg_largeobject".to_owned(),
            "select 'pg_largeobject' || E'\\t' || count(distinct loid) || ':' || \
             coalesce(md5(string_agg(loid || '/' || pageno || '/' || md5(data), ',' \
             order by loid, pageno)), '-') from pg_largeobject;"
                .to_owned(),
        )];
        for r in rels.lines().filter(|l| !l.is_empty()) {
            let (kind, t) = r.split_at(1);
            let lit = sql_literal(t);
            let sql = if kind == "S" {
                format!(
                    "select {lit} || E'\\t' || 'sequence:' || \
                     (s.last_value + case when s.is_called then s.log_cnt * p.seqincrement \
                     else 0 end) || ':' || s.is_called \
                     from {t} s, pg_sequence p where p.seqrelid = {lit}::regclass;"
                )
            } else {
                // Row md5s keep the aggregate small (1M-row tables stay cheap).
                format!(
                    "select {lit} || E'\\t' || count(*) || ':' || \
                     coalesce(md5(string_agg(md5(r::text), '' order by md5(r::text))), '-') \
                     from {t} r;"
                )
            };
            queries.push((t.to_owned(), sql));
        }
        let script: String = queries.iter().map(|(_, q)| format!("{q}\n")).collect();
        let out = self.try_psql_db(db, &script).unwrap_or_else(|batch| {
            // Name the relation that cannot be read (a file missing from a restore), not only
            // the batch that failed.
            for (rel, q) in &queries {
                if let Err(e) = self.try_psql_db(db, q) {
                    panic!("relation {rel} of database {db} cannot be read: {e}");
                }
            }
            panic!("the checksums of database {db} failed: {batch}")
        });
        out.lines()
            .map(|l| {
                let (k, v) = l.split_once('\t').expect("checksum line");
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }

    /// [`Cluster::table_checksums`] for every database that accepts connections, template1
    /// included (what is created there appears in every later database), keyed by db name.
    pub fn all_table_checksums(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.psql("select datname from pg_database where datallowconn order by 1")
            .lines()
            .map(|db| {
                let sums = self.table_checksums(db);
                (db.to_owned(), sums)
            })
            .collect()
    }

    pub(crate) fn run_amcheck(&self, target: &[&str]) {
        if server_major() != PG_MAJOR {
            return self.run_amcheck_sql(target);
        }
        let mut cmd = self.client("pg_amcheck");
        cmd.args(target)
            .args(["--install-missing", "--heapallindexed", "--no-strict-names"]);
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure(
                &format!("pg_amcheck {target:?} found problems"),
                &show_output(&out)
            )
        );
    }

    /// What pg_amcheck does, in SQL: Debian's 15 pg_amcheck is the only one at hand and is not
    /// made for other majors' amcheck, so for those the checks run through the extension's
    /// functions directly (verify_heapam on every table, bt_index_check with heapallindexed
    /// on every valid btree index).
    pub(crate) fn run_amcheck_sql(&self, target: &[&str]) {
        let dbs = if target == ["--all"] {
            self.databases()
        } else {
            vec![target[1].to_owned()]
        };
        for db in dbs {
            // verify_heapam came with amcheck 1.3 in PostgreSQL 14; on 13 the heap is checked
            // through heapallindexed only (every live tuple has its index entries).
            let heap_sql = if server_major() >= 14 {
                "select string_agg(v, E'\\n') from (
                   select format('%s block %s offset %s: %s', c.oid::regclass, h.blkno, h.offnum, h.msg) v
                   from pg_class c, lateral verify_heapam(c.oid) h
                   where c.relkind in ('r', 'm', 't') and c.relpersistence <> 't'
                 ) x;"
            } else {
                "select '';"
            };
            let found = self.psql_db(
                &db,
                &format!(
                    "create extension if not exists amcheck;
                     {heap_sql}
                     select count(bt_index_check(i.indexrelid, true))
                       from pg_index i join pg_class c on c.oid = i.indexrelid
                       join pg_am a on a.oid = c.relam
                       where a.amname = 'btree' and i.indisvalid and i.indisready
                         and c.relpersistence <> 't';"
                ),
            );
            let heap = found.lines().next().unwrap_or("").trim();
            assert!(
                heap.is_empty(),
                "{}",
                self.failure(&format!("amcheck (SQL) found problems in {db}"), heap)
            );
        }
    }

    /// Heap and btree checks (with heapallindexed) on database `db`;
    /// installs the amcheck extension there if missing. Panics with the
    /// findings.
    pub fn amcheck(&self, db: &str) {
        self.run_amcheck(&["-d", db]);
    }

    /// [`Cluster::amcheck`] on every database.
    pub fn amcheck_all(&self) {
        self.run_amcheck(&["--all"]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.pgdata.join("postmaster.pid").exists() {
            let _ = self.stop_mode("immediate");
        }
        if thread::panicking() {
            eprintln!(
                "--- server log tail of cluster {} (port {}) ---\n{}",
                self.dir.display(),
                self.port,
                self.log_tail()
            );
        }
        if keep_dirs() {
            eprintln!("RECMAN_TEST_KEEP=1: keeping {}", self.dir.display());
        }
        // The TempDir field removes the dir (unless kept) after this.
        let _ = self.tmp.take();
    }
}
