/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfi_curveset_read_mem_threads(): two threads give the set, or the error,
 * that one thread gives, byte for byte, on generated curves files: both
 * layouts, jobs whose rows lie in both halves, CRLF, blank lines, quoted
 * fields, and a fault put on every line in turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"
#include "testutil.h"

struct gen {
  char *b;
  size_t n, cap;
};

static void put(struct gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(struct gen *g, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(g->b + g->n, g->cap - g->n, fmt, ap);
    va_end(ap);
    if ((size_t)k < g->cap - g->n) {
      g->n += (size_t)k;
      return;
    }
    g->cap = g->cap * 2 + (size_t)k + 64;
    g->b = realloc(g->b, g->cap);
    assert_non_null(g->b);
  }
}

enum { ADJACENT, INTERLEAVED, MIXED };

/* A curves file of `jobs` jobs x `caps` caps. Options: CRLF line ends,
 * blank lines, job names quoted (from row `quote_from` on; -1 none), the
 * gpus column blank on some rows. Returns the text (caller frees). */
static char *make(int jobs, int caps, int layout, int crlf, int blanks,
                  long quote_from, size_t *len) {
  struct gen g = {malloc(256), 0, 256};
  assert_non_null(g.b);
  const char *eol = crlf ? "\r\n" : "\n";
  put(&g, "job,cap_w,power_w,tokens_per_s,gpus,power_sd_w%s", eol);
  int rows = jobs * caps, third = jobs / 3, w = 0;
  int *order = malloc((size_t)rows * 2 * sizeof *order);
  assert_non_null(order);
  /* MIXED: the first and last thirds of the jobs adjacent, the middle
   * third grouped by cap between them (across the middle of the file). */
  for (int j = 0; j < third && layout == MIXED; j++)
    for (int c = 0; c < caps; c++, w += 2)
      order[w] = j, order[w + 1] = c;
  for (int c = 0; c < caps && layout == MIXED; c++)
    for (int j = third; j < jobs - third; j++, w += 2)
      order[w] = j, order[w + 1] = c;
  for (int j = jobs - third; j < jobs && layout == MIXED; j++)
    for (int c = 0; c < caps; c++, w += 2)
      order[w] = j, order[w + 1] = c;
  for (int r = 0; r < rows && layout != MIXED; r++, w += 2) {
    order[w] = layout == ADJACENT ? r / caps : r % jobs;
    order[w + 1] = layout == ADJACENT ? r % caps : r / jobs;
  }
  for (int r = 0; r < rows; r++) {
    int j = order[2 * r], c = order[2 * r + 1];
    if (blanks && r % 7 == 3)
      put(&g, "  %s", eol);
    char name[40];
    snprintf(name, sizeof name, "job-%d", j);
    if (quote_from >= 0 && r >= quote_from)
      put(&g, "\"%s\"", name);
    else
      put(&g, "%s", name);
    double cap = 200 + 100 * c;
    put(&g, ",%g,%.3f,%.4f,", cap, 8 * (cap - 30 - j % 17),
        1000 + j + 50.0 * c / (1 + j % 5));
    if ((j + c) % 3)
      put(&g, "%d", 8);
    put(&g, ",%s%s", (j + c) % 4 ? "1.5" : "", eol);
  }
  free(order);
  *len = g.n;
  return g.b;
}

/* The two sets are the same (power_sd_w too unless `but_sd`). */
static void same_set_sd(const struct pfi_curveset *a,
                        const struct pfi_curveset *b, int but_sd) {
  ASSERT_EQ_INT(a->n, b->n);
  assert_string_equal(a->source, b->source);
  assert_string_equal(a->unit, b->unit);
  for (size_t i = 0; i < a->n; i++) {
    const struct pfi_curve *x = &a->c[i], *y = &b->c[i];
    assert_string_equal(x->job, y->job);
    ASSERT_EQ_INT(x->gpus, y->gpus);
    ASSERT_EQ_INT(x->n, y->n);
    ASSERT_EQ_INT(x->first_line, y->first_line);
    for (size_t k = 0; k < x->n; k++) {
      const struct pfi_point *p = &x->pts[k], *q = &y->pts[k];
      assert_memory_equal(&p->cap_w, &q->cap_w, sizeof p->cap_w);
      assert_memory_equal(&p->power_w, &q->power_w, sizeof p->power_w);
      assert_memory_equal(&p->tokens_per_s, &q->tokens_per_s,
                          sizeof p->tokens_per_s);
      if (!but_sd)
        assert_memory_equal(&p->power_sd_w, &q->power_sd_w,
                            sizeof p->power_sd_w);
      assert_memory_equal(&p->tokens_sd, &q->tokens_sd, sizeof p->tokens_sd);
      ASSERT_EQ_INT(p->runs, q->runs);
      ASSERT_EQ_INT(p->line, q->line);
    }
  }
}

static void same_set(const struct pfi_curveset *a,
                     const struct pfi_curveset *b) {
  same_set_sd(a, b, 0);
}

/* One thread reads the plain rows in place, the others with the CSV
 * reader; a row whose power_sd_w is given is never plain. So the text
 * of make() (power_sd_w last) with "1.5" in every row's empty last field,
 * read by the CSV reader alone, must give the same set but for
 * power_sd_w, or the same error. */
static void agree_with_reader(const char *text, size_t len, const char *map,
                              int r1, const struct pfi_curveset *s1,
                              const struct pfi_error *e1) {
  char *u = malloc(2 * len + 8);
  assert_non_null(u);
  size_t w = 0;
  for (size_t i = 0; i < len; i++) {
    if (i > 0 && text[i - 1] == ',' &&
        (text[i] == '\n' ||
         (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n'))) {
      memcpy(u + w, "1.5", 3);
      w += 3;
    }
    u[w++] = text[i];
  }
  struct pfi_curveset s3;
  struct pfi_error e3;
  memset(&e3, 0, sizeof e3);
  int r3 = pfi_curveset_read_mem_threads(&s3, "g.csv", u, w, map, 1, &e3);
  if (r1 != r3)
    fail_msg("in place: %d (%s:%ld:%ld: %s), CSV reader: %d (%s:%ld:%ld: %s)",
             r1, e1->file, e1->line, e1->column, e1->msg, r3, e3.file, e3.line,
             e3.column, e3.msg);
  if (r1 < 0) {
    ASSERT_EQ_INT(e1->line, e3.line);
    ASSERT_EQ_INT(e1->column, e3.column);
    assert_string_equal(e1->msg, e3.msg);
  } else {
    same_set_sd(s1, &s3, 1);
    pfi_curveset_release(&s3);
  }
  free(u);
}

/* Reads text on one and two threads; both must agree, and agree with the
 * CSV reader alone (agree_with_reader). Returns rc. */
static int agree(const char *text, size_t len, const char *map) {
  struct pfi_curveset s1, s2;
  struct pfi_error e1, e2;
  memset(&e1, 0, sizeof e1);
  memset(&e2, 0, sizeof e2);
  int r1 = pfi_curveset_read_mem_threads(&s1, "g.csv", text, len, map, 1, &e1);
  int r2 = pfi_curveset_read_mem_threads(&s2, "g.csv", text, len, map, 2, &e2);
  if (r1 != r2)
    fail_msg("one thread: %d (%s:%ld:%ld: %s), two: %d (%s:%ld:%ld: %s)", r1,
             e1.file, e1.line, e1.column, e1.msg, r2, e2.file, e2.line,
             e2.column, e2.msg);
  if (r1 < 0) {
    ASSERT_EQ_INT(e1.code, e2.code);
    assert_string_equal(e1.file, e2.file);
    ASSERT_EQ_INT(e1.line, e2.line);
    ASSERT_EQ_INT(e1.column, e2.column);
    assert_string_equal(e1.msg, e2.msg);
  } else {
    same_set(&s1, &s2);
  }
  static const char head[] = "job,cap_w,power_w,tokens_per_s,gpus,power_sd_w";
  if (len > sizeof head && memcmp(text, head, sizeof head - 1) == 0)
    agree_with_reader(text, len, map, r1, &s1, &e1);
  pfi_curveset_release(&s1);
  pfi_curveset_release(&s2);
  return r1;
}

/* Independently known values: 4 jobs x 3 caps, rows grouped by cap, so
 * every job has rows in both halves; the join keeps the order of first
 * appearance, each point's input line and the first row's GPU count. */
static void interleaved_known(void **state) {
  (void)state;
  const char in[] = "job,cap_w,power_w,tokens_per_s,gpus\n" /* line 1 */
                    "a,100,800,10,\n"                       /* 2 */
                    "b,100,800,20,4\n"                      /* 3 */
                    "c,100,800,30,\n"                       /* 4 */
                    "d,100,800,40,\n"                       /* 5 */
                    "a,200,1600,11,\n"                      /* 6 */
                    "b,200,1600,21,\n"                      /* 7 */
                    "e,100,800,50,\n"                       /* 8 */
                    "e,200,1600,51,2\n"                     /* 9 */
                    "c,200,1600,31,8\n"                     /* 10 */
                    "d,200,1600,41,\n"                      /* 11 */
                    "a,300,2400,12,\n";                     /* 12 */
  struct pfi_curveset s;
  struct pfi_error err;
  assert_int_equal(pfi_curveset_read_mem_threads(&s, "k.csv", in, sizeof in - 1,
                                                 NULL, 2, &err),
                   0);
  ASSERT_EQ_INT(s.n, 5);
  static const char *const names[] = {"a", "b", "c", "d", "e"};
  static const long first[] = {2, 3, 4, 5, 8};
  static const int gpus[] = {0, 4, 8, 0, 2};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(s.c[i].job, names[i]);
    ASSERT_EQ_INT(s.c[i].first_line, first[i]);
    ASSERT_EQ_INT(s.c[i].gpus, gpus[i]);
  }
  ASSERT_EQ_INT(s.c[0].n, 3);
  ASSERT_EQ_INT(s.c[0].pts[0].line, 2);
  ASSERT_EQ_INT(s.c[0].pts[1].line, 6);
  ASSERT_EQ_INT(s.c[0].pts[2].line, 12);
  ASSERT_NEAR(s.c[0].pts[2].tokens_per_s, 12, 0);
  ASSERT_EQ_INT(s.c[2].pts[1].line, 10);
  pfi_curveset_release(&s);
  agree(in, sizeof in - 1, NULL);
}

static void layouts_agree(void **state) {
  (void)state;
  for (int layout = ADJACENT; layout <= MIXED; layout++)
    for (int crlf = 0; crlf < 2; crlf++)
      for (int blanks = 0; blanks < 2; blanks++)
        for (int jobs = 1; jobs <= 40; jobs += 13) {
          size_t len;
          char *t = make(jobs, 5, layout, crlf, blanks, -1, &len);
          assert_int_equal(agree(t, len, NULL), 0);
          free(t);
        }
}

/* Quoted job names from some row on: in the first half the file is read
 * on one thread, in the second half only on two; a quoted field holding a
 * line end where the middle falls. */
static void quoted_agree(void **state) {
  (void)state;
  for (int layout = ADJACENT; layout <= INTERLEAVED; layout++)
    for (long from = 0; from <= 200; from += 25) {
      size_t len;
      char *t = make(40, 5, layout, from % 2 == 0, 0, from, &len);
      assert_int_equal(agree(t, len, NULL), 0);
      free(t);
    }
  size_t len;
  char *t = make(20, 4, INTERLEAVED, 0, 0, -1, &len);
  /* A job name with a line end in quotes across the middle. */
  char *mid = memchr(t + len / 2 - 40, '\n', 80);
  assert_non_null(mid);
  char *ls = mid;
  while (ls > t && ls[-1] != '\n')
    ls--;
  size_t pre = (size_t)(ls - t);
  char *u = malloc(len + 64);
  assert_non_null(u);
  memcpy(u, t, pre);
  size_t w = pre + (size_t)sprintf(u + pre, "\"job\n-0\"");
  char *comma = memchr(ls, ',', (size_t)(mid - ls));
  memcpy(u + w, comma, len - (size_t)(comma - t));
  w += len - (size_t)(comma - t);
  agree(u, w, NULL);
  free(u);
  free(t);
}

/* Each of rows[0..n) put on each line in turn of a file of `layout` (in
 * place of the line, then before it), read on one and on two threads,
 * which must agree; *nlines gets the file's lines. Returns how many of
 * those reads were refused. */
static int each_line(int layout, const char *const *rows, size_t n,
                     size_t *nlines) {
  size_t len;
  char *t = make(12, 4, layout, 0, 0, -1, &len);
  /* Line starts. */
  size_t starts[200], ns = 0;
  for (size_t i = 0; i < len && ns < 200; i++)
    if (i == 0 || t[i - 1] == '\n')
      starts[ns++] = i;
  char *u = malloc(len + 128);
  assert_non_null(u);
  int failures = 0;
  for (size_t b = 0; b < n; b++)
    for (size_t l = 1; l < ns; l++) {
      /* Line l replaced by the row, then the same with it inserted before
       * line l. */
      for (int ins = 0; ins < 2; ins++) {
        size_t end = l + 1 < ns ? starts[l + 1] : len;
        size_t w = starts[l];
        memcpy(u, t, w);
        size_t k = strlen(rows[b]);
        memcpy(u + w, rows[b], k);
        w += k;
        size_t from = ins ? starts[l] : end;
        memcpy(u + w, t + from, len - from);
        w += len - from;
        if (agree(u, w, NULL) < 0)
          failures++;
      }
    }
  free(u);
  free(t);
  *nlines = ns;
  return failures;
}

/* A fault on each row in turn: every message, line and column the same.
 * Some faults only show against a row in the other half (a cap or a GPU
 * count of the same job). */
static void faults_agree(void **state) {
  (void)state;
  static const char *const bad[] = {
      "job-3,300,x,1000,8,\n",        /* not a number */
      "job-3,300,2400,1000,8,,9\n",   /* a field too many */
      ",300,2400,1000,8,\n",          /* empty job */
      "job-3,300,-5,1000,8,\n",       /* not positive */
      "job-3,200,2400,1000,,\n",      /* cap 200 again */
      "job-3,950,2400,1000,16,\n",    /* another GPU count */
      "job-77,950,2400,1000,,\n",     /* a job of one point */
      "job-3,950,2400,1000,2.5,\n",   /* GPUs not whole */
      "job-3,950,2400,1000,8,-1\n",   /* negative sd */
      "job-3,950,2400,1000,8,1\r",    /* lone CR */
      "job-3,950,2400,1e999,8,\n",    /* infinite */
      "job-3,\"950\"x,2400,1000,8,\n" /* after the closing quote */
  };
  for (int layout = ADJACENT; layout <= MIXED; layout++) {
    size_t ns;
    int failures = each_line(layout, bad, sizeof bad / sizeof *bad, &ns);
    /* Nearly every one is refused (a lone CR or a new cap is not always a
     * fault); the comparison is what counts. */
    assert_true(failures > (int)(ns * 12));
  }
}

/* Rows that are no fault but are not of the plain shape that one thread
 * reads in place (the second of two reads every row with the CSV
 * reader), on each line in turn: the same set or error. */
static void odd_rows_agree(void **state) {
  (void)state;
  static const char *const odd[] = {
      " job-3 ,950,2400,1000,8,\n",               /* padded */
      "job-3,950,2.4e3,1000,8,\n",                /* an exponent */
      "job-3,950,+2400,1000,8,\n",                /* a plus sign */
      "job-3,950,02400.000,1000,,\n",             /* leading zeros, no GPUs */
      "job-3,950,2400.,.5e4,8,\n",                /* a bare point */
      "job-3,950,2400,1000\n",                    /* short: no GPUs, no sd */
      "job-3,950,2400,1000,8,0.5\n",              /* an sd */
      "job-3,950,2400,12345678901234567890,8,\n", /* 20 digits */
      "job-3,950,2400,0.0000000000000000000000001,8,\n", /* 25 decimals */
      "job-3,950,2400,1000,8,\r\n",                      /* CRLF */
      "\"job-3\",950,2400,1000,8,\n",                    /* quoted */
      "job 3,950,2400,1000,8,\n",                        /* a space inside */
      "job-3,950,2400,1000,08,\n",                       /* GPUs 08 */
      "job-3,950,2400,1000,8\n",                         /* sd column absent */
  };
  for (int layout = ADJACENT; layout <= MIXED; layout++) {
    size_t ns;
    (void)each_line(layout, odd, sizeof odd / sizeof *odd, &ns);
  }
}

static void mapped_agree(void **state) {
  (void)state;
  size_t len;
  char *t = make(30, 6, INTERLEAVED, 1, 1, -1, &len);
  assert_int_equal(agree(t, len, "tokens_per_s=2/tokens_per_s"), 0);
  assert_int_equal(agree(t, len, "job=job+gpus"), PFI_EPARSE);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(interleaved_known), cmocka_unit_test(layouts_agree),
      cmocka_unit_test(quoted_agree),      cmocka_unit_test(faults_agree),
      cmocka_unit_test(odd_rows_agree),    cmocka_unit_test(mapped_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
