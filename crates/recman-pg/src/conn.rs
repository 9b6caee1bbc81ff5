//! Resolving a connection the way libpq does: the connection string first, then the service
//! it names (PGSERVICE), then the PG* environment, then defaults; the password from the
//! password file when none was given. TLS is not implemented yet, so a setting that asks for
//! encryption is refused rather than quietly ignored.

use crate::PgError;
use crate::conninfo::{self, quote, redact};
use crate::pgfiles;
use postgres::config::Host;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A resolved connection target: the libpq-style settings plus a printable description that
/// never contains the password.
#[derive(Clone)]
pub struct ConnTarget {
    pub config: postgres::Config,
    pub display: String,
    /// The password file the password came from, for the hint when the server refuses it.
    pub password_file: Option<PathBuf>,
}

impl std::fmt::Debug for ConnTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// The environment variables libpq reads, and the keyword each stands for.
const ENV: &[(&str, &str)] = &[
    ("PGHOST", "host"),
    ("PGHOSTADDR", "hostaddr"),
    ("PGPORT", "port"),
    ("PGDATABASE", "dbname"),
    ("PGUSER", "user"),
    ("PGPASSWORD", "password"),
    ("PGPASSFILE", "passfile"),
    ("PGOPTIONS", "options"),
    ("PGAPPNAME", "application_name"),
    ("PGSSLMODE", "sslmode"),
    ("PGREQUIRESSL", "requiressl"),
    ("PGSSLROOTCERT", "sslrootcert"),
    ("PGSSLCERT", "sslcert"),
    ("PGSSLKEY", "sslkey"),
    ("PGGSSENCMODE", "gssencmode"),
    ("PGCONNECT_TIMEOUT", "connect_timeout"),
    ("PGTARGETSESSIONATTRS", "target_session_attrs"),
    ("PGCHANNELBINDING", "channel_binding"),
];

/// Keywords the `postgres` crate acts on, under its own name; libpq keywords not listed are
/// accepted and have no effect (client_encoding, sslcert, krbsrvname, ...).
const PASSED_ON: &[(&str, &str)] = &[
    ("host", "host"),
    ("hostaddr", "hostaddr"),
    ("port", "port"),
    ("user", "user"),
    ("password", "password"),
    ("dbname", "dbname"),
    ("options", "options"),
    ("application_name", "application_name"),
    ("tcp_user_timeout", "tcp_user_timeout"),
    ("keepalives", "keepalives"),
    ("keepalives_idle", "keepalives_idle"),
    ("keepalives_interval", "keepalives_interval"),
    ("keepalives_count", "keepalives_retries"),
    ("target_session_attrs", "target_session_attrs"),
    ("channel_binding", "channel_binding"),
    ("load_balance_hosts", "load_balance_hosts"),
];

/// recman waits this long for a server when connect_timeout is not set (libpq waits forever).
const DEFAULT_CONNECT_TIMEOUT: u64 = 10;

/// Builds the connection from `--target` and, for what it leaves out, the service file, the
/// PG* environment variables and libpq's password file, so that a DBA's usual setup works
/// unchanged. Empty environment variables count as unset.
pub fn resolve_conninfo(conninfo: Option<&str>) -> Result<ConnTarget, PgError> {
    resolve_with(conninfo, &|k| {
        std::env::var(k).ok().filter(|v| !v.is_empty())
    })
}

/// A setting and where it came from, for messages.
struct Setting {
    value: String,
    origin: String,
}

pub(crate) fn resolve_with(
    conninfo: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConnTarget, PgError> {
    let text = conninfo.unwrap_or("");
    let bad = |reason: String| PgError::BadConninfo {
        conninfo: redact(text),
        reason,
    };
    let mut s: BTreeMap<String, Setting> = BTreeMap::new();
    for (k, v) in conninfo::parse(text).map_err(|e| bad(e.reason))? {
        s.insert(
            k,
            Setting {
                value: v,
                origin: "the connection string".into(),
            },
        );
    }
    // An empty value is no value, as libpq treats most of them.
    s.retain(|_, v| !v.value.is_empty());
    let service = match s.get("service") {
        Some(v) => Some(v.value.clone()),
        None => env("PGSERVICE"),
    };
    if let Some(name) = service {
        for (k, v) in pgfiles::service(&name, env)? {
            s.entry(k).or_insert(Setting {
                value: v,
                origin: format!("service {name:?}"),
            });
        }
    }
    for (var, key) in ENV {
        if !s.contains_key(*key)
            && let Some(v) = env(var)
        {
            s.insert(
                key.to_string(),
                Setting {
                    value: v,
                    origin: var.to_string(),
                },
            );
        }
    }
    s.retain(|_, v| !v.value.is_empty());
    let get = |k: &str| s.get(k).map(|v| v.value.as_str());
    // Named with where it came from: a bad PGPORT is not the connection string's fault.
    if let Some(p) = s.get("port")
        && p.value.split(',').any(|x| x.trim().parse::<u16>().is_err())
    {
        return Err(bad(format!(
            "port {:?} (from {}) is not a port number (1 to 65535)",
            p.value, p.origin
        )));
    }

    let mut text_out = vec![("sslmode".to_string(), "disable".to_string())];
    for (ours, theirs) in PASSED_ON {
        if let Some(v) = get(ours) {
            text_out.push((theirs.to_string(), v.to_string()));
        }
    }
    if get("host").is_none() && get("hostaddr").is_none() {
        text_out.push(("host".into(), default_socket_dir()));
    }
    if get("user").is_none() {
        let user = env("USER").or_else(|| env("LOGNAME"));
        text_out.push(("user".into(), user.unwrap_or_else(|| "postgres".into())));
    }
    if get("dbname").is_none() {
        text_out.push(("dbname".into(), "postgres".into()));
    }
    if get("application_name").is_none() {
        let name = get("fallback_application_name").unwrap_or("recman");
        text_out.push(("application_name".into(), name.to_string()));
    }
    if let Some(secs) = connect_timeout(s.get("connect_timeout")).map_err(&bad)? {
        text_out.push(("connect_timeout".into(), secs.to_string()));
    }
    let built = text_out
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect::<Vec<_>>()
        .join(" ");
    let mut config: postgres::Config = built
        .parse()
        .map_err(|e: postgres::Error| bad(crate::session::error_text(&e)))?;
    let display = describe(&config);
    // As in libpq, TLS and GSSAPI encryption concern TCP only: traffic through a Unix socket
    // never leaves the host, and sslmode does not apply to it.
    let tcp = config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)))
        || !config.get_hostaddrs().is_empty();
    refuse_encryption(&s, &display, tcp)?;

    let mut password_file = None;
    if config.get_password().is_none() {
        let file = match get("passfile") {
            Some(f) => Some(PathBuf::from(f)),
            None => env("HOME").map(|h| Path::new(&h).join(".pgpass")),
        };
        if let Some(file) = file {
            let host = match config.get_hosts().first() {
                Some(Host::Tcp(h)) => h.clone(),
                Some(Host::Unix(p)) if is_default_socket_dir(p) => "localhost".into(),
                Some(Host::Unix(p)) => p.display().to_string(),
                None => config
                    .get_hostaddrs()
                    .first()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| "localhost".into()),
            };
            let port = config
                .get_ports()
                .first()
                .copied()
                .unwrap_or(5432)
                .to_string();
            let hit = pgfiles::pgpass_lookup(
                &file,
                &host,
                &port,
                config.get_dbname().unwrap_or(""),
                config.get_user().unwrap_or(""),
            );
            if let Some(hit) = hit {
                config.password(hit.password.as_bytes());
                password_file = Some(hit.file);
            }
        }
    }
    Ok(ConnTarget {
        config,
        display,
        password_file,
    })
}

/// libpq's connect_timeout: seconds, 0 or less waits forever, 1 counts as 2.
fn connect_timeout(v: Option<&Setting>) -> Result<Option<u64>, String> {
    let Some(v) = v else {
        return Ok(Some(DEFAULT_CONNECT_TIMEOUT));
    };
    let n: i64 = v.value.trim().parse().map_err(|_| {
        format!(
            "connect_timeout {:?} (from {}) is not a whole number of seconds",
            v.value, v.origin
        )
    })?;
    Ok(match n {
        ..=0 => None,
        1 => Some(2),
        n => Some(n as u64),
    })
}

/// Refuses every setting that asks for an encrypted connection over TCP: recman has no TLS
/// (nor GSSAPI encryption) yet, and connecting in plaintext instead would betray what was
/// asked for. The value of sslmode is checked in every case.
fn refuse_encryption(
    s: &BTreeMap<String, Setting>,
    target: &str,
    tcp: bool,
) -> Result<(), PgError> {
    let refuse = |setting: String, origin: &str| PgError::EncryptionUnavailable {
        target: target.to_string(),
        setting,
        origin: origin.to_string(),
    };
    match s.get("sslmode") {
        Some(m) => match m.value.as_str() {
            "disable" | "allow" | "prefer" => {}
            "require" | "verify-ca" | "verify-full" if tcp => {
                return Err(refuse(format!("sslmode={}", m.value), &m.origin));
            }
            "require" | "verify-ca" | "verify-full" => {}
            other => {
                return Err(PgError::BadConninfo {
                    conninfo: format!("sslmode={other}"),
                    reason: format!(
                        "invalid sslmode (from {}): expected disable, allow, prefer, require, verify-ca or verify-full",
                        m.origin
                    ),
                });
            }
        },
        None if !tcp => {}
        None => {
            if let Some(r) = s.get("requiressl").filter(|r| r.value == "1") {
                return Err(refuse("requiressl=1".into(), &r.origin));
            }
            // PostgreSQL 16's libpq: sslrootcert=system alone means verify-full.
            if let Some(r) = s.get("sslrootcert").filter(|r| r.value == "system") {
                return Err(refuse(
                    "sslrootcert=system (implies sslmode=verify-full)".into(),
                    &r.origin,
                ));
            }
        }
    }
    if let Some(g) = s.get("gssencmode").filter(|g| tcp && g.value == "require") {
        return Err(refuse("gssencmode=require".into(), &g.origin));
    }
    Ok(())
}

const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

fn default_socket_dir() -> String {
    // Debian and most packagers put the socket here rather than libpq's compiled-in /tmp.
    for d in SOCKET_DIRS {
        if Path::new(d).is_dir() {
            return d.to_string();
        }
    }
    "localhost".to_string()
}

/// libpq matches a connection through its default socket directory as host "localhost" in
/// the password file.
fn is_default_socket_dir(p: &Path) -> bool {
    SOCKET_DIRS.iter().any(|d| p == Path::new(d)) || p == Path::new("/run/postgresql")
}

fn describe(c: &postgres::Config) -> String {
    let mut hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(s) => s.clone(),
            Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        hosts = c.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    }
    let port = c.get_ports().first().copied().unwrap_or(5432);
    format!(
        "host={} port={} user={} dbname={}",
        hosts.join(","),
        port,
        c.get_user().unwrap_or("?"),
        c.get_dbname().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests;
