//! The files that make PostgreSQL recover a restored directory: backup_label and
//! tablespace_map as the backup-stop call returned them, recovery.signal, and the recovery
//! settings appended to postgresql.auto.conf (which wins over postgresql.conf).

use super::files::Layout;
use super::{RecoveryTarget, RestoreOptions};
use crate::context::Context;
use crate::error::EngineError;
use recman_format::manifest::BackupManifest;

fn quote_conf(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// `v` as one double-quoted word of a shell command line (PostgreSQL runs restore_command
/// through `sh -c`).
pub fn quote_shell(v: &str) -> String {
    format!(
        "\"{}\"",
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
            .replace('`', "\\`")
    )
}

pub fn write_recovery(
    ctx: &Context,
    m: &BackupManifest,
    layout: &Layout,
    opts: &RestoreOptions,
    restore_command: Option<&str>,
) -> Result<Vec<String>, EngineError> {
    let write = |name: &str, data: &str| -> Result<(), EngineError> {
        let p = layout.to.join(name);
        layout.dest.write_whole(&p, data.as_bytes())?;
        // Files we add belong to whoever owns the restored directory (PostgreSQL's user).
        if let Some(owner) = layout.dest.owner_of(&layout.to) {
            let _ = layout.dest.set_meta(&p, Some(owner), None, false);
        }
        Ok(())
    };
    write("backup_label", &m.backup_label)?;
    if !m.tablespace_map.is_empty() {
        let mut map = String::new();
        for line in m.tablespace_map.lines() {
            let oid = line.split(' ').next().unwrap_or("");
            match layout
                .tablespaces
                .iter()
                .find(|(o, _)| o.to_string() == oid)
            {
                Some((_, loc)) => map.push_str(&format!("{oid} {}\n", loc.display())),
                None => map.push_str(&format!("{line}\n")),
            }
        }
        write("tablespace_map", &map)?;
    }
    write("recovery.signal", "")?;
    let exe = opts
        .recman_exe
        .canonicalize()
        .unwrap_or_else(|_| opts.recman_exe.clone());
    let repo = if ctx.repo.is_remote() {
        ctx.repo.location().to_string()
    } else {
        let root = ctx.repo.root();
        root.canonicalize()
            .unwrap_or_else(|_| root.to_path_buf())
            .display()
            .to_string()
    };
    let extra: String = opts
        .restore_command_args
        .iter()
        .map(|a| format!(" {}", quote_shell(a)))
        .collect();
    // With a recovery target PostgreSQL (13 and later) fails recovery itself when the WAL
    // ends before the target, so archive-get may answer "not archived" for a segment it cannot
    // deliver: its read-ahead asks for segments past the target, which need not be there.
    let guarded = if opts.target == RecoveryTarget::Latest {
        ""
    } else {
        " --with-recovery-target"
    };
    let cmd = match restore_command {
        Some(c) => format!("{c}{guarded} \"%f\" \"%p\""),
        None => format!(
            "{} --repo {}{extra} --db {} archive-get{guarded} \"%f\" \"%p\"",
            quote_shell(&exe.display().to_string()),
            quote_shell(&repo),
            quote_shell(&ctx.db.name)
        ),
    };
    let mut settings = vec![format!("restore_command = {}", quote_conf(&cmd))];
    match &opts.target {
        RecoveryTarget::Latest => {}
        RecoveryTarget::Time { utc, .. } => {
            settings.push(format!("recovery_target_time = {}", quote_conf(utc)))
        }
        RecoveryTarget::Lsn(l) => settings.push(format!(
            "recovery_target_lsn = {}",
            quote_conf(&l.to_string())
        )),
        RecoveryTarget::Name { name, .. } => {
            settings.push(format!("recovery_target_name = {}", quote_conf(name)))
        }
        RecoveryTarget::Xid(x) => settings.push(format!(
            "recovery_target_xid = {}",
            quote_conf(&x.to_string())
        )),
    }
    if opts.target != RecoveryTarget::Latest {
        settings.push("recovery_target_action = 'promote'".into());
    }
    if !opts.preserve_archive_mode {
        settings.push("archive_mode = 'off'".into());
    }
    if let Some(tl) = &opts.timeline {
        settings.push(format!("recovery_target_timeline = {}", quote_conf(tl)));
    }
    let auto = layout.to.join("postgresql.auto.conf");
    let mut text = layout
        .dest
        .read_whole(&auto)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# recovery settings written by recman restore of backup {}\n",
        m.backup_id
    ));
    for s in &settings {
        text.push_str(s);
        text.push('\n');
    }
    write("postgresql.auto.conf", &text)?;
    Ok(settings)
}
