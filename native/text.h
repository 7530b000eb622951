/* text.c: names from outside made safe, and a report's text built in a buffer, for the
 * exit report, the JSON Lines, warnings and the settings display. */
#ifndef CORECAST_TEXT_H
#define CORECAST_TEXT_H

#include <stddef.h>

#include "corecast.h"

/* Names from outside made safe (text.c): printable for the terminal, padded or cut to
 * ``width`` characters (-1: as long as it is); a quoted JSON string.  Both return the
 * bytes written, NUL excluded, and always terminate ``dst``. */
size_t cc_printable(char *dst, size_t n, const char *src);
size_t cc_printable_cell(char *dst, size_t n, const char *src, int width);
size_t cc_json_string(char *dst, size_t n, const char *src);
/* The bytes of ``src``'s first ``chars`` characters (UTF-8; a byte that starts none is one,
 * as Python's surrogateescape reads it): a cut that splits no character. */
size_t cc_utf8_prefix(const char *src, int chars);
/* A report's text (text.c): appended with cc_put, a name from outside as a JSON string
 * (cc_put_str) or printable in a column (cc_put_cell); a full buffer cuts, never overruns. */
struct cc_buf {
    char data[1 << 17];
    size_t len;
};
/* The exit's one buffer (the report's table, then its JSON Lines, one after the other):
 * 128 kB, where each writer's own had made 512 kB of the program's locked memory. */
struct cc_buf *cc_exit_buf(void) CC_HIDDEN;
void cc_put(struct cc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3))) CC_HIDDEN;
void cc_put_str(struct cc_buf *b, const char *s) CC_HIDDEN;
void cc_put_cell(struct cc_buf *b, const char *s, int width) CC_HIDDEN;
void cc_put_cost(struct cc_buf *b, double percent) CC_HIDDEN; /* "the probes cost an estimated 0.8%" or "saved" */
void cc_put_steering(struct cc_buf *b, int own, int now, int chosen, int steps, double gain, const char *reason) CC_HIDDEN;
void cc_put_decimal(char **p, long v) CC_HIDDEN; /* async-signal-safe digits, for /proc paths */

#endif
