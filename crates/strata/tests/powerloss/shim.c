/* Power-loss shim for crates/strata/tests/torture.rs: preloaded into `strata serve`
 * (LD_PRELOAD), it logs every operation under one directory that decides what a power
 * cut would keep, so that the test can rebuild the directory as the disk would hold it
 * after one: file contents up to their last fsync, directory entries as of their
 * directory's last fsync.
 *
 * Logged, one line each, after the call succeeded (under one lock, so the log is in the
 * order the calls happened):
 *   S <size> <path>       fsync/fdatasync of a regular file, its size then (the path
 *                         ends " (deleted)" if the file was unlinked before)
 *   D <path>              fsync of a directory
 *   C <path>              a file created (open with O_CREAT of a name that did not exist)
 *   M <path>              a directory created
 *   R <side> <old> <new>  a rename; <side> is a hard link to what <new> named before, or -
 *   U <side> <path>       an unlink (or rmdir: <side> is -); <side> keeps the file's bytes
 *   L <old> <new>         a hard link <new> made to <old>
 * The power cut: once the file STRATA_POWERLOSS_CUT_FILE exists, the next such operation
 * logs "X" and SIGKILLs the process, inside the lock and before the call, so no operation
 * is half done and unlogged.
 *
 * Environment: STRATA_POWERLOSS_DIR (paths under it are logged), STRATA_POWERLOSS_LOG,
 * STRATA_POWERLOSS_SIDE (a directory on the same file system, for the hard links),
 * STRATA_POWERLOSS_CUT_FILE. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static const char *watched;
static size_t watched_len;
static const char *side_dir;
static const char *cut_file;
static long side_links;

static void setup_once(void) {
    watched = getenv("STRATA_POWERLOSS_DIR");
    watched_len = watched ? strlen(watched) : 0;
    side_dir = getenv("STRATA_POWERLOSS_SIDE");
    cut_file = getenv("STRATA_POWERLOSS_CUT_FILE");
    const char *log = getenv("STRATA_POWERLOSS_LOG");
    if (log) log_fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void setup(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, setup_once);
}

static void emit(const char *line) {
    size_t len = strlen(line);
    while (len > 0) {
        ssize_t n = write(log_fd, line, len);
        if (n <= 0) abort(); /* a log that lies would make the test lie */
        line += n;
        len -= (size_t)n;
    }
}

/* Absolute path of `path` relative to `dirfd`, into `out`. */
static void resolve(int dirfd, const char *path, char *out) {
    if (path[0] == '/') {
        snprintf(out, PATH_MAX, "%s", path);
        return;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = 0;
    }
    if (strlen(base) + strlen(path) + 2 > PATH_MAX) abort();
    strcat(strcat(base, "/"), path);
    memcpy(out, base, strlen(base) + 1);
}

static int is_watched(const char *abs) {
    return log_fd >= 0 && watched && strncmp(abs, watched, watched_len) == 0 &&
           (abs[watched_len] == '/' || abs[watched_len] == 0);
}

/* Takes the lock; cuts the power instead of returning if the time has come. */
static void begin(void) {
    pthread_mutex_lock(&lock);
    struct stat st;
    if (cut_file && stat(cut_file, &st) == 0) {
        emit("X\n");
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
}

static void end(void) { pthread_mutex_unlock(&lock); }

/* A hard link to `abs` in the side directory, named into `out`; "-" if there is no file. */
static void keep_aside(const char *abs, char *out) {
    struct stat st;
    if (!side_dir || lstat(abs, &st) != 0 || !S_ISREG(st.st_mode)) {
        strcpy(out, "-");
        return;
    }
    snprintf(out, PATH_MAX, "%s/%ld", side_dir, ++side_links);
    if (link(abs, out) != 0) abort();
}

/* The path `fd` names now, into `abs` (with " (deleted)" after it once unlinked). */
static ssize_t fd_path(int fd, char *abs) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, abs, PATH_MAX - 1);
    abs[n > 0 ? n : 0] = 0;
    return n;
}

static int sync_common(int fd, int data_only) {
    setup();
    char abs[PATH_MAX];
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, data_only ? "fdatasync" : "fsync");
    if (fd_path(fd, abs) <= 0 || !is_watched(abs)) return real(fd);
    begin();
    /* Again under the lock: another thread may have renamed or unlinked it meanwhile. */
    fd_path(fd, abs);
    int rc = real(fd);
    struct stat st;
    if (rc == 0 && fstat(fd, &st) == 0) {
        char line[PATH_MAX + 64];
        if (S_ISDIR(st.st_mode))
            snprintf(line, sizeof line, "D %s\n", abs);
        else
            snprintf(line, sizeof line, "S %lld %s\n", (long long)st.st_size, abs);
        emit(line);
    }
    end();
    return rc;
}

int fsync(int fd) { return sync_common(fd, 0); }
int fdatasync(int fd) { return sync_common(fd, 1); }

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* `symbol` is the real function: open/open64 (`at` 0) or openat/openat64 (`at` 1). */
static int open_common(const char *symbol, int at, int dirfd, const char *path, int flags, mode_t mode) {
    setup();
    void *real = dlsym(RTLD_NEXT, symbol);
#define CALL_REAL() (at ? ((openat_fn)real)(dirfd, path, flags, mode) : ((open_fn)real)(path, flags, mode))
    if (!(flags & O_CREAT)) return CALL_REAL();
    char abs[PATH_MAX];
    resolve(dirfd, path, abs);
    if (!is_watched(abs)) return CALL_REAL();
    begin();
    struct stat st;
    int existed = lstat(abs, &st) == 0;
    int rc = CALL_REAL();
#undef CALL_REAL
    if (rc >= 0 && !existed) {
        char line[PATH_MAX + 8];
        snprintf(line, sizeof line, "C %s\n", abs);
        emit(line);
    }
    end();
    return rc;
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
    return open_common("open", 0, AT_FDCWD, path, flags, m);
}
int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
    return open_common("open64", 0, AT_FDCWD, path, flags, m);
}
int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
    return open_common("openat", 1, dirfd, path, flags, m);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
    return open_common("openat64", 1, dirfd, path, flags, m);
}

static int mkdir_common(int dirfd, const char *path, mode_t mode) {
    setup();
    char abs[PATH_MAX];
    resolve(dirfd, path, abs);
    int (*real)(int, const char *, mode_t) = (int (*)(int, const char *, mode_t))dlsym(RTLD_NEXT, "mkdirat");
    if (!is_watched(abs)) return real(dirfd, path, mode);
    begin();
    int rc = real(dirfd, path, mode);
    if (rc == 0) {
        char line[PATH_MAX + 8];
        snprintf(line, sizeof line, "M %s\n", abs);
        emit(line);
    }
    end();
    return rc;
}

int mkdir(const char *path, mode_t mode) { return mkdir_common(AT_FDCWD, path, mode); }
int mkdirat(int dirfd, const char *path, mode_t mode) { return mkdir_common(dirfd, path, mode); }

static int rename_common(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned flags) {
    setup();
    char old_abs[PATH_MAX], new_abs[PATH_MAX];
    resolve(olddirfd, oldpath, old_abs);
    resolve(newdirfd, newpath, new_abs);
    int (*real)(int, const char *, int, const char *, unsigned) =
        (int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT, "renameat2");
    if (!is_watched(old_abs) && !is_watched(new_abs)) return real(olddirfd, oldpath, newdirfd, newpath, flags);
    begin();
    char side[PATH_MAX];
    keep_aside(new_abs, side);
    int rc = real(olddirfd, oldpath, newdirfd, newpath, flags);
    if (rc == 0) {
        char line[3 * PATH_MAX + 8];
        snprintf(line, sizeof line, "R %s %s %s\n", side, old_abs, new_abs);
        emit(line);
    } else if (strcmp(side, "-") != 0) {
        unlink(side);
    }
    end();
    return rc;
}

int rename(const char *o, const char *n) { return rename_common(AT_FDCWD, o, AT_FDCWD, n, 0); }
int renameat(int od, const char *o, int nd, const char *n) { return rename_common(od, o, nd, n, 0); }
int renameat2(int od, const char *o, int nd, const char *n, unsigned f) { return rename_common(od, o, nd, n, f); }

static int unlink_common(int dirfd, const char *path, int flags) {
    setup();
    char abs[PATH_MAX];
    resolve(dirfd, path, abs);
    int (*real)(int, const char *, int) = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
    if (!is_watched(abs)) return real(dirfd, path, flags);
    begin();
    char side[PATH_MAX];
    keep_aside(abs, side);
    int rc = real(dirfd, path, flags);
    if (rc == 0) {
        char line[2 * PATH_MAX + 8];
        snprintf(line, sizeof line, "U %s %s\n", side, abs);
        emit(line);
    } else if (strcmp(side, "-") != 0) {
        unlink(side);
    }
    end();
    return rc;
}

int unlink(const char *path) { return unlink_common(AT_FDCWD, path, 0); }
int unlinkat(int dirfd, const char *path, int flags) { return unlink_common(dirfd, path, flags); }
int rmdir(const char *path) { return unlink_common(AT_FDCWD, path, AT_REMOVEDIR); }

static int link_common(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
    setup();
    char old_abs[PATH_MAX], new_abs[PATH_MAX];
    resolve(olddirfd, oldpath, old_abs);
    resolve(newdirfd, newpath, new_abs);
    int (*real)(int, const char *, int, const char *, int) =
        (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
    if (!is_watched(new_abs)) return real(olddirfd, oldpath, newdirfd, newpath, flags);
    begin();
    int rc = real(olddirfd, oldpath, newdirfd, newpath, flags);
    if (rc == 0) {
        char line[2 * PATH_MAX + 8];
        snprintf(line, sizeof line, "L %s %s\n", old_abs, new_abs);
        emit(line);
    }
    end();
    return rc;
}

int link(const char *o, const char *n) { return link_common(AT_FDCWD, o, AT_FDCWD, n, 0); }
int linkat(int od, const char *o, int nd, const char *n, int f) { return link_common(od, o, nd, n, f); }
