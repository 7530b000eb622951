/* Names from outside (symbols, object and program file names, paths) on their way out:
 * a file name may hold any byte but '/' and NUL.  The JSON Lines get valid UTF-8 JSON
 * (invalid bytes as \ufffd, control characters as \u00XX); the terminal gets printable
 * text (control characters and invalid bytes as '?'). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "corecast.h"
#include "text.h"

/* Length of the valid UTF-8 sequence at ``s`` (0: an invalid byte) and its code point. */
static int utf8_next(const unsigned char *s, unsigned *cp) {
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80, c &= 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800, c &= 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000, c &= 0x07;
    else
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

/* C0, DEL and C1: what a terminal may act on. */
static int is_control(unsigned cp) { return cp < 0x20 || (cp >= 0x7F && cp < 0xA0); }

size_t cc_printable_cell(char *dst, size_t n, const char *src, int width) {
    const unsigned char *s = (const unsigned char *)src;
    size_t len = 0;
    int shown = 0;
    if (n == 0)
        return 0;
    size_t before_last = 0;
    while (*s && (width < 0 || shown < width)) {
        before_last = len;
        unsigned cp;
        int k = utf8_next(s, &cp);
        if (k == 0 || is_control(cp)) {
            if (len + 1 >= n)
                break;
            dst[len++] = '?';
            s += k ? k : 1;
        } else {
            if (len + (size_t)k >= n)
                break;
            for (int i = 0; i < k; i++)
                dst[len++] = (char)s[i];
            s += k;
        }
        shown++;
    }
    if (width > 0 && *s && before_last + 3 < n) { /* cut short: its last cell says so */
        len = before_last;
        memcpy(dst + len, "\xe2\x80\xa6", 3); /* U+2026, one cell */
        len += 3;
    }
    while (width >= 0 && shown < width && len + 1 < n) {
        dst[len++] = ' ';
        shown++;
    }
    dst[len] = 0;
    return len;
}

size_t cc_printable(char *dst, size_t n, const char *src) { return cc_printable_cell(dst, n, src, -1); }

size_t cc_utf8_prefix(const char *src, int chars) {
    const unsigned char *s = (const unsigned char *)src;
    size_t n = 0;
    unsigned cp;
    for (int i = 0; i < chars && s[n]; i++) {
        int k = utf8_next(s + n, &cp);
        n += k > 0 ? (size_t)k : 1;
    }
    return n;
}

size_t cc_json_string(char *dst, size_t n, const char *src) {
    const unsigned char *s = (const unsigned char *)src;
    size_t len = 0;
    if (n < 3) {
        if (n)
            dst[0] = 0;
        return 0;
    }
    dst[len++] = '"';
    while (*s) {
        char esc[8];
        const char *piece = esc;
        size_t k;
        unsigned cp;
        int u = utf8_next(s, &cp);
        if (u == 0) {
            piece = "\\ufffd", k = 6, u = 1;
        } else if (cp == '"' || cp == '\\') {
            esc[0] = '\\', esc[1] = (char)cp, k = 2;
        } else if (is_control(cp)) {
            k = (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp);
        } else {
            piece = (const char *)s, k = (size_t)u;
        }
        if (len + k + 2 > n) /* room for the closing quote and NUL */
            break;
        for (size_t i = 0; i < k; i++)
            dst[len++] = piece[i];
        s += u;
    }
    dst[len++] = '"';
    dst[len] = 0;
    return len;
}

/* ---- report lines: text appended to a bounded buffer (cut, never overrun) ------------ */
void cc_put(struct cc_buf *b, const char *fmt, ...) {
    if (b->len >= sizeof b->data - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, sizeof b->data - b->len, fmt, ap);
    va_end(ap);
    b->len += n > 0 ? (size_t)n : 0;
    if (b->len >= sizeof b->data)
        b->len = sizeof b->data - 1;
}

/* What probing changed of a region's time, in percent: a negative change (the smaller
 * teams ran faster) is a saving, not a negative cost.  Named as the probes' own, since a
 * bare "estimated saving 0.8%" beside S@2 0.17 read as the predicted gain (user44). */
void cc_put_cost(struct cc_buf *b, double percent) {
    if (percent < 0)
        cc_put(b, "the probes saved an estimated %.2g%%", -percent);
    else
        cc_put(b, "the probes cost an estimated %.2g%%", percent);
}

/* What steering did to a region, for its report line (without the name): the count it
 * settled on, why it never explored, or, where the run ended first, the count its last
 * step left in force: a region run mostly at fewer threads than it asked for had no line
 * when it was still exploring at the exit.  ``now``: the cap in force (0: none). */
void cc_put_steering(struct cc_buf *b, int own, int now, int chosen, int steps, double gain, const char *reason) {
    if (chosen) {
        cc_put(b, "%d thread%s (the program's own: %d) after %d step%s, measured ", chosen, chosen == 1 ? "" : "s",
               own, steps, steps == 1 ? "" : "s");
        if (gain < 1) /* a change in percent; twice as fast or more as a ratio (hyperfine's "times") */
            cc_put(b, "%+.0f%%", 100 * gain);
        else
            cc_put(b, "%.3g times as fast", 1 + gain);
    } else if (reason[0] && (!now || now == own))
        cc_put(b, "not explored, %d thread%s kept: %s", own, own == 1 ? "" : "s", reason);
    else {
        int n = now ? now : own;
        cc_put(b, "still exploring at the end: %d thread%s (the program's own: %d) after %d step%s", n,
               n == 1 ? "" : "s", own, steps, steps == 1 ? "" : "s");
    }
}

/* A JSON string of a name from outside (valid UTF-8 whatever its bytes). */
void cc_put_str(struct cc_buf *b, const char *s) {
    char tmp[6 * 1024 + 3];
    cc_json_string(tmp, sizeof tmp, s);
    cc_put(b, "%s", tmp);
}

/* ``s`` printable in a column of ``width`` characters (-1: its own length). */
void cc_put_cell(struct cc_buf *b, const char *s, int width) {
    char tmp[4 * 1024 + 1];
    cc_printable_cell(tmp, sizeof tmp, s, width);
    cc_put(b, "%s", tmp);
}

/* A non-negative number's decimal digits at ``*p``, advanced past them; no stdio, so the
 * exit guard's handler may build /proc paths with it. */
void cc_put_decimal(char **p, long v) {
    char tmp[24];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n)
        *(*p)++ = tmp[--n];
}

struct cc_buf *cc_exit_buf(void) {
    static struct cc_buf b;
    return &b;
}
