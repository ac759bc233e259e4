//! A CPU hog beside the runtime under test: busy threads, one per core, that
//! compete with workerd for every core until dropped, as other work on a busy
//! machine (or a busy production host) does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct CpuHog {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<u64>>,
}

impl CpuHog {
    /// Starts one spinning thread per core.
    pub fn start() -> CpuHog {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut spins: u64 = 0;
                    while !stop.load(Ordering::Relaxed) {
                        spins = std::hint::black_box(spins.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                    spins
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
