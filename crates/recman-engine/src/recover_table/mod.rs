//! RECOVER TABLE (RMAN's, through an auxiliary instance): one table brought back to a past
//! time without restoring the cluster. Two restores into the auxiliary directory:
//!
//! 1. the cluster-wide files and the table's database's catalogs only; recovery pauses at the
//!    target and, as a hot standby, says which files the table, its TOAST table, their indexes
//!    and its owned sequences had then;
//! 2. a copy of what phase 1 restored (taken before its recovery) plus those files, recovered
//!    to the target again and promoted; the table is renamed there (detached first when it is
//!    a partition), dumped with pg_dump and loaded into the live cluster (or the dump is only
//!    written).
//!
//! Only the backup sets holding a restored file are read. Relation files left out are
//! missing in the auxiliary instance, so it recovers with `ignore_invalid_pages = on`: the WAL
//! of those relations finds no page and must not stop recovery. Nothing of the left-out
//! relations is read by what follows.

mod aux;
mod tree;

use tree::{copy_tree, dir_bytes};

use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::progress::Progress;
use crate::restore::{RecoveryTarget, RestoreOptions, Selection, restore_database_selected};
use aux::AuxInstance;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct RecoverTableOptions {
    /// Target, restore_command and channels; `to` is ignored (the auxiliary directory is used).
    pub restore: RestoreOptions,
    pub schema: String,
    pub table: String,
    pub database: String,
    /// The name it comes back as: `name` (same schema) or `schema.name`.
    pub remap: Option<String>,
    /// Only write the dump here; load nothing.
    pub dump: Option<PathBuf>,
    /// Where the auxiliary instance goes (made and removed; must not exist or be empty).
    pub auxiliary_dir: PathBuf,
}

#[derive(Clone, Debug)]
pub struct RecoverTableReport {
    pub backup_id: String,
    pub table: String,
    /// schema.name it was loaded as (or dumped as).
    pub new_name: String,
    pub target: String,
    /// Bytes the auxiliary instance's two restores wrote, and the backup's whole size.
    pub restored_bytes: u64,
    pub backup_bytes: u64,
    /// Piece bytes the two restores read.
    pub read_bytes: u64,
    pub dump: Option<PathBuf>,
    pub loaded: bool,
}

pub fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `schema.table` split; no schema means `public`.
pub fn split_name(s: &str) -> (String, String) {
    match s.split_once('.') {
        Some((a, b)) => (a.to_string(), b.to_string()),
        None => ("public".to_string(), s.to_string()),
    }
}

pub fn recover_table(
    ctx: &Context,
    opts: &RecoverTableOptions,
    progress: &dyn Progress,
) -> Result<RecoverTableReport, EngineError> {
    if opts.restore.target == RecoveryTarget::Latest {
        return Err(crate::refusal::Backups::RecoverTableNeedsTarget.into());
    }
    let aux_dir = &opts.auxiliary_dir;
    let made = if aux_dir.exists() {
        if !crate::restore::is_empty_dir(aux_dir) {
            return Err(crate::refusal::Backups::RecoverTableDirNotEmpty {
                dir: aux_dir.display().to_string(),
            }
            .into());
        }
        false
    } else {
        std::fs::create_dir_all(aux_dir).map_err(|e| EngineError::io("create", aux_dir, e))?;
        true
    };
    let result = run(ctx, opts, progress);
    // The auxiliary instance is scratch whatever happened.
    let _ = if made {
        std::fs::remove_dir_all(aux_dir)
    } else {
        clear(aux_dir)
    };
    result
}

fn clear(d: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(d)? {
        let p = e?.path();
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(&p)?;
        } else {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
}

/// Makes the auxiliary directory traversable by PostgreSQL's user when recman is root.
fn open_up(d: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o711));
}

fn run(
    ctx: &Context,
    opts: &RecoverTableOptions,
    progress: &dyn Progress,
) -> Result<RecoverTableReport, EngineError> {
    open_up(&opts.auxiliary_dir);
    let db = &opts.database;
    let qualified = format!("{}.{}", ident(&opts.schema), ident(&opts.table));
    let shown = format!("{}.{}", opts.schema, opts.table);
    let mut read_bytes = 0;
    let mut restored_bytes = 0;

    // Phase 1: the catalogs at the target say which files the table had. A copy of what it
    // restored, taken before recovery changes it, is the start of phase 2, so the catalogs'
    // pieces are read once.
    let work1 = opts.auxiliary_dir.join("catalogs");
    let work2 = opts.auxiliary_dir.join("table");
    let phase1 = crate::auxiliary::pgdata_in(&work1);
    let data = crate::auxiliary::pgdata_in(&work2);
    let mut r1 = opts.restore.clone();
    r1.to = phase1.clone();
    progress.message(&format!(
        "recover table {shown}: restoring the catalogs of database {db} to find its files at {}",
        opts.restore.target
    ));
    let (rep1, part1) = restore_database_selected(
        ctx,
        &r1,
        &Selection::Relations {
            database: db.clone(),
            filenodes: Vec::new(),
        },
        progress,
    )?;
    read_bytes += part1.read_bytes;
    restored_bytes += rep1.bytes;
    let db_oid = part1
        .included
        .iter()
        .find(|(n, _)| n == db)
        .map(|(_, o)| *o)
        .ok_or_else(|| EngineError::Internal(format!("database {db} was not restored")))?;
    std::fs::create_dir(&work2).map_err(|e| EngineError::io("create", &work2, e))?;
    copy_tree(&phase1, &data)?;
    let major = pg_major(ctx, &rep1.backup_id)?;
    let filenodes = table_files(opts, &work1, &qualified, &shown)?;
    std::fs::remove_dir_all(&work1).map_err(|e| EngineError::io("remove", &work1, e))?;

    // Phase 2: the table's files added to the copy, recovered to the target and opened.
    let mut r2 = opts.restore.clone();
    r2.to = data.clone();
    progress.message(&format!(
        "recover table {shown}: restoring its {} file(s)",
        filenodes.len()
    ));
    let wanted = |p: &str| {
        crate::restore::databases::db_of(p) == Some(db_oid)
            && crate::restore::filenode_of(p).is_some_and(|n| filenodes.contains(&n))
    };
    read_bytes += crate::restore::restore_more(ctx, &r2, &wanted, progress)?;
    restored_bytes += dir_bytes(&data).saturating_sub(rep1.bytes);
    let (new_schema, new_table, dump) = dump_table(opts, &work2, &qualified)?;
    let loaded = if opts.dump.is_none() {
        load(ctx, &dump, db, &new_schema, &new_table, major)?;
        true
    } else {
        false
    };
    Ok(RecoverTableReport {
        backup_id: rep1.backup_id.clone(),
        table: shown,
        new_name: format!("{new_schema}.{new_table}"),
        target: opts.restore.target.to_string(),
        restored_bytes,
        backup_bytes: crate::restore::load_manifest(ctx, &rep1.backup_id)?
            .entries
            .iter()
            .filter_map(|e| e.size)
            .sum(),
        read_bytes,
        dump: opts.dump.clone(),
        loaded,
    })
}

/// Phase 1's instance, paused at the target: the file numbers the table needs there (see
/// [`files_query`]); an error when the table did not exist then.
fn table_files(
    opts: &RecoverTableOptions,
    work1: &Path,
    qualified: &str,
    shown: &str,
) -> Result<std::collections::HashSet<u32>, EngineError> {
    let db = &opts.database;
    let mut inst = AuxInstance::configure(work1, true, &["recovery_target_action = 'pause'"])?;
    inst.start()?;
    inst.wait_for(
        db,
        "select pg_is_wal_replay_paused()",
        "the recovery target",
    )?;
    let found = inst.sql(
        db,
        &format!("select to_regclass({}) is not null", literal(qualified)),
    )?;
    if found.first().and_then(|r| r.first()).map(String::as_str) != Some("t") {
        return Err(EngineError::NotFound(format!(
            "table {shown} does not exist in database {db} at {}; hint: check the name and the time (the table must exist at the target)",
            opts.restore.target
        )));
    }
    let rows = inst.sql(db, &files_query(qualified))?;
    inst.stop()?;
    Ok(rows
        .iter()
        .filter_map(|r| r.first().and_then(|v| v.parse::<u32>().ok()))
        .filter(|n| *n >= crate::restore::FIRST_NORMAL_OBJECT_ID)
        .collect::<std::collections::HashSet<u32>>())
}

/// Phase 2's instance, recovered to the target: the table renamed as asked and dumped; returns
/// its new schema and name, and the dump's path.
fn dump_table(
    opts: &RecoverTableOptions,
    work2: &Path,
    qualified: &str,
) -> Result<(String, String, PathBuf), EngineError> {
    let db = &opts.database;
    let mut inst = AuxInstance::configure(work2, false, &[])?;
    inst.start()?;
    inst.wait_for(db, "select not pg_is_in_recovery()", "the end of recovery")?;
    let (new_schema, new_table) = match &opts.remap {
        Some(n) if n.contains('.') => split_name(n),
        Some(n) => (opts.schema.clone(), n.clone()),
        None => (opts.schema.clone(), opts.table.clone()),
    };
    let new_qualified = format!("{}.{}", ident(&new_schema), ident(&new_table));
    prepare_table(&inst, db, qualified, &opts.table, &new_schema, &new_table)?;
    let dump = opts
        .dump
        .clone()
        .unwrap_or_else(|| opts.auxiliary_dir.join("table.sql"));
    let mut c = inst.client("pg_dump", db);
    c.arg("-t").arg(&new_qualified).arg("-f").arg(&dump);
    let out = aux::run(&mut c, "pg_dump")?;
    if !out.status.success() {
        return Err(EngineError::Failed {
            kind: ErrorKind::Io,
            message: format!(
                "pg_dump of {new_schema}.{new_table} from the auxiliary instance failed: {}; hint: the dump is written to {}; check that directory is writable",
                String::from_utf8_lossy(&out.stderr).trim(),
                dump.display()
            ),
        });
    }
    inst.stop()?;
    drop(inst);
    Ok((new_schema, new_table, dump))
}

fn pg_major(ctx: &Context, backup_id: &str) -> Result<u32, EngineError> {
    let m = crate::manifest_io::load_manifest(ctx, backup_id)?;
    Ok(m.pg_version / 10000)
}

/// The file numbers the table needs at the target: its own, its TOAST table's, their
/// indexes', its owned sequences', and those of catalogs rewritten since initdb.
fn files_query(q: &str) -> String {
    let t = format!("{}::regclass", literal(q));
    format!(
        "with t as (select oid, reltoastrelid from pg_class where oid = {t}), \
         rels as (select oid from t union select reltoastrelid from t where reltoastrelid <> 0 \
         union select indexrelid from pg_index where indrelid in (select oid from t union select reltoastrelid from t) \
         union select objid from pg_depend where classid = 'pg_class'::regclass and refclassid = 'pg_class'::regclass \
           and refobjid = {t} and deptype in ('a', 'i') \
         union select oid from pg_class where oid < {first} and pg_relation_filenode(oid) >= {first}) \
         select pg_relation_filenode(oid) from rels",
        first = crate::restore::FIRST_NORMAL_OBJECT_ID
    )
}

/// Renames the table (and its indexes and owned sequences, whose names would clash with the
/// live table's) to the name it comes back as; a partition is detached first, its parent not
/// being restored.
fn prepare_table(
    inst: &AuxInstance,
    db: &str,
    q: &str,
    old_table: &str,
    new_schema: &str,
    new_table: &str,
) -> Result<(), EngineError> {
    let t = format!("{}::regclass", literal(q));
    let parent = inst.sql(
        db,
        &format!("select inhparent::regclass::text from pg_inherits where inhrelid = {t}"),
    )?;
    if let Some(p) = parent.first().and_then(|r| r.first()) {
        inst.sql(db, &format!("alter table {p} detach partition {q}"))?;
    }
    if new_table == old_table && q.starts_with(&ident(new_schema)) {
        return Ok(());
    }
    let deps = inst.sql(
        db,
        &format!(
            "select 'index', i.indexrelid::regclass::text, c.relname from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = {t} \
             union all select 'sequence', d.objid::regclass::text, c.relname from pg_depend d join pg_class c on c.oid = d.objid \
             where d.classid = 'pg_class'::regclass and d.refobjid = {t} and d.deptype in ('a', 'i') and c.relkind = 'S'"
        ),
    )?;
    for d in &deps {
        if let [kind, name, rel] = &d[..] {
            let new: String = format!("{new_table}_{rel}").chars().take(63).collect();
            inst.sql(
                db,
                &format!("alter {kind} {name} rename to {}", ident(&new)),
            )?;
        }
    }
    inst.sql(
        db,
        &format!("alter table {q} rename to {}", ident(new_table)),
    )?;
    let renamed = format!("{}.{}", q.split('.').next().unwrap_or(q), ident(new_table));
    if !q.starts_with(&format!("{}.", ident(new_schema))) {
        inst.sql(
            db,
            &format!("alter table {renamed} set schema {}", ident(new_schema)),
        )?;
    }
    Ok(())
}

/// Loads the dump into the live cluster's database `db` in one transaction.
fn load(
    ctx: &Context,
    dump: &Path,
    db: &str,
    schema: &str,
    table: &str,
    major: u32,
) -> Result<(), EngineError> {
    let conninfo = ctx.conninfo.clone().unwrap_or_default();
    let bin = crate::auxiliary::bindir(major);
    let mut c = if bin.as_os_str().is_empty() {
        std::process::Command::new("psql")
    } else {
        std::process::Command::new(bin.join("psql"))
    };
    let target = if conninfo.trim().is_empty() {
        format!("dbname={}", literal(db))
    } else {
        format!("{conninfo} dbname={}", literal(db))
    };
    c.arg("-X")
        .arg("-q")
        .arg("-v")
        .arg("ON_ERROR_STOP=1")
        .arg("-1")
        .arg("-d")
        .arg(&target)
        .arg("-f")
        .arg(dump);
    let out = aux::run(&mut c, "psql")?;
    if !out.status.success() {
        return Err(EngineError::Failed {
            kind: ErrorKind::InvalidInput,
            message: format!(
                "loading {schema}.{table} into database {db} of the live cluster failed: {}; hint: a table of that name may exist already: name another with --remap-table, or write the dump with --dump FILE and load it yourself",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(())
}
