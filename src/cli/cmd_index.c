/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi index`: the Power Flexibility Index of every job of a curves file. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "pfi/curve.h"
#include "pfi/fmt.h"
#include "pfi/index.h"
#include "pfi/jobset.h"

enum { DEF_RATIO = 1, DEF_AREA = 2, DEF_CE = 4, DEF_ALL = 7 };

/* The options, bound to these (src/base/opt.h). */
static int defs, node_power, fmt;
static double *caps; /* --caps, malloc'd */
static size_t ncaps;
static unsigned long draws, seed;
static double noise_p = PFI_INDEX_DEFAULT_REL_SD_POWER,
              noise_t = PFI_INDEX_DEFAULT_REL_SD_TOKENS;
static const char *map;

/* --caps LIST: the caps kept. */
static int caps_cb(const struct pfi_opt *o, const char *v, char *why,
                   size_t n) {
  struct pfi_error err;
  free(caps);
  caps = NULL;
  if (pfi_cli_parse_numlist(v, &caps, &ncaps, &err) < 0) {
    snprintf(why, n, "%s", err.msg);
    return -1;
  }
  return 0;
}

/* --noise P,T: two percentages. */
static int noise_cb(const struct pfi_opt *o, const char *v, char *why,
                    size_t n) {
  struct pfi_error err;
  double *x = NULL;
  size_t nx = 0;
  if (pfi_cli_parse_numlist(v, &x, &nx, &err) < 0 || nx != 2 ||
      !(x[0] >= 0) || !(x[1] >= 0) || x[0] > 100 || x[1] > 100) {
    free(x);
    snprintf(why, n, "expected P,T: two percentages from 0 to 100, got '%s'",
             v);
    return -1;
  }
  noise_p = x[0] / 100.0;
  noise_t = x[1] / 100.0;
  free(x);
  return 0;
}

static const struct pfi_opt_word definitions[] = {{"ratio", DEF_RATIO},
                                                 {"area", DEF_AREA},
                                                 {"ce", DEF_CE},
                                                 {"all", DEF_ALL},
                                                 {NULL, 0}};
static const struct pfi_opt_word powers[] = {
    {"gpu", 0}, {"node", 1}, {NULL, 0}};

static const struct pfi_opt opts[] = {
    {.lng = "definition", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "ratio, area, ce or all", .type = PFI_OT_CHOICE, .var = &defs,
     .words = definitions, .def = "all"},
    PFI_OPT_CALLBACK("caps", NULL, caps_cb, "LIST",
                     "keep only these caps in every job, e.g. 200,500,600,700 "
                     "or 200:700:100; a job lacking one is an error"),
    PFI_OPT_ULONG("ci", &draws, 0, 100000000, "N",
                  "95 % interval of the ratio PFI from N Monte Carlo draws "
                  "(default 0: none; the paper uses 10000)"),
    {.lng = "seed", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "random seed of the draws; the same seed gives the same output",
     .type = PFI_OT_ULONG, .var = &seed, .def = "1"},
    PFI_OPT_CALLBACK(
        "noise", NULL, noise_cb, "P,T",
        "relative noise, in %, of points without power_sd_w / tokens_sd, for "
        "the noise rule and the interval (default: estimated from the file, "
        "else 0.04,0.05, the paper's median standard errors); the output "
        "states the noise used and its source"),
    PFI_OPT_STRING("map", 0, &map, "NAME=COLUMN,...",
                   "read canonical column NAME from the file's COLUMN, e.g. "
                   "job=Workload,cap_w=GPU power cap,power_w=total GPU "
                   "power,tokens_per_s=throughput"),
    {.lng = "power", .arg = PFI_ARG_REQ, .argname = "P",
     .help = "gpu (the power_w column) or node: Eq. 1 over node power, read "
             "from node_power_w and node_power_sd_w (node_curves.csv of pfi "
             "trace summarize)",
     .type = PFI_OT_CHOICE, .var = &node_power, .words = powers,
     .def = "gpu"},
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "index",
    "usage: pfi index [options] FILE\n",
    "Computes the Power Flexibility Index of every job of a curves CSV\n"
    "(FILE, or - for standard input): required columns job, cap_w, power_w,\n"
    "tokens_per_s; optional gpus, power_sd_w, tokens_sd, runs. The point with\n"
    "the highest cap is each job's uncapped reference (T_max, P_max).\n"
    "\n"
    "Definitions (their reference points differ: ratio 1, area and ce 0\n"
    "mean throughput falls in proportion to power; above it, more\n"
    "flexible). The table names them pfi_ratio, pfi_area, pfi_ce; CSV and\n"
    "JSON keep the key pfi for the ratio definition.\n"
    "  ratio  mean over capped points of (1 - P/P_max) / (1 - T/T_max); a\n"
    "         capped point enters only when its throughput loss and its\n"
    "         power saving both exceed the noise: twice their standard\n"
    "         error, and the curve's largest rise from a cap to a lower\n"
    "         one. The others are listed in excluded_caps, the reason in\n"
    "         excluded_why: no-loss, loss-in-noise, power-in-noise\n"
    "  area   integral of T/T_max over P/P_max from (0,0), minus 1/2\n"
    "  ce     1 - a, a the slope of log T on log P (least squares)\n",
    opts,
    "The noise of points without sd columns comes from the file (the\n"
    "scatter of replicate rows, a job's cap repeated; else of the points\n"
    "whose power stays below 70 % of the cap), else the paper's default, or\n"
    "--noise; the output says which.\n"
    "Undefined values (no capped point bound; all powers equal; no interval)\n"
    "print as - in table and csv, null in JSON; the note column says why a\n"
    "ratio PFI is undefined (the cap never bound; throughput never fell\n"
    "beyond the noise) or that it rests on one capped point.\n"
    "Bad input (missing column, non-numeric, NaN or infinite value, zero or\n"
    "negative power or throughput, duplicate cap with sd or runs columns, a\n"
    "job with fewer than 2 points) is reported as FILE:LINE:COLUMN with exit\n"
    "status 2.\n",
    0,
    NULL,
    NULL,
    1,
    1,
    "FILE (use - for standard input)"};

struct row {
  struct pfi_index ix;
  int ci_n; /* defined draws; 0 = no interval */
  double ci_lo, ci_hi;
  int used_default; /* a point's noise came from the default */
};

/* Why a ratio PFI is undefined, or that it rests on one capped point
 * (its interval then reflects one point's noise only); "" otherwise. */
static const char *note_of(const struct pfi_index *ix) {
  if (!ix->pfi_defined)
    return pfi_index_undefined_reason(ix->undefined_why);
  return ix->points_used == 1 ? "one capped point" : "";
}

/* 1 when a row of the curves file says it is emulated (the job set's
 * provenance rule): its noise is the paper's (pfi_noise_of()). */
static int file_emulated(const char *path) {
  struct pfi_table t;
  struct pfi_error e;
  int em = 0;
  if (!path || strcmp(path, "-") == 0 || pfi_table_load(&t, path, &e) < 0)
    return 0;
  pfi_table_provenance(&t, &em);
  pfi_table_release(&t);
  return em;
}

static json_t *num_or_null(int defined, double v) {
  return defined && isfinite(v) ? json_real(v) : json_null();
}

/* The index of job i of the set (and its interval with draws > 0) into r,
 * zeroed first. Returns 0, or an error located at the job's first line. */
static int compute_row(const struct pfi_curveset *set, size_t i, int defs,
                       unsigned long draws, unsigned long seed,
                       const struct pfi_noise *nz, struct row *r,
                       struct pfi_error *err) {
  const struct pfi_curve *cv = &set->c[i];
  memset(r, 0, sizeof *r);
  /* ce's logarithms only when it is printed. */
  int rc = pfi_index_compute_noise(
      cv, (defs & DEF_CE) ? PFI_INDEX_ALL : PFI_INDEX_RATIO | PFI_INDEX_AREA,
      nz, &r->ix, err);
  if (rc == 0 && draws > 0) {
    rc = pfi_index_ci_noise(cv, draws, seed, nz, &r->ci_lo, &r->ci_hi, err);
    if (rc >= 0) {
      r->ci_n = rc;
      rc = 0;
    }
    for (size_t k = 0; k < cv->n; k++)
      if (cv->pts[k].power_sd_w < 0 || cv->pts[k].tokens_sd < 0)
        r->used_default = 1;
  }
  if (rc < 0) {
    pfi_index_release(&r->ix);
    /* The library names the job; the user also needs where it is. */
    if (err->line == 0) {
      char msg[PFI_ERROR_MSG_MAX];
      snprintf(msg, sizeof msg, "%s", err->msg);
      pfi_error_setloc(err, err->code, set->source, cv->first_line, 1, "%s",
                       msg);
    }
  }
  return rc;
}

/* The curves file, read with --power node's map and cut to --caps.
 * *node_map (malloc'd, the caller frees it) holds the map used. 0 or an
 * exit status, the message printed. */
static int load_curves(struct pfi_curveset *set, const char *path,
                       char **node_map) {
  struct pfi_error err;
  pfi_error_clear(&err);
  if (node_power) {
    /* Node power is the file's node_power_w: a --map of its own power
     * columns would contradict it. */
    if (map && (strstr(map, "power_w=") || strstr(map, "power_sd_w=")))
      return pfi_cli_usage("index",
                           "--power node reads power_w and power_sd_w "
                           "from node_power_w and node_power_sd_w: "
                           "drop them from --map '%s'",
                           map);
    size_t l = strlen(PFI_CURVE_NODE_POWER_MAP) + (map ? strlen(map) + 1 : 0);
    *node_map = malloc(l + 1);
    if (!*node_map)
      return PFI_EXIT_FAIL;
    snprintf(*node_map, l + 1, "%s%s%s", PFI_CURVE_NODE_POWER_MAP,
             map ? "," : "", map ? map : "");
    map = *node_map;
  }
  int rc = pfi_curveset_read(set, path, map, &err);
  if (rc == 0 && caps)
    rc = pfi_curveset_restrict(set, caps, ncaps, &err);
  if (rc < 0) {
    int status = pfi_cli_fail(&err);
    /* A file that cannot be read is bad input to this command, like a
     * malformed one: exit status 2. */
    return err.code == PFI_EIO ? PFI_EXIT_USAGE : status;
  }
  return 0;
}

/* One noise for the rule, the interval and what the output says: --noise,
 * else pfi_noise_of() (the file read again for its provenance only when
 * that could change the noise). Sets noise_p and noise_t. */
static void choose_noise(const struct pfi_curveset *set, const char *path,
                         int noise_given, struct pfi_noise *nz) {
  if (noise_given)
    pfi_noise_given(nz, noise_p, noise_t);
  else {
    pfi_noise_estimate(set, nz);
    if (nz->source != PFI_NOISE_PAPER && nz->source != PFI_NOISE_COLUMNS &&
        file_emulated(path))
      pfi_noise_paper(nz);
  }
  noise_p = nz->rel_sd_power;
  noise_t = nz->rel_sd_tokens;
}

/* The progress line on standard error every 1000 jobs (done), and at the
 * end (done == 0). */
static void progress_line(int progress, size_t done, size_t n) {
  if (progress && done == 0)
    fprintf(stderr, "\rpfi index: %zu/%zu jobs\n", n, n);
  else if (progress && done % 1000 == 0)
    fprintf(stderr, "\rpfi index: %zu/%zu jobs", done, n);
}

/* One job's JSON object. */
static json_t *json_row(const struct pfi_curveset *set, size_t i,
                        const struct row *rw, const struct pfi_noise *nz) {
  const struct pfi_index *ix = &rw->ix;
  json_t *o = json_object();
  json_object_set_new(o, "job", pfi_cli_json_str(set->c[i].job));
  if (defs & DEF_RATIO)
    json_object_set_new(o, "pfi", num_or_null(ix->pfi_defined, ix->pfi));
  if (defs & DEF_AREA)
    json_object_set_new(o, "pfi_area", num_or_null(1, ix->pfi_area));
  if (defs & DEF_CE)
    json_object_set_new(o, "pfi_ce", num_or_null(ix->ce_defined, ix->pfi_ce));
  if (defs & DEF_RATIO) {
    json_t *ci = json_null();
    if (rw->ci_n > 0 && isfinite(rw->ci_lo) && isfinite(rw->ci_hi))
      ci = json_pack("[ff]", rw->ci_lo, rw->ci_hi);
    json_object_set_new(o, "ci95", ci);
  }
  json_object_set_new(o, "points_used",
                      json_integer((json_int_t)ix->points_used));
  json_object_set_new(o, "pfi_note", json_string(note_of(ix)));
  json_t *ex = json_array();
  for (size_t k = 0; k < ix->n_excluded; k++)
    json_array_append_new(ex, json_real(ix->excluded_caps[k]));
  json_object_set_new(o, "excluded_caps", ex);
  json_t *wy = json_array();
  for (size_t k = 0; k < ix->n_excluded; k++)
    json_array_append_new(
        wy, json_string(pfi_index_why_name(ix->excluded_why[k])));
  json_object_set_new(o, "excluded_why", wy);
  json_object_set_new(o, "t_max", json_real(ix->t_max));
  json_object_set_new(o, "p_max", json_real(ix->p_max));
  if (draws > 0 && (defs & DEF_RATIO)) {
    json_object_set_new(o, "ci_draws", json_integer((json_int_t)draws));
    json_object_set_new(o, "ci_seed", json_integer((json_int_t)seed));
    json_object_set_new(
        o, "ci_default_rel_sd",
        rw->used_default
            ? json_pack("{sfsf}", "power", noise_p, "tokens", noise_t)
            : json_null());
  }
  json_object_set_new(o, "noise",
                      json_pack("{sfsfsssI}", "rel_sd_power", noise_p,
                                "rel_sd_tokens", noise_t, "source",
                                pfi_noise_source_name(nz->source), "dof",
                                (json_int_t)nz->dof));
  return o;
}

/* Every job's index, then the JSON array of them (an error comes before
 * any output). An exit status. */
static int print_json(const struct pfi_curveset *set,
                      const struct pfi_noise *nz, int progress) {
  struct pfi_error err;
  pfi_error_clear(&err);
  struct row *rows = calloc(set->n ? set->n : 1, sizeof *rows);
  if (!rows) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    return pfi_cli_fail(&err);
  }
  int status = PFI_EXIT_OK;
  size_t done = 0;
  for (; done < set->n; done++) {
    if (compute_row(set, done, defs, draws, seed, nz, &rows[done], &err) <
        0) {
      status = pfi_cli_fail(&err);
      break;
    }
    progress_line(progress, done + 1, set->n);
  }
  if (status == PFI_EXIT_OK) {
    progress_line(progress, 0, set->n);
    json_t *arr = json_array();
    for (size_t i = 0; i < set->n && arr; i++)
      json_array_append_new(arr, json_row(set, i, &rows[i], nz));
    if (!arr || pfi_cli_print_json(arr))
      status = PFI_EXIT_FAIL;
  }
  for (size_t i = 0; i < done; i++)
    pfi_index_release(&rows[i].ix);
  free(rows);
  return status;
}

/* One table for the terminal and CSV: the terminal shows the ratio
 * definition as pfi_ratio with four decimals and the interval as one
 * column; CSV keeps the key pfi, ten significant digits, and the
 * interval's bounds, draws, seed and default noise as columns. */
enum {
  C_JOB, C_PFI, C_CI, C_AREA, C_CE, C_LO, C_HI, C_PTS, C_EXC, C_TMAX,
  C_PMAX, C_DRAWS, C_SEED, C_NP, C_NT, C_WHY, C_NOTE, C_NSRC, C_NSP,
  C_NST, C_TEXC, C_N
};
static const struct pfi_restab_col all_cols[C_N] = {
    [C_JOB] = {.name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 60},
    [C_PFI] = {.name = "pfi", .label = "pfi_ratio", .kind = PFI_RESTAB_NUM,
               .style = 'f', .prec = 4, .csv_style = 'g', .csv_prec = 10,
               .width = 9, .fixed = 1},
    [C_CI] = {.name = "ci95", .kind = PFI_RESTAB_TEXT, .width = 19,
              .fixed = 1, .formats = PFI_RESTAB_IN_TERM},
    [C_AREA] = {.name = "pfi_area", .kind = PFI_RESTAB_NUM, .style = 'f',
                .prec = 4, .csv_style = 'g', .csv_prec = 10, .width = 8,
                .fixed = 1},
    [C_CE] = {.name = "pfi_ce", .kind = PFI_RESTAB_NUM, .style = 'f',
              .prec = 4, .csv_style = 'g', .csv_prec = 10, .width = 8,
              .fixed = 1},
    [C_LO] = {.name = "ci95_lo", .kind = PFI_RESTAB_NUM, .style = 'g',
              .prec = 10, .formats = PFI_RESTAB_IN_CSV},
    [C_HI] = {.name = "ci95_hi", .kind = PFI_RESTAB_NUM, .style = 'g',
              .prec = 10, .formats = PFI_RESTAB_IN_CSV},
    [C_PTS] = {.name = "points_used", .label = "points",
               .kind = PFI_RESTAB_INT, .width = 6, .fixed = 1},
    [C_EXC] = {.name = "excluded_caps", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
    [C_TMAX] = {.name = "t_max", .kind = PFI_RESTAB_NUM, .style = 'g',
                .prec = 6, .csv_style = 'g', .csv_prec = 10,
                .qty = PFI_RESTAB_Q_THROUGHPUT},
    [C_PMAX] = {.name = "p_max", .unit = "W", .kind = PFI_RESTAB_NUM,
                .style = 'g', .prec = 6, .csv_style = 'g', .csv_prec = 10,
                .qty = PFI_RESTAB_Q_POWER},
    [C_DRAWS] = {.name = "ci_draws", .kind = PFI_RESTAB_INT,
                 .formats = PFI_RESTAB_IN_CSV},
    [C_SEED] = {.name = "ci_seed", .kind = PFI_RESTAB_INT,
                .formats = PFI_RESTAB_IN_CSV},
    [C_NP] = {.name = "ci_default_rel_sd_power", .kind = PFI_RESTAB_NUM,
              .formats = PFI_RESTAB_IN_CSV},
    [C_NT] = {.name = "ci_default_rel_sd_tokens", .kind = PFI_RESTAB_NUM,
              .formats = PFI_RESTAB_IN_CSV},
    [C_WHY] = {.name = "excluded_why", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
    [C_TEXC] = {.name = "excluded", .label = "excluded (cap:why)",
                .kind = PFI_RESTAB_TEXT, .formats = PFI_RESTAB_IN_TERM},
    [C_NOTE] = {.name = "pfi_note", .label = "note", .kind = PFI_RESTAB_TEXT},
    [C_NSRC] = {.name = "noise_source", .kind = PFI_RESTAB_TEXT,
                .formats = PFI_RESTAB_IN_CSV},
    [C_NSP] = {.name = "noise_rel_sd_power", .kind = PFI_RESTAB_NUM,
               .style = 'g', .prec = 6, .formats = PFI_RESTAB_IN_CSV},
    [C_NST] = {.name = "noise_rel_sd_tokens", .kind = PFI_RESTAB_NUM,
               .style = 'g', .prec = 6, .formats = PFI_RESTAB_IN_CSV},
};

/* The table this run prints: its columns and where each of all_cols went
 * (-1: not shown). */
struct itab {
  struct pfi_restab tab;
  struct pfi_restab_col cols[C_N];
  int at[C_N];
  int ci_cols; /* the interval's columns are shown */
};

static void itab_init(struct itab *t) {
  t->ci_cols = draws > 0 && (defs & DEF_RATIO);
  size_t nc = 0;
  for (int k = 0; k < C_N; k++) {
    int on = 1;
    if (k == C_PFI)
      on = defs & DEF_RATIO;
    else if (k == C_AREA)
      on = defs & DEF_AREA;
    else if (k == C_CE)
      on = defs & DEF_CE;
    else if (k == C_NOTE)
      on = defs & DEF_RATIO;
    else if (k == C_CI || k == C_LO || k == C_HI || k == C_DRAWS ||
             k == C_SEED || k == C_NP || k == C_NT)
      on = t->ci_cols;
    t->at[k] = on ? (int)nc : -1;
    if (on)
      t->cols[nc++] = all_cols[k];
  }
  pfi_restab_init(&t->tab, t->cols, nc);
}

/* The three definitions have different reference points: said above the
 * table, so that its last line is its last row; then the noise. */
static void itab_title(struct itab *t, const struct pfi_noise *nz) {
  char title[600] = "";
  if (node_power)
    snprintf(title, sizeof title, "Power: node (node_power_w). ");
  if (defs & DEF_RATIO) {
    size_t l = strlen(title);
    snprintf(title + l, sizeof title - l,
             "pfi_ratio: 1 = throughput falls in proportion to power; above "
             "1 = more flexible.");
  }
  if (defs & (DEF_AREA | DEF_CE)) {
    size_t l = strlen(title);
    snprintf(title + l, sizeof title - l,
             "%s%s: 0 = proportional; above 0 = more flexible.",
             (defs & DEF_RATIO) ? " " : "",
             (defs & DEF_AREA) && (defs & DEF_CE) ? "pfi_area, pfi_ce"
             : (defs & DEF_AREA)                  ? "pfi_area"
                                                  : "pfi_ce");
  }
  char noise_line[256], dof_s[64] = "";
  if (nz->dof)
    snprintf(dof_s, sizeof dof_s, ", %zu degrees of freedom", nz->dof);
  if (nz->source == PFI_NOISE_COLUMNS)
    snprintf(noise_line, sizeof noise_line,
             "Noise: each point's power_sd_w and tokens_sd (sd columns).");
  else
    snprintf(noise_line, sizeof noise_line,
             "Noise of points without power_sd_w/tokens_sd: %.3g %% of "
             "power, %.3g %% of throughput (%s%s).",
             noise_p * 100.0, noise_t * 100.0,
             pfi_noise_source_name(nz->source), dof_s);
  size_t l = strlen(title);
  snprintf(title + l, sizeof title - l, "%s%s", l ? " " : "", noise_line);
  pfi_restab_title(&t->tab, title);
}

/* The excluded caps, their reasons, and cap:reason pairs, each
 * ';'-separated, into the row's three columns. */
static void itab_excluded(struct itab *t, const struct pfi_index *ix) {
  size_t need = ix->n_excluded * (PFI_FMT_MAX + 24) + 1;
  char *caps_s = malloc(need), *why_s = malloc(need), *both = malloc(need);
  if (!caps_s || !why_s || !both) {
    t->tab.failed = 1;
  } else {
    size_t lc = 0, lw = 0, lb = 0;
    for (size_t k = 0; k < ix->n_excluded; k++) {
      char g[PFI_FMT_MAX];
      pfi_fmt_g(g, ix->excluded_caps[k], 10);
      const char *why = pfi_index_why_name(ix->excluded_why[k]);
      const char *sep = k ? ";" : "";
      lc += (size_t)snprintf(caps_s + lc, need - lc, "%s%s", sep, g);
      lw += (size_t)snprintf(why_s + lw, need - lw, "%s%s", sep, why);
      lb += (size_t)snprintf(both + lb, need - lb, "%s%s:%s", sep, g, why);
    }
    pfi_restab_text(&t->tab, (size_t)t->at[C_EXC], caps_s);
    pfi_restab_text(&t->tab, (size_t)t->at[C_WHY], why_s);
    pfi_restab_text(&t->tab, (size_t)t->at[C_TEXC], both);
  }
  free(caps_s);
  free(why_s);
  free(both);
}

/* A number into column k when it is shown. */
static void itab_num(struct itab *t, int k, double v) {
  if (t->at[k] >= 0)
    pfi_restab_num(&t->tab, (size_t)t->at[k], v);
}

/* Job `job`'s row. */
static void itab_row(struct itab *t, const char *job, const struct row *rw,
                     const struct pfi_noise *nz) {
  const struct pfi_index *ix = &rw->ix;
  struct pfi_restab *tab = &t->tab;
  pfi_restab_row(tab);
  pfi_restab_text_ref(tab, (size_t)t->at[C_JOB], job);
  itab_num(t, C_PFI, ix->pfi_defined ? ix->pfi : NAN);
  itab_num(t, C_AREA, ix->pfi_area);
  itab_num(t, C_CE, ix->ce_defined ? ix->pfi_ce : NAN);
  if (t->ci_cols && rw->ci_n > 0) {
    itab_num(t, C_LO, rw->ci_lo);
    itab_num(t, C_HI, rw->ci_hi);
    if (isfinite(rw->ci_lo) && isfinite(rw->ci_hi))
      pfi_restab_textf(tab, (size_t)t->at[C_CI], "[%.4f, %.4f]", rw->ci_lo,
                       rw->ci_hi);
  }
  pfi_restab_int(tab, (size_t)t->at[C_PTS], (long long)ix->points_used);
  if (defs & DEF_RATIO)
    pfi_restab_text_ref(tab, (size_t)t->at[C_NOTE], note_of(ix));
  pfi_restab_text_ref(tab, (size_t)t->at[C_NSRC],
                      pfi_noise_source_name(nz->source));
  if (nz->source != PFI_NOISE_COLUMNS) {
    itab_num(t, C_NSP, noise_p);
    itab_num(t, C_NST, noise_t);
  }
  itab_num(t, C_TMAX, ix->t_max);
  itab_num(t, C_PMAX, ix->p_max);
  if (t->ci_cols) {
    pfi_restab_int(tab, (size_t)t->at[C_DRAWS], (long long)draws);
    pfi_restab_int(tab, (size_t)t->at[C_SEED], (long long)seed);
    if (rw->used_default) {
      itab_num(t, C_NP, noise_p);
      itab_num(t, C_NT, noise_t);
    }
  }
  if (ix->n_excluded > 0)
    itab_excluded(t, ix);
}

/* The terminal table or CSV. Each job's row is computed as it goes into
 * the table (no array of every job's index): an error still comes before
 * any output. An exit status. */
static int print_table(const struct pfi_curveset *set,
                       const struct pfi_noise *nz, int progress) {
  struct itab t;
  itab_init(&t);
  /* CSV keeps each row's text, not its cells: a large file's table is a
   * third of the memory, written in one go. */
  if (fmt == PFI_FMT_CSV)
    pfi_restab_csv_stream(&t.tab, set->n);
  itab_title(&t, nz);
  for (size_t i = 0; i < set->n && !t.tab.failed; i++) {
    struct row one;
    struct pfi_error err;
    if (compute_row(set, i, defs, draws, seed, nz, &one, &err) < 0) {
      pfi_restab_release(&t.tab);
      return pfi_cli_fail(&err);
    }
    progress_line(progress, i + 1, set->n);
    itab_row(&t, set->c[i].job, &one, nz);
    pfi_index_release(&one.ix);
  }
  progress_line(progress, 0, set->n);
  if (t.ci_cols)
    pfi_restab_note(&t.tab,
                    "ci95: 2.5-97.5 percentiles of %lu Monte Carlo draws, "
                    "seed %lu.",
                    draws, seed);
  int status = pfi_cli_print_table(&t.tab, fmt);
  pfi_restab_release(&t.tab);
  if (fflush(stdout) != 0 || ferror(stdout))
    status = PFI_EXIT_FAIL;
  return status;
}

int cmd_index(int argc, char **argv) {
  struct pfi_optparse op;
  int status = pfi_opt_parse(&op, &help, argc, argv);
  if (status != PFI_OPT_GO) {
    free(caps);
    return status;
  }
  const char *path = argv[optind];
  char *node_map = NULL;
  struct pfi_curveset set;
  pfi_curveset_init(&set);
  status = load_curves(&set, path, &node_map);
  if (status == 0) {
    struct pfi_noise nz;
    choose_noise(&set, path, pfi_opt_given(&op, "noise") > 0, &nz);
    int progress = draws > 0 && isatty(STDERR_FILENO) &&
                   (double)draws * (double)set.n > 1e6;
    status = fmt == PFI_FMT_JSON ? print_json(&set, &nz, progress)
                                 : print_table(&set, &nz, progress);
  }
  free(caps);
  free(node_map);
  pfi_curveset_release(&set);
  return status;
}
