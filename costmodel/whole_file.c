/*
 * whole_file.c — temporary file + rename, every write checked (see whole_file.h).
 */
#define _GNU_SOURCE /* fopencookie: the stream's writes keep their errno (see sink_write) */
#include "whole_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

cm_status whole_file_fail(const char *path, int errnum, char *err, size_t errlen)
{
    if (errnum == ENOSPC || errnum == EDQUOT)
        return cm_fail(err, errlen, CM_EIO, "writing '%s' failed: %s (disk full): free space "
                       "and run again; nothing was written", path, strerror(errnum));
    if (errnum)
        return cm_fail(err, errlen, CM_EIO, "writing '%s' failed: %s; nothing was written", path,
                       strerror(errnum));
    return cm_fail(err, errlen, CM_EIO, "writing '%s' failed; nothing was written", path);
}

/*
 * The FILE the caller writes to is a cookie stream over the descriptor, so the first failed
 * write(2) keeps its errno: stdio reports only "an error happened" (ferror), and by the time
 * the caller checks, errno is long gone — yet "disk full" is the message a user needs.
 */
typedef struct {
    int fd;
    int first_errno;
} sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(s->fd, buf + done, n - done);
        if (k < 0) {
            if (errno == EINTR) continue;
            if (!s->first_errno) s->first_errno = errno;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

static int sink_close(void *cookie)
{
    sink *s = cookie;
    int rc = close(s->fd);
    if (rc != 0 && !s->first_errno) s->first_errno = errno;
    s->fd = -1;
    return rc;
}

/* A write-only stream over fd that records the first error; NULL (fd closed) on failure. */
static FILE *sink_open(whole_file *w, int fd)
{
    sink *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return NULL;
    }
    s->fd = fd;
    cookie_io_functions_t io = {.write = sink_write, .close = sink_close};
    FILE *f = fopencookie(s, "w", io);
    if (!f) {
        close(fd);
        free(s);
        return NULL;
    }
    w->sink = s;
    return f;
}

static int sink_errno(const whole_file *w)
{
    return w->sink ? ((const sink *)w->sink)->first_errno : 0;
}

static void release(whole_file *w)
{
    free(w->sink);
    w->sink = NULL;
    free(w->path);
    free(w->tmp_path);
    w->path = w->tmp_path = NULL;
    w->f = NULL;
}

cm_status whole_file_open(whole_file *w, const char *path, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (!path || !*path)
        return cm_fail(err, errlen, CM_EINVAL, "an output file name is empty: give a path or '-'");
    if (!strcmp(path, "-")) {
        w->f = stdout;
        w->is_stdout = true;
        return CM_OK;
    }
    w->path = strdup(path);
    if (!w->path) return cm_fail(err, errlen, CM_ENOMEM, "out of memory opening '%s'", path);
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        release(w);
        return cm_fail(err, errlen, CM_EIO, "cannot write '%s': it is a directory; give a file "
                       "name", path);
    }
    if (exists && !S_ISREG(st.st_mode)) { /* a device, FIFO or terminal: in place */
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        w->f = fd < 0 ? NULL : sink_open(w, fd);
        if (!w->f) {
            int e = errno;
            release(w);
            return cm_fail(err, errlen, CM_EIO, "cannot write '%s': %s", path, strerror(e));
        }
        return CM_OK;
    }
    size_t n = strlen(path) + 16;
    w->tmp_path = malloc(n);
    if (!w->tmp_path) {
        release(w);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory opening '%s'", path);
    }
    snprintf(w->tmp_path, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(w->tmp_path);
    if (fd < 0) {
        int e = errno;
        release(w);
        return cm_fail(err, errlen, CM_EIO, "cannot write '%s': %s (check the directory exists "
                       "and is writable)", path, strerror(e));
    }
    /* The mode fopen would give (0666 less the umask), or the replaced file's own. */
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    if (fchmod(fd, mode) != 0) {
        int e = errno;
        close(fd);
        unlink(w->tmp_path);
        release(w);
        return cm_fail(err, errlen, CM_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    if (!(w->f = sink_open(w, fd))) {
        int e = errno;
        unlink(w->tmp_path);
        release(w);
        return cm_fail(err, errlen, CM_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    return CM_OK;
}

void whole_file_abort(whole_file *w)
{
    if (w->f && !w->is_stdout) fclose(w->f);
    if (w->tmp_path) unlink(w->tmp_path);
    release(w);
}

cm_status whole_file_finish(whole_file *w, char *err, size_t errlen)
{
    if (!w->f) return cm_fail(err, errlen, CM_EIO, "writing an output file that is not open");
    if (w->is_stdout) {
        errno = 0;
        int bad = fflush(stdout) != 0 || ferror(stdout);
        int e = errno;
        w->f = NULL;
        if (bad) {
            release(w);
            return whole_file_fail("standard output", e, err, errlen);
        }
        return CM_OK;
    }
    int bad = fflush(w->f) != 0 || ferror(w->f);
    int e = 0;
    if (!bad && w->tmp_path && fsync(((sink *)w->sink)->fd) != 0) {
        bad = 1;
        e = errno;
    }
    if (fclose(w->f) != 0) bad = 1;
    if (!e) e = sink_errno(w);
    w->f = NULL;
    if (bad) {
        cm_status st = whole_file_fail(w->path, e, err, errlen);
        if (w->tmp_path) unlink(w->tmp_path);
        release(w);
        return st;
    }
    return CM_OK;
}

cm_status whole_file_publish(whole_file *w, char *err, size_t errlen)
{
    if (w->tmp_path && rename(w->tmp_path, w->path) != 0) {
        cm_status st = whole_file_fail(w->path, errno, err, errlen);
        unlink(w->tmp_path);
        release(w);
        return st;
    }
    release(w);
    return CM_OK;
}

cm_status whole_file_commit(whole_file *w, char *err, size_t errlen)
{
    cm_status st = whole_file_finish(w, err, errlen);
    return st != CM_OK ? st : whole_file_publish(w, err, errlen);
}

cm_status whole_file_json(const json_t *j, const char *path, size_t flags, char *err,
                          size_t errlen)
{
    whole_file w;
    cm_status st = whole_file_open(&w, path, err, errlen);
    if (st != CM_OK) return st;
    if (json_dumpf(j, w.f, flags) != 0) {
        int e = errno;
        whole_file_abort(&w);
        return whole_file_fail(path, e, err, errlen);
    }
    return whole_file_commit(&w, err, errlen);
}

cm_status whole_file_check_stdout(char *err, size_t errlen)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout))
        return whole_file_fail("standard output", errno, err, errlen);
    return CM_OK;
}
