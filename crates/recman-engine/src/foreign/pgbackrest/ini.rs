//! pgBackRest's info files (backup.info, archive.info, backup.manifest): INI sections whose
//! values are JSON, closed by `[backrest] backrest-checksum`, the SHA-1 of the other sections
//! and keys rendered as one JSON object in file order (`{"section":{"key":value,...},...}`,
//! each value as written). Each file has a `.copy` beside it, read when the first fails.

use crate::foreign::ImportError;
use crate::foreign::decode::sha1_hex;
use std::collections::HashMap;

const BACKREST: &str = "backrest";
const CHECKSUM: &str = "backrest-checksum";

/// A parsed, checked info file: sections in file order, each with its keys in order.
#[derive(Debug, Default)]
pub struct Info {
    sections: Vec<(String, Vec<(String, String)>)>,
    index: HashMap<String, usize>,
}

impl Info {
    /// Parses `text` and checks its checksum; `what` names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Info, ImportError> {
        let bad = |why: String| ImportError::Corrupt(format!("{what} {why}"));
        let mut info = Info::default();
        let mut current: Option<usize> = None;
        let mut expected: Option<String> = None;
        let mut digest = String::from("{");
        let mut last_section: Option<usize> = None;
        for (no, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = Some(match info.index.get(name) {
                    Some(&i) => i,
                    None => {
                        info.sections.push((name.to_string(), Vec::new()));
                        info.index.insert(name.to_string(), info.sections.len() - 1);
                        info.sections.len() - 1
                    }
                });
                continue;
            }
            let (Some(i), Some((key, value))) = (current, line.split_once('=')) else {
                return Err(bad(format!(
                    "is not a pgBackRest info file: line {} is neither a section nor key=value",
                    no + 1
                )));
            };
            let section = info.sections[i].0.clone();
            if section == BACKREST && key == CHECKSUM {
                expected = serde_json::from_str::<String>(value).ok();
                continue;
            }
            if last_section != Some(i) {
                if last_section.is_some() {
                    digest.push_str("},");
                }
                digest.push_str(&serde_json::to_string(&section).unwrap_or_default());
                digest.push_str(":{");
            } else {
                digest.push(',');
            }
            last_section = Some(i);
            digest.push_str(&serde_json::to_string(key).unwrap_or_default());
            digest.push(':');
            digest.push_str(value);
            info.sections[i]
                .1
                .push((key.to_string(), value.to_string()));
        }
        digest.push_str("}}");
        let actual = sha1_hex(digest.as_bytes());
        match expected {
            None => Err(bad(
                "has no backrest-checksum: it is cut short or not a pgBackRest info file".into(),
            )),
            Some(e) if e != actual => Err(bad(format!(
                "fails its checksum: backrest-checksum is {e}, its content gives {actual}"
            ))),
            Some(_) => Ok(info),
        }
    }

    /// The keys of `section` in file order, values as written (JSON).
    pub fn section(&self, section: &str) -> &[(String, String)] {
        self.index
            .get(section)
            .map(|&i| self.sections[i].1.as_slice())
            .unwrap_or(&[])
    }

    /// The raw JSON value of `key` in `section`.
    pub fn raw(&self, section: &str, key: &str) -> Option<&str> {
        self.section(section)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `key` of `section` parsed as JSON into `T`; None when absent or of another type.
    pub fn get<T: serde::de::DeserializeOwned>(&self, section: &str, key: &str) -> Option<T> {
        serde_json::from_str(self.raw(section, key)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_checksum(body: &str) -> String {
        // Sections and keys as pgBackRest renders them for its checksum.
        let info =
            "{\"backrest\":{\"backrest-format\":5},\"db\":{\"db-id\":1,\"db-version\":\"15\"}}";
        format!(
            "{body}\n[backrest]\nbackrest-checksum=\"{}\"\n",
            sha1_hex(info.as_bytes())
        )
    }

    #[test]
    fn checks_the_checksum_and_reads_values() {
        let text =
            with_checksum("[backrest]\nbackrest-format=5\n\n[db]\ndb-id=1\ndb-version=\"15\"\n");
        let info = Info::parse(&text, "archive.info").unwrap();
        assert_eq!(info.get::<u32>("db", "db-id"), Some(1));
        assert_eq!(
            info.get::<String>("db", "db-version").as_deref(),
            Some("15")
        );
        let changed = text.replace("db-id=1", "db-id=2");
        let e = Info::parse(&changed, "archive.info")
            .unwrap_err()
            .to_string();
        assert!(e.contains("archive.info fails its checksum"), "{e}");
        let cut = text.lines().take(4).collect::<Vec<_>>().join("\n");
        assert!(Info::parse(&cut, "x").is_err());
    }
}
