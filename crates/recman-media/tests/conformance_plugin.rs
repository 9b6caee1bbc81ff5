//! The conformance suite and the failure modes of the plugin driver, through the example
//! Python plugin (examples/plugins/recman_dir_plugin.py), which needs python3 on PATH.

use std::io::{Read, Write};
use std::path::Path;

use recman_media::conformance::{self, pattern};
use recman_media::plugin::PluginMedia;
use recman_media::{ErrorClass, Media, MediaError};

fn script() -> String {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plugins/recman_dir_plugin.py");
    p.to_string_lossy().into_owned()
}

fn argv(dir: &Path) -> Vec<String> {
    vec![
        "python3".into(),
        script(),
        "--dir".into(),
        dir.to_string_lossy().into_owned(),
    ]
}

fn plugin(dir: &Path, env: &[(&str, &str)]) -> PluginMedia {
    let env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    PluginMedia::with_env(argv(dir), env).expect("start the example plugin")
}

#[test]
fn plugin_driver_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let m = plugin(dir.path(), &[]);
    assert_eq!(m.describe(), "plugin python3");
    assert_eq!(m.plugin_name(), "recman-dir-plugin");
    let caps = m.capabilities();
    assert!(
        caps.list && caps.ranged_read && caps.atomic_commit,
        "{caps:?}"
    );
    // 9 MiB: more than two 4 MiB frames each way.
    conformance::run(&m, "run1", 9 << 20);
    drop(m);
    let leftovers = recman_media::conformance::files_under(dir.path());
    assert!(leftovers.is_empty(), "files left: {leftovers:?}");
}

#[test]
fn transient_faults_on_idempotent_requests_are_retried() {
    let dir = tempfile::tempdir().unwrap();
    let m = plugin(
        dir.path(),
        &[
            ("RECMAN_PLUGIN_TRANSIENT_RATE", "0.3"),
            ("RECMAN_PLUGIN_SEED", "7"),
        ],
    );
    let data = pattern(5 << 20, 3);
    for i in 0..3 {
        let name = format!("t/obj{i}");
        m.put(&name, &data).unwrap();
        assert_eq!(m.stat(&name).unwrap(), Some(data.len() as u64));
        assert!(
            m.get(&name).unwrap() == data,
            "object {i} read back differs"
        );
    }
    assert_eq!(m.list("t/").unwrap().len(), 3);
}

fn assert_names(e: &MediaError, class: ErrorClass, object: &str) {
    assert_eq!(e.class, class, "{e}");
    assert!(
        e.to_string().contains(object),
        "the error does not name {object}: {e}"
    );
}

#[test]
fn permanent_failures_are_permanent_and_name_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let m = plugin(dir.path(), &[("RECMAN_PLUGIN_PERMANENT", "1")]);
    let e = m.put("p/piece1", b"data").unwrap_err();
    assert_names(&e, ErrorClass::Permanent, "p/piece1");
    assert!(e.to_string().contains("media offline"), "{e}");
    let e = m.open("p/piece2").err().unwrap();
    assert_names(&e, ErrorClass::Permanent, "p/piece2");
    let e = m.stat("p/piece3").unwrap_err();
    assert_names(&e, ErrorClass::Permanent, "p/piece3");
}

#[test]
fn corrupt_reads_are_caught_by_the_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(300_000, 5);
    plugin(dir.path(), &[]).put("c/obj", &data).unwrap();
    let m = plugin(dir.path(), &[("RECMAN_PLUGIN_CORRUPT_READS", "1")]);
    let e = m.get("c/obj").unwrap_err();
    assert_names(&e, ErrorClass::Permanent, "c/obj");
    assert!(e.to_string().contains("checksum"), "{e}");
    // Through std::io::Read too, without any byte of bad data handed out.
    let mut r = m.open("c/obj").unwrap();
    let mut buf = vec![0; 1000];
    let e = r.read(&mut buf).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn a_missing_plugin_program_is_a_clear_error() {
    let e = PluginMedia::new(vec![
        "/nonexistent/recman-plugin".into(),
        "--secret=x".into(),
    ])
    .unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("cannot start plugin program \"/nonexistent/recman-plugin\""),
        "{text}"
    );
    assert!(!text.contains("secret"), "arguments leaked: {text}");
    assert!(e.hint().is_some(), "{e}");
}

/// A plugin in Python that answers the handshake with `reply` (a JSON header) and then
/// behaves as `after` says: "exit", or "garbage" on the next request.
fn fake_plugin(reply: &str, after: &str) -> Vec<String> {
    let code = format!(
        r#"
import json, struct, sys
i, o = sys.stdin.buffer, sys.stdout.buffer
def frame():
    n, = struct.unpack('>I', i.read(4)); h = json.loads(i.read(n))
    n, = struct.unpack('>I', i.read(4)); i.read(n); return h
def send(h):
    b = json.dumps(h).encode(); o.write(struct.pack('>I', len(b)) + b + struct.pack('>I', 0)); o.flush()
frame(); send(json.loads({reply:?}))
if {after:?} == 'garbage':
    frame(); o.write(b'oops, a log line on stdout\n'); o.flush(); i.read()
"#
    );
    vec!["python3".into(), "-c".into(), code]
}

const HELLO_V1: &str = r#"{"ok": true, "protocol": "recman-media-plugin/1", "name": "fake", "version": "0",
    "capabilities": {"list": true}}"#;

#[test]
fn a_plugin_speaking_another_protocol_is_refused() {
    let reply =
        r#"{"ok": true, "protocol": "recman-media-plugin/2", "name": "future", "version": "9"}"#;
    let e = PluginMedia::new(fake_plugin(reply, "exit")).unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("recman-media-plugin/2") && text.contains("recman-media-plugin/1"),
        "{text}"
    );
}

#[test]
fn a_plugin_that_exits_or_babbles_gives_a_permanent_error_pointing_at_stderr() {
    let m = PluginMedia::new(fake_plugin(HELLO_V1, "exit")).unwrap();
    let e = m.stat("x/obj").unwrap_err();
    assert_names(&e, ErrorClass::Permanent, "x/obj");
    let text = e.to_string();
    assert!(
        text.contains("exited") && text.contains("`info`") && text.contains("stderr"),
        "{text}"
    );

    let m = PluginMedia::new(fake_plugin(HELLO_V1, "garbage")).unwrap();
    let e = m.list("x/").unwrap_err();
    let text = e.to_string();
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    assert!(
        text.contains("malformed") && text.contains("`list`") && text.contains("stderr"),
        "{text}"
    );
}

#[test]
fn two_threads_write_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = plugin(dir.path(), &[]);
    let datas: Vec<Vec<u8>> = (0..2).map(|i| pattern(3 << 20, 10 + i)).collect();
    std::thread::scope(|s| {
        for (i, data) in datas.iter().enumerate() {
            let m = &m;
            s.spawn(move || {
                let mut w = m.create(&format!("par/obj{i}")).unwrap();
                for part in data.chunks(65_536) {
                    w.write_all(part).unwrap();
                }
                assert_eq!(w.commit().unwrap(), data.len() as u64);
            });
        }
    });
    for (i, data) in datas.iter().enumerate() {
        assert!(
            m.get(&format!("par/obj{i}")).unwrap() == *data,
            "object {i} differs"
        );
    }
}
