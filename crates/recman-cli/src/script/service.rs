//! Oracle's net service names in CONNECT strings (`/@instance1`, `sys/pw@prod`): the
//! PostgreSQL counterpart of a TNS alias is a service of pg_service.conf, resolved as libpq
//! does (PGSERVICEFILE, ~/.pg_service.conf, PGSYSCONFDIR).

use anyhow::Result;

/// `/@name` and `user/password@name` become `service=name` (a password there is dropped:
/// the service and ~/.pgpass carry the credentials); anything else is a conninfo as written.
pub(crate) fn alias(s: &str) -> String {
    let t = s.trim();
    if let Some((creds, name)) = t.rsplit_once('@')
        && !name.is_empty()
        && !name.contains(['=', ' ', '/', ':'])
        && (creds.is_empty() || creds.starts_with('/') || creds.contains('/'))
    {
        return format!("service={name}");
    }
    t.to_string()
}

/// Whether conninfo `other` reaches the same server (hosts and ports) as the target `target`.
pub(crate) fn same_server(target: Option<&str>, other: &str) -> Result<bool> {
    Ok(recman_command::target_sql::same_server(target, other)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases() {
        assert_eq!(alias("/@instance1"), "service=instance1");
        assert_eq!(alias("sys/secret@prod"), "service=prod");
        assert_eq!(alias("service=x"), "service=x");
        assert_eq!(alias("host=/tmp port=5432"), "host=/tmp port=5432");
        assert_eq!(
            alias("postgresql://u@h:5/db"),
            "postgresql://u@h:5/db",
            "a URI is a conninfo"
        );
    }
}
