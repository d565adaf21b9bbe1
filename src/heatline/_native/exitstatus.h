/* exitstatus.h: the status a profiled child process exits with, recorded once Python is done.
 *
 * A profiled child writes its profile from an atexit handler (run/follow.py), and Python runs
 * its atexit handlers inside Py_FinalizeEx, before main() returns the status that exit() is then
 * given (sys.exit(3): 3; an uncaught exception: 1; a plain end: 0): no Python code ever sees
 * it. glibc's on_exit() handlers are called with it, so the handler here appends it, in
 * decimal, to a file named beforehand: the child's profile, after its marshal data
 * (run/collect.py reads it there). Appending creates no file (on ext4 a new file is a new
 * inode to allocate: run/follow.py).
 *
 * The handler is registered once per process image: a fork child inherits it, together with
 * the parent's file name and pid, so it writes only in the process that named the file (a fork
 * child names its own when it starts profiling). A process that ends by _exit() or a signal
 * runs no exit handlers and appends nothing; those endings are recorded from Python. Without
 * on_exit() (not glibc) nothing is recorded. */
#ifndef HEATLINE_EXITSTATUS_H
#define HEATLINE_EXITSTATUS_H

/* Append this process's exit status to `path`, if it exists then, when it exits (a later call
 * names another file).
 * Returns 0, or -1 when it cannot be recorded (no on_exit(), no memory). */
int hl_exit_status_record(const char *path);

#endif
