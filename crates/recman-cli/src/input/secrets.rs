//! Passwords: warned about on the command line, and taken out of everything printed.

/// A password inside a connection string typed on the command line is visible to every user
/// of the host (`ps`) and stays in shell history: say so once, and where it belongs instead.
pub fn warn_password(what: &str, conninfo: &str) {
    if recman_command::model::conninfo_has_password(conninfo) {
        eprintln!(
            "recman: warning: the password in {what} is visible to other users of this host and kept in shell history; hint: put it in ~/.pgpass (mode 0600) or PGPASSWORD instead"
        );
    }
}

/// Takes passwords out of any text about to be printed: `password=VALUE` (quoted or not, any
/// case, spaces around `=`) and the password of a `scheme://user:password@host` URI. The last
/// guard for messages that quote what the user typed (a script line, a lowered command).
pub fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let lower = text.to_ascii_lowercase();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if lower[i..].starts_with("password") {
            let mut j = i + "password".len();
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' {
                j += 1;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                let end = value_end(b, j);
                out.push_str(&text[i..i + "password".len()]);
                out.push_str("=***");
                i = end;
                continue;
            }
        }
        if lower[i..].starts_with("://") {
            let start = i + 3;
            let mut end = start;
            while end < b.len() && !b" /?'\"\t\n".contains(&b[end]) {
                end += 1;
            }
            let auth = &text[start..end];
            if let Some(at) = auth.rfind('@')
                && let Some(colon) = auth[..at].find(':')
            {
                out.push_str("://");
                out.push_str(&auth[..colon]);
                out.push_str(":***");
                out.push_str(&auth[at..]);
                i = end;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Where a conninfo value starting at `j` ends: past its closing quote when quoted (or at the
/// end of the text when the quote is never closed), else at the next space, quote or `&`.
fn value_end(b: &[u8], j: usize) -> usize {
    // Inside a script's '...' string a quote is doubled: ''a b'' is the quoted value.
    if b[j..].starts_with(b"''") {
        let mut k = j + 2;
        while k < b.len() && !b[k..].starts_with(b"''") {
            k += 1;
        }
        return (k + 2).min(b.len());
    }
    if j < b.len() && b[j] == b'\'' {
        let mut k = j + 1;
        while k < b.len() {
            match b[k] {
                b'\\' => k += 2,
                b'\'' => return k + 1,
                _ => k += 1,
            }
        }
        return b.len();
    }
    let mut k = j;
    while k < b.len() && !b" '\"&\t\n".contains(&b[k]) {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_from_any_text() {
        for (text, secret) in [
            (
                "line 1: CONNECT TARGET 'host=h password = ''a b'' user=u';",
                "a b",
            ),
            (
                "recman backup database --standby host=h PASSWORD=s3cret",
                "s3cret",
            ),
            (
                "CONNECT TARGET \"postgresql://u:s3cret@h:5432/db\";",
                "s3cret",
            ),
            ("password='unterminated s3cret", "s3cret"),
            ("x?password=s3cret&host=h", "s3cret"),
        ] {
            let r = redact_secrets(text);
            assert!(!r.contains(secret), "{text} -> {r}");
        }
        let keep = "password authentication failed; hint: ~/.pgpass or PGPASSWORD";
        assert_eq!(redact_secrets(keep), keep);
        assert_eq!(redact_secrets("postgresql://u@h/db"), "postgresql://u@h/db");
    }
}
