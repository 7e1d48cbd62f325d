/* SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "testutil.h"

static void quoted_crlf_bom(void **state) {
  (void)state;
  const char in[] = "\xEF\xBB\xBF"
                    "a, \"b,1\" ,c\r\n"
                    "\"x\"\"y\",2,\"multi\nline\"\r\n"
                    "\r\n"
                    "  z ,3,\n";
  struct pfi_csv csv;
  struct pfi_error err;
  assert_int_equal(pfi_csv_open_mem(&csv, "t.csv", in, sizeof in - 1, &err), 0);
  assert_int_equal(csv.nheader, 3);
  assert_string_equal(csv.header[0], "a");
  assert_string_equal(csv.header[1], "b,1");
  assert_int_equal(pfi_csv_find(&csv, "c"), 2);
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_string_equal(csv.f[0], "x\"y");
  assert_string_equal(csv.f[2], "multi\nline");
  /* Each field's length beside it: after unquoting and trimming. */
  ASSERT_EQ_INT(csv.flen[0], 3);
  ASSERT_EQ_INT(csv.flen[1], 1);
  ASSERT_EQ_INT(csv.flen[2], 10);
  ASSERT_EQ_INT(csv.fline[2], 2);
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_string_equal(csv.f[0], "z");
  ASSERT_EQ_INT(csv.flen[0], 1);
  ASSERT_EQ_INT(csv.flen[2], 0);
  ASSERT_EQ_INT(csv.rec_line, 5); /* line 4 is blank */
  ASSERT_EQ_INT(csv.fcol[1], 6);
  assert_int_equal(csv.nf, 3);
  assert_string_equal(csv.f[2], "");
  assert_int_equal(pfi_csv_next(&csv, &err), 0);
  pfi_csv_close(&csv);
}

static void unterminated_quote(void **state) {
  (void)state;
  const char in[] = "a,b\n1,\"oops\n";
  struct pfi_csv csv;
  struct pfi_error err;
  assert_int_equal(pfi_csv_open_mem(&csv, "q.csv", in, sizeof in - 1, &err), 0);
  assert_int_equal(pfi_csv_next(&csv, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 3);
  pfi_csv_close(&csv);
}

static void double_errors(void **state) {
  (void)state;
  const char in[] = "v\nnan\n1e999\nabc\n\n2.5\n";
  struct pfi_csv csv;
  struct pfi_error err;
  double v;
  assert_int_equal(pfi_csv_open_mem(&csv, "d.csv", in, sizeof in - 1, &err), 0);
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_int_equal(pfi_csv_double(&csv, 0, "v", &v, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "NaN"));
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_int_equal(pfi_csv_double(&csv, 0, "v", &v, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "infinite"));
  ASSERT_EQ_INT(err.line, 3);
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_int_equal(pfi_csv_double(&csv, 0, "v", &v, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "not a number"));
  assert_int_equal(pfi_csv_next(&csv, &err), 1);
  assert_int_equal(pfi_csv_double(&csv, 0, "v", &v, &err), 0);
  ASSERT_NEAR(v, 2.5, 0);
  pfi_csv_close(&csv);
}

static void curves_sorted_and_validated(void **state) {
  (void)state;
  const char ok[] = "job,cap_w,power_w,tokens_per_s,extra\n"
                    "b,700,5000,100,x\n"
                    "a,300,2000,80,y\n"
                    "b,300,2500,90,z\n"
                    "a,700,4000,100,w\n";
  struct pfi_curveset set;
  struct pfi_error err;
  assert_int_equal(
      pfi_curveset_read_mem(&set, "c.csv", ok, sizeof ok - 1, NULL, &err), 0);
  assert_int_equal(set.n, 2);
  assert_string_equal(set.c[0].job, "b");
  ASSERT_NEAR(set.c[0].pts[0].cap_w, 300, 0);
  ASSERT_NEAR(pfi_curve_uncapped(&set.c[1])->power_w, 4000, 0);
  /* Midway in power between (2000, 80) and (4000, 100): 90 by hand. */
  ASSERT_NEAR(pfi_curve_tokens_at(&set.c[1], 3000), 90, 1e-12);
  ASSERT_NEAR(pfi_curve_cap_at(&set.c[1], 3000), 500, 1e-12);
  pfi_curveset_release(&set);

  /* A repeated cap is an error in a file with sd or runs columns (without
   * them it is a replicate run, test_index_noise.c). */
  const char dup[] =
      "job,cap_w,power_w,tokens_per_s,runs\na,300,1,1,1\na,300,2,2,1\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "d.csv", dup, sizeof dup - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 3);
  ASSERT_EQ_INT(err.column, 3);
  const char one[] = "job,cap_w,power_w,tokens_per_s\na,300,1,1\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "o.csv", one, sizeof one - 1, NULL, &err),
      PFI_EPARSE);
  assert_non_null(strstr(err.msg, "at least 2"));
  const char neg[] = "job,cap_w,power_w,tokens_per_s\na,300,-1,1\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "n.csv", neg, sizeof neg - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.column, 7); /* "a,300,-1": the 7th byte */
  const char miss[] = "job,cap,power_w,tokens_per_s\na,300,1,1\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "m.csv", miss, sizeof miss - 1, NULL, &err),
      PFI_EPARSE);
  assert_non_null(strstr(err.msg, "missing column 'cap_w'"));
  /* The same file read through --map. */
  const char mapped[] = "job,cap,power_w,tokens_per_s\na,300,1,1\na,400,2,2\n";
  assert_int_equal(pfi_curveset_read_mem(&set, "m.csv", mapped,
                                         sizeof mapped - 1, "cap_w=cap", &err),
                   0);
  assert_int_equal(set.c[0].n, 2);
  pfi_curveset_release(&set);
}

/* A NUL byte would end a field early ("1<NUL>9" read as 1): refused where
 * it is, in a field, a header or a quoted field alike. */
static void nul_byte_refused(void **state) {
  (void)state;
  struct pfi_csv csv;
  struct pfi_error err;
  const char in[] = "a,b\r\n1,2\n3,4\0005\n";
  assert_int_equal(pfi_csv_open_mem(&csv, "z.csv", in, sizeof in - 1, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 3);
  ASSERT_EQ_INT(err.column, 4);
  assert_non_null(strstr(err.msg, "NUL byte"));
  const char hdr[] = "\xEF\xBB\xBF"
                     "a\000,b\n";
  assert_int_equal(pfi_csv_open_mem(&csv, "h.csv", hdr, sizeof hdr - 1, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 1);
  ASSERT_EQ_INT(err.column, 2); /* the BOM is not a column, as in fields */
  struct pfi_table t;
  assert_int_equal(pfi_table_load_mem(&t, "z.csv", in, sizeof in - 1, &err),
                   PFI_EPARSE);
}

/* Reads `n` bytes of `text` back through pfi_read_file: its return code,
 * err's line on failure. */
static int read_back(const char *text, size_t n, struct pfi_error *err) {
  char path[] = "/tmp/pfi-test-csv-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *fp = fdopen(fd, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(text, 1, n, fp), n);
  assert_int_equal(fclose(fp), 0);
  char *buf = NULL;
  size_t len = 0;
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc == 0)
    ASSERT_EQ_INT(len, n);
  free(buf);
  remove(path);
  return rc;
}

/* Lines up to PFI_LINE_MAX bytes are read, one byte more is refused at its
 * line, wherever it lies among short lines (the check jumps a megabyte at
 * a time) and with lone CR line ends (the walk line by line). */
static void long_lines(void **state) {
  (void)state;
  const size_t M = PFI_LINE_MAX, S = 3 * M; /* 3 MiB of 9-byte lines */
  char *t = malloc(S + 2 * M + 16);
  struct pfi_error err;
  for (int end = 0; end < 2; end++) { /* "\n", then lone "\r" */
    char nl = end ? '\r' : '\n';
    size_t n = 0, lines = 0;
    while (n + 9 <= S) {
      memcpy(t + n, "12345678", 8);
      t[n + 8] = nl;
      n += 9;
      lines++;
    }
    /* A line of exactly M bytes, then a short one: read. */
    memset(t + n, 'x', M);
    t[n + M] = nl;
    memcpy(t + n + M + 1, "1,2", 3);
    t[n + M + 4] = nl;
    assert_int_equal(read_back(t, n + M + 5, &err), 0);
    /* M + 1 bytes: refused, located at its line. */
    memset(t + n, 'x', M + 1);
    t[n + M + 1] = nl;
    assert_int_equal(read_back(t, n + M + 2, &err), PFI_EPARSE);
    ASSERT_EQ_INT(err.line, (long)lines + 1);
    assert_non_null(strstr(err.msg, "longer than"));
    /* Unterminated at the end of the file: the same. */
    assert_int_equal(read_back(t, n + M + 1, &err), PFI_EPARSE);
    ASSERT_EQ_INT(err.line, (long)lines + 1);
    assert_int_equal(read_back(t, n + M, &err), 0);
  }
  free(t);
}

/* A header of 100000 (empty) names over one-character records: each row
 * took 100000 cells (1.6 MB), 320 MB from 100 kB of input at 200 rows. The
 * bound is (4 len + 2^20) / ncols rows: (4 * 100400 + 1048576) / 100000 =
 * 14.5, so row 15 (line 16) is refused. A file of full records of the same
 * width is read. */
static void table_wide_header_short_rows(void **state) {
  (void)state;
  enum { NC = 100000, NR = 200 };
  char *in = malloc((size_t)NC * 3 + 2 * NR + 1);
  assert_non_null(in);
  size_t w = 0;
  for (int k = 0; k < NC - 1; k++)
    in[w++] = ',';
  in[w++] = '\n';
  for (int r = 0; r < NR; r++) {
    in[w++] = '1';
    in[w++] = '\n';
  }
  struct pfi_table t;
  struct pfi_error err;
  assert_int_equal(pfi_table_load_mem(&t, "w.csv", in, w, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 16);
  assert_non_null(strstr(err.msg, "more than 14 rows"));
  /* Two full rows of 100000 fields each. */
  w = NC;
  for (int r = 0; r < 2; r++) {
    for (int k = 0; k < NC - 1; k++)
      in[w++] = ',';
    in[w++] = '\n';
  }
  assert_int_equal(pfi_table_load_mem(&t, "f.csv", in, w, &err), 0);
  ASSERT_EQ_INT(t.nrows, 2);
  ASSERT_EQ_INT(t.ncols, NC);
  pfi_table_release(&t);
  free(in);
}

/* gpus, like every optional column, may be blank (unknown); the count is
 * the one the job's rows that give it agree on. */
static void curves_blank_gpus(void **state) {
  (void)state;
  struct pfi_curveset set;
  struct pfi_error err;
  const char in[] = "job,cap_w,power_w,tokens_per_s,gpus\n"
                    "a,100,1,1,\n"
                    "a,200,2,3,8\n"
                    "b,100,1,1,\n"
                    "b,200,2,3,\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "g.csv", in, sizeof in - 1, NULL, &err), 0);
  ASSERT_EQ_INT(set.c[0].gpus, 8);
  ASSERT_EQ_INT(set.c[1].gpus, 0);
  pfi_curveset_release(&set);
  const char bad[] = "job,cap_w,power_w,tokens_per_s,gpus\n"
                     "a,100,1,1,\n"
                     "a,200,2,3,8\n"
                     "a,300,3,4,4\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "g.csv", bad, sizeof bad - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 4);
  ASSERT_EQ_INT(err.column, 11);
  assert_non_null(strstr(err.msg, "has 8 GPUs on an earlier row but 4"));
  /* runs counts runs: 2.5 was silently read as 2. */
  const char frac[] = "job,cap_w,power_w,tokens_per_s,runs\n"
                      "a,100,1,1,3\n"
                      "a,200,2,3,2.5\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "r.csv", frac, sizeof frac - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 3);
  ASSERT_EQ_INT(err.column, 11);
  assert_non_null(strstr(err.msg, "whole number"));
}

/* Curves: a used column named twice, and a record longer than the header
 * (its values would be read from shifted columns). */
static void curves_ambiguous_columns(void **state) {
  (void)state;
  struct pfi_curveset set;
  struct pfi_error err;
  const char dup[] = "job,cap_w,power_w,tokens_per_s,power_w\n"
                     "a,100,1,1,5\na,200,2,3,6\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "d.csv", dup, sizeof dup - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 1);
  ASSERT_EQ_INT(err.column, 32);
  assert_non_null(strstr(err.msg, "'power_w' appears twice"));
  /* Through --map the mapped name is the one that must be unique. */
  const char dupm[] = "job,cap,P,tokens_per_s,P\na,100,1,1,5\na,200,2,3,6\n";
  assert_int_equal(pfi_curveset_read_mem(&set, "m.csv", dupm, sizeof dupm - 1,
                                         "cap_w=cap,power_w=P", &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "'P' appears twice"));
  const char unused[] = "job,cap_w,power_w,tokens_per_s,x,x\n"
                        "a,100,1,1,5,5\na,200,2,3,6,6\n";
  assert_int_equal(pfi_curveset_read_mem(&set, "u.csv", unused,
                                         sizeof unused - 1, NULL, &err),
                   0);
  pfi_curveset_release(&set);
  const char lng[] = "cap_w,power_w,tokens_per_s,job\n"
                     "100,1,1,llama,8b\n200,2,3,llama,8b\n";
  assert_int_equal(
      pfi_curveset_read_mem(&set, "l.csv", lng, sizeof lng - 1, NULL, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 15);
  assert_non_null(strstr(err.msg, "5 fields, header has 4"));
}

/* Interpolation by power on a long curve (more than the 64 points the old
 * code sorted on the stack: it allocated beyond that and returned 0 when
 * the allocation failed) and with ties in power. */
static void curve_interpolation(void **state) {
  (void)state;
  struct pfi_curve c;
  struct pfi_point pts[70];
  memset(&c, 0, sizeof c);
  /* Point i (cap 10 i W) has power 10 i W and throughput i: both lines. */
  for (int i = 0; i < 70; i++) {
    memset(&pts[i], 0, sizeof pts[i]);
    pts[i].cap_w = 10.0 * (i + 1);
    pts[i].power_w = 10.0 * (i + 1);
    pts[i].tokens_per_s = i + 1;
  }
  c.job = "long";
  c.pts = pts;
  c.n = 70;
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 155), 15.5, 1e-12);
  ASSERT_NEAR(pfi_curve_cap_at(&c, 155), 155, 1e-12);
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 5), 1, 0);    /* clamped low */
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 1e6), 70, 0); /* clamped high */
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 700), 70, 0);
  /* Ties: caps 100 and 200 both draw 50 W (T 5 and 6), cap 300 draws
   * 100 W (T 10). Equal powers keep cap order, so at 50 W and below the
   * curve starts at the 100 W cap's point (T 5); between 50 and 100 W it
   * runs from the 200 W cap's point: at 75 W, 6 + (10 - 6) 25/50 = 8. */
  struct pfi_point tie[3] = {
      {.cap_w = 100, .power_w = 50, .tokens_per_s = 5},
      {.cap_w = 200, .power_w = 50, .tokens_per_s = 6},
      {.cap_w = 300, .power_w = 100, .tokens_per_s = 10}};
  c.pts = tie;
  c.n = 3;
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 50), 5, 0);
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 40), 5, 0);
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 75), 8, 1e-12);
  ASSERT_NEAR(pfi_curve_cap_at(&c, 75), 250, 1e-12);
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 100), 10, 0);
  /* Points out of power order (power fell as the cap rose: noise). */
  struct pfi_point mix[3] = {
      {.cap_w = 100, .power_w = 80, .tokens_per_s = 8},
      {.cap_w = 200, .power_w = 60, .tokens_per_s = 6},
      {.cap_w = 300, .power_w = 100, .tokens_per_s = 10}};
  c.pts = mix;
  ASSERT_NEAR(pfi_curve_tokens_at(&c, 70), 7, 1e-12);
  ASSERT_NEAR(pfi_curve_cap_at(&c, 70), 150, 1e-12);
  ASSERT_NEAR(pfi_curve_cap_at(&c, 90), 200, 1e-12);
  c.n = 0;
  assert_true(isnan(pfi_curve_tokens_at(&c, 70)));
}

/* A mapped file (1 MiB or more) truncated by another process after it was
 * opened: the records past its new end are an error naming the file, not
 * a SIGBUS; the rows before it read as they are. */
static void truncated_while_read(void **state) {
  (void)state;
  char path[] = "/tmp/pfi-test-csv-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fputs("job,x\n", f);
  long rows = 0;
  while (ftell(f) < (3L << 20))
    fprintf(f, "j%ld,%ld\n", rows, rows), rows++;
  assert_int_equal(fclose(f), 0);
  struct pfi_csv csv;
  struct pfi_error err;
  assert_int_equal(pfi_csv_open(&csv, path, &err), 0);
  assert_true(csv.map_len > 0); /* mapped, not read */
  assert_int_equal(pfi_csv_lost(&csv, &err), 0);
  /* Cut to its first 64 KiB (a whole number of pages on this platform). */
  assert_int_equal(truncate(path, 65536), 0);
  long got = 0;
  int rc;
  while ((rc = pfi_csv_next(&csv, &err)) == 1) {
    char want[32];
    snprintf(want, sizeof want, "j%ld", got);
    if (got < 1000) /* well before the cut: the rows as written */
      assert_string_equal(csv.f[0], want);
    got++;
  }
  assert_int_equal(rc, PFI_EIO);
  assert_non_null(strstr(err.msg, "truncated while it was read"));
  assert_non_null(strstr(err.msg, path));
  assert_true(got > 1000 && got < rows); /* 64 KiB hold about 8,000 rows */
  assert_int_equal(pfi_csv_lost(&csv, &err), PFI_EIO);
  pfi_csv_close(&csv);
  /* Read again after the cut: whole and small (read, not mapped). */
  assert_int_equal(pfi_csv_open(&csv, path, &err), 0);
  assert_int_equal(csv.map_len, 0);
  pfi_csv_close(&csv);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(truncated_while_read),
      cmocka_unit_test(quoted_crlf_bom),
      cmocka_unit_test(unterminated_quote),
      cmocka_unit_test(double_errors),
      cmocka_unit_test(curves_sorted_and_validated),
      cmocka_unit_test(nul_byte_refused),
      cmocka_unit_test(curves_ambiguous_columns),
      cmocka_unit_test(curves_blank_gpus),
      cmocka_unit_test(table_wide_header_short_rows),
      cmocka_unit_test(curve_interpolation),
      cmocka_unit_test(long_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
