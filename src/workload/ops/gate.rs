//! The window's control words: the stop and warm-up flags and the start gate, in a
//! shared mapping ([`super::shm`]) so that worker threads of fsbench and of its forked
//! worker processes obey the same ones. Workers arrive at the gate and wait; the
//! supervising thread opens it once every worker has arrived (or calls the run off),
//! then waits for them to finish.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::shm::{self, Shm, ZeroValid};

const CLOSED: u32 = 0;
const OPEN: u32 = 1;
const CALLED_OFF: u32 = 2;

/// Longest single futex wait: a waiter looks again at least this often.
const SLICE: Duration = Duration::from_millis(20);

/// The words (zero: not stopping, no warm-up, gate closed, nobody arrived).
#[repr(C)]
pub struct Words {
    /// Raised to stop every worker (duration, first done, interrupt, an error).
    pub stop: AtomicBool,
    /// Raised while the warm-up runs.
    pub warming: AtomicBool,
    arrived: AtomicU32,
    finished: AtomicU32,
    state: AtomicU32,
}

// SAFETY: atomics only, all valid at zero.
unsafe impl ZeroValid for Words {}

/// The control words of one window.
pub struct Control {
    w: Shm<Words>,
}

impl Control {
    /// Fresh words in a shared mapping: the warm-up flag raised when there is one.
    pub fn new(warmup: bool) -> io::Result<Control> {
        let c = Control { w: Shm::zeroed(1)? };
        c.warming.store(warmup, Ordering::Relaxed);
        Ok(c)
    }

    /// A worker is set up: wait for the gate; false when the run was called off.
    pub fn arrive_and_wait(&self) -> bool {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        shm::wake(&self.arrived);
        loop {
            match self.state.load(Ordering::Acquire) {
                CLOSED => shm::wait(&self.state, CLOSED, SLICE),
                s => return s == OPEN,
            }
        }
    }

    /// Open the gate as called off: the workers return at once.
    pub fn call_off(&self) {
        self.state.store(CALLED_OFF, Ordering::Release);
        shm::wake(&self.state);
    }

    /// Wait until `n` workers have arrived, or `give_up` says one never will (a worker
    /// process died), then open the gate.
    pub fn open_when(&self, n: usize, give_up: &mut dyn FnMut() -> bool) {
        loop {
            let a = self.arrived.load(Ordering::Acquire);
            if a as usize >= n || self.state.load(Ordering::Acquire) != CLOSED || give_up() {
                break;
            }
            shm::wait(&self.arrived, a, SLICE);
        }
        let _ = self.state.compare_exchange(CLOSED, OPEN, Ordering::AcqRel, Ordering::Acquire);
        shm::wake(&self.state);
    }

    /// A worker is done (a worker that fails before arriving must not hold the gate shut).
    pub fn finished(&self) {
        if self.state.load(Ordering::Acquire) == CLOSED {
            self.arrived.fetch_add(1, Ordering::AcqRel);
            shm::wake(&self.arrived);
        }
        self.finished.fetch_add(1, Ordering::AcqRel);
        shm::wake(&self.finished);
    }

    /// Wait up to `wait` for `n` finished workers; whether they are.
    pub fn all_finished(&self, n: usize, wait: Duration) -> bool {
        let f = self.finished.load(Ordering::Acquire);
        if f as usize >= n {
            return true;
        }
        shm::wait(&self.finished, f, wait.min(SLICE));
        self.finished.load(Ordering::Acquire) as usize >= n
    }
}

impl std::ops::Deref for Control {
    type Target = Words;
    fn deref(&self) -> &Words {
        &self.w[0]
    }
}
