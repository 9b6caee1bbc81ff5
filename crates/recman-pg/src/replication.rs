//! The client side of PostgreSQL's streaming replication protocol, for the WAL receiver: a
//! physical replication connection (`replication=true`), the commands it needs
//! (IDENTIFY_SYSTEM, TIMELINE_HISTORY, START_REPLICATION) and the copy stream that follows.
//!
//! The `postgres` crate has no replication mode, and running pg_receivewal as a child costs
//! a wakeup, a read and a write per message the primary sends (one per commit under an OLTP
//! load). Here the receiver decides how often it reads: one read drains what has queued in
//! the socket since the last one. The connection is resolved exactly as every other recman
//! connection ([`ConnTarget`]: conninfo, service, environment, password file, sslmode).

use crate::conn::ConnTarget;
use crate::error::ConnectCause;
use crate::error::PgError;
use postgres::config::{ChannelBinding as CbMode, Host, SslMode};
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// The longest a replication command waits for the server's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// How much one read may take from the socket.
const READ_CHUNK: usize = 256 * 1024;

enum Transport {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Transport {
    fn set_read_timeout(&self, d: Option<Duration>) -> std::io::Result<()> {
        match self {
            Transport::Tcp(s) => s.set_read_timeout(d),
            Transport::Unix(s) => s.set_read_timeout(d),
            Transport::Tls(s) => s.sock.set_read_timeout(d),
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.read(buf),
            Transport::Unix(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.write(buf),
            Transport::Unix(s) => s.write(buf),
            Transport::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Transport::Tcp(s) => s.flush(),
            Transport::Unix(s) => s.flush(),
            Transport::Tls(s) => s.flush(),
        }
    }
}

/// What the server sent on the copy stream.
#[derive(Debug, PartialEq)]
pub enum CopyMessage {
    /// WAL starting at `start`.
    Data { start: u64, data: Vec<u8> },
    /// The server's WAL end; `reply`: it asks for a status update now.
    Keepalive { end: u64, reply: bool },
    /// The server ended the stream: the timeline it streamed has ended (a promotion).
    Done,
}

/// What IDENTIFY_SYSTEM says of the server.
#[derive(Debug, Clone)]
pub struct SystemIdentity {
    pub system_identifier: u64,
    pub timeline: u32,
    pub position: u64,
}

/// One physical replication connection.
pub struct ReplicationConn {
    io: Transport,
    display: String,
    /// Bytes read and not yet parsed start at `at`.
    buf: Vec<u8>,
    at: usize,
    /// What one read lands in (allocated once).
    chunk: Box<[u8]>,
    /// The server's major version, from its `server_version` at startup (0: not said).
    server_major: u32,
}

impl ReplicationConn {
    /// Connects to the first host of `target` that answers, as `application_name`.
    pub fn connect(target: &ConnTarget, application_name: &str) -> Result<Self, PgError> {
        let cfg = &target.config;
        let hosts = cfg.get_hosts();
        let ports = cfg.get_ports();
        let mut last = None;
        for i in 0..hosts.len().max(cfg.get_hostaddrs().len()).max(1) {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match Self::connect_one(target, i, port, application_name) {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    fn connect_one(
        target: &ConnTarget,
        i: usize,
        port: u16,
        application_name: &str,
    ) -> Result<Self, PgError> {
        let cfg = &target.config;
        let fail = |reason: String| PgError::Connect {
            target: target.display.clone(),
            reason,
            sqlstate: None,
            cause: ConnectCause::Server,
        };
        let timeout = cfg
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(10));
        let host = cfg.get_hosts().get(i).cloned();
        let io = match (&host, cfg.get_hostaddrs().get(i)) {
            (Some(Host::Unix(dir)), None) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                Transport::Unix(
                    UnixStream::connect(&path)
                        .map_err(|e| fail(format!("{}: {e}", path.display())))?,
                )
            }
            (h, addr) => {
                let name = match h {
                    Some(Host::Tcp(n)) => n.clone(),
                    _ => addr.map(|a| a.to_string()).unwrap_or_default(),
                };
                let addrs: Vec<_> = match addr {
                    Some(a) => vec![std::net::SocketAddr::new(*a, port)],
                    None => (name.as_str(), port)
                        .to_socket_addrs()
                        .map_err(|e| fail(format!("cannot resolve {name}: {e}")))?
                        .collect(),
                };
                let mut err = None;
                let mut sock = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            sock = Some(s);
                            break;
                        }
                        Err(e) => err = Some(format!("{a}: {e}")),
                    }
                }
                let sock = sock.ok_or_else(|| fail(err.unwrap_or_default()))?;
                let _ = sock.set_nodelay(true);
                // The TLS request and handshake wait no longer than the connection did.
                sock.set_read_timeout(Some(timeout))
                    .map_err(|e| fail(e.to_string()))?;
                Self::maybe_tls(target, sock, &name, &fail)?
            }
        };
        let mut conn = ReplicationConn {
            io,
            display: target.display.clone(),
            buf: Vec::with_capacity(READ_CHUNK),
            at: 0,
            chunk: vec![0u8; READ_CHUNK].into_boxed_slice(),
            server_major: 0,
        };
        conn.io
            .set_read_timeout(Some(timeout))
            .map_err(|e| fail(e.to_string()))?;
        conn.startup(target, application_name)?;
        conn.io
            .set_read_timeout(None)
            .map_err(|e| fail(e.to_string()))?;
        Ok(conn)
    }

    /// TLS as sslmode asks: `disable` never, `prefer` when the server offers it, the others
    /// always (their certificate checks live in the rustls configuration).
    fn maybe_tls(
        target: &ConnTarget,
        mut sock: TcpStream,
        name: &str,
        fail: &dyn Fn(String) -> PgError,
    ) -> Result<Transport, PgError> {
        let tls_fail = |reason: String, cause: ConnectCause| PgError::Connect {
            target: target.display.clone(),
            reason,
            sqlstate: None,
            cause,
        };
        let mode = target.config.get_ssl_mode();
        if mode == SslMode::Disable {
            return Ok(Transport::Tcp(sock));
        }
        // SSLRequest: length 8, code 80877103.
        let mut req = Vec::with_capacity(8);
        req.extend_from_slice(&8i32.to_be_bytes());
        req.extend_from_slice(&80_877_103i32.to_be_bytes());
        sock.write_all(&req).map_err(|e| fail(e.to_string()))?;
        let mut answer = [0u8; 1];
        sock.read_exact(&mut answer)
            .map_err(|e| fail(format!("no answer to the tls request: {e}")))?;
        if answer[0] != b'S' {
            return match mode {
                SslMode::Prefer => Ok(Transport::Tcp(sock)),
                _ => Err(tls_fail(
                    format!(
                        "the server does not accept tls connections, and {} asks for tls",
                        target.tls.described
                    ),
                    ConnectCause::Tls,
                )),
            };
        }
        let config = target.tls.client_config(&target.display)?;
        let server = rustls::pki_types::ServerName::try_from(name.to_string()).map_err(|e| {
            tls_fail(
                format!("{name:?} is no tls server name: {e}"),
                ConnectCause::Tls,
            )
        })?;
        let tls = rustls::ClientConnection::new(config, server)
            .map_err(|e| tls_fail(format!("tls setup: {e}"), ConnectCause::Tls))?;
        let mut stream = rustls::StreamOwned::new(tls, sock);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(|e| {
                let cause = crate::tls::cause_in(&e).unwrap_or(ConnectCause::Tls);
                tls_fail(format!("tls handshake: {e}"), cause)
            })?;
        }
        Ok(Transport::Tls(Box::new(stream)))
    }

    fn startup(&mut self, target: &ConnTarget, application_name: &str) -> Result<(), PgError> {
        let cfg = &target.config;
        let user = cfg.get_user().unwrap_or("postgres").to_string();
        let mut body = Vec::new();
        body.extend_from_slice(&196_608i32.to_be_bytes()); // protocol 3.0
        for (k, v) in [
            ("user", user.as_str()),
            ("replication", "true"),
            ("application_name", application_name),
        ] {
            put_cstr(&mut body, k);
            put_cstr(&mut body, v);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        self.send_raw(&msg)?;
        let display = self.display.clone();
        let password = || {
            cfg.get_password().ok_or_else(|| PgError::Connect {
                target: display.clone(),
                reason: format!("the server asks a password of user {user:?} and none was given"),
                sqlstate: None,
                cause: ConnectCause::NoPassword,
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'R' => {
                    let code = be_i32(&body, 0);
                    let data = &body[4..];
                    match code {
                        0 => {}
                        3 => {
                            let mut p = password()?.to_vec();
                            p.push(0);
                            self.send(b'p', &p)?;
                        }
                        5 => {
                            let salt: [u8; 4] =
                                data[..4].try_into().map_err(|_| self.proto("md5 salt"))?;
                            let mut h = postgres_protocol::authentication::md5_hash(
                                user.as_bytes(),
                                password()?,
                                salt,
                            )
                            .into_bytes();
                            h.push(0);
                            self.send(b'p', &h)?;
                        }
                        10 => {
                            let offered = data
                                .split(|b| *b == 0)
                                .any(|m| m == SCRAM_SHA_256.as_bytes());
                            if !offered {
                                return Err(self.refused(
                                    "the server offers no sasl mechanism recman knows (scram-sha-256)",
                                ));
                            }
                            if cfg.get_channel_binding() == CbMode::Require {
                                return Err(self.refused(
                                    "channel_binding=require: the wal receiver does not bind scram to the tls channel; hint: use channel_binding=prefer or disable for the receiver",
                                ));
                            }
                            // "n": this client binds to no channel. Saying "y" (supports it,
                            // thinks the server does not) is refused by a server offering
                            // SCRAM-SHA-256-PLUS over TLS, as a sign of a downgrade.
                            let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                            let mut m = Vec::new();
                            put_cstr(&mut m, SCRAM_SHA_256);
                            m.extend_from_slice(&(s.message().len() as i32).to_be_bytes());
                            m.extend_from_slice(s.message());
                            self.send(b'p', &m)?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| self.proto("sasl continue"))?;
                            s.update(data).map_err(|e| self.refused(&e.to_string()))?;
                            let m = s.message().to_vec();
                            self.send(b'p', &m)?;
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| self.proto("sasl final"))?;
                            s.finish(data).map_err(|e| self.refused(&e.to_string()))?;
                        }
                        other => {
                            return Err(self.refused(&format!(
                                "the server asks for authentication method {other}, which the wal receiver does not have (gssapi, sspi, kerberos); hint: allow scram-sha-256, md5, password or cert for replication connections in pg_hba.conf"
                            )));
                        }
                    }
                }
                b'E' => return Err(self.server_error("connect", &body, true)),
                b'Z' => return Ok(()),
                b'S' => {
                    let mut f = body.split(|b| *b == 0);
                    if f.next() == Some(b"server_version".as_slice()) {
                        self.server_major = major_of(f.next().unwrap_or_default());
                    }
                }
                // BackendKeyData, NoticeResponse.
                _ => {}
            }
        }
    }

    /// A replication command's result rows (text), or the server's error.
    pub fn command(&mut self, sql: &str) -> Result<Vec<Vec<Option<Vec<u8>>>>, PgError> {
        let mut q = Vec::new();
        put_cstr(&mut q, sql);
        self.send(b'Q', &q)?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'D' => rows.push(data_row(&body)),
                b'E' => error = Some(self.server_error(sql, &body, false)),
                b'Z' => return error.map_or(Ok(rows), Err),
                _ => {}
            }
        }
    }

    pub fn identify_system(&mut self) -> Result<SystemIdentity, PgError> {
        let rows = self.command("IDENTIFY_SYSTEM")?;
        let row = rows.first().ok_or_else(|| self.proto("IDENTIFY_SYSTEM"))?;
        let text = |i: usize| {
            row.get(i)
                .cloned()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        Ok(SystemIdentity {
            system_identifier: text(0)
                .parse()
                .map_err(|_| self.proto("system identifier"))?,
            timeline: text(1).parse().map_err(|_| self.proto("timeline"))?,
            position: text(2)
                .parse::<crate::lsn::Lsn>()
                .map_err(|_| self.proto("xlogpos"))?
                .0,
        })
    }

    /// The server's WAL segment size (`SHOW wal_segment_size`, which a replication
    /// connection answers), in bytes.
    pub fn segment_size(&mut self) -> Result<u64, PgError> {
        let rows = self.command("SHOW wal_segment_size")?;
        let text = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        crate::session::parse_size(&text)
            .filter(|s| s.is_power_of_two())
            .ok_or_else(|| self.proto("wal_segment_size"))
    }

    /// Creates physical slot `slot`, reserving WAL at once. Returns false when it exists.
    pub fn create_physical_slot(&mut self, slot: &str) -> Result<bool, PgError> {
        // The form without parentheses: every supported major accepts it.
        match self.command(&format!(
            "CREATE_REPLICATION_SLOT {} PHYSICAL RESERVE_WAL",
            quote_ident(slot)
        )) {
            Ok(_) => Ok(true),
            Err(e) if e.sqlstate() == Some("42710") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Where slot `slot` would start a stream (READ_REPLICATION_SLOT, PostgreSQL 15 and
    /// later); None when it reserves no WAL, or the server is older and cannot say.
    pub fn slot_restart(&mut self, slot: &str) -> Result<Option<u64>, PgError> {
        if self.server_major < 15 {
            return Ok(None);
        }
        let rows = self.command(&format!("READ_REPLICATION_SLOT {}", quote_ident(slot)))?;
        Ok(rows
            .first()
            .and_then(|r| r.get(1).cloned().flatten())
            .and_then(|b| String::from_utf8_lossy(&b).parse::<crate::lsn::Lsn>().ok())
            .map(|l| l.0))
    }

    /// The history file of timeline `tli`: its name and content.
    pub fn timeline_history(&mut self, tli: u32) -> Result<(String, Vec<u8>), PgError> {
        let rows = self.command(&format!("TIMELINE_HISTORY {tli}"))?;
        let row = rows.first().ok_or_else(|| self.proto("TIMELINE_HISTORY"))?;
        match (
            row.first().cloned().flatten(),
            row.get(1).cloned().flatten(),
        ) {
            (Some(name), Some(content)) => {
                Ok((String::from_utf8_lossy(&name).into_owned(), content))
            }
            _ => Err(self.proto("TIMELINE_HISTORY")),
        }
    }

    /// Starts streaming timeline `tli` from `start` out of physical slot `slot`.
    pub fn start_replication(&mut self, slot: &str, start: u64, tli: u32) -> Result<(), PgError> {
        let sql = format!(
            "START_REPLICATION SLOT {} PHYSICAL {} TIMELINE {tli}",
            quote_ident(slot),
            crate::lsn::Lsn(start)
        );
        let mut q = Vec::new();
        put_cstr(&mut q, &sql);
        self.send(b'Q', &q)?;
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'W' => return Ok(()),
                b'E' => {
                    let e = self.server_error(&sql, &body, false);
                    // Read up to ReadyForQuery so that the connection stays usable.
                    while self.message()?.0 != b'Z' {}
                    return Err(e);
                }
                _ => {}
            }
        }
    }

    /// Reads what the socket holds, waiting up to `wait` for the first byte. Returns the
    /// number of bytes read (0: nothing came).
    pub fn fill(&mut self, wait: Duration) -> Result<usize, PgError> {
        self.io
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(|e| self.io_err("set read timeout", e))?;
        let n = match self.io.read(&mut self.chunk) {
            Ok(0) => {
                return Err(self.io_err(
                    "read",
                    std::io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ),
                ));
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
            Err(e) => return Err(self.io_err("read", e)),
        };
        self.buf.extend_from_slice(&self.chunk[..n]);
        Ok(n)
    }

    /// The next complete copy-stream message already read, if any.
    pub fn next_copy(&mut self) -> Result<Option<CopyMessage>, PgError> {
        loop {
            let Some((tag, body)) = self.take_buffered() else {
                return Ok(None);
            };
            match tag {
                b'd' => match body.first() {
                    Some(b'w') if body.len() >= 25 => {
                        return Ok(Some(CopyMessage::Data {
                            start: be_u64(&body, 1),
                            data: body[25..].to_vec(),
                        }));
                    }
                    Some(b'k') if body.len() >= 18 => {
                        return Ok(Some(CopyMessage::Keepalive {
                            end: be_u64(&body, 1),
                            reply: body[17] != 0,
                        }));
                    }
                    _ => return Err(self.proto("copy data")),
                },
                b'c' => return Ok(Some(CopyMessage::Done)),
                b'E' => return Err(self.server_error("streaming", &body, false)),
                _ => {}
            }
        }
    }

    /// After [`CopyMessage::Done`]: ends the copy from this side and reads where the next
    /// timeline starts (None when the server sent no next timeline: it shut down).
    pub fn end_timeline(&mut self) -> Result<Option<(u32, u64)>, PgError> {
        self.send(b'c', &[])?;
        let mut next = None;
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'D' => {
                    let row = data_row(&body);
                    let text = |i: usize| {
                        row.get(i)
                            .cloned()
                            .flatten()
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                    };
                    if let (Some(t), Some(l)) = (text(0), text(1)) {
                        let tli = t.parse().map_err(|_| self.proto("next timeline"))?;
                        let lsn = l
                            .parse::<crate::lsn::Lsn>()
                            .map_err(|_| self.proto("next timeline start"))?;
                        next = Some((tli, lsn.0));
                    }
                }
                b'E' => return Err(self.server_error("end of timeline", &body, false)),
                b'Z' => return Ok(next),
                _ => {}
            }
        }
    }

    /// A standby status update: received up to `write`, durable up to `flush`.
    pub fn send_status(
        &mut self,
        write: u64,
        flush: u64,
        now_unix_micros: i64,
    ) -> Result<(), PgError> {
        let mut m = Vec::with_capacity(34);
        m.push(b'r');
        m.extend_from_slice(&write.to_be_bytes());
        m.extend_from_slice(&flush.to_be_bytes());
        // Apply: a receiver applies nothing.
        m.extend_from_slice(&0u64.to_be_bytes());
        m.extend_from_slice(&(now_unix_micros - PG_EPOCH_MICROS).to_be_bytes());
        m.push(0);
        self.send(b'd', &m)
    }

    /// Says goodbye; errors are moot then.
    pub fn close(mut self) {
        let _ = self.send(b'X', &[]);
    }

    fn send(&mut self, tag: u8, body: &[u8]) -> Result<(), PgError> {
        let mut m = Vec::with_capacity(body.len() + 5);
        m.push(tag);
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        self.send_raw(&m)
    }

    fn send_raw(&mut self, m: &[u8]) -> Result<(), PgError> {
        self.io
            .write_all(m)
            .and_then(|_| self.io.flush())
            .map_err(|e| self.io_err("write", e))
    }

    /// One whole message of a command's answer, reading as needed. A server that stays
    /// silent for [`ANSWER_WAIT`] fails the command, so that a hung server cannot hold the
    /// receiver's stream (and its stop) forever.
    fn message(&mut self) -> Result<(u8, Vec<u8>), PgError> {
        let deadline = std::time::Instant::now() + ANSWER_WAIT;
        loop {
            if let Some(m) = self.take_buffered() {
                return Ok(m);
            }
            if self.fill(Duration::from_secs(1))? == 0 && std::time::Instant::now() >= deadline {
                return Err(self.io_err(
                    "read",
                    std::io::Error::new(
                        ErrorKind::TimedOut,
                        format!(
                            "the server did not answer within {} s",
                            ANSWER_WAIT.as_secs()
                        ),
                    ),
                ));
            }
        }
    }

    fn take_buffered(&mut self) -> Option<(u8, Vec<u8>)> {
        let rest = &self.buf[self.at..];
        if rest.len() < 5 {
            return None;
        }
        let len = be_i32(rest, 1).max(4) as usize;
        if rest.len() < 1 + len {
            return None;
        }
        let m = (rest[0], rest[5..1 + len].to_vec());
        self.at += 1 + len;
        if self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        } else if self.at > READ_CHUNK {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        Some(m)
    }

    fn server_error(&self, what: &str, body: &[u8], connecting: bool) -> PgError {
        let mut message = String::new();
        let mut code = None;
        for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
            let text = String::from_utf8_lossy(&field[1..]).into_owned();
            match field[0] {
                b'M' => message = text,
                b'C' => code = Some(text),
                _ => {}
            }
        }
        if connecting {
            PgError::Connect {
                target: self.display.clone(),
                reason: message,
                sqlstate: code,
                cause: ConnectCause::Server,
            }
        } else {
            PgError::Query {
                target: self.display.clone(),
                what: what.to_string(),
                reason: message,
                sqlstate: code,
            }
        }
    }

    fn refused(&self, reason: &str) -> PgError {
        PgError::Connect {
            target: self.display.clone(),
            reason: reason.to_string(),
            sqlstate: None,
            cause: ConnectCause::Server,
        }
    }

    fn proto(&self, what: &str) -> PgError {
        PgError::Query {
            target: self.display.clone(),
            what: what.to_string(),
            reason: "the server's answer does not follow the replication protocol".into(),
            sqlstate: None,
        }
    }

    fn io_err(&self, what: &str, e: std::io::Error) -> PgError {
        PgError::Query {
            target: self.display.clone(),
            what: format!("replication connection {what}"),
            reason: e.to_string(),
            sqlstate: None,
        }
    }
}

/// The major version in a `server_version` such as "15.18 (Debian 15.18-0+deb12u1)" or
/// "13.23"; 0 when it does not start with one.
fn major_of(version: &[u8]) -> u32 {
    let text = String::from_utf8_lossy(version);
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(0)
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn put_cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .map(|s| i32::from_be_bytes(s.try_into().expect("4 bytes")))
        .unwrap_or(0)
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map(|s| u64::from_be_bytes(s.try_into().expect("8 bytes")))
        .unwrap_or(0)
}

/// A DataRow's columns (None: NULL).
fn data_row(body: &[u8]) -> Vec<Option<Vec<u8>>> {
    let n = body
        .get(..2)
        .map(|b| i16::from_be_bytes([b[0], b[1]]))
        .unwrap_or(0);
    let mut at = 2;
    let mut out = Vec::new();
    for _ in 0..n.max(0) {
        let len = be_i32(body, at);
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            let end = (at + len as usize).min(body.len());
            out.push(Some(body[at..end].to_vec()));
            at = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_follow_the_server() {
        let name = |tli, lsn, seg| {
            crate::lsn::WalName::containing(tli, crate::lsn::Lsn(lsn), seg).to_string()
        };
        assert_eq!(
            name(1, 0x0000_0001_0200_0000, 16 << 20),
            "000000010000000100000002"
        );
        assert_eq!(
            name(3, 0x0000_0000_4000_0000, 1 << 30),
            "000000030000000000000001"
        );
    }

    #[test]
    fn majors_read_from_server_version() {
        assert_eq!(major_of(b"15.18 (Debian 15.18-0+deb12u1)"), 15);
        assert_eq!(major_of(b"13.23"), 13);
        assert_eq!(major_of(b"18beta1"), 18);
        assert_eq!(major_of(b""), 0);
    }

    #[test]
    fn sizes_read_as_show_prints_them() {
        assert_eq!(crate::session::parse_size("16MB"), Some(16 << 20));
        assert_eq!(crate::session::parse_size("1GB"), Some(1 << 30));
        assert_eq!(crate::session::parse_size("8192kB"), Some(8 << 20));
        assert_eq!(crate::session::parse_size("16 MB"), Some(16 << 20));
        assert_eq!(crate::session::parse_size("MB"), None);
        assert_eq!(crate::session::parse_size("16TB"), None);
    }

    #[test]
    fn data_rows_keep_nulls_and_bytes() {
        let mut b = 2i16.to_be_bytes().to_vec();
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&3i32.to_be_bytes());
        b.extend_from_slice(b"a\0b");
        assert_eq!(data_row(&b), vec![None, Some(b"a\0b".to_vec())]);
    }
}
