/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/csv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/huge_int.h"

/* Line and column (1-based) of byte `at` in buf, counting "\n", "\r\n" and
 * a lone "\r" as line ends, as the CSV reader does; a UTF-8 byte-order mark
 * at the start is not a column. */
static void locate(const char *b, size_t at, long *line, long *col) {
  size_t i = 0, start = 0;
  if (at >= 3 && (unsigned char)b[0] == 0xEF && (unsigned char)b[1] == 0xBB &&
      (unsigned char)b[2] == 0xBF)
    i = start = 3;
  long l = 1;
  for (; i < at; i++)
    if (b[i] == '\n' || (b[i] == '\r' && b[i + 1] != '\n')) {
      l++;
      start = i + 1;
    }
  *line = l;
  *col = (long)(at - start) + 1;
}

/* Walks the line ends in b[from, to) from a line that starts at *start;
 * returns the start of a line longer than PFI_LINE_MAX bytes (a lone "\r"
 * ends a line too), or (size_t)-1, leaving *start at the last line's start.
 * memchr on "\n" keeps it fast; "\r" is only looked for in a long line. */
static size_t long_line(const char *b, size_t *start, size_t from, size_t to) {
  size_t s = *start, i = from;
  /* Lines of ordinary files are short: while a "\n" lies within
   * PFI_LINE_MAX bytes of the line start, every line before it is short
   * too, and the search jumps to the last such "\n". The line-by-line walk
   * below only sees what is left: a long stretch without "\n", where "\r"
   * may end lines. */
  while (to - s > PFI_LINE_MAX) {
    const char *nl = memrchr(b + s, '\n', (size_t)PFI_LINE_MAX + 1);
    if (!nl)
      break;
    s = (size_t)(nl - b) + 1;
  }
  if (to - s <= PFI_LINE_MAX) {
    if (s < to) {
      const char *nl = memrchr(b + s, '\n', to - s);
      if (nl)
        s = (size_t)(nl - b) + 1;
    }
    *start = s;
    return (size_t)-1;
  }
  if (i < s)
    i = s;
  for (;;) {
    const char *nl = memchr(b + i, '\n', to - i);
    size_t end = nl ? (size_t)(nl - b) : to;
    while (end - s > PFI_LINE_MAX) {
      const char *cr = memchr(b + s, '\r', end - s);
      if (!cr || (size_t)(cr - b) - s > PFI_LINE_MAX)
        return s;
      s = (size_t)(cr - b) + 1;
    }
    if (!nl)
      break;
    s = end + 1;
    i = end + 1;
  }
  *start = s;
  return (size_t)-1;
}

int pfi_read_file(const char *path, char **out, size_t *len,
                  struct pfi_error *err) {
  int from_stdin = strcmp(path, "-") == 0;
  const char *name = from_stdin ? "<stdin>" : path;
  FILE *fp = from_stdin ? stdin : fopen(path, "rb");
  if (!fp)
    /* An input that cannot be opened is bad input (exit status 2), not a
     * run-time failure: PFI_ENOTFOUND, with the system's reason. */
    return pfi_error_setloc(err, PFI_ENOTFOUND, path, 0, 0, "cannot open: %s",
                            strerror(errno));
  size_t cap = 1 << 16, n = 0;
  /* A regular file's size is known: one allocation of the right size
   * spares the copies of a doubling buffer on large inputs. */
  struct stat sb;
  if (fstat(fileno(fp), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
      (unsigned long long)sb.st_size < (unsigned long long)SIZE_MAX / 2)
    cap = (size_t)sb.st_size + 2;
  char *buf = malloc(cap);
  int rc = 0;
  if (!buf) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory reading %s", path);
    goto out;
  }
  pfi__advise_huge(buf, cap);
  /* Start of the line being read: a NUL byte or a line longer than
   * PFI_LINE_MAX is refused as soon as it has been read, so an endless
   * input (/dev/zero, a stream without line ends) costs bounded memory. */
  size_t line_start = 0;
  for (;;) {
    if (cap - n < 2) {
      size_t ncap = cap * 2;
      char *nb = realloc(buf, ncap);
      if (!nb) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory reading %s", path);
        goto out;
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, fp);
    if (got == 0)
      break;
    buf[n + got] = '\0';
    const char *z = memchr(buf + n, '\0', got);
    long line, col;
    if (z) {
      locate(buf, (size_t)(z - buf), &line, &col);
      rc = pfi_error_setloc(err, PFI_EPARSE, name, line, col,
                            "NUL byte in the input (a binary file?)");
      goto out;
    }
    size_t from = n;
    n += got;
    size_t at = long_line(buf, &line_start, from, n);
    if (at != (size_t)-1) {
      locate(buf, at, &line, &col);
      rc = pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                            "line longer than %d bytes", PFI_LINE_MAX);
      goto out;
    }
  }
  if (ferror(fp)) {
    /* A directory opens but does not read (EISDIR): say why. */
    rc = pfi_error_setloc(err, PFI_EIO, path, 0, 0, "read error: %s",
                          strerror(errno));
    goto out;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  buf = NULL;
out:
  free(buf);
  if (!from_stdin)
    fclose(fp);
  return rc;
}

/* Regular files of this size or more are mapped, not read. */
#define MAP_MIN ((size_t)1 << 20)

/*
 * A mapped file that another process truncates while it is parsed loses
 * its pages past the new end: touching them raises SIGBUS, which would end
 * the process. While a file is mapped its range is registered here; the
 * handler puts a page of zeros (read as NUL bytes, an end of input to the
 * readers) where the file's page was and marks the range lost, and
 * pfi_csv_next() and pfi_csv_lost() turn that into an error. A SIGBUS
 * outside every range gets the default action back and recurs, ending the
 * process as before.
 */
#define MAP_SLOTS 32
static struct {
  char *volatile base;
  volatile size_t len;
  volatile sig_atomic_t lost;
} map_slot[MAP_SLOTS];
static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static long map_page;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  char *a = si && si->si_code == BUS_ADRERR ? (char *)si->si_addr : NULL;
  for (int k = 0; a && k < MAP_SLOTS; k++) {
    char *b = map_slot[k].base;
    if (b && a >= b && a < b + map_slot[k].len) {
      char *pg = b + ((size_t)(a - b) / (size_t)map_page) * (size_t)map_page;
      if (mmap(pg, (size_t)map_page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
        map_slot[k].lost = 1;
        return;
      }
    }
  }
  signal(sig, SIG_DFL);
}

static void map_guard_init(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  map_page = sysconf(_SC_PAGESIZE);
  sigaction(SIGBUS, &sa, NULL);
}

/* Registers [base, base + len); returns its slot or -1 (none free: the
 * file is then read, not mapped). */
static int map_register(char *base, size_t len) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, map_guard_init);
  int slot = -1;
  pthread_mutex_lock(&map_mu);
  for (int k = 0; k < MAP_SLOTS && slot < 0; k++)
    if (!map_slot[k].base) {
      map_slot[k].lost = 0;
      map_slot[k].len = len;
      map_slot[k].base = base;
      slot = k;
    }
  pthread_mutex_unlock(&map_mu);
  return slot;
}

static void map_unregister(const char *base) {
  pthread_mutex_lock(&map_mu);
  for (int k = 0; k < MAP_SLOTS; k++)
    if (map_slot[k].base == base) {
      map_slot[k].base = NULL;
      map_slot[k].len = 0;
    }
  pthread_mutex_unlock(&map_mu);
}

int pfi_csv_lost(const struct pfi_csv *csv, struct pfi_error *err) {
  if (!csv->map_len)
    return 0;
  int lost = 0;
  pthread_mutex_lock(&map_mu);
  for (int k = 0; k < MAP_SLOTS; k++)
    if (map_slot[k].base == csv->buf && map_slot[k].lost)
      lost = 1;
  pthread_mutex_unlock(&map_mu);
  if (!lost)
    return 0;
  return pfi_error_set(err, PFI_EIO,
                       "%s: the file was truncated while it was read (another "
                       "process changed it); read it again",
                       csv->name);
}

/*
 * Maps the regular file `path` of MAP_MIN bytes or more, private and
 * writable, with a NUL byte after its end (an anonymous page when the size
 * is a multiple of the page size), after the checks of pfi_read_file() and
 * with its errors: a NUL byte, a line longer than PFI_LINE_MAX. The pages
 * are mapped read-only first (MAP_POPULATE on a writable private mapping
 * would copy every page) and made writable after: the CSV reader's writes
 * (field terminators, unquoted text) copy only the pages they touch.
 * Unlike a read, a mapping sees a file that another process truncates
 * while it is parsed as missing pages: the range is registered with the
 * SIGBUS guard above, so that this is an error (pfi_csv_lost()), not the
 * end of the process.
 * Returns 1 when mapped (*out, *len, *map_len), 0 when the file is to be
 * read instead (not a regular file, small, any failure of the mapping:
 * pfi_read_file() then opens it and says what is wrong), or an error.
 */
static int map_file(const char *path, char **out, size_t *len, size_t *map_len,
                    struct pfi_error *err) {
  if (strcmp(path, "-") == 0)
    return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat sb;
  long page = sysconf(_SC_PAGESIZE);
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || page <= 0 ||
      (unsigned long long)sb.st_size < MAP_MIN ||
      (unsigned long long)sb.st_size >= (unsigned long long)SIZE_MAX / 2) {
    close(fd);
    return 0;
  }
  size_t n = (size_t)sb.st_size;
  size_t total = (n + 1 + (size_t)page - 1) / (size_t)page * (size_t)page;
  char *base = mmap(NULL, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return 0;
  }
  int flags = MAP_PRIVATE | MAP_FIXED;
#if defined(MAP_POPULATE)
  flags |= MAP_POPULATE;
#endif
  if (map_register(base, total) < 0) {
    munmap(base, total);
    close(fd);
    return 0;
  }
  void *m = mmap(base, n, PROT_READ, flags, fd, 0);
  close(fd);
  if (m == MAP_FAILED || mprotect(base, total, PROT_READ | PROT_WRITE) != 0) {
    map_unregister(base);
    munmap(base, total);
    return 0;
  }
  const char *z = memchr(base, '\0', n);
  long line, col;
  int rc = 0;
  if (z) {
    locate(base, (size_t)(z - base), &line, &col);
    rc = pfi_error_setloc(err, PFI_EPARSE, path, line, col,
                          "NUL byte in the input (a binary file?)");
  } else {
    size_t line_start = 0, at = long_line(base, &line_start, 0, n);
    if (at != (size_t)-1) {
      locate(base, at, &line, &col);
      rc = pfi_error_setloc(err, PFI_EPARSE, path, line, 1,
                            "line longer than %d bytes", PFI_LINE_MAX);
    }
  }
  /* Truncated during the checks: that, not the NULs they met. */
  struct pfi_csv probe = {.name = (char *)path, .buf = base, .map_len = total};
  int lost = pfi_csv_lost(&probe, err);
  if (lost < 0)
    rc = lost;
  if (rc < 0) {
    map_unregister(base);
    munmap(base, total);
    return rc;
  }
  *out = base;
  *len = n;
  *map_len = total;
  return 1;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The bytes that end an unquoted field: comma, line ends, and the NUL that
 * terminates the buffer. */
static const unsigned char field_end[256] = {
    [0] = 1, [','] = 1, ['\n'] = 1, ['\r'] = 1};

static int push_field(struct pfi_csv *csv, char *p, size_t len, long line,
                      long col, struct pfi_error *err) {
  if (csv->nf == csv->fcap) {
    size_t ncap = csv->fcap ? csv->fcap * 2 : 16;
    char **nf = realloc(csv->f, ncap * sizeof *nf);
    if (!nf)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    csv->f = nf;
    long *nl = realloc(csv->fline, ncap * sizeof *nl);
    if (!nl)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    csv->fline = nl;
    long *nc = realloc(csv->fcol, ncap * sizeof *nc);
    if (!nc)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    csv->fcol = nc;
    size_t *nlen = realloc(csv->flen, ncap * sizeof *nlen);
    if (!nlen)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    csv->flen = nlen;
    csv->fcap = ncap;
  }
  csv->f[csv->nf] = p;
  csv->flen[csv->nf] = len;
  csv->fline[csv->nf] = line;
  csv->fcol[csv->nf] = col;
  csv->nf++;
  return 0;
}

int pfi_csv_next(struct pfi_csv *csv, struct pfi_error *err) {
  int lost = pfi_csv_lost(csv, err);
  if (lost < 0)
    return lost;
  char *b = csv->buf;
  size_t len = csv->len;
  size_t i = csv->pos;
  csv->nf = 0;
  /* Skip blank lines (empty or only spaces). */
  for (;;) {
    size_t j = i;
    while (j < len && is_blank(b[j]))
      j++;
    if (j >= len) {
      csv->pos = len;
      return 0;
    }
    if (b[j] == '\n' || (b[j] == '\r' && j + 1 < len && b[j + 1] == '\n') ||
        b[j] == '\r') {
      j += (b[j] == '\r' && j + 1 < len && b[j + 1] == '\n') ? 2 : 1;
      csv->line++;
      csv->linepos = (long)j;
      i = j;
      continue;
    }
    break;
  }
  csv->rec_line = csv->line;
  for (;;) {
    /* Start of a field. */
    while (i < len && is_blank(b[i]))
      i++;
    long fline = csv->line, fcol = (long)i - csv->linepos + 1;
    char *start;
    size_t flen;
    if (i < len && b[i] == '"') {
      size_t w = i + 1, r = i + 1;
      start = b + w;
      for (;;) {
        if (r >= len)
          return pfi_error_setloc(err, PFI_EPARSE, csv->name, fline, fcol,
                                  "unterminated quoted field");
        if (b[r] == '"') {
          if (r + 1 < len && b[r + 1] == '"') {
            b[w++] = '"';
            r += 2;
            continue;
          }
          r++;
          break;
        }
        if (b[r] == '\n') {
          csv->line++;
          csv->linepos = (long)r + 1;
        }
        b[w++] = b[r++];
      }
      b[w] = '\0'; /* w < r, so this never clobbers unread input */
      flen = (size_t)(b + w - start);
      i = r;
      while (i < len && is_blank(b[i]))
        i++;
      if (i < len && b[i] != ',' && b[i] != '\n' && b[i] != '\r')
        return pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->line,
                                (long)i - csv->linepos + 1,
                                "unexpected character after closing quote");
    } else {
      start = b + i;
      /* b[len] is NUL and the input holds none (check_nul()), so a table
       * of the bytes that end a field bounds the scan. */
      while (!field_end[(unsigned char)b[i]])
        i++;
      size_t e = i;
      while (e > (size_t)(start - b) && is_blank(b[e - 1]))
        e--;
      flen = e - (size_t)(start - b);
      if (i >= len) {
        b[e] = '\0'; /* b[len] is the buffer's terminator */
      } else if (e < i) {
        b[e] = '\0';
      }
    }
    int rc = push_field(csv, start, flen, fline, fcol, err);
    if (rc < 0)
      return rc;
    if (i >= len) {
      csv->pos = len;
      return 1;
    }
    char c = b[i];
    b[i] = '\0';
    if (c == ',') {
      i++;
      continue;
    }
    /* End of record. */
    if (c == '\r' && i + 1 < len && b[i + 1] == '\n')
      i++;
    i++;
    csv->line++;
    csv->linepos = (long)i;
    csv->pos = i;
    return 1;
  }
}

/*
 * Fields are NUL-terminated strings inside the buffer, so a NUL byte in the
 * input would silently cut a field short ("12<NUL>34" read as 12). Text CSV
 * never holds one; a file that does is binary or corrupt, and is refused
 * where the byte is (line and column as the parser counts them).
 */
static int check_nul(const struct pfi_csv *csv, struct pfi_error *err) {
  const char *b = csv->buf;
  const char *z = memchr(b + csv->pos, '\0', csv->len - csv->pos);
  if (!z)
    return 0;
  long line = 1;
  size_t start = csv->pos;
  for (size_t i = csv->pos; i < (size_t)(z - b); i++)
    if (b[i] == '\n' || (b[i] == '\r' && b[i + 1] != '\n')) {
      line++;
      start = i + 1;
    }
  return pfi_error_setloc(err, PFI_EPARSE, csv->name, line,
                          (long)((size_t)(z - b) - start) + 1,
                          "NUL byte in the input (a binary file?)");
}

/* nul_checked: the input is known to hold no NUL byte (pfi_read_file()
 * refused any as it read). */
static int open_common(struct pfi_csv *csv, int nul_checked,
                       struct pfi_error *err) {
  if (csv->len >= 3 && (unsigned char)csv->buf[0] == 0xEF &&
      (unsigned char)csv->buf[1] == 0xBB && (unsigned char)csv->buf[2] == 0xBF)
    csv->pos = 3;
  csv->linepos = (long)csv->pos;
  csv->line = 1;
  int nrc = nul_checked ? 0 : check_nul(csv, err);
  if (nrc < 0)
    return nrc;
  int rc = pfi_csv_next(csv, err);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return pfi_error_setloc(err, PFI_EPARSE, csv->name, 1, 1,
                            "empty file: no header row");
  csv->header = calloc(csv->nf, sizeof *csv->header);
  if (!csv->header)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  csv->nheader = csv->nf;
  for (size_t k = 0; k < csv->nf; k++) {
    csv->header[k] = strdup(csv->f[k]);
    if (!csv->header[k])
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  return 0;
}

int pfi_csv_open(struct pfi_csv *csv, const char *path, struct pfi_error *err) {
  memset(csv, 0, sizeof *csv);
  csv->name = strdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
  if (!csv->name)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = map_file(path, &csv->buf, &csv->len, &csv->map_len, err);
  if (rc == 0)
    rc = pfi_read_file(path, &csv->buf, &csv->len, err);
  else if (rc > 0)
    rc = 0;
  if (rc == 0)
    rc = open_common(csv, 1, err);
  if (rc < 0)
    pfi_csv_close(csv);
  return rc;
}

int pfi_csv_open_mem(struct pfi_csv *csv, const char *name, const char *data,
                     size_t len, struct pfi_error *err) {
  memset(csv, 0, sizeof *csv);
  csv->name = strdup(name ? name : "<memory>");
  csv->buf = malloc(len + 1);
  if (!csv->name || !csv->buf) {
    pfi_csv_close(csv);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  if (len)
    memcpy(csv->buf, data, len);
  csv->buf[len] = '\0';
  csv->len = len;
  int rc = open_common(csv, 0, err);
  if (rc < 0)
    pfi_csv_close(csv);
  return rc;
}

void pfi_csv_close(struct pfi_csv *csv) {
  if (!csv)
    return;
  for (size_t k = 0; k < csv->nheader; k++)
    free(csv->header[k]);
  free(csv->header);
  free(csv->f);
  free(csv->fline);
  free(csv->fcol);
  free(csv->flen);
  if (csv->map_len) {
    map_unregister(csv->buf);
    munmap(csv->buf, csv->map_len);
  } else
    free(csv->buf);
  free(csv->name);
  memset(csv, 0, sizeof *csv);
}

int pfi_csv_find(const struct pfi_csv *csv, const char *name) {
  for (size_t k = 0; k < csv->nheader; k++)
    if (strcmp(csv->header[k], name) == 0)
      return (int)k;
  return -1;
}

char *pfi_csv_columns(const char *const *header, size_t n, char *buf,
                      size_t cap) {
  size_t w = 0;
  if (!cap)
    return buf;
  buf[0] = '\0';
  if (n == 0) {
    snprintf(buf, cap, "(none)");
    return buf;
  }
  for (size_t k = 0; k < n; k++) {
    char more[48];
    /* Room for this name and, should a later one not fit, the count. */
    size_t need = strlen(header[k]) + 2;
    snprintf(more, sizeof more, ", ... (%zu more)", n - k);
    if (w + need + (k + 1 < n ? sizeof more : 0) >= cap) {
      snprintf(buf + w, cap - w, "%s", k ? more : more + 2);
      return buf;
    }
    w += (size_t)snprintf(buf + w, cap - w, "%s%s", k ? ", " : "", header[k]);
  }
  return buf;
}

const char *pfi_csv_field(const struct pfi_csv *csv, int idx) {
  if (idx < 0 || (size_t)idx >= csv->nf)
    return NULL;
  return csv->f[idx];
}

/*
 * Exact fast path for the plain decimals that fill curves files
 * ("1234.56", "-0.5", "7e3"): when the decimal significand fits in 2^53 and
 * the power of ten is at most 22 in magnitude, both are exact doubles and
 * one multiplication or division rounds correctly (Clinger, "How to read
 * floating point numbers accurately", PLDI 1990), so the result is the
 * same double strtod() returns. Returns 1 and sets *out, or 0 when the
 * text needs strtod() (hex, nan, inf, long significands, big exponents,
 * anything unusual).
 */
static int fast_decimal(const char *s, double *out) {
  static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *p = s;
  int neg = 0;
  if (*p == '-' || *p == '+')
    neg = *p++ == '-';
  unsigned long long m = 0;
  int digits = 0, frac = 0, any = 0;
  while (*p >= '0' && *p <= '9') {
    if (digits < 19) {
      m = m * 10 + (unsigned)(*p - '0');
      if (m)
        digits++;
    } else {
      return 0;
    }
    any = 1;
    p++;
  }
  if (*p == '.') {
    p++;
    while (*p >= '0' && *p <= '9') {
      if (digits >= 19)
        return 0;
      m = m * 10 + (unsigned)(*p - '0');
      if (m)
        digits++;
      frac++;
      any = 1;
      p++;
    }
  }
  if (!any)
    return 0;
  int e = 0;
  if (*p == 'e' || *p == 'E') {
    p++;
    int eneg = 0;
    if (*p == '-' || *p == '+')
      eneg = *p++ == '-';
    if (!(*p >= '0' && *p <= '9'))
      return 0;
    while (*p >= '0' && *p <= '9') {
      if (e > 1000)
        return 0;
      e = e * 10 + (*p++ - '0');
    }
    if (eneg)
      e = -e;
  }
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p)
    return 0;
  e -= frac;
  if (m > (1ULL << 53) || e < -22 || e > 22)
    return 0;
  double v = (double)m;
  v = e < 0 ? v / p10[-e] : v * p10[e];
  *out = neg ? -v : v;
  return 1;
}

int pfi_parse_double(const char *s, double *out) {
  while (*s == ' ' || *s == '\t')
    s++;
  if (!*s)
    return PFI_EPARSE;
  if (fast_decimal(s, out))
    return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s)
    return PFI_EPARSE;
  while (*end == ' ' || *end == '\t')
    end++;
  if (*end)
    return PFI_EPARSE;
  if (!isfinite(v))
    return PFI_EPARSE;
  *out = v;
  return 0;
}

static int describe_double(const char *file, long line, long col,
                           const char *what, const char *s, double *out,
                           struct pfi_error *err) {
  if (!s)
    return pfi_error_setloc(err, PFI_EPARSE, file, line, col,
                            "field '%s': missing (record too short)", what);
  if (pfi_parse_double(s, out) == 0)
    return 0;
  const char *t = s;
  while (*t == ' ' || *t == '\t')
    t++;
  if (!*t)
    return pfi_error_setloc(err, PFI_EPARSE, file, line, col,
                            "field '%s': empty value", what);
  char *end;
  double v = strtod(t, &end);
  if (end != t && isnan(v))
    return pfi_error_setloc(err, PFI_EPARSE, file, line, col,
                            "field '%s': NaN is not allowed", what);
  if (end != t && isinf(v))
    return pfi_error_setloc(err, PFI_EPARSE, file, line, col,
                            "field '%s': infinite value '%.40s'", what, t);
  return pfi_error_setloc(err, PFI_EPARSE, file, line, col,
                          "field '%s': not a number: '%.40s'", what, t);
}

int pfi_csv_double(const struct pfi_csv *csv, int idx, const char *what,
                   double *out, struct pfi_error *err) {
  if (idx >= 0 && (size_t)idx < csv->nf)
    return describe_double(csv->name, csv->fline[idx], csv->fcol[idx], what,
                           csv->f[idx], out, err);
  /* Short record: point just past its last field. */
  long line = csv->rec_line, col = 1;
  if (csv->nf > 0) {
    line = csv->fline[csv->nf - 1];
    col = csv->fcol[csv->nf - 1] + (long)strlen(csv->f[csv->nf - 1]);
  }
  return describe_double(csv->name, line, col, what, NULL, out, err);
}

/* ---- table ---- */

static int table_from_csv(struct pfi_table *t, struct pfi_csv *csv,
                          struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  /* A copy: the reader still needs its name for errors further down. */
  t->name = strdup(csv->name);
  if (!t->name)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  t->ncols = csv->nheader;
  t->header = csv->header;
  csv->header = NULL;
  csv->nheader = 0;
  size_t cap = 0;
  int rc;
  while ((rc = pfi_csv_next(csv, err)) == 1) {
    if (csv->nf > t->ncols) {
      char *name = t->name;
      rc = pfi_error_setloc(
          err, PFI_EPARSE, name, csv->fline[t->ncols], csv->fcol[t->ncols],
          "record has %zu fields, header has %zu", csv->nf, t->ncols);
      return rc;
    }
    if (t->nrows == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      /* Every row takes ncols cells, even a record of one field. Full
       * records give at most one cell per input byte (16 bytes of cells);
       * a wide header over many short records (100 kB of commas, then
       * lines of one character) would ask for gigabytes from kilobytes.
       * Rows are bounded by 4 cells per input byte plus 1 M cells, which
       * no file of full records reaches; growth stops at that bound. */
      double maxrows = (4.0 * (double)csv->len + 1048576.0) / (double)t->ncols;
      if ((double)t->nrows + 1 > maxrows)
        return pfi_error_setloc(
            err, PFI_EPARSE, t->name, csv->rec_line, 1,
            "more than %.0f rows of a %zu-column header, most of them "
            "short, in %zu bytes: refused (the table would not fit)",
            floor(maxrows), t->ncols, csv->len);
      if ((double)ncap > maxrows)
        ncap = (size_t)maxrows;
      char **nc = realloc(t->cells, ncap * t->ncols * sizeof *nc);
      if (!nc)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      t->cells = nc;
      long *nl = realloc(t->line, ncap * sizeof *nl);
      if (!nl)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      t->line = nl;
      long *ncol = realloc(t->col, ncap * t->ncols * sizeof *ncol);
      if (!ncol)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      t->col = ncol;
      cap = ncap;
    }
    size_t r = t->nrows++;
    t->line[r] = csv->rec_line;
    for (size_t k = 0; k < t->ncols; k++) {
      t->cells[r * t->ncols + k] = NULL;
      t->col[r * t->ncols + k] = 0;
    }
    for (size_t k = 0; k < csv->nf; k++) {
      char *s = strdup(csv->f[k]);
      if (!s)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      t->cells[r * t->ncols + k] = s;
      t->col[r * t->ncols + k] = csv->fcol[k];
    }
  }
  return rc;
}

int pfi_table_load(struct pfi_table *t, const char *path,
                   struct pfi_error *err) {
  struct pfi_csv csv;
  memset(t, 0, sizeof *t);
  int rc = pfi_csv_open(&csv, path, err);
  if (rc < 0)
    return rc;
  rc = table_from_csv(t, &csv, err);
  pfi_csv_close(&csv);
  if (rc < 0)
    pfi_table_release(t);
  return rc < 0 ? rc : 0;
}

int pfi_table_load_mem(struct pfi_table *t, const char *name, const char *data,
                       size_t len, struct pfi_error *err) {
  struct pfi_csv csv;
  memset(t, 0, sizeof *t);
  int rc = pfi_csv_open_mem(&csv, name, data, len, err);
  if (rc < 0)
    return rc;
  rc = table_from_csv(t, &csv, err);
  pfi_csv_close(&csv);
  if (rc < 0)
    pfi_table_release(t);
  return rc < 0 ? rc : 0;
}

int pfi_table_missing(const struct pfi_table *t, struct pfi_error *err,
                      const char *fmt, ...) {
  char what[200], cols[280];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  pfi_csv_columns((const char *const *)t->header, t->ncols, cols, sizeof cols);
  return pfi_error_setloc(err, PFI_EPARSE, t->name, 1, 1,
                          "%s; the header has %s", what, cols);
}

int pfi_table_find(const struct pfi_table *t, const char *name) {
  for (size_t k = 0; k < t->ncols; k++)
    if (strcmp(t->header[k], name) == 0)
      return (int)k;
  return -1;
}

const char *pfi_table_cell(const struct pfi_table *t, size_t row, size_t col) {
  if (row >= t->nrows || col >= t->ncols)
    return NULL;
  return t->cells[row * t->ncols + col];
}

int pfi_table_double(const struct pfi_table *t, size_t row, size_t col,
                     double *out, struct pfi_error *err) {
  const char *what = col < t->ncols ? t->header[col] : "?";
  long line = row < t->nrows ? t->line[row] : 0;
  long c =
      (row < t->nrows && col < t->ncols) ? t->col[row * t->ncols + col] : 0;
  return describe_double(t->name, line, c ? c : 1, what,
                         pfi_table_cell(t, row, col), out, err);
}

void pfi_table_release(struct pfi_table *t) {
  if (!t)
    return;
  if (t->cells)
    for (size_t k = 0; k < t->nrows * t->ncols; k++)
      free(t->cells[k]);
  free(t->cells);
  if (t->header)
    for (size_t k = 0; k < t->ncols; k++)
      free(t->header[k]);
  free(t->header);
  free(t->line);
  free(t->col);
  free(t->name);
  memset(t, 0, sizeof *t);
}
