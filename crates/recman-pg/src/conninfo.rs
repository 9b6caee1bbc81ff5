//! libpq's connection strings, both forms: `key=value` pairs (values quoted with '...' and
//! backslash escapes) and `postgresql://` URIs. Parsed here rather than by the `postgres`
//! crate so that recman sees every keyword libpq knows (sslmode=verify-full, service,
//! passfile, ...) and can decide what it honours, refuses or ignores; and so that a password
//! can be taken out of any form before the text reaches a message.

/// Every keyword libpq (PostgreSQL 13 to 17) accepts in a connection string.
pub(crate) const KEYWORDS: &[&str] = &[
    "service",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "dbname",
    "host",
    "hostaddr",
    "port",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslcertmode",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "require_auth",
    "requiressl",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "gssdelegation",
    "krbsrvname",
    "gsslib",
    "replication",
    "target_session_attrs",
    "load_balance_hosts",
];

/// Why a connection string could not be read; the reason never quotes a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub reason: String,
}

fn fail<T>(reason: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        reason: reason.into(),
    })
}

/// The settings of a connection string, in the order given; a later repeat of a keyword wins
/// (as in libpq).
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, ParseError> {
    let t = text.trim_start();
    let pairs = if t.starts_with("postgresql://") || t.starts_with("postgres://") {
        parse_uri(t)?
    } else {
        parse_pairs(text)?
    };
    for (k, _) in &pairs {
        if !KEYWORDS.contains(&k.as_str()) {
            return fail(format!("invalid connection option {k:?}"));
        }
    }
    Ok(pairs)
}

fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, ParseError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return fail(format!("missing \"=\" after {key:?}"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return fail(format!("unterminated quoted value of {key:?}")),
                    Some('\'') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return fail(format!("unterminated quoted value of {key:?}")),
                    },
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        value.push(n);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

fn parse_uri(text: &str) -> Result<Vec<(String, String)>, ParseError> {
    let rest = text.split_once("://").map(|(_, r)| r).unwrap_or("");
    let mut out = Vec::new();
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match main.find('/') {
        Some(i) => (&main[..i], Some(&main[i + 1..])),
        None => (main, None),
    };
    let hostpart = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let (user, password) = match userinfo.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                out.push(("user".into(), decode(user)?));
            }
            if let Some(p) = password {
                out.push(("password".into(), decode(p)?));
            }
            hosts
        }
        None => authority,
    };
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    if !hostpart.is_empty() {
        for spec in hostpart.split(',') {
            let (host, port) = if let Some(inner) = spec.strip_prefix('[') {
                let Some((h, after)) = inner.split_once(']') else {
                    return fail("unterminated [ in the host part of the URI");
                };
                (h, after.strip_prefix(':'))
            } else {
                match spec.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (spec, None),
                }
            };
            hosts.push(decode(host)?);
            ports.push(port.map(decode).transpose()?.unwrap_or_default());
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            out.push(("host".into(), hosts.join(",")));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            out.push(("port".into(), ports.join(",")));
        }
    }
    if let Some(db) = path.filter(|p| !p.is_empty()) {
        out.push(("dbname".into(), decode(db)?));
    }
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            return fail(format!(
                "missing \"=\" in URI query parameter {:?}",
                decode(kv)?
            ));
        };
        let (k, v) = (decode(k)?, decode(v)?);
        // libpq's JDBC-compatible spelling.
        if k == "ssl" && v == "true" {
            out.push(("sslmode".into(), "require".into()));
        } else {
            out.push((k, v));
        }
    }
    Ok(out)
}

fn decode(s: &str) -> Result<String, ParseError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).filter(|h| h.len() == 2);
            let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return fail("invalid percent-encoding in the URI");
            };
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).or_else(|_| fail("percent-encoding in the URI is not UTF-8"))
}

/// Quotes a value for a `key=value` connection string.
pub(crate) fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('\'');
    for c in v.chars() {
        if c == '\'' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('\'');
    s
}

/// The connection string as it may be shown: parsed and written back as `key=value` pairs with
/// the password replaced by `***`. Text that does not parse is shown only when it cannot
/// hold a password (no "password" in it, no user information in a URI).
pub fn redact(text: &str) -> String {
    match parse(text) {
        Ok(pairs) => pairs
            .iter()
            .map(|(k, v)| {
                if k == "password" || k == "sslpassword" {
                    format!("{k}=***")
                } else if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c == '\'') {
                    format!("{k}={}", quote(v))
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) if may_hold_password(text) => "(withheld: it may hold a password)".to_string(),
        Err(_) => text.to_string(),
    }
}

fn may_hold_password(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("password") || (lower.contains("://") && lower.contains('@'))
}

/// Whether a connection string carries a password (so that it is visible in `ps` and shell
/// history when given on the command line).
pub fn has_password(text: &str) -> bool {
    match parse(text) {
        Ok(pairs) => pairs.iter().any(|(k, v)| k == "password" && !v.is_empty()),
        Err(_) => may_hold_password(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(p: &'a [(String, String)], k: &str) -> Option<&'a str> {
        p.iter()
            .rev()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn pairs_with_quotes_escapes_and_spaces() {
        let p = parse(r"host = /tmp  password = 'a b\'c' user=x\ y dbname=''").unwrap();
        assert_eq!(get(&p, "host"), Some("/tmp"));
        assert_eq!(get(&p, "password"), Some("a b'c"));
        assert_eq!(get(&p, "user"), Some("x y"));
        assert_eq!(get(&p, "dbname"), Some(""));
    }

    #[test]
    fn pair_errors() {
        assert!(parse("host").is_err());
        assert!(parse("password='abc").is_err());
        assert!(parse("bogus=1").unwrap_err().reason.contains("bogus"));
    }

    #[test]
    fn uris() {
        let p = parse(
            "postgresql://u%40x:p%3Aw@h1:5433,[::1]:5434/db%2F1?sslmode=require&application_name=a",
        )
        .unwrap();
        assert_eq!(get(&p, "user"), Some("u@x"));
        assert_eq!(get(&p, "password"), Some("p:w"));
        assert_eq!(get(&p, "host"), Some("h1,::1"));
        assert_eq!(get(&p, "port"), Some("5433,5434"));
        assert_eq!(get(&p, "dbname"), Some("db/1"));
        assert_eq!(get(&p, "sslmode"), Some("require"));
        let p = parse("postgres://%2Fvar%2Frun%2Fpostgresql/db").unwrap();
        assert_eq!(get(&p, "host"), Some("/var/run/postgresql"));
        let p = parse("postgresql:///db?host=/s&ssl=true").unwrap();
        assert_eq!(get(&p, "host"), Some("/s"));
        assert_eq!(get(&p, "sslmode"), Some("require"));
        assert!(parse("postgresql://h/db?nope=1").is_err());
    }

    #[test]
    fn redaction_in_every_form() {
        for (text, secret) in [
            ("host=h password = 'a b' user=u", "a b"),
            ("host=h password=x user=u", "password=x"),
            ("password=s3cret", "s3cret"),
            ("postgresql://u:pw42@h/db", "pw42"),
            ("postgresql://u@h/db?password=pw42", "pw42"),
            ("host=h password='unterminated secret", "secret"),
            ("postgresql://u:pw42@h/db?bad", "pw42"),
            ("host=h password=s3cret bogus", "s3cret"),
        ] {
            let r = redact(text);
            assert!(!r.contains(secret), "{text} -> {r}");
        }
        assert_eq!(redact("host=h  port=1"), "host=h port=1");
        assert_eq!(redact("host=h password=x"), "host=h password=***");
    }

    #[test]
    fn password_detection() {
        assert!(has_password("host=h password=x"));
        assert!(has_password("postgresql://u:x@h/db"));
        assert!(!has_password("postgresql://u@h/db"));
        assert!(!has_password("host=h user=u"));
    }
}
