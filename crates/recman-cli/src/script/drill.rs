//! DRILL and DUPLICATE: the parser keeps both as words (DUPLICATE is an Oracle statement of
//! many forms); the forms recman has are lowered here.
//!
//! ```text
//! DRILL [UNTIL TIME 'T' | UNTIL LSN 'L'] [CHECK SQL 'S']… [KEEP]
//!       [AUXILIARY DESTINATION 'DIR'] [FROM TAG 't'];
//! DUPLICATE [TARGET] DATABASE TO 'DIR'
//!       [FOR STANDBY PRIMARY CONNINFO 'C' [SLOT 'S']] [PORT n] [UNTIL TIME 'T'];
//! ```

use anyhow::{Result, bail};
use recman_command as m;
use recman_lang::ast::Word;

/// Reads the words one clause at a time.
struct Words<'a> {
    w: &'a [Word],
    i: usize,
    stmt: &'static str,
}

impl<'a> Words<'a> {
    fn kw(&mut self, k: &str) -> bool {
        match self.w.get(self.i) {
            Some(Word::Bare(b)) if b.eq_ignore_ascii_case(k) => {
                self.i += 1;
                true
            }
            _ => false,
        }
    }
    fn kws(&mut self, ks: &[&str]) -> bool {
        let save = self.i;
        if ks.iter().all(|k| self.kw(k)) {
            return true;
        }
        self.i = save;
        false
    }
    fn value(&mut self, after: &str) -> Result<String> {
        match self.w.get(self.i) {
            Some(Word::Quoted(q)) | Some(Word::Bare(q)) => {
                self.i += 1;
                Ok(q.clone())
            }
            None => bail!(
                "{} … {after}: a value is missing after {after}; hint: write it in quotes, e.g. {after} '…'",
                self.stmt
            ),
        }
    }
    fn done(&self) -> bool {
        self.i >= self.w.len()
    }
    fn unexpected(&self, expected: &str) -> anyhow::Error {
        let at = match &self.w[self.i] {
            Word::Bare(b) => b.clone(),
            Word::Quoted(q) => format!("'{q}'"),
        };
        anyhow::anyhow!(
            "{}: unexpected {at}; hint: {} takes {expected}",
            self.stmt,
            self.stmt
        )
    }
}

pub(crate) fn drill(words: &[Word]) -> Result<m::Command> {
    let mut w = Words {
        w: words,
        i: 0,
        stmt: "DRILL",
    };
    let mut d = m::Drill::new();
    while !w.done() {
        if w.kws(&["UNTIL", "TIME"]) {
            d.restore.until_time = Some(w.value("UNTIL TIME")?);
        } else if w.kws(&["UNTIL", "LSN"]) || w.kws(&["UNTIL", "SCN"]) {
            d.restore.until_lsn = Some(w.value("UNTIL LSN")?);
        } else if w.kws(&["CHECK", "SQL"]) {
            d.check_sql.push(w.value("CHECK SQL")?);
        } else if w.kw("KEEP") {
            d.keep = true;
        } else if w.kws(&["AUXILIARY", "DESTINATION"]) {
            d.dir = Some(w.value("AUXILIARY DESTINATION")?.into());
        } else if w.kws(&["FROM", "TAG"]) {
            d.restore.from_tag = Some(w.value("FROM TAG")?);
        } else {
            return Err(w.unexpected(
                "UNTIL TIME '…', UNTIL LSN '…', CHECK SQL '…', KEEP, AUXILIARY DESTINATION '…' and FROM TAG '…'",
            ));
        }
    }
    Ok(m::Command::Drill(Box::new(d)))
}

/// None when the words are another DUPLICATE (refused by the caller).
pub(crate) fn duplicate(words: &[Word]) -> Result<Option<m::Command>> {
    let mut w = Words {
        w: words,
        i: 0,
        stmt: "DUPLICATE DATABASE",
    };
    w.kw("TARGET");
    // Oracle's `TO dbname` names a database; recman's form takes a quoted directory.
    if !w.kws(&["DATABASE", "TO"]) || !matches!(w.w.get(w.i), Some(Word::Quoted(_))) {
        return Ok(None);
    }
    let to = w.value("TO")?;
    let mut d = m::DuplicateDatabase {
        restore: m::RestoreDatabase::into(Some(to.into())),
        for_standby: false,
        primary_conninfo: None,
        slot: None,
        port: None,
    };
    while !w.done() {
        if w.kws(&["FOR", "STANDBY"]) {
            d.for_standby = true;
        } else if w.kws(&["PRIMARY", "CONNINFO"]) {
            d.primary_conninfo = Some(w.value("PRIMARY CONNINFO")?);
        } else if w.kw("SLOT") {
            d.slot = Some(w.value("SLOT")?);
        } else if w.kw("PORT") {
            let v = w.value("PORT")?;
            d.port = Some(v.parse().map_err(|_| {
                anyhow::anyhow!(
                    "DUPLICATE DATABASE … PORT {v}: not a port number; hint: PORT 5433 (1 to 65535)"
                )
            })?);
        } else if w.kws(&["UNTIL", "TIME"]) {
            d.restore.until_time = Some(w.value("UNTIL TIME")?);
        } else {
            return Err(w.unexpected(
                "FOR STANDBY PRIMARY CONNINFO '…' [SLOT '…'], PORT n and UNTIL TIME '…'",
            ));
        }
    }
    if d.for_standby && d.primary_conninfo.is_none() {
        bail!(
            "DUPLICATE DATABASE … FOR STANDBY needs the primary's connection string; hint: add PRIMARY CONNINFO 'host=… user=…'"
        );
    }
    if !d.for_standby && (d.primary_conninfo.is_some() || d.slot.is_some()) {
        bail!(
            "DUPLICATE DATABASE: PRIMARY CONNINFO and SLOT configure a standby; hint: add FOR STANDBY"
        );
    }
    Ok(Some(m::Command::DuplicateDatabase(Box::new(d))))
}

#[cfg(test)]
mod tests {
    fn lower(text: &str) -> anyhow::Result<Vec<recman_command::Command>> {
        super::super::parity::lower_checked(text)
    }

    #[test]
    fn oracle_forms_of_duplicate_are_refused_with_a_hint() {
        for s in [
            "DUPLICATE TARGET DATABASE TO clone FROM ACTIVE DATABASE;",
            "DUPLICATE TARGET DATABASE TO clone;",
            "DUPLICATE DATABASE TO '/d' FROM ACTIVE DATABASE;",
            "DUPLICATE DATABASE TO '/d' SLOT 's';",
            "DRILL UNTIL TIME;",
        ] {
            let e = format!("{:#}", lower(s).unwrap_err());
            assert!(e.contains("hint:"), "{s}: {e}");
        }
    }
}
