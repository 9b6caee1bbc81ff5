//! ADVISE FAILURE and REPAIR FAILURE (the parser keeps both as words, as RMAN's forms vary):
//!
//! ```text
//! ADVISE FAILURE [ALL | n [, n]…];
//! REPAIR FAILURE [PREVIEW] [NOPROMPT];
//! ```
//!
//! LIST FAILURE is parsed by recman-lang and lowered in `maint.rs`.

use anyhow::{Result, bail};
use recman_command as m;

/// The lowered command, or None when the words are not a FAILURE form (refused by the caller).
pub(crate) fn lower(verb: &str, words: &[String]) -> Result<Option<m::Command>> {
    let Some((first, rest)) = words.split_first() else {
        return Ok(None);
    };
    if first != "FAILURE" {
        return Ok(None);
    }
    Ok(Some(match verb {
        "ADVISE" => m::Command::Failure(m::FailureWhat::Advise {
            ids: ids(rest)?,
            script: None,
            json: false,
        }),
        "REPAIR" => {
            let mut preview = false;
            for w in rest {
                match w.as_str() {
                    "PREVIEW" => preview = true,
                    // recman never prompts a script; RMAN's NOPROMPT asks for that.
                    "NOPROMPT" => {}
                    other => bail!(
                        "REPAIR FAILURE: unexpected {other}; hint: REPAIR FAILURE [PREVIEW] [NOPROMPT]; (recman repairs every open failure that has an automatic repair)"
                    ),
                }
            }
            m::Command::Failure(m::FailureWhat::Repair {
                preview,
                script: None,
            })
        }
        _ => return Ok(None),
    }))
}

/// `ALL`, nothing, or failure numbers separated by commas.
fn ids(words: &[String]) -> Result<Vec<i64>> {
    if words.len() == 1 && words[0] == "ALL" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for w in words.iter().filter(|w| *w != ",") {
        match w.parse::<i64>() {
            Ok(n) if n > 0 => out.push(n),
            _ => bail!(
                "ADVISE FAILURE: {w} is not a failure number; hint: ADVISE FAILURE; ADVISE FAILURE ALL; or ADVISE FAILURE 3, 4; (LIST FAILURE shows the numbers)"
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    fn lower(text: &str) -> anyhow::Result<Vec<recman_command::Command>> {
        super::super::parity::lower_checked(text)
    }

    #[test]
    fn failure_statements_lower_and_bad_forms_are_refused() {
        use recman_command::{Command, FailureWhat};
        assert_eq!(
            lower("ADVISE FAILURE 3, 4;").unwrap(),
            vec![Command::Failure(FailureWhat::Advise {
                ids: vec![3, 4],
                script: None,
                json: false
            })]
        );
        assert_eq!(
            lower("REPAIR FAILURE PREVIEW NOPROMPT;").unwrap(),
            vec![Command::Failure(FailureWhat::Repair {
                preview: true,
                script: None
            })]
        );
        for bad in ["ADVISE FAILURE x;", "REPAIR FAILURE USING ADVISE OPTION 2;"] {
            let e = format!("{:#}", lower(bad).unwrap_err());
            assert!(e.contains("hint:"), "{bad}: {e}");
        }
        let list = lower("LIST FAILURE 2 DETAIL;").unwrap();
        assert!(
            matches!(&list[0], Command::Failure(FailureWhat::List(l)) if l.ids == [2] && l.detail && !l.all),
            "{list:?}"
        );
    }
}
