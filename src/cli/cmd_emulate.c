/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfi emulate: the emulated H200/H100 (jobs, sweep, trace, calibrate).
 * Every output says "emulated": CSV and JSON through a `source` column /
 * key, tables through their title line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "pfi/csv.h"
#include "pfi/data.h"
#include "pfi/emu.h"

#define NOTICE "emulated (H200/H100 model calibrated to published PFI values)"

struct opts {
  const char *job, *caps, *jobs, *out, *format;
  double cap_w, interval_s;
  unsigned long seed;
  long gpu;
};

/* The options, bound to these (src/base/opt.h). */
static struct opts eo;

/* --gpu N: a rank of the emulator's GPUs. */
static int gpu_cb(const struct pfi_opt *o, const char *v, char *why,
                  size_t n) {
  unsigned long g;
  if (pfi_cli_parse_ulong(v, &g) < 0 || g >= PFI_EMU_MAX_GPUS) {
    snprintf(why, n, "'%s' is not a GPU rank (0..%d)", v,
             PFI_EMU_MAX_GPUS - 1);
    return -1;
  }
  eo.gpu = (long)g;
  return 0;
}

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("job", 0, &eo.job, "GROUP",
                   "job id (a published group; H100 ids end in @h100)"),
    PFI_OPT_STRING("caps", 0, &eo.caps, "LIST",
                   "caps in W: 200,500,700 or LO:HI:STEP (sweep; default: "
                   "the group's published grid)"),
    PFI_OPT_NUMBER("cap", &eo.cap_w, 0, 0, PFI_RANGE_ANY, "W",
                   "per-GPU cap in W (trace; default 700)"),
    PFI_OPT_ULONG("seed", &eo.seed, 0, 0, "S",
                  "seed (default 1); same seed, same bytes"),
    PFI_OPT_DURATION("interval", &eo.interval_s, PFI_DUR_INTERVAL, 0, 0, "D",
                     "telemetry sample interval (default 5s)"),
    PFI_OPT_CALLBACK("gpu", NULL, gpu_cb, "N",
                     "trace only this rank (default: every GPU of the job)"),
    PFI_OPT_STRING("jobs", 0, &eo.jobs, "FILE",
                   "job library (default: data/jobs/jobs.csv)"),
    PFI_OPT_STRING("out", 0, &eo.out, "FILE",
                   "calibrate: where to write the library (default: the data "
                   "directory's jobs/jobs.csv)"),
    PFI_OPT_STRING("format", 0, &eo.format, "F",
                   "jobs: table|csv|json (default table); sweep: "
                   "csv|table|json (default csv)"),
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "emulate",
    "usage: pfi emulate <action> [options]\n",
    "The built-in GPU emulator (all numbers emulated, calibrated to the\n"
    "published per-group PFI values only; not measurements).\n"
    "\n"
    "Actions:\n"
    "  jobs       list the job library (data/jobs/jobs.csv); alias: list\n"
    "  sweep      emulate a power-cap sweep of one job; writes a curves CSV\n"
    "             that `pfi index` reads\n"
    "  trace      emulate one 30-minute run's telemetry time series (CSV)\n"
    "  calibrate  refit the library's parameters to the published tables\n",
    opts,
    NULL,
    PFI_OPT_IN_ORDER,
    NULL};


/* The options of an action into *o; 0, -1 after --help, or the exit
 * status of a usage error. */
static int parse_opts(int argc, char **argv, struct opts *o) {
  memset(&eo, 0, sizeof eo);
  eo.cap_w = 700;
  eo.interval_s = 5;
  eo.seed = PFI_EMU_DEFAULT_SEED;
  eo.gpu = -1;
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  *o = eo;
  if (st == PFI_OPT_GO)
    return 0;
  return st == 0 ? -1 : st;
}

static int load_jobs(const struct opts *o, struct pfi_emu_jobs *jobs) {
  struct pfi_error e;
  pfi_error_clear(&e);
  if (pfi_emu_jobs_load(jobs, o->jobs, &e) < 0)
    return pfi_cli_fail(&e);
  return 0;
}

static const struct pfi_emu_job *
need_job(const struct opts *o, const struct pfi_emu_jobs *jobs, int *st) {
  if (!o->job) {
    *st = pfi_cli_usage("emulate", "--job GROUP is required (see 'pfi "
                                   "emulate jobs')");
    return NULL;
  }
  const struct pfi_emu_job *j = pfi_emu_job_find(jobs, o->job);
  if (!j) {
    pfi_cli_err("no job '%s' in the library (see 'pfi emulate jobs')", o->job);
    *st = PFI_EXIT_USAGE;
  }
  return j;
}

static void caps_str(const struct pfi_emu_job *j, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < j->n_caps && k + 8 < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%g", i ? ";" : "", j->caps[i]);
}

/* ---- jobs --------------------------------------------------------------- */

/* The job library as JSON. */
static int print_jobs_json(const struct pfi_emu_jobs *jobs) {
  json_t *a = json_array();
  for (size_t i = 0; i < jobs->n; i++) {
    const struct pfi_emu_job *j = &jobs->job[i];
    json_t *c = json_array();
    for (size_t k = 0; k < j->n_caps; k++)
      json_array_append_new(c, json_real(j->caps[k]));
    json_t *x = json_object();
    json_object_set_new(x, "id", json_string(j->id));
    json_object_set_new(x, "profile", json_string(j->profile));
    json_object_set_new(x, "arch", json_string(j->arch));
    json_object_set_new(x, "task", json_string(j->task));
    json_object_set_new(x, "model", json_string(j->model));
    json_object_set_new(x, "variant", json_string(j->variant));
    json_object_set_new(x, "gpus", json_integer(j->gpus));
    json_object_set_new(x, "grid", json_string(j->grid));
    json_object_set_new(x, "caps", c);
    json_object_set_new(x, "mem_share", json_real(j->mem_share));
    json_object_set_new(x, "comm_share", json_real(j->comm_share));
    json_object_set_new(x, "sm_power_w", json_real(j->sm_power_w));
    json_object_set_new(x, "mem_sm_weight", json_real(j->mem_sm_weight));
    json_object_set_new(
        x, "pfi_published",
        isnan(j->pfi_published) ? json_null() : json_real(j->pfi_published));
    json_object_set_new(x, "pfi_coarse_published",
                        isnan(j->pfi_coarse_published)
                            ? json_null()
                            : json_real(j->pfi_coarse_published));
    json_object_set_new(x, "source", json_string("emulated"));
    json_array_append_new(a, x);
  }
  return pfi_cli_print_json(a);
}

/* The job library as a terminal table or CSV. */
static int print_jobs_table(const struct pfi_emu_jobs *jobs,
                            enum pfi_format fmt) {
  char caps[128];
  /* The terminal shows the columns a reader compares; CSV has them all,
   * with the digits it always had. */
  enum {
    C_ID, C_PROF, C_ARCH, C_TASK, C_MODEL, C_VAR, C_GPUS, C_GRID, C_CAPS,
    C_MEM, C_COMM, C_SM, C_PUB, C_COARSE, C_SRC, C_N
  };
#define FILES(n) {.name = n, .kind = PFI_RESTAB_TEXT, .formats = PFI_RESTAB_IN_CSV}
  static const struct pfi_restab_col cols[C_N] = {
      [C_ID] = {.name = "id", .kind = PFI_RESTAB_TEXT},
      [C_PROF] = {.name = "profile", .label = "prof", .kind = PFI_RESTAB_TEXT},
      [C_ARCH] = {.name = "arch", .kind = PFI_RESTAB_TEXT},
      [C_TASK] = {.name = "task", .kind = PFI_RESTAB_TEXT},
      [C_MODEL] = FILES("model"),
      [C_VAR] = FILES("variant"),
      [C_GPUS] = {.name = "gpus", .kind = PFI_RESTAB_INT},
      [C_GRID] = {.name = "grid", .kind = PFI_RESTAB_TEXT},
      [C_CAPS] = FILES("caps"),
      [C_MEM] = {.name = "mem_share", .label = "mem", .kind = PFI_RESTAB_NUM,
                 .style = 'f', .prec = 3, .csv_style = 'f', .csv_prec = 6},
      [C_COMM] = {.name = "comm_share", .label = "comm",
                  .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3,
                  .csv_style = 'f', .csv_prec = 6},
      [C_SM] = {.name = "sm_power_w", .label = "sm", .unit = "W",
                .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3,
                .qty = PFI_RESTAB_Q_POWER},
      [C_PUB] = {.name = "pfi_published", .label = "pfi (pub)",
                 .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 2},
      [C_COARSE] = {.name = "pfi_coarse_published", .kind = PFI_RESTAB_NUM,
                    .style = 'f', .prec = 2, .formats = PFI_RESTAB_IN_CSV},
      [C_SRC] = FILES("source"),
  };
#undef FILES
  struct pfi_restab t;
  pfi_restab_init(&t, cols, C_N);
  t.csv_null = ""; /* no published PFI: an empty field, as always */
  char title[256];
  snprintf(title, sizeof title, "# job library: %s", NOTICE);
  pfi_restab_title(&t, title);
  for (size_t i = 0; i < jobs->n; i++) {
    const struct pfi_emu_job *j = &jobs->job[i];
    caps_str(j, caps, sizeof caps);
    pfi_restab_row(&t);
    pfi_restab_text(&t, C_ID, j->id);
    pfi_restab_text(&t, C_PROF, j->profile);
    pfi_restab_text(&t, C_ARCH, j->arch);
    pfi_restab_text(&t, C_TASK, j->task);
    pfi_restab_text(&t, C_MODEL, j->model);
    pfi_restab_text(&t, C_VAR, j->variant);
    pfi_restab_int(&t, C_GPUS, j->gpus);
    pfi_restab_text(&t, C_GRID, j->grid);
    pfi_restab_text(&t, C_CAPS, caps);
    pfi_restab_num(&t, C_MEM, j->mem_share);
    pfi_restab_num(&t, C_COMM, j->comm_share);
    pfi_restab_num(&t, C_SM, j->sm_power_w);
    pfi_restab_num(&t, C_PUB, j->pfi_published);
    pfi_restab_num(&t, C_COARSE, j->pfi_coarse_published);
    pfi_restab_text(&t, C_SRC, "emulated");
  }
  int st = pfi_cli_print_table(&t, fmt);
  pfi_restab_release(&t);
  return st == 0 && fflush(stdout) == 0 ? 0 : PFI_EXIT_FAIL;
}

static int do_jobs(const struct opts *o) {
  struct pfi_emu_jobs jobs = {0};
  enum pfi_format fmt = PFI_FMT_TABLE;
  int st;
  if (o->format &&
      (st = pfi_cli_format("emulate", o->format,
                           PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                               PFI_FMT_ALLOW_JSON,
                           &fmt)) != 0)
    return st;
  if ((st = load_jobs(o, &jobs)) != 0)
    return st;
  st = fmt == PFI_FMT_JSON ? print_jobs_json(&jobs)
                           : print_jobs_table(&jobs, fmt);
  pfi_emu_jobs_release(&jobs);
  return st;
}

/* ---- sweep -------------------------------------------------------------- */

static int do_sweep(const struct opts *o) {
  struct pfi_emu_jobs jobs = {0};
  struct pfi_emu_point *pts = NULL;
  double *caps = NULL;
  size_t n = 0;
  enum pfi_format fmt = PFI_FMT_CSV;
  struct pfi_error e;
  int st;
  pfi_error_clear(&e);
  if (o->format &&
      (st = pfi_cli_format("emulate", o->format,
                           PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                               PFI_FMT_ALLOW_JSON,
                           &fmt)) != 0)
    return st;
  if ((st = load_jobs(o, &jobs)) != 0)
    return st;
  const struct pfi_emu_job *j = need_job(o, &jobs, &st);
  if (!j)
    goto out;
  if (o->caps) {
    if (pfi_cli_parse_numlist(o->caps, &caps, &n, &e) < 0) {
      st = pfi_cli_usage("emulate", "--caps: %s", e.msg);
      goto out;
    }
    if (n < 1 || n > 64) {
      st = pfi_cli_usage("emulate", "--caps: give 1..64 caps, not %zu", n);
      goto out;
    }
    for (size_t i = 0; i < n; i++)
      if (!(caps[i] >= 200 && caps[i] <= 700)) {
        st = pfi_cli_usage("emulate",
                           "--caps: %g W is outside the GPU's "
                           "limits 200..700 W",
                           caps[i]);
        goto out;
      }
    /* A cap twice would write a curve that pfi index refuses. */
    for (size_t i = 0; i < n; i++)
      for (size_t k = 0; k < i; k++)
        if (caps[i] == caps[k]) {
          st = pfi_cli_usage("emulate", "--caps: %g W appears twice", caps[i]);
          goto out;
        }
  } else {
    n = j->n_caps;
    caps = malloc(n * sizeof *caps);
    if (!caps) {
      st = PFI_EXIT_FAIL;
      goto out;
    }
    memcpy(caps, j->caps, n * sizeof *caps);
  }
  pts = calloc(n, sizeof *pts);
  if (!pts) {
    st = PFI_EXIT_FAIL;
    goto out;
  }
  if (pfi_emu_sweep(j, caps, n, o->seed, o->interval_s, pts, &e) < 0) {
    st = pfi_cli_fail(&e);
    goto out;
  }
  if (fmt == PFI_FMT_JSON) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
      json_t *x = json_object();
      json_object_set_new(x, "job", json_string(j->id));
      json_object_set_new(x, "cap_w", json_real(pts[i].cap_w));
      json_object_set_new(x, "power_w", json_real(pts[i].power_w));
      json_object_set_new(x, "tokens_per_s", json_real(pts[i].tokens_per_s));
      json_object_set_new(x, "gpus", json_integer(j->gpus));
      json_object_set_new(x, "power_sd_w", json_real(pts[i].power_sd_w));
      json_object_set_new(x, "tokens_sd", json_real(pts[i].tokens_sd));
      json_object_set_new(x, "runs", json_integer(1));
      json_object_set_new(x, "sm_clock_mhz", json_real(pts[i].sm_clock_mhz));
      json_object_set_new(x, "mem_clock_mhz", json_real(pts[i].mem_clock_mhz));
      json_object_set_new(x, "seed", json_integer((json_int_t)o->seed));
      json_object_set_new(x, "source", json_string("emulated"));
      json_array_append_new(a, x);
    }
    st = pfi_cli_print_json(a);
    goto out;
  }
  if (fmt == PFI_FMT_TABLE)
    printf("# sweep of %s, seed %lu: %s\n%8s %12s %14s %10s %10s\n", j->id,
           o->seed, NOTICE, "cap_w", "power_w", "tokens_per_s", "sm_mhz",
           "mem_mhz");
  else
    printf("job,cap_w,power_w,tokens_per_s,gpus,power_sd_w,tokens_sd,runs,"
           "sm_clock_mhz,mem_clock_mhz,seed,source\n");
  for (size_t i = 0; i < n; i++) {
    const struct pfi_emu_point *p = &pts[i];
    if (fmt == PFI_FMT_TABLE)
      printf("%8g %12.3f %14.3f %10.1f %10.1f\n", p->cap_w, p->power_w,
             p->tokens_per_s, p->sm_clock_mhz, p->mem_clock_mhz);
    else
      printf("%s,%g,%.4f,%.4f,%u,%.4f,%.4f,1,%.2f,%.2f,%lu,emulated\n", j->id,
             p->cap_w, p->power_w, p->tokens_per_s, j->gpus, p->power_sd_w,
             p->tokens_sd, p->sm_clock_mhz, p->mem_clock_mhz, o->seed);
  }
  st = fflush(stdout) == 0 ? 0 : PFI_EXIT_FAIL;
out:
  free(caps);
  free(pts);
  pfi_emu_jobs_release(&jobs);
  return st;
}

/* ---- trace -------------------------------------------------------------- */

static int do_trace(const struct opts *o) {
  struct pfi_emu_jobs jobs = {0};
  struct pfi_emu_run *run = NULL;
  struct pfi_error e;
  int st;
  pfi_error_clear(&e);
  if (o->format && strcmp(o->format, "csv") != 0)
    return pfi_cli_usage("emulate", "trace writes CSV only, not '%s'",
                         o->format);
  if (!(o->cap_w >= 200 && o->cap_w <= 700))
    return pfi_cli_usage("emulate",
                         "--cap: %g W is outside the GPU's limits "
                         "200..700 W",
                         o->cap_w);
  if ((st = load_jobs(o, &jobs)) != 0)
    return st;
  const struct pfi_emu_job *j = need_job(o, &jobs, &st);
  if (!j)
    goto out;
  if (o->gpu >= (long)j->gpus) {
    st = pfi_cli_usage("emulate", "--gpu: job %s has ranks 0..%u", j->id,
                       j->gpus - 1);
    goto out;
  }
  run = malloc(sizeof *run);
  if (!run) {
    st = PFI_EXIT_FAIL;
    goto out;
  }
  double capv[PFI_EMU_MAX_GPUS];
  for (unsigned r = 0; r < PFI_EMU_MAX_GPUS; r++)
    capv[r] = o->cap_w;
  if (pfi_emu_run_init(run, j, capv, o->seed, &e) < 0) {
    st = pfi_cli_fail(&e);
    goto out;
  }
  printf("t_s,gpu,phase,cap_w");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    if (f != PFI_FIELD_ENERGY)
      printf(",%s", pfi_field_name((enum pfi_field)f));
  printf(",energy_j,tokens_per_s,job,source\n");
  double energy[PFI_EMU_MAX_GPUS] = {0};
  size_t ns = (size_t)floor(run->tl.duration_s / o->interval_s) + 1;
  unsigned r0 = o->gpu >= 0 ? (unsigned)o->gpu : 0;
  unsigned r1 = o->gpu >= 0 ? (unsigned)o->gpu + 1 : j->gpus;
  for (size_t k = 0; k < ns; k++) {
    double t = (double)k * o->interval_s;
    for (unsigned r = r0; r < r1; r++) {
      struct pfi_sample s;
      double tok;
      enum pfi_phase ph;
      pfi_emu_run_sample(run, r, t, &s, &tok, &ph);
      /* The energy counter integrates the sampled power (rectangle rule
       * over the preceding interval). */
      if (k > 0)
        energy[r] += s.v[PFI_FIELD_POWER] * o->interval_s;
      printf("%g,%u,%s,%g", t, r, pfi_phase_name(ph), o->cap_w);
      for (int f = 0; f < PFI_FIELD__COUNT; f++) {
        if (f == PFI_FIELD_ENERGY)
          continue;
        double v = s.v[f];
        if (f == PFI_FIELD_NVLINK_TX || f == PFI_FIELD_NVLINK_RX ||
            f == PFI_FIELD_PCIE_TX || f == PFI_FIELD_PCIE_RX)
          printf(",%.0f", v);
        else
          printf(",%.4f", v);
      }
      printf(",%.1f,%.3f,%s,emulated\n", energy[r], tok, j->id);
    }
  }
  st = fflush(stdout) == 0 ? 0 : PFI_EXIT_FAIL;
out:
  free(run);
  pfi_emu_jobs_release(&jobs);
  return st;
}

/* ---- calibrate ---------------------------------------------------------- */

/* Builds the library's entries from the published tables (metadata and
 * targets) and data/jobs/models.csv (parameter counts). */
struct model_row {
  char name[64];
  double params_b, active_b;
};

static int parse_variant(const char *v, double *seq, double *bs) {
  const char *p = strstr(v, "seq");
  const char *q = strstr(v, "bs");
  *seq = 4096; /* the assumed default where the paper names none */
  *bs = 4;
  if (p)
    *seq = strtod(p + 3, NULL);
  if (q)
    *bs = strtod(q + 2, NULL);
  return (*seq > 0 && *bs > 0) ? 0 : -1;
}

/* Frame buffer in use, GiB per GPU: FSDP-sharded weights, gradients and
 * optimizer state (16 B/param pretraining, 2 B/param frozen LoRA base) plus
 * activations with checkpointing (~1.5 GiB per 1k tokens of micro-batch
 * per 10 B active parameters, at least 8 GiB). A plausible fill, not a
 * measurement; only the warmup threshold depends on it. */
static double fb_estimate(const char *task, double params_b, double active_b,
                          unsigned gpus, double seq, double bs, double total) {
  double state = (strcmp(task, "pt") == 0 ? 16.0 : 2.0) * params_b / gpus;
  double act = 1.5 * (seq * bs / 1000.0) * (active_b / 10.0);
  if (act < 8)
    act = 8;
  double fb = state + act + 4.0;
  if (fb > 0.92 * total)
    fb = 0.92 * total;
  return round(fb * 10) / 10;
}

static int add_jobs_from(const char *rel, const char *profile,
                         const char *pfi_col, const struct pfi_table *models,
                         const struct pfi_table *sens, struct pfi_emu_job **v,
                         size_t *n, struct pfi_error *e) {
  char path[4096];
  struct pfi_table t = {0};
  int rc = pfi_data_path(rel, path, sizeof path, e);
  if (rc < 0)
    return rc;
  if ((rc = pfi_table_load(&t, path, e)) < 0)
    return rc;
  int cg = pfi_table_find(&t, "group"), ca = pfi_table_find(&t, "arch"),
      ct = pfi_table_find(&t, "task"), cm = pfi_table_find(&t, "model"),
      cn = pfi_table_find(&t, "gpus"), cv = pfi_table_find(&t, "variant"),
      cr = pfi_table_find(&t, "grid"), cp = pfi_table_find(&t, pfi_col),
      cnote = pfi_table_find(&t, "note");
  if (cg < 0 || ca < 0 || ct < 0 || cm < 0 || cn < 0 || cp < 0) {
    rc = pfi_error_setloc(e, PFI_EPARSE, t.name, 1, 0,
                          "missing one of the columns group, arch, task, "
                          "model, gpus, %s",
                          pfi_col);
    goto out;
  }
  const struct pfi_emu_profile *prof = pfi_emu_profile_find(profile);
  for (size_t r = 0; r < t.nrows; r++) {
    struct pfi_emu_job *nv = realloc(*v, (*n + 1) * sizeof **v);
    if (!nv) {
      rc = pfi_error_set(e, PFI_ENOMEM, "out of memory");
      goto out;
    }
    *v = nv;
    struct pfi_emu_job *j = &nv[*n];
    memset(j, 0, sizeof *j);
    const char *g = pfi_table_cell(&t, r, cg);
    snprintf(j->id, sizeof j->id, "%s%s", g ? g : "",
             strcmp(profile, "h100") == 0 ? "@h100" : "");
    snprintf(j->profile, sizeof j->profile, "%s", profile);
    snprintf(j->arch, sizeof j->arch, "%s", pfi_table_cell(&t, r, ca));
    snprintf(j->task, sizeof j->task, "%s", pfi_table_cell(&t, r, ct));
    snprintf(j->model, sizeof j->model, "%s", pfi_table_cell(&t, r, cm));
    const char *var = cv >= 0 ? pfi_table_cell(&t, r, cv) : NULL;
    snprintf(j->variant, sizeof j->variant, "%s", var ? var : "");
    double gp;
    if ((rc = pfi_table_double(&t, r, cn, &gp, e)) < 0)
      goto out;
    j->gpus = (unsigned)gp;
    const char *grid = cr >= 0 ? pfi_table_cell(&t, r, cr) : "fine";
    snprintf(j->grid, sizeof j->grid, "%s", grid && *grid ? grid : "fine");
    const double *gc = strcmp(j->grid, "coarse") == 0 ? pfi_emu_grid_coarse
                                                      : pfi_emu_grid_fine;
    j->n_caps = strcmp(j->grid, "coarse") == 0 ? 4 : 6;
    memcpy(j->caps, gc, j->n_caps * sizeof *gc);
    /* A published note of failed runs removes those caps from the grid
     * (Table 8: "H100 500 W and 200 W runs failed"). */
    const char *note = cnote >= 0 ? pfi_table_cell(&t, r, cnote) : NULL;
    if (note && strstr(note, "failed")) {
      size_t k = 0;
      for (size_t i = 0; i < j->n_caps; i++) {
        char w[16];
        snprintf(w, sizeof w, "%g W", j->caps[i]);
        if (strstr(note, w) && j->caps[i] != 700)
          continue;
        j->caps[k++] = j->caps[i];
      }
      j->n_caps = k;
    }
    if ((rc = pfi_table_double(&t, r, cp, &j->pfi_published, e)) < 0)
      goto out;
    j->pfi_coarse_published = NAN;
    if (sens && strcmp(profile, "h200") == 0) {
      int sg = pfi_table_find(sens, "group"),
          sc = pfi_table_find(sens, "pfi_coarse_4caps");
      for (size_t q = 0; sg >= 0 && sc >= 0 && q < sens->nrows; q++)
        if (strcmp(pfi_table_cell(sens, q, sg), g) == 0 &&
            (rc = pfi_table_double(sens, q, sc, &j->pfi_coarse_published, e)) <
                0)
          goto out;
    }
    int found = 0;
    int mm = pfi_table_find(models, "model"),
        mp = pfi_table_find(models, "params_b"),
        ma = pfi_table_find(models, "active_b");
    for (size_t q = 0; q < models->nrows; q++)
      if (strcmp(pfi_table_cell(models, q, mm), j->model) == 0) {
        if ((rc = pfi_table_double(models, q, mp, &j->params_b, e)) < 0 ||
            (rc = pfi_table_double(models, q, ma, &j->active_b, e)) < 0)
          goto out;
        found = 1;
      }
    if (!found) {
      rc = pfi_error_setloc(e, PFI_ENOTFOUND, t.name, t.line[r], 0,
                            "model '%s' is not in jobs/models.csv", j->model);
      goto out;
    }
    double seq, bs;
    parse_variant(j->variant, &seq, &bs);
    j->seq_len = seq;
    j->tokens_per_step = seq * bs * j->gpus;
    j->fb_gib = fb_estimate(j->task, j->params_b, j->active_b, j->gpus, seq, bs,
                            prof->fb_total_mib / 1024.0);
    j->line = t.line[r];
    (*n)++;
  }
out:
  pfi_table_release(&t);
  return rc;
}

static int do_calibrate(const struct opts *o) {
  struct pfi_error e;
  struct pfi_table models = {0}, sens = {0};
  struct pfi_emu_job *v = NULL;
  size_t n = 0;
  char path[4096], out[4096], tmp[4200];
  FILE *fp = NULL;
  int st = 0, rc;
  pfi_error_clear(&e);
  if ((rc = pfi_data_path("jobs/models.csv", path, sizeof path, &e)) < 0 ||
      (rc = pfi_table_load(&models, path, &e)) < 0 ||
      (rc = pfi_data_path("paper/h200_grid_sensitivity.csv", path, sizeof path,
                          &e)) < 0 ||
      (rc = pfi_table_load(&sens, path, &e)) < 0 ||
      (rc = add_jobs_from("paper/h200_headline_groups.csv", "h200", "pfi",
                          &models, &sens, &v, &n, &e)) < 0 ||
      (rc = add_jobs_from("paper/h200_heldout_groups.csv", "h200", "pfi",
                          &models, &sens, &v, &n, &e)) < 0 ||
      (rc = add_jobs_from("paper/h100_h200_matched_groups.csv", "h100",
                          "pfi_h100", &models, NULL, &v, &n, &e)) < 0) {
    st = pfi_cli_fail(&e);
    goto out;
  }
  if (o->out)
    snprintf(out, sizeof out, "%s", o->out);
  else
    snprintf(out, sizeof out, "%s/jobs/jobs.csv", pfi_data_dir());
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
  struct pfi_emu_calib *res = calloc(n, sizeof *res);
  if (!res) {
    st = PFI_EXIT_FAIL;
    goto out;
  }
  size_t worst = 0;
  double worst_d = 0;
  for (size_t i = 0; i < n; i++) {
    if (pfi_emu_calibrate(&v[i], o->seed, &res[i], &e) < 0) {
      free(res);
      st = pfi_cli_fail(&e);
      goto out;
    }
    double d = fabs(res[i].pfi - v[i].pfi_published);
    if (!isnan(v[i].pfi_coarse_published) &&
        fabs(res[i].pfi_coarse - v[i].pfi_coarse_published) > d)
      d = fabs(res[i].pfi_coarse - v[i].pfi_coarse_published);
    if (d > worst_d)
      worst_d = d, worst = i;
    fprintf(stderr, "calibrate %2zu/%zu %-36s pfi %.3f (published %.2f)", i + 1,
            n, v[i].id, res[i].pfi, v[i].pfi_published);
    if (!isnan(v[i].pfi_coarse_published))
      fprintf(stderr, " coarse %.3f (%.2f)", res[i].pfi_coarse,
              v[i].pfi_coarse_published);
    fprintf(stderr, " P=%.0f W\n", res[i].uncapped_w);
  }
  fp = fopen(tmp, "w");
  if (!fp) {
    pfi_cli_err("%s: cannot write", tmp);
    free(res);
    st = PFI_EXIT_FAIL;
    goto out;
  }
  fprintf(
      fp,
      "id,source,profile,arch,task,model,variant,gpus,grid,caps,"
      "params_b,active_b,seq_len,tokens_per_step,fb_gib,mem_share,"
      "comm_share,sm_power_w,mem_sm_weight,pfi_published,"
      "pfi_coarse_published,pfi_emulated,pfi_coarse_emulated,uncapped_power_w,"
      "tmax_tokens_per_s,mfu,calibration_seed\n");
  for (size_t i = 0; i < n; i++) {
    const struct pfi_emu_job *j = &v[i];
    char caps[128];
    caps_str(j, caps, sizeof caps);
    fprintf(fp,
            "%s,emulated,%s,%s,%s,%s,%s,%u,%s,%s,%g,%g,%g,%g,%g,%.6f,%.6f,"
            "%.3f,%.6f,%.2f,",
            j->id, j->profile, j->arch, j->task, j->model, j->variant, j->gpus,
            j->grid, caps, j->params_b, j->active_b, j->seq_len,
            j->tokens_per_step, j->fb_gib, j->mem_share, j->comm_share,
            j->sm_power_w, j->mem_sm_weight, j->pfi_published);
    if (!isnan(j->pfi_coarse_published))
      fprintf(fp, "%.2f", j->pfi_coarse_published);
    fprintf(fp, ",%.4f,", res[i].pfi);
    if (!isnan(res[i].pfi_coarse))
      fprintf(fp, "%.4f", res[i].pfi_coarse);
    fprintf(fp, ",%.1f,%.1f,%.4f,%lu\n", res[i].uncapped_w, res[i].tmax,
            res[i].mfu, o->seed);
  }
  free(res);
  if (fclose(fp) != 0) {
    fp = NULL;
    pfi_cli_err("%s: write failed", tmp);
    unlink(tmp);
    st = PFI_EXIT_FAIL;
    goto out;
  }
  fp = NULL;
  if (rename(tmp, out) != 0) {
    pfi_cli_err("%s: cannot replace", out);
    unlink(tmp);
    st = PFI_EXIT_FAIL;
    goto out;
  }
  fprintf(stderr, "calibrate: wrote %zu jobs to %s; largest miss %.4f (%s)\n",
          n, out, worst_d, n ? v[worst].id : "-");
out:
  if (fp)
    fclose(fp);
  free(v);
  pfi_table_release(&models);
  pfi_table_release(&sens);
  return st;
}

int cmd_emulate(int argc, char **argv) {
  if (argc < 2) {
    pfi_opt_print_help(&help, stderr);
    return PFI_EXIT_USAGE;
  }
  if (pfi_cli_is_help(argv[1])) {
    pfi_opt_print_help(&help, stdout);
    return 0;
  }
  const char *act = argv[1];
  struct opts o;
  int st = parse_opts(argc - 1, argv + 1, &o);
  if (st < 0)
    return 0; /* --help */
  if (st > 0)
    return st;
  if (strcmp(act, "jobs") == 0 || strcmp(act, "list") == 0)
    return do_jobs(&o);
  if (strcmp(act, "sweep") == 0)
    return do_sweep(&o);
  if (strcmp(act, "trace") == 0)
    return do_trace(&o);
  if (strcmp(act, "calibrate") == 0)
    return do_calibrate(&o);
  return pfi_cli_usage("emulate",
                       "unknown action '%s' (jobs, sweep, trace, "
                       "calibrate)",
                       act);
}
