/*
 * input_file.c — see input_file.h. One place decides what an input file may be, so that every
 * reader refuses a directory, a FIFO or /dev/zero the same way and names the cause.
 */
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *open_error_name(int e)
{
    return e == ENOENT    ? "no such file"
           : e == EACCES  ? "permission denied"
           : e == ENOTDIR ? "a part of the path is not a directory"
           : e == ELOOP   ? "too many symbolic links"
                          : strerror(e);
}

/* Opens and checks path; returns the descriptor (>= 0) or -1 with the message filled. */
static int open_checked(const char *path, const char *what, const char *hint, long max_bytes,
                        long *size, cm_status *st, char *err, size_t errlen)
{
    const char *sep = hint ? "; " : "", *h = hint ? hint : "";
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        *st = cm_fail(err, errlen, CM_EIO, "cannot read %s '%s': %s%s%s", what, path,
                      open_error_name(e), sep, h);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        *st = cm_fail(err, errlen, CM_EIO, "cannot read %s '%s': %s", what, path, strerror(e));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        *st = cm_fail(err, errlen, CM_EIO, "%s '%s' is a directory, not a file%s%s", what, path,
                      sep, h);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        *st = cm_fail(err, errlen, CM_EIO,
                      "%s '%s' is not a regular file (a FIFO, socket or device)%s%s", what,
                      path, h[0] ? sep : ": ", h[0] ? h : "give the path of a file");
        return -1;
    }
    if (sb.st_size > max_bytes) {
        close(fd);
        *st = cm_fail(err, errlen, CM_EIO, "%s '%s' is %lld bytes, over the limit of %ld bytes",
                      what, path, (long long)sb.st_size, max_bytes);
        return -1;
    }
    /* A regular file never blocks; back to blocking reads for stdio. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = (long)sb.st_size;
    *st = CM_OK;
    return fd;
}

int input_file_over_cap(const char *path, const char *what, long max_bytes, size_t read_bytes,
                        char *err, size_t errlen)
{
    if (read_bytes <= (size_t)max_bytes) return 0;
    cm_fail(err, errlen, CM_EIO, "%s '%s' grew over the limit of %ld bytes while it was read",
            what, path, max_bytes);
    return 1;
}

cm_status input_file_read(const char *path, const char *what, const char *hint, long max_bytes,
                          char **text, size_t *len, char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    long size;
    cm_status st;
    int fd = open_checked(path, what, hint, max_bytes, &size, &st, err, errlen);
    if (fd < 0) return st;
    /* The file may grow while we read: read at most one byte past the cap. */
    size_t cap = (size_t)size + 1, n = 0, limit = (size_t)max_bytes + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory reading %s '%s'", what, path);
    }
    for (;;) {
        if (n == cap) {
            if (input_file_over_cap(path, what, max_bytes, n, err, errlen)) {
                free(buf);
                close(fd);
                return CM_EIO;
            }
            size_t ncap = cap * 2 > limit ? limit : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return cm_fail(err, errlen, CM_ENOMEM, "out of memory reading %s '%s'", what,
                               path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return cm_fail(err, errlen, CM_EIO, "cannot read %s '%s': %s", what, path,
                           strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (input_file_over_cap(path, what, max_bytes, n, err, errlen)) {
        free(buf);
        return CM_EIO;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return CM_OK;
}

cm_status input_file_open(const char *path, const char *what, const char *hint, long max_bytes,
                          FILE **out, char *err, size_t errlen)
{
    *out = NULL;
    long size;
    cm_status st;
    int fd = open_checked(path, what, hint, max_bytes, &size, &st, err, errlen);
    if (fd < 0) return st;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return cm_fail(err, errlen, CM_EIO, "cannot read %s '%s': %s", what, path, strerror(e));
    }
    *out = f;
    return CM_OK;
}

/* The length of the UTF-8 character at s (1-4), or 0 when s does not start a valid one
 * (overlong forms, surrogates and code points past U+10FFFF included, as jansson refuses). */
static size_t utf8_char_len(const unsigned char *s)
{
    if (s[0] < 0x80) return 1;
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (!len || s[0] > 0xf4 || s[0] == 0xc0 || s[0] == 0xc1) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

void input_text_copy(char *dst, size_t n, const char *src)
{
    if (!n) return;
    size_t used = 0;
    const unsigned char *s = (const unsigned char *)src;
    while (*s) {
        size_t len = utf8_char_len(s);
        if (used + (len ? len : 1) >= n) break;
        if (len) {
            memcpy(dst + used, s, len);
            used += len;
            s += len;
        } else {
            dst[used++] = '?';
            s++;
        }
    }
    dst[used] = '\0';
}
