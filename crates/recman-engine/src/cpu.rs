//! CPU time of the calling thread: what tells a channel busy checking and compressing from one
//! waiting for its devices. A leaf below the I/O engine, which measures its writer threads with
//! it, and below tuning, which reports it.

use std::time::Duration;

/// User plus system CPU time of the calling thread so far (zero where the kernel cannot say).
pub fn thread_cpu_time() -> Duration {
    cpu_time(libc::RUSAGE_THREAD)
}

/// User plus system CPU time of the whole process so far: every thread's, the kernel's work
/// for their I/O included (zero where the kernel cannot say).
pub fn process_cpu_time() -> Duration {
    cpu_time(libc::RUSAGE_SELF)
}

fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: getrusage writes one plain struct that we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
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

/// Cores' worth of CPU time the process may use now: the cores it may run on, within its
/// cgroup's CPU limit.
pub fn allowed_cores() -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    cgroup_cpu_limit().map_or(cores, |l| l.min(cores))
}

/// Cores' worth of CPU time the process's cgroup allows: a container's CPU limit (cgroup v2
/// `cpu.max`, v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`), the least along the group's
/// path up to the root; None without one. calibrate's CPU probes last milliseconds and run at
/// full speed inside one period of the quota, so only the limit itself tells what a backup of
/// minutes will get.
pub fn cgroup_cpu_limit() -> Option<f64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cpu_limit_of(&groups, |p| std::fs::read_to_string(p).ok())
}

/// [`cgroup_cpu_limit`] from the text of `/proc/self/cgroup`, reading the controllers'
/// files with `read`.
fn cpu_limit_of(groups: &str, read: impl Fn(&str) -> Option<String>) -> Option<f64> {
    let mut least: Option<f64> = None;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let v1 = controllers.split(',').any(|c| c == "cpu");
        if !v1 && !controllers.is_empty() {
            continue;
        }
        let mut at = path.trim_end_matches('/').to_string();
        loop {
            let limit = if v1 {
                let dir = format!("/sys/fs/cgroup/cpu{at}");
                let quota = read(&format!("{dir}/cpu.cfs_quota_us"));
                let period = read(&format!("{dir}/cpu.cfs_period_us"));
                quota
                    .zip(period)
                    .and_then(|(q, p)| ratio(q.trim(), p.trim()))
            } else {
                read(&format!("/sys/fs/cgroup{at}/cpu.max")).and_then(|m| {
                    let mut f = m.split_whitespace();
                    ratio(f.next()?, f.next().unwrap_or("100000"))
                })
            };
            if let Some(l) = limit {
                least = Some(least.map_or(l, |x: f64| x.min(l)));
            }
            match at.rfind('/') {
                Some(i) => at.truncate(i),
                None => break,
            }
        }
    }
    least
}

/// A quota over a period, in cores; None for "max" or -1 (no limit).
fn ratio(quota: &str, period: &str) -> Option<f64> {
    let q: f64 = quota.parse().ok()?;
    let p: f64 = period.parse().ok()?;
    (q > 0.0 && p > 0.0).then(|| q / p)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    fn limit(groups: &str, files: &[(&str, &str)]) -> Option<f64> {
        let files: HashMap<&str, &str> = files.iter().copied().collect();
        super::cpu_limit_of(groups, |p| files.get(p).map(|s| s.to_string()))
    }

    #[test]
    fn a_cfs_quota_on_the_group_or_a_parent_is_the_cores_a_backup_gets() {
        // cgroup v1, the quota on the process's own group
        let v1 = "4:memory:/x\n1:cpu,cpuacct:/pods/p1\n0::/\n";
        let own = [
            ("/sys/fs/cgroup/cpu/pods/p1/cpu.cfs_quota_us", "50000\n"),
            ("/sys/fs/cgroup/cpu/pods/p1/cpu.cfs_period_us", "100000\n"),
            ("/sys/fs/cgroup/cpu/pods/cpu.cfs_quota_us", "-1\n"),
            ("/sys/fs/cgroup/cpu/pods/cpu.cfs_period_us", "100000\n"),
        ];
        assert_eq!(limit(v1, &own), Some(0.5));
        // the tighter limit of a parent holds
        let parent = [
            ("/sys/fs/cgroup/cpu/pods/p1/cpu.cfs_quota_us", "300000"),
            ("/sys/fs/cgroup/cpu/pods/p1/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/cpu/pods/cpu.cfs_quota_us", "150000"),
            ("/sys/fs/cgroup/cpu/pods/cpu.cfs_period_us", "100000"),
        ];
        assert_eq!(limit(v1, &parent), Some(1.5));
        // cgroup v2
        let v2 = "0::/system.slice/recman.service\n";
        let max = [
            (
                "/sys/fs/cgroup/system.slice/recman.service/cpu.max",
                "25000 100000\n",
            ),
            ("/sys/fs/cgroup/system.slice/cpu.max", "max 100000\n"),
        ];
        assert_eq!(limit(v2, &max), Some(0.25));
        // no limit anywhere, or no files to read
        assert_eq!(
            limit(v2, &[("/sys/fs/cgroup/system.slice/cpu.max", "max 100000")]),
            None
        );
        assert_eq!(limit("1:cpu:/\n0::/\n", &[]), None);
    }

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
