//! The fleet page from the command line: `recman report fleet --html FILE` writes it, and
//! `recman --repo R server --page-listen ADDR` serves it with the fleet's mutual TLS. Both
//! read the catalog through `recman_command::fleet_page` (the server at each request, so the
//! page is never older than the request) and render it with the same pure function.

use crate::cli::Global;
use anyhow::{Context as _, Result, bail};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

/// The page of the repository at --repo, as it is now.
fn page(g: &Global) -> Result<String> {
    let repo = crate::open::open_repo(g)?;
    let file = crate::config::file_layer(g)?;
    let now = recman_command::metrics::now_micros();
    let data = recman_command::fleet_page::collect(repo, now, &file)?;
    Ok(recman_command::fleet_page::html::render(&data))
}

/// `report fleet --html FILE`: the page written beside FILE, synced, then renamed over it,
/// so that a reader (a web server publishing the file) never sees half a page.
pub fn write(g: &Global, path: &Path) -> Result<()> {
    let html = page(g)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let hint = || {
        format!(
            "cannot write the fleet page to {}; hint: check the directory exists and is writable",
            path.display()
        )
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(name) = name else {
        bail!(
            "--html {}: not a file name; hint: give the page's file, e.g. fleet.html",
            path.display()
        );
    };
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(html.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(hint);
    }
    if !g.quiet {
        println!("fleet page: {}", path.display());
    }
    Ok(())
}

/// The address the page binds: a port alone (`8472` or `:8472`) means the loopback
/// interface, so that the page is reachable from elsewhere only when an address says so.
pub fn page_addr(given: &str) -> String {
    let port = given.strip_prefix(':').unwrap_or(given);
    if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{port}")
    } else {
        given.to_string()
    }
}

/// The read-only token from its file: the first line, without surrounding white space.
fn read_token(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the page token file {}; hint: give a readable file to --page-token",
            path.display()
        )
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
        bail!(
            "the page token file {} holds no usable token; hint: put one line of printable characters without spaces in it",
            path.display()
        );
    }
    Ok(token)
}

/// `server --page-listen ADDR`: starts serving the page to the `--page-allow` CNs (none: any
/// certificate the CA signed); returns once it listens.
pub fn spawn(g: &Global, addr: &str, allow: &[String], token: Option<&Path>) -> Result<()> {
    let tls = crate::fleet_args::TlsArgs::of(g).files("recman server --page-listen")?;
    let token = token.map(read_token).transpose()?;
    let g2 = g.clone();
    let render: recman_command::model::Render =
        Arc::new(move || page(&g2).map_err(|e| format!("{e:#}")));
    let addr = page_addr(addr);
    let handle = recman_command::fleet::serve_page(&addr, &tls, allow, token, render)?;
    eprintln!(
        "recman server: fleet page on https://{}/",
        handle.local_addr
    );
    // The page serves as long as the process runs: `recman server` ends only when stopped.
    std::mem::forget(handle);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_binds_the_loopback_interface() {
        assert_eq!(page_addr("8472"), "127.0.0.1:8472");
        assert_eq!(page_addr(":8472"), "127.0.0.1:8472");
        assert_eq!(page_addr("0.0.0.0:8472"), "0.0.0.0:8472");
        assert_eq!(page_addr("[::1]:8472"), "[::1]:8472");
    }
}
