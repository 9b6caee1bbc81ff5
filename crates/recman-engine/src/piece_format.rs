//! FORMAT templates (RMAN's `FORMAT 'dir/ora_%U.rbf'`): where a backup's pieces are written
//! and how each is named. The directory is a disk device of its own; the catalog records each
//! piece there as a copy of the repository object it stands for, so everything that finds
//! copies (restore, validate, crosscheck, delete, retention) finds it.

use std::path::{Path, PathBuf};

use crate::error::EngineError;

/// The prefix of a device that is a FORMAT directory (`disk:/srv/backup`).
pub const DIR_DEVICE_PREFIX: &str = "disk:";

/// A template split into its directory and the piece name with substitution variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceFormat {
    pub dir: PathBuf,
    pub name: String,
}

/// What a piece's name is made of.
pub struct PieceVars<'a> {
    pub backup_id: &'a str,
    pub db_name: &'a str,
    pub system_identifier: u64,
    pub set_no: u32,
    pub piece_no: u32,
    /// Seconds since the epoch when the backup started.
    pub created_unix: i64,
}

impl PieceFormat {
    /// Parses `template`: an absolute directory and a name in which the pieces of one backup
    /// are told apart (`%U`, or `%u` or `%s` with `%p`).
    pub fn parse(template: &str) -> Result<PieceFormat, EngineError> {
        let path = Path::new(template);
        let bad = |why: &str| {
            EngineError::from(crate::refusal::Input::FormatTemplate {
                template: template.to_string(),
                why: why.to_string(),
            })
        };
        if !path.is_absolute() {
            return Err(bad("is not an absolute path"));
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Err(bad("names no file"));
        };
        if dir.to_str().is_some_and(|d| d.contains('%')) {
            return Err(bad("has a substitution variable in its directory"));
        }
        let f = PieceFormat {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        };
        // Each variable known, and the name unique per piece.
        f.expand_name(
            &PieceVars {
                backup_id: "x",
                db_name: "x",
                system_identifier: 0,
                set_no: 1,
                piece_no: 1,
                created_unix: 0,
            },
            1,
        )
        .map_err(|e| bad(&e))?;
        let unique = name.contains("%U")
            || ((name.contains("%u") || name.contains("%s")) && name.contains("%p"));
        if !unique {
            return Err(bad(
                "would give two pieces one name (it needs %U, or %u or %s with %p)",
            ));
        }
        Ok(f)
    }

    /// The device the pieces are recorded on.
    pub fn device(&self) -> String {
        format!("{DIR_DEVICE_PREFIX}{}", self.dir.display())
    }

    /// The name of one piece, RMAN's variables substituted.
    pub fn expand(&self, v: &PieceVars) -> Result<String, EngineError> {
        self.expand_copy(v, 1)
    }

    /// As [`PieceFormat::expand`] for copy `copy` of a duplexed piece (COPIES n): `%c` and the
    /// last part of `%U` are the copy number.
    pub fn expand_copy(&self, v: &PieceVars, copy: u32) -> Result<String, EngineError> {
        self.expand_name(v, copy).map_err(|why| {
            EngineError::from(crate::refusal::Input::FormatName {
                name: self.name.clone(),
                why,
            })
        })
    }

    /// The substitution itself; `Err` says what is wrong with the template, in words that
    /// both the parse's refusal and the expansion's complete.
    fn expand_name(&self, v: &PieceVars, copy: u32) -> Result<String, String> {
        let date = chrono::DateTime::from_timestamp(v.created_unix, 0)
            .unwrap_or_default()
            .with_timezone(&chrono::Local);
        let mut out = String::new();
        let mut chars = self.name.chars();
        while let Some(ch) = chars.next() {
            if ch != '%' {
                out.push(ch);
                continue;
            }
            let Some(var) = chars.next() else {
                return Err("ends with a lone %".into());
            };
            match var {
                'U' => out.push_str(&format!("{}_{}_{copy}", unique8(v), v.piece_no)),
                'u' => out.push_str(&unique8(v)),
                'p' => out.push_str(&v.piece_no.to_string()),
                'c' => out.push_str(&copy.to_string()),
                's' => out.push_str(&v.set_no.to_string()),
                't' => out.push_str(&v.created_unix.to_string()),
                'd' => out.push_str(v.db_name),
                'n' => out.push_str(&format!("{:x<8}", v.db_name)),
                'I' => out.push_str(&v.system_identifier.to_string()),
                'T' => out.push_str(&date.format("%Y%m%d").to_string()),
                'D' => out.push_str(&date.format("%d").to_string()),
                'M' => out.push_str(&date.format("%m").to_string()),
                'Y' => out.push_str(&date.format("%Y").to_string()),
                'F' => out.push_str(&format!(
                    "c-{}-{}-{:02X}",
                    v.system_identifier,
                    date.format("%Y%m%d"),
                    v.set_no.min(255)
                )),
                '%' => out.push('%'),
                other => {
                    return Err(format!(
                        "has %{other}, a substitution variable recman does not know (it knows %U %u %p %c %s %t %d %n %I %T %D %M %Y %F %%)"
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// RMAN's %u: eight characters telling a backup set apart, from the backup and set number.
fn unique8(v: &PieceVars) -> String {
    // FNV-1a: stable across runs and platforms, which a name must be.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.backup_id.bytes().chain(v.set_no.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    (0..8)
        .map(|i| ALPHABET[((h >> (i * 5)) & 31) as usize] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(set_no: u32, piece_no: u32) -> PieceVars<'static> {
        PieceVars {
            backup_id: "20261125T120000-abc",
            db_name: "main",
            system_identifier: 7,
            set_no,
            piece_no,
            created_unix: 1_764_072_000,
        }
    }

    #[test]
    fn templates() {
        let f = PieceFormat::parse("/srv/backup/ora_%U.rbf").unwrap();
        assert_eq!(f.dir, PathBuf::from("/srv/backup"));
        assert_eq!(f.device(), "disk:/srv/backup");
        let a = f.expand(&vars(1, 1)).unwrap();
        let b = f.expand(&vars(2, 1)).unwrap();
        assert!(a.starts_with("ora_") && a.ends_with("_1_1.rbf"), "{a}");
        assert_ne!(a, b);
        let g = PieceFormat::parse("/b/%d_%s_%p_%t_%I_%%").unwrap();
        assert_eq!(g.expand(&vars(3, 2)).unwrap(), "main_3_2_1764072000_7_%");
        assert!(PieceFormat::parse("rel/%U").is_err());
        assert!(PieceFormat::parse("/b/%d_%t").is_err());
        assert!(PieceFormat::parse("/b/%Z_%U").is_err());
        assert!(PieceFormat::parse("/b%s/%U").is_err());
    }
}
