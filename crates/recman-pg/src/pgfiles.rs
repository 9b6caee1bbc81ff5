//! libpq's two side files: the connection service file (`pg_service.conf`) and the password
//! file (`.pgpass`), read with libpq's rules so that a DBA's existing files work unchanged.

use crate::conninfo::KEYWORDS;
use crate::error::PgError;
use std::path::{Path, PathBuf};

/// The settings of service `name`: from PGSERVICEFILE (else ~/.pg_service.conf) first, then
/// from PGSYSCONFDIR's pg_service.conf. A file that does not exist is skipped, as in libpq; a
/// service found in neither is an error.
pub(crate) fn service(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, PgError> {
    let user_file = env("PGSERVICEFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pg_service.conf")));
    let sys_dir = env("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.to_string());
    let sys_file = Path::new(&sys_dir).join("pg_service.conf");
    let mut looked = Vec::new();
    for file in user_file.into_iter().chain([sys_file]) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            looked.push(file.display().to_string());
            continue;
        };
        if let Some(found) = service_in(&text, name, &file)? {
            return Ok(found);
        }
        looked.push(file.display().to_string());
    }
    Err(PgError::Service {
        name: name.to_string(),
        reason: format!("no [{name}] section in {}", looked.join(" or ")),
    })
}

/// Debian's libpq is built with this sysconfdir.
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The `key=value` lines of section `[name]`, or None when the file has no such section.
fn service_in(
    text: &str,
    name: &str,
    file: &Path,
) -> Result<Option<Vec<(String, String)>>, PgError> {
    let mut found: Option<Vec<(String, String)>> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            if section.strip_suffix(']') == Some(name) {
                found = Some(Vec::new());
            }
            continue;
        }
        let Some(settings) = found.as_mut() else {
            continue;
        };
        let bad = |reason: &str| PgError::ServiceFile {
            path: file.to_path_buf(),
            line: i + 1,
            reason: reason.to_string(),
        };
        let Some((k, v)) = line.split_once('=') else {
            return Err(bad("expected key=value"));
        };
        let k = k.trim();
        if k == "service" {
            return Err(bad("nested service specifications are not supported"));
        }
        if !KEYWORDS.contains(&k) {
            return Err(bad(&format!("unknown connection option {k:?}")));
        }
        settings.push((k.to_string(), v.trim().to_string()));
    }
    Ok(found)
}

/// Where the password came from, for the hint when the server refuses it.
#[derive(Clone, Debug)]
pub(crate) struct PassfileHit {
    pub password: String,
    pub file: PathBuf,
}

/// The password of the first line of the password file matching host, port, database and
/// user, each field either equal or `*`. Like libpq, a file that is not a plain file or that
/// group or others can read is skipped with a warning.
pub(crate) fn pgpass_lookup(
    file: &Path,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
) -> Option<PassfileHit> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        eprintln!(
            "recman: warning: password file {} is not a plain file; it is ignored",
            file.display()
        );
        return None;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "recman: warning: password file {} has group or world access and is ignored; hint: chmod 0600 it",
                file.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    pgpass_match(&text, host, port, dbname, user).map(|password| PassfileHit {
        password,
        file: file.to_path_buf(),
    })
}

pub(crate) fn pgpass_match(
    text: &str,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        let mut ok = true;
        for want in [host, port, dbname, user] {
            match field_matches(rest, want) {
                Some(r) => rest = r,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        // The password runs to the next unescaped colon; a backslash escapes the next char.
        let mut pw = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                ':' => break,
                '\\' => match chars.next() {
                    Some(n) => pw.push(n),
                    None => pw.push('\\'),
                },
                c => pw.push(c),
            }
        }
        return Some(pw);
    }
    None
}

/// Matches one field (`*`, or the value with `\:` and `\\` escapes) against `want`; returns
/// the text after the field's colon.
fn field_matches<'a>(field: &'a str, want: &str) -> Option<&'a str> {
    if let Some(rest) = field.strip_prefix("*:") {
        return Some(rest);
    }
    let mut got = String::new();
    let mut it = field.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '\\' => got.push(it.next()?.1),
            ':' => return (got == want).then(|| &field[i + 1..]),
            c => got.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_rules() {
        let text = "# comment\n\
                    other:5432:*:u:wrong\n\
                    localhost:5432:db:u:first\\:pw\\\\x:ignored\n\
                    *:*:*:u:second\n\
                    h\\:6:*:*:*:esc\n";
        assert_eq!(
            pgpass_match(text, "localhost", "5432", "db", "u").as_deref(),
            Some("first:pw\\x")
        );
        assert_eq!(
            pgpass_match(text, "localhost", "5433", "db", "u").as_deref(),
            Some("second")
        );
        assert_eq!(
            pgpass_match(text, "h:6", "1", "d", "v").as_deref(),
            Some("esc")
        );
        assert_eq!(pgpass_match(text, "x", "1", "d", "v"), None);
        // A line with fewer than five fields matches nothing.
        assert_eq!(pgpass_match("a:b:c\n", "a", "b", "c", "d"), None);
    }

    #[test]
    fn pgpass_mode_is_checked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("recman-pgpass-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("pgpass");
        std::fs::write(&f, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(pgpass_lookup(&f, "h", "1", "d", "u").is_none());
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            pgpass_lookup(&f, "h", "1", "d", "u").unwrap().password,
            "pw"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn service_sections() {
        let text =
            "# c\n[a]\nhost=/x\n port = 7 \n[b]\nhost=/y\n[bad]\nservice=a\n[bad2]\nnope=1\n";
        let f = Path::new("svc");
        let a = service_in(text, "a", f).unwrap().unwrap();
        assert_eq!(
            a,
            vec![
                ("host".to_string(), "/x".to_string()),
                ("port".to_string(), "7".to_string())
            ]
        );
        assert!(service_in(text, "c", f).unwrap().is_none());
        assert!(service_in(text, "bad", f).is_err());
        let e = service_in(text, "bad2", f).unwrap_err().to_string();
        assert!(e.contains("line 10") && e.contains("nope"), "{e}");
    }

    #[test]
    fn service_search_order() {
        let dir = std::env::temp_dir().join(format!("recman-svc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sys")).unwrap();
        std::fs::write(dir.join("user.conf"), "[a]\nport=1\n").unwrap();
        std::fs::write(
            dir.join("sys/pg_service.conf"),
            "[a]\nport=2\n[b]\nport=3\n",
        )
        .unwrap();
        let d = dir.clone();
        let env = move |k: &str| match k {
            "PGSERVICEFILE" => Some(d.join("user.conf").display().to_string()),
            "PGSYSCONFDIR" => Some(d.join("sys").display().to_string()),
            _ => None,
        };
        assert_eq!(service("a", &env).unwrap()[0].1, "1");
        assert_eq!(service("b", &env).unwrap()[0].1, "3");
        let e = service("c", &env).unwrap_err().to_string();
        assert!(e.contains("\"c\"") && e.contains("hint"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
