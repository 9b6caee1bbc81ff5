//! A plain TCP proxy on 127.0.0.1 whose "network" a test can cut: [`TcpProxy::cut`] drops
//! every open connection and closes each new one at once until [`TcpProxy::heal`]. It knows
//! nothing of the protocol (TLS passes through untouched), so it tests a transport's retries.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct TcpProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    cut: AtomicBool,
    stop: AtomicBool,
    sockets: Mutex<Vec<TcpStream>>,
    /// Connections accepted and forwarded, and ones closed at once while cut.
    forwarded: AtomicU64,
    refused: AtomicU64,
}

impl TcpProxy {
    pub fn start(upstream: SocketAddr) -> io::Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            cut: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let s = Arc::clone(&shared);
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                if s.cut.load(Ordering::SeqCst) {
                    s.refused.fetch_add(1, Ordering::SeqCst);
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(s.upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                // As the transport does on its own sockets: no Nagle delay added in between.
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                s.forwarded.fetch_add(1, Ordering::SeqCst);
                {
                    let mut socks = s.sockets.lock().expect("sockets");
                    for t in [&client, &server] {
                        if let Ok(c) = t.try_clone() {
                            socks.push(c);
                        }
                    }
                }
                pump(&client, &server);
                pump(&server, &client);
            }
        });
        Ok(TcpProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address clients dial instead of the upstream's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cuts the network: open connections are dropped, new ones closed until `heal`.
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        for s in self.shared.sockets.lock().expect("sockets").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// Connections refused while the network was cut.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Connections forwarded to the upstream.
    pub fn forwarded(&self) -> u64 {
        self.shared.forwarded.load(Ordering::SeqCst)
    }
}

fn pump(from: &TcpStream, to: &TcpStream) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.cut();
        // Wakes the accept loop so it sees `stop`.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_then_cuts_then_heals() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            for c in echo.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut r = c.try_clone().unwrap();
                    let mut w = c;
                    let _ = io::copy(&mut r, &mut w);
                });
            }
        });
        let p = TcpProxy::start(up).unwrap();
        let echo_once = || -> io::Result<Vec<u8>> {
            let mut c = TcpStream::connect(p.addr())?;
            c.write_all(b"ping")?;
            let mut b = [0u8; 4];
            c.read_exact(&mut b)?;
            Ok(b.to_vec())
        };
        assert_eq!(echo_once().unwrap(), b"ping");
        p.cut();
        assert!(echo_once().is_err());
        assert_eq!(p.refused(), 1);
        p.heal();
        assert_eq!(echo_once().unwrap(), b"ping");
        assert_eq!(p.forwarded(), 2);
    }
}
