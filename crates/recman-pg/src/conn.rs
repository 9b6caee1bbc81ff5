//! Resolving a connection the way libpq does: the connection string first, then the service
//! it names (PGSERVICE), then the PG* environment, then defaults; the password from the
//! password file when none was given. sslmode and its companions decide TLS (see tls.rs); a
//! setting recman cannot honour (GSSAPI encryption) is refused rather than quietly ignored.

use crate::conninfo::{self, quote, redact};
use crate::error::ConnectCause;
use crate::error::PgError;
use crate::pgfiles;
use crate::tls::{Connector, Roots, TlsSettings, Verify, default_dir};
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
    pub tls: TlsSettings,
}

impl ConnTarget {
    /// Connects with `config` (this target's, or a copy naming another database) and this
    /// target's TLS settings.
    pub fn client(&self, config: &postgres::Config) -> Result<postgres::Client, PgError> {
        let connector = Connector {
            config: self.tls.client_config(&self.display)?,
            checked: self.tls.described.clone(),
        };
        config.connect(connector).map_err(|e| {
            let mut reason = crate::error::error_text(&e);
            // libpq says the same: a stale password file line is a common cause.
            if let Some(f) = &self.password_file {
                reason.push_str(&format!(" (the password came from {})", f.display()));
            }
            PgError::Connect {
                target: self.display.clone(),
                reason,
                sqlstate: crate::error::sqlstate(&e),
                cause: connect_cause(&e, config),
            }
        })
    }
}

/// What the client saw of a failed connect. A handshake's failure is typed in the error's
/// chain. The driver refuses a server's request for a password that the settings do not hold
/// before any SQLSTATE or I/O error exists, which no other failure of a connect does.
fn connect_cause(e: &postgres::Error, config: &postgres::Config) -> ConnectCause {
    if let Some(c) = crate::tls::cause_in(e) {
        return c;
    }
    let mut io = false;
    let mut at = std::error::Error::source(e);
    while let Some(err) = at {
        io |= err.is::<std::io::Error>();
        at = err.source();
    }
    if config.get_password().is_none() && e.code().is_none() && !io && !e.is_closed() {
        ConnectCause::NoPassword
    } else {
        ConnectCause::Server
    }
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

/// Keywords the `postgres` crate acts on, under its own name; the ssl* ones go to tls.rs;
/// libpq keywords not listed are accepted and have no effect (client_encoding, krbsrvname, ...).
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
    let s = settings(text, env, &bad)?;
    let built = libpq_text(&s, env, &bad)?;
    let mut config: postgres::Config = built
        .parse()
        .map_err(|e: postgres::Error| bad(crate::error::error_text(&e)))?;
    let display = describe(&config);
    // As in libpq, TLS and GSSAPI encryption concern TCP only: traffic through a Unix socket
    // never leaves the host, and sslmode does not apply to it.
    let tcp = config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)))
        || !config.get_hostaddrs().is_empty();
    let (mode, tls) = tls_settings(&s, &display, tcp)?;
    config.ssl_mode(mode);

    let mut password_file = None;
    if config.get_password().is_none() {
        let file = match s.get("passfile") {
            Some(f) => Some(PathBuf::from(&f.value)),
            None => env("HOME").map(|h| Path::new(&h).join(".pgpass")),
        };
        if let Some(file) = file {
            password_file = password_from_file(&mut config, &file);
        }
    }
    Ok(ConnTarget {
        config,
        display,
        password_file,
        tls,
    })
}

/// Every setting with where it came from: the connection string first, then the service it
/// names (or PGSERVICE), then the PG* environment; empty values count as unset.
fn settings(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    bad: &dyn Fn(String) -> PgError,
) -> Result<BTreeMap<String, Setting>, PgError> {
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
    // Named with where it came from: a bad PGPORT is not the connection string's fault.
    if let Some(p) = s.get("port")
        && p.value.split(',').any(|x| x.trim().parse::<u16>().is_err())
    {
        return Err(bad(format!(
            "port {:?} (from {}) is not a port number (1 to 65535)",
            p.value, p.origin
        )));
    }
    Ok(s)
}

/// The connection string handed to the driver: the settings it understands, with recman's
/// defaults for what none of the sources gave.
fn libpq_text(
    s: &BTreeMap<String, Setting>,
    env: &dyn Fn(&str) -> Option<String>,
    bad: &dyn Fn(String) -> PgError,
) -> Result<String, PgError> {
    let get = |k: &str| s.get(k).map(|v| v.value.as_str());
    let mut text_out = vec![];
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
    if let Some(secs) = connect_timeout(s.get("connect_timeout")).map_err(bad)? {
        text_out.push(("connect_timeout".into(), secs.to_string()));
    }
    Ok(text_out
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Sets the password from libpq's password file when a line matches the first host, port,
/// database and user, as libpq does; returns the file that held it.
fn password_from_file(config: &mut postgres::Config, file: &Path) -> Option<PathBuf> {
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
        file,
        &host,
        &port,
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    )?;
    config.password(hit.password.as_bytes());
    Some(hit.file)
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

/// libpq's TLS rules: sslmode (prefer when unset; requiressl=1 means require, and
/// sslrootcert=system alone means verify-full), checked on TCP only. require checks the chain
/// when a root certificate file is given or ~/.postgresql/root.crt exists, as libpq does.
/// GSSAPI encryption is refused: recman has none, and plaintext instead would betray the ask.
fn tls_settings(
    s: &BTreeMap<String, Setting>,
    target: &str,
    tcp: bool,
) -> Result<(postgres::config::SslMode, TlsSettings), PgError> {
    use postgres::config::SslMode as M;
    if let Some(g) = s.get("gssencmode").filter(|g| tcp && g.value == "require") {
        return Err(PgError::EncryptionUnavailable {
            target: target.to_string(),
            setting: "gssencmode=require".into(),
            origin: g.origin.clone(),
        });
    }
    let rootcert = s.get("sslrootcert");
    let (mode, origin) = match s.get("sslmode") {
        Some(m) => (m.value.clone(), m.origin.clone()),
        None => match (s.get("requiressl").filter(|r| r.value == "1"), rootcert) {
            (Some(r), _) => ("require".to_string(), r.origin.clone()),
            (None, Some(r)) if r.value == "system" => ("verify-full".to_string(), r.origin.clone()),
            _ => ("prefer".to_string(), "the default".to_string()),
        },
    };
    let roots = match rootcert {
        Some(r) if r.value == "system" => Some(Roots::System),
        Some(r) => Some(Roots::File(PathBuf::from(&r.value))),
        None => default_dir()
            .map(|d| d.join("root.crt"))
            .filter(|p| p.is_file())
            .map(Roots::File),
    };
    let (ssl, verify) = match mode.as_str() {
        "disable" | "allow" => (M::Disable, Verify::Nothing),
        "prefer" | "require" => (
            if mode == "prefer" {
                M::Prefer
            } else {
                M::Require
            },
            if roots.is_some() {
                Verify::Chain
            } else {
                Verify::Nothing
            },
        ),
        "verify-ca" => (M::Require, Verify::Chain),
        "verify-full" => (M::Require, Verify::ChainAndName),
        other => {
            return Err(PgError::BadConninfo {
                conninfo: format!("sslmode={other}"),
                reason: format!(
                    "invalid sslmode (from {origin}): expected disable, allow, prefer, require, verify-ca or verify-full"
                ),
            });
        }
    };
    let ssl = if tcp { ssl } else { M::Disable };
    let file_or_default = |key: &str, name: &str| {
        s.get(key)
            .map(|v| PathBuf::from(&v.value))
            .or_else(|| default_dir().map(|d| d.join(name)))
    };
    // A client certificate is offered only when its file exists, as libpq does.
    let client = match (
        file_or_default("sslcert", "postgresql.crt"),
        file_or_default("sslkey", "postgresql.key"),
    ) {
        (Some(c), Some(k)) if c.is_file() || s.contains_key("sslcert") => Some((c, k)),
        _ => None,
    };
    let described = match (&roots, verify) {
        (Some(Roots::File(f)), Verify::Chain | Verify::ChainAndName) => {
            format!("sslmode={mode} (from {origin}), CAs from {}", f.display())
        }
        (Some(Roots::System), Verify::Chain | Verify::ChainAndName) => {
            format!("sslmode={mode} (from {origin}), the system's CAs")
        }
        _ => format!("sslmode={mode} (from {origin})"),
    };
    Ok((
        ssl,
        TlsSettings {
            verify,
            roots,
            client,
            described,
        },
    ))
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
