//! A throwaway certificate authority for TLS tests, made with the `openssl` command: a CA, a
//! server certificate for localhost and 127.0.0.1, a client certificate, and a second CA that
//! signed none of them (the "wrong CA"); for the fleet transport's refusals also three bad
//! client certificates: an expired one, one from the other CA, and one whose CN no server
//! allows. EC P-256 keys: quick to make.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::host::chown_tree_to_cluster_user;

/// PEM files in one directory, owned by the cluster user (PostgreSQL reads the server's,
/// recman the client's), keys mode 0600.
pub struct TestPki {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// A server certificate for localhost and 127.0.0.1 from `ca` whose validity ended
    /// before it began to be used.
    pub expired_server_cert: PathBuf,
    pub expired_server_key: PathBuf,
    /// For user `client_user` (the certificate's CN), as PostgreSQL's `cert` method wants.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// Signed by the CA but expired a day ago (CN `expired-client`).
    pub expired_cert: PathBuf,
    pub expired_key: PathBuf,
    /// Current, CN `foreign-client`, but signed by the other CA.
    pub foreign_cert: PathBuf,
    pub foreign_key: PathBuf,
    /// Signed by the CA and current, CN `stranger`: for a CN that is not on an allow-list.
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
}

/// The CN of [`TestPki::stranger_cert`].
pub const STRANGER_CN: &str = "stranger";

const SERVER_EXT: &str = "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n";

const CLIENT_EXT: &str =
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n";

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("missing prerequisite 'openssl' (the command, for test certificates): {e}")
        });
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "400",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

pub(crate) fn leaf(dir: &Path, name: &str, cn: &str, ext: &str) {
    signed_leaf(dir, name, cn, ext, "ca", "400");
}

/// A leaf signed by CA `ca` (its files `ca.crt`, `ca.key`), valid for `days` (a negative
/// count makes it expired from the start).
fn signed_leaf(dir: &Path, name: &str, cn: &str, ext: &str, ca: &str, days: &str) {
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
    std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            days,
            "-extfile",
            &format!("{name}.ext"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

impl TestPki {
    /// `--repo REPO` and this PKI's server certificate, key and CA: the global options of a
    /// repository host's `recman server`.
    pub fn server_args(&self, repo: &Path) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--repo".into(),
            path(repo),
            "--tls-cert".into(),
            path(&self.server_cert),
            "--tls-key".into(),
            path(&self.server_key),
            "--tls-ca".into(),
            path(&self.ca),
        ]
    }

    /// A client certificate for CN `cn` from the CA, valid for `days` days (its files
    /// `NAME.crt` and `NAME.key`, owned by the cluster user): for checks of a certificate's
    /// end.
    pub fn client_valid_for(&self, name: &str, cn: &str, days: u32) -> (PathBuf, PathBuf) {
        signed_leaf(&self.dir, name, cn, CLIENT_EXT, "ca", &days.to_string());
        let key = self.dir.join(format!("{name}.key"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        chown_tree_to_cluster_user(&self.dir);
        (self.dir.join(format!("{name}.crt")), key)
    }

    /// Makes the files in `dir` (which must exist); the client certificate names `client_user`.
    pub fn new(dir: &Path, client_user: &str) -> TestPki {
        ca(dir, "ca");
        ca(dir, "other-ca");
        leaf(dir, "server", "localhost", SERVER_EXT);
        signed_leaf(dir, "expired-server", "localhost", SERVER_EXT, "ca", "-1");
        leaf(dir, "client", client_user, CLIENT_EXT);
        signed_leaf(dir, "expired", "expired-client", CLIENT_EXT, "ca", "-1");
        signed_leaf(
            dir,
            "foreign",
            "foreign-client",
            CLIENT_EXT,
            "other-ca",
            "2",
        );
        leaf(dir, "stranger", STRANGER_CN, CLIENT_EXT);
        for key in [
            "ca.key",
            "other-ca.key",
            "server.key",
            "expired-server.key",
            "client.key",
            "expired.key",
            "foreign.key",
            "stranger.key",
        ] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join(key), std::fs::Permissions::from_mode(0o600))
                .unwrap();
        }
        chown_tree_to_cluster_user(dir);
        TestPki {
            dir: dir.to_path_buf(),
            ca: dir.join("ca.crt"),
            other_ca: dir.join("other-ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            expired_server_cert: dir.join("expired-server.crt"),
            expired_server_key: dir.join("expired-server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            expired_cert: dir.join("expired.crt"),
            expired_key: dir.join("expired.key"),
            foreign_cert: dir.join("foreign.crt"),
            foreign_key: dir.join("foreign.key"),
            stranger_cert: dir.join("stranger.crt"),
            stranger_key: dir.join("stranger.key"),
        }
    }
}

impl crate::cluster::Cluster {
    /// Sets the server's TLS files to `pki`'s (a certificate for localhost and 127.0.0.1 from
    /// its CA) and `ssl = on`; a reload or a restart then applies them.
    pub fn set_tls(&self, pki: &TestPki) {
        // One statement per call: ALTER SYSTEM refuses to run inside a transaction block.
        for (name, file) in [
            ("ssl_cert_file", &pki.server_cert),
            ("ssl_key_file", &pki.server_key),
            ("ssl_ca_file", &pki.ca),
        ] {
            self.psql(&format!(
                "alter system set {name} = {}",
                crate::cluster::sql_literal(&file.display().to_string())
            ));
        }
        self.psql("alter system set ssl = on");
    }
}
