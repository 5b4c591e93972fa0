//! Lowering a background thread's CPU priority, so that the work clients wait for (writes,
//! flushes, queries) gets the cores first and background work takes what is left.

/// Raises the calling thread's nice value by `by` (Linux keeps a nice value per thread;
/// the result is capped at 19, the lowest priority). A failure leaves the thread at its
/// priority: the work still runs, only sooner; `what` names the thread in the debug log
/// that says so.
#[allow(unsafe_code)] // nice: a libc call the standard library does not wrap.
pub fn lower_thread_priority(by: i32, what: &str) {
    // nice() may return -1 on success: only errno tells a failure.
    errno_clear();
    // SAFETY: nice reads no memory of ours; on Linux it changes the calling thread only.
    let result = unsafe { libc::nice(by) };
    let error = std::io::Error::last_os_error();
    if result == -1 && error.raw_os_error().is_some_and(|e| e != 0) {
        tracing::debug!("could not lower the priority of the {what} thread: {error}");
    }
}

#[allow(unsafe_code)] // errno is thread-local libc state.
fn errno_clear() {
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    unsafe { *libc::__errno_location() = 0 };
}
