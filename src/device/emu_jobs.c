/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The emulator's job library: data/jobs/jobs.csv, range-checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/data.h"
#include "pfi/emu.h"

/* Columns the loader needs; the others (derived figures written by the
 * calibration for readers) are ignored. */
enum {
  C_ID,
  C_SOURCE,
  C_PROFILE,
  C_ARCH,
  C_TASK,
  C_MODEL,
  C_VARIANT,
  C_GPUS,
  C_GRID,
  C_CAPS,
  C_PARAMS,
  C_ACTIVE,
  C_SEQ,
  C_TPS,
  C_FB,
  C_MEM,
  C_COMM,
  C_SMP,
  C_MSW,
  C_PFI,
  C_PFIC,
  C__N
};
static const char *const colname[C__N] = {"id",
                                          "source",
                                          "profile",
                                          "arch",
                                          "task",
                                          "model",
                                          "variant",
                                          "gpus",
                                          "grid",
                                          "caps",
                                          "params_b",
                                          "active_b",
                                          "seq_len",
                                          "tokens_per_step",
                                          "fb_gib",
                                          "mem_share",
                                          "comm_share",
                                          "sm_power_w",
                                          "mem_sm_weight",
                                          "pfi_published",
                                          "pfi_coarse_published"};

static int copy_str(char *dst, size_t n, const char *s,
                    const struct pfi_table *t, size_t row, int col,
                    const char *what, struct pfi_error *err) {
  if (!s)
    s = "";
  if (strlen(s) >= n)
    return pfi_error_setloc(
        err, PFI_EPARSE, t->name, t->line[row], t->col[row * t->ncols + col],
        "field '%s': longer than %zu characters", what, n - 1);
  strcpy(dst, s);
  return 0;
}

static int num(const struct pfi_table *t, size_t row, int col, const char *what,
               double lo, double hi, double *out, struct pfi_error *err) {
  int rc = pfi_table_double(t, row, col, out, err);
  if (rc < 0)
    return rc;
  if (!(*out >= lo && *out <= hi))
    return pfi_error_setloc(
        err, PFI_ERANGE, t->name, t->line[row], t->col[row * t->ncols + col],
        "field '%s': %g is outside %g..%g", what, *out, lo, hi);
  return 0;
}

/* Optional published value: empty means "none" (NaN). */
static int opt_num(const struct pfi_table *t, size_t row, int col,
                   const char *what, double *out, struct pfi_error *err) {
  const char *s = pfi_table_cell(t, row, col);
  if (!s || !*s) {
    *out = NAN;
    return 0;
  }
  return num(t, row, col, what, 0.0, 100.0, out, err);
}

static int parse_caps(const struct pfi_table *t, size_t row, int col,
                      struct pfi_emu_job *j, struct pfi_error *err) {
  const char *s = pfi_table_cell(t, row, col);
  long line = t->line[row], c = t->col[row * t->ncols + col];
  j->n_caps = 0;
  if (!s || !*s)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, line, c,
                            "field 'caps': empty value");
  const char *p = s;
  while (*p) {
    char *end;
    double v = strtod(p, &end);
    if (end == p || !(v >= 200 && v <= 700) ||
        (j->n_caps > 0 && v <= j->caps[j->n_caps - 1]))
      return pfi_error_setloc(err, PFI_EPARSE, t->name, line, c,
                              "field 'caps': expected ascending caps in "
                              "200..700 W separated by ';', got '%s'",
                              s);
    if (j->n_caps == sizeof j->caps / sizeof j->caps[0])
      return pfi_error_setloc(err, PFI_EPARSE, t->name, line, c,
                              "field 'caps': more than %zu caps",
                              sizeof j->caps / sizeof j->caps[0]);
    j->caps[j->n_caps++] = v;
    p = end;
    if (*p == ';')
      p++;
    else if (*p)
      return pfi_error_setloc(err, PFI_EPARSE, t->name, line, c,
                              "field 'caps': expected ';' in '%s'", s);
  }
  if (j->n_caps < 2)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, line, c,
                            "field 'caps': a sweep needs at least 2 caps");
  return 0;
}

/* Validates the loaded table `t` into `jobs`; releases `t`. */
static int from_table(struct pfi_emu_jobs *jobs, struct pfi_table *tp,
                      struct pfi_error *err) {
  struct pfi_table t = *tp;
  int idx[C__N], rc = 0;
  for (int c = 0; c < C__N; c++) {
    idx[c] = pfi_table_find(&t, colname[c]);
    if (idx[c] < 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, 1, 0,
                            "missing column '%s'", colname[c]);
      goto out;
    }
  }
  if (t.nrows == 0) {
    rc = pfi_error_setloc(err, PFI_EPARSE, t.name, 1, 0, "no jobs");
    goto out;
  }
  jobs->job = calloc(t.nrows, sizeof *jobs->job);
  if (!jobs->job) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t r = 0; r < t.nrows; r++) {
    struct pfi_emu_job *j = &jobs->job[r];
    double v;
    j->line = t.line[r];
#define STR(field, c)                                                          \
  if ((rc = copy_str(j->field, sizeof j->field, pfi_table_cell(&t, r, idx[c]), \
                     &t, r, idx[c], colname[c], err)) < 0)                     \
    goto out;
    STR(id, C_ID)
    STR(profile, C_PROFILE)
    STR(arch, C_ARCH)
    STR(task, C_TASK)
    STR(model, C_MODEL)
    STR(variant, C_VARIANT)
    STR(grid, C_GRID)
#undef STR
    long line = t.line[r];
#define BAD(c, ...)                                                            \
  do {                                                                         \
    rc = pfi_error_setloc(err, PFI_EPARSE, t.name, line,                       \
                          t.col[r * t.ncols + idx[c]], __VA_ARGS__);           \
    goto out;                                                                  \
  } while (0)
    const char *src = pfi_table_cell(&t, r, idx[C_SOURCE]);
    if (!src || strcmp(src, "emulated") != 0)
      BAD(C_SOURCE, "field 'source': must be 'emulated' (the library holds "
                    "emulated parameters only)");
    if (!*j->id)
      BAD(C_ID, "field 'id': empty value");
    for (size_t q = 0; q < r; q++)
      if (strcmp(jobs->job[q].id, j->id) == 0)
        BAD(C_ID, "field 'id': '%s' repeats line %ld", j->id,
            jobs->job[q].line);
    if (!pfi_emu_profile_find(j->profile))
      BAD(C_PROFILE, "field 'profile': '%s' is not h200 or h100", j->profile);
    if (strcmp(j->arch, "dense") && strcmp(j->arch, "moe"))
      BAD(C_ARCH, "field 'arch': '%s' is not dense or moe", j->arch);
    if (strcmp(j->task, "pt") && strcmp(j->task, "ft"))
      BAD(C_TASK, "field 'task': '%s' is not pt or ft", j->task);
    if (strcmp(j->grid, "fine") && strcmp(j->grid, "coarse"))
      BAD(C_GRID, "field 'grid': '%s' is not fine or coarse", j->grid);
#undef BAD
    if ((rc = num(&t, r, idx[C_GPUS], "gpus", 1, PFI_EMU_MAX_GPUS, &v, err)) <
        0)
      goto out;
    if (v != floor(v)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, line,
                            t.col[r * t.ncols + idx[C_GPUS]],
                            "field 'gpus': %g is not a whole number", v);
      goto out;
    }
    j->gpus = (unsigned)v;
    if ((rc = parse_caps(&t, r, idx[C_CAPS], j, err)) < 0)
      goto out;
#define NUM(field, c, lo, hi)                                                  \
  if ((rc = num(&t, r, idx[c], colname[c], lo, hi, &j->field, err)) < 0)       \
    goto out;
    NUM(params_b, C_PARAMS, 0.01, 10000)
    NUM(active_b, C_ACTIVE, 0.01, 10000)
    NUM(seq_len, C_SEQ, 1, 1e7)
    NUM(tokens_per_step, C_TPS, 1, 1e10)
    NUM(fb_gib, C_FB, 1, 1024)
    NUM(mem_share, C_MEM, 0, 0.95)
    NUM(comm_share, C_COMM, 0, 0.5)
    NUM(sm_power_w, C_SMP, 10, 3000)
    NUM(mem_sm_weight, C_MSW, 0, 1)
#undef NUM
    if (j->active_b > j->params_b) {
      rc = pfi_error_setloc(
          err, PFI_ERANGE, t.name, line, t.col[r * t.ncols + idx[C_ACTIVE]],
          "field 'active_b': %g exceeds params_b %g", j->active_b, j->params_b);
      goto out;
    }
    if (j->mem_share + j->comm_share > 0.95) {
      rc = pfi_error_setloc(err, PFI_ERANGE, t.name, line,
                            t.col[r * t.ncols + idx[C_COMM]],
                            "field 'comm_share': mem_share + comm_share = %g "
                            "leaves no compute (at most 0.95)",
                            j->mem_share + j->comm_share);
      goto out;
    }
    if ((rc = opt_num(&t, r, idx[C_PFI], "pfi_published", &j->pfi_published,
                      err)) < 0 ||
        (rc = opt_num(&t, r, idx[C_PFIC], "pfi_coarse_published",
                      &j->pfi_coarse_published, err)) < 0)
      goto out;
    jobs->n++;
  }
out:
  pfi_table_release(&t);
  if (rc < 0)
    pfi_emu_jobs_release(jobs);
  return rc;
}

int pfi_emu_jobs_load(struct pfi_emu_jobs *jobs, const char *path,
                      struct pfi_error *err) {
  struct pfi_table t;
  char buf[4096];
  int rc;
  jobs->job = NULL;
  jobs->n = 0;
  if (!path) {
    if ((rc = pfi_data_path("jobs/jobs.csv", buf, sizeof buf, err)) < 0)
      return rc;
    path = buf;
  }
  if ((rc = pfi_table_load(&t, path, err)) < 0)
    return rc;
  return from_table(jobs, &t, err);
}

int pfi_emu_jobs_load_mem(struct pfi_emu_jobs *jobs, const char *name,
                          const char *data, size_t len, struct pfi_error *err) {
  struct pfi_table t;
  int rc;
  jobs->job = NULL;
  jobs->n = 0;
  if ((rc = pfi_table_load_mem(&t, name, data, len, err)) < 0)
    return rc;
  return from_table(jobs, &t, err);
}

void pfi_emu_jobs_release(struct pfi_emu_jobs *jobs) {
  if (!jobs)
    return;
  free(jobs->job);
  jobs->job = NULL;
  jobs->n = 0;
}

const struct pfi_emu_job *pfi_emu_job_find(const struct pfi_emu_jobs *jobs,
                                           const char *id) {
  if (!jobs || !id)
    return NULL;
  for (size_t i = 0; i < jobs->n; i++)
    if (strcmp(jobs->job[i].id, id) == 0)
      return &jobs->job[i];
  return NULL;
}
