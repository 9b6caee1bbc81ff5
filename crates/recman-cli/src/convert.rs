//! clap's parse converted into the command model. One `From` per subcommand: a CLI option
//! with no field in `recman_command` does not compile here, and the parity test in this
//! module checks that every subcommand of the clap tree has a conversion.

use crate::catalog_cmds as cc;
use crate::cli;
use recman_command as m;

impl From<cli::Command> for m::Command {
    fn from(c: cli::Command) -> Self {
        match c {
            cli::Command::Create { what } => what.into(),
            cli::Command::Key { what } => m::Command::Key(match what {
                cli::KeyWhat::Show => m::KeyWhat::Show,
                cli::KeyWhat::Rotate => m::KeyWhat::Rotate,
            }),
            cli::Command::Change {
                what:
                    cli::ChangeWhat::Backup {
                        which,
                        keep_forever,
                        keep_until,
                        nokeep,
                        unavailable,
                        available,
                    },
            } => m::Command::ChangeBackup(m::ChangeBackup {
                which,
                keep_forever,
                keep_until,
                nokeep,
                unavailable,
                available,
            }),
            cli::Command::Register {
                what: cli::RegisterWhat::Database { name, agent },
            } => m::Command::RegisterDatabase { name, agent },
            cli::Command::Backup { what } => what.into(),
            cli::Command::Restore { what } => what.into(),
            cli::Command::Drill(a) => m::Command::Drill(Box::new((*a).into())),
            cli::Command::Duplicate {
                what: crate::drill_args::DuplicateWhat::Database(a),
            } => m::Command::DuplicateDatabase(Box::new((*a).into())),
            cli::Command::Validate { what } => what.into(),
            cli::Command::Recover { what } => what.into(),
            cli::Command::List { what } => what.into(),
            c @ (cli::Command::ArchivePush { .. }
            | cli::Command::ArchiveGet { .. }
            | cli::Command::ArchivePushAhead { .. }
            | cli::Command::Receive { .. }
            | cli::Command::ArchivePrefetch { .. }) => wal_command(c),
            cli::Command::Configure { what } => m::Command::Configure(what.into()),
            cli::Command::Show { what } => m::Command::Show(what.into()),
            cli::Command::Report { what } => m::Command::Report(what.into()),
            cli::Command::Delete { what } => m::Command::Delete(what.into()),
            cli::Command::Crosscheck { what } => m::Command::Crosscheck(what.into()),
            cli::Command::Catalog { what } => m::Command::Catalog(what.into()),
            cli::Command::Run(a) => m::Command::Run {
                file: a.file,
                text: a.text,
            },
            cli::Command::Calibrate { json } => m::Command::Calibrate { json },
            cli::Command::Metrics => m::Command::Metrics,
            cli::Command::Check { json } => m::Command::Check { json },
            cli::Command::Failure { what } => m::Command::Failure(what.into()),
            cli::Command::Server {
                listen,
                allow,
                restore_dir,
                repo_host,
                metrics_listen,
                page_listen,
                page_token,
                page_allow,
                receive,
            } => m::Command::Server {
                listen,
                allow,
                restore_dir,
                repo_host,
                metrics_listen,
                page_listen,
                page_token,
                page_allow,
                receive,
            },
            cli::Command::Completions { shell } => m::Command::Completions {
                shell: shell.to_string(),
            },
            cli::Command::Man => m::Command::Man,
            cli::Command::Advise {
                window,
                json,
                apply,
            } => m::Command::Advise {
                window,
                json,
                apply,
            },
        }
    }
}

/// The WAL commands: those PostgreSQL calls (archive-push, archive-get), their background
/// helpers and the WAL receiver. Called with those five subcommands only.
fn wal_command(c: cli::Command) -> m::Command {
    match c {
        cli::Command::ArchivePush {
            path,
            compress,
            batch,
            parallel,
            repo_host,
        } => m::Command::ArchivePush(m::ArchivePush {
            path,
            compress,
            batch,
            parallel,
            repo_host,
        }),
        cli::Command::ArchiveGet {
            name,
            dest,
            prefetch,
            spool,
            with_recovery_target,
            repo_host,
        } => m::Command::ArchiveGet(m::ArchiveGet {
            name,
            dest,
            prefetch,
            spool,
            with_recovery_target,
            repo_host,
        }),
        cli::Command::ArchivePushAhead {
            wal_dir,
            after,
            compress,
            parallel,
        } => m::Command::ArchivePushAhead(m::ArchivePushAhead {
            wal_dir,
            after,
            compress,
            parallel,
        }),
        cli::Command::Receive {
            mode,
            slot,
            create_slot,
            flush_interval,
            application_name,
            compress,
        } => m::Command::Receive(m::Receive {
            mode,
            slot,
            create_slot,
            flush_interval_ms: flush_interval,
            application_name,
            compress,
        }),
        cli::Command::ArchivePrefetch {
            spool,
            after,
            count,
            parallel,
            spawned_at,
        } => m::Command::ArchivePrefetch(m::ArchivePrefetch {
            spool,
            after,
            count,
            parallel,
            spawned_at,
        }),
        other => unreachable!("not a WAL command: {other:?}"),
    }
}

impl From<cli::ValidateWhat> for m::Command {
    fn from(w: cli::ValidateWhat) -> Self {
        match w {
            cli::ValidateWhat::Database {
                channels,
                maxopenfiles,
                check_logical,
                io,
            } => m::Command::ValidateDatabase {
                channels,
                maxopenfiles,
                io: io.into(),
                check_logical,
            },
            cli::ValidateWhat::Backup { which, channels } => {
                m::Command::ValidateBackup { which, channels }
            }
        }
    }
}

impl From<cli::ListWhat> for m::Command {
    fn from(w: cli::ListWhat) -> Self {
        match w {
            cli::ListWhat::Backup {
                json,
                summary,
                by_file,
            } => m::Command::ListBackup {
                json,
                summary,
                by_file,
            },
            cli::ListWhat::Archivelog { json, .. } => m::Command::ListArchivelog { json },
            cli::ListWhat::Incarnation { json } => m::Command::ListIncarnation { json },
            cli::ListWhat::Copy { json } => m::Command::ListCopy { json },
            cli::ListWhat::Calibration { json } => m::Command::ListCalibration { json },
            cli::ListWhat::Drill { json } => m::Command::ListDrill { json },
        }
    }
}

impl From<cli::FailureWhat> for m::FailureWhat {
    fn from(w: cli::FailureWhat) -> Self {
        match w {
            cli::FailureWhat::List {
                ids,
                all,
                detail,
                json,
            } => m::FailureWhat::List(recman_command::failures::FailureList {
                all,
                ids,
                detail,
                json,
            }),
            cli::FailureWhat::Advise { ids, script, json } => {
                m::FailureWhat::Advise { ids, script, json }
            }
            cli::FailureWhat::Repair { preview, script } => {
                m::FailureWhat::Repair { preview, script }
            }
        }
    }
}

impl From<cli::CreateWhat> for m::Command {
    fn from(w: cli::CreateWhat) -> Self {
        match w {
            cli::CreateWhat::Catalog {
                encrypt,
                immutable,
                lock_mode,
                lock_days,
            } => m::Command::CreateCatalog {
                encrypt,
                immutable: immutable.then(|| cc::immutable::spec(lock_mode, lock_days)),
            },
            cli::CreateWhat::RestorePoint { name } => m::Command::CreateRestorePoint { name },
        }
    }
}

impl From<cli::RestoreWhat> for m::Command {
    fn from(w: cli::RestoreWhat) -> Self {
        match w {
            cli::RestoreWhat::Database(a) => m::Command::RestoreDatabase(Box::new((*a).into())),
            cli::RestoreWhat::Controlfile { from } => m::Command::RestoreControlfile { from },
        }
    }
}

impl From<cli::RecoverWhat> for m::Command {
    fn from(w: cli::RecoverWhat) -> Self {
        match w {
            cli::RecoverWhat::Copy { tag, until_time } => {
                m::Command::RecoverCopy { tag, until_time }
            }
            cli::RecoverWhat::Table {
                table,
                database,
                until_time,
                until_lsn,
                until_xid,
                remap_table,
                dump,
                auxiliary_dir,
                channels,
            } => m::Command::RecoverTable(Box::new(m::RecoverTable {
                table,
                database,
                until_time,
                until_lsn,
                until_xid,
                remap_table,
                dump,
                auxiliary_dir,
                channels,
            })),
            cli::RecoverWhat::Block {
                blocks,
                auxiliary_dir,
            } => m::Command::RecoverBlock {
                blocks,
                corruption_list: false,
                auxiliary_dir,
            },
            cli::RecoverWhat::CorruptionList { auxiliary_dir } => m::Command::RecoverBlock {
                blocks: Vec::new(),
                corruption_list: true,
                auxiliary_dir,
            },
        }
    }
}

impl From<cli::BackupWhat> for m::Command {
    fn from(w: cli::BackupWhat) -> Self {
        match w {
            cli::BackupWhat::Database(a) => m::Command::BackupDatabase(Box::new((*a).into())),
            cli::BackupWhat::Archivelog(a) => m::Command::BackupArchivelog(a.into()),
            cli::BackupWhat::SyntheticFull {
                from,
                tag,
                compress,
            } => m::Command::SyntheticFull {
                from,
                tag,
                compress,
            },
            cli::BackupWhat::Backupset { which, device_type } => {
                m::Command::BackupBackupset { which, device_type }
            }
            cli::BackupWhat::RecoveryArea { device_type } => {
                m::Command::BackupRecoveryArea { device_type }
            }
            cli::BackupWhat::Controlfile { format } => m::Command::BackupControlfile { format },
        }
    }
}

impl From<crate::io_args::IoArgs> for m::IoOptions {
    fn from(a: crate::io_args::IoArgs) -> Self {
        m::IoOptions {
            io_mode: a.io_mode,
            io_slaves: a.io_slaves,
            input_buffers: a.input_buffers,
            input_buffer_size: a.input_buffer_size,
            blksize: a.blksize,
            output_buffers: a.output_buffers,
            rate: a.rate,
            buffered_reads: a.buffered_reads,
            direct_reads: a.direct_reads,
        }
    }
}

impl From<cli::BackupArgs> for m::BackupDatabase {
    fn from(a: cli::BackupArgs) -> Self {
        m::BackupDatabase {
            channels: a.channels,
            filesperset: a.filesperset,
            maxopenfiles: a.maxopenfiles,
            compress: a.compress,
            tag: a.tag,
            maxcorrupt: a.maxcorrupt,
            force: a.force,
            standby: a.standby,
            standby_agent: a.standby_agent,
            device_type: a.device_type,
            archive_timeout: a.archive_timeout,
            plus_archivelog: a.plus_archivelog,
            section_size: a.section_size,
            incremental_level: a.incremental_level,
            cumulative: a.cumulative,
            as_copy: a.as_copy,
            for_recover_of_copy: a.for_recover_of_copy,
            format: a.format,
            io: a.io.into(),
            keep_forever: a.keep_forever,
            keep_until: a.keep_until,
            duration: a.window.duration,
            partial: a.window.partial,
            minimize: if a.window.minimize_load {
                Some("load".into())
            } else if a.window.minimize_time {
                Some("time".into())
            } else {
                None
            },
            not_backed_up_since: a.window.not_backed_up_since,
            tune: a.window.tune,
            check_logical: a.check_logical,
            maxsetsize: a.maxsetsize,
            table: a.table.0,
            copies: a.copies,
            copy_format: a.copy_format,
        }
    }
}

impl From<cc::ArchivelogBackupArgs> for m::BackupArchivelog {
    fn from(a: cc::ArchivelogBackupArgs) -> Self {
        m::BackupArchivelog {
            which: a.which,
            not_backed_up: a.not_backed_up,
            delete_input: a.delete_input,
            compress: a.compress,
            filesperset: a.filesperset,
            tag: a.tag,
            format: a.format,
        }
    }
}

impl From<cli::RestoreArgs> for m::RestoreDatabase {
    fn from(a: cli::RestoreArgs) -> Self {
        m::RestoreDatabase {
            to: a.to,
            preview: a.preview,
            validate: a.validate,
            json: a.json,
            allow_wal_gap: a.allow_wal_gap,
            force: a.force,
            write_mode: a.write_mode,
            until_time: a.until_time,
            until_lsn: a.until_lsn,
            until_xid: a.until_xid,
            until_restore_point: a.until_restore_point,
            from_tag: a.from_tag,
            channels: a.channels,
            tablespace_map: a.tablespace_map,
            archive_mode: a.archive_mode,
            from_copy: a.from_copy,
            switch_to_copy: a.switch_to_copy,
            timeline: a.timeline,
            include_db: a.include_db,
        }
    }
}

impl From<cc::ConfigureWhat> for m::ConfigureWhat {
    fn from(w: cc::ConfigureWhat) -> Self {
        use cc::ConfigureWhat as C;
        match w {
            C::RetentionPolicy { value } => m::ConfigureWhat::RetentionPolicy { value },
            C::Channels { value } => m::ConfigureWhat::Channels { value },
            C::Compression { value } => m::ConfigureWhat::Compression { value },
            C::Filesperset { value } => m::ConfigureWhat::Filesperset { value },
            C::Maxopenfiles { value } => m::ConfigureWhat::Maxopenfiles { value },
            C::SectionSize { value } => m::ConfigureWhat::SectionSize { value },
            C::BackupOptimization { value } => m::ConfigureWhat::BackupOptimization { value },
            C::Tuning { value } => m::ConfigureWhat::Tuning { value },
            C::ImportedRetention { value } => m::ConfigureWhat::ImportedRetention { value },
            C::RpoTarget { value } => m::ConfigureWhat::RpoTarget { value },
            C::RtoTarget { value } => m::ConfigureWhat::Named {
                name: "rto-target",
                value,
            },
            C::DrillInterval { value } => m::ConfigureWhat::Named {
                name: "drill-interval",
                value,
            },
            C::SlotRetentionLimit { value } => m::ConfigureWhat::Named {
                name: "slot-retention-limit",
                value,
            },
            C::RepositoryMinFree { value } => m::ConfigureWhat::Named {
                name: "repository-min-free",
                value,
            },
            C::RepositoryLockLimit { value } => m::ConfigureWhat::Named {
                name: "repository-lock-limit",
                value,
            },
            C::CertificateExpiryWarning { value } => m::ConfigureWhat::Named {
                name: "certificate-expiry-warning",
                value,
            },
            C::BackupWindow { value } => m::ConfigureWhat::Named {
                name: "backup-window",
                value,
            },
            C::BackupCopies { value } => m::ConfigureWhat::BackupCopies { value },
            C::ArchivelogDeletionPolicy { value } => {
                m::ConfigureWhat::ArchivelogDeletionPolicy { value }
            }
            C::IncrementalForever { value } => m::ConfigureWhat::IncrementalForever { value },
            C::DeviceType { device, value } => m::ConfigureWhat::DeviceType { device, value },
            C::DefaultDeviceType { value } => m::ConfigureWhat::DefaultDeviceType { value },
            C::Table(t) => m::ConfigureWhat::Named {
                name: t.name,
                value: t.value,
            },
        }
    }
}

impl From<cc::ShowWhat> for m::ShowWhat {
    fn from(w: cc::ShowWhat) -> Self {
        match w {
            cc::ShowWhat::All { json, rman } => m::ShowWhat::All { json, rman },
        }
    }
}

impl From<cc::PolicyOverride> for m::PolicyOverride {
    fn from(p: cc::PolicyOverride) -> Self {
        m::PolicyOverride {
            redundancy: p.redundancy,
            recovery_window: p.recovery_window,
        }
    }
}

impl From<cc::ReportWhat> for m::ReportWhat {
    fn from(w: cc::ReportWhat) -> Self {
        use cc::ReportWhat as R;
        match w {
            R::Schema { json } => m::ReportWhat::Schema { json },
            R::Unrecoverable { json } => m::ReportWhat::Unrecoverable { json },
            R::Io {
                which,
                json,
                all,
                plot,
                html,
            } => m::ReportWhat::Io {
                which,
                json,
                all,
                plot,
                html,
            },
            R::Rpo { json } => m::ReportWhat::Rpo { json },
            R::Repositories { json } => m::ReportWhat::Repositories { json },
            R::Slo { json } => m::ReportWhat::Slo { json },
            R::Costs { json } => m::ReportWhat::Costs { json },
            R::Fleet { html } => m::ReportWhat::Fleet { html },
            R::Obsolete { policy, json } => m::ReportWhat::Obsolete {
                policy: policy.into(),
                json,
            },
            R::NeedBackup {
                redundancy,
                days,
                drill_days,
            } => m::ReportWhat::NeedBackup {
                redundancy,
                days,
                drill_days,
            },
        }
    }
}

impl From<cc::DeleteWhat> for m::DeleteWhat {
    fn from(w: cc::DeleteWhat) -> Self {
        use cc::DeleteWhat as D;
        match w {
            D::Obsolete { policy, noprompt } => m::DeleteWhat::Obsolete {
                policy: policy.into(),
                noprompt,
            },
            D::Expired { noprompt } => m::DeleteWhat::Expired { noprompt },
            D::Backup { which, noprompt } => m::DeleteWhat::Backup { which, noprompt },
            D::Archivelog {
                which,
                backed_up,
                noprompt,
            } => m::DeleteWhat::Archivelog {
                which,
                backed_up,
                noprompt,
            },
        }
    }
}

impl From<cc::CrosscheckWhat> for m::CrosscheckWhat {
    fn from(w: cc::CrosscheckWhat) -> Self {
        match w {
            cc::CrosscheckWhat::Backup { verify } => m::CrosscheckWhat::Backup { verify },
            cc::CrosscheckWhat::Archivelog { which, verify } => {
                m::CrosscheckWhat::Archivelog { which, verify }
            }
        }
    }
}

impl From<cc::CatalogWhat> for m::CatalogWhat {
    fn from(w: cc::CatalogWhat) -> Self {
        match w {
            cc::CatalogWhat::StartWith { path } => m::CatalogWhat::StartWith { path },
            cc::CatalogWhat::Import {
                location,
                stanza,
                pgbackrest_config,
                copy,
            } => m::CatalogWhat::Import {
                location,
                stanza,
                pgbackrest_config,
                copy,
            },
        }
    }
}

#[cfg(test)]
mod parity;
