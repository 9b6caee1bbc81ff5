use crate::PgError;
use postgres::config::Host;
use std::time::Duration;

/// A resolved connection target: the libpq-style settings plus a printable description that
/// never contains the password.
#[derive(Clone)]
pub struct ConnTarget {
    pub config: postgres::Config,
    pub display: String,
}

impl std::fmt::Debug for ConnTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// Builds the connection from `--target` and, for what it leaves out, the standard libpq
/// variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD), then libpq's own defaults, so
/// that a DBA's usual environment works unchanged.
pub fn resolve_conninfo(conninfo: Option<&str>) -> Result<ConnTarget, PgError> {
    let text = conninfo.unwrap_or("");
    let mut config: postgres::Config = if text.trim().is_empty() {
        postgres::Config::new()
    } else {
        text.parse()
            .map_err(|e: postgres::Error| PgError::BadConninfo {
                conninfo: redact(text),
                reason: e.to_string(),
            })?
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        let hosts = env("PGHOST").unwrap_or_else(default_socket_dir);
        for h in hosts.split(',') {
            config.host(h);
        }
    }
    if config.get_ports().is_empty()
        && let Some(p) = env("PGPORT")
    {
        let port = p.parse().map_err(|_| PgError::BadConninfo {
            conninfo: format!("PGPORT={p}"),
            reason: "not a port number".into(),
        })?;
        config.port(port);
    }
    if config.get_user().is_none() {
        config.user(&env("PGUSER").unwrap_or_else(os_user));
    }
    if config.get_dbname().is_none() {
        config.dbname(&env("PGDATABASE").unwrap_or_else(|| "postgres".into()));
    }
    if config.get_password().is_none()
        && let Some(p) = env("PGPASSWORD")
    {
        config.password(&p);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    config.application_name("recman");
    let display = describe(&config);
    Ok(ConnTarget { config, display })
}

fn default_socket_dir() -> String {
    // Debian and most packagers put the socket here rather than libpq's compiled-in /tmp.
    for d in ["/var/run/postgresql", "/tmp"] {
        if std::path::Path::new(d).is_dir() {
            return d.to_string();
        }
    }
    "localhost".to_string()
}

fn os_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "postgres".to_string())
}

fn describe(c: &postgres::Config) -> String {
    let hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(s) => s.clone(),
            Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let port = c.get_ports().first().copied().unwrap_or(5432);
    format!(
        "host={} port={} user={} dbname={}",
        hosts.join(","),
        port,
        c.get_user().unwrap_or("?"),
        c.get_dbname().unwrap_or("?")
    )
}

/// Removes a password from a connection string before it can reach an error message.
fn redact(text: &str) -> String {
    let mut out = Vec::new();
    for part in text.split_whitespace() {
        if part.starts_with("password=") {
            out.push("password=***".to_string());
        } else if part.contains("://") && part.contains('@') {
            out.push("<url with credentials>".to_string());
        } else {
            out.push(part.to_string());
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_settings_win_and_password_is_hidden() {
        let t = resolve_conninfo(Some(
            "host=/tmp/x port=6000 user=bob dbname=d password=s3cret",
        ))
        .unwrap();
        assert_eq!(t.display, "host=/tmp/x port=6000 user=bob dbname=d");
        assert!(!format!("{t:?}").contains("s3cret"));
    }

    #[test]
    fn bad_conninfo_is_redacted() {
        let e = resolve_conninfo(Some("host=x password=s3cret bogus"))
            .err()
            .unwrap();
        let msg = e.to_string();
        assert!(!msg.contains("s3cret"), "{msg}");
        assert!(msg.contains("hint"), "{msg}");
    }
}
