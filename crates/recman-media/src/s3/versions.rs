//! ListObjectVersions, and the repository as it was at a time: each key's newest version
//! written before it, whatever came later (new versions, delete markers).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use http::Method;

use super::signed::{Call, Signed, SignedError, encode_query};

/// One version (or delete marker) of a key, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub key: String,
    pub version_id: String,
    pub last_modified: DateTime<Utc>,
    pub size: u64,
    pub delete_marker: bool,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase", default)]
struct ListDoc {
    is_truncated: bool,
    next_key_marker: Option<String>,
    next_version_id_marker: Option<String>,
    #[serde(rename = "Version")]
    versions: Vec<Entry>,
    #[serde(rename = "DeleteMarker")]
    markers: Vec<Entry>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase", default)]
struct Entry {
    key: String,
    version_id: String,
    last_modified: String,
    size: u64,
}

impl Entry {
    fn into_version(self, delete_marker: bool) -> Result<Version, SignedError> {
        let last_modified = DateTime::parse_from_rfc3339(self.last_modified.trim())
            .map_err(|e| SignedError::Answer(format!("last-modified of {}: {e}", self.key)))?
            .with_timezone(&Utc);
        Ok(Version {
            key: self.key,
            version_id: self.version_id,
            last_modified,
            size: self.size,
            delete_marker,
        })
    }
}

impl Signed {
    /// Every version and delete marker of the keys under `prefix`, all pages.
    pub(crate) async fn list_versions(&self, prefix: &str) -> Result<Vec<Version>, SignedError> {
        let mut out = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut q = format!("prefix={}&versions", encode_query(prefix));
            if let Some((k, v)) = &markers {
                q = format!(
                    "key-marker={}&{q}&version-id-marker={}",
                    encode_query(k),
                    encode_query(v)
                );
            }
            let reply = self.send(&Call::new(Method::GET, "", q)).await?;
            let doc: ListDoc = quick_xml::de::from_str(&String::from_utf8_lossy(&reply.body))
                .map_err(|e| SignedError::Answer(e.to_string()))?;
            for e in doc.versions {
                out.push(e.into_version(false)?);
            }
            for e in doc.markers {
                out.push(e.into_version(true)?);
            }
            match (
                doc.is_truncated,
                doc.next_key_marker,
                doc.next_version_id_marker,
            ) {
                (true, Some(k), v) => markers = Some((k, v.unwrap_or_default())),
                _ => return Ok(out),
            }
        }
    }
}

/// What a key held at a time: the version to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pinned {
    pub(crate) version_id: String,
    pub(crate) size: u64,
}

/// For each key, the newest entry written strictly before `at`; keys whose newest such entry
/// is a delete marker did not exist then and are left out. Later versions and markers are
/// what an attacker (or anyone) did afterwards, and are ignored.
pub(crate) fn as_of(versions: Vec<Version>, at: DateTime<Utc>) -> BTreeMap<String, Pinned> {
    let mut newest: BTreeMap<String, Version> = BTreeMap::new();
    for v in versions.into_iter().filter(|v| v.last_modified < at) {
        match newest.get(&v.key) {
            // On a tie a version wins over a delete marker: what was written is kept readable
            // rather than lost to a marker of the same second.
            Some(cur)
                if cur.last_modified > v.last_modified
                    || cur.last_modified == v.last_modified && !cur.delete_marker => {}
            _ => {
                newest.insert(v.key.clone(), v);
            }
        }
    }
    newest
        .into_iter()
        .filter(|(_, v)| !v.delete_marker)
        .map(|(k, v)| {
            (
                k,
                Pinned {
                    version_id: v.version_id,
                    size: v.size,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn v(key: &str, id: &str, at: &str, marker: bool) -> Version {
        Version {
            key: key.into(),
            version_id: id.into(),
            last_modified: t(at),
            size: 1,
            delete_marker: marker,
        }
    }

    #[test]
    fn later_versions_and_delete_markers_are_ignored() {
        let all = vec![
            v("m", "m2", "2030-01-01T00:00:10Z", false),
            v("m", "m1", "2030-01-01T00:00:01Z", false),
            v("p", "pd", "2030-01-01T00:00:11Z", true),
            v("p", "p1", "2030-01-01T00:00:02Z", false),
            v("gone", "g1", "2030-01-01T00:00:01Z", false),
            v("gone", "gd", "2030-01-01T00:00:03Z", true),
            v("new", "n1", "2030-01-01T00:00:09Z", false),
        ];
        let seen = as_of(all, t("2030-01-01T00:00:05Z"));
        let ids: Vec<(&str, &str)> = seen
            .iter()
            .map(|(k, p)| (k.as_str(), p.version_id.as_str()))
            .collect();
        assert_eq!(ids, vec![("m", "m1"), ("p", "p1")]);
    }

    #[test]
    fn version_listings_parse_with_markers_between_versions() {
        let body = r#"<ListVersionsResult><IsTruncated>true</IsTruncated><NextKeyMarker>b</NextKeyMarker><NextVersionIdMarker>v9</NextVersionIdMarker>
<Version><Key>a</Key><VersionId>v2</VersionId><IsLatest>true</IsLatest><LastModified>2030-01-01T00:00:02.000Z</LastModified><ETag>"x"</ETag><Size>5</Size></Version>
<DeleteMarker><Key>a</Key><VersionId>d1</VersionId><IsLatest>false</IsLatest><LastModified>2030-01-01T00:00:01.000Z</LastModified></DeleteMarker>
<Version><Key>b</Key><VersionId>v9</VersionId><IsLatest>true</IsLatest><LastModified>2030-01-01T00:00:00.000Z</LastModified><ETag>"y"</ETag><Size>7</Size></Version>
</ListVersionsResult>"#;
        let doc: ListDoc = quick_xml::de::from_str(body).unwrap();
        assert!(doc.is_truncated);
        assert_eq!(doc.next_key_marker.as_deref(), Some("b"));
        assert_eq!(doc.versions.len(), 2);
        assert_eq!(doc.markers.len(), 1);
        assert_eq!(doc.versions[1].size, 7);
    }
}
