//! Atomics in a shared anonymous mapping (`MAP_SHARED | MAP_ANONYMOUS`), made before
//! the worker processes are forked: threads of fsbench and threads of its forked worker
//! processes see the same words, so the fileset's pick state, the stop and warm-up flags
//! and the start gate work across processes as they do across threads.

use std::io;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

/// A type whose all-zero bytes are a valid value, and which is shared by reference only
/// (atomics): what a fresh anonymous mapping may hold.
///
/// # Safety
/// Implementors must be valid when every byte is zero and need no drop.
pub unsafe trait ZeroValid: Sync {}

// SAFETY: an atomic of zero bytes is the atomic holding 0 (false); none needs a drop.
unsafe impl ZeroValid for AtomicU32 {}
// SAFETY: as above.
unsafe impl ZeroValid for AtomicUsize {}
// SAFETY: as above.
unsafe impl ZeroValid for AtomicBool {}

/// `len` values of `T` in a shared anonymous mapping, zeroed; unmapped on drop. A forked
/// child inherits the mapping: the same memory, not a copy.
pub struct Shm<T: ZeroValid> {
    ptr: *mut T,
    len: usize,
    bytes: usize,
    _t: PhantomData<T>,
}

// SAFETY: the values are only reached through shared references and T is Sync.
unsafe impl<T: ZeroValid> Send for Shm<T> {}
// SAFETY: as above.
unsafe impl<T: ZeroValid> Sync for Shm<T> {}

impl<T: ZeroValid> Shm<T> {
    /// `len` zeroed values (a page at least is mapped, so `len` may be 0).
    pub fn zeroed(len: usize) -> io::Result<Shm<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?.max(1);
        // SAFETY: a fresh anonymous mapping; the kernel zeroes it, and page alignment
        // satisfies any atomic's.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Shm { ptr: p.cast(), len, bytes, _t: PhantomData })
    }
}

impl<T: ZeroValid> Deref for Shm<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` zero-valid values live at `ptr` until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: ZeroValid> Drop for Shm<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `zeroed`, no reference to it outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.bytes) };
    }
}

/// Wait while the word at `w` holds `val`, up to `timeout` (a futex on shared memory:
/// woken by [`wake`] from any process that maps it).
pub fn wait(w: &AtomicU32, val: u32, timeout: std::time::Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned word; the timespec outlives the call. Its
    // answer (woken, timed out, the value changed, interrupted) is the caller's to re-check.
    unsafe {
        libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAIT, val, &ts as *const libc::timespec, 0usize, 0u32);
    }
}

/// Wake every waiter on the word at `w`.
pub fn wake(w: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only reads the address.
    unsafe {
        libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0usize, 0usize, 0u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_forked_child_writes_words_the_parent_reads() {
        let s: Shm<AtomicU32> = Shm::zeroed(1000).unwrap();
        assert!(s.iter().all(|w| w.load(Ordering::Relaxed) == 0));
        let empty: Shm<AtomicU32> = Shm::zeroed(0).unwrap();
        assert!(empty.is_empty());
        // SAFETY: the child only stores to atomics and calls _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            s[999].store(7, Ordering::Relaxed);
            wake(&s[999]);
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(s[999].load(Ordering::Relaxed), 7);
    }
}
