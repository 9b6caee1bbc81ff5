//! FORMAT substitution: `%U %d %t %s %p %c %T %u` and friends, expanded from the values the
//! engine knows about a piece. Pure, so the engine can call it when it names pieces.

/// What a piece name can be built from.
#[derive(Debug, Clone, Default)]
pub struct PieceVars {
    /// Database name (the registered name).
    pub db_name: String,
    /// Backup set number.
    pub set: u64,
    /// Piece number within the set, from 1.
    pub piece: u64,
    /// Copy number, 1 when not duplexed.
    pub copy: u64,
    /// Seconds since the Unix epoch when the set started.
    pub timestamp: u64,
    /// The date as YYYYMMDD.
    pub date: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "format {format:?} uses %{var}, which recman does not substitute; hint: use %U, %u, %d, %s, %p, %c, %t, %T or %%"
)]
pub struct FormatError {
    pub format: String,
    pub var: char,
}

/// RMAN's 8-character `%u`: the set number and its start time folded into base 32.
pub fn short_unique(set: u64, timestamp: u64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
    let mut v = (set << 32) ^ (timestamp & 0xffff_ffff);
    let mut out = [b'0'; 8];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(v & 31) as usize];
        v >>= 5;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Expands `format` with `vars`.
pub fn substitute(format: &str, vars: &PieceVars) -> Result<String, FormatError> {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(v) = chars.next() else {
            return Err(FormatError {
                format: format.into(),
                var: ' ',
            });
        };
        let u = short_unique(vars.set, vars.timestamp);
        match v {
            'U' => out.push_str(&format!("{u}_{}_{}", vars.piece, vars.copy)),
            'u' => out.push_str(&u),
            'd' => out.push_str(&vars.db_name),
            's' => out.push_str(&vars.set.to_string()),
            'p' => out.push_str(&vars.piece.to_string()),
            'c' => out.push_str(&vars.copy.to_string()),
            't' => out.push_str(&vars.timestamp.to_string()),
            'T' => out.push_str(&vars.date),
            '%' => out.push('%'),
            other => {
                return Err(FormatError {
                    format: format.into(),
                    var: other,
                });
            }
        }
    }
    Ok(out)
}
