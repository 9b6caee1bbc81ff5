//! CPU time of the calling thread: what tells a channel busy checking and compressing from one
//! waiting for its devices.

use std::time::Duration;

/// User plus system CPU time of the calling thread so far (zero where the kernel cannot say).
pub fn thread_cpu_time() -> Duration {
    // SAFETY: getrusage writes one plain struct that we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Time the calling thread was runnable but waited for a CPU, from the scheduler's
/// statistics (zero where the kernel keeps none).
pub fn thread_cpu_wait() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_thread_uses_cpu_and_a_sleeping_one_does_not() {
        let t0 = super::thread_cpu_time();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let slept = super::thread_cpu_time() - t0;
        let t1 = super::thread_cpu_time();
        let mut x = 0u64;
        while super::thread_cpu_time() - t1 < std::time::Duration::from_millis(50) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(
            slept < std::time::Duration::from_millis(50),
            "sleeping used {slept:?}"
        );
    }
}
