//! The one tokio runtime behind the blocking API: two worker threads, started on first use.

use std::sync::OnceLock;

/// The transport's runtime, shared by every client and server of the process.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("recman-remote")
            .enable_all()
            .build()
            .expect("the transport's runtime starts")
    })
}
