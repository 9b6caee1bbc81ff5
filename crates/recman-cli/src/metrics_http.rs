//! `recman server --metrics-listen ADDR` on the repository host: `recman metrics` over plain
//! HTTP for a Prometheus scrape. Each scrape reads the catalog afresh (the same gauges as the
//! command), so what it serves is never older than the request. Plain HTTP because that is
//! what a scraper speaks by default; the gauges hold names, sizes and times, no secret.

use crate::cli::Global;
use anyhow::{Context, Result};

/// Starts serving the metrics on `addr` from a thread of its own; returns once it listens.
pub fn spawn(g: &Global, addr: &str) -> Result<()> {
    let server = tiny_http::Server::http(addr)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| {
            format!(
                "cannot serve metrics on {addr}; hint: give a free ADDR:PORT to --metrics-listen"
            )
        })?;
    let g = g.clone();
    eprintln!("recman server: metrics on http://{addr}/metrics");
    std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            for req in server.incoming_requests() {
                let reply = answer(&g, req.method(), req.url());
                let _ = req.respond(reply);
            }
        })
        .context("cannot start the metrics thread")?;
    Ok(())
}

type Reply = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn answer(g: &Global, method: &tiny_http::Method, url: &str) -> Reply {
    let path = url.split('?').next().unwrap_or("");
    if *method != tiny_http::Method::Get || !matches!(path, "/metrics" | "/") {
        return tiny_http::Response::from_string("only GET /metrics is served here\n")
            .with_status_code(404);
    }
    match scrape(g) {
        Ok(text) => tiny_http::Response::from_string(text).with_header(
            tiny_http::Header::from_bytes(
                &b"Content-Type"[..],
                &b"text/plain; version=0.0.4; charset=utf-8"[..],
            )
            .expect("a valid header"),
        ),
        Err(e) => {
            tiny_http::Response::from_string(format!("recman: {e:#}\n")).with_status_code(500)
        }
    }
}

fn scrape(g: &Global) -> Result<String> {
    let repo = crate::open::open_repo(g)?;
    let now = recman_command::metrics::now_micros();
    let file = crate::config::file_layer(g)?;
    let gauges = recman_command::metrics::collect(&repo, g.db.as_deref(), now, &file)?;
    Ok(crate::metrics::text(&gauges))
}
