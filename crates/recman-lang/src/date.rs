//! Date strings: `SYSDATE [± n[/m]]`, `TO_DATE('value','format')` and timestamp literals.
//! Oracle evaluates them on the target; recman evaluates them on the client when a statement
//! runs (`SYSDATE` is the time the statement starts).

use crate::ast_terms::DateExpr;

/// Parses the text of a date string. The error is a message without position.
pub fn parse_date(s: &str) -> Result<DateExpr, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    if let Some(rest) = upper.strip_prefix("SYSDATE") {
        return sysdate(rest.trim(), s);
    }
    if upper.starts_with("TO_DATE") {
        return to_date(t).ok_or_else(|| {
            format!(
                "date {s:?} is not TO_DATE('value', 'format'); hint: e.g. TO_DATE('2026-01-01 10:00','YYYY-MM-DD HH24:MI')"
            )
        });
    }
    if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "date {s:?} is not understood; hint: write 'SYSDATE-1', 'SYSDATE-1/24', a timestamp such as '2026-11-21 14:30:00', or TO_DATE('…','…')"
        ));
    }
    Ok(DateExpr::Literal(t.to_string()))
}

fn sysdate(rest: &str, orig: &str) -> Result<DateExpr, String> {
    let bad = || {
        format!(
            "date {orig:?}: after SYSDATE only '+ n' or '- n' days (n may be a fraction such as 1/24) may follow"
        )
    };
    if rest.is_empty() {
        return Ok(DateExpr::Sysdate {
            sign: 0,
            num: 0,
            den: 1,
        });
    }
    let (sign, body) = match rest.chars().next() {
        Some('-') => (-1, &rest[1..]),
        Some('+') => (1, &rest[1..]),
        _ => return Err(bad()),
    };
    let body: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let (n, d) = match body.split_once('/') {
        Some((n, d)) => (n.to_string(), d.to_string()),
        None => (body.clone(), "1".to_string()),
    };
    let num: u64 = n.parse().map_err(|_| bad())?;
    let den: u64 = d.parse().map_err(|_| bad())?;
    if den == 0 {
        return Err(format!("date {orig:?} divides by zero"));
    }
    Ok(DateExpr::Sysdate { sign, num, den })
}

/// `TO_DATE('v','f')` with either quote style inside.
fn to_date(t: &str) -> Option<DateExpr> {
    let inner = t[7..].trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut parts = Vec::new();
    let mut rest = inner.trim();
    for i in 0..2 {
        let q = rest.chars().next()?;
        if q != '\'' && q != '"' {
            return None;
        }
        let end = rest[1..].find(q)? + 1;
        parts.push(rest[1..end].to_string());
        rest = rest[end + 1..].trim();
        if i == 0 {
            rest = rest.strip_prefix(',')?.trim();
        }
    }
    if !rest.is_empty() {
        return None;
    }
    Some(DateExpr::ToDate {
        value: parts[0].clone(),
        format: parts[1].clone(),
    })
}

/// Whether `s` is an LSN as PostgreSQL writes it: hex, `/`, hex.
pub fn is_lsn(s: &str) -> bool {
    match s.split_once('/') {
        Some((a, b)) => {
            !a.is_empty()
                && !b.is_empty()
                && a.len() <= 8
                && b.len() <= 8
                && a.chars().all(|c| c.is_ascii_hexdigit())
                && b.chars().all(|c| c.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// Translates an Oracle date format (`YYYY-MM-DD HH24:MI:SS`) into strftime form, or None for
/// an element recman does not know.
pub fn oracle_format_to_strftime(f: &str) -> Option<String> {
    let table: &[(&str, &str)] = &[
        ("YYYY", "%Y"),
        ("HH24", "%H"),
        ("HH12", "%I"),
        ("MONTH", "%B"),
        ("MON", "%b"),
        ("DD", "%d"),
        ("MM", "%m"),
        ("MI", "%M"),
        ("SS", "%S"),
        ("YY", "%y"),
        ("HH", "%I"),
        ("AM", "%p"),
        ("PM", "%p"),
    ];
    let mut out = String::new();
    let up = f.to_ascii_uppercase();
    let mut i = 0;
    'outer: while i < up.len() {
        for (k, v) in table {
            if up[i..].starts_with(k) {
                out.push_str(v);
                i += k.len();
                continue 'outer;
            }
        }
        let c = up[i..].chars().next()?;
        if c.is_ascii_alphabetic() {
            return None;
        }
        out.push(c);
        i += c.len_utf8();
    }
    Some(out)
}
