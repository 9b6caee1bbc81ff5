//! Fleet hosts' certificates for the test PKI: one certificate per host that serves (its
//! agent or server, for localhost and 127.0.0.1) and calls other hosts with the same
//! identity, as docs/fleet.md tells operators to make them.

use crate::host::chown_tree_to_cluster_user;
use crate::pki::TestPki;
use std::path::PathBuf;

/// Makes `<name>.crt` and `<name>.key` in the PKI's directory, CN `cn`, signed by its CA,
/// usable as server and as client; returns (cert, key).
pub fn host_cert(pki: &TestPki, name: &str, cn: &str) -> (PathBuf, PathBuf) {
    crate::pki::leaf(
        &pki.dir,
        name,
        cn,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n",
    );
    chown_tree_to_cluster_user(&pki.dir);
    let key = pki.dir.join(format!("{name}.key"));
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    (pki.dir.join(format!("{name}.crt")), key)
}
