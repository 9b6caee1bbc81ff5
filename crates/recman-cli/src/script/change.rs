//! CHANGE BACKUP: the parser keeps CHANGE as words (an Oracle statement of many forms); the
//! backup forms recman has are lowered here to `change backup`.

use anyhow::{Result, bail};
use recman_command as m;

/// `CHANGE BACKUP TAG t | BACKUPSET id | BACKUP id` then `KEEP FOREVER | KEEP UNTIL TIME 't' |
/// NOKEEP | UNAVAILABLE | AVAILABLE`; None when the words are another CHANGE (refused by the caller).
pub(crate) fn lower(words: &[String]) -> Result<Option<m::Command>> {
    let up: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let u: Vec<&str> = up.iter().map(String::as_str).collect();
    let (which, rest) = match u.as_slice() {
        ["BACKUP", "TAG", _, rest @ ..] | ["BACKUPSET", "TAG", _, rest @ ..] => {
            (words[2].clone(), rest)
        }
        ["BACKUPSET", _, rest @ ..] | ["BACKUP", _, rest @ ..] => (words[1].clone(), rest),
        _ => return Ok(None),
    };
    let mut c = m::ChangeBackup {
        which,
        ..Default::default()
    };
    match rest {
        ["KEEP", "FOREVER"] => c.keep_forever = true,
        // The time is the literal as written (the uppercased copy would spoil it).
        ["KEEP", "UNTIL", "TIME", _] => c.keep_until = Some(words[words.len() - 1].clone()),
        ["NOKEEP"] => c.nokeep = true,
        ["UNAVAILABLE"] => c.unavailable = true,
        ["AVAILABLE"] => c.available = true,
        _ => bail!(
            "CHANGE BACKUP … {}: recman changes a backup with KEEP FOREVER, KEEP UNTIL TIME 'time', NOKEEP, UNAVAILABLE or AVAILABLE; hint: write one of them after the backup's TAG or id",
            rest.join(" ")
        ),
    }
    Ok(Some(m::Command::ChangeBackup(c)))
}
